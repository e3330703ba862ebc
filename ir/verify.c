/*
 * verify.c: the graph verifier, run after import and (in debug builds)
 * after every pass. It re-derives every node's result types with ir_infer
 * and checks the structural invariants the passes rely on.
 */
#include <errno.h>
#include <stdlib.h>

#include "ir/ir.h"

static int node_fail(const struct ir_node *n, const char *what)
{
	return ir_errorf(-EINVAL, "node %d \"%s\" (%s): %s", n->id, n->name ? n->name : "", ir_op_name(n->op), what);
}

int ir_verify(const struct ir_graph *g)
{
	int nv = ir_graph_nvalues(g), rc = 0;
	unsigned char *defined = ir_calloc((size_t)nv + 1, 1);
	if (!defined)
		return ir_errorf(-ENOMEM, "out of memory verifying the graph");
	for (int i = 0; i < nv; i++) {
		struct ir_value *v = ir_graph_value(g, i);
		if (v->id != i) {
			rc = ir_errorf(-EINVAL, "value %d has id %d", i, v->id);
			goto out;
		}
		if (v->kind == IR_VAL_INPUT || v->kind == IR_VAL_PARAM)
			defined[i] = 1;
		if (v->kind == IR_VAL_PARAM && !v->data.bytes && !v->data.path) {
			rc = ir_errorf(-EINVAL, "parameter \"%s\" has no data", v->name ? v->name : "");
			goto out;
		}
		int n0, n1;
		ir_graph_mesh(g, &n0, &n1);
		if (v->sharded && (rc = ir_sharding_check(&v->sharding, &v->shape, n0, n1)) < 0) {
			ir_error_prefix("value %d \"%s\"", i, v->name ? v->name : "");
			goto out;
		}
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		struct ir_node *n = ir_graph_node(g, i);
		enum ir_dtype dt[2];
		struct ir_shape sh[2];
		if (n->id != i) {
			rc = node_fail(n, "id does not match its position");
			goto out;
		}
		for (int j = 0; j < n->nin; j++) {
			struct ir_value *v = n->in[j];
			if (!v || v->id < 0 || v->id >= nv || ir_graph_value(g, v->id) != v || !defined[v->id]) {
				rc = node_fail(n, "uses a value before its definition");
				goto out;
			}
		}
		for (int j = 0; n->in_sharding && j < n->nin; j++) {
			int n0, n1;
			ir_graph_mesh(g, &n0, &n1);
			if (n->in_sharding[j].partial) {
				rc = node_fail(n, "reads an operand as partial sums");
				goto out;
			}
			if ((rc = ir_sharding_check(&n->in_sharding[j], &n->in[j]->shape, n0, n1)) < 0) {
				ir_error_prefix("node %d \"%s\" (%s): operand %d", n->id, n->name ? n->name : "",
						ir_op_name(n->op), j);
				goto out;
			}
		}
		if (n->nout != ir_op_noutputs(n->op)) {
			rc = node_fail(n, "wrong number of results");
			goto out;
		}
		if (ir_infer(n->op, n->nin, n->in, &n->a, dt, sh) < 0) {
			ir_error_prefix("node %d \"%s\"", n->id, n->name ? n->name : "");
			rc = -EINVAL;
			goto out;
		}
		for (int j = 0; j < n->nout; j++) {
			struct ir_value *v = n->out[j];
			if (v->def != n || v->def_index != j || v->kind != IR_VAL_NODE) {
				rc = node_fail(n, "result does not point back to its node");
				goto out;
			}
			if (v->dtype != dt[j] || !ir_shape_eq(&v->shape, &sh[j])) {
				rc = node_fail(n, "result type differs from inference");
				goto out;
			}
			defined[v->id] = 1;
		}
	}
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		struct ir_value *v = ir_graph_output(g, i);
		if (v->id < 0 || v->id >= nv || !defined[v->id]) {
			rc = ir_errorf(-EINVAL, "output %d is not defined", i);
			goto out;
		}
	}
	for (int i = 0; i < ir_graph_nupdates(g); i++) {
		struct ir_value *p = ir_graph_update_param(g, i), *v = ir_graph_update_value(g, i);
		if (p->kind != IR_VAL_PARAM || v->id < 0 || v->id >= nv || !defined[v->id] || p->dtype != v->dtype ||
		    !ir_shape_eq(&p->shape, &v->shape)) {
			rc = ir_errorf(-EINVAL, "update %d (of \"%s\") is not a defined value of the parameter's type",
				       i, p->name ? p->name : "?");
			goto out;
		}
	}
out:
	ir_free(defined);
	return rc;
}
