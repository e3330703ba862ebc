/*
 * intra_build.c: lowers one stage's graph into the strategy problem of
 * solvers/ (struct shard_problem): one solver node per group of units, its
 * strategies with compute and own-collective costs, memory per strategy
 * over the group's live interval, and per graph edge a resharding cost
 * matrix between the producer's result sharding and the sharding its
 * consumer needs, forward and (training) backward.
 *
 * Units: every graph node, and every graph input and parameter (their
 * shardings are choices too: a parameter split over an axis is stored
 * split). Following: a unary elementwise op whose operand has no other use
 * takes its producer's sharding instead of a variable of its own, as Alpa's
 * followers do; its costs fold into the producer's.
 *
 * Training (o->train): compute x3, the backward of every edge reshards the
 * gradient from the consumer's layout (partial over the axes the consumer
 * splits but the operand does not: the all-reduce of data-parallel weight
 * gradients and of Megatron's column-parallel input) back to the
 * producer's; parameters hold weights, gradients and optimizer state and
 * pay the optimizer update on their local shard; the activations the
 * backward pass reads (cost_backward_keeps) stay live to the end of the
 * step. Elementwise chains are costed as fused kernels.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/search/intra_internal.h"
#include "ir/plan.h"

/* ---- growable buffers ------------------------------------------------------ */

struct edge_acc {
	int n, cap;
	int *u, *v;
	int64_t *off; /* into cost */
	double *cost;
	int64_t ncost, cost_cap;
	int *slot; /* open-addressing table of edge indices */
	int nslot;
};

static int edge_find(struct edge_acc *e, int u, int v, int64_t size)
{
	if (2 * (e->n + 1) > e->nslot) {
		int ns = e->nslot ? 2 * e->nslot : 1024;
		int *slot = ir_malloc(sizeof *slot * (size_t)ns);
		if (!slot)
			return -ENOMEM;
		for (int i = 0; i < ns; i++)
			slot[i] = -1;
		for (int k = 0; k < e->n; k++) {
			uint64_t h = ((uint64_t)(unsigned)e->u[k] * 0x9E3779B97F4A7C15u) ^ (unsigned)e->v[k];
			int i = (int)(h % (uint64_t)ns);
			while (slot[i] >= 0)
				i = (i + 1) % ns;
			slot[i] = k;
		}
		ir_free(e->slot);
		e->slot = slot;
		e->nslot = ns;
	}
	uint64_t h = ((uint64_t)(unsigned)u * 0x9E3779B97F4A7C15u) ^ (unsigned)v;
	int i = (int)(h % (uint64_t)e->nslot);
	for (; e->slot[i] >= 0; i = (i + 1) % e->nslot)
		if (e->u[e->slot[i]] == u && e->v[e->slot[i]] == v)
			return e->slot[i];
	if (e->n == e->cap) {
		int cap = e->cap ? 2 * e->cap : 256;
		int *nu = ir_realloc(e->u, sizeof *nu * (size_t)cap),
		    *nv = nu ? ir_realloc(e->v, sizeof *nv * (size_t)cap) : NULL;
		if (nu)
			e->u = nu;
		if (nv)
			e->v = nv;
		int64_t *no = nv ? ir_realloc(e->off, sizeof *no * (size_t)cap) : NULL;
		if (!no)
			return -ENOMEM;
		e->off = no;
		e->cap = cap;
	}
	if (e->ncost + size > e->cost_cap) {
		int64_t cap = e->cost_cap ? 2 * e->cost_cap : 65536;
		while (cap < e->ncost + size)
			cap *= 2;
		double *c = ir_realloc(e->cost, sizeof *c * (size_t)cap);
		if (!c)
			return -ENOMEM;
		e->cost = c;
		e->cost_cap = cap;
	}
	int k = e->n++;
	e->u[k] = u;
	e->v[k] = v;
	e->off[k] = e->ncost;
	memset(e->cost + e->ncost, 0, sizeof *e->cost * (size_t)size);
	e->ncost += size;
	e->slot[i] = k;
	return k;
}

static void edge_acc_free(struct edge_acc *e)
{
	ir_free(e->u);
	ir_free(e->v);
	ir_free(e->off);
	ir_free(e->cost);
	ir_free(e->slot);
}

/* ---- units and groups -------------------------------------------------------- */

/* intra_opts.manual_tp: a label that runs along a dim derived from a graph
 * input's (batch[v]: the dims of value v that do) is taken off every
 * operand and result dim, so no strategy splits it; on a mesh of n0 > 1
 * data-parallel replicas it stays, for axis 0 alone (filter_dp). A label may split
 * padded when every operand dim it runs along is the whole of a dim of a
 * value that depends on no input (a parameter, a transposed weight, an
 * iota) or derived from one (padded[v] likewise), or when none does (a
 * broadcast's new dims): a vocabulary of 50257 over 8 ranks, and the
 * logits and softmax over it, but not 12 heads regrouped out of a hidden
 * dim (a reshape's label is a part of its dim), nor anything an evenly
 * split operand shares. Then marks x's results' dims on such labels.
 * Graph order: operands are marked before their readers. */
