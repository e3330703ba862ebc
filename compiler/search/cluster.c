/*
 * cluster.c: layer clustering, the inter-op pass's first step. Cuts the
 * nodes, in program order, into L layers so that the bytes crossing the
 * worst cut are fewest, then the bytes crossing all cuts, then the layers'
 * FLOPs are most even (sum of squared deviations from the mean); every
 * layer holds a heavy op (dot, convolution) and at most (1 + eps) times
 * the mean FLOPs (eps relaxed, doubling, where no cut meets it).
 *
 * A cut's bytes are those of the node results defined before it and used
 * after it. Results computed from parameters and constants alone are left
 * out: a stage recomputes them from its own copy (a transposed weight, a
 * causal mask). The DP weighs a cut by those bytes plus the traffic it
 * adds by splitting a fused elementwise chain (the cost model's fusion,
 * cost_fused_reads): a result that would never leave its kernel is
 * written, and a consumer in its kernel after the cut reads it back. So a
 * residual block is cut after its closing add and activation, not between
 * them, and the layers' costs add up to the whole graph's.
 *
 * Cut candidates: the 4L cheapest boundaries plus the cheapest in each of
 * 8L windows of equal FLOPs, so the DP over candidates (min-max, then
 * lexicographic sum) is O(L C w) with C <= 12L, w the candidates one
 * layer within the FLOPs cap spans, whatever the node count.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/search.h"

void cluster_opts_init(struct cluster_opts *o)
{
	memset(o, 0, sizeof *o);
	o->eps = 0.5;
	o->max_layers = 16;
}

void cluster_result_free(struct cluster_result *r)
{
	ir_free(r->first);
	ir_free(r->flops);
	ir_free(r->cut_bytes);
	memset(r, 0, sizeof *r);
}

struct cl {
	int k;          /* nodes */
	double *pre;    /* [k+1] prefix FLOPs */
	int *heavy;     /* [k+1] prefix count of heavy nodes */
	double *cut;    /* [k+1] bytes crossing boundary b (nodes [0,b) before) */
	double *weight; /* [k+1] cut plus the bytes cutting there adds to fused chains */
	int *cand;      /* candidate boundaries, ascending, with 0 and k */
	int nc;
};

/* Adds b bytes to boundaries from .. to (a difference array). */
static void span(double *diff, int from, int to, double b)
{
	if (to < from)
		return;
	diff[from] += b;
	diff[to + 1] -= b;
}

/* Per boundary: the bytes crossing it (cut), and those plus what cutting
 * there adds to fused chains (weight). A value defined by node d and last
 * used by node u (or a graph output: used at k) crosses boundaries
 * d+1 .. u. One that stays in registers is written in addition when no
 * consumer reads it from memory anyway, and read again when a consumer u'
 * sharing its kernel follows the cut (boundaries d+1 .. u'). */
