/*
 * train_params.c: which floating point initializers a train step trains.
 *
 * PyTorch trains its parameters; an ONNX file holds them among other
 * initializers: constants an exporter stored as tensors (the dynamo
 * exporter keeps every scalar as a 0-d initializer: gelu's 0.5, Pow's
 * exponent, RMSNorm's epsilon, the attention mask's fill) and tables it
 * folded (RoPE's cos and sin). Trained, such an exponent is NaN after one
 * step. The rule: a floating point initializer the loss reaches is a
 * parameter, unless
 *  - it is 0-d (scalar);
 *  - every use of it, seen through reshapes, broadcasts, transposes,
 *    slices and converts, is a Pow's exponent (exponent); or, for a
 *    one-element tensor, a Max/Min operand (Clip's bounds: bound), a
 *    Select branch (Where's fill value: fill), or an Add whose sum is only
 *    square-rooted or divided by (a norm's epsilon: epsilon);
 *  - it holds a sine/cosine table: with another initializer of its shape,
 *    or between the two halves of its last axis, the squares add up to the
 *    same number at every element, each holds 4 elements or more and not
 *    all equal (cos t and sin t: RoPE's folded tables, sinusoidal position
 *    embeddings; not a fresh LayerNorm's ones and zeros).
 * A one-element tensor of rank 1 or more in any other role is a parameter
 * (Linear(n, 1)'s bias, PReLU's slope). Where the exporter says what each
 * initializer is (the dynamo exporter's InputSpec.kind, ir_value.declared),
 * its word decides: its parameters train, its buffers (RoPE's inv_freq)
 * do not; the tensors it made itself (its optimizer's folded transposes of
 * weights, scalars) go by the rule above. --trainable and --freeze
 * patterns override the rule, the last one that matches a name deciding.
 *
 * Integer initializers (indices, shapes) never train, nor running
 * statistics (state). Example: gelu_new's Pow(x, c3) with c3 a 0-d 3.0
 * sets c3 aside as "scalar"; the same exponent stored as [1] as
 * "exponent".
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <string.h>

#include "compiler/train/train_internal.h"

const char *train_aside_name(enum train_aside why)
{
	switch (why) {
	case TRAIN_ASIDE_SCALAR:
		return "scalar";
	case TRAIN_ASIDE_EXPONENT:
		return "exponent";
	case TRAIN_ASIDE_BOUND:
		return "bound";
	case TRAIN_ASIDE_FILL:
		return "fill";
	case TRAIN_ASIDE_EPSILON:
		return "epsilon";
	case TRAIN_ASIDE_TABLE:
		return "sin/cos table";
	case TRAIN_ASIDE_BUFFER:
		return "buffer";
	case TRAIN_ASIDE_COUNT:
		break;
	}
	return "?";
}

/* The uses of every value by nodes the loss needs: use[first[v] ..
 * first[v + 1]) are node index * 4 + operand (operands beyond 3 are
 * concat's, never a role below). */
struct uses {
	int *first, *use;
	bool *need; /* per value: the loss depends on it */
};

static void uses_free(struct uses *u)
{
	ir_free(u->first);
	ir_free(u->use);
	ir_free(u->need);
}

static int uses_build(const struct ir_graph *g, const struct ir_value *loss, struct uses *u)
{
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g), total = 0;
	bool *live = ir_calloc((size_t)nn + 1, sizeof *live);
	u->need = ir_calloc((size_t)nv + 1, sizeof *u->need);
	u->first = ir_calloc((size_t)nv + 2, sizeof *u->first);
	if (!live || !u->need || !u->first) {
		ir_free(live);
		return -ENOMEM;
	}
	u->need[loss->id] = true;
	for (int i = nn - 1; i >= 0; i--) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; k < n->nout && !live[i]; k++)
			live[i] = u->need[n->out[k]->id];
		for (int k = 0; live[i] && k < n->nin; k++) {
			u->need[n->in[k]->id] = true;
			u->first[n->in[k]->id + 1]++;
			total++;
		}
	}
	for (int v = 0; v < nv; v++)
		u->first[v + 1] += u->first[v];
	int *fill = ir_calloc((size_t)nv + 1, sizeof *fill);
	u->use = ir_calloc((size_t)total + 1, sizeof *u->use);
	if (!fill || !u->use) {
		ir_free(fill);
		ir_free(live);
		return -ENOMEM;
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; live[i] && k < n->nin; k++) {
			int v = n->in[k]->id;
			u->use[u->first[v] + fill[v]++] = i * 4 + (k < 3 ? k : 3);
		}
	}
	ir_free(fill);
	ir_free(live);
	return 0;
}