static uint32_t manual_tp_labels(struct intra_unit *x, uint8_t *batch, uint8_t *padded, bool keep, uint32_t *made)
{
	struct intra_labels *l = &x->lab;
	uint32_t all = (1u << l->n) - 1, in_batch = 0, whole = 0, read = 0;
	int nin = x->node ? x->node->nin : 0;
	for (int d = 0; !x->node && d < x->value->shape.rank; d++)
		in_batch |= x->value->kind == IR_VAL_INPUT ? 1u << l->out[d] : 0;
	for (int j = 0; j < nin; j++) {
		const struct ir_value *v = x->node->in[j];
		const signed char *row = intra_in_labels(l, j);
		for (int d = 0; d < v->shape.rank; d++) {
			if (row[d] < 0)
				continue;
			read |= 1u << row[d];
			if (batch[v->id] >> d & 1)
				in_batch |= 1u << row[d];
			if (!(padded[v->id] >> d & 1) || l->size[row[d]] != v->shape.dims[d])
				whole |= 1u << row[d]; /* some operand must split it evenly */
		}
	}
	/* a parameter's own dims, and labels made here (a broadcast's new
	 * dims), split as the readers need */
	l->padded = all & ~whole & ~in_batch;
	*made = x->node ? all & ~read : 0;
	int nout = x->node ? x->node->nout : 1;
	for (int k = 0; k < nout; k++) {
		const struct ir_value *r = x->node ? x->node->out[k] : x->value;
		for (int d = 0; d < r->shape.rank && d < IR_MAX_RANK; d++) {
			if (l->out[d] < 0)
				continue;
			if (in_batch >> l->out[d] & 1)
				batch[r->id] |= (uint8_t)(1u << d);
			if (l->padded >> l->out[d] & 1)
				padded[r->id] |= (uint8_t)(1u << d);
		}
	}
	for (int d = 0; d < IR_MAX_RANK && !keep; d++) {
		if (l->out[d] >= 0 && (in_batch >> l->out[d] & 1))
			l->out[d] = -1;
		for (int j = 0; j < INTRA_MAX_IN; j++)
			if (l->in[j][d] >= 0 && (in_batch >> l->in[j][d] & 1))
				l->in[j][d] = -1;
	}
	return in_batch;
}

/* A manual plan's data-parallel axis (intra_opts.manual_tp, n0 > 1): axis
 * 0 splits only labels along the inputs' dims (in_batch: the samples and
 * their tokens) or made by the node (made: a broadcast's new dims, which
 * each replica makes for its own samples), never a parameter's own dims;
 * axis 1 only labels not along the inputs' dims (tensor parallelism).
 * Keeps x's strategies that do so, in order. */
static void filter_dp(struct intra_unit *x, uint32_t in_batch, uint32_t made)
{
	int n = 0;
	for (int s = 0; s < x->nstrat; s++) {
		int a = x->strat[s].lab[0], b = x->strat[s].lab[1];
		if ((a >= 0 && !((in_batch | made) >> a & 1)) || (b >= 0 && (in_batch >> b & 1)))
			continue;
		x->strat[n++] = x->strat[s];
	}
	x->nstrat = n;
}

static int init_unit(struct intra_state *st, struct intra_unit *x, uint8_t *batch, uint8_t *padded)
{
	bool dp = st->env.mesh.n0 > 1;
	uint32_t in_batch = 0, made = 0;
	if (x->node)
		intra_labels_of(x->node, &x->lab);
	else
		intra_labels_value(x->value, &x->lab);
	if (batch)
		in_batch = manual_tp_labels(x, batch, padded, dp, &made);
	int ns = intra_strategies(&st->env, x->node, x->value, &x->lab, &x->strat);
	if (ns < 0)
		return ns;
	x->nstrat = ns;
	if (batch && dp)
		filter_dp(x, in_batch, made);
	return 0;
}

/* The strategy of a unary follower that keeps its operand's sharding. */
static int follow(const struct intra_unit *f, const struct ir_sharding *prod, int rank)
{
	signed char want[IR_MESH_AXES] = { -1, -1 };
	for (int d = 0; d < rank; d++)
		for (int a = 0; a < IR_MESH_AXES; a++)
			if (prod->dim[d] & (1u << a))
				want[a] = f->lab.out[d];
	for (int s = 0; s < f->nstrat; s++)
		if (f->strat[s].lab[0] == want[0] && f->strat[s].lab[1] == want[1])
			return s;
	IR_ASSERT(!"a follower lacks its producer's sharding");
}

static bool is_follower(const struct ir_graph *g, const struct ir_node *n, const int *uses, const struct intra_opts *o)
{
	(void)g;
	if (o->no_follow || !(ir_op_flags(n->op) & IR_OPF_UNARY))
		return false;
	const struct ir_value *x = n->in[0];
	return x->kind == IR_VAL_NODE && uses[x->id] == 1 && x->def->nout == 1;
}

static int make_groups(struct intra_state *st, const struct ir_graph *g, const int *uses, const struct intra_opts *o)
{
	st->leader = ir_malloc(sizeof *st->leader * (size_t)st->nunits);
	if (!st->leader)
		return -ENOMEM;
	st->ngroups = 0;
	for (int u = 0; u < st->nunits; u++) {
		struct intra_unit *x = &st->unit[u];
		const struct intra_unit *p = NULL;
		if (x->node && is_follower(g, x->node, uses, o))
			p = &st->unit[st->value_unit[x->node->in[0]->id]];
		x->group = p ? p->group : st->ngroups;
		if (!p)
			st->leader[st->ngroups++] = u;
		int k = p ? st->unit[st->leader[p->group]].nstrat : x->nstrat;
		x->map = ir_malloc(sizeof *x->map * (size_t)k);
		if (!x->map)
			return -ENOMEM;
		for (int s = 0; s < k; s++)
			x->map[s] = p ? follow(x, &p->strat[p->map[s]].out, x->node->in[0]->shape.rank) : s;
	}
	return 0;
}

/* ---- costs --------------------------------------------------------------------- */

static int64_t to_cost(double t)
{
	double c = llround(t * INTRA_COST_SCALE);
	return c > 4e18 ? INT64_C(4000000000000000000) : (int64_t)c;
}

/* Devices holding the same piece of value v under sharding sh. */
static double copies(const struct intra_env *env, const struct ir_value *v, const struct ir_sharding *sh)
{
	double pieces = 1;
	for (int d = 0; d < v->shape.rank; d++)
		pieces *= ir_sharding_pieces(sh->dim[d], env->mesh.n0, env->mesh.n1);
	return (double)env->mesh.n0 * env->mesh.n1 / pieces;
}

