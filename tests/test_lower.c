/*
 * test_lower.c: SPMD lowering (compiler/lower/lower*.c). For the fixture models
 * (and two graphs of integer dots from tests/onnx_quant) on meshes 1x1,
 * 1x2, 1x4, 2x2 and 2x4: the intra-op pass's plan, and plans
 * with every node's strategy drawn at random (seeded: they exercise every
 * resharding path, partial sums, split lookups), are lowered, verified
 * (plan_verify) and run by the one-process rank simulator (plan_sim.c)
 * with the reference kernels; outputs must equal the single-device
 * interpreter's. The same for pipelined plans: the models cut into two or
 * three stages on sub-meshes split alike and unlike. Each plan lowers the
 * same from its graph's annotated IR text, printed and parsed back. Also:
 * what the lowered programs contain for known cases (Megatron's MLP: one
 * all-reduce), and that the memory plan reuses memory.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/intra_internal.h"
#include "compiler/lower/lower.h"
#include "tests/plan_sim.h"
#include "tests/tap.h"

static const char *models_dir;
static int kinds[PLAN_INSTR_KIND_COUNT]; /* instructions of every lowered plan, by kind */
static int split_lookups;                /* gathers from a split table */

struct model {
	struct ir_graph *g;
	int nin, nparams, nout;
	struct ir_tensor *in, *params, *ref;
};

static void model_free(struct model *m)
{
	for (int i = 0; i < m->nin; i++)
		ir_tensor_free(&m->in[i]);
	for (int i = 0; i < m->nparams; i++)
		ir_tensor_free(&m->params[i]);
	for (int i = 0; i < m->nout; i++)
		ir_tensor_free(&m->ref[i]);
	free(m->in);
	free(m->params);
	free(m->ref);
	ir_graph_free(m->g);
}

static int model_load(const char *name, struct model *m)
{
	char path[4096];
	memset(m, 0, sizeof *m);
	snprintf(path, sizeof path, "%s/%s/model.onnx", models_dir, name);
	if (!(m->g = onnx_import(path, NULL, NULL)))
		return -1;
	m->nin = ir_graph_ninputs(m->g);
	m->nparams = ir_graph_nparams(m->g);
	m->nout = ir_graph_noutputs(m->g);
	m->in = calloc((size_t)m->nin + 1, sizeof *m->in);
	m->params = calloc((size_t)m->nparams + 1, sizeof *m->params);
	m->ref = calloc((size_t)m->nout + 1, sizeof *m->ref);
	for (int i = 0; i < m->nin; i++) {
		snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", models_dir, name, i);
		if (onnx_tensor_read(path, &m->in[i], NULL) < 0)
			return -1;
	}
	for (int i = 0; i < m->nparams; i++)
		if (interp_load_param(ir_graph_param(m->g, i), &m->params[i]) < 0)
			return -1;
	return interp_run(m->g, m->in, m->ref);
}

static double max_rel_err(const struct ir_tensor *a, const struct ir_tensor *b)
{
	if (a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))
		return INFINITY;
	double worst = 0;
	int64_t n = ir_shape_numel(&a->shape);
	for (int64_t i = 0; i < n; i++) {
		double x = ir_tensor_get_f64(a, i), y = ir_tensor_get_f64(b, i);
		double e = fabs(x - y) / fmax(1.0, fabs(y));
		if (!(e <= worst))
			worst = isnan(e) ? INFINITY : e;
	}
	return worst;
}

/* Runs plan p of model m on the rank simulator; the largest relative error
 * of its outputs against the interpreter's, or -1. */
static double simulate(const struct model *m, const struct plan *p)
{
	struct ir_tensor *outs = calloc((size_t)m->nout + 1, sizeof *outs);
	double worst = -1;
	if (plan_sim_run(p, m->params, m->in, outs) < 0) {
		TAP_DIAG("simulate: %s", ir_error());
	} else {
		worst = 0;
		for (int i = 0; i < m->nout; i++)
			worst = fmax(worst, max_rel_err(&outs[i], &m->ref[i]));
	}
	for (int i = 0; i < m->nout; i++)
		ir_tensor_free(&outs[i]);
	free(outs);
	return worst;
}

