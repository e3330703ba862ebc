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

#include "compiler/search/intra_internal.h"

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

/* The result's sharding when mesh axis a splits label lab[a]: its dims
 * split on their labels' axes, partial sums over the axes of summed labels. */
static void result_spec(const struct intra_labels *l, const signed char *lab, int rank, struct ir_sharding *out)
{
	memset(out, 0, sizeof *out);
	for (int d = 0; d < rank; d++)
		for (int a = 0; a < IR_MESH_AXES; a++)
			if (l->out[d] >= 0 && lab[a] == l->out[d])
				out->dim[d] |= (uint8_t)(1u << a);
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (lab[a] >= 0 && l->kind[lab[a]] == INTRA_SUM)
			out->partial |= (uint8_t)(1u << a);
}

/* Fills s's result sharding and costs. */
static void strategy_costs(const struct intra_env *env, const struct ir_node *n, const struct ir_value *v,
			   const struct intra_labels *l, struct intra_strat *s)
{
	const struct ir_value *res = n ? n->out[0] : v;
	result_spec(l, s->lab, res->shape.rank, &s->out);
	int div = 1;
	s->own_axis = -1;
	s->t_own = s->own_bytes = 0;
	s->own_coll = COST_ALL_REDUCE;
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (s->lab[a] >= 0)
			div *= axis_size(env, a);
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

/* The assignments of mesh axes n0 x n1 to labels l (of a node with nin
 * operands of ranks[], result rank out_rank): lab[i][a] the label axis a
 * splits (-1 none), in the order strategies are listed; returns how many
 * (at most INTRA_MAX_ASSIGN). */
#define INTRA_MAX_ASSIGN ((INTRA_MAX_LABELS + 1) * (INTRA_MAX_LABELS + 1))
static int assignments(const struct intra_labels *l, int nin, const int *ranks, int out_rank, int n0, int n1,
		       signed char (*lab)[IR_MESH_AXES])
{
	/* options per axis: -1 and every label that divides evenly */
	signed char opt[IR_MESH_AXES][INTRA_MAX_LABELS + 1];
	int nopt[IR_MESH_AXES], ns = 0;
	for (int a = 0; a < IR_MESH_AXES; a++) {
		int na = a == 0 ? n0 : n1;
		nopt[a] = 0;
		opt[a][nopt[a]++] = -1;
		for (int k = 0; na > 1 && k < l->n; k++)
			if (splits(l, k, na) && label_used(l, k, nin, ranks, out_rank))
				opt[a][nopt[a]++] = (signed char)k;
	}
	for (int i0 = 0; i0 < nopt[0]; i0++)
		for (int i1 = 0; i1 < nopt[1]; i1++) {
			int k0 = opt[0][i0], k1 = opt[1][i1];
			if (k0 >= 0 && k0 == k1 && !splits(l, k0, n0 * n1))
				continue;
			lab[ns][0] = (signed char)k0;
			lab[ns][1] = (signed char)k1;
			ns++;
		}
	return ns;
}

static void operand_ranks(const struct ir_node *n, int *ranks)
{
	for (int j = 0; j < INTRA_MAX_IN; j++)
		ranks[j] = n && j < n->nin ? n->in[j]->shape.rank : 0;
}

int intra_strategies(const struct intra_env *env, const struct ir_node *n, const struct ir_value *v,
		     const struct intra_labels *l, struct intra_strat **out)
{
	int ranks[INTRA_MAX_IN], nin = n ? n->nin : 0;
	int out_rank = n ? n->out[0]->shape.rank : v->shape.rank;
	signed char lab[INTRA_MAX_ASSIGN][IR_MESH_AXES];
	operand_ranks(n, ranks);
	int ns = assignments(l, nin, ranks, out_rank, env->mesh.n0, env->mesh.n1, lab);
	struct intra_strat *s = ir_calloc((size_t)ns, sizeof *s);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory enumerating strategies");
	for (int i = 0; i < ns; i++) {
		s[i].lab[0] = lab[i][0];
		s[i].lab[1] = lab[i][1];
		strategy_costs(env, n, v, l, &s[i]);
	}
	*out = s;
	return ns;
}

int intra_rule_find(const struct ir_node *n, int n0, int n1, const struct ir_sharding *out,
		    const struct ir_sharding *in, bool no_own, struct ir_sharding *got, uint8_t *own)
{
	struct intra_labels l;
	int ranks[INTRA_MAX_IN], rank = n->out[0]->shape.rank;
	signed char lab[INTRA_MAX_ASSIGN][IR_MESH_AXES];
	intra_labels_of(n, &l);
	operand_ranks(n, ranks);
	int ns = assignments(&l, n->nin, ranks, rank, n0, n1, lab);
	for (int i = 0; i < ns; i++) {
		struct ir_sharding res, sp;
		uint8_t mx = 0;
		result_spec(&l, lab[i], rank, &res);
		for (int a = 0; a < IR_MESH_AXES; a++)
			if (lab[i][a] >= 0 && l.kind[lab[i][a]] == INTRA_MAX)
				mx |= (uint8_t)(1u << a);
		if (memcmp(&res, out, sizeof res) || (no_own && mx))
			continue;
		struct intra_strat st = { .lab = { lab[i][0], lab[i][1] } };
		bool same = true;
		for (int j = 0; j < n->nin && same; j++) {
			intra_operand_spec(&l, &st, j, n->in[j]->shape.rank, &sp);
			same = !in || !memcmp(&sp, &in[j], sizeof sp);
			if (got)
				got[j] = sp;
		}
		if (!same)
			continue;
		if (own)
			*own = mx;
		return 1;
	}
	return 0;
}

double intra_regather(const struct intra_coll *c)
{
	double t = 0;
	for (int i = 0; i < c->n; i++)
		if (c->op[i] == COST_ALL_GATHER)
			t += c->t[i];
	return t;
}
