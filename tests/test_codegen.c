/*
 * test_codegen.c: generated kernels against the reference interpreter.
 *
 * For fixture models (inference and training plans), pcc compiles a plan;
 * every kernel with host code then runs, loaded from the plan's object as
 * pcc-run loads it, on random inputs, and must equal interp_kernel on the
 * same inputs:
 *   - bit for bit when the kernel uses only ops rounded in their own type
 *     or exact (+ - * /, sqrt, compares, data movement, conversions);
 *   - within 2 ulp per element when it calls the math library: the host
 *     calls libm in double as the interpreter does, but in vectorized
 *     loops libmvec's variants, within 4 ulp of double (glibc's bound) and
 *     so, rounded to f32, at most 1 ulp of f32 from libm's result rounded;
 *     the second ulp is margin for the f32 ops around the call (a 1-ulp
 *     change of an input to tanh or exp moves its f32 result by up to
 *     about 1 ulp too). exp, tanh and sigmoid with f32 results (and
 *     softmax's exp) are computed inline instead, within a few ulp of
 *     double as well: rounded to f32, exp and tanh equal libm's rounded
 *     for every f32 input (an exhaustive check when they were written);
 *   - within 1e-12 relative to the sum of magnitudes for reductions,
 *     softmax and layer norm (double accumulation, reassociated to
 *     vectorize; far below f32 rounding).
 * Kernels calling the math library or computing a softmax run again with
 * NaN, +-inf, -0 and values where exp and tanh saturate among the inputs:
 * NaN exactly where the interpreter has NaN, the rest as above.
 * Every PTX module must assemble with ptxas for its architecture, with no
 * spills (skipped where CUDA's ptxas is absent).
 * The GPT fixture also compiles for x86-64-v4 (AVX-512 libmvec variants)
 * where this CPU runs it. Last, interp_blas_init leaves OpenBLAS on a core
 * with AVX2 kernels on a CPU with AVX2 and FMA (unless OPENBLAS_CORETYPE
 * chose one), and calling it again changes nothing.

 * (pcc-run's own kernels for the ops without generated code are
 * test_host_ops.c's.)
 *
 * argv: pcc, models dir, train dir, ptxas (or "").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "compiler/codegen/codegen.h"
#include "compiler/compiler.h"
#include "ir/plan.h"
#include "runtime/hostcode.h"
#include "tests/rng.h"
#include "tests/tap.h"

/* Random inputs; with `special`, every 11th float element one of NaN,
 * +-inf, -0 and values whose exp or tanh saturates. */
static void fill(struct ir_tensor *t, enum ir_op root, bool special)
{
	static const double odd[] = { NAN, INFINITY, -INFINITY, -0.0, 40, -40, 120, -800, 1e-9 };
	int64_t n = ir_shape_numel(&t->shape);
	for (int64_t i = 0; i < n; i++) {
		double v = ir_dtype_is_float(t->dtype) ? 4 * urand() - 2
			   : t->dtype == IR_BOOL       ? (double)(urand() < 0.5)
						       : floor(8 * urand()) - (t->dtype == IR_U8 ? 0 : 4);
		if (special && ir_dtype_is_float(t->dtype) && i % 11 == 5)
			v = odd[(i / 11) % (sizeof odd / sizeof odd[0])];
		if (root == IR_OP_SCATTER || root == IR_OP_GATHER)
			v = 0;
		ir_tensor_set_f64(t, i, v);
	}
}

static bool libm_kernel(const struct plan_kernel *k)
{
	enum ir_op ops[] = { IR_OP_EXP,  IR_OP_LOG,  IR_OP_TANH,    IR_OP_ERF,     IR_OP_SIN,
			     IR_OP_COS,  IR_OP_TAN,  IR_OP_ASIN,    IR_OP_ACOS,    IR_OP_ATAN,
			     IR_OP_SINH, IR_OP_COSH, IR_OP_ASINH,   IR_OP_ACOSH,   IR_OP_ATANH,
			     IR_OP_REM,  IR_OP_POW,  IR_OP_SIGMOID, IR_OP_SOFTPLUS };
	for (int i = 0; i < (k->nbody ? k->nbody : 1); i++)
		for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++)
			if ((k->nbody ? k->body[i].op : k->op) == ops[j])
				return true;
	return false;
}