/* Draws every solver variable's strategy at random. */
static void randomize(struct ir_graph *g, struct intra_state *st, unsigned seed)
{
	srand(seed);
	for (int gi = 0; gi < st->ngroups; gi++) {
		int n = st->unit[st->leader[gi]].nstrat;
		st->choice[gi] = n > 1 ? rand() % n : 0;
	}
	IR_ASSERT(intra_annotate(g, st) == 0); /* what lowering reads */
}

static int text_lowerings, text_same; /* plans lowered again from the IR text, and equal */

/* The annotated graph g printed and parsed back lowers to plan p byte
 * for byte: the text holds everything lowering reads. */
static void lower_from_text(const struct ir_graph *g, const struct plan *p)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	struct ir_graph *back = NULL;
	struct plan *q = NULL;
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int rc = f ? ir_print(g, f) : -1;
	if (f)
		fclose(f);
	text_lowerings++;
	if (rc < 0 || !(back = ir_parse(text)) || lower_single(back, "2x4:v100", &q) < 0 || plan_pack(p, &a, &na) < 0 ||
	    plan_pack(q, &b, &nb) < 0)
		TAP_DIAG("lowering from the text: %s", ir_error());
	else
		text_same += na == nb && !memcmp(a, b, na);
	ir_free(a);
	ir_free(b);
	plan_free(q);
	ir_graph_free(back);
	free(text);
}

/* Lowers m on mesh n0 x n1 (random strategies when seed > 0), verifies and
 * simulates; returns the largest relative error over the outputs, or -1. */
static double run_case(struct model *m, int n0, int n1, unsigned seed)
{
	struct cost_cluster c;
	struct intra_opts o;
	struct intra_result r;
	struct plan *p = NULL;
	double worst = -1;
	IR_ASSERT(cost_cluster_parse("2x4:v100", &c) == 0);
	intra_opts_init(&o);
	o.n0 = n0;
	o.n1 = n1;
	o.quick = true;
	if (intra_pass(m->g, &c, &o, &r) < 0) {
		TAP_DIAG("intra_pass: %s", ir_error());
		return -1;
	}
	if (seed)
		randomize(m->g, r.st, seed);
	if (lower_single(m->g, "2x4:v100", &p) < 0) {
		TAP_DIAG("lower: %s", ir_error());
		goto out;
	}
	if (plan_verify(p) < 0) {
		TAP_DIAG("verify: %s", ir_error());
		goto out;
	}
	lower_from_text(m->g, p);
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			kinds[p->devices[d].instr[i].kind]++;
	for (int k = 0; k < p->nkernels; k++)
		split_lookups += p->kernels[k].op == IR_OP_GATHER && p->kernels[k].nin == 2 &&
				 p->kernels[k].shape[0].dims[p->kernels[k].a.axis] < 64 &&
				 !strcmp(p->params[0].name, "wte.weight");
	worst = simulate(m, p);
out:
	plan_free(p);
	intra_result_free(&r);
	return worst;
}

static void test_models(void)
{
	/* the last two: integer dots (int32 partial sums), exact on any mesh */
	static const char *models[] = { "mlp_op17",
					"gpt_op17",
					"bert_op17",
					"moe_op17",
					"resnet_op17",
					"vit_op17",
					"unet_op17",
					"../onnx_quant/test_matmulinteger_batched_per_column",
					"../onnx_quant/test_qlinearmatmul_per_column" };
	static const int meshes[][2] = { { 1, 1 }, { 1, 2 }, { 1, 4 }, { 2, 2 }, { 2, 4 } };
	for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
		struct model m;
		if (model_load(models[i], &m) < 0) {
			TAP_OK(0, "%s loads: %s", models[i], ir_error());
			model_free(&m);
			continue;
		}
		for (size_t k = 0; k < sizeof meshes / sizeof *meshes; k++) {
			int n0 = meshes[k][0], n1 = meshes[k][1];
			double e = run_case(&m, n0, n1, 0);
			TAP_OK(e >= 0 && e < 1e-4,
			       "%s on %dx%d: the pass's plan, lowered, verifies and computes the "
			       "single-device result (max rel err %.2g)",
			       models[i], n0, n1, e);
			for (unsigned seed = 1; seed <= (n0 * n1 >= 4 ? 3u : 1u); seed++) {
				e = run_case(&m, n0, n1, seed);
				TAP_OK(e >= 0 && e < 1e-4,
				       "%s on %dx%d: random strategies (seed %u) give the "
				       "single-device result (max rel err %.2g)",
				       models[i], n0, n1, seed, e);
			}
		}
		model_free(&m);
	}
	for (int k = PLAN_ALL_REDUCE; k <= PLAN_ALL_TO_ALL; k++)
		TAP_OK(kinds[k] > 0, "the plans above ran %d %s instructions", kinds[k],
		       plan_instr_kind_name((enum plan_instr_kind)k));
	TAP_OK(split_lookups > 0, "the plans above looked up a split embedding table (%d kernels)", split_lookups);
	TAP_OK(text_lowerings > 0 && text_same == text_lowerings,
	       "%d of the %d plans above lower byte for byte the same from their graph's annotated IR text, printed "
	       "and parsed back",
	       text_same, text_lowerings);
}

