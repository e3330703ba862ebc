/*
 * graph.c: the arena and the graph container.
 *
 * The arena is a list of blocks; allocation bumps a pointer and everything
 * is freed with the graph. Nodes and values are arena objects reached
 * through growable pointer arrays (the arrays themselves are heap memory
 * owned by the graph). Nodes stay in topological order because a node can
 * only be appended after its operands exist.
 */
#include <errno.h>
#include <stdalign.h>
#include <string.h>

#include "ir/ir.h"

struct block {
	struct block *next;
	size_t used, size;
	alignas(max_align_t) unsigned char mem[];
};

struct cleanup {
	struct cleanup *next;
	void (*fn)(void *);
	void *ctx;
};

struct ptrvec {
	void **v;
	int n, cap;
};

struct ir_graph {
	struct block *blocks;
	struct cleanup *cleanups;
	struct ptrvec nodes, values, inputs, params, outputs;
	const char **output_names;            /* parallel to outputs, cap outputs.cap */
	struct ptrvec upd_params, upd_values; /* state updates, pairwise */
	int mesh[2];                          /* 0 x 0: no mesh */
	struct ptrvec scheds;                 /* per stage: arena ints, [0] the count */
};

void ir_graph_set_mesh(struct ir_graph *g, int n0, int n1)
{
	IR_ASSERT(n0 >= 0 && n1 >= 0 && (n0 > 0) == (n1 > 0));
	g->mesh[0] = n0;
	g->mesh[1] = n1;
}

int ir_node_set_in_sharding(struct ir_graph *g, struct ir_node *n, const struct ir_sharding *in)
{
	struct ir_sharding *s = n->in_sharding;
	if (!s && n->nin && !(s = ir_graph_alloc(g, sizeof *s * (size_t)n->nin)))
		return ir_errorf(-ENOMEM, "out of memory annotating node %d", n->id);
	if (n->nin)
		memcpy(s, in, sizeof *s * (size_t)n->nin);
	n->in_sharding = n->nin ? s : NULL;
	return 0;
}

void ir_graph_mesh(const struct ir_graph *g, int *n0, int *n1)
{
	*n0 = g->mesh[0];
	*n1 = g->mesh[1];
}

#define BLOCK_MIN (64 * 1024)

static int vec_push(struct ptrvec *vec, void *p)
{
	if (vec->n == vec->cap) {
		int cap = vec->cap ? vec->cap * 2 : 16;
		void **v = ir_realloc(vec->v, (size_t)cap * sizeof *v);
		if (!v)
			return ir_errorf(-ENOMEM, "out of memory growing the graph");
		vec->v = v;
		vec->cap = cap;
	}
	vec->v[vec->n++] = p;
	return 0;
}

int ir_graph_add_schedule(struct ir_graph *g, int s, int n, const int *order)
{
	if (s != g->scheds.n)
		return ir_errorf(-EINVAL, "schedule of stage %d given after %d stage%s", s, g->scheds.n,
				 g->scheds.n == 1 ? "" : "s");
	if (n < 2 || n % 2)
		return ir_errorf(-EINVAL,
				 "schedule of stage %d: %d entries, not a forward and a backward per micro-batch", s,
				 n);
	int *x = ir_graph_alloc(g, sizeof *x * (size_t)(n + 1));
	if (!x)
		return ir_errorf(-ENOMEM, "out of memory");
	/* x[1 + m]: micro-batch m's forward seen (1), then its backward (2) */
	for (int i = 0; i < n; i++) {
		int m = order[i] >= 0 ? order[i] : order[i] < -n ? n : -order[i] - 1;
		if (m >= n / 2 || x[1 + m] != (order[i] >= 0 ? 0 : 1))
			return ir_errorf(-EINVAL,
					 "schedule of stage %d: entry %d (%c%d) is not the next part of a micro-batch "
					 "of %d",
					 s, i, order[i] >= 0 ? 'F' : 'B', m, n / 2);
		x[1 + m]++;
	}
	x[0] = n;
	memcpy(x + 1, order, sizeof *x * (size_t)n);
	return vec_push(&g->scheds, x);
}

int ir_graph_nschedules(const struct ir_graph *g)
{
	return g->scheds.n;
}

const int *ir_graph_schedule(const struct ir_graph *g, int s, int *n)
{
	IR_ASSERT(s >= 0 && s < g->scheds.n);
	const int *x = g->scheds.v[s];
	*n = x[0];
	return x + 1;
}

struct ir_graph *ir_graph_new(void)
{
	return ir_calloc(1, sizeof(struct ir_graph));
}

