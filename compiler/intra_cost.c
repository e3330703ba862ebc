/*
 * intra_cost.c: the intra-op pass's strategies and their costs.
 *
 * Strategies of an op: every assignment of the mesh axes (of size > 1) to
 * its labels, one label per axis at most, a label taking both axes when its
 * size divides by the whole mesh, each axis's label dividing evenly (or
 * padded: intra_labels.padded). On a 1 x 8 mesh a dot [m,k] x [k,n] has
 * four: replicated, rows (m), columns (n), contracting (k, partial
 * result): Megatron's trio plus replication.
 *
 * Costs: compute is the roofline of the local shapes (a replicated axis
 * divides nothing); resharding between a producer's sharding and the one
 * a consumer needs is priced per mesh axis as the collective it takes:
 * same split free, replicated -> split a local slice (free), split ->
 * replicated all-gather, split moved to another dim all-to-all, partial ->
 * replicated all-reduce, partial -> split reduce-scatter. Slices first,
 * then reductions and all-to-alls, all-gathers last, so each collective
 * moves the fewest bytes.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/intra_internal.h"

static int axis_size(const struct intra_env *env, int a)
{
	return a == 0 ? env->mesh.n0 : env->mesh.n1;
}

static uint8_t axes_of_label(const struct intra_strat *s, int label)
{
	uint8_t m = 0;
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (label >= 0 && s->lab[a] == label)
			m |= (uint8_t)(1u << a);
	return m;
}

void intra_operand_spec(const struct intra_labels *l, const struct intra_strat *s, int j, int rank,
			struct ir_sharding *out)
{
	const signed char *in = intra_in_labels(l, j);
	memset(out, 0, sizeof *out);
	for (int d = 0; d < rank; d++)
		out->dim[d] = axes_of_label(s, in[d]);
}

uint8_t intra_grad_partial(const struct intra_labels *l, const struct intra_strat *s, int j, int rank)
{
	struct ir_sharding sp;
	uint8_t used = 0, split = 0;
	intra_operand_spec(l, s, j, rank, &sp);
	for (int d = 0; d < rank; d++)
		used |= sp.dim[d];
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (s->lab[a] >= 0)
			split |= (uint8_t)(1u << a);
	return split & (uint8_t)~used;
}

double intra_local_bytes(const struct intra_env *env, const struct ir_value *v, const struct ir_sharding *s)
{
	double b = cost_value_bytes(v, env->elem_bytes);
	for (int d = 0; d < v->shape.rank; d++)
		b /= ir_sharding_pieces(s->dim[d], env->mesh.n0, env->mesh.n1);
	return b;
}

static int dim_on_axis(const struct ir_sharding *s, int rank, int a)
{
	for (int d = 0; d < rank; d++)
		if (s->dim[d] & (1u << a))
			return d;
	return -1;
}

/* Gradients of parameters are reduced in buckets (PyTorch DDP's 25 MiB):
 * a small gradient pays its share of a bucket's time, not a whole
 * collective's latency. */
#define GRAD_BUCKET (25.0 * (1 << 20))

static void add_coll(const struct intra_env *env, struct intra_coll *c, double *t, enum cost_coll op, int a,
		     double bytes, bool bucketed)
{
	double ct = bucketed && bytes < GRAD_BUCKET
			    ? cost_collective(&env->mesh.ax[a], op, GRAD_BUCKET, NULL) * bytes / GRAD_BUCKET
			    : cost_collective(&env->mesh.ax[a], op, bytes, NULL);
	*t += ct;
	if (c && c->n < 4) {
		c->op[c->n] = op;
		c->axis[c->n] = a;
		c->bytes[c->n] = bytes;
		c->t[c->n++] = ct;
	}
}