static bool trained(const struct intra_state *st, const struct intra_unit *x)
{
	return !x->node && x->value->kind == IR_VAL_PARAM && st->env.train && ir_dtype_is_float(x->value->dtype) &&
	       !x->value->buffer;
}

/* Elements of trained parameter unit x one device holds under strategy s. */
static double local_elems(const struct intra_state *st, const struct intra_unit *x, int s)
{
	return intra_local_bytes(&st->env, x->value, &x->strat[s].out) /
	       cost_value_bytes(x->value, st->env.elem_bytes) * (double)ir_shape_numel(&x->value->shape);
}

double intra_state_bytes(const struct intra_state *st, const struct intra_unit *x, int s, int zero)
{
	if (!trained(st, x))
		return 0;
	double n = local_elems(st, x, s), c = zero ? copies(&st->env, x->value, &x->strat[s].out) : 1;
	const struct cost_state_bytes *b = &st->env.state;
	return n * (b->params / (zero >= 3 ? c : 1) + b->grads / (zero >= 2 ? c : 1) + b->optim / c);
}

void intra_state_split(const struct intra_state *st, const struct intra_unit *x, int s, int zero, double out[3])
{
	out[0] = out[1] = out[2] = 0;
	if (!trained(st, x))
		return;
	double n = local_elems(st, x, s), c = zero ? copies(&st->env, x->value, &x->strat[s].out) : 1;
	const struct cost_state_bytes *b = &st->env.state;
	out[0] = n * b->params / (zero >= 3 ? c : 1);
	out[1] = n * b->grads / (zero >= 2 ? c : 1);
	out[2] = n * b->optim / c;
}

double intra_optim_time(const struct intra_state *st, const struct intra_unit *x, int s, bool zero)
{
	if (!trained(st, x))
		return 0;
	const struct ir_sharding *sh = &x->strat[s].out;
	double n = intra_local_bytes(&st->env, x->value, sh) / cost_value_bytes(x->value, st->env.elem_bytes) *
		   (double)ir_shape_numel(&x->value->shape);
	if (zero)
		n /= copies(&st->env, x->value, sh);
	return cost_optim_time(&st->env.dev, &st->env.cal, &st->env.state, st->env.elem_bytes > 0, n);
}

/* The bytes of the arena a buffer of b bytes takes (lower_mem.c places
 * every buffer at a PLAN_ALIGN-aligned offset). */
static double arena_bytes(double b)
{
	return ceil(b / PLAN_ALIGN) * PLAN_ALIGN;
}

/* Whether node result r never gets a buffer: it stays inside its fused
 * elementwise chain, is a transpose the dots reading it fold in, or a
 * call's result written into the buffer of the chain reading it, and
 * neither the backward pass keeps it nor more than one node reads it
 * (lowering fuses a producer into its one reader alone). */
static bool fused_away(const struct intra_state *st, const struct ir_value *r)
{
	bool inside = (st->fuse[r->id] & (INTRA_FUSE_INSIDE | INTRA_FUSE_STORED)) == INTRA_FUSE_INSIDE;
	bool folded = intra_transpose_folded(&st->env, r->def);
	bool core = st->fuse[r->id] & INTRA_FUSE_CORE;
	return (inside || folded || core) && !st->saved[r->id] && !(st->fuse[r->id] & INTRA_FUSE_SHARED);
}

/* Per-device bytes a unit holds under strategy s, each buffer as the
 * arena places it (nothing for results that stay inside a fused
 * elementwise chain, or transposes the dots reading them fold in, unless
 * the backward pass keeps them or more than one node reads them: lowering
 * fuses a producer into its one reader alone). */
static double unit_usage(const struct intra_state *st, const struct intra_unit *x, int s)
{
	const struct intra_strat *k = &x->strat[s];
	if (trained(st, x))
		return intra_state_bytes(st, x, s, st->env.zero);
	if (!x->node)
		return arena_bytes(intra_local_bytes(&st->env, x->value, &k->out));
	double b = 0;
	for (int i = 0; i < x->node->nout; i++) {
		const struct ir_value *r = x->node->out[i];
		if (!fused_away(st, r))
			b += arena_bytes(intra_local_bytes(&st->env, r, &k->out));
	}
	return b;
}

/* The unit's own cost under strategy s: compute, its collective, the
 * optimizer update of a parameter, the copy of a graph input's local
 * shard from the host every step (an input already on the devices pays a
 * tie-break of a femtosecond per byte: the layout holding least), the
 * reduction of a partial graph output. */
static double unit_cost(const struct intra_state *st, const struct intra_unit *x, int s, const bool *is_output)
{
	const struct intra_strat *k = &x->strat[s];
	double t = k->t_compute + k->t_own;
	const struct ir_value *res = x->node ? x->node->out[0] : x->value;
	t += st->env.step_share * intra_optim_time(st, x, s, st->env.zero);
	t += st->env.state_price * intra_state_bytes(st, x, s, st->env.zero);
	if (!x->node && x->value->kind == IR_VAL_INPUT && !st->env.inputs_resident && st->env.dev.host_bw > 0)
		t += intra_local_bytes(&st->env, res, &k->out) / st->env.dev.host_bw;
	else if (!x->node && x->value->kind == IR_VAL_INPUT) /* ties: the layout holding least */
		t += intra_local_bytes(&st->env, res, &k->out) * 1e-15;
	if (k->out.partial && is_output[res->id]) {
		struct ir_sharding whole = k->out;
		whole.partial = 0;
		t += intra_reshard(&st->env, res, &k->out, &whole, false, NULL);
	}
	return t;
}

static bool same_sharding(const struct ir_sharding *a, const struct ir_sharding *b, int rank)
{
	return a->partial == b->partial && !memcmp(a->dim, b->dim, (size_t)rank);
}

