/*
 * collective.c: one collective instruction on the arena's buffers
 * (exec_internal.h): its operands packed into rank-major blocks for the
 * communication table, the result unpacked along the plan's axes.
 */
#include <errno.h>
#include <string.h>

#include "runtime/exec_internal.h"

static uint8_t *scratch(struct rt *r, size_t n)
{
	if (n > r->nscratch) {
		uint8_t *s = ir_realloc(r->scratch, n);
		if (!s)
			return NULL;
		r->scratch = s;
		r->nscratch = n;
	}
	return r->scratch;
}

static int comm_size(const struct rt *r, const struct plan_instr *x)
{
	return r->p->comms[x->comm].n;
}

/* Whether all_gather's axis is the outermost that is not 1: the blocks
 * land in place, no packing. */
static bool gather_lead(const struct plan_instr *x, const struct plan_buffer *in)
{
	bool lead = true;
	for (int a = 0; a < x->axis; a++)
		lead = lead && in->shape.dims[a] == 1;
	return lead;
}

/* Bytes a collective packs its operands into (0: none). */
size_t rt_coll_pack_bytes(const struct rt *r, const struct plan_instr *x)
{
	const struct plan_buffer *in = rt_arg(r, x, 0);
	switch (x->kind) {
	case PLAN_ALL_GATHER:
		return gather_lead(x, in) ? 0 : (size_t)in->bytes * (size_t)comm_size(r, x);
	case PLAN_REDUCE_SCATTER:
		return (size_t)in->bytes;
	case PLAN_ALL_TO_ALL:
		return 2 * (size_t)in->bytes;
	case PLAN_ALL_REDUCE:
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return 0;
}

/* Starts collective x with its operands packed into s (pack_bytes of
 * them): finished now when req is NULL, else by the table's wait, and then
 * unpacked (unpack). all_gather: out = every rank's in concatenated along
 * axis in rank order; reduce_scatter: out = piece `comm rank` along axis
 * of the sum of every rank's in; all_to_all: in cut into n pieces along
 * axis, piece q to rank q, out = the received pieces concatenated along
 * axis2 in rank order. */
int rt_coll_start(struct rt *r, const struct plan_instr *x, uint8_t *s, struct rt_comm_req **req)
{
	const struct rt_comm_ops *c = r->c->ops;
	const struct plan_buffer *in = rt_arg(r, x, 0), *out = rt_arg(r, x, 1);
	int n = comm_size(r, x);
	size_t es = ir_dtype_size(in->dtype);
	switch (x->kind) {
	case PLAN_ALL_REDUCE:
		return c->all_reduce(r->c, x->comm, rt_buf(r, in), rt_buf(r, out), ir_shape_numel(&in->shape),
				     in->dtype, x->reduce, req);
	case PLAN_ALL_GATHER:
		return c->all_gather(r->c, x->comm, rt_buf(r, in), s ? s : rt_buf(r, out), (size_t)in->bytes, req);
	case PLAN_REDUCE_SCATTER:
		for (int q = 0; q < n; q++) {
			int64_t st[IR_MAX_RANK] = { 0 };
			st[x->axis] = q * out->shape.dims[x->axis];
			ir_copy_block(s + (size_t)q * (size_t)out->bytes, &out->shape, NULL, rt_buf(r, in), &in->shape,
				      st, &out->shape, es);
		}
		return c->reduce_scatter(r->c, x->comm, s, rt_buf(r, out), ir_shape_numel(&out->shape), in->dtype, req);
	case PLAN_ALL_TO_ALL: {
		struct ir_shape piece = in->shape;
		piece.dims[x->axis] /= n;
		size_t pb = (size_t)in->bytes / (size_t)n;
		for (int q = 0; q < n; q++) {
			int64_t st[IR_MAX_RANK] = { 0 };
			st[x->axis] = q * piece.dims[x->axis];
			ir_copy_block(s + (size_t)q * pb, &piece, NULL, rt_buf(r, in), &in->shape, st, &piece, es);
		}
		return c->all_to_all(r->c, x->comm, s, s + in->bytes, pb, req);
	}
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return ir_errorf(-EINVAL, "%s is not a collective", plan_instr_kind_name(x->kind));
}

/* The received blocks of a finished collective from s into out. */
void rt_coll_unpack(struct rt *r, const struct plan_instr *x, const uint8_t *s)
{
	const struct plan_buffer *in = rt_arg(r, x, 0), *out = rt_arg(r, x, 1);
	int n = comm_size(r, x);
	size_t es = ir_dtype_size(in->dtype);
	if (!s || x->kind == PLAN_REDUCE_SCATTER)
		return;
	struct ir_shape piece = in->shape;
	if (x->kind == PLAN_ALL_TO_ALL) {
		piece.dims[x->axis] /= n;
		s += in->bytes;
	}
	size_t pb = x->kind == PLAN_ALL_TO_ALL ? (size_t)in->bytes / (size_t)n : (size_t)in->bytes;
	int axis = x->kind == PLAN_ALL_TO_ALL ? x->axis2 : x->axis;
	for (int q = 0; q < n; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[axis] = q * piece.dims[axis];
		ir_copy_block(rt_buf(r, out), &out->shape, st, s + (size_t)q * pb, &piece, NULL, &piece, es);
	}
}

int rt_collective(struct rt *r, const struct plan_instr *x)
{
	size_t n = rt_coll_pack_bytes(r, x);
	uint8_t *s = n ? scratch(r, n) : NULL;
	if (n && !s)
		return ir_errorf(-ENOMEM, "out of memory packing a %s", plan_instr_kind_name(x->kind));
	int rc = rt_coll_start(r, x, s, NULL);
	if (rc == 0)
		rt_coll_unpack(r, x, s);
	return rc;
}
