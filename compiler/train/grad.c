/*
 * grad.c: reverse-mode automatic differentiation over the core IR.
 *
 * grad_build appends the backward pass to the graph that holds the forward
 * one, so the forward results the rules read (a tanh's output, a dot's
 * operands) are plain values of the same graph: later passes see one graph
 * and decide themselves what to keep or recompute.
 *
 * Only nodes on a differentiable path get a rule: a value is "reached" when
 * a floating point result depends on some wrt value, and "needed" when the
 * loss depends on it. Integer and boolean results (comparisons, argmax,
 * indices) stop the reach, so masks and index computations never ask for a
 * gradient. Nodes are visited in reverse order; a value's gradient is the
 * sum of the contributions of its readers, complete when its producer is
 * visited because the node list is topological.
 *
 * Recomputation (activation checkpointing): forward nodes marked with a
 * segment (ir_node.recompute, a layer) are computed again when the reverse
 * walk first reaches their segment, from the segment's inputs, and the
 * segment's rules read those copies instead of the forward results. The
 * copies are new nodes placed just before the segment's backward nodes, so
 * the step keeps only what the segment reads from outside for its backward
 * pass; copies no rule reads are dropped with the other dead nodes
 * (train_build). Values of the parameters alone (a weight's 16-bit copy)
 * are not computed again.
 */
#include <errno.h>
#include <string.h>

#include "compiler/cost/cost.h"
#include "compiler/train/grad_internal.h"

static const char *vname(const struct ir_value *v, char *buf, size_t n)
{
	if (v->name)
		return v->name;
	snprintf(buf, n, "%%%d", v->id);
	return buf;
}

static int check_args(const struct ir_value *loss, int n, struct ir_value *const *wrt)
{
	char buf[32], sb[IR_SHAPE_STR_MAX];
	if (!ir_dtype_is_float(loss->dtype) || loss->shape.rank != 0)
		return ir_errorf(-EINVAL, "loss \"%s\" must be a floating point scalar, got %s%s",
				 vname(loss, buf, sizeof buf), ir_dtype_name(loss->dtype),
				 ir_shape_str(&loss->shape, sb, sizeof sb));
	for (int i = 0; i < n; i++)
		if (!ir_dtype_is_float(wrt[i]->dtype))
			return ir_errorf(-EINVAL,
					 "cannot differentiate with respect to \"%s\": it is %s, "
					 "not floating point",
					 vname(wrt[i], buf, sizeof buf), ir_dtype_name(wrt[i]->dtype));
	return 0;
}

/* reach[v]: index of a wrt value that v depends on through floating point
 * results, or -1; need[v]: the loss depends on v. */
static void mark(const struct ir_graph *g, const struct ir_value *loss, int n, struct ir_value *const *wrt, int *reach,
		 bool *need)
{
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g);
	for (int v = 0; v < nv; v++) {
		reach[v] = -1;
		need[v] = false;
	}
	for (int i = n - 1; i >= 0; i--)
		reach[wrt[i]->id] = i;
	for (int i = 0; i < nn; i++) {
		const struct ir_node *nd = ir_graph_node(g, i);
		int r = -1;
		for (int k = 0; k < nd->nin && r < 0; k++)
			r = reach[nd->in[k]->id];
		for (int j = 0; j < nd->nout; j++)
			if (ir_dtype_is_float(nd->out[j]->dtype) && reach[nd->out[j]->id] < 0)
				reach[nd->out[j]->id] = r;
	}
	need[loss->id] = true;
	for (int i = nn - 1; i >= 0; i--) {
		const struct ir_node *nd = ir_graph_node(g, i);
		bool any = false;
		for (int j = 0; j < nd->nout; j++)
			any = any || need[nd->out[j]->id];
		for (int k = 0; any && k < nd->nin; k++)
			need[nd->in[k]->id] = true;
	}
}

/* The recomputation of forward segments: per value id of the forward
 * graph its copy in the segment being differentiated, or NULL. */
