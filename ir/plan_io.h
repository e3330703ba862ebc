/*
 * plan_io.h: what packing (plan_io.c) and unpacking (plan_unpack.c) of
 * plan.bin share: the framing's constants and the attribute tables.
 * Internal to ir/.
 */
#ifndef IR_PLAN_IO_H
#define IR_PLAN_IO_H

#include <stddef.h>
#include <stdint.h>

#include "ir/plan.h"
#include "ir/plan.pb-c.h"

#define MAGIC "PCCPLAN\n"
#define MAGIC_LEN 8
/* protobuf-c's lengths are 32-bit: keep clear of them, as ONNX does */
#define PLAN_MAX_BYTES ((size_t)INT32_MAX - 64)

/* A signed plan's tag (plan_sign.c): PlanFile field 4, length-delimited,
 * the HMAC-SHA256 of every byte before the field. */
#define PLAN_TAG_FIELD (4 << 3 | 2)
#define PLAN_TAG_LEN 32
int plan_tag(const struct plan_key *k, const uint8_t *data, size_t n, uint8_t out[PLAN_TAG_LEN]);
bool plan_tag_equal(const uint8_t *a, const uint8_t *b);

/* The ilist attributes, shared by packing and unpacking. */
#define ILIST(f)                                                                                       \
	{                                                                                              \
#f, offsetof(struct ir_attrs, f), offsetof(Pcc__Attrs, n_##f), offsetof(Pcc__Attrs, f) \
	}
static const struct {
	const char *name;
	size_t ir, pb_n, pb_v;
} ilists[] = {
	ILIST(axes),  ILIST(lhs_batch), ILIST(rhs_batch), ILIST(lhs_contract), ILIST(rhs_contract), ILIST(start),
	ILIST(limit), ILIST(stride),    ILIST(pad_lo),    ILIST(pad_hi),       ILIST(window),       ILIST(dilation),
};
#undef ILIST

/* eps and value travel as their bits (plan.proto says why) */
union bits {
	double d;
	uint64_t u;
};

static inline size_t constant_bytes(const struct ir_attrs *a)
{
	struct ir_tensor t = { .dtype = a->dtype, .shape = a->shape };
	return ir_tensor_bytes(&t);
}

#endif