/* Adds to diff[] (on a timeline of half steps: node i runs at 2i + 2) the
 * buffers the chosen strategies' reshardings take, which the problem's
 * usages cannot hold (a usage is a unit's, a resharding an edge's): right
 * before a node runs, each operand it reads in another sharding than its
 * producer left is converted into a buffer of its own (lower_reshard.c),
 * both live (a producer counted fused is then written whole, then
 * sliced); while the node runs, that buffer stands where the producer's
 * was if the node was its last reader. A constant is made again where it
 * is read, in its reader's sharding: no buffer. -ENOMEM or 0. */
static int reshard_buffers(const struct intra_state *st, int64_t *diff)
{
	/* per unit: its results read an input or parameter upstream (else
	 * lowering makes a constant again where read, in the sharding its
	 * reader needs: lower.c's remat) */
	bool *dyn = ir_calloc((size_t)st->nunits + 1, sizeof *dyn);
	if (!dyn)
		return -ENOMEM;
	for (int u = 0; u < st->nunits; u++) /* node units first, in graph order */
		dyn[u] = !st->unit[u].node;
	for (int u = 0; u < st->nunits && st->unit[u].node; u++) {
		const struct ir_node *n = st->unit[u].node;
		for (int j = 0; j < n->nin; j++)
			dyn[u] |= st->value_unit[n->in[j]->id] >= 0 && dyn[st->value_unit[n->in[j]->id]];
	}
	for (int v = 0; v < st->nunits; v++) {
		const struct intra_unit *y = &st->unit[v];
		if (!y->node)
			continue;
		const struct intra_strat *sv = intra_chosen(st, v);
		int64_t t = 2 * ((int64_t)y->node->id + 1);
		for (int j = 0; j < y->node->nin; j++) {
			const struct ir_value *x = y->node->in[j];
			int u = st->value_unit[x->id], again = 0;
			for (int k = 0; k < j; k++)
				again |= y->node->in[k] == x;
			if (u < 0 || again || !dyn[u])
				continue;
			const struct ir_sharding *src = &intra_chosen(st, u)->out;
			struct ir_sharding dst;
			intra_operand_spec(&y->lab, sv, j, x->shape.rank, &dst);
			if (same_sharding(src, &dst, x->shape.rank))
				continue;
			int64_t b = (int64_t)arena_bytes(intra_local_bytes(&st->env, x, &dst));
			int64_t a = (int64_t)arena_bytes(intra_local_bytes(&st->env, x, src));
			bool counted = !st->unit[u].node || !fused_away(st, x); /* the producer's buffer */
			diff[t - 1] += b + (counted ? 0 : a);
			diff[t] -= b + (counted ? 0 : a);
			bool last = counted && st->unit[u].hi <= y->node->id + 2;
			diff[t] += b - (last ? a : 0);
			diff[t + 1] -= b - (last ? a : 0);
		}
	}
	ir_free(dyn);
	return 0;
}

int intra_peak_parts(const struct intra_state *st, struct intra_result *r)
{
	const struct shard_problem *p = &st->prob;
	int64_t end = 0;
	for (int k = 0; k < p->nnodes; k++)
		end = p->hi[k] > end ? p->hi[k] : end;
	int64_t *diff = ir_calloc((size_t)(2 * end) + 4, sizeof *diff), live = 0, peak = -1, at = 0;
	if (!diff)
		return -ENOMEM;
	for (int k = 0; k < p->nnodes; k++)
		if (p->lo[k] < p->hi[k]) {
			int64_t u = p->usage[p->strat_off[k] + st->choice[k]];
			diff[2 * p->lo[k]] += u;
			diff[2 * p->hi[k]] -= u;
		}
	if (reshard_buffers(st, diff) < 0) {
		ir_free(diff);
		return -ENOMEM;
	}
	for (int64_t t = 0; t <= 2 * end; t++) {
		live += diff[t];
		if (live > peak)
			peak = live, at = t;
	}
	ir_free(diff);
	r->mem_stated = (double)peak;
	r->mem_held = r->mem_stash = 0;
	r->stash_slots = 1;
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		int k = x->group;
		if (!(2 * p->lo[k] <= at && at < 2 * p->hi[k]) || x->transient)
			continue;
		double b = unit_usage(st, x, x->map[st->choice[k]]);
		if (x->stashed) { /* per slot: one micro-batch's */
			r->mem_stash += b;
			r->stash_slots = x->copies > 1 ? x->copies : 1;
		} else if (x->lo == 0 && x->hi >= end) { /* the whole step: state, bound inputs */
			r->mem_held += b * (x->copies > 1 ? x->copies : 1);
		}
	}
	return 0;
}

/* Cost of graph edge (operand j of unit v, produced by unit u) under their
 * own strategies pu, pv. */
static double edge_cost(const struct intra_state *st, const struct intra_unit *u, int pu, const struct intra_unit *v,
			int pv, int j, bool grad)
{
	const struct ir_value *x = v->node->in[j];
	const struct ir_sharding *src = &u->strat[pu].out;
	struct ir_sharding dst;
	intra_operand_spec(&v->lab, &v->strat[pv], j, x->shape.rank, &dst);
	struct intra_coll c;
	double t = intra_reshard(&st->env, x, src, &dst, false, &c);
	if (!st->env.train && c.n == 0 && u->node && fused_away(st, x) && !same_sharding(src, &dst, x->shape.rank)) {
		/* its reader takes a local slice of it: no longer fused, the
		 * value is written to memory and read back to be sliced (a slice
		 * alone is free to the cost model: it moves no bytes between
		 * devices). Inference only so far: a training step's slice has
		 * a backward too, which this does not price */
		double b = 2 * intra_local_bytes(&st->env, x, src) + intra_local_bytes(&st->env, x, &dst);
		t += cost_roofline(&st->env.dev, &st->env.cal, COST_CLASS_MOVE, st->env.prec, 0, b);
	}
	if (intra_reads_operand(st, v->node, j))
		t += intra_regather(&c);
	if (grad) {
		struct ir_sharding gsrc = dst, gdst = *src;
		gsrc.partial = intra_grad_partial(&v->lab, &v->strat[pv], j, x->shape.rank);
		gdst.partial = 0;
		double r = intra_reshard(&st->env, x, &gsrc, &gdst, st->weight[x->id], NULL);
		t += st->weight[x->id] ? st->env.sync_share * r : r; /* once per step */
	}
	return t;
}