static int cut_bytes(const struct ir_graph *g, struct cl *c)
{
	int nv = ir_graph_nvalues(g), k = c->k;
	int *last = ir_malloc(sizeof *last * (size_t)nv);
	int *last_fused = ir_malloc(sizeof *last_fused * (size_t)nv);
	bool *free_ = ir_calloc((size_t)nv, sizeof *free_);
	bool *stored = ir_calloc((size_t)nv, sizeof *stored);
	double *diff = ir_calloc((size_t)k + 2, sizeof *diff);
	double *extra = ir_calloc((size_t)k + 2, sizeof *extra);
	uint32_t *fused_in = cost_fused_reads(g);
	if (!last || !last_fused || !free_ || !stored || !diff || !extra || !fused_in) {
		ir_free(fused_in);
		ir_free(last);
		ir_free(last_fused);
		ir_free(free_);
		ir_free(stored);
		ir_free(diff);
		ir_free(extra);
		return ir_errorf(-ENOMEM, "out of memory clustering layers");
	}
	for (int v = 0; v < nv; v++) {
		last[v] = last_fused[v] = -1;
		free_[v] = ir_graph_value(g, v)->kind == IR_VAL_PARAM;
	}
	for (int i = 0; i < k; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool f = true;
		for (int j = 0; j < n->nin; j++) {
			int v = n->in[j]->id;
			last[v] = i;
			if (cost_read_fused(fused_in, i, j))
				last_fused[v] = i;
			else
				stored[v] = true;
			f &= free_[v];
		}
		for (int j = 0; j < n->nout; j++)
			free_[n->out[j]->id] = f;
	}
	for (int o = 0; o < ir_graph_noutputs(g); o++) {
		last[ir_graph_output(g, o)->id] = k;
		stored[ir_graph_output(g, o)->id] = true;
	}
	for (int i = 0; i < k; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++) {
			const struct ir_value *v = n->out[j];
			if (free_[v->id] || last[v->id] <= i)
				continue;
			double b = (double)ir_shape_numel(&v->shape) * (double)ir_dtype_size(v->dtype);
			span(diff, i + 1, last[v->id], b);
			if (!stored[v->id])
				span(extra, i + 1, last[v->id], b);
			span(extra, i + 1, last_fused[v->id], b);
		}
	}
	double run = 0, more = 0;
	for (int b = 0; b <= k; b++) {
		run += diff[b];
		more += extra[b];
		c->cut[b] = b == 0 || b == k ? 0 : run;
		c->weight[b] = b == 0 || b == k ? 0 : run + more;
	}
	ir_free(last);
	ir_free(last_fused);
	ir_free(free_);
	ir_free(stored);
	ir_free(diff);
	ir_free(extra);
	ir_free(fused_in);
	return 0;
}

struct bcut {
	double bytes;
	int at;
};