/* Ops a role is seen through: they move or retype values, nothing more. */
static bool looks_through(enum ir_op op)
{
	return op == IR_OP_RESHAPE || op == IR_OP_BROADCAST || op == IR_OP_TRANSPOSE || op == IR_OP_SLICE ||
	       op == IR_OP_CONVERT;
}

#define ROLE(r) (1u << (r))
#define MAX_WALK 1024 /* values a walk holds at once (a constant shared by many layers) */

/* Calls leaf(n, k) for every use of v seen through looks_through ops and
 * returns the AND of their role masks (0 when a walk grows too long). */
static unsigned walk(const struct ir_graph *g, const struct uses *u, const struct ir_value *v,
		     unsigned (*leaf)(const struct ir_graph *, const struct uses *, const struct ir_node *, int))
{
	const struct ir_value *stack[MAX_WALK];
	int sp = 0, seen = 0;
	unsigned mask = ~0u;
	stack[sp++] = v;
	while (sp > 0 && mask) {
		const struct ir_value *x = stack[--sp];
		for (int j = u->first[x->id]; j < u->first[x->id + 1] && mask; j++) {
			const struct ir_node *n = ir_graph_node(g, u->use[j] / 4);
			if (!looks_through(n->op))
				mask &= leaf(g, u, n, u->use[j] % 4);
			else if (sp < MAX_WALK && ++seen < 4 * MAX_WALK)
				stack[sp++] = n->out[0];
			else
				mask = 0;
		}
	}
	return mask;
}

/* A sum that is only square-rooted or divided by. */
static unsigned under_root(const struct ir_graph *g, const struct uses *u, const struct ir_node *n, int k)
{
	(void)g, (void)u;
	bool ok = n->op == IR_OP_SQRT || n->op == IR_OP_RSQRT || n->op == IR_OP_RECIP || (n->op == IR_OP_DIV && k == 1);
	return ok ? ~0u : 0;
}

static unsigned role_of_use(const struct ir_graph *g, const struct uses *u, const struct ir_node *n, int k)
{
	if (n->op == IR_OP_POW)
		return k == 1 ? ROLE(TRAIN_ASIDE_EXPONENT) : 0;
	if (n->op == IR_OP_MAX || n->op == IR_OP_MIN)
		return ROLE(TRAIN_ASIDE_BOUND);
	if (n->op == IR_OP_SELECT)
		return k >= 1 ? ROLE(TRAIN_ASIDE_FILL) : 0;
	if (n->op == IR_OP_ADD)
		return walk(g, u, n->out[0], under_root) ? ROLE(TRAIN_ASIDE_EPSILON) : 0;
	return 0;
}

/* A view of parameter p's inline values, or false without them. */
static bool values(const struct ir_value *p, struct ir_tensor *t)
{
	if (!p->data.bytes || !ir_dtype_is_float(p->dtype))
		return false;
	*t = (struct ir_tensor){ p->dtype, p->shape, (void *)p->data.bytes };
	return true;
}

static bool all_equal(const struct ir_tensor *t, int64_t off, int64_t stride, int64_t len, int64_t n)
{
	double x0 = ir_tensor_get_f64(t, off);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < len; j++)
			if (ir_tensor_get_f64(t, i * stride + off + j) != x0)
				return false;
	return true;
}

/* a^2 + b^2 is one positive number at every element: n rows of len
 * elements, a at offset oa and b at ob within each row of stride. */
static bool squares_constant(const struct ir_tensor *a, int64_t oa, const struct ir_tensor *b, int64_t ob,
			     int64_t stride, int64_t len, int64_t n)
{
	double x = ir_tensor_get_f64(a, oa), y = ir_tensor_get_f64(b, ob), k = x * x + y * y;
	if (!(k > 0) || !isfinite(k) || n * len < 4) /* a 2x2 identity is no table */
		return false;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < len; j++) {
			x = ir_tensor_get_f64(a, i * stride + oa + j);
			y = ir_tensor_get_f64(b, i * stride + ob + j);
			if (!(fabs(x * x + y * y - k) <= 1e-5 * k))
				return false;
		}
	return !all_equal(a, oa, stride, len, n) && !all_equal(b, ob, stride, len, n);
}

