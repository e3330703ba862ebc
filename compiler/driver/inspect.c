/*
 * inspect.c: what is inside a model: inputs, outputs, op histograms,
 * parameters, FLOPs of one forward pass and activation bytes, as text or
 * as one JSON object (jansson).
 */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "compiler/driver/driver.h"

void inspect_stats_compute(const struct ir_graph *g, struct inspect_stats *s)
{
	memset(s, 0, sizeof *s);
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *v = ir_graph_param(g, i);
		if (!ir_dtype_is_float(v->dtype))
			continue;
		s->params += ir_shape_numel(&v->shape);
		s->param_bytes += ir_shape_numel(&v->shape) * (int64_t)ir_dtype_size(v->dtype);
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		s->core_ops[n->op]++;
		s->flops += ir_node_flops(n);
		if (ir_op_flags(n->op) & IR_OPF_HEAVY)
			s->dot_flops += ir_node_flops(n);
		if (n->op == IR_OP_CONSTANT)
			continue;
		for (int j = 0; j < n->nout; j++)
			s->activation_bytes += ir_shape_numel(&n->out[j]->shape) *
					       (int64_t)ir_dtype_size(n->out[j]->dtype);
	}
}

static json_t *value_json(const struct ir_value *v, const char *name)
{
	json_t *shape = json_array();
	for (int i = 0; i < v->shape.rank; i++)
		json_array_append_new(shape, json_integer(v->shape.dims[i]));
	return json_pack("{s:s, s:s, s:o}", "name", name ? name : "", "dtype", ir_dtype_name(v->dtype), "shape", shape);
}

static int print_json(const struct ir_graph *g, const struct onnx_model_info *info, const struct inspect_stats *s,
		      FILE *f)
{
	json_t *o = json_object(), *ins = json_array(), *outs = json_array(), *onnx = json_object(),
	       *core = json_object();
	for (int i = 0; i < ir_graph_ninputs(g); i++)
		json_array_append_new(ins, value_json(ir_graph_input(g, i), ir_graph_input(g, i)->name));
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		json_array_append_new(outs, value_json(ir_graph_output(g, i), ir_graph_output_name(g, i)));
	for (int i = 0; i < info->nops; i++)
		json_object_set_new(onnx, info->op_names[i], json_integer(info->op_counts[i]));
	for (int op = 0; op < IR_OP_COUNT; op++)
		if (s->core_ops[op])
			json_object_set_new(core, ir_op_name(op), json_integer(s->core_ops[op]));
	json_object_set_new(o, "opset", json_integer(info->opset));
	json_object_set_new(o, "inputs", ins);
	json_object_set_new(o, "outputs", outs);
	json_object_set_new(o, "params", json_integer(s->params));
	json_object_set_new(o, "param_bytes", json_integer(s->param_bytes));
	json_object_set_new(o, "flops", json_real(s->flops));
	json_object_set_new(o, "dot_flops", json_real(s->dot_flops));
	json_object_set_new(o, "activation_bytes", json_integer(s->activation_bytes));
	json_object_set_new(o, "onnx_ops", onnx);
	json_object_set_new(o, "core_ops", core);
	json_object_set_new(o, "core_nodes", json_integer(ir_graph_nnodes(g)));
	int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	fputc('\n', f);
	json_decref(o);
	return rc < 0 ? ir_errorf(-EIO, "cannot write JSON") : 0;
}

static const char *human(double x, char *buf, size_t n, const char *unit)
{
	const char *pre[] = { "", "K", "M", "G", "T", "P", "E" };
	int k = 0;
	while (x >= 1000 && k < 6)
		x /= 1000, k++;
	snprintf(buf, n, k ? "%.3g %s%s" : "%.0f %s%s", x, pre[k], unit);
	return buf;
}

static void print_value(FILE *f, const struct ir_value *v, const char *name)
{
	char sh[IR_SHAPE_STR_MAX];
	fprintf(f, "  %-24s %s%s\n", name ? name : "", ir_dtype_name(v->dtype), ir_shape_str(&v->shape, sh, sizeof sh));
}

int inspect_print(const struct ir_graph *g, const struct onnx_model_info *info, bool json, FILE *f)
{
	struct inspect_stats s;
	char b1[32], b2[32];
	inspect_stats_compute(g, &s);
	if (json)
		return print_json(g, info, &s, f);
	fprintf(f, "opset %lld%s%s\n", (long long)info->opset, info->producer ? ", produced by " : "",
		info->producer ? info->producer : "");
	fprintf(f, "inputs:\n");
	for (int i = 0; i < ir_graph_ninputs(g); i++)
		print_value(f, ir_graph_input(g, i), ir_graph_input(g, i)->name);
	fprintf(f, "outputs:\n");
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		print_value(f, ir_graph_output(g, i), ir_graph_output_name(g, i));
	fprintf(f, "parameters: %lld (%s)\n", (long long)s.params, human((double)s.param_bytes, b1, sizeof b1, "B"));
	fprintf(f, "forward FLOPs: %.6g (%s)\n", s.flops, human(s.flops, b2, sizeof b2, "FLOP"));
	fprintf(f, "  of which dot/conv: %.6g (%s)\n", s.dot_flops, human(s.dot_flops, b2, sizeof b2, "FLOP"));
	fprintf(f, "activation bytes: %lld (%s)\n", (long long)s.activation_bytes,
		human((double)s.activation_bytes, b1, sizeof b1, "B"));
	fprintf(f, "ONNX ops (%d kinds):\n", info->nops);
	for (int i = 0; i < info->nops; i++)
		fprintf(f, "  %-24s %d\n", info->op_names[i], info->op_counts[i]);
	fprintf(f, "core ops (%d nodes):\n", ir_graph_nnodes(g));
	for (int op = 0; op < IR_OP_COUNT; op++)
		if (s.core_ops[op])
			fprintf(f, "  %-24s %d\n", ir_op_name(op), s.core_ops[op]);
	return 0;
}

int inspect_print_train(const struct ir_graph *g, enum train_optim optim, bool json, FILE *f)
{
	static const char *const names[] = { "sgd", "momentum", "nesterov", "adam", "adamw" };
	int slots = optim == TRAIN_SGD ? 0 : optim == TRAIN_MOMENTUM || optim == TRAIN_NESTEROV ? 1 : 2;
	double params = 0, grads = 0;
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *p = ir_graph_param(g, i);
		if (!ir_dtype_is_float(p->dtype))
			continue;
		double b = (double)ir_shape_numel(&p->shape) * (double)ir_dtype_size(p->dtype);
		params += b;
		if (!p->buffer) /* running statistics get no gradient */
			grads += b;
	}
	double state = grads * slots, total = params + grads + state;
	char b1[32], b2[32], b3[32];
	if (json) {
		fprintf(f,
			"{\"optimizer\": \"%s\", \"gradient_bytes\": %.0f, \"optimizer_state_bytes\": %.0f, "
			"\"train_total_bytes\": %.0f}\n",
			names[optim], grads, state, total);
		return 0;
	}
	fprintf(f, "training (%s): gradients %s, optimizer state %s, with parameters %s\n", names[optim],
		human(grads, b1, sizeof b1, "B"), human(state, b2, sizeof b2, "B"), human(total, b3, sizeof b3, "B"));
	return 0;
}