/* m cut into ns stages of about equal node counts, stage s on mesh
 * mesh[s] (ranks in order), each solved by the pass (random strategies when
 * seed > 0); lowered together, verified and simulated. Returns the largest
 * relative error over the outputs, or -1; *sends: send instructions. */
static double run_pipe(struct model *m, int ns, const int (*mesh)[2], unsigned seed, int *sends)
{
	struct cost_cluster c;
	struct ir_graph *sub[4] = { NULL };
	int *src[4] = { NULL };
	struct intra_result r[4];
	struct lower_stage st[4];
	struct plan *p = NULL;
	int nn = ir_graph_nnodes(m->g), rank = 0, solved = 0;
	double worst = -1;
	IR_ASSERT(cost_cluster_parse("1x12:v100", &c) == 0 && ns <= 4);
	for (int s = 0; s < ns; s++) {
		int first = nn * s / ns, last = nn * (s + 1) / ns;
		if (!(sub[s] = graph_extract(m->g, first, last, false, &src[s]))) {
			TAP_DIAG("extract: %s", ir_error());
			goto out;
		}
		struct intra_opts o;
		intra_opts_init(&o);
		o.n0 = mesh[s][0];
		o.n1 = mesh[s][1];
		o.quick = true;
		if (intra_pass(sub[s], &c, &o, &r[s]) < 0) {
			TAP_DIAG("intra_pass, stage %d: %s", s, ir_error());
			goto out;
		}
		solved++;
		if (seed)
			randomize(sub[s], r[s].st, seed + 17u * (unsigned)s);
		st[s] = (struct lower_stage){ sub[s], rank, 1, o.n0 * o.n1, src[s] };
		rank += o.n0 * o.n1;
	}
	if (lower_plan(m->g, st, ns, "1x12:v100", &p) < 0) {
		TAP_DIAG("lower: %s", ir_error());
		goto out;
	}
	if (plan_verify(p) < 0) {
		TAP_DIAG("verify: %s", ir_error());
		goto out;
	}
	*sends = 0;
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			*sends += p->devices[d].instr[i].kind == PLAN_SEND;
	worst = simulate(m, p);
out:
	plan_free(p);
	for (int s = 0; s < ns; s++) {
		if (s < solved)
			intra_result_free(&r[s]);
		ir_graph_free(sub[s]);
		ir_free(src[s]);
	}
	return worst;
}

/* A chain of four dot + tanh layers over [24, 48] activations, every size a
 * multiple of 12 (so 3-way and 4-way splits exist), with parameters. */