/* Values that carry a gradient in training: floating-point values that
 * depend on a parameter. *weight: those of them that are no activation
 * (act: cost_activation_values), such as a transposed weight: the same in
 * every micro-batch, so their gradients add up over the step and are
 * reduced once, like a parameter's. */
static bool *grad_values(const struct ir_graph *g, bool train, const bool *act, bool **weight)
{
	int nv = ir_graph_nvalues(g);
	bool *grad = train && act ? cost_grad_values(g) : ir_calloc((size_t)nv + 1, sizeof *grad);
	bool *w = *weight = ir_calloc((size_t)nv + 1, sizeof *w);
	if (!grad || !w || !act || !train)
		return grad;
	for (int v = 0; v <= nv; v++)
		w[v] = grad[v] && !act[v];
	return grad;
}

/* ---- the problem ---------------------------------------------------------------- */

/* Adds cost c(a, b) over the strategies of groups ga and gb (the diagonal
 * when they are one group) to the problem being built. */
static int add_pair(struct intra_state *st, struct edge_acc *e, double *node_cost, const struct intra_unit *x,
		    const struct intra_unit *y, const struct ir_value *v)
{
	const struct shard_problem *p = &st->prob;
	int gx = x->group, gy = y->group, kx = shard_problem_nstrat(p, gx), ky = shard_problem_nstrat(p, gy);
	double share = st->env.step_share;
	if (gx == gy) {
		for (int s = 0; s < kx; s++) {
			struct ir_sharding dst = y->strat[y->map[s]].out;
			dst.partial = 0;
			node_cost[p->strat_off[gx] + s] += share * intra_reshard(&st->env, v, &x->strat[x->map[s]].out,
										 &dst, false, NULL);
		}
		return 0;
	}
	int ei = edge_find(e, gx, gy, (int64_t)kx * ky);
	if (ei < 0)
		return ei;
	double *m = e->cost + e->off[ei];
	for (int a = 0; a < kx; a++)
		for (int b = 0; b < ky; b++) {
			struct ir_sharding dst = y->strat[y->map[b]].out;
			dst.partial = 0;
			m[a * ky + b] += share *
					 intra_reshard(&st->env, v, &x->strat[x->map[a]].out, &dst, false, NULL);
		}
	return 0;
}

/* intra_unit.transient: the unit making the one operand of a held unit
 * of its group (a gradient's convert into its f32 accumulator), when that
 * unit alone reads it. */
static int mark_transient(struct intra_state *st, const struct ir_graph *g)
{
	int *readers = ir_calloc((size_t)ir_graph_nvalues(g) + 1, sizeof *readers);
	if (!readers)
		return -ENOMEM;
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			readers[n->in[j]->id]++;
	}
	for (int u = 0; u < st->nunits; u++)
		st->unit[u].transient = false;
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		if (!x->held || !x->node || x->node->nin != 1)
			continue;
		const struct ir_value *v = x->node->in[0];
		int pu = st->value_unit[v->id];
		struct intra_unit *y = pu >= 0 ? &st->unit[pu] : NULL;
		if (y && y->node && y->group == x->group && !y->held && readers[v->id] == 1 && y->node->nout == 1)
			y->transient = true;
	}
	ir_free(readers);
	return 0;
}