struct remat {
	int nfwd;             /* forward nodes: those the walk started with */
	bool *dyn;            /* per value id: depends on a graph input */
	struct ir_value **cp; /* per forward value id */
	int seg;              /* the segment whose copies cp holds; 0: none */
};

/* A copy of forward node n reading in[], in its stage; NULL with b->err
 * set when it cannot be made. */
static struct ir_node *copy_node(struct gb *b, const struct ir_node *n, struct ir_value *const *in)
{
	struct ir_node *c = b->err ? NULL : ir_graph_add_node(b->g, n->op, n->name, n->nin, in, &n->a);
	if (!c && !b->err)
		b->err = ir_error_code() ? ir_error_code() : -ENOMEM;
	if (c)
		c->tag = n->tag;
	return c;
}

/* What the backward pass reads for forward value v: the copy of the
 * segment being recomputed, a new broadcast of the small operand when v
 * is a broadcast (made again next to its reader rather than kept from the
 * forward pass: the full tensor would be held per micro-batch in flight),
 * or v itself. */
static struct ir_value *fresh(struct gb *b, const struct remat *m, struct ir_value *v)
{
	if (m->cp && m->cp[v->id])
		return m->cp[v->id];
	if (v->kind != IR_VAL_NODE || v->def->op != IR_OP_BROADCAST)
		return v;
	const struct ir_node *n = v->def;
	struct ir_value *x = m->cp && m->cp[n->in[0]->id] ? m->cp[n->in[0]->id] : n->in[0];
	struct ir_node *c = copy_node(b, n, &x);
	return c ? c->out[0] : NULL;
}

/* Copies segment seg's forward nodes (those reading a graph input at some
 * remove) after the graph's last node, each reading the copies made
 * before it. */
static int remat_segment(struct gb *b, struct remat *m, int seg)
{
	const struct ir_graph *g = b->g;
	enum { MAXIN = 64 };
	for (int i = 0; i < m->nfwd; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++)
			m->cp[n->out[j]->id] = NULL;
	}
	m->seg = seg;
	for (int i = 0; i < m->nfwd; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		if (n->recompute != seg || !m->dyn[n->out[0]->id])
			continue;
		struct ir_value *small[MAXIN], **in = n->nin > MAXIN ? ir_calloc((size_t)n->nin, sizeof *in) : small;
		if (!in)
			return -ENOMEM;
		for (int k = 0; k < n->nin; k++)
			in[k] = fresh(b, m, n->in[k]);
		struct ir_node *c = copy_node(b, n, in);
		if (in != small)
			ir_free(in);
		if (!c)
			return b->err;
		for (int j = 0; j < n->nout; j++)
			m->cp[n->out[j]->id] = c->out[j];
	}
	return 0;
}