static int cmp_cut(const void *a, const void *b)
{
	const struct bcut *x = a, *y = b;
	return x->bytes < y->bytes ? -1 : x->bytes > y->bytes ? 1 : x->at - y->at;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int candidates(struct cl *c, int layers)
{
	int k = c->k, want = 4 * layers, windows = 8 * layers;
	struct bcut *all = ir_malloc(sizeof *all * (size_t)(k + 1));
	c->cand = ir_malloc(sizeof *c->cand * (size_t)(want + windows + 2));
	if (!all || !c->cand) {
		ir_free(all);
		return ir_errorf(-ENOMEM, "out of memory clustering layers");
	}
	int n = 0;
	for (int b = 1; b < k; b++)
		all[n++] = (struct bcut){ c->weight[b], b };
	qsort(all, (size_t)n, sizeof *all, cmp_cut);
	c->nc = 0;
	c->cand[c->nc++] = 0;
	c->cand[c->nc++] = k;
	for (int i = 0; i < n && i < want; i++)
		c->cand[c->nc++] = all[i].at;
	double total = c->pre[k];
	for (int w = 0, b = 1; w < windows; w++) {
		double hi = total * (w + 1) / windows;
		int best = -1;
		for (; b < k && (c->pre[b] <= hi || w == windows - 1); b++)
			if (best < 0 || c->weight[b] < c->weight[best])
				best = b;
		if (best > 0)
			c->cand[c->nc++] = best;
	}
	qsort(c->cand, (size_t)c->nc, sizeof *c->cand, cmp_int);
	int m = 0;
	for (int i = 0; i < c->nc; i++)
		if (m == 0 || c->cand[i] != c->cand[m - 1])
			c->cand[m++] = c->cand[i];
	c->nc = m;
	ir_free(all);
	return 0;
}

/* Layer (candidates a, b]: allowed under the FLOPs cap, with a heavy op. */
static bool layer_ok(const struct cl *c, int a, int b, double cap, bool need_heavy)
{
	int x = c->cand[a], y = c->cand[b];
	return c->pre[y] - c->pre[x] <= cap && (!need_heavy || c->heavy[y] > c->heavy[x]);
}

/* lo[j]: the first candidate i whose layer (i, j] is within the FLOPs cap;
 * every i from it up to j is (prefix FLOPs never fall), none before it. */
static void first_within(const struct cl *c, double cap, int *lo)
{
	for (int j = 0, i = 0; j < c->nc; j++) {
		while (i < j && c->pre[c->cand[j]] - c->pre[c->cand[i]] > cap)
			i++;
		lo[j] = i;
	}
}

/* Min-max cut, then (sum of cuts, sum of squared FLOPs deviations) under
 * that bound. Fills r on success; -ERANGE when no split meets the cap.
 * Both passes visit a layer's start candidates in ascending order from
 * the first within the cap (first_within): the same order, and so the
 * same ties broken, as from 0. */
static int dp(const struct cl *c, int L, double cap, bool need_heavy, struct cluster_result *r)
{
	int nc = c->nc, rc = 0;
	size_t cells = (size_t)(L + 1) * (size_t)nc;
	double *mx = ir_malloc(sizeof *mx * cells), *sum = ir_malloc(sizeof *sum * cells);
	double *dev = ir_malloc(sizeof *dev * cells);
	int *from = ir_malloc(sizeof *from * cells), *lo = ir_malloc(sizeof *lo * (size_t)nc);
	if (!mx || !sum || !dev || !from || !lo) {
		rc = ir_errorf(-ENOMEM, "out of memory clustering layers");
		goto done;
	}
	double mean = c->pre[c->k] / L;
#define AT(l, j) ((size_t)(l) * (size_t)nc + (size_t)(j))
	for (size_t i = 0; i < cells; i++)
		mx[i] = INFINITY;
	mx[AT(0, 0)] = 0;
	first_within(c, cap, lo);
	for (int l = 1; l <= L; l++)
		for (int j = 1; j < nc; j++)
			for (int i = lo[j]; i < j; i++)
				if (isfinite(mx[AT(l - 1, i)]) && layer_ok(c, i, j, cap, need_heavy)) {
					double v = fmax(mx[AT(l - 1, i)], c->weight[c->cand[i]]);
					if (v < mx[AT(l, j)])
						mx[AT(l, j)] = v;
				}
	double bound = mx[AT(L, nc - 1)];
	if (!isfinite(bound)) {
		rc = -ERANGE;
		goto done;
	}
	for (size_t i = 0; i < cells; i++)
		sum[i] = INFINITY, dev[i] = INFINITY, from[i] = -1;
	sum[AT(0, 0)] = dev[AT(0, 0)] = 0;
	for (int l = 1; l <= L; l++)
		for (int j = 1; j < nc; j++)
			for (int i = lo[j]; i < j; i++) {
				if (!isfinite(sum[AT(l - 1, i)]) || c->weight[c->cand[i]] > bound ||
				    !layer_ok(c, i, j, cap, need_heavy))
					continue;
				double f = c->pre[c->cand[j]] - c->pre[c->cand[i]] - mean;
				double s = sum[AT(l - 1, i)] + c->weight[c->cand[i]], d = dev[AT(l - 1, i)] + f * f;
				if (s < sum[AT(l, j)] || (s == sum[AT(l, j)] && d < dev[AT(l, j)])) {
					sum[AT(l, j)] = s;
					dev[AT(l, j)] = d;
					from[AT(l, j)] = i;
				}
			}
	r->nlayers = L;
	r->first = ir_malloc(sizeof *r->first * (size_t)(L + 1));
	r->flops = ir_malloc(sizeof *r->flops * (size_t)L);
	r->cut_bytes = ir_calloc((size_t)L + 1, sizeof *r->cut_bytes);
	if (!r->first || !r->flops || !r->cut_bytes) {
		rc = ir_errorf(-ENOMEM, "out of memory clustering layers");
		goto done;
	}
	for (int l = L, j = nc - 1; l >= 0; j = l > 0 ? from[AT(l, j)] : j, l--)
		r->first[l] = c->cand[j];
	for (int l = 0; l < L; l++) {
		r->flops[l] = c->pre[r->first[l + 1]] - c->pre[r->first[l]];
		r->cut_bytes[l] = c->cut[r->first[l]];
		r->max_cut = fmax(r->max_cut, r->cut_bytes[l]);
		r->sum_cut += r->cut_bytes[l];
	}
#undef AT
done:
	ir_free(mx);
	ir_free(sum);
	ir_free(dev);
	ir_free(from);
	ir_free(lo);
	return rc;
}

int cluster_layers(const struct ir_graph *g, const struct cluster_opts *o, struct cluster_result *r)
{
	memset(r, 0, sizeof *r);
	struct cl c = { .k = ir_graph_nnodes(g) };
	if (c.k == 0 && o->layers <= 1) {
		/* nothing to compute (outputs are inputs: an Identity model) */
		r->nlayers = 1;
		r->first = ir_calloc(2, sizeof *r->first);
		r->flops = ir_calloc(1, sizeof *r->flops);
		r->cut_bytes = ir_calloc(2, sizeof *r->cut_bytes);
		if (!r->first || !r->flops || !r->cut_bytes) {
			cluster_result_free(r);
			return ir_errorf(-ENOMEM, "out of memory clustering layers");
		}
		return 0;
	}
	if (c.k == 0)
		return ir_errorf(-EINVAL, "the graph has no nodes to cluster into layers");
	if (o->layers < 0 || o->eps < 0)
		return ir_errorf(-EINVAL, "layer clustering: layers %d and eps %g must not be negative", o->layers,
				 o->eps);
	c.pre = ir_calloc((size_t)c.k + 1, sizeof *c.pre);
	c.heavy = ir_calloc((size_t)c.k + 1, sizeof *c.heavy);
	c.cut = ir_calloc((size_t)c.k + 1, sizeof *c.cut);
	c.weight = ir_calloc((size_t)c.k + 1, sizeof *c.weight);
	int rc = c.pre && c.heavy && c.cut && c.weight ? 0 : ir_errorf(-ENOMEM, "out of memory clustering layers");
	for (int i = 0; rc == 0 && i < c.k; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		c.pre[i + 1] = c.pre[i] + ir_node_flops(n);
		c.heavy[i + 1] = c.heavy[i] + ((ir_op_flags(n->op) & IR_OPF_HEAVY) != 0);
	}
	int nheavy = c.heavy[c.k];
	int L = o->layers;
	if (L == 0) {
		L = nheavy / 3;
		L = L < 1 ? 1 : L > o->max_layers && o->max_layers > 0 ? o->max_layers : L;
	}
	if (rc == 0 && L > c.k)
		rc = ir_errorf(-EINVAL, "%d layers asked of a graph of %d nodes", L, c.k);
	bool need_heavy = nheavy >= L;
	if (rc == 0)
		rc = cut_bytes(g, &c);
	if (rc == 0)
		rc = candidates(&c, L);
	if (rc == 0 && c.nc - 1 < L)
		rc = ir_errorf(-EINVAL, "%d layers asked, but the graph has only %d places to cut", L, c.nc - 1);
	double eps = o->eps;
	for (int tries = 0; rc == 0; tries++) {
		double cap = tries < 12 ? c.pre[c.k] / L * (1 + eps) : INFINITY;
		rc = dp(&c, L, cap * (1 + 1e-12) + 1e-9, need_heavy, r);
		if (rc != -ERANGE)
			break;
		if (tries >= 12 && need_heavy)
			need_heavy = false;
		else if (tries >= 13)
			break;
		eps = eps > 0 ? eps * 2 : 0.5;
		rc = 0;
	}
	if (rc == -ERANGE)
		rc = ir_errorf(-EINVAL, "no split into %d layers exists", L);
	r->eps = eps;
	ir_free(c.pre);
	ir_free(c.heavy);
	ir_free(c.cut);
	ir_free(c.weight);
	ir_free(c.cand);
	if (rc < 0)
		cluster_result_free(r);
	return rc;
}