double intra_reshard(const struct intra_env *env, const struct ir_value *v, const struct ir_sharding *src,
		     const struct ir_sharding *dst, bool bucketed, struct intra_coll *c)
{
	struct ir_sharding cur = *src;
	int rank = v->shape.rank;
	double t = 0;
	if (c)
		c->n = 0;
	/* local slices: free, and they shrink what follows */
	for (int a = 0; a < IR_MESH_AXES; a++) {
		int from = dim_on_axis(&cur, rank, a), to = dim_on_axis(dst, rank, a);
		if (from < 0 && to >= 0 && !(cur.partial & (1u << a)))
			cur.dim[to] |= (uint8_t)(1u << a);
	}
	/* partial sums: reduce-scatter into the wanted split, else all-reduce */
	for (int a = 0; a < IR_MESH_AXES; a++) {
		if (!(cur.partial & (1u << a)))
			continue;
		int to = dim_on_axis(dst, rank, a);
		double b = intra_local_bytes(env, v, &cur);
		cur.partial &= (uint8_t) ~(1u << a);
		if (to >= 0 && axis_size(env, a) > 1) {
			add_coll(env, c, &t, COST_REDUCE_SCATTER, a, b, bucketed);
			cur.dim[to] |= (uint8_t)(1u << a);
		} else {
			add_coll(env, c, &t, COST_ALL_REDUCE, a, b, bucketed);
		}
	}
	/* a split moving to another dimension of the same axis */
	for (int a = 0; a < IR_MESH_AXES; a++) {
		int from = dim_on_axis(&cur, rank, a), to = dim_on_axis(dst, rank, a);
		if (from >= 0 && to >= 0 && from != to) {
			add_coll(env, c, &t, COST_ALL_TO_ALL, a, intra_local_bytes(env, v, &cur), bucketed);
			cur.dim[from] &= (uint8_t) ~(1u << a);
			cur.dim[to] |= (uint8_t)(1u << a);
		}
	}
	/* gathers last, on the largest buffers */
	for (int a = 0; a < IR_MESH_AXES; a++) {
		int from = dim_on_axis(&cur, rank, a), to = dim_on_axis(dst, rank, a);
		if (from >= 0 && to < 0) {
			cur.dim[from] &= (uint8_t) ~(1u << a);
			add_coll(env, c, &t, COST_ALL_GATHER, a, intra_local_bytes(env, v, &cur), bucketed);
		}
	}
	return t;
}

/* ---- strategies ------------------------------------------------------------ */

bool intra_transpose_folded(const struct intra_env *env, const struct ir_node *n)
{
	return env->fuse && cost_transpose_folds(n) && !(env->fuse[n->out[0]->id] & INTRA_FUSE_NONDOT);
}

static bool label_used(const struct intra_labels *l, int k, int nin, const int *ranks, int out_rank)
{
	for (int d = 0; d < out_rank; d++)
		if (l->out[d] == k)
			return true;
	for (int j = 0; j < nin && j < INTRA_MAX_IN; j++)
		for (int d = 0; d < ranks[j]; d++)
			if (l->in[j][d] == k)
				return true;
	return false;
}

