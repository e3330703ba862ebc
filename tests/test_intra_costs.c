/*
 * test_intra_costs.c: what the intra-op pass charges, beyond the plans
 * test_intra.c checks:
 *
 *  (a) a transpose of the last two dims read only by a dot costs nothing
 *      (the GEMM reads its operand transposed; the report applies the
 *      same cost_transpose_folds);
 *  (b) a tied weight (a parameter used transposed): its gradient adds up
 *      over the micro-batches and is reduced once per step, like the
 *      parameter's own;
 *  (c) batch normalization keeps its input for the backward pass, not the
 *      centred copies or the broadcast statistics (views are redone);
 *  (d) a layer's graph outputs that nothing keeps are reported apart
 *      (mem_out), and inputs already on the devices take the layout that
 *      holds least;
 *  (e) the optimizer update: one memory-bound pass (cost_optim_time, which
 *      the report calls too).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/intra_internal.h"
#include "tap.h"

static struct ir_graph *parse(const char *text)
{
	struct ir_graph *g = ir_parse(text);
	if (!g)
		TAP_DIAG("parse: %s", ir_error());
	return g;
}

static int solve(struct ir_graph *g, const char *cluster, int n0, int n1, double step_share, bool resident,
		 struct intra_result *r)
{
	struct cost_cluster c;
	struct intra_opts o;
	if (cost_cluster_parse(cluster, &c) < 0)
		return -EINVAL;
	intra_opts_init(&o);
	o.n0 = n0;
	o.n1 = n1;
	o.train = true;
	o.time_limit = 5;
	o.step_share = step_share;
	o.inputs_resident = resident;
	int rc = intra_pass(g, &c, &o, r);
	if (rc < 0)
		TAP_DIAG("intra_pass: %s", ir_error());
	return rc;
}

/* logits = x . E^T with E [v, h] (the tied embedding of a language
 * model's head), or with the weight stored [h, v] already (plain). */
static struct ir_graph *head(int b, int h, int v, bool tied)
{
	char text[2048];
	if (tied)
		snprintf(text, sizeof text,
			 "pcc-ir 1\n"
			 "input %%0 \"x\" : f32[%d,%d]\n"
			 "param %%1 \"wte\" : f32[%d,%d] = external \"w\" offset 0 bytes %d\n"
			 "%%2 : f32[%d,%d] = transpose %%1 axes=[1,0]\n"
			 "%%3 : f32[%d,%d] = dot %%0, %%2 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
			 "output %%3 \"logits\"\n",
			 b, h, v, h, v * h * 4, h, v, b, v);
	else
		snprintf(text, sizeof text,
			 "pcc-ir 1\n"
			 "input %%0 \"x\" : f32[%d,%d]\n"
			 "param %%1 \"w\" : f32[%d,%d] = external \"w\" offset 0 bytes %d\n"
			 "%%2 : f32[%d,%d] = dot %%0, %%1 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
			 "output %%2 \"logits\"\n",
			 b, h, h, v, v * h * 4, b, v);
	return parse(text);
}