static int fill_problem(struct intra_state *st, const struct ir_graph *g, const bool *grad, const bool *is_output,
			const struct intra_opts *o, double mem_limit)
{
	struct shard_problem *p = &st->prob;
	int ng = st->ngroups, rc = -ENOMEM;
	struct edge_acc e = { 0 };
	double *node_cost = NULL;
	p->nnodes = ng;
	p->strat_off = ir_malloc(sizeof *p->strat_off * ((size_t)ng + 1));
	p->lo = ir_malloc(sizeof *p->lo * (size_t)ng);
	p->hi = ir_malloc(sizeof *p->hi * (size_t)ng);
	if (!p->strat_off || !p->lo || !p->hi)
		goto out;
	p->strat_off[0] = 0;
	for (int k = 0; k < ng; k++) {
		p->strat_off[k + 1] = p->strat_off[k] + st->unit[st->leader[k]].nstrat;
		p->lo[k] = INT64_MAX;
		p->hi[k] = 0;
	}
	int total = p->strat_off[ng];
	node_cost = ir_calloc((size_t)total, sizeof *node_cost);
	p->cost = ir_malloc(sizeof *p->cost * (size_t)total);
	p->usage = ir_calloc((size_t)total, sizeof *p->usage);
	if (!node_cost || !p->cost || !p->usage)
		goto out;
	double *usage = ir_calloc((size_t)total, sizeof *usage);
	if (!usage || mark_transient(st, g) < 0) {
		ir_free(usage);
		goto out;
	}
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		int gk = x->group, base = p->strat_off[gk], k = shard_problem_nstrat(p, gk);
		/* a train step's update runs once per step */
		double w = x->node && o->update_first > 0 && x->node->id >= o->update_first ? st->env.step_share : 1;
		for (int s = 0; s < k; s++) {
			node_cost[base + s] += w * unit_cost(st, x, x->map[s], is_output);
			if (!x->transient)
				usage[base + s] += unit_usage(st, x, x->map[s]) * (x->copies > 1 ? x->copies : 1);
		}
		if (x->lo < p->lo[gk])
			p->lo[gk] = x->lo;
		if (x->hi > p->hi[gk])
			p->hi[gk] = x->hi;
		if (!x->node)
			continue;
		for (int j = 0; j < x->node->nin; j++) {
			const struct ir_value *val = x->node->in[j];
			const struct intra_unit *y = &st->unit[st->value_unit[val->id]];
			int gu = y->group, ku = shard_problem_nstrat(p, gu);
			bool gr = grad[val->id];
			if (gu == gk) {
				for (int s = 0; s < k; s++)
					node_cost[base + s] += w * edge_cost(st, y, y->map[s], x, x->map[s], j, gr);
				continue;
			}
			int ei = edge_find(&e, gu, gk, (int64_t)ku * k);
			if (ei < 0) {
				ir_free(usage);
				goto out;
			}
			double *m = e.cost + e.off[ei];
			for (int a = 0; a < ku; a++)
				for (int b = 0; b < k; b++)
					m[a * k + b] += w * edge_cost(st, y, y->map[a], x, x->map[b], j, gr);
		}
	}
	for (int t = 0; t < o->nties; t++) {
		int ua = st->value_unit[o->ties[t][0]], ub = st->value_unit[o->ties[t][1]];
		if (ua < 0 || ub < 0 || o->ties[t][0] == o->ties[t][1])
			continue;
		if (add_pair(st, &e, node_cost, &st->unit[ua], &st->unit[ub], ir_graph_value(g, o->ties[t][0])) < 0) {
			ir_free(usage);
			goto out;
		}
	}
	for (int s = 0; s < total; s++) {
		p->cost[s] = to_cost(node_cost[s]);
		p->usage[s] = (int64_t)ceil(usage[s]);
	}
	ir_free(usage);
	for (int k = 0; k < ng; k++)
		if (p->lo[k] >= p->hi[k])
			p->lo[k] = p->hi[k] = 0;
	p->nedges = e.n;
	p->edge_u = e.u;
	p->edge_v = e.v;
	e.u = e.v = NULL;
	p->edge_off = ir_malloc(sizeof *p->edge_off * ((size_t)e.n + 1));
	p->edge_cost = ir_malloc(sizeof *p->edge_cost * (size_t)(e.ncost ? e.ncost : 1));
	if (!p->edge_off || !p->edge_cost)
		goto out;
	for (int k = 0; k < e.n; k++)
		p->edge_off[k] = e.off[k];
	p->edge_off[e.n] = e.ncost;
	for (int64_t i = 0; i < e.ncost; i++)
		p->edge_cost[i] = to_cost(e.cost[i]);
	p->usage_limit = mem_limit > 9e18 ? INT64_MAX : (int64_t)mem_limit;
	rc = 0;
out:
	ir_free(node_cost);
	edge_acc_free(&e);
	if (rc == -ENOMEM)
		ir_errorf(rc, "out of memory building the strategy problem");
	return rc;
}

void intra_price_state(struct intra_state *st, double price)
{
	struct shard_problem *p = &st->prob;
	double d = price - st->env.state_price;
	for (int u = 0; u < st->nunits && d != 0; u++) {
		const struct intra_unit *x = &st->unit[u];
		if (!trained(st, x))
			continue;
		int base = p->strat_off[x->group], k = shard_problem_nstrat(p, x->group);
		for (int s = 0; s < k; s++)
			p->cost[base + s] += to_cost(d * intra_state_bytes(st, x, x->map[s], st->env.zero));
	}
	st->env.state_price = price;
}

/* Live intervals in node order: inputs and parameters from time 0, node i
 * at time i + 1; a value lives until its last use (graph outputs, and in
 * training the activations the backward pass keeps, to the end of the
 * step: the peak of a training step is where the backward pass starts). */
static void intervals(struct intra_state *st, const struct ir_graph *g, const bool *is_output, const bool *passed)
{
	int nn = ir_graph_nnodes(g);
	int64_t end = nn + 2;
	int64_t *last = ir_calloc((size_t)ir_graph_nvalues(g) + 1, sizeof *last);
	for (int i = 0; last && i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			last[n->in[j]->id] = i + 1;
	}
	for (int u = 0; u < st->nunits; u++) {
		struct intra_unit *x = &st->unit[u];
		const struct ir_value *v = x->node ? x->node->out[0] : x->value;
		x->lo = x->node ? x->node->id + 1 : 0;
		bool keep = (!x->node && v->kind == IR_VAL_PARAM) || !last;
		for (int k = 0; x->node && k < x->node->nout; k++)
			keep |= (is_output[x->node->out[k]->id] && !(passed && passed[x->node->out[k]->id])) ||
				st->saved[x->node->out[k]->id];
		keep |= !x->node && st->saved[v->id];
		keep |= !x->node && is_output[v->id];
		int64_t l = x->lo;
		for (int k = 0; last && k < (x->node ? x->node->nout : 1); k++) {
			const struct ir_value *r = x->node ? x->node->out[k] : v;
			if (last[r->id] > l)
				l = last[r->id];
		}
		x->hi = keep ? end : l + 1;
	}
	ir_free(last);
}

/* A train step as lowering lays it out: gradients held in accumulators
 * for the whole step (intra_opts.held), and on a pipelined stage what
 * the backward part reads of the forward part stashed from the start of
 * the per-micro-batch part to its end, one copy per micro-batch in flight
 * (lower_mem.c's stash_slots), one for values of the parameters alone. */