void ir_graph_free(struct ir_graph *g)
{
	if (!g)
		return;
	for (struct cleanup *c = g->cleanups; c; c = c->next)
		c->fn(c->ctx);
	for (struct block *b = g->blocks, *next; b; b = next) {
		next = b->next;
		ir_free(b);
	}
	ir_free(g->nodes.v);
	ir_free(g->values.v);
	ir_free(g->inputs.v);
	ir_free(g->params.v);
	ir_free(g->outputs.v);
	ir_free(g->output_names);
	ir_free(g->upd_params.v);
	ir_free(g->upd_values.v);
	ir_free(g->scheds.v);
	ir_free(g);
}

void *ir_graph_alloc(struct ir_graph *g, size_t n)
{
	n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	struct block *b = g->blocks;
	if (!b || b->size - b->used < n) {
		size_t size = n > BLOCK_MIN ? n : BLOCK_MIN;
		b = ir_malloc(sizeof *b + size);
		if (!b) {
			ir_errorf(-ENOMEM, "out of memory (%zu bytes for the graph)", n);
			return NULL;
		}
		b->size = size;
		b->used = 0;
		/* A big one-off block goes behind the current one so the
		 * current block's free space stays usable. */
		if (g->blocks && size > BLOCK_MIN) {
			b->next = g->blocks->next;
			g->blocks->next = b;
		} else {
			b->next = g->blocks;
			g->blocks = b;
		}
	}
	void *p = b->mem + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

const char *ir_graph_strdup(struct ir_graph *g, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = ir_graph_alloc(g, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

int ir_graph_on_free(struct ir_graph *g, void (*fn)(void *), void *ctx)
{
	struct cleanup *c = ir_graph_alloc(g, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->ctx = ctx;
	c->next = g->cleanups;
	g->cleanups = c;
	return 0;
}

static struct ir_value *value_new(struct ir_graph *g, const char *name, enum ir_dtype dtype,
				  const struct ir_shape *shape, enum ir_value_kind kind)
{
	IR_ASSERT((unsigned)dtype < IR_DTYPE_COUNT);
	if (ir_shape_check(shape) < 0)
		return NULL;
	struct ir_value *v = ir_graph_alloc(g, sizeof *v);
	if (!v)
		return NULL;
	v->id = g->values.n;
	v->name = ir_graph_strdup(g, name);
	if (name && !v->name)
		return NULL;
	v->dtype = dtype;
	v->shape = *shape;
	v->kind = kind;
	if (vec_push(&g->values, v) < 0)
		return NULL;
	return v;
}

struct ir_value *ir_graph_add_input(struct ir_graph *g, const char *name, enum ir_dtype dtype,
				    const struct ir_shape *shape)
{
	struct ir_value *v = value_new(g, name, dtype, shape, IR_VAL_INPUT);
	if (v && vec_push(&g->inputs, v) < 0)
		return NULL;
	return v;
}

struct ir_value *ir_graph_add_param(struct ir_graph *g, const char *name, enum ir_dtype dtype,
				    const struct ir_shape *shape, const struct ir_data *data)
{
	struct ir_value *v = value_new(g, name, dtype, shape, IR_VAL_PARAM);
	if (!v)
		return NULL;
	v->data = *data;
	v->data.path = ir_graph_strdup(g, data->path);
	v->data.base_dir = ir_graph_strdup(g, data->base_dir);
	if ((data->path && !v->data.path) || (data->base_dir && !v->data.base_dir))
		return NULL;
	if (vec_push(&g->params, v) < 0)
		return NULL;
	return v;
}

struct ir_node *ir_graph_add_node(struct ir_graph *g, enum ir_op op, const char *name, int nin,
				  struct ir_value *const *in, const struct ir_attrs *a)
{
	enum ir_dtype dt[2];
	struct ir_shape sh[2];
	int nout = ir_op_noutputs(op);
	IR_ASSERT(nout <= 2);
	if (ir_infer(op, nin, in, a, dt, sh) < 0)
		return NULL;
	struct ir_node *n = ir_graph_alloc(g, sizeof *n);
	if (!n)
		return NULL;
	n->op = op;
	n->name = ir_graph_strdup(g, name);
	n->tag = IR_TAG_NONE;
	n->recompute = 0;
	n->nin = nin;
	n->nout = nout;
	n->a = *a;
	n->in = ir_graph_alloc(g, (size_t)(nin ? nin : 1) * sizeof *n->in);
	n->out = ir_graph_alloc(g, (size_t)nout * sizeof *n->out);
	if (!n->in || !n->out || (name && !n->name))
		return NULL;
	if (op == IR_OP_CONSTANT && a->data) {
		struct ir_tensor t = { a->dtype, a->shape, NULL };
		void *bytes = ir_graph_alloc(g, ir_tensor_bytes(&t));
		if (!bytes)
			return NULL;
		memcpy(bytes, a->data, ir_tensor_bytes(&t));
		n->a.data = bytes;
	}
	for (int i = 0; i < nin; i++)
		n->in[i] = in[i];
	for (int i = 0; i < nout; i++) {
		struct ir_value *v = value_new(g, NULL, dt[i], &sh[i], IR_VAL_NODE);
		if (!v)
			return NULL;
		v->def = n;
		v->def_index = i;
		n->out[i] = v;
	}
	n->id = g->nodes.n;
	if (vec_push(&g->nodes, n) < 0)
		return NULL;
	return n;
}

int ir_graph_add_output(struct ir_graph *g, struct ir_value *v, const char *name)
{
	int had_cap = g->outputs.cap;
	if (vec_push(&g->outputs, v) < 0)
		return -ENOMEM;
	if (g->outputs.cap != had_cap) {
		const char **names = ir_realloc(g->output_names, (size_t)g->outputs.cap * sizeof *names);
		if (!names) {
			g->outputs.n--;
			return ir_errorf(-ENOMEM, "out of memory adding an output");
		}
		g->output_names = names;
	}
	g->output_names[g->outputs.n - 1] = ir_graph_strdup(g, name);
	return 0;
}

void ir_graph_set_output(struct ir_graph *g, int i, struct ir_value *v)
{
	IR_ASSERT(i >= 0 && i < g->outputs.n);
	struct ir_value *old = g->outputs.v[i];
	IR_ASSERT(old->dtype == v->dtype && ir_shape_eq(&old->shape, &v->shape));
	g->outputs.v[i] = v;
}

int ir_graph_ninputs(const struct ir_graph *g)
{
	return g->inputs.n;
}
int ir_graph_nparams(const struct ir_graph *g)
{
	return g->params.n;
}
void ir_graph_clear_outputs(struct ir_graph *g)
{
	g->outputs.n = 0;
}

int ir_graph_add_update(struct ir_graph *g, struct ir_value *param, struct ir_value *v)
{
	IR_ASSERT(param->kind == IR_VAL_PARAM);
	if (param->dtype != v->dtype || !ir_shape_eq(&param->shape, &v->shape))
		return ir_errorf(-EINVAL, "update of \"%s\": the new value's type differs from the parameter's",
				 param->name ? param->name : "?");
	for (int i = 0; i < g->upd_params.n; i++)
		if (g->upd_params.v[i] == param)
			return ir_errorf(-EINVAL, "parameter \"%s\" is updated twice", param->name ? param->name : "?");
	if (vec_push(&g->upd_params, param) < 0)
		return ir_errorf(-ENOMEM, "out of memory adding an update");
	if (vec_push(&g->upd_values, v) < 0) {
		g->upd_params.n--;
		return ir_errorf(-ENOMEM, "out of memory adding an update");
	}
	return 0;
}

int ir_graph_nupdates(const struct ir_graph *g)
{
	return g->upd_params.n;
}

struct ir_value *ir_graph_update_param(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->upd_params.n);
	return g->upd_params.v[i];
}

struct ir_value *ir_graph_update_value(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->upd_values.n);
	return g->upd_values.v[i];
}

int ir_graph_noutputs(const struct ir_graph *g)
{
	return g->outputs.n;
}
int ir_graph_nnodes(const struct ir_graph *g)
{
	return g->nodes.n;
}
int ir_graph_nvalues(const struct ir_graph *g)
{
	return g->values.n;
}

struct ir_value *ir_graph_input(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->inputs.n);
	return g->inputs.v[i];
}

struct ir_value *ir_graph_param(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->params.n);
	return g->params.v[i];
}