static void test_transpose_folds(void)
{
	struct ir_graph *t = head(256, 1024, 8192, true), *p = head(256, 1024, 8192, false);
	struct intra_result rt, rp;
	if (!t || !p || solve(t, "1x1:a100-80g", 1, 1, 1, false, &rt) < 0) {
		TAP_OK(false, "(a) the head solves");
		ir_graph_free(t);
		ir_graph_free(p);
		return;
	}
	if (TAP_OK(solve(p, "1x1:a100-80g", 1, 1, 1, false, &rp) == 0, "(a) the plain head solves")) {
		TAP_NEAR(rt.t_compute, rp.t_compute, 1e-12,
			 "(a) x . E^T costs what x . W does (%.4g s, %.4g s): the transpose folds into the dot",
			 rt.t_compute, rp.t_compute);
		TAP_NEAR(rt.mem_peak, rp.mem_peak, 1e-12, "(a) and holds no memory of its own (%.0f, %.0f bytes)",
			 rt.mem_peak, rp.mem_peak);
		intra_result_free(&rp);
	}
	intra_result_free(&rt);
	const struct ir_node *tr = ir_graph_node(t, 0);
	TAP_OK(cost_transpose_folds(tr), "(a) a 2-D transpose folds");
	ir_graph_free(t);
	ir_graph_free(p);
	struct ir_graph *g = parse("pcc-ir 1\n"
				   "input %0 \"x\" : f32[2,3,4]\n"
				   "%1 : f32[2,4,3] = transpose %0 axes=[0,2,1]\n"
				   "%2 : f32[3,2,4] = transpose %0 axes=[1,0,2]\n"
				   "output %1 \"a\"\n"
				   "output %2 \"b\"\n");
	TAP_OK(g && cost_transpose_folds(ir_graph_node(g, 0)) && !cost_transpose_folds(ir_graph_node(g, 1)),
	       "(a) the last two dims swapped fold, a batch permutation does not");
	ir_graph_free(g);
}

/* (b): a large batch copied from the host, a small weight: data parallel
 * over 8 devices, 16 micro-batches per step. */
static void test_tied_weight_once(void)
{
	struct ir_graph *g = head(8192, 1024, 1024, true);
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x8:v100", 1, 8, 1.0 / 16, false, &r) == 0, "(b) the tied head solves")) {
		ir_graph_free(g);
		return;
	}
	const struct ir_value *x = ir_graph_input(g, 0), *w = ir_graph_param(g, 0);
	char bx[IR_SHARDING_STR_MAX], bw[IR_SHARDING_STR_MAX];
	ir_sharding_str(&x->sharding, 2, bx, sizeof bx);
	ir_sharding_str(&w->sharding, 2, bw, sizeof bw);
	TAP_OK(!strcmp(bx, "<S1,R>") && !strcmp(bw, "<R,R>"),
	       "(b) batch split, weight replicated (x %s, wte %s): the weight's gradient is reduced once per step", bx,
	       bw);
	int once = 0, per_mb = 0;
	for (int i = 0; i < r.nevents; i++) {
		const struct intra_event *e = &r.events[i];
		if (e->once)
			once += e->operand == 1 && e->coll == COST_ALL_REDUCE;
		else
			per_mb++;
	}
	TAP_OK(once == 1 && per_mb == 0,
	       "(b) one all-reduce of E^T's gradient, once per step; nothing per micro-batch (%d, %d)", once, per_mb);
	intra_result_free(&r);
	ir_graph_free(g);
}

/* (c): y = (x - mean) * rsqrt(var + eps) * gamma over the batch dim, as
 * the ONNX importer lowers BatchNormalization (the centred value computed
 * twice, the statistics broadcast). */
static void test_batch_norm_keeps_input(void)
{
	struct ir_graph *g = parse("pcc-ir 1\n"
				   "input %0 \"x\" : f32[64,256]\n"
				   "param %1 \"gamma\" : f32[256] = external \"w\" offset 0 bytes 1024\n"
				   "%2 : f32[256] = reduce_sum %0 axes=[0]\n"
				   "%3 : f32[] = constant dtype=f32 shape=[] data=hex \"00008042\"\n"
				   "%4 : f32[256] = broadcast %3 shape=[256] axes=[]\n"
				   "%5 : f32[256] = div %2, %4\n"
				   "%6 : f32[64,256] = broadcast %5 shape=[64,256] axes=[1]\n"
				   "%7 : f32[64,256] = sub %0, %6\n"
				   "%8 : f32[64,256] = mul %7, %7\n"
				   "%9 : f32[256] = reduce_sum %8 axes=[0]\n"
				   "%10 : f32[256] = div %9, %4\n"
				   "%11 : f32[256] = rsqrt %10\n"
				   "%12 : f32[64,256] = sub %0, %6\n"
				   "%13 : f32[64,256] = broadcast %11 shape=[64,256] axes=[1]\n"
				   "%14 : f32[64,256] = mul %12, %13\n"
				   "%15 : f32[64,256] = broadcast %1 shape=[64,256] axes=[1]\n"
				   "%16 : f32[64,256] = mul %14, %15\n"
				   "output %16 \"y\"\n");
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x1:a100-80g", 1, 1, 1, true, &r) == 0, "(c) batch norm solves")) {
		ir_graph_free(g);
		return;
	}
	double state = 256 * 16.0, x = 64 * 256 * 2.0; /* bf16 activations, Adam state */
	double kept = r.mem_end - r.mem_out - state;
	TAP_OK(kept >= x && kept <= x + 4 * 256 * 2,
	       "(c) batch norm keeps its input and statistics (%.0f bytes; x is %.0f)", kept, x);
	TAP_NEAR(r.mem_out, x, 1e-12, "(d) the output nothing keeps is apart: mem_out %.0f bytes", r.mem_out);
	intra_result_free(&r);
	ir_graph_free(g);
}