static void synth_chain(struct model *m)
{
	struct ir_shape xs = { 2, { 24, 48 } }, ws = { 2, { 48, 48 } };
	struct ir_attrs a, none;
	memset(m, 0, sizeof *m);
	memset(&a, 0, sizeof a);
	memset(&none, 0, sizeof none);
	a.lhs_contract = IR_ILIST(1);
	a.rhs_contract = IR_ILIST(0);
	m->g = ir_graph_new();
	struct ir_value *h = ir_graph_add_input(m->g, "x", IR_F32, &xs);
	m->nin = 1;
	m->nparams = 4;
	m->nout = 1;
	m->in = calloc(2, sizeof *m->in);
	m->params = calloc(5, sizeof *m->params);
	m->ref = calloc(2, sizeof *m->ref);
	IR_ASSERT(ir_tensor_alloc(&m->in[0], IR_F32, &xs) == 0);
	srand(7);
	for (int64_t i = 0; i < ir_shape_numel(&xs); i++)
		ir_tensor_set_f64(&m->in[0], i, rand() / (double)RAND_MAX - 0.5);
	for (int l = 0; l < 4; l++) {
		IR_ASSERT(ir_tensor_alloc(&m->params[l], IR_F32, &ws) == 0);
		for (int64_t i = 0; i < ir_shape_numel(&ws); i++)
			ir_tensor_set_f64(&m->params[l], i, (rand() / (double)RAND_MAX - 0.5) / 4);
		struct ir_data d = { .bytes = m->params[l].data, .nbytes = (int64_t)ir_tensor_bytes(&m->params[l]) };
		char name[8];
		snprintf(name, sizeof name, "w%d", l);
		struct ir_value *in[2] = { h, ir_graph_add_param(m->g, name, IR_F32, &ws, &d) };
		struct ir_node *n = ir_graph_add_node(m->g, IR_OP_DOT, NULL, 2, in, &a);
		h = ir_graph_add_node(m->g, IR_OP_TANH, NULL, 1, n->out, &none)->out[0];
	}
	ir_graph_add_output(m->g, h, "y");
	IR_ASSERT(interp_run(m->g, m->in, m->ref) == 0);
}

/* Pipelined plans: stages on sub-meshes split the same and differently
 * (counts that divide each other, and 3 against 2 and 4, which do not). */
static void test_pipelined(void)
{
	/* the last two: integer dots (int32 partial sums), exact on any mesh */
	static const char *models[] = { "mlp_op17",
					"gpt_op17",
					"bert_op17",
					"moe_op17",
					"resnet_op17",
					"vit_op17",
					"unet_op17",
					"../onnx_quant/test_matmulinteger_batched_per_column",
					"../onnx_quant/test_qlinearmatmul_per_column" };
	static const int plans[][4][2] = {
		{ { 1, 2 }, { 1, 2 } }, { { 1, 4 }, { 1, 2 } },           { { 1, 2 }, { 2, 2 } },
		{ { 2, 2 }, { 1, 4 } }, { { 1, 1 }, { 1, 3 }, { 1, 2 } }, { { 1, 2 }, { 1, 1 }, { 1, 4 } },
	};
	static const int nst[] = { 2, 2, 2, 2, 3, 3 };
	int total = 0;
	for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
		struct model m;
		if (model_load(models[i], &m) < 0) {
			TAP_OK(0, "%s loads: %s", models[i], ir_error());
			model_free(&m);
			continue;
		}
		for (size_t k = 0; k < sizeof nst / sizeof *nst; k++)
			for (unsigned seed = 0; seed <= 1; seed++) {
				int sends = 0;
				double e = run_pipe(&m, nst[k], plans[k], seed, &sends);
				char desc[64];
				int at = 0;
				for (int s = 0; s < nst[k]; s++)
					at += snprintf(desc + at, sizeof desc - (size_t)at, "%s%dx%d", s ? " | " : "",
						       plans[k][s][0], plans[k][s][1]);
				TAP_OK(e >= 0 && e < 1e-4 && sends > 0,
				       "%s pipelined %s (%s): verifies and computes the "
				       "single-device result (max rel err %.2g, %d sends)",
				       models[i], desc, seed ? "random strategies" : "the pass's plans", e, sends);
				total += sends;
			}
		model_free(&m);
	}
	/* counts that do not divide: 3 against 2 and 4 (the sender gathers that
	 * dimension first) */
	static const int odd[][4][2] = { { { 1, 3 }, { 1, 2 }, { 1, 4 } }, { { 1, 4 }, { 1, 3 }, { 1, 1 } } };
	struct model m;
	synth_chain(&m);
	for (int k = 0; k < 2; k++)
		for (unsigned seed = 1; seed <= 4; seed++) {
			int sends = 0;
			double e = run_pipe(&m, 3, odd[k], seed, &sends);
			TAP_OK(e >= 0 && e < 1e-5 && sends > 0,
			       "chain pipelined %dx%d | %dx%d | %dx%d (seed %u): the "
			       "single-device result (max rel err %.2g, %d sends)",
			       odd[k][0][0], odd[k][0][1], odd[k][1][0], odd[k][1][1], odd[k][2][0], odd[k][2][1], seed,
			       e, sends);
		}
	model_free(&m);
}

