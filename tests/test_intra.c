/*
 * test_intra.c: the intra-op pass chooses known-right plans.
 *
 *  (a) 2-layer MLP, batch 1024, hidden 128, 1x4, training: pure data
 *      parallelism, the only collectives the gradient all-reduces;
 *  (b) batch 128, hidden 1024: Megatron's split (first weight by columns,
 *      second by rows), one forward all-reduce of batch x hidden;
 *  (c) a GPT-3 layer on 1x8: column-parallel QKV and first MLP weight,
 *      row-parallel projections, two forward reductions in the layer;
 *  (d) 2x4 with axis 0 across nodes: data parallel on the slow axis,
 *      tensor parallel on the fast one;
 *  (e) the pass's answer is the optimum of its problem, by brute force;
 *  (g) a long sequence, with and without a binding memory limit: sequence
 *      parallelism (layer norms split along the sequence, reduce-scatter in
 *      place of all-reduce), and a limit nothing fits: a clear error;
 *  (h) an MoE layer: experts split over the mesh, all-to-all of tokens;
 *  (i) a manual plan's tensor parallelism: the batch never split, weights
 *      split Megatron's way, a vocabulary that 4 does not divide padded;
 *  and the annotated IR round-trips through its text form.
 *
 * Usage: test_intra MODELGEN (the pcc-modelgen executable).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/search/intra_internal.h"
#include "tap.h"

static const char *modelgen;
static char tmpdir[] = "/tmp/pcc-test-intra-XXXXXX";

/* The MLP of (a), (b), (d) as IR text: weights external (never read). */
static struct ir_graph *mlp(int b, int h)
{
	char text[4096];
	snprintf(text, sizeof text,
		 "pcc-ir 1\n"
		 "input %%0 \"x\" : f32[%d,%d]\n"
		 "param %%1 \"fc1.weight\" : f32[%d,%d] = external \"w\" offset 0 bytes %d\n"
		 "param %%2 \"fc1.bias\" : f32[%d] = external \"w\" offset 0 bytes %d\n"
		 "param %%3 \"fc2.weight\" : f32[%d,%d] = external \"w\" offset 0 bytes %d\n"
		 "param %%4 \"fc2.bias\" : f32[%d] = external \"w\" offset 0 bytes %d\n"
		 "%%5 : f32[%d,%d] = dot %%0, %%1 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
		 "%%6 : f32[%d,%d] = broadcast %%2 shape=[%d,%d] axes=[1]\n"
		 "%%7 : f32[%d,%d] = add %%5, %%6\n"
		 "%%8 : f32[%d,%d] = relu %%7\n"
		 "%%9 : f32[%d,%d] = dot %%8, %%3 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
		 "%%10 : f32[%d,%d] = broadcast %%4 shape=[%d,%d] axes=[1]\n"
		 "%%11 : f32[%d,%d] = add %%9, %%10\n"
		 "output %%11 \"y\"\n",
		 b, h, h, h, h * h * 4, h, h * 4, h, h, h * h * 4, h, h * 4, b, h, b, h, b, h, b, h, b, h, b, h, b, h,
		 b, h, b, h);
	struct ir_graph *g = ir_parse(text);
	if (!g)
		TAP_DIAG("mlp: %s", ir_error());
	return g;
}

static struct ir_graph *generated(const char *model, const char *extra)
{
	char path[256], cmd[1024];
	snprintf(path, sizeof path, "%s/%s.onnx", tmpdir, model);
	snprintf(cmd, sizeof cmd, "'%s' %s -o '%s' %s >/dev/null", modelgen, model, path, extra);
	if (system(cmd) != 0) {
		TAP_DIAG("failed: %s", cmd);
		return NULL;
	}
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	struct ir_graph *g = onnx_import(path, &o, NULL);
	if (!g)
		TAP_DIAG("%s", ir_error());
	return g;
}

static const struct ir_value *param(const struct ir_graph *g, const char *name)
{
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if (!strcmp(ir_graph_param(g, i)->name, name))
			return ir_graph_param(g, i);
	TAP_DIAG("no parameter %s", name);
	return NULL;
}