/* The two halves of t's last axis are a sine/cosine pair. */
static bool halves_table(const struct ir_tensor *t)
{
	int r = t->shape.rank;
	int64_t last = r ? t->shape.dims[r - 1] : 0, n = ir_shape_numel(&t->shape);
	if (last < 2 || last % 2)
		return false;
	return squares_constant(t, 0, t, last / 2, last, last / 2, n / last);
}

/* p and q (same shape) are a sine/cosine pair. */
static bool pair_table(const struct ir_value *p, const struct ir_value *q)
{
	struct ir_tensor a, b;
	if (p == q || !ir_shape_eq(&p->shape, &q->shape) || !values(p, &a) || !values(q, &b))
		return false;
	int64_t n = ir_shape_numel(&p->shape);
	return squares_constant(&a, 0, &b, 0, n, n, 1);
}

/* Why p is a constant, or TRAIN_ASIDE_COUNT when it is a parameter. */
static enum train_aside classify(const struct ir_graph *g, const struct uses *u, const struct ir_value *p)
{
	if (p->declared == IR_DECLARED_PARAMETER)
		return TRAIN_ASIDE_COUNT;
	if (p->declared == IR_DECLARED_BUFFER)
		return TRAIN_ASIDE_BUFFER;
	if (p->shape.rank == 0)
		return TRAIN_ASIDE_SCALAR;
	unsigned roles = walk(g, u, p, role_of_use);
	if (ir_shape_numel(&p->shape) != 1)
		roles &= ROLE(TRAIN_ASIDE_EXPONENT);
	for (int r = 0; r < TRAIN_ASIDE_COUNT; r++)
		if (roles & ROLE(r))
			return (enum train_aside)r;
	struct ir_tensor t;
	if (values(p, &t) && halves_table(&t))
		return TRAIN_ASIDE_TABLE;
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *q = ir_graph_param(g, i);
		if (!q->buffer && u->need[q->id] && pair_table(p, q))
			return TRAIN_ASIDE_TABLE;
	}
	return TRAIN_ASIDE_COUNT;
}

/* 1: a --trainable pattern is the last to match name, 0: a --freeze one,
 * -1: none. */
static int pattern_says(const struct train_opts *o, const char *name)
{
	int says = -1;
	for (int i = 0; name && i < o->npatterns; i++)
		if (fnmatch(o->patterns[i].glob, name, 0) == 0)
			says = o->patterns[i].train;
	return says;
}

static bool updated(const struct ir_graph *g, const struct ir_value *p)
{
	for (int i = 0; i < ir_graph_nupdates(g); i++)
		if (ir_graph_update_param(g, i) == p)
			return true;
	return false;
}

int train_candidates(const struct ir_graph *g, const struct ir_value *loss, const struct train_opts *o,
		     struct train_step *ts, struct ir_value ***out)
{
	int np = ir_graph_nparams(g), n = 0, rc;
	struct uses u = { 0 };
	struct ir_value **v = ir_calloc((size_t)np + 1, sizeof *v);
	ts->aside = ir_calloc((size_t)np + 1, sizeof *ts->aside);
	ts->aside_why = ir_calloc((size_t)np + 1, sizeof *ts->aside_why);
	if (!v || !ts->aside || !ts->aside_why || (rc = uses_build(g, loss, &u)) < 0) {
		uses_free(&u);
		ir_free(v);
		return ir_errorf(-ENOMEM, "out of memory choosing the trained parameters");
	}
	ts->nfrozen = 0;
	ts->naside = 0;
	for (int i = 0; i < np; i++) {
		struct ir_value *p = ir_graph_param(g, i);
		if (!ir_dtype_is_float(p->dtype) || p->buffer || updated(g, p))
			continue;
		int says = pattern_says(o, p->name);
		enum train_aside why = says < 0 && u.need[p->id] ? classify(g, &u, p) : TRAIN_ASIDE_COUNT;
		if (why != TRAIN_ASIDE_COUNT) {
			ts->aside[ts->naside] = p;
			ts->aside_why[ts->naside++] = why;
		}
		if (says == 0 || why != TRAIN_ASIDE_COUNT)
			ts->nfrozen++;
		else
			v[n++] = p;
	}
	uses_free(&u);
	*out = v;
	return n;
}

/* ---- the summary ---------------------------------------------------------- */

