/*
 * plan_verify.h: what plan_verify.c (one device at a time) and
 * plan_verify_comm.c (all devices together) share. Internal to ir/.
 */
#ifndef IR_PLAN_VERIFY_H
#define IR_PLAN_VERIFY_H

#include "ir/plan.h"

/* Records "device D, instruction I (kind): " and the formatted text;
 * returns -EINVAL. */
int plan_verify_instr_errorf(const struct plan *p, int d, int i, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define TY_MAX (IR_SHAPE_STR_MAX + 16)
/* "f32 [4,8]" into out (TY_MAX bytes). */
const char *plan_verify_ty(char *out, enum ir_dtype t, const struct ir_shape *s);

/* The kernel table (plan_verify_kernels.c): ops, operand counts and types,
 * fused bodies. 0 or -EINVAL with a message naming the kernel. */
int plan_verify_kernels(const struct plan *p);

/* The writer slices of every output cover it exactly once. Assumes the
 * buffers passed plan_verify's checks. 0, -EINVAL or -ENOMEM. */
int plan_verify_outputs(const struct plan *p);

/* The cross-device checks: collectives match per communicator, sends pair
 * with receives, and the devices run to the end without deadlock. Assumes
 * every device passed plan_verify's local checks (indices in range, shapes
 * agree with each instruction). 0, -EINVAL or -ENOMEM with a message. */
int plan_verify_comm(const struct plan *p);

#endif