static bool has_op(const struct plan_kernel *k, enum ir_op op)
{
	for (int i = 0; i < (k->nbody ? k->nbody : 1); i++)
		if ((k->nbody ? k->body[i].op : k->op) == op)
			return true;
	return false;
}

static bool reducing(const struct plan_kernel *k)
{
	for (int i = 0; i < (k->nbody ? k->nbody : 1); i++) {
		enum ir_op op = k->nbody ? k->body[i].op : k->op;
		if (op == IR_OP_REDUCE_SUM || op == IR_OP_REDUCE_PROD || op == IR_OP_REDUCE_MAX ||
		    op == IR_OP_REDUCE_MIN || op == IR_OP_SOFTMAX || op == IR_OP_LAYER_NORM)
			return true;
	}
	return false;
}

static int64_t ulps(float a, float b)
{
	int32_t x, y;
	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	if (x < 0)
		x = INT32_MIN - x;
	if (y < 0)
		y = INT32_MIN - y;
	return llabs((int64_t)x - (int64_t)y);
}

/* Into out: the result of fused kernel k's library core (its first op) on
 * k's operands in[], as the interpreter computes it. */
static bool core_result(const struct plan_kernel *k, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct plan_fop *f = &k->body[0];
	enum ir_dtype dt[PLAN_FOP_MAX_IN + 1];
	struct ir_shape sh[PLAN_FOP_MAX_IN + 1];
	struct ir_tensor cin[PLAN_FOP_MAX_IN], r;
	for (int j = 0; j < f->nin; j++) {
		cin[j] = in[f->in[j]];
		dt[j] = cin[j].dtype;
		sh[j] = cin[j].shape;
	}
	dt[f->nin] = f->dtype;
	sh[f->nin] = f->shape;
	struct plan_kernel c = { .op = f->op, .a = f->a, .nin = f->nin, .nout = 1, .dtype = dt, .shape = sh };
	if (interp_kernel(&c, cin, &r) < 0)
		return false;
	memcpy(out->data, r.data, ir_tensor_bytes(&r));
	ir_tensor_free(&r);
	return true;
}

/* Kernel k's host code against the interpreter: the worst element (the
 * scale of the reduction tolerance: the largest finite input). */