/* (d): an input only an elementwise op reads can be split or replicated
 * at no cost in time; already on the devices, it takes the split. */
static void test_resident_input(void)
{
	struct ir_graph *g = parse("pcc-ir 1\n"
				   "input %0 \"x\" : f32[1024,1024]\n"
				   "param %1 \"b\" : f32[1024] = external \"w\" offset 0 bytes 4096\n"
				   "%2 : f32[1024,1024] = broadcast %1 shape=[1024,1024] axes=[1]\n"
				   "%3 : f32[1024,1024] = mul %0, %2\n"
				   "output %3 \"y\"\n");
	struct intra_result r;
	if (!g || !TAP_OK(solve(g, "1x8:v100", 1, 8, 1.0 / 8, true, &r) == 0, "(d) the scaling solves")) {
		ir_graph_free(g);
		return;
	}
	const struct ir_value *x = ir_graph_input(g, 0);
	char buf[IR_SHARDING_STR_MAX];
	ir_sharding_str(&x->sharding, 2, buf, sizeof buf);
	TAP_OK(strcmp(buf, "<R,R>") != 0, "(d) a resident input is split, not replicated (%s)", buf);
	intra_result_free(&r);
	ir_graph_free(g);
}

static void test_optimizer_time(void)
{
	struct cost_cluster c;
	struct cost_device d;
	struct cost_calib cal;
	struct cost_state_bytes sb;
	if (!TAP_OK(cost_cluster_parse("1x1:v100", &c) == 0, "(e) 1x1:v100 parses"))
		return;
	cost_cluster_effective(&c, &d, NULL, NULL, NULL);
	cost_calib_init(&cal);
	cost_state_bytes_per_param(COST_OPT_ADAM, true, &sb);
	double one = cost_optim_time(&d, &cal, &sb, true, 1e9), half = cost_optim_time(&d, &cal, &sb, true, 5e8);
	/* reads the gradient (2), reads and writes master weights and moments
	 * (2 x 12), writes the bf16 weights (2): 28 bytes per parameter */
	TAP_OK(one > 28e9 / d.mem_bw && one < 28e9 / d.mem_bw / 0.5,
	       "(e) Adam on 1e9 parameters: %.2f ms, 28 GB at the device's bandwidth", one * 1e3);
	TAP_NEAR(2 * half, one, 1e-12, "(e) linear in the parameters (per-tensor sums are the whole)");
	struct cost_state_bytes f32;
	cost_state_bytes_per_param(COST_OPT_ADAM, false, &f32);
	double full = cost_optim_time(&d, &cal, &f32, false, 1e9);
	TAP_NEAR(full, one, 1e-9,
		 "(e) fp32 Adam moves 28 bytes too: gradient 4, moments 2 x 8, weights read and written 2 x 4");
	TAP_OK(cost_optim_time(&d, &cal, &sb, true, 0) == 0, "(e) nothing to update costs nothing");
}

int main(void)
{
	test_transpose_folds();
	test_tied_weight_once();
	test_batch_norm_keeps_input();
	test_resident_input();
	test_optimizer_time();
	return tap_done();
}