static int held_and_stashed(struct intra_state *st, const struct ir_graph *g, const struct intra_opts *o)
{
	int nn = ir_graph_nnodes(g), end_mb = o->update_first > 0 ? o->update_first : nn;
	for (int u = 0; o->held && u < st->nunits; u++) {
		struct intra_unit *x = &st->unit[u];
		bool held = !x->node && o->held[x->value->id];
		for (int k = 0; x->node && k < x->node->nout; k++)
			held |= o->held[x->node->out[k]->id];
		if (held) {
			x->lo = 0;
			x->hi = nn + 2;
		}
		x->held = held;
	}
	if (o->bwd_first <= 0)
		return 0;
	unsigned char *read = ir_calloc((size_t)ir_graph_nvalues(g) + 1, 1); /* 1: backward reads, 2: forward */
	bool *dyn = cost_activation_values(g);                               /* reads a graph input upstream */
	if (!read || !dyn) {
		ir_free(read);
		ir_free(dyn);
		return -ENOMEM;
	}
	for (int i = 0; i < end_mb; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			read[n->in[j]->id] |= i < o->bwd_first ? 2 : 1;
	}
	for (int u = 0; u < st->nunits; u++) {
		struct intra_unit *x = &st->unit[u];
		bool stashed = false;
		if (x->node && x->node->id < o->bwd_first)
			for (int k = 0; k < x->node->nout; k++)
				stashed |= read[x->node->out[k]->id] & 1;
		if (!x->node && x->value->kind == IR_VAL_INPUT) {
			stashed = read[x->value->id] & 1;
			/* received for the backward part alone (a gradient
			 * from the next stage): when that part starts */
			if (read[x->value->id] == 1 && !(o->held && o->held[x->value->id])) {
				x->lo = o->bwd_first;
				continue;
			}
		}
		if (!stashed)
			continue;
		/* written to memory whatever fuses: the backward part reads it later */
		for (int k = 0; x->node && k < x->node->nout; k++)
			st->saved[x->node->out[k]->id] |= read[x->node->out[k]->id] & 1;
		/* a value of the parameters alone is the same in every
		 * micro-batch: one copy (plan_invariant_instr) */
		const struct ir_value *v = x->node ? x->node->out[0] : x->value;
		x->copies = dyn[v->id] ? o->stash_slots : 1;
		x->stashed = dyn[v->id];
		x->lo = 0;
		if (x->hi < end_mb + 1)
			x->hi = end_mb + 1;
	}
	ir_free(read);
	ir_free(dyn);
	return 0;
}

static unsigned grad_mask(const struct intra_state *st, const struct ir_node *n)
{
	unsigned m = 0;
	for (int k = 0; k < n->nin && k < 8; k++)
		if (st->grad[n->in[k]->id])
			m |= 1u << k;
	return m;
}

bool intra_reads_operand(const struct intra_state *st, const struct ir_node *n, int j)
{
	if (!st->env.train || !st->grad[n->out[0]->id])
		return false;
	const struct ir_value *r[4];
	int k = cost_grad_reads(n, grad_mask(st, n), r);
	for (int i = 0; i < k; i++)
		if (r[i] == n->in[j])
			return true;
	return false;
}

static double saved_bytes(const struct ir_value *v, void *arg)
{
	const struct intra_state *st = arg;
	return cost_value_bytes(v, st->env.elem_bytes);
}

static int mark_saved(const struct ir_value *v, void *arg)
{
	struct intra_state *st = arg;
	st->saved[v->id] = true;
	return 0;
}

/* Training: the activations the backward pass keeps (st->saved). */
static void find_saved(struct intra_state *st, const struct ir_graph *g, const bool *act)
{
	if (!st->env.train)
		return;
	struct cost_keep c = { act, saved_bytes, mark_saved, st };
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		cost_backward_keeps(&c, ir_graph_node(g, i), grad_mask(st, ir_graph_node(g, i)));
}

bool *intra_saved_values(const struct ir_graph *g)
{
	struct intra_state st = { .env = { .train = true, .elem_bytes = 4 } };
	bool *act = cost_activation_values(g);
	st.grad = grad_values(g, true, act, &st.weight);
	st.saved = ir_calloc((size_t)ir_graph_nvalues(g) + 1, sizeof *st.saved);
	if (act && st.grad && st.weight && st.saved)
		find_saved(&st, g, act);
	else
		ir_free(st.saved), st.saved = NULL;
	ir_free(act);
	ir_free(st.grad);
	ir_free(st.weight);
	return st.saved;
}

/* On CPU ranks: marks the result of dot or convolution n INTRA_FUSE_CORE
 * when its one reader starts a chain of elementwise ops of its shape and
 * dtype up to the chain's stored result (reader[]: each value's last
 * reading node), as lowering then runs the call on that result's buffer. */
static void mark_core(struct intra_state *st, const struct ir_graph *g, const struct ir_node *n, const int *reader)
{
	if ((n->op != IR_OP_DOT && n->op != IR_OP_CONV) || n->nout != 1)
		return;
	const struct ir_value *r = n->out[0], *v = r;
	if (st->fuse[r->id] & INTRA_FUSE_SHARED)
		return;
	for (int depth = 0; depth < 64 && reader[v->id] >= 0; depth++) {
		const struct ir_node *m = ir_graph_node(g, reader[v->id]);
		const struct ir_value *w = m->out[0];
		if (m->nout != 1 || !cost_op_fusable(m->op) || cost_op_class(m->op) != COST_CLASS_ELEMENTWISE ||
		    w->dtype != r->dtype || !ir_shape_eq(&w->shape, &r->shape))
			return;
		uint8_t f = st->fuse[w->id];
		if ((f & (INTRA_FUSE_INSIDE | INTRA_FUSE_STORED | INTRA_FUSE_SHARED)) != INTRA_FUSE_INSIDE) {
			st->fuse[r->id] |= INTRA_FUSE_CORE; /* w: the chain's result */
			return;
		}
		v = w;
	}
}