/* "S1,R"-style check of a value's sharding (no brackets). */
static bool sharded_as(const struct ir_value *v, const char *want)
{
	char buf[IR_SHARDING_STR_MAX], w[64];
	if (!v || !v->sharded)
		return false;
	snprintf(w, sizeof w, "<%s>", want);
	ir_sharding_str(&v->sharding, v->shape.rank, buf, sizeof buf);
	if (strcmp(buf, w))
		TAP_DIAG("%s is %s, want %s", v->name ? v->name : "value", buf, w);
	return !strcmp(buf, w);
}

static int solve_with(struct ir_graph *g, const char *cluster, int n0, int n1, bool train, double mem, bool zero,
		      struct intra_result *r)
{
	struct cost_cluster c;
	struct intra_opts o;
	if (cost_cluster_parse(cluster, &c) < 0)
		return -EINVAL;
	intra_opts_init(&o);
	o.n0 = n0;
	o.n1 = n1;
	o.train = train;
	o.mem_limit = mem;
	o.zero = zero;
	o.time_limit = 5;
	int rc = intra_pass(g, &c, &o, r);
	if (rc < 0 && rc != -ENOSPC)
		TAP_DIAG("intra_pass: %s", ir_error());
	return rc;
}

static int solve(struct ir_graph *g, const char *cluster, int n0, int n1, bool train, double mem,
		 struct intra_result *r)
{
	return solve_with(g, cluster, n0, n1, train, mem, false, r);
}

static bool from_param(const struct ir_graph *g, const struct intra_event *e)
{
	const struct ir_node *n = ir_graph_node(g, e->node);
	return e->operand >= 0 && n->in[e->operand]->kind == IR_VAL_PARAM;
}

static void test_data_parallel(void)
{
	struct ir_graph *g = mlp(1024, 128);
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x4:a100-80g", 1, 4, true, 0, &r) == 0, "(a) MLP b1024 h128 on 1x4 solves")) {
		ir_graph_free(g);
		return;
	}
	TAP_OK(sharded_as(ir_graph_input(g, 0), "S1,R"), "(a) the batch is split over the 4 devices");
	TAP_OK(sharded_as(param(g, "fc1.weight"), "R,R") && sharded_as(param(g, "fc2.weight"), "R,R") &&
		       sharded_as(param(g, "fc1.bias"), "R") && sharded_as(param(g, "fc2.bias"), "R"),
	       "(a) every parameter replicated");
	int fwd = 0, grads = 0, other = 0;
	for (int i = 0; i < r.nevents; i++) {
		const struct intra_event *e = &r.events[i];
		if (!e->bwd)
			fwd++;
		else if (e->coll == COST_ALL_REDUCE && from_param(g, e))
			grads++;
		else
			other++;
	}
	TAP_OK(fwd == 0 && other == 0 && grads == 4,
	       "(a) only the 4 gradient all-reduces (forward %d, gradients %d, other %d)", fwd, grads, other);
	intra_result_free(&r);
	ir_graph_free(g);
}

/* ZeRO-1 on the data-parallel MLP: every parameter replicated on 4
 * devices keeps a quarter of its optimizer state (Adam, mixed precision:
 * 12 bytes per parameter) and updates a quarter of it. */
static void test_zero(void)
{
	struct ir_graph *g = mlp(1024, 128);
	struct intra_result r;
	if (!g || !TAP_OK(solve_with(g, "1x4:a100-80g", 1, 4, true, 0, true, &r) == 0, "(a) MLP with ZeRO-1 solves: %s",
			  ir_error())) {
		ir_graph_free(g);
		return;
	}
	double params = 2.0 * 128 * 128 + 2 * 128;
	TAP_OK(sharded_as(param(g, "fc1.weight"), "R,R"), "(a) ZeRO-1 keeps the weights replicated");
	TAP_NEAR(r.mem_zero_saved, 12 * params * 3 / 4, 1e-9,
		 "(a) ZeRO-1 saves 3/4 of the optimizer state (%.0f bytes)", r.mem_zero_saved);
	TAP_OK(r.t_optim > 0 && r.t_optim < r.t_optim_nozero, "(a) the update runs on a quarter (%.3g s vs %.3g s)",
	       r.t_optim, r.t_optim_nozero);
	intra_result_free(&r);
	ir_graph_free(g);
}

