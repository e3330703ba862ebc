/*
 * interp_run.c: the reference interpreter's graph walk. Nodes run in order,
 * each by the reference kernels (kernels/kernels.h: interp_node);
 * a value is freed right after its last reader unless the caller keeps it,
 * so peak memory is the live set, not the whole graph.
 *
 * interp_run_range runs any contiguous part of a graph over a value table
 * the caller owns: the trainer runs the forward and backward nodes once per
 * micro-batch, adds up the gradients, and runs the update nodes once.
 */
#include <errno.h>
#include <string.h>

#include "compiler/interp/interp.h"
#include "kernels/kernels.h"

/* last[v]: the last node (whole graph) reading value v, or -1. */
static int *last_readers(const struct ir_graph *g)
{
	int nv = ir_graph_nvalues(g);
	int *last = ir_malloc((size_t)(nv ? nv : 1) * sizeof *last);
	if (!last)
		return NULL;
	for (int v = 0; v < nv; v++)
		last[v] = -1;
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; k < n->nin; k++)
			last[n->in[k]->id] = i;
	}
	return last;
}

static void drop(struct ir_tensor *vals, bool *present, int v)
{
	ir_tensor_free(&vals[v]);
	present[v] = false;
}

int interp_run_range(const struct ir_graph *g, int first, int last, struct ir_tensor *vals, bool *present,
		     const bool *keep)
{
	enum { MAX_RESULTS = 4, MAX_STACK_IN = 16 };
	int *lastr = last_readers(g);
	struct ir_tensor in_small[MAX_STACK_IN], *in = in_small, res[MAX_RESULTS];
	int rc = 0;
	if (!lastr)
		return interp_nomem("interpreter state");
	for (int i = first; i < last && rc == 0; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		IR_ASSERT(n->nout <= MAX_RESULTS);
		if (in != in_small)
			ir_free(in);
		in = n->nin > MAX_STACK_IN ? ir_calloc((size_t)n->nin, sizeof *in) : in_small;
		if (!in) {
			rc = interp_nomem("interpreter operands");
			break;
		}
		for (int k = 0; k < n->nin && rc == 0; k++) {
			const struct ir_value *v = n->in[k];
			if (!present[v->id]) {
				IR_ASSERT(v->kind == IR_VAL_PARAM);
				rc = interp_load_param(v, &vals[v->id]);
				present[v->id] = rc == 0;
			}
			in[k] = vals[v->id];
		}
		if (rc == 0)
			rc = interp_node(n, in, res);
		if (rc < 0)
			break;
		for (int j = 0; j < n->nout; j++) {
			int v = n->out[j]->id;
			vals[v] = res[j];
			present[v] = true;
			if (lastr[v] < 0 && !keep[v])
				drop(vals, present, v);
		}
		for (int k = 0; k < n->nin; k++) {
			int v = n->in[k]->id;
			if (lastr[v] == i && !keep[v] && present[v])
				drop(vals, present, v);
		}
	}
	if (in != in_small)
		ir_free(in);
	ir_free(lastr);
	return rc;
}

static int check_inputs(const struct ir_graph *g, const struct ir_tensor *inputs)
{
	char nbuf[32], want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];
	for (int i = 0; i < ir_graph_ninputs(g); i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		const struct ir_tensor *t = &inputs[i];
		if (t->dtype != v->dtype || !ir_shape_eq(&t->shape, &v->shape))
			return ir_errorf(-EINVAL, "input %d \"%s\": expected %s%s, got %s%s", i,
					 interp_value_name(v, nbuf, sizeof nbuf), ir_dtype_name(v->dtype),
					 ir_shape_str(&v->shape, want, sizeof want),
					 (unsigned)t->dtype < IR_DTYPE_COUNT ? ir_dtype_name(t->dtype) : "?",
					 ir_shape_str(&t->shape, got, sizeof got));
		if (!t->data && ir_tensor_bytes(t) > 0)
			return ir_errorf(-EINVAL, "input %d \"%s\" has no data", i,
					 interp_value_name(v, nbuf, sizeof nbuf));
		if (ir_labels_check(v, t) < 0) {
			ir_error_prefix("input %d \"%s\"", i, interp_value_name(v, nbuf, sizeof nbuf));
			return -EINVAL;
		}
	}
	return 0;
}

/* A copy of t into out (fresh). */
static int copy_out(const struct ir_tensor *t, struct ir_tensor *out)
{
	int rc = ir_tensor_alloc(out, t->dtype, &t->shape);
	if (rc == 0)
		memcpy(out->data, t->data, ir_tensor_bytes(t));
	return rc;
}

int interp_run_with(const struct ir_graph *g, const struct ir_tensor *inputs, const struct ir_tensor *const *params,
		    struct ir_tensor *outputs)
{
	int nv = ir_graph_nvalues(g), no = ir_graph_noutputs(g), rc = check_inputs(g, inputs);
	if (rc < 0)
		return rc;
	for (int o = 0; o < no; o++)
		outputs[o].data = NULL;
	struct ir_tensor *vals = ir_calloc((size_t)nv + 1, sizeof *vals);
	bool *present = ir_calloc((size_t)nv + 1, sizeof *present);
	bool *keep = ir_calloc((size_t)nv + 1, sizeof *keep);
	bool *borrowed = ir_calloc((size_t)nv + 1, sizeof *borrowed);
	if (!vals || !present || !keep || !borrowed) {
		rc = interp_nomem("interpreter state");
		goto done;
	}
	/* The caller's tensors are read in place and never freed here. */
	for (int i = 0; i < ir_graph_ninputs(g); i++) {
		int v = ir_graph_input(g, i)->id;
		vals[v] = inputs[i];
		present[v] = keep[v] = borrowed[v] = true;
	}
	for (int i = 0; params && i < ir_graph_nparams(g); i++) {
		int v = ir_graph_param(g, i)->id;
		if (!params[i])
			continue;
		vals[v] = *params[i];
		present[v] = keep[v] = borrowed[v] = true;
	}
	for (int o = 0; o < no; o++)
		keep[ir_graph_output(g, o)->id] = true;
	rc = interp_run_range(g, 0, ir_graph_nnodes(g), vals, present, keep);
	/* Move results out; inputs, borrowed params and repeated outputs are
	 * copied. */
	for (int o = 0; rc == 0 && o < no; o++) {
		const struct ir_value *v = ir_graph_output(g, o);
		if (!present[v->id]) {
			rc = interp_load_param(v, &vals[v->id]);
			present[v->id] = rc == 0;
		}
		if (rc < 0)
			break;
		if (borrowed[v->id]) {
			rc = copy_out(&vals[v->id], &outputs[o]);
		} else {
			outputs[o] = vals[v->id];
			borrowed[v->id] = true; /* a later duplicate copies it */
		}
	}
	if (rc < 0)
		for (int o = 0; o < no; o++)
			if (outputs[o].data) {
				const struct ir_value *v = ir_graph_output(g, o);
				if (vals[v->id].data == outputs[o].data)
					borrowed[v->id] = false; /* freed below */
				else
					ir_tensor_free(&outputs[o]);
				outputs[o].data = NULL;
			}
done:
	for (int v = 0; present && v < nv; v++)
		if (present[v] && !borrowed[v])
			ir_tensor_free(&vals[v]);
	ir_free(vals);
	ir_free(present);
	ir_free(keep);
	ir_free(borrowed);
	return rc;
}

int interp_run(const struct ir_graph *g, const struct ir_tensor *inputs, struct ir_tensor *outputs)
{
	return interp_run_with(g, inputs, NULL, outputs);
}