/* Fills s's result sharding and costs. */
static void strategy_costs(const struct intra_env *env, const struct ir_node *n, const struct ir_value *v,
			   const struct intra_labels *l, struct intra_strat *s)
{
	const struct ir_value *res = n ? n->out[0] : v;
	memset(&s->out, 0, sizeof s->out);
	for (int d = 0; d < res->shape.rank; d++)
		s->out.dim[d] = axes_of_label(s, l->out[d]);
	int div = 1;
	s->own_axis = -1;
	s->t_own = s->own_bytes = 0;
	s->own_coll = COST_ALL_REDUCE;
	for (int a = 0; a < IR_MESH_AXES; a++) {
		if (s->lab[a] < 0)
			continue;
		div *= axis_size(env, a);
		if (l->kind[s->lab[a]] == INTRA_SUM)
			s->out.partial |= (uint8_t)(1u << a);
	}
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (s->lab[a] >= 0 && l->kind[s->lab[a]] == INTRA_MAX) {
			s->own_axis = a;
			s->own_bytes = intra_local_bytes(env, res, &s->out);
			s->t_own += cost_collective(&env->mesh.ax[a], COST_ALL_REDUCE, s->own_bytes, NULL);
		}
	s->t_compute = 0;
	if (!n || intra_transpose_folded(env, n))
		return; /* nothing, or a transpose the dots reading it fold in */
	bool fused = env->fuse && cost_op_fusable(n->op), end = !fused;
	double bytes = 0;
	for (int j = 0; j < n->nin; j++) {
		if (fused && cost_read_fused(env->fused_in, n->id, j))
			continue; /* in registers: its producer is in the same kernel */
		struct ir_sharding sp;
		intra_operand_spec(l, s, j, n->in[j]->shape.rank, &sp);
		bytes += intra_local_bytes(env, n->in[j], &sp);
	}
	for (int k = 0; k < n->nout; k++) {
		if (fused && !(env->fuse[n->out[k]->id] & INTRA_FUSE_STORED))
			continue;
		end = true;
		bytes += intra_local_bytes(env, n->out[k], &s->out);
	}
	enum cost_class cls = cost_op_class(n->op);
	if (cls == COST_CLASS_FREE && fused && bytes > 0)
		cls = COST_CLASS_ELEMENTWISE; /* a view feeding a kernel: its bytes are the kernel's */
	s->t_compute = cost_roofline(&env->dev, &env->cal, cls, env->prec, ir_node_flops(n) / div, bytes);
	if (!end && s->t_compute > 0) /* one launch per chain, charged at its end */
		s->t_compute = fmax(s->t_compute - env->cal.cls[cls].overhead, 0);
	if (env->train)
		s->t_compute *= 3; /* backward: two products per forward one */
}

/* Label k splits into n pieces: evenly, or padded where allowed (the last
 * pieces a row short, costed as even ones). */
static bool splits(const struct intra_labels *l, int k, int n)
{
	return l->size[k] % n == 0 || ((l->padded >> k & 1) && l->size[k] >= n);
}

int intra_strategies(const struct intra_env *env, const struct ir_node *n, const struct ir_value *v,
		     const struct intra_labels *l, struct intra_strat **out)
{
	int ranks[INTRA_MAX_IN] = { 0 }, nin = n ? n->nin : 0;
	int out_rank = n ? n->out[0]->shape.rank : v->shape.rank;
	for (int j = 0; j < nin && j < INTRA_MAX_IN; j++)
		ranks[j] = n->in[j]->shape.rank;
	/* options per axis: -1 and every label that divides evenly */
	signed char opt[IR_MESH_AXES][INTRA_MAX_LABELS + 1];
	int nopt[IR_MESH_AXES];
	for (int a = 0; a < IR_MESH_AXES; a++) {
		int na = axis_size(env, a);
		nopt[a] = 0;
		opt[a][nopt[a]++] = -1;
		for (int k = 0; na > 1 && k < l->n; k++)
			if (splits(l, k, na) && label_used(l, k, nin, ranks, out_rank))
				opt[a][nopt[a]++] = (signed char)k;
	}
	struct intra_strat *s = ir_calloc((size_t)(nopt[0] * nopt[1]), sizeof *s);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory enumerating strategies");
	int ns = 0;
	for (int i0 = 0; i0 < nopt[0]; i0++)
		for (int i1 = 0; i1 < nopt[1]; i1++) {
			int k0 = opt[0][i0], k1 = opt[1][i1];
			if (k0 >= 0 && k0 == k1 && !splits(l, k0, env->mesh.n0 * env->mesh.n1))
				continue;
			s[ns].lab[0] = (signed char)k0;
			s[ns].lab[1] = (signed char)k1;
			strategy_costs(env, n, v, l, &s[ns]);
			ns++;
		}
	*out = s;
	return ns;
}

double intra_regather(const struct intra_coll *c)
{
	double t = 0;
	for (int i = 0; i < c->n; i++)
		if (c->op[i] == COST_ALL_GATHER)
			t += c->t[i];
	return t;
}