static bool check_kernel(const struct plan *p, int kid, void (*fn)(void **, int64_t, int64_t), bool special, char *why,
			 size_t nwhy)
{
	const struct plan_kernel *k = &p->kernels[kid];
	struct ir_tensor in[64], refs[2] = { { 0 } }, got, got2 = { 0 }, *ref = &refs[0];
	void *args[66];
	bool ok = true;
	for (int j = 0; j < k->nin; j++) {
		ir_tensor_alloc(&in[j], k->dtype[j], &k->shape[j]);
		fill(&in[j], k->op, special);
		args[j] = in[j].data;
	}
	if ((k->op == IR_OP_GATHER || k->op == IR_OP_SCATTER) && !k->nbody) {
		/* data, and indices in range, negative ones and repeats too */
		int64_t A = k->shape[0].dims[k->op == IR_OP_GATHER ? k->a.axis : 0];
		for (int64_t i = 0; k->nin > 2 && i < ir_shape_numel(&in[2].shape); i++)
			ir_tensor_set_f64(&in[2], i, 4 * urand() - 2);
		for (int64_t i = 0; i < ir_shape_numel(&in[0].shape); i++)
			ir_tensor_set_f64(&in[0], i, 4 * urand() - 2);
		for (int64_t i = 0; i < ir_shape_numel(&in[1].shape); i++)
			ir_tensor_set_f64(&in[1], i, floor(2 * A * urand()) - (double)A);
	}
	if (k->op == IR_OP_TOPK && !k->nbody) /* ties, which go to the lower index */
		for (int64_t i = 0; i < ir_shape_numel(&in[0].shape); i++)
			ir_tensor_set_f64(&in[0], i, floor(8 * urand()) / 2 - 2);
	ir_tensor_alloc(&got, k->dtype[k->nin], &k->shape[k->nin]);
	args[k->nin] = got.data;
	if (k->nout == 2) { /* top-k's indices */
		ir_tensor_alloc(&got2, k->dtype[k->nin + 1], &k->shape[k->nin + 1]);
		args[k->nin + 1] = got2.data;
	}
	if (k->nbody > 1 && plan_kernel_core(k) != IR_OP_COUNT) {
		/* an epilogue: it runs in place on its library call's result */
		args[k->nin + 1] = got.data;
		if (!core_result(k, in, &got)) {
			snprintf(why, nwhy, "its core, in the interpreter: %s", ir_error());
			ok = false;
		}
	}
	fn(args, 0, k->rows);
	if (interp_kernel(k, in, refs) < 0) {
		snprintf(why, nwhy, "interpreter: %s", ir_error());
		ok = false;
	}
	int64_t n = ir_shape_numel(&got.shape);
	double scale = 0;
	for (int j = 0; ok && j < k->nin; j++)
		for (int64_t i = 0; i < ir_shape_numel(&in[j].shape); i++)
			if (isfinite(ir_tensor_get_f64(&in[j], i)))
				scale = fmax(scale, fabs(ir_tensor_get_f64(&in[j], i)));
	for (int64_t i = 0; ok && i < n; i++) {
		double a = ir_tensor_get_f64(&got, i), b = ir_tensor_get_f64(ref, i);
		if ((a != a) && (b != b))
			continue;
		bool same = a == b;
		if (!same && (k->op == IR_OP_CONV || k->op == IR_OP_DOT) && !k->nbody) {
			/* the interpreter's sgemm sums in another order, in f32 */
			int64_t ck = 1;
			if (k->op == IR_OP_CONV)
				ck = ir_shape_numel(&k->shape[1]) / k->shape[1].dims[0];
			for (int j = 0; k->op == IR_OP_DOT && j < k->a.lhs_contract.n; j++)
				ck *= k->shape[0].dims[k->a.lhs_contract.v[j]];
			same = fabs(a - b) <= 1e-6 * (double)ck * fmax(1.0, scale * scale) ||
			       (k->dtype[k->nin] == IR_BF16 && fabs(a - b) <= fabs(b) / 128);
		}
		if (!same && reducing(k))
			same = fabs(a - b) <= 1e-12 * fmax(1.0, scale) * (double)ir_shape_numel(&k->shape[0]) ||
			       (k->dtype[k->nin] == IR_F32 && ulps((float)a, (float)b) <= 2);
		else if (!same && libm_kernel(k) && k->dtype[k->nin] == IR_F32)
			same = ulps((float)a, (float)b) <= 2;
		if (!same) {
			snprintf(why, nwhy, "element %lld: %.9g, the interpreter %.9g", (long long)i, a, b);
			ok = false;
		}
	}
	for (int64_t i = 0; ok && k->nout == 2 && i < ir_shape_numel(&got2.shape); i++)
		if (ir_tensor_get_f64(&got2, i) != ir_tensor_get_f64(&refs[1], i)) {
			snprintf(why, nwhy, "second result, element %lld: %g, the interpreter %g", (long long)i,
				 ir_tensor_get_f64(&got2, i), ir_tensor_get_f64(&refs[1], i));
			ok = false;
		}
	for (int j = 0; j < k->nin; j++)
		ir_tensor_free(&in[j]);
	ir_tensor_free(&got);
	if (got2.data)
		ir_tensor_free(&got2);
	for (int j = 0; j < 2; j++)
		if (refs[j].data)
			ir_tensor_free(&refs[j]);
	return ok;
}

char *openblas_get_corename(void) __attribute__((weak));

