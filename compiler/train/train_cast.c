/*
 * train_cast.c: a copy of a forward graph computing in another floating
 * point dtype, for mixed precision (bf16, f16) and for exact checks (f64).
 *
 * Mixed precision keeps parameters and inputs as they are (f32 master
 * weights: the optimizer updates them in f32) and converts them where
 * they are read; ops whose accuracy suffers most in 16 bits (layer norm,
 * softmax, reductions, exp, log: PyTorch autocast's f32 list) take f32
 * operands and convert their result back. f64 converts everything,
 * parameters included, so a whole step runs in f64.
 */
#include <errno.h>
#include <string.h>

#include "compiler/train/grad_internal.h"
#include "compiler/train/train_internal.h"
#include "kernels/kernels.h"

struct cast {
	struct ir_graph *src, *dst;
	enum ir_dtype to;
	bool full;             /* f64: parameters converted too */
	struct ir_value **map; /* src value id -> dst value */
	struct gb b;
};

static enum ir_dtype cast_dtype(const struct cast *c, enum ir_dtype t)
{
	return ir_dtype_is_float(t) ? c->to : t;
}

/* Ops kept in f32 under mixed precision. */
static bool keep_f32(enum ir_op op)
{
	return ir_op_flags(op) & IR_OPF_KEEP_F32;
}

/* Bytes of a CONSTANT converted to dtype to, in dst's arena. */
static const void *convert_bytes(struct cast *c, const struct ir_tensor *t, enum ir_dtype to)
{
	struct ir_tensor o = { .dtype = to, .shape = t->shape };
	o.data = ir_graph_alloc(c->dst, ir_tensor_bytes(&o) ? ir_tensor_bytes(&o) : 1);
	if (!o.data)
		return NULL;
	int64_t n = ir_shape_numel(&t->shape);
	for (int64_t i = 0; i < n; i++) {
		if (ir_dtype_is_float(to))
			ir_tensor_set_f64(&o, i, ir_tensor_get_f64(t, i));
		else
			ir_tensor_set_i64(&o, i, ir_tensor_get_i64(t, i));
	}
	return o.data;
}

static int copy_param(struct cast *c, const struct ir_value *p)
{
	struct ir_data d = p->data;
	enum ir_dtype t = p->dtype;
	struct ir_tensor val = { 0 };
	if (c->full && ir_dtype_is_float(t)) {
		int rc = interp_load_param(p, &val);
		if (rc < 0)
			return rc;
		t = c->to;
		d = (struct ir_data){ .bytes = convert_bytes(c, &val, t) };
		struct ir_tensor shape_only = { .dtype = t, .shape = p->shape };
		d.nbytes = (int64_t)ir_tensor_bytes(&shape_only);
		ir_tensor_free(&val);
		if (!d.bytes)
			return -ENOMEM;
	} else if (d.bytes) {
		void *copy = ir_graph_alloc(c->dst, (size_t)d.nbytes ? (size_t)d.nbytes : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, d.bytes, (size_t)d.nbytes);
		d.bytes = copy;
	} else {
		d.path = ir_graph_strdup(c->dst, d.path);
		d.base_dir = d.base_dir ? ir_graph_strdup(c->dst, d.base_dir) : NULL;
	}
	struct ir_value *v = ir_graph_add_param(c->dst, p->name, t, &p->shape, &d);
	if (!v)
		return -ENOMEM;
	v->buffer = p->buffer;
	v->declared = p->declared;
	c->map[p->id] = ir_dtype_is_float(t) ? gb_convert(&c->b, v, c->to) : v;
	return c->b.err;
}