/* Runs the rule of node nd and adds its contributions into adj[]. */
static int backprop_node(struct gb *b, const struct ir_node *nd, const int *reach, const bool *need,
			 struct ir_value **adj, struct ir_value *const *wrt, struct remat *m)
{
	enum { MAXIN = 64 };
	struct ir_value *gout[4] = { 0 }, *gin_small[MAXIN], **gin = gin_small;
	bool want_small[MAXIN], *want = want_small;
	bool any_out = false, any_in = false;
	struct ir_value **heap = NULL; /* the substitute's operands, when many */
	int first = -1, rc = 0;
	char buf[32];
	IR_ASSERT(nd->nout <= 4);
	for (int j = 0; j < nd->nout; j++) {
		gout[j] = adj[nd->out[j]->id];
		any_out = any_out || gout[j];
	}
	if (!any_out)
		return 0;
	if (nd->nin > MAXIN) {
		gin = ir_calloc((size_t)nd->nin, sizeof *gin);
		want = ir_calloc((size_t)nd->nin, sizeof *want);
		if (!gin || !want) {
			rc = -ENOMEM;
			goto done;
		}
	}
	for (int k = 0; k < nd->nin; k++) {
		const struct ir_value *x = nd->in[k];
		want[k] = reach[x->id] >= 0 && need[x->id] && ir_dtype_is_float(x->dtype);
		gin[k] = NULL;
		if (want[k] && first < 0)
			first = reach[x->id];
		any_in = any_in || want[k];
	}
	if (!any_in)
		goto done;
	b->name = nd->name;
	b->tagged = nd->tag != IR_TAG_NONE;
	b->tag = nd->tag;
	/* the rule reads a recomputed node's copies and broadcasts made again */
	struct ir_node sub = *nd;
	struct ir_value *sub_small[2 * MAXIN];
	bool bcast = false;
	for (int k = 0; k < nd->nin; k++)
		bcast |= nd->in[k]->kind == IR_VAL_NODE && nd->in[k]->def->op == IR_OP_BROADCAST;
	if (nd->recompute && m->seg != nd->recompute && (rc = remat_segment(b, m, nd->recompute)) < 0)
		goto done;
	if (nd->recompute || bcast) {
		sub.in = nd->nin + nd->nout > 2 * MAXIN
				 ? (heap = ir_calloc((size_t)(nd->nin + nd->nout), sizeof *sub.in))
				 : sub_small;
		if (!sub.in) {
			rc = -ENOMEM;
			goto done;
		}
		sub.out = sub.in + nd->nin;
		for (int k = 0; k < nd->nin; k++)
			sub.in[k] = fresh(b, m, nd->in[k]);
		for (int j = 0; j < nd->nout; j++)
			sub.out[j] = m->cp && m->cp[nd->out[j]->id] ? m->cp[nd->out[j]->id] : nd->out[j];
		if ((rc = b->err) < 0)
			goto done;
	}
	rc = grad_rule(b, &sub, gout, want, gin);
	if (rc == -ENOTSUP) {
		ir_error_prefix("node \"%s\" on the path from \"%s\" to the loss",
				nd->name ? nd->name : ir_op_name(nd->op), vname(wrt[first], buf, sizeof buf));
		goto done;
	}
	if (rc == 0)
		rc = b->err;
	for (int k = 0; rc == 0 && k < nd->nin; k++)
		if (want[k] && gin[k]) {
			struct ir_value *x = nd->in[k];
			IR_ASSERT(gin[k]->dtype == x->dtype && ir_shape_eq(&gin[k]->shape, &x->shape));
			adj[x->id] = gb_accumulate(b, adj[x->id], gin[k]);
			rc = b->err;
		}
done:
	ir_free(heap);
	if (gin != gin_small) {
		ir_free(gin);
		ir_free(want);
	}
	return rc;
}

int grad_build(struct ir_graph *g, struct ir_value *loss, int n, struct ir_value *const *wrt, struct ir_value **grads)
{
	int rc = check_args(loss, n, wrt);
	if (rc < 0)
		return rc;
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g);
	int *reach = ir_calloc((size_t)nv, sizeof *reach);
	bool *need = ir_calloc((size_t)nv, sizeof *need);
	struct ir_value **adj = ir_calloc((size_t)nv, sizeof *adj);
	struct gb b = { .g = g, .name = "grad" };
	struct remat m = { .nfwd = nn };
	bool any = false;
	for (int i = 0; i < nn; i++)
		any |= ir_graph_node(g, i)->recompute != 0;
	if (any && (!(m.dyn = cost_dynamic_values(g)) || !(m.cp = ir_calloc((size_t)nv, sizeof *m.cp))))
		rc = -ENOMEM;
	if (!reach || !need || !adj || rc < 0) {
		rc = ir_errorf(-ENOMEM, "out of memory building gradients");
		goto done;
	}
	mark(g, loss, n, wrt, reach, need);
	if (reach[loss->id] >= 0)
		adj[loss->id] = gb_like(&b, loss, 1.0);
	rc = b.err;
	for (int i = nn - 1; i >= 0 && rc == 0; i--)
		rc = backprop_node(&b, ir_graph_node(g, i), reach, need, adj, wrt, &m);
	for (int i = 0; rc == 0 && i < n; i++)
		grads[i] = adj[wrt[i]->id];
done:
	ir_free(reach);
	ir_free(need);
	ir_free(adj);
	ir_free(m.dyn);
	ir_free(m.cp);
	return rc;
}