struct ir_value *ir_graph_output(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->outputs.n);
	return g->outputs.v[i];
}

const char *ir_graph_output_name(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->outputs.n);
	return g->output_names[i];
}

struct ir_node *ir_graph_node(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->nodes.n);
	return g->nodes.v[i];
}

struct ir_value *ir_graph_value(const struct ir_graph *g, int i)
{
	IR_ASSERT(i >= 0 && i < g->values.n);
	return g->values.v[i];
}

void ir_graph_replace_uses(struct ir_graph *g, struct ir_value *old, struct ir_value *new_)
{
	IR_ASSERT(old->dtype == new_->dtype && ir_shape_eq(&old->shape, &new_->shape));
	for (int i = 0; i < g->nodes.n; i++) {
		struct ir_node *n = g->nodes.v[i];
		for (int j = 0; j < n->nin; j++)
			if (n->in[j] == old)
				n->in[j] = new_;
	}
	for (int i = 0; i < g->outputs.n; i++)
		if (g->outputs.v[i] == old)
			g->outputs.v[i] = new_;
	for (int i = 0; i < g->upd_values.n; i++)
		if (g->upd_values.v[i] == old)
			g->upd_values.v[i] = new_;
}

/* Node x into order[*k], then the nodes moved to after it, each followed
 * by those moved to after it in turn. */