/* Fusion flags (INTRA_FUSE_*) per value. */
static int find_fused(struct intra_state *st, const struct ir_graph *g, const bool *is_output)
{
	int *reader = ir_malloc(sizeof *reader * ((size_t)ir_graph_nvalues(g) + 1));
	if (!reader)
		return -ENOMEM;
	for (int v = 0; v < ir_graph_nvalues(g); v++)
		reader[v] = -1;
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; k < n->nin; k++) {
			int v = n->in[k]->id;
			if (!cost_read_fused(st->fused_in, i, k))
				st->fuse[v] |= INTRA_FUSE_STORED;
			if (n->op != IR_OP_DOT)
				st->fuse[v] |= INTRA_FUSE_NONDOT;
			if (reader[v] >= 0 && reader[v] != i)
				st->fuse[v] |= INTRA_FUSE_SHARED;
			reader[v] = i;
		}
		for (int k = 0; k < n->nout; k++) {
			if (cost_op_fusable(n->op))
				st->fuse[n->out[k]->id] |= INTRA_FUSE_INSIDE;
			if (is_output[n->out[k]->id])
				st->fuse[n->out[k]->id] |= INTRA_FUSE_STORED | INTRA_FUSE_NONDOT | INTRA_FUSE_SHARED;
		}
	}
	for (int i = 0; st->env.host && i < ir_graph_nnodes(g); i++)
		mark_core(st, g, ir_graph_node(g, i), reader);
	ir_free(reader);
	st->env.fuse = st->fuse;
	st->env.fused_in = st->fused_in;
	return 0;
}

int intra_build(struct intra_state *st, const struct ir_graph *g, const struct intra_opts *o)
{
	int nn = ir_graph_nnodes(g), ni = ir_graph_ninputs(g), np = ir_graph_nparams(g);
	int nv = ir_graph_nvalues(g), rc = -ENOMEM;
	int *uses = ir_calloc((size_t)nv + 1, sizeof *uses);
	bool *is_output = ir_calloc((size_t)nv + 1, sizeof *is_output);
	bool *act = cost_activation_values(g);
	uint8_t *batch = NULL; /* manual_tp: per value id, its dims along an input's; then those along a parameter's */
	bool *grad = st->grad = grad_values(g, st->env.train, act, &st->weight);
	st->saved = ir_calloc((size_t)nv + 1, sizeof *st->saved);
	st->fuse = ir_calloc((size_t)nv + 1, sizeof *st->fuse);
	st->fused_in = cost_fused_reads(g);
	st->nunits = nn + ni + np;
	st->unit = ir_calloc((size_t)st->nunits + 1, sizeof *st->unit);
	st->value_unit = ir_malloc(sizeof *st->value_unit * ((size_t)nv + 1));
	if (!uses || !is_output || !act || !grad || !st->weight || !st->saved || !st->fuse || !st->fused_in ||
	    !st->unit || !st->value_unit) {
		ir_errorf(rc, "out of memory building the strategy problem");
		goto out;
	}
	for (int i = 0; i < nv; i++)
		st->value_unit[i] = -1;
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		is_output[ir_graph_output(g, i)->id] = true;
		uses[ir_graph_output(g, i)->id]++;
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		st->unit[i].node = n;
		for (int j = 0; j < n->nin; j++)
			uses[n->in[j]->id]++;
		for (int k = 0; k < n->nout; k++)
			st->value_unit[n->out[k]->id] = i;
	}
	for (int i = 0; i < ni + np; i++) {
		const struct ir_value *v = i < ni ? ir_graph_input(g, i) : ir_graph_param(g, i - ni);
		st->unit[nn + i].value = v;
		st->value_unit[v->id] = nn + i;
	}
	if ((rc = find_fused(st, g, is_output)) < 0) {
		ir_errorf(rc, "out of memory building the strategy problem");
		goto out;
	}
	find_saved(st, g, act);
	for (int v = 0; o->held && v < nv; v++) /* held (a gradient accumulator): a buffer whatever fuses */
		if (o->held[v])
			st->fuse[v] |= INTRA_FUSE_STORED | INTRA_FUSE_NONDOT | INTRA_FUSE_SHARED;
	if (o->manual_tp) {
		batch = ir_calloc((size_t)nv + 1, 2);
		if (!batch) {
			rc = ir_errorf(-ENOMEM, "out of memory building the strategy problem");
			goto out;
		}
		for (int i = 0; i < ni; i++)
			batch[ir_graph_input(g, i)->id] = 0xff;
		for (int i = 0; i < nv; i++) /* parameters and what is made of them alone */
			batch[nv + 1 + i] = act[i] ? 0 : 0xff;
	}
	for (int u = 0; u < st->nunits; u++)
		if ((rc = init_unit(st, &st->unit[u], batch, batch ? batch + nv + 1 : NULL)) < 0)
			goto out;
	intervals(st, g, is_output, o->passed);
	if ((rc = held_and_stashed(st, g, o)) < 0) {
		ir_errorf(rc, "out of memory building the strategy problem");
		goto out;
	}
	if ((rc = make_groups(st, g, uses, o)) < 0) {
		ir_errorf(rc, "out of memory building the strategy problem");
		goto out;
	}
	double lim = o->mem_limit > 0 ? o->mem_limit : 0.9 * st->env.dev.mem_bytes;
	rc = fill_problem(st, g, grad, is_output, o, lim);
out:
	ir_free(uses);
	ir_free(is_output);
	ir_free(act);
	ir_free(batch);
	return rc;
}

void intra_state_free(struct intra_state *st)
{
	for (int u = 0; st->unit && u < st->nunits; u++) {
		ir_free(st->unit[u].strat);
		ir_free(st->unit[u].map);
	}
	ir_free(st->unit);
	ir_free(st->value_unit);
	ir_free(st->grad);
	ir_free(st->weight);
	ir_free(st->saved);
	ir_free(st->fuse);
	ir_free(st->fused_in);
	ir_free(st->leader);
	ir_free(st->choice);
	/* the problem's arrays came from ir_malloc: free them the same way */
	struct shard_problem *p = &st->prob;
	ir_free(p->strat_off);
	ir_free(p->cost);
	ir_free(p->usage);
	ir_free(p->lo);
	ir_free(p->hi);
	ir_free(p->edge_u);
	ir_free(p->edge_v);
	ir_free(p->edge_off);
	ir_free(p->edge_cost);
	memset(st, 0, sizeof *st);
}