static void check_blas(void)
{
	if (!openblas_get_corename) {
		TAP_DIAG("the BLAS is not OpenBLAS: no core to check");
		return;
	}
	__builtin_cpu_init();
	bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	interp_blas_init();
	char first[32];
	snprintf(first, sizeof first, "%s", openblas_get_corename());
	interp_blas_init();
	TAP_OK(!strcmp(first, openblas_get_corename()), "OpenBLAS core %s, the same after a second init", first);
	if (getenv("OPENBLAS_CORETYPE") || !avx2) {
		TAP_DIAG("OPENBLAS_CORETYPE set or no AVX2: the detected core stays");
		return;
	}
	static const char *const old[] = {
		"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Sandybridge"
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
		ok &= strcasecmp(first, old[i]) != 0;
	TAP_OK(ok, "OpenBLAS runs AVX2 kernels or better on this AVX2 CPU (core %s)", first);
}

static void check_plan(const char *pcc, const char *model, const char *opts, const char *ptxas, const char *tag)
{
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-%s.bin", (int)getpid(), tag);
	snprintf(cmd, sizeof cmd, "'%s' '%s' %s --codegen all -o '%s' >/dev/null", pcc, model, opts, plan);
	if (!TAP_OK(system(cmd) == 0, "%s: pcc compiles (%s)", tag, opts))
		return;
	struct plan *p = plan_read(plan);
	if (!TAP_OK(p && p->host_object_len > 0, "%s: the plan has host code", tag)) {
		plan_free(p);
		return;
	}
	struct hostcode *hc = NULL;
	TAP_OK(hostcode_load(p->host_object, p->host_object_len, &hc) == 0, "%s: its object loads", tag);
	int nhost = 0, nfused = 0, bad = 0, exact = 0, nodd = 0;
	char why[512] = "", first[600] = "";
	for (int kid = 0; hc && kid < p->nkernels; kid++) {
		const struct plan_kernel *k = &p->kernels[kid];
		nfused += k->nbody > 0;
		if (!k->host)
			continue;
		char name[32];
		snprintf(name, sizeof name, "pcc_k%d", kid);
		void *sym = hostcode_sym(hc, name);
		void (*fn)(void **, int64_t, int64_t);
		if (!sym) {
			bad++;
			continue;
		}
		memcpy(&fn, &sym, sizeof sym);
		nhost++;
		exact += !reducing(k) && !libm_kernel(k);
		/* the math computed inline, and softmax, again with NaN and inf */
		bool odd = libm_kernel(k) || has_op(k, IR_OP_SOFTMAX);
		nodd += odd;
		for (int special = 0; special <= odd; special++) {
			if (check_kernel(p, kid, fn, special, why, sizeof why) || bad++)
				continue;
			snprintf(first, sizeof first, "kernel %d (%s%s)%s: %s", kid, k->nbody ? "fused, root " : "",
				 ir_op_name(k->op), special ? " with NaN and inf inputs" : "", why);
		}
	}
	TAP_OK(nhost > 0 && bad == 0,
	       "%s: %d host kernels (%d fused in the plan, %d compared bit for bit, %d also on "
	       "NaN and inf) equal the interpreter%s%s",
	       tag, nhost, nfused, exact, nodd, bad ? "; " : "", first);
	if (hc)
		hostcode_free(hc);
	for (int a = 0; a < p->nptx; a++) {
		char ptx[300], log[300];
		if (!*ptxas) {
			printf("ok %d - # SKIP %s: no ptxas to assemble %s\n", ++tap_n, tag, p->ptx[a].arch);
			continue;
		}
		snprintf(ptx, sizeof ptx, "%s.%s.ptx", plan, p->ptx[a].arch);
		snprintf(log, sizeof log, "%s.%s.log", plan, p->ptx[a].arch);
		FILE *f = fopen(ptx, "w");
		fputs(p->ptx[a].text, f);
		fclose(f);
		snprintf(cmd, sizeof cmd, "'%s' -arch=%s -v -o /dev/null '%s' >'%s' 2>&1", ptxas, p->ptx[a].arch, ptx,
			 log);
		int rc = system(cmd);
		snprintf(cmd, sizeof cmd,
			 "grep -q 'bytes spill' '%s' && ! grep 'bytes spill' '%s' | grep -vq "
			 "'0 bytes spill stores, 0 bytes spill loads'",
			 log, log);
		TAP_OK(rc == 0 && system(cmd) == 0, "%s: PTX for %s assembles with ptxas, no kernel spills", tag,
		       p->ptx[a].arch);
		if (rc)
			system((snprintf(cmd, sizeof cmd, "head -5 '%s' | sed 's/^/# /'", log), cmd));
		unlink(ptx);
		unlink(log);
	}
	unlink(plan);
	plan_free(p);
}

/* check_plan of training fixture `name` (its loss: `model` for the
 * model's own) on cpu:2, in precision prec (NULL: f32). */
static void check_train(const char *pcc, const char *train, const char *name, const char *loss, const char *prec,
			const char *ptxas)
{
	char model[4096], tag[64], opts[256];
	bool own = !strcmp(loss, "model");
	snprintf(model, sizeof model, "%s/%s/model.onnx", train, name);
	snprintf(tag, sizeof tag, "%s-train%s%s", name, prec ? "-" : "", prec ? prec : "");
	snprintf(opts, sizeof opts, "--cluster cpu:2 --train%s%s --optimizer adamw --lr 0.01%s%s",
		 own ? "" : " --loss ", own ? "" : loss, prec ? " --precision " : "", prec ? prec : "");
	check_plan(pcc, model, opts, ptxas, tag);
}

/* The kernels only GPUs compile (pads, concats, gathers on their own:
 * cg_kernel_compiles_gpu; scatters too), compiled for this host from the same
 * description (codegen_opts.host_as_gpu) and run against the interpreter
 * bit for bit: the PTX's logic, checked where no GPU runs it. */
static void check_gpu_only(const char *pcc, const char *model, const char *opts, const char *tag)
{
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-%s-gpu.bin", (int)getpid(), tag);
	snprintf(cmd, sizeof cmd, "'%s' '%s' %s --codegen all -o '%s' >/dev/null", pcc, model, opts, plan);
	struct plan *p = system(cmd) == 0 ? plan_read(plan) : NULL;
	unlink(plan);
	struct codegen_opts o;
	codegen_opts_init(&o);
	o.ptx = false;
	o.host_as_gpu = true;
	struct hostcode *hc = NULL;
	if (!TAP_OK(p && codegen_plan(p, &o) == 0 && hostcode_load(p->host_object, p->host_object_len, &hc) == 0,
		    "%s: compiles with the GPU's kernels as host code (%s)", tag, opts)) {
		plan_free(p);
		return;
	}
	int n = 0, bad = 0, per[7] = { 0 };
	char why[512] = "", first[600] = "";
	for (int kid = 0; kid < p->nkernels; kid++) {
		const struct plan_kernel *k = &p->kernels[kid];
		int core;
		if (!k->host || cg_kernel_compiles(k, &core))
			continue;
		char name[32];
		snprintf(name, sizeof name, "pcc_k%d", kid);
		void *sym = hostcode_sym(hc, name);
		void (*fn)(void **, int64_t, int64_t);
		memcpy(&fn, &sym, sizeof sym);
		n++;
		per[k->op == IR_OP_PAD                             ? 0
		    : k->op == IR_OP_CONCAT                        ? 1
		    : k->op == IR_OP_GATHER                        ? 2
		    : k->op == IR_OP_SCATTER                       ? 3
		    : k->op == IR_OP_TOPK || k->op == IR_OP_CUMSUM ? 5
		    : k->op == IR_OP_DOT                           ? 6
								   : 4]++;
		if (sym && check_kernel(p, kid, fn, false, why, sizeof why))
			continue;
		if (!bad++)
			snprintf(first, sizeof first, "kernel %d (%s): %s", kid, ir_op_name(k->op),
				 sym ? why : "no symbol");
	}
	TAP_OK(n > 0 && bad == 0,
	       "%s: %d GPU-only kernels (%d pads, %d concats, %d gathers, %d scatters, %d convolutions and windows, "
	       "%d top-k and cumsums, %d dots) equal the interpreter%s%s",
	       tag, n, per[0], per[1], per[2], per[3], per[4], per[5], per[6], bad ? "; " : "", first);
	hostcode_free(hc);
	plan_free(p);
}

/* Reductions with few results over many elements (reduce_big.onnx: a
 * squared norm, 4 row sums of 16384, a maximum) reduce across the GPU's
 * whole grid: each is such a kernel, its PTX folds blocks' partials
 * (a fence, an atomic count, block barriers) and assembles; the host code
 * equals the interpreter (check_plan). The grid's arithmetic itself needs a
 * GPU: scripts/gpu-bundle's training checks compare its gradient norms. */
static void check_grid(const char *pcc, const char *model, const char *ptxas)
{
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-grid.bin", (int)getpid());
	snprintf(cmd, sizeof cmd, "'%s' '%s' --cluster 1x1:h100 --codegen ptx -o '%s' >/dev/null", pcc, model, plan);
	struct plan *p = system(cmd) == 0 ? plan_read(plan) : NULL;
	int64_t per[3] = { 0 };
	int n = 0;
	for (int k = 0; p && k < p->nkernels; k++)
		if (cg_kernel_grid_reduce(&p->kernels[k]) > 0 && n < 3)
			per[n++] = cg_kernel_grid_reduce(&p->kernels[k]);
	TAP_OK(n == 3 && per[0] + per[1] + per[2] == 2 * 65536 + 16384,
	       "reduce_big: its 3 reductions reduce across the grid (%d found: %lld, %lld, %lld elements a result)", n,
	       (long long)per[0], (long long)per[1], (long long)per[2]);
	bool folds = p && p->nptx > 0;
	for (int a = 0; p && a < p->nptx; a++)
		folds = folds && strstr(p->ptx[a].text, "membar.gl") && strstr(p->ptx[a].text, "atom.global.add") &&
			strstr(p->ptx[a].text, "bar.sync") && strstr(p->ptx[a].text, ".shared");
	TAP_OK(folds,
	       "reduce_big: the PTX folds the blocks' partials (membar.gl, atom.global.add, bar.sync, shared memory)");
	plan_free(p);
	unlink(plan);
	check_plan(pcc, model, "--cluster 1x1:h100", ptxas, "reduce_big");
}

/* Host code for a CPU without F16C (x86-64-v2): LLVM would convert f16
 * by calls to compiler-rt, which a plan's object cannot make, so kernels
 * reading or writing f16 stay with the reference kernels there, and the
 * others have host code as before. */
static void check_f16_v2(const char *pcc, const char *model)
{
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-f16v2.bin", (int)getpid());
	snprintf(cmd, sizeof cmd,
		 "'%s' '%s' --cluster cpu:1 --train --loss cross_entropy:logits,labels --precision f16 "
		 "--host-cpu x86-64-v2 --codegen host -o '%s' >/dev/null 2>&1",
		 pcc, model, plan);
	struct plan *p = system(cmd) == 0 ? plan_read(plan) : NULL;
	unlink(plan);
	int f16 = 0, f16_host = 0, other_host = 0;
	for (int k = 0; p && k < p->nkernels; k++) {
		const struct plan_kernel *x = &p->kernels[k];
		bool uses = false;
		for (int i = 0; i < x->nin + x->nout; i++)
			uses |= x->dtype[i] == IR_F16;
		for (int i = 0; i < x->nbody; i++)
			uses |= x->body[i].dtype == IR_F16;
		f16 += uses;
		f16_host += uses && x->host;
		other_host += !uses && x->host;
	}
	TAP_OK(p && f16 > 0 && f16_host == 0 && other_host > 0,
	       "f16 for x86-64-v2 (no F16C): %d kernels use f16, %d of them with host code (0), %d others with host "
	       "code",
	       f16, f16_host, other_host);
	plan_free(p);
}

/* Slices equal but for their start (each device of a tensor-parallel
 * stage taking its own piece) share one body: a GPT training step on a
 * 2x2 mesh has such kinds; each kind's body is in the PTX once (the
 * kinds counted here from the plan's kernels, independently of codegen),
 * and every such kernel's host function equals the interpreter on its own
 * start (check_plan, which also assembles the PTX). */
static bool slice_kind(const struct plan_kernel *a, const struct plan_kernel *b)
{
	return a->dtype[0] == b->dtype[0] && a->dtype[1] == b->dtype[1] && ir_shape_eq(&a->shape[0], &b->shape[0]) &&
	       ir_shape_eq(&a->shape[1], &b->shape[1]) && a->a.stride.n == b->a.stride.n &&
	       !memcmp(a->a.stride.v, b->a.stride.v, sizeof a->a.stride.v[0] * (size_t)a->a.stride.n);
}

static void check_twins(const char *pcc, const char *model, const char *ptxas)
{
	const char *opts =
		"--cluster 1x4:h100 --mesh 2x2 --memory-limit 50K --train --loss cross_entropy:logits,labels "
		"--optimizer adamw";
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-twins.bin", (int)getpid());
	snprintf(cmd, sizeof cmd, "'%s' '%s' %s --codegen all -o '%s' >/dev/null 2>&1", pcc, model, opts, plan);
	struct plan *p = system(cmd) == 0 ? plan_read(plan) : NULL;
	unlink(plan);
	if (!TAP_OK(p != NULL, "twins: pcc compiles gpt's training step on a 2x2 mesh")) {
		plan_free(p);
		return;
	}
	int kinds = 0, twins = 0, bodies = 0;
	for (int k = 0; k < p->nkernels; k++) {
		const struct plan_kernel *a = &p->kernels[k];
		if (a->op != IR_OP_SLICE || a->nbody || !a->gpu)
			continue;
		int n = 0, first = k;
		for (int j = 0; j < p->nkernels; j++) {
			const struct plan_kernel *b = &p->kernels[j];
			if (b->op == IR_OP_SLICE && !b->nbody && b->gpu && slice_kind(a, b)) {
				n++;
				first = j < first ? j : first;
			}
		}
		twins += n > 1;
		kinds += n > 1 && first == k;
	}
	for (int m = 0; m < p->nptx; m++)
		for (const char *t = p->ptx[m].text; (t = strstr(t, ".func pcc_s")); t++)
			bodies++;
	TAP_OK(kinds > 0 && bodies == kinds * (p->nptx > 0),
	       "twins: %d slices of %d kinds equal but for their start; %d shared bodies in the PTX (one a kind)",
	       twins, kinds, bodies);
	plan_free(p);
	check_plan(pcc, model, opts, ptxas, "twins");
}

/* A module's PTX depends on its kernels alone: NVPTX numbers call sites
 * ("// callseq N") from one counter per process, which codegen renumbers
 * per module. So compiling one plan twice in this process (the counter
 * running on) gives the same text as pcc's own compile, call sites
 * included (gpt_loss's GELU calls libdevice's pow). */
static void check_callsites(const char *pcc, const char *model)
{
	char cmd[8192], plan[256];
	snprintf(plan, sizeof plan, "/tmp/pcc-codegen-%d-calls.bin", (int)getpid());
	snprintf(cmd, sizeof cmd, "'%s' '%s' --cluster 1x1:h100 --train --codegen ptx -o '%s' >/dev/null 2>&1", pcc,
		 model, plan);
	struct plan *p0 = system(cmd) == 0 ? plan_read(plan) : NULL;
	struct plan *p[2] = { plan_read(plan), plan_read(plan) };
	unlink(plan);
	struct codegen_opts o;
	codegen_opts_init(&o);
	o.sm = 90; /* as pcc for an h100 cluster */
	bool same = p0 && p[0] && p[1], calls = false;
	for (int i = 0; i < 2 && same; i++)
		same = codegen_plan(p[i], &o) == 0 && p[i]->nptx == p0->nptx;
	for (int a = 0; p0 && a < p0->nptx; a++) {
		calls |= strstr(p0->ptx[a].text, "// callseq 0, 0") != NULL;
		same = same && !strcmp(p[0]->ptx[a].text, p0->ptx[a].text) &&
		       !strcmp(p[1]->ptx[a].text, p0->ptx[a].text);
	}
	if (p0 && !calls)
		printf("ok %d - # SKIP no libdevice call in gpt_loss's PTX (libdevice not found)\n", ++tap_n);
	else
		TAP_OK(same,
		       "gpt_loss: its PTX, call sites numbered from 0 in each module, is the same compiled 3 times");
	plan_free(p0);
	plan_free(p[0]);
	plan_free(p[1]);
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: test_codegen PCC MODELS TRAIN PTXAS REDUCE_BIG\n");
		return 2;
	}
	const char *pcc = argv[1], *models = argv[2], *train = argv[3], *ptxas = argv[4];
	static const char *const inf[] = { "gpt_op17", "bert_op17",   "mlp_op17", "moe_op17",
					   "vit_op17", "resnet_op17", "unet_op17" };
	static const char *const tr[] = { "gpt", "bert", "mlp_loss", "moe", "vit", "resnet_train" };
	static const char *const loss[] = {
		"cross_entropy:logits,labels", "mse:pooled,target",          "model", "mse:y,target",
		"cross_entropy:logits,labels", "cross_entropy:logits,labels"
	};
	char model[4096], tag[64];
	for (size_t i = 0; i < sizeof inf / sizeof inf[0]; i++) {
		snprintf(model, sizeof model, "%s/%s/model.onnx", models, inf[i]);
		snprintf(tag, sizeof tag, "%s", inf[i]);
		check_plan(pcc, model, "--cluster cpu:1", ptxas, tag);
	}
	if (hostcode_check_cpu("+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq", "x86-64-v4") == 0) {
		snprintf(model, sizeof model, "%s/gpt_op17/model.onnx", models);
		check_plan(pcc, model, "--cluster cpu:1 --host-cpu x86-64-v4", ptxas, "gpt_op17-v4");
	}
	for (size_t i = 0; i < sizeof tr / sizeof tr[0]; i++)
		check_train(pcc, train, tr[i], loss[i], NULL, ptxas);
	snprintf(model, sizeof model, "%s/unet_op17/model.onnx", models);
	check_gpu_only(pcc, model, "--cluster 1x1:h100", "unet_op17");
	snprintf(model, sizeof model, "%s/vit_op17/model.onnx", models);
	check_gpu_only(pcc, model, "--cluster 1x1:h100", "vit_op17");
	snprintf(model, sizeof model, "%s/gpt/model.onnx", train);
	check_gpu_only(pcc, model, "--cluster 1x1:h100 --train --loss cross_entropy:logits,labels --optimizer adamw",
		       "gpt-train");
	snprintf(model, sizeof model, "%s/resnet_train/model.onnx", train);
	check_gpu_only(pcc, model, "--cluster 1x1:h100 --train --loss cross_entropy:logits,labels --optimizer adamw",
		       "resnet-train");
	snprintf(model, sizeof model, "%s/moe/model.onnx", train);
	check_gpu_only(pcc, model, "--cluster 1x1:h100 --train --loss mse:y,target --optimizer adamw", "moe-train");
	snprintf(model, sizeof model, "%s/resnet_train/model.onnx", train);
	check_gpu_only(
		pcc, model,
		"--cluster 1x1:h100 --train --loss cross_entropy:logits,labels --optimizer adamw --precision f32",
		"resnet-train-f32");
	/* bf16 mixed precision (a GPU cluster's default): bf16 kernels */
	for (size_t i = 0; i < sizeof tr / sizeof tr[0]; i += 2)
		check_train(pcc, train, tr[i], loss[i], "bf16", ptxas);
	/* f16 (V100s' training precision): converted through half, on this
	 * host by F16C, the kernels equal the interpreter */
	for (size_t i = 0; i < 2; i++)
		check_train(pcc, train, tr[i], loss[i], "f16", ptxas);
	snprintf(model, sizeof model, "%s/gpt/model.onnx", train);
	check_f16_v2(pcc, model);
	check_grid(pcc, argv[5], ptxas);
	snprintf(model, sizeof model, "%s/gpt_loss_op17/model.onnx", models);
	check_callsites(pcc, model);
	snprintf(model, sizeof model, "%s/gpt/model.onnx", train);
	check_twins(pcc, model, ptxas);
	check_blas();
	return tap_done();
}
