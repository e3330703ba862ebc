/*
 * lower_reshard.c: converting a value from the sharding its producer left
 * to the one its consumer needs, as collectives and local slices.
 *
 * Per dimension, a mesh-axis mask (0 whole, 1 axis 0, 2 axis 1, 3 both with
 * axis 0 major) says which piece a device holds. Going from mask s to mask
 * t needs no communication when t refines s in place (0 -> anything, S0 ->
 * S01): each device slices its own piece. Otherwise the dimension is first
 * gathered to the coarsest mask t refines (S01 -> S0 gathers axis 1 only).
 * Order: partial sums first (a reduce-scatter where the result is split
 * along some dimension on that axis anyway, else an all-reduce), then
 * all-to-alls (a dimension gathered on the axis another is split on), then
 * the remaining all-gathers, then one local slice of every dimension still
 * too coarse. Every device runs the same sequence (SPMD).
 */
#include <errno.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

/* Whether a piece under mask s contains the piece under t (t refines s). */
static bool refines(uint8_t s, uint8_t t)
{
	return s == t || s == 0 || (s == 1 && t == 3);
}

static int axis_size(const struct lower *L, int a)
{
	return a == 0 ? L->n0 : L->n1;
}

static int collective(struct lower *L, const struct lw_ins *c, int buf, const struct ir_shape *out_shape)
{
	int nb = lw_buf_new(L, L->buf[buf].dtype, out_shape);
	if (nb < 0)
		return nb;
	int rc = lw_emit(L, c, 1, &buf, 1, &nb);
	return rc < 0 ? rc : nb;
}

/* Reduces the partial sums over axis a: a reduce-scatter into a dimension
 * the target splits on a (when the piece order allows), else an all-reduce. */
static int reduce_partial(struct lower *L, int buf, struct ir_sharding *cur, const struct ir_sharding *dst, int rank,
			  int a)
{
	uint8_t bit = (uint8_t)(1u << a);
	cur->partial &= (uint8_t)~bit;
	if (axis_size(L, a) == 1)
		return buf;
	for (int d = 0; d < rank; d++) {
		uint8_t s = cur->dim[d], t = dst->dim[d];
		bool order_ok = s == 0 || (s == 1 && a == 1);
		if (!(t & bit) || (s & bit) || !order_ok || !refines((uint8_t)(s | bit), t))
			continue;
		if (L->buf[buf].shape.dims[d] % axis_size(L, a))
			continue;
		struct ir_shape sh = L->buf[buf].shape;
		sh.dims[d] /= axis_size(L, a);
		struct lw_ins c = {
			.kind = PLAN_REDUCE_SCATTER, .kernel = -1, .axes = bit, .reduce = PLAN_SUM, .axis = d
		};
		cur->dim[d] = (uint8_t)(s | bit);
		return collective(L, &c, buf, &sh);
	}
	struct lw_ins c = { .kind = PLAN_ALL_REDUCE, .kernel = -1, .axes = bit, .reduce = PLAN_SUM };
	return collective(L, &c, buf, &L->buf[buf].shape);
}

/* The coarsest mask that s can be gathered to and t refines. */
static uint8_t gather_to(uint8_t s, uint8_t t)
{
	if (refines(s, t))
		return s;
	if (s == 3 && t == 1)
		return 1;
	return 0;
}

int lw_reshard(struct lower *L, const struct ir_value *v, int buf, const struct ir_sharding *src,
	       const struct ir_sharding *dst)
{
	struct ir_sharding cur = *src;
	int rank = v->shape.rank;
	IR_ASSERT(!dst->partial);
	if (!memcmp(&cur, dst, sizeof cur))
		return buf;
	for (int a = 0; a < IR_MESH_AXES && buf >= 0; a++)
		if (cur.partial & (1u << a))
			buf = reduce_partial(L, buf, &cur, dst, rank, a);
	/* all-to-all: dimension d gathered on the single axis a that dimension
	 * e (whole now) is split on in the target */
	for (int d = 0; d < rank && buf >= 0; d++) {
		uint8_t s = cur.dim[d];
		if (refines(s, dst->dim[d]) || (s != 1 && s != 2) || dst->dim[d] != 0)
			continue;
		for (int e = 0; e < rank; e++) {
			if (e == d || cur.dim[e] != 0 || dst->dim[e] != s)
				continue;
			struct ir_shape sh = L->buf[buf].shape;
			int n = axis_size(L, s == 1 ? 0 : 1);
			sh.dims[d] *= n;
			sh.dims[e] /= n;
			struct lw_ins c = { .kind = PLAN_ALL_TO_ALL, .kernel = -1, .axes = s, .axis = e, .axis2 = d };
			buf = collective(L, &c, buf, &sh);
			cur.dim[d] = 0;
			cur.dim[e] = s;
			break;
		}
	}
	for (int d = 0; d < rank && buf >= 0; d++) {
		uint8_t s = cur.dim[d], to = gather_to(s, dst->dim[d]);
		if (s == to)
			continue;
		uint8_t axes = (uint8_t)(s & ~to);
		int n = ir_sharding_pieces(axes, L->n0, L->n1);
		struct ir_shape sh = L->buf[buf].shape;
		sh.dims[d] *= n;
		struct lw_ins c = { .kind = PLAN_ALL_GATHER, .kernel = -1, .axes = axes, .axis = d };
		buf = collective(L, &c, buf, &sh);
		cur.dim[d] = to;
	}
	if (buf < 0)
		return buf;
	if (!memcmp(&cur, dst, sizeof cur))
		return buf;
	/* one local slice per device of every dimension still coarser */
	struct ir_attrs *da = ir_calloc((size_t)L->nd, sizeof *da);
	if (!da)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	const struct ir_shape *sh = &L->buf[buf].shape;
	for (int k = 0; k < L->nd; k++) {
		struct ir_attrs *a = &da[k];
		a->start.n = a->limit.n = a->stride.n = rank;
		for (int d = 0; d < rank; d++) {
			int ps, ns, pt, nt;
			lw_piece(L, k, cur.dim[d], &ps, &ns);
			lw_piece(L, k, dst->dim[d], &pt, &nt);
			int64_t g = v->shape.dims[d], len = g / nt;
			int64_t lo = pt * len - ps * (g / ns);
			IR_ASSERT(lo >= 0 && lo + len <= sh->dims[d]);
			a->start.v[d] = lo;
			a->limit.v[d] = lo + len;
			a->stride.v[d] = 1;
		}
	}
	int out;
	int rc = lw_kernel(L, IR_OP_SLICE, NULL, da, 1, &buf, &out);
	ir_free(da);
	return rc < 0 ? rc : out;
}