/* The activations a training step keeps for its backward pass, per GPT
 * layer: Korthikanti et al. 2022's 34sbh + 5as^2b bytes less dropout's
 * 2sbh + as^2b masks and with the attention scores recomputed from the
 * softmax output (2as^2b): 32sbh + 2as^2b. Measured as the difference
 * between a 2-layer and a 1-layer model on one device. */
static double kept_bytes(const char *extra)
{
	struct ir_graph *g = generated("gpt3-1.3b", extra);
	struct intra_result r;
	double kept = -1;
	if (g && solve(g, "1x1:a100-80g", 1, 1, true, 0, &r) == 0) {
		double params = 0;
		for (int i = 0; i < ir_graph_nparams(g); i++)
			params += (double)ir_shape_numel(&ir_graph_param(g, i)->shape);
		kept = r.mem_end - 16 * params; /* bf16 weights and gradients, fp32 Adam */
		intra_result_free(&r);
	}
	ir_graph_free(g);
	return kept;
}

static void test_kept_activations(void)
{
	double one = kept_bytes("--layers 1 --batch 2 --seq 256"), two = kept_bytes("--layers 2 --batch 2 --seq 256");
	double s = 256, b = 2, h = 2048, a = 16;
	double want = 32 * s * b * h + 2 * a * s * s * b;
	TAP_OK(one > 0 && two > one, "(g) kept activations measured (%.0f, %.0f bytes)", one, two);
	TAP_NEAR(two - one, want, 0.01, "(g) one GPT layer keeps 32sbh + 2as^2b bytes (%.0f, want %.0f)", two - one,
		 want);
}

static void test_megatron_mlp(void)
{
	struct ir_graph *g = mlp(128, 1024);
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x4:a100-80g", 1, 4, true, 0, &r) == 0, "(b) MLP b128 h1024 on 1x4 solves")) {
		ir_graph_free(g);
		return;
	}
	TAP_OK(sharded_as(param(g, "fc1.weight"), "R,S1"), "(b) first weight split by columns");
	TAP_OK(sharded_as(param(g, "fc2.weight"), "S1,R"), "(b) second weight split by rows");
	int fwd = 0;
	double bytes = 0;
	for (int i = 0; i < r.nevents; i++)
		if (!r.events[i].bwd) {
			fwd++;
			bytes = r.events[i].bytes;
			TAP_OK(r.events[i].coll == COST_ALL_REDUCE, "(b) the forward collective is an all-reduce");
		}
	TAP_OK(fwd == 1, "(b) one forward collective (%d)", fwd);
	TAP_NEAR(bytes, 128.0 * 1024 * 2, 1e-9, "(b) it reduces batch x hidden in bf16 (%.0f bytes)", bytes);
	/* the report's account of it (intra_notes): fc1 by columns, fc2 by
	 * rows leaving partial sums, all-reduced where the bias add reads them;
	 * no runner-up cheaper (the answer is locally optimal) */
	struct intra_note *nt;
	int nn, col = 0, row = 0, colls = 0;
	int nrc = intra_notes(&r, &nt, &nn);
	if (TAP_OK(nrc == 0 && nn == ir_graph_nnodes(g), "(b) a note per op (%d)", nn)) {
		bool sorted = true, dearer = true, ar = false;
		for (int i = 0; i < nn; i++) {
			sorted &= i == 0 || nt[i].t <= nt[i - 1].t;
			dearer &= isnan(nt[i].delta) || nt[i].delta >= 0;
			col += !strcmp(nt[i].op, "dot") && !strcmp(nt[i].chosen, "<R,R> x <R,S1> -> <R,S1>");
			row += !strcmp(nt[i].op, "dot") && !strcmp(nt[i].chosen, "<R,S1> x <S1,R> -> <R,R|P1>");
			colls += nt[i].coll[0] != 0;
			ar |= !strcmp(nt[i].op, "add") && !strcmp(nt[i].coll, "all-reduce 256.0 KiB over axis 1");
		}
		TAP_OK(sorted && dearer, "(b) notes costliest first, no runner-up cheaper");
		TAP_OK(col == 1 && row == 1, "(b) notes: one dot by columns, one by rows");
		TAP_OK(colls == 1 && ar, "(b) notes: the one collective is the all-reduce the bias add needs");
		ir_free(nt);
	}
	intra_result_free(&r);
	ir_graph_free(g);
}