static void place(const struct ir_graph *g, const int *first, const int *next, int x, struct ir_node **order, int *k)
{
	order[(*k)++] = g->nodes.v[x];
	for (int y = first[x]; y >= 0; y = next[y])
		place(g, first, next, y, order, k);
}

int ir_graph_hoist(struct ir_graph *g, const bool *move)
{
	int nn = g->nodes.n, k = 0;
	/* at[i]: the node that moved node i follows, the latest making one of
	 * its operands (-1: i stays); first/next: the nodes following each, in
	 * order */
	int *first = ir_malloc(sizeof *first * ((size_t)nn * 3 + 1)), *next = first + nn, *at = next + nn;
	struct ir_node **order = ir_malloc(sizeof *order * ((size_t)nn + 1));
	if (!first || !order) {
		ir_free(first);
		ir_free(order);
		return ir_errorf(-ENOMEM, "out of memory ordering the graph's nodes");
	}
	for (int i = 0; i < nn; i++)
		first[i] = -1;
	for (int i = nn - 1; i >= 0; i--) { /* backwards: each list comes out in order */
		const struct ir_node *n = g->nodes.v[i];
		at[i] = -1;
		for (int j = 0; move[i] && j < n->nin; j++)
			if (n->in[j]->kind == IR_VAL_NODE && n->in[j]->def->id > at[i])
				at[i] = n->in[j]->def->id;
		if (at[i] >= 0) {
			next[i] = first[at[i]];
			first[at[i]] = i;
		}
	}
	for (int i = 0; i < nn; i++)
		if (at[i] < 0)
			place(g, first, next, i, order, &k);
	IR_ASSERT(k == nn);
	for (int i = 0; i < nn; i++) {
		g->nodes.v[i] = order[i];
		order[i]->id = i;
	}
	ir_free(first);
	ir_free(order);
	return 0;
}

int ir_graph_dce(struct ir_graph *g)
{
	int nv = g->values.n;
	unsigned char *live = ir_calloc((size_t)nv, 1);
	if (!live)
		return ir_errorf(-ENOMEM, "out of memory removing dead nodes");
	for (int i = 0; i < g->outputs.n; i++)
		live[((struct ir_value *)g->outputs.v[i])->id] = 1;
	for (int i = 0; i < g->upd_values.n; i++) {
		live[((struct ir_value *)g->upd_values.v[i])->id] = 1;
		live[((struct ir_value *)g->upd_params.v[i])->id] = 1;
	}
	for (int i = g->nodes.n - 1; i >= 0; i--) {
		struct ir_node *n = g->nodes.v[i];
		bool used = false;
		for (int j = 0; j < n->nout; j++)
			used |= live[n->out[j]->id];
		if (used)
			for (int j = 0; j < n->nin; j++)
				live[n->in[j]->id] = 1;
	}
	int removed = 0, keep = 0;
	for (int i = 0; i < g->nodes.n; i++) {
		struct ir_node *n = g->nodes.v[i];
		bool used = false;
		for (int j = 0; j < n->nout; j++)
			used |= live[n->out[j]->id];
		if (used) {
			n->id = keep;
			g->nodes.v[keep++] = n;
		} else {
			removed++;
		}
	}
	g->nodes.n = keep;
	keep = 0;
	for (int i = 0; i < g->params.n; i++) {
		struct ir_value *v = g->params.v[i];
		if (live[v->id])
			g->params.v[keep++] = v;
	}
	g->params.n = keep;
	/* Values: inputs always stay; others stay when live. */
	keep = 0;
	for (int i = 0; i < nv; i++) {
		struct ir_value *v = g->values.v[i];
		if (live[v->id] || v->kind == IR_VAL_INPUT ||
		    (v->kind == IR_VAL_NODE && v->def->id >= 0 && v->def->id < g->nodes.n &&
		     g->nodes.v[v->def->id] == v->def)) {
			g->values.v[keep++] = v;
		}
	}
	g->values.n = keep;
	for (int i = 0; i < keep; i++)
		((struct ir_value *)g->values.v[i])->id = i;
	ir_free(live);
	return removed;
}