/* y = relu(x w1) w2, batch 128, hidden 1024 (weights never read) */
static struct ir_graph *mlp(void)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_shape xs = { 2, { 128, 1024 } }, ws = { 2, { 1024, 1024 } };
	struct ir_data d = { .path = "w", .nbytes = 1024 * 1024 * 4 };
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &xs);
	struct ir_value *w1 = ir_graph_add_param(g, "w1", IR_F32, &ws, &d);
	struct ir_value *w2 = ir_graph_add_param(g, "w2", IR_F32, &ws, &d);
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	a.lhs_contract = IR_ILIST(1);
	a.rhs_contract = IR_ILIST(0);
	struct ir_value *in1[2] = { x, w1 };
	struct ir_node *h = ir_graph_add_node(g, IR_OP_DOT, "fc1", 2, in1, &a);
	struct ir_attrs none;
	memset(&none, 0, sizeof none);
	struct ir_node *r = ir_graph_add_node(g, IR_OP_RELU, "relu", 1, h->out, &none);
	struct ir_value *in2[2] = { r->out[0], w2 };
	struct ir_node *y = ir_graph_add_node(g, IR_OP_DOT, "fc2", 2, in2, &a);
	ir_graph_add_output(g, y->out[0], "y");
	return g;
}

/* Megatron's MLP on 1x4: the lowered program of every device has the two
 * dots and the relu on its quarter and one all-reduce, nothing else moves. */
static void test_megatron(void)
{
	struct ir_graph *g = mlp();
	struct cost_cluster c;
	struct intra_opts o;
	struct intra_result r;
	struct plan *p = NULL;
	IR_ASSERT(cost_cluster_parse("1x4:a100-80g", &c) == 0);
	intra_opts_init(&o);
	o.n0 = 1;
	o.n1 = 4;
	o.train = true; /* the forward part of a training step */
	if (!TAP_OK(intra_pass(g, &c, &o, &r) == 0, "MLP on 1x4 solves") ||
	    !TAP_OK(lower_single(g, "1x4:a100-80g", &p) == 0 && plan_verify(p) == 0, "and lowers")) {
		TAP_DIAG("%s", ir_error());
		goto out;
	}
	for (int d = 0; d < 4; d++) {
		int count[PLAN_INSTR_KIND_COUNT] = { 0 };
		const struct plan_device *dv = &p->devices[d];
		for (int i = 0; i < dv->ninstr; i++)
			count[dv->instr[i].kind]++;
		TAP_OK(count[PLAN_KERNEL] == 3 && count[PLAN_ALL_REDUCE] == 1 &&
			       count[PLAN_ALL_GATHER] + count[PLAN_REDUCE_SCATTER] + count[PLAN_ALL_TO_ALL] == 0,
		       "device %d: 3 kernels (%d) and one all-reduce (%d), no other collective", d, count[PLAN_KERNEL],
		       count[PLAN_ALL_REDUCE]);
		const struct plan_buffer *w1 = NULL;
		int64_t w1_at = -1;
		for (int b = 0; b < dv->nbuf; b++)
			if (dv->buf[b].bind == PLAN_BIND_PARAM && dv->buf[b].index == 0) {
				w1 = &dv->buf[b];
				w1_at = plan_slice_of(dv, b)->start[1];
			}
		TAP_OK(w1 && w1->shape.dims[0] == 1024 && w1->shape.dims[1] == 256 && w1_at == 256 * d,
		       "device %d loads columns [%d, %d) of w1", d, 256 * d, 256 * (d + 1));
		/* x, w1/4, w2/4 and y live throughout; the peak of the rest is
		 * during the second dot: relu(h) [128,256] and the partial y */
		int64_t peak = (128 * 1024 + 2 * 1024 * 256 + 128 * 1024 + 128 * 256 + 128 * 1024) * 4;
		TAP_OK(dv->arena_bytes == peak, "device %d arena %lld bytes: the peak of live bytes (%lld)", d,
		       (long long)dv->arena_bytes, (long long)peak);
	}
out:
	plan_free(p);
	intra_result_free(&r);
	ir_graph_free(g);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_lower MODELS_DIR\n");
		return 2;
	}
	models_dir = argv[1];
	test_megatron();
	test_models();
	test_pipelined();
	return tap_done();
}