static void test_two_axes(void)
{
	struct ir_graph *g = mlp(8192, 2048);
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "2x4:a100-80g", 2, 4, true, 0, &r) == 0, "(d) MLP on 2x4 solves")) {
		ir_graph_free(g);
		return;
	}
	/* x may also arrive split over both axes: each device copies 1/8 of
	 * the batch from the host and the all-gather over the fast axis is
	 * cheaper than copying 1/2 */
	const struct ir_value *x = ir_graph_input(g, 0);
	char xs[IR_SHARDING_STR_MAX] = "";
	if (x->sharded)
		ir_sharding_str(&x->sharding, x->shape.rank, xs, sizeof xs);
	TAP_OK(!strcmp(xs, "<S0,R>") || !strcmp(xs, "<S01,R>"),
	       "(d) batch split over the slow axis 0 (across nodes): %s", xs);
	/* fc1's backward never reads its weight (x carries no gradient), so
	 * storing it split over axis 0 too (gathered forward, its gradient
	 * reduce-scattered: the all-reduce's cost) halves its update */
	TAP_OK((sharded_as(param(g, "fc1.weight"), "R,S1") || sharded_as(param(g, "fc1.weight"), "S0,S1")) &&
		       sharded_as(param(g, "fc2.weight"), "S1,R"),
	       "(d) Megatron's split on the fast axis 1");
	intra_result_free(&r);
	ir_graph_free(g);
}

/* (e): every assignment of the pass's own problem, none cheaper. */
static void test_optimal(void)
{
	struct ir_graph *g = mlp(256, 512);
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x4:a100-80g", 1, 4, true, 0, &r) == 0, "(e) MLP for brute force solves")) {
		ir_graph_free(g);
		return;
	}
	const struct shard_problem *p = &r.st->prob;
	int n = p->nnodes, *c = calloc((size_t)n, sizeof *c);
	struct shard_eval ev, best;
	shard_evaluate(p, r.st->choice, &best);
	long combos = 0;
	bool better = false;
	for (;;) {
		shard_evaluate(p, c, &ev);
		combos++;
		if (ev.feasible && ev.cost < best.cost)
			better = true;
		int i = 0;
		while (i < n && ++c[i] == shard_problem_nstrat(p, i))
			c[i++] = 0;
		if (i == n)
			break;
	}
	TAP_OK(!better && best.feasible, "(e) no cheaper plan among all %ld assignments", combos);
	TAP_NEAR(r.t_total, (double)best.cost / INTRA_COST_SCALE, 1e-9, "(e) reported time is the evaluated cost");
	free(c);
	intra_result_free(&r);
	ir_graph_free(g);
}

static int count_fwd(const struct ir_graph *g, const struct intra_result *r, const char *prefix, enum cost_coll op,
		     double min_bytes)
{
	int n = 0;
	for (int i = 0; i < r->nevents; i++) {
		const struct intra_event *e = &r->events[i];
		const char *name = ir_graph_node(g, e->node)->name;
		if (!e->bwd && e->coll == op && e->bytes >= min_bytes && name && !strncmp(name, prefix, strlen(prefix)))
			n++;
	}
	return n;
}

static void test_gpt_layer(void)
{
	struct ir_graph *g = generated("gpt3-6.7b", "--layers 1 --batch 1 --seq 512");
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x8:a100-80g", 1, 8, true, 0, &r) == 0, "(c) GPT-3 6.7B layer on 1x8 solves")) {
		ir_graph_free(g);
		return;
	}
	TAP_OK(sharded_as(param(g, "h.0.attn.qkv.weight"), "R,S1"), "(c) QKV weight column-parallel");
	TAP_OK(sharded_as(param(g, "h.0.attn.proj.weight"), "S1,R"), "(c) attention projection row-parallel");
	TAP_OK(sharded_as(param(g, "h.0.mlp.fc.weight"), "R,S1"), "(c) first MLP weight column-parallel");
	TAP_OK(sharded_as(param(g, "h.0.mlp.proj.weight"), "S1,R"), "(c) second MLP weight row-parallel");
	double act = 512.0 * 4096 * 2;
	int ar = count_fwd(g, &r, "h.0", COST_ALL_REDUCE, act), rs = count_fwd(g, &r, "h.0", COST_REDUCE_SCATTER, act);
	TAP_OK(ar + rs == 2,
	       "(c) two forward reductions of the layer's activations (%d all-reduce, %d "
	       "reduce-scatter)",
	       ar, rs);
	intra_result_free(&r);
	ir_graph_free(g);
}