/* b equals a (same shape), or a transposed (2-D, swapped dims); a tensor
 * of one value throughout (a fresh LayerNorm weight) equals many and says
 * nothing. */
static const char *copy_of(const struct ir_tensor *a, const struct ir_tensor *b)
{
	int64_t n = ir_shape_numel(&a->shape);
	if (n < 2 || ir_shape_numel(&b->shape) != n)
		return NULL;
	bool same = ir_shape_eq(&a->shape, &b->shape);
	bool tr = a->shape.rank == 2 && b->shape.rank == 2 && a->shape.dims[0] == b->shape.dims[1] &&
		  a->shape.dims[1] == b->shape.dims[0];
	for (int64_t i = 0; same && i < n; i++)
		same = ir_tensor_get_f64(a, i) == ir_tensor_get_f64(b, i);
	int64_t r = tr ? a->shape.dims[0] : 0, c = tr ? a->shape.dims[1] : 0;
	for (int64_t i = 0; tr && !same && i < r; i++)
		for (int64_t j = 0; tr && j < c; j++)
			tr = ir_tensor_get_f64(a, i * c + j) == ir_tensor_get_f64(b, j * r + i);
	if ((!same && !tr) || all_equal(a, 0, n, n, 1))
		return NULL;
	return same ? "" : " transposed";
}

#define LIST_MAX 12

void train_params_print(const struct train_step *ts, const char *model, FILE *f)
{
	if (ts->naside > 0) {
		fprintf(f, "pcc: %s: training %d tensor%s; set aside as constants:", model, ts->nparams,
			ts->nparams == 1 ? "" : "s");
		for (int i = 0; i < ts->naside && i < LIST_MAX; i++)
			fprintf(f, "%s %s (%s)", i ? "," : "", ts->aside[i]->name ? ts->aside[i]->name : "?",
				train_aside_name(ts->aside_why[i]));
		if (ts->naside > LIST_MAX)
			fprintf(f, " and %d more", ts->naside - LIST_MAX);
		fprintf(f, " (--trainable PATTERN trains one)\n");
	}
	/* an eval-mode export: TorchScript's folded names, BatchNormalization's
	 * running statistics with no update (inference mode) */
	int nfolded = 0, first = -1;
	for (int i = 0; i < ts->nparams; i++)
		if (ts->params[i]->name && !strncmp(ts->params[i]->name, "onnx::", 6) && nfolded++ == 0)
			first = i;
	if (nfolded)
		fprintf(f,
			"pcc: %s: warning: %d trained tensor%s named by the exporter (\"%s\"%s): an export with "
			"constant folding, whose weights no longer map to the module's; export with "
			"do_constant_folding=False and training=torch.onnx.TrainingMode.TRAINING\n",
			model, nfolded, nfolded == 1 ? "" : "s", ts->params[first]->name, nfolded > 1 ? ", ..." : "");
	int nfixed = 0;
	for (int i = 0; i < ir_graph_nparams(ts->g); i++) {
		const struct ir_value *v = ir_graph_param(ts->g, i);
		bool updated = false;
		for (int j = 0; v->buffer && !updated && j < ir_graph_nupdates(ts->g); j++)
			updated = ir_graph_update_param(ts->g, j) == v;
		nfixed += v->buffer && !updated;
	}
	if (nfixed)
		fprintf(f,
			"pcc: %s: warning: BatchNormalization in inference mode (%d running statistic%s never "
			"updated): training normalizes with the running statistics, not the batch's; export in "
			"training mode (training=torch.onnx.TrainingMode.TRAINING)\n",
			model, nfixed, nfixed == 1 ? "" : "s");
	for (int i = 0; i < ts->nparams; i++) {
		struct ir_tensor a, b;
		if (!values(ts->params[i], &a))
			continue;
		for (int j = 0; j < i; j++) {
			const char *how = values(ts->params[j], &b) ? copy_of(&b, &a) : NULL;
			if (!how)
				continue;
			fprintf(f,
				"pcc: %s: warning: \"%s\" equals \"%s\"%s: an untied copy of one weight, trained "
				"apart from it (export with do_constant_folding=False, or optimize=False with dynamo=True, to keep "
				"them tied)\n",
				model, ts->params[i]->name ? ts->params[i]->name : "?",
				ts->params[j]->name ? ts->params[j]->name : "?", how);
			break;
		}
	}
}