static int copy_node(struct cast *c, const struct ir_node *n)
{
	struct ir_value *in_small[8], **in = in_small;
	bool f32 = !c->full && keep_f32(n->op);
	if (n->nin > 8 && !(in = ir_calloc((size_t)n->nin, sizeof *in)))
		return -ENOMEM;
	/* the copy, and the converts around it, keep its tag (pipeline stage) */
	c->b.tagged = n->tag != IR_TAG_NONE;
	c->b.tag = n->tag;
	c->b.recompute = n->recompute;
	for (int k = 0; k < n->nin; k++) {
		in[k] = c->map[n->in[k]->id];
		if (f32 && in[k] && ir_dtype_is_float(in[k]->dtype))
			in[k] = gb_convert(&c->b, in[k], IR_F32);
	}
	struct ir_attrs a = n->a;
	int rc = 0;
	if (n->op == IR_OP_CONSTANT) {
		struct ir_tensor t = { .dtype = n->a.dtype, .shape = n->a.shape, .data = (void *)n->a.data };
		a.dtype = cast_dtype(c, n->a.dtype);
		a.data = convert_bytes(c, &t, a.dtype);
		if (!a.data)
			rc = -ENOMEM;
	} else if (n->op == IR_OP_CONVERT || n->op == IR_OP_IOTA) {
		a.dtype = cast_dtype(c, n->a.dtype);
	}
	struct ir_node *m = rc == 0 && !c->b.err ? ir_graph_add_node(c->dst, n->op,
								     n->name ? ir_graph_strdup(c->dst, n->name) : NULL,
								     n->nin, in, &a)
						 : NULL;
	if (in != in_small)
		ir_free(in);
	if (rc < 0 || c->b.err)
		return rc < 0 ? rc : c->b.err;
	if (!m)
		return ir_error_code() ? ir_error_code() : -ENOMEM;
	m->tag = n->tag;
	m->recompute = n->recompute;
	for (int j = 0; j < n->nout; j++) {
		struct ir_value *v = m->out[j];
		v->name = n->out[j]->name ? ir_graph_strdup(c->dst, n->out[j]->name) : NULL;
		if (f32 && ir_dtype_is_float(v->dtype) && ir_dtype_is_float(n->out[j]->dtype))
			v = gb_convert(&c->b, v, c->to);
		c->map[n->out[j]->id] = v;
	}
	return c->b.err;
}

int train_cast(struct ir_graph **g, enum ir_dtype to)
{
	struct cast c = { .src = *g, .to = to, .full = to == IR_F64 };
	int rc = 0, nv = ir_graph_nvalues(c.src);
	c.dst = ir_graph_new();
	c.map = ir_calloc((size_t)nv + 1, sizeof *c.map);
	if (!c.dst || !c.map) {
		rc = -ENOMEM;
		goto done;
	}
	c.b = (struct gb){ .g = c.dst, .name = "cast" };
	for (int i = 0; rc == 0 && i < ir_graph_ninputs(c.src); i++) {
		const struct ir_value *x = ir_graph_input(c.src, i);
		struct ir_value *v = ir_graph_add_input(c.dst, x->name, x->dtype, &x->shape);
		if (!v) {
			rc = -ENOMEM;
			break;
		}
		v->classes = x->classes;
		v->has_ignore = x->has_ignore;
		v->ignore = x->ignore;
		c.map[x->id] = ir_dtype_is_float(x->dtype) ? gb_convert(&c.b, v, to) : v;
	}
	for (int i = 0; rc == 0 && i < ir_graph_nparams(c.src); i++)
		rc = copy_param(&c, ir_graph_param(c.src, i));
	for (int i = 0; rc == 0 && i < ir_graph_nnodes(c.src); i++)
		rc = copy_node(&c, ir_graph_node(c.src, i));
	c.b.tagged = false;
	for (int i = 0; rc == 0 && i < ir_graph_noutputs(c.src); i++)
		rc = ir_graph_add_output(c.dst, c.map[ir_graph_output(c.src, i)->id], ir_graph_output_name(c.src, i));
	/* Updated state keeps its dtype: the new value converts back. Params
	 * are copied in order, so the source's k-th param is the copy's k-th. */
	for (int i = 0; rc == 0 && i < ir_graph_nupdates(c.src); i++) {
		struct ir_value *p = ir_graph_update_param(c.src, i), *q = NULL;
		for (int k = 0; k < ir_graph_nparams(c.src) && !q; k++)
			if (ir_graph_param(c.src, k) == p)
				q = ir_graph_param(c.dst, k);
		struct ir_value *v = c.map[ir_graph_update_value(c.src, i)->id];
		if (v && q && v->dtype != q->dtype)
			v = gb_convert(&c.b, v, q->dtype);
		rc = c.b.err ? c.b.err : ir_graph_add_update(c.dst, q, v);
	}
	for (int s = 0; rc == 0 && s < ir_graph_nschedules(c.src); s++) { /* as the nodes keep their tags */
		int n;
		const int *order = ir_graph_schedule(c.src, s, &n);
		rc = ir_graph_add_schedule(c.dst, s, n, order);
	}
	if (rc == 0)
		rc = c.b.err;
done:
	ir_free(c.map);
	if (rc < 0) {
		ir_graph_free(c.dst);
		if (rc == -ENOMEM && !ir_error_code())
			ir_errorf(rc, "out of memory converting the model to %s", ir_dtype_name(to));
		return rc;
	}
	ir_graph_free(c.src);
	*g = c.dst;
	ir_graph_set_mesh(c.dst, 0, 0);
	return 0;
}