static const struct ir_node *node_named(const struct ir_graph *g, const char *prefix, enum ir_op op)
{
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		if (n->op == op && n->name && !strncmp(n->name, prefix, strlen(prefix)))
			return n;
	}
	return NULL;
}

/* The least memory any plan needs, from the -ENOSPC message. */
static double least_memory(struct ir_graph *g)
{
	struct intra_result r;
	int rc = solve(g, "1x8:a100-80g", 1, 8, true, 1 << 20, &r);
	const char *m = strstr(ir_error(), " (");
	TAP_OK(rc == -ENOSPC &&
		       strstr(ir_error(), "no sharding on mesh 1x8 fits the memory limit of 1 MiB per device") && m,
	       "(g) an impossible limit: %s", ir_error());
	return m ? strtod(m + 2, NULL) : 0;
}

static void test_memory(void)
{
	struct ir_graph *g = generated("gpt3-6.7b", "--layers 1 --batch 1 --seq 8192");
	struct intra_result r;
	const double gib = 1 << 30;
	if (!g || !TAP_OK(solve(g, "1x8:a100-80g", 1, 8, true, 0, &r) == 0, "(g) sequence 8192 unconstrained")) {
		ir_graph_free(g);
		return;
	}
	double act = 8192.0 * 4096 * 2;
	TAP_OK(count_fwd(g, &r, "h.0", COST_REDUCE_SCATTER, act) >= 1 &&
		       count_fwd(g, &r, "h.0", COST_ALL_REDUCE, act) == 0,
	       "(g) sequence parallelism: reduce-scatters, no all-reduce of the layer's activations");
	double free_peak = r.mem_peak, least = least_memory(g), lim = (free_peak + least) / 2;
	intra_result_free(&r);
	TAP_OK(least > 0 && least < free_peak, "(g) least memory %.3f GiB below the unconstrained peak %.3f GiB",
	       least / gib, free_peak / gib);
	if (TAP_OK(solve(g, "1x8:a100-80g", 1, 8, true, lim, &r) == 0, "(g) a binding limit of %.3f GiB solves",
		   lim / gib)) {
		TAP_OK(r.mem_peak <= lim, "(g) peak %.3f GiB within the limit", r.mem_peak / gib);
		const struct ir_node *ln = node_named(g, "h.0/LayerNormalization", IR_OP_LAYER_NORM);
		TAP_OK(ln && sharded_as(ln->out[0], "R,S1,R"), "(g) the layer norm is split along the sequence");
		TAP_OK(count_fwd(g, &r, "h.0", COST_ALL_REDUCE, act) == 0, "(g) no all-reduce of activations");
		intra_result_free(&r);
	}
	ir_graph_free(g);
}

static void test_moe(void)
{
	struct ir_graph *g = generated("moe-380m", "--layers 1 --batch 8");
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x8:a100-80g", 1, 8, true, 0, &r) == 0, "(h) MoE layer on 1x8 solves")) {
		ir_graph_free(g);
		return;
	}
	TAP_OK(sharded_as(param(g, "h.0.moe.wi.weight"), "S1,R,R") &&
		       sharded_as(param(g, "h.0.moe.wo.weight"), "S1,R,R"),
	       "(h) experts split over the mesh");
	TAP_OK(count_fwd(g, &r, "h.0.moe", COST_ALL_TO_ALL, 1 << 20) >= 2, "(h) tokens move by all-to-all");
	intra_result_free(&r);
	ir_graph_free(g);
}

/* (i) A manual plan's tensor parallelism (intra_opts.manual_tp): an MLP
 * (b 1024, h 2048) may not split its batch, so it splits the weights as
 * Megatron does (fc1 by columns, fc2 by rows: one reduction of b x h
 * forward); a head over a vocabulary of 50257 splits its
 * columns padded over 4, which no plan unconstrained may. */
static void test_manual_tp(void)
{
	struct cost_cluster c;
	struct intra_opts o;
	struct intra_result r;
	struct ir_graph *g = mlp(1024, 2048);
	cost_cluster_parse("1x4:a100-80g", &c);
	intra_opts_init(&o);
	o.n1 = 4;
	o.train = true;
	o.manual_tp = true;
	int rc = g ? intra_pass(g, &c, &o, &r) : -EINVAL;
	if (!TAP_OK(rc == 0, "(i) MLP b1024 h2048 under manual_tp solves: %s", rc ? ir_error() : "yes")) {
		ir_graph_free(g);
		return;
	}
	bool batch_whole = true;
	for (int i = 0; i < ir_graph_nvalues(g); i++)
		batch_whole &= ir_graph_value(g, i)->sharding.dim[0] == 0 || ir_graph_value(g, i)->shape.rank < 2 ||
			       ir_graph_value(g, i)->kind == IR_VAL_PARAM;
	TAP_OK(sharded_as(ir_graph_input(g, 0), "R,R") && batch_whole, "(i) no value split along the batch");
	TAP_OK(sharded_as(param(g, "fc1.weight"), "R,S1") && sharded_as(param(g, "fc2.weight"), "S1,R"),
	       "(i) fc1 split by columns, fc2 by rows");
	int sums = 0, other = 0;
	for (int i = 0; i < r.nevents; i++) {
		const struct intra_event *e = &r.events[i];
		if (e->bwd)
			continue;
		if ((e->coll == COST_ALL_REDUCE || e->coll == COST_REDUCE_SCATTER) && e->bytes == 1024 * 2048 * 2)
			sums++;
		else
			other++;
	}
	TAP_OK(sums == 1 && other == 0,
	       "(i) forward, only fc2's partial sums reduced, b x h in bf16 (%d, and %d other collectives)", sums,
	       other);
	intra_result_free(&r);
	ir_graph_free(g);

	g = ir_parse("pcc-ir 1\n"
		     "input %0 \"x\" : f32[2048,1024]\n"
		     "param %1 \"head\" : f32[1024,50257] = external \"w\" offset 0 bytes 205852672\n"
		     "%2 : f32[2048,50257] = dot %0, %1 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
		     "output %2 \"logits\"\n");
	o.train = false;
	TAP_OK(g && intra_pass(g, &c, &o, &r) == 0 && sharded_as(ir_graph_output(g, 0), "R,S1"),
	       "(i) a vocabulary of 50257 splits padded over 4 under manual_tp");
	if (g)
		intra_result_free(&r);
	o.manual_tp = false;
	TAP_OK(g && intra_pass(g, &c, &o, &r) == 0 && ir_graph_output(g, 0)->sharding.dim[1] == 0,
	       "(i) and not without it");
	if (g)
		intra_result_free(&r);
	ir_graph_free(g);
}

static void test_errors_and_text(void)
{
	struct ir_graph *g = mlp(64, 64);
	struct intra_result r;
	if (!g)
		return;
	int rc = solve(g, "1x8:a100-80g", 4, 4, false, 0, &r);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "mesh 4x4 needs 16 devices, cluster 1x8:a100-80g has 8"),
	       "a mesh larger than the cluster: %s", ir_error());
	rc = solve(g, "2x4:a100-80g", 2, 4, false, 0, &r);
	TAP_OK(rc == 0, "forward-only MLP on 2x4 solves");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ir_print(g, f);
	fclose(f);
	struct ir_graph *back = ir_parse(text);
	TAP_OK(back && ir_verify(back) == 0 && strstr(text, "mesh 2x4\n") && strstr(text, " <"),
	       "the annotated IR prints, parses and verifies");
	char *text2 = NULL;
	f = open_memstream(&text2, &len);
	if (back)
		ir_print(back, f);
	fclose(f);
	TAP_OK(text2 && !strcmp(text, text2), "and round-trips exactly");
	free(text);
	free(text2);
	ir_graph_free(back);
	if (rc == 0)
		intra_result_free(&r);
	ir_graph_free(g);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_intra MODELGEN\n");
		return 2;
	}
	modelgen = argv[1];
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_data_parallel();
	test_zero();
	test_kept_activations();
	test_megatron_mlp();
	test_two_axes();
	test_optimal();
	test_gpt_layer();
	test_memory();
	test_moe();
	test_manual_tp();
	test_errors_and_text();
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", tmpdir);
	return tap_done();
}
