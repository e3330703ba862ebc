/*
 * codegen_expr.c: the value of a kernel's op at one index, as LLVM IR
 * (codegen_internal.h). Elementwise ops apply to their operands at the
 * same index; data movement maps the index to its operand's; constants
 * and iota are computed in place; the core op's value comes from the loop
 * around it (codegen.c). Values are recomputed per use: LLVM's CSE merges
 * equal ones, and only what the group needs is ever built.
 *
 * Rounding follows the interpreter (interp.c): +, -, *, /, sqrt, floor,
 * ceil, round, abs and neg in the result's own float type (the same as
 * rounding the double result once), the rest in double, rounded once.
 * On the host, exp, tanh and sigmoid with f32 results (and softmax's exp)
 * compute exp and tanh inline (exp_poly, tanh_poly) rather than call
 * libm: loops then vectorize with no calls, and rounded to f32 the two
 * agree with libm's double exp and tanh rounded for every f32 input (a C
 * copy of exp_poly and tanh_poly checked over all 2^32 when written).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/codegen/codegen_internal.h"

enum ir_dtype cg_dtype(const struct cg *c, int v)
{
	return v < c->k->nin ? c->k->dtype[v] : c->k->body[v - c->k->nin].dtype;
}

const struct ir_shape *cg_shape(const struct cg *c, int v)
{
	return v < c->k->nin ? &c->k->shape[v] : &c->k->body[v - c->k->nin].shape;
}

LLVMTypeRef cg_type(const struct cg *c, enum ir_dtype t)
{
	switch (t) {
	case IR_F64:
		return c->f64;
	case IR_F32:
	case IR_BF16: /* held as f32 with bf16's precision, stored as its top 16 bits */
	case IR_F16:  /* held as f32 with f16's precision and range, stored as half */
		return c->f32;
	case IR_I64:
		return c->i64;
	case IR_I32:
		return c->i32;
	case IR_I8:
	case IR_U8:
	case IR_BOOL:
		return c->i8;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"dtype codegen does not handle");
	return NULL;
}

static bool is_unsigned(enum ir_dtype t)
{
	return t == IR_U8 || t == IR_BOOL;
}

/* The bits of f32 x rounded to bf16 (to nearest, ties to even; NaN stays
 * NaN, made quiet), as ir_f32_to_bf16, in the top 16 bits of an i32. */
static LLVMValueRef bf16_bits(struct cg *c, LLVMValueRef x)
{
	LLVMValueRef bits = LLVMBuildBitCast(c->b, x, c->i32, "");
	LLVMValueRef lsb = LLVMBuildAnd(c->b, LLVMBuildLShr(c->b, bits, LLVMConstInt(c->i32, 16, 0), ""),
					LLVMConstInt(c->i32, 1, 0), "");
	LLVMValueRef r = LLVMBuildAdd(c->b, bits, LLVMBuildAdd(c->b, lsb, LLVMConstInt(c->i32, 0x7fff, 0), ""), "");
	LLVMValueRef nan = LLVMBuildOr(c->b, bits, LLVMConstInt(c->i32, 0x400000, 0), "");
	r = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""), nan, r, "");
	return LLVMBuildAnd(c->b, r, LLVMConstInt(c->i32, 0xffff0000u, 0), "");
}

LLVMValueRef cg_round_bf16(struct cg *c, LLVMValueRef x)
{
	return LLVMBuildBitCast(c->b, bf16_bits(c, x), c->f32, "");
}

/* f32 x rounded to f16 (to nearest, ties to even; past 65504 infinity)
 * and back: the value the interpreter stores. */
static LLVMValueRef round_f16(struct cg *c, LLVMValueRef x)
{
	LLVMTypeRef half = LLVMHalfTypeInContext(c->ctx);
	return LLVMBuildFPExt(c->b, LLVMBuildFPTrunc(c->b, x, half, ""), c->f32, "");
}

LLVMValueRef cg_round(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	return t == IR_BF16 ? cg_round_bf16(c, x) : t == IR_F16 ? round_f16(c, x) : x;
}

/* f64 x to f32 rounding to odd (toward zero, then the last bit set when
 * inexact), as the interpreter narrows a double it stores in 16 bits, so
 * that rounding that to f16 is rounding x once. */
static LLVMValueRef f32_odd(struct cg *c, LLVMValueRef x)
{
	LLVMValueRef f = LLVMBuildFPTrunc(c->b, x, c->f32, ""), back = LLVMBuildFPExt(c->b, f, c->f64, "");
	LLVMValueRef bits = LLVMBuildBitCast(c->b, f, c->i32, "");
	LLVMValueRef fabs = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID("llvm.fabs", 9), &c->f64, 1);
	LLVMTypeRef ft = LLVMGlobalGetValueType(fabs);
	LLVMValueRef ab = LLVMBuildCall2(c->b, ft, fabs, &back, 1, ""), ax = LLVMBuildCall2(c->b, ft, fabs, &x, 1, "");
	LLVMValueRef away = LLVMBuildFCmp(c->b, LLVMRealOGT, ab, ax, "");
	LLVMValueRef in = LLVMBuildSelect(c->b, away, LLVMBuildSub(c->b, bits, LLVMConstInt(c->i32, 1, 0), ""), bits,
					  "");
	LLVMValueRef inexact = LLVMBuildFCmp(c->b, LLVMRealONE, back, x, "");
	in = LLVMBuildSelect(c->b, inexact, LLVMBuildOr(c->b, in, LLVMConstInt(c->i32, 1, 0), ""), bits, "");
	return LLVMBuildBitCast(c->b, in, c->f32, "");
}

LLVMValueRef cg_to_f64(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	if (t == IR_F64)
		return x;
	if (t == IR_F32 || t == IR_BF16 || t == IR_F16)
		return LLVMBuildFPExt(c->b, x, c->f64, "");
	return is_unsigned(t) ? LLVMBuildUIToFP(c->b, x, c->f64, "") : LLVMBuildSIToFP(c->b, x, c->f64, "");
}

LLVMValueRef cg_to_i64(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	if (ir_dtype_is_float(t)) {
		/* toward zero, NaN 0, clamped to the int64 range: fptosi.sat */
		LLVMTypeRef ty[2] = { c->i64, c->f64 };
		LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID("llvm.fptosi.sat", 15), ty,
							     2);
		LLVMValueRef a = cg_to_f64(c, x, t);
		return LLVMBuildCall2(c->b, LLVMGlobalGetValueType(f), f, &a, 1, "");
	}
	if (t == IR_I64)
		return x;
	return is_unsigned(t) ? LLVMBuildZExt(c->b, x, c->i64, "") : LLVMBuildSExt(c->b, x, c->i64, "");
}

LLVMValueRef cg_from_f64(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	if (t == IR_F64)
		return x;
	if (t == IR_F32)
		return LLVMBuildFPTrunc(c->b, x, c->f32, "");
	if (t == IR_BF16) /* double -> float -> bf16, as the interpreter stores it */
		return cg_round_bf16(c, LLVMBuildFPTrunc(c->b, x, c->f32, ""));
	if (t == IR_F16) /* double -> float (to odd) -> f16, as the interpreter stores it */
		return round_f16(c, f32_odd(c, x));
	if (t == IR_BOOL)
		return LLVMBuildZExt(c->b, LLVMBuildFCmp(c->b, LLVMRealUNE, x, LLVMConstReal(c->f64, 0), ""), c->i8,
				     "");
	return cg_from_i64(c, cg_to_i64(c, x, IR_F64), t);
}

LLVMValueRef cg_from_i64(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	if (ir_dtype_is_float(t)) /* through double, as the interpreter */
		return cg_from_f64(c, LLVMBuildSIToFP(c->b, x, c->f64, ""), t);
	if (t == IR_BOOL)
		return LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntNE, x, cg_i64c(c, 0), ""), c->i8, "");
	return t == IR_I64 ? x : LLVMBuildTrunc(c->b, x, cg_type(c, t), "");
}

/* ---- math ------------------------------------------------------------- */

static LLVMValueRef intrinsic(struct cg *c, const char *name, LLVMTypeRef t, int nargs, LLVMValueRef *args)
{
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID(name, strlen(name)), &t, 1);
	return LLVMBuildCall2(c->b, LLVMGlobalGetValueType(f), f, args, (unsigned)nargs, "");
}

/* libmvec's double functions (glibc 2.22 for exp, log, sin, cos and pow,
 * 2.35 for the rest). */
static const char *const mvec_fns[] = { "exp",  "log",  "sin",  "cos",  "pow",  "tanh",  "erf",   "tan",
					"asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh" };

/* Tells the loop vectorizer that call (to name, n double arguments) has
 * libmvec's vector variants: the "vector-function-abi-variant" attribute
 * (the vector function ABI's mangled names), each variant declared. */
static void mvec_variants(struct cg *c, LLVMValueRef call, const char *name, int n)
{
	char attr[512];
	size_t len = 0;
	for (const char *v = c->mvec; v[0] && v[1]; v += 2) {
		char vname[48];
		int lanes = v[1] - '0';
		snprintf(vname, sizeof vname, "_ZGV%cN%d%s_%s", v[0], lanes, n == 2 ? "vv" : "v", name);
		if (!LLVMGetNamedFunction(c->mod, vname)) {
			LLVMTypeRef vt = LLVMVectorType(c->f64, (unsigned)lanes), pt[2] = { vt, vt };
			LLVMValueRef f = LLVMAddFunction(c->mod, vname, LLVMFunctionType(vt, pt, (unsigned)n, 0));
			unsigned kind = LLVMGetEnumAttributeKindForName("nounwind", 8);
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
						LLVMCreateEnumAttribute(c->ctx, kind, 0));
			IR_ASSERT(c->nmvec_used < (int)(sizeof c->mvec_used / sizeof c->mvec_used[0]));
			c->mvec_used[c->nmvec_used++] = f;
		}
		len += (size_t)snprintf(attr + len, sizeof attr - len, "%s%s(%s)", len ? "," : "", vname, vname);
	}
	const char *key = "vector-function-abi-variant";
	LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
				 LLVMCreateStringAttribute(c->ctx, key, (unsigned)strlen(key), attr, (unsigned)len));
}

void cg_mvec_keep(struct cg *c)
{
	if (!c->nmvec_used)
		return;
	LLVMTypeRef at = LLVMArrayType(c->ptr, (unsigned)c->nmvec_used);
	LLVMValueRef g = LLVMAddGlobal(c->mod, at, "llvm.compiler.used");
	LLVMSetLinkage(g, LLVMAppendingLinkage);
	LLVMSetSection(g, "llvm.metadata");
	LLVMSetInitializer(g, LLVMConstArray(c->ptr, c->mvec_used, (unsigned)c->nmvec_used));
}

/* Host: libm's function in double, with libmvec's vector variants where it
 * has them, so that loops calling it vectorize (the variants are accurate to
 * a few ulp of double: rounded to f32 they almost always equal libm's
 * result rounded, and never differ by more than 1 ulp of f32); sqrt as
 * LLVM's intrinsic. GPU: libdevice's __nv_ functions, linked into the
 * module. */
LLVMValueRef cg_math(struct cg *c, const char *name, LLVMValueRef x, LLVMValueRef y)
{
	LLVMValueRef args[2] = { x, y };
	int n = y ? 2 : 1;
	if (!strcmp(name, "sqrt"))
		return intrinsic(c, "llvm.sqrt", c->f64, 1, args);
	char fname[32];
	snprintf(fname, sizeof fname, "%s%s", c->gpu ? "__nv_" : "", name);
	LLVMTypeRef pt[2] = { c->f64, c->f64 };
	LLVMTypeRef ft = LLVMFunctionType(c->f64, pt, (unsigned)n, 0);
	LLVMValueRef f = LLVMGetNamedFunction(c->mod, fname);
	if (!f) {
		f = LLVMAddFunction(c->mod, fname, ft);
		/* pure: memory(none) nounwind willreturn, so that CSE and the
		 * vectorizer may treat calls as values */
		unsigned kinds[3] = { LLVMGetEnumAttributeKindForName("memory", 6),
				      LLVMGetEnumAttributeKindForName("nounwind", 8),
				      LLVMGetEnumAttributeKindForName("willreturn", 10) };
		for (int i = 0; i < 3; i++)
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
						LLVMCreateEnumAttribute(c->ctx, kinds[i], 0));
	}
	LLVMValueRef call = LLVMBuildCall2(c->b, ft, f, args, (unsigned)n, "");
	for (size_t i = 0; !c->gpu && c->mvec && i < sizeof mvec_fns / sizeof mvec_fns[0]; i++)
		if (!strcmp(name, mvec_fns[i]))
			mvec_variants(c, call, name, n);
	return call;
}

/* ---- exp and tanh without a call (host, results rounded to f32) ------- */

static LLVMValueRef dconst(struct cg *c, double v)
{
	return LLVMConstReal(c->f64, v);
}

LLVMValueRef cg_fmuladd(struct cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
	LLVMValueRef args[3] = { a, b, d };
	return intrinsic(c, "llvm.fmuladd", LLVMTypeOf(a), 3, args);
}

/* sum of a[j] x^j for j < n (n <= 16) by Estrin's scheme: pairs a[2i] +
 * a[2i+1] x, then pairs of those with x^2, with x^4, with x^8: a chain of
 * 4 multiply-adds where Horner's rule has n - 1, so that the out-of-order
 * core overlaps more loop iterations. */
static LLVMValueRef estrin(struct cg *c, LLVMValueRef x, const double *a, int n)
{
	LLVMValueRef t[16];
	IR_ASSERT(n <= 16);
	for (int i = 0; i < n; i++)
		t[i] = dconst(c, a[i]);
	for (LLVMValueRef pw = x; n > 1; n = (n + 1) / 2) {
		for (int i = 0; i < n / 2; i++)
			t[i] = cg_fmuladd(c, t[2 * i + 1], pw, t[2 * i]);
		if (n % 2)
			t[n / 2] = t[n - 1];
		if (n > 2)
			pw = LLVMBuildFMul(c->b, pw, pw, "");
	}
	return t[0];
}

/* x clamped to [lo, hi]; NaN stays NaN (a compare with NaN is false). */
static LLVMValueRef clamp(struct cg *c, LLVMValueRef x, double lo, double hi)
{
	x = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, dconst(c, lo), ""), dconst(c, lo), x, "");
	return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, x, dconst(c, hi), ""), dconst(c, hi), x, "");
}

/* e^x = s (1 + p) for x in [-700, 700], as plain arithmetic, so that
 * loops vectorize to the full width with no call: x = k ln2 + r, |r| <=
 * ln2/2 (k rounded by adding 1.5 * 2^52; ln2 in two parts, k * ln2_hi
 * exact for |k| < 2^21); p = e^r - 1 by its Taylor series to r^13
 * (truncation below 1e-17 relative); s = 2^k put in the exponent field
 * (k + 1023 in [13, 2033]: normal). NaN gives NaN. */
static LLVMValueRef exp_parts(struct cg *c, LLVMValueRef x, LLVMValueRef *s)
{
	const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
	LLVMValueRef t = cg_fmuladd(c, x, dconst(c, 1.4426950408889634074), dconst(c, magic));
	LLVMValueRef k = LLVMBuildFSub(c->b, t, dconst(c, magic), "");
	LLVMValueRef nk = LLVMBuildFNeg(c->b, k, "");
	LLVMValueRef r = cg_fmuladd(c, nk, dconst(c, 6.93147180369123816490e-01), x);
	r = cg_fmuladd(c, nk, dconst(c, 1.90821492927058770002e-10), r);
	double a[14], fact = 1; /* 1/n!, n! exact in double */
	for (int n = 0; n < 14; n++) {
		fact *= n ? n : 1;
		a[n] = n ? 1 / fact : 0;
	}
	LLVMValueRef bits = LLVMBuildShl(c->b, LLVMBuildBitCast(c->b, t, c->i64, ""), cg_i64c(c, 52), "");
	bits = LLVMBuildAdd(c->b, bits, cg_i64c(c, (int64_t)1023 << 52), "");
	*s = LLVMBuildBitCast(c->b, bits, c->f64, "");
	return estrin(c, r, a, 14);
}

/* exp of a double within a few ulp, as libmvec's: x clamped to [-700,
 * 700], which changes only results below 1e-304 or above 1e304, which an
 * f32 rounding makes 0 or inf as it does the true ones. */
static LLVMValueRef exp_poly(struct cg *c, LLVMValueRef x)
{
	LLVMValueRef s, p = exp_parts(c, clamp(c, x, -700, 700), &s);
	return cg_fmuladd(c, s, p, s);
}

/* tanh of a double: on |x| (the sign copied back, so that tanh(-0) is
 * -0), m / (m + 2) with m = e^2|x| - 1 = s p + (s - 1), which keeps its
 * relative accuracy as |x| goes to 0 (k = 0, s = 1: m = p); 2|x| clamped
 * to 40, where tanh is 1 in double. */
static LLVMValueRef tanh_poly(struct cg *c, LLVMValueRef x)
{
	LLVMValueRef a = intrinsic(c, "llvm.fabs", c->f64, 1, &x);
	LLVMValueRef y = LLVMBuildFAdd(c->b, a, a, "");
	y = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, y, dconst(c, 40), ""), dconst(c, 40), y, "");
	LLVMValueRef s, p = exp_parts(c, y, &s);
	LLVMValueRef m = cg_fmuladd(c, s, p, LLVMBuildFSub(c->b, s, dconst(c, 1), ""));
	LLVMValueRef r = LLVMBuildFDiv(c->b, m, LLVMBuildFAdd(c->b, m, dconst(c, 2), ""), "");
	LLVMValueRef args[2] = { r, x };
	return intrinsic(c, "llvm.copysign", c->f64, 2, args);
}

LLVMValueRef cg_math_f32(struct cg *c, const char *name, LLVMValueRef x)
{
	if (c->gpu)
		return cg_math(c, name, x, NULL);
	if (!strcmp(name, "exp"))
		return exp_poly(c, x);
	IR_ASSERT(!strcmp(name, "tanh"));
	return tanh_poly(c, x);
}

LLVMValueRef cg_maximum(struct cg *c, LLVMValueRef x, LLVMValueRef z)
{
	LLVMValueRef args[2] = { x, z };
	return intrinsic(c, "llvm.maximum", LLVMTypeOf(x), 2, args);
}

LLVMValueRef cg_fmax(struct cg *c, LLVMValueRef x, LLVMValueRef z, bool max)
{
	LLVMValueRef nan = LLVMBuildFCmp(c->b, LLVMRealUNO, x, z, "");
	LLVMValueRef pick = LLVMBuildFCmp(c->b, max ? LLVMRealOGT : LLVMRealOLT, x, z, "");
	LLVMValueRef r = LLVMBuildSelect(c->b, pick, x, z, "");
	return LLVMBuildSelect(c->b, nan, LLVMConstReal(LLVMTypeOf(x), NAN), r, "");
}

/* ---- indexing ----------------------------------------------------------- */

LLVMValueRef cg_linear(struct cg *c, const struct ir_shape *s, const LLVMValueRef *idx, int lo, int hi)
{
	LLVMValueRef lin = cg_i64c(c, 0);
	for (int d = lo; d < hi; d++) {
		lin = LLVMBuildMul(c->b, lin, cg_i64c(c, s->dims[d]), "");
		lin = LLVMBuildAdd(c->b, lin, idx[d], "");
	}
	return lin;
}

void cg_delinear(struct cg *c, LLVMValueRef lin, const struct ir_shape *s, int lo, int hi, LLVMValueRef *idx)
{
	for (int d = hi - 1; d >= lo; d--) {
		if (d == lo) {
			idx[d] = lin;
			break;
		}
		LLVMValueRef n = cg_i64c(c, s->dims[d]);
		idx[d] = LLVMBuildURem(c->b, lin, n, "");
		lin = LLVMBuildUDiv(c->b, lin, n, "");
	}
}

LLVMValueRef cg_load(struct cg *c, LLVMValueRef base, enum ir_dtype t, LLVMValueRef off)
{
	if (t == IR_BF16) {
		LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
		LLVMValueRef h = LLVMBuildLoad2(c->b, i16, LLVMBuildGEP2(c->b, i16, base, &off, 1, ""), "");
		h = LLVMBuildShl(c->b, LLVMBuildZExt(c->b, h, c->i32, ""), LLVMConstInt(c->i32, 16, 0), "");
		return LLVMBuildBitCast(c->b, h, c->f32, "");
	}
	if (t == IR_F16) {
		LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
		LLVMValueRef h = LLVMBuildLoad2(c->b, i16, LLVMBuildGEP2(c->b, i16, base, &off, 1, ""), "");
		h = LLVMBuildBitCast(c->b, h, LLVMHalfTypeInContext(c->ctx), "");
		return LLVMBuildFPExt(c->b, h, c->f32, "");
	}
	LLVMTypeRef ty = cg_type(c, t);
	LLVMValueRef p = LLVMBuildGEP2(c->b, ty, base, &off, 1, "");
	return LLVMBuildLoad2(c->b, ty, p, "");
}

void cg_store(struct cg *c, LLVMValueRef base, enum ir_dtype t, LLVMValueRef off, LLVMValueRef v)
{
	if (t == IR_BF16) {
		LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
		LLVMValueRef h = LLVMBuildLShr(c->b, bf16_bits(c, v), LLVMConstInt(c->i32, 16, 0), "");
		LLVMBuildStore(c->b, LLVMBuildTrunc(c->b, h, i16, ""), LLVMBuildGEP2(c->b, i16, base, &off, 1, ""));
		return;
	}
	if (t == IR_F16) { /* v holds an f16 value already: exact */
		LLVMTypeRef i16 = LLVMInt16TypeInContext(c->ctx);
		LLVMValueRef h = LLVMBuildBitCast(c->b, LLVMBuildFPTrunc(c->b, v, LLVMHalfTypeInContext(c->ctx), ""),
						  i16, "");
		LLVMBuildStore(c->b, h, LLVMBuildGEP2(c->b, i16, base, &off, 1, ""));
		return;
	}
	LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, cg_type(c, t), base, &off, 1, ""));
}

/* ---- ops ---------------------------------------------------------------- */

static LLVMValueRef constant(struct cg *c, const struct plan_fop *f, int i, const LLVMValueRef *idx)
{
	struct ir_tensor t = { f->a.dtype, f->a.shape, NULL };
	size_t n = ir_tensor_bytes(&t), es = (size_t)ir_dtype_size(f->a.dtype);
	if (ir_shape_numel(&f->a.shape) == 1) {
		uint64_t bits = 0;
		double d;
		float fl;
		uint16_t h;
		memcpy(&bits, f->a.data, es);
		switch (f->dtype) {
		case IR_F64:
			memcpy(&d, f->a.data, 8);
			return LLVMConstReal(c->f64, d);
		case IR_F32:
			memcpy(&fl, f->a.data, 4);
			return LLVMConstReal(c->f32, fl);
		case IR_I64:
		case IR_I32:
		case IR_I8:
		case IR_U8:
		case IR_BOOL:
			return LLVMConstInt(cg_type(c, f->dtype), bits, 0);
		case IR_BF16:
			memcpy(&h, f->a.data, 2);
			return LLVMConstReal(c->f32, ir_bf16_to_f32(h));
		case IR_F16:
			memcpy(&h, f->a.data, 2);
			return LLVMConstReal(c->f32, ir_f16_to_f32(h));
		case IR_DTYPE_COUNT:
			break;
		}
		IR_ASSERT(!"constant dtype");
	}
	char name[48];
	snprintf(name, sizeof name, "pcc_k%d_c%d", c->kid, i);
	LLVMValueRef g = LLVMGetNamedGlobal(c->mod, name);
	if (!g) {
		LLVMValueRef init = LLVMConstStringInContext(c->ctx, f->a.data, (unsigned)n, 1);
		g = LLVMAddGlobalInAddressSpace(c->mod, LLVMTypeOf(init), name, c->gpu ? 1 : 0);
		LLVMSetInitializer(g, init);
		LLVMSetGlobalConstant(g, 1);
		LLVMSetLinkage(g, LLVMPrivateLinkage);
		LLVMSetAlignment(g, 16);
	}
	LLVMValueRef p = c->gpu ? LLVMBuildAddrSpaceCast(c->b, g, c->ptr, "") : g;
	return cg_load(c, p, f->dtype, cg_linear(c, &f->shape, idx, 0, f->shape.rank));
}

static LLVMValueRef pred(struct cg *c, LLVMValueRef b)
{
	return LLVMBuildZExt(c->b, b, c->i8, "");
}

static LLVMValueRef nonzero(struct cg *c, LLVMValueRef x, enum ir_dtype t)
{
	if (ir_dtype_is_float(t))
		return LLVMBuildFCmp(c->b, LLVMRealUNE, x, LLVMConstReal(LLVMTypeOf(x), 0), "");
	return LLVMBuildICmp(c->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
}

static LLVMValueRef compare(struct cg *c, enum ir_op op, LLVMValueRef x, LLVMValueRef z, enum ir_dtype t)
{
	if (ir_dtype_is_float(t)) {
		LLVMRealPredicate p = op == IR_OP_EQ   ? LLVMRealOEQ
				      : op == IR_OP_NE ? LLVMRealUNE
				      : op == IR_OP_LT ? LLVMRealOLT
				      : op == IR_OP_LE ? LLVMRealOLE
				      : op == IR_OP_GT ? LLVMRealOGT
						       : LLVMRealOGE;
		return pred(c, LLVMBuildFCmp(c->b, p, x, z, ""));
	}
	x = cg_to_i64(c, x, t);
	z = cg_to_i64(c, z, t);
	LLVMIntPredicate p = op == IR_OP_EQ   ? LLVMIntEQ
			     : op == IR_OP_NE ? LLVMIntNE
			     : op == IR_OP_LT ? LLVMIntSLT
			     : op == IR_OP_LE ? LLVMIntSLE
			     : op == IR_OP_GT ? LLVMIntSGT
					      : LLVMIntSGE;
	return pred(c, LLVMBuildICmp(c->b, p, x, z, ""));
}

/* Float ops computed by libm in double (libdevice's on GPUs). */
static const struct {
	enum ir_op op;
	const char *fn;
} libm_ops[] = {
	{ IR_OP_EXP, "exp" },     { IR_OP_LOG, "log" },     { IR_OP_TANH, "tanh" },   { IR_OP_ERF, "erf" },
	{ IR_OP_SIN, "sin" },     { IR_OP_COS, "cos" },     { IR_OP_TAN, "tan" },     { IR_OP_ASIN, "asin" },
	{ IR_OP_ACOS, "acos" },   { IR_OP_ATAN, "atan" },   { IR_OP_SINH, "sinh" },   { IR_OP_COSH, "cosh" },
	{ IR_OP_ASINH, "asinh" }, { IR_OP_ACOSH, "acosh" }, { IR_OP_ATANH, "atanh" }, { IR_OP_REM, "fmod" },
	{ IR_OP_POW, "pow" },
};

bool cg_needs_libm(enum ir_op op)
{
	for (size_t i = 0; i < sizeof libm_ops / sizeof libm_ops[0]; i++)
		if (libm_ops[i].op == op)
			return true;
	return op == IR_OP_SIGMOID || op == IR_OP_SOFTPLUS || op == IR_OP_SOFTMAX;
}

/* The float ops computed in double: a (and b) in double, f32 whether the
 * result is rounded to f32. */
static LLVMValueRef float_f64(struct cg *c, enum ir_op op, LLVMValueRef a, LLVMValueRef b, bool f32)
{
	LLVMValueRef d1 = LLVMConstReal(c->f64, 1);
	switch (op) {
	case IR_OP_RSQRT:
		return LLVMBuildFDiv(c->b, d1, intrinsic(c, "llvm.sqrt", c->f64, 1, &a), "");
	case IR_OP_SIGMOID:
		return LLVMBuildFDiv(c->b, d1,
				     LLVMBuildFAdd(c->b, d1,
						   f32 ? cg_math_f32(c, "exp", LLVMBuildFNeg(c->b, a, ""))
						       : cg_math(c, "exp", LLVMBuildFNeg(c->b, a, ""), NULL),
						   ""),
				     "");
	case IR_OP_EXP:
		return f32 ? cg_math_f32(c, "exp", a) : cg_math(c, "exp", a, NULL);
	case IR_OP_TANH:
		return f32 ? cg_math_f32(c, "tanh", a) : cg_math(c, "tanh", a, NULL);
	case IR_OP_SOFTPLUS: { /* max(a, 0) + log1p(e^-|a|), as the interpreter */
		LLVMValueRef zero = LLVMConstReal(c->f64, 0);
		LLVMValueRef pos = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, a, zero, ""), a, zero, "");
		LLVMValueRef e = cg_math(c, "exp", LLVMBuildFNeg(c->b, intrinsic(c, "llvm.fabs", c->f64, 1, &a), ""),
					 NULL);
		return LLVMBuildFAdd(c->b, pos, cg_math(c, "log1p", e, NULL), "");
	}
	case IR_OP_LOG:
	case IR_OP_ERF:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_REM:
	case IR_OP_POW:
		for (size_t i = 0; i < sizeof libm_ops / sizeof libm_ops[0]; i++)
			if (libm_ops[i].op == op)
				return cg_math(c, libm_ops[i].fn, a, b);
		break;
	case IR_OP_NEG:
	case IR_OP_ABS:
	case IR_OP_SIGN:
	case IR_OP_SQRT:
	case IR_OP_RECIP:
	case IR_OP_RELU:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_CONVERT:
	case IR_OP_ADD:
	case IR_OP_SUB:
	case IR_OP_MUL:
	case IR_OP_DIV:
	case IR_OP_MAX:
	case IR_OP_MIN:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_SELECT:
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"a float op computed in double");
	return NULL;
}

/* Float elementwise op of result dtype t over x (and z) of dtype t. */
static LLVMValueRef float_op(struct cg *c, enum ir_op op, LLVMValueRef x, LLVMValueRef z, enum ir_dtype t)
{
	LLVMTypeRef ty = cg_type(c, t);
	LLVMValueRef zero = LLVMConstReal(ty, 0), one = LLVMConstReal(ty, 1);
	switch (op) {
	/* in the result's type: the same as rounding the double result */
	case IR_OP_NEG:
		return LLVMBuildFNeg(c->b, x, "");
	case IR_OP_ABS:
		return intrinsic(c, "llvm.fabs", ty, 1, &x);
	case IR_OP_SQRT:
		return intrinsic(c, "llvm.sqrt", ty, 1, &x);
	case IR_OP_FLOOR:
		return intrinsic(c, "llvm.floor", ty, 1, &x);
	case IR_OP_CEIL:
		return intrinsic(c, "llvm.ceil", ty, 1, &x);
	case IR_OP_ROUND:
		return intrinsic(c, "llvm.roundeven", ty, 1, &x);
	case IR_OP_RECIP:
		return LLVMBuildFDiv(c->b, one, x, "");
	case IR_OP_ADD:
		return LLVMBuildFAdd(c->b, x, z, "");
	case IR_OP_SUB:
		return LLVMBuildFSub(c->b, x, z, "");
	case IR_OP_MUL:
		return LLVMBuildFMul(c->b, x, z, "");
	case IR_OP_DIV:
		return LLVMBuildFDiv(c->b, x, z, "");
	case IR_OP_MAX:
	case IR_OP_MIN:
		return cg_fmax(c, x, z, op == IR_OP_MAX);
	case IR_OP_RELU: /* keeps NaN */
		return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealUGT, x, zero, ""), x, zero, "");
	case IR_OP_SIGN: {
		LLVMValueRef r = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, zero, ""),
						 LLVMConstReal(ty, -1), x, "");
		return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, x, zero, ""), one, r, "");
	}
	/* the rest in double, rounded once */
	case IR_OP_RSQRT:
	case IR_OP_SIGMOID:
	case IR_OP_SOFTPLUS:
	case IR_OP_EXP:
	case IR_OP_TANH:
	case IR_OP_LOG:
	case IR_OP_ERF:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_REM:
	case IR_OP_POW: {
		LLVMValueRef a = cg_to_f64(c, x, t), b = z ? cg_to_f64(c, z, t) : NULL;
		return cg_from_f64(c, float_f64(c, op, a, b, t == IR_F32), t);
	}
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_CONVERT:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_SELECT:
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"a float elementwise op");
	return NULL;
}

/* Integer elementwise op in int64, wrapped to dtype t. */
static LLVMValueRef int_op(struct cg *c, enum ir_op op, LLVMValueRef x, LLVMValueRef z, enum ir_dtype t,
			   enum ir_dtype in)
{
	LLVMValueRef a = cg_to_i64(c, x, in), b = z ? cg_to_i64(c, z, in) : NULL, r = NULL;
	LLVMValueRef zero = cg_i64c(c, 0), m1 = cg_i64c(c, -1);
	LLVMValueRef gt = b ? LLVMBuildICmp(c->b, LLVMIntSGT, a, b, "") : NULL;
	switch (op) {
	case IR_OP_NEG:
		r = LLVMBuildSub(c->b, zero, a, "");
		break;
	case IR_OP_ABS:
		r = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, zero, ""), LLVMBuildSub(c->b, zero, a, ""),
				    a, "");
		break;
	case IR_OP_SIGN:
		r = LLVMBuildSub(c->b, LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntSGT, a, zero, ""), c->i64, ""),
				 LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, zero, ""), c->i64, ""), "");
		break;
	case IR_OP_RELU:
		r = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSGT, a, zero, ""), a, zero, "");
		break;
	case IR_OP_ADD:
		r = LLVMBuildAdd(c->b, a, b, "");
		break;
	case IR_OP_SUB:
		r = LLVMBuildSub(c->b, a, b, "");
		break;
	case IR_OP_MUL:
		r = LLVMBuildMul(c->b, a, b, "");
		break;
	case IR_OP_MAX:
		r = LLVMBuildSelect(c->b, gt, a, b, "");
		break;
	case IR_OP_MIN:
		r = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, b, ""), a, b, "");
		break;
	case IR_OP_DIV:
	case IR_OP_REM: {
		/* by 0 gives 0; by -1: -x (wrapping) and 0, never a trap */
		LLVMValueRef bad = LLVMBuildOr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, b, zero, ""),
					       LLVMBuildICmp(c->b, LLVMIntEQ, b, m1, ""), "");
		LLVMValueRef safe = LLVMBuildSelect(c->b, bad, cg_i64c(c, 1), b, "");
		LLVMValueRef q = op == IR_OP_DIV ? LLVMBuildSDiv(c->b, a, safe, "") : LLVMBuildSRem(c->b, a, safe, "");
		LLVMValueRef alt = op == IR_OP_DIV ? LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, b, m1, ""),
								     LLVMBuildSub(c->b, zero, a, ""), zero, "")
						   : zero;
		r = LLVMBuildSelect(c->b, bad, alt, q, "");
		break;
	}
	/* float only (integer pow is the reference kernel's: cg_op_class) */
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_TANH:
	case IR_OP_ERF:
	case IR_OP_SIGMOID:
	case IR_OP_SOFTPLUS:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_CONVERT:
	case IR_OP_POW:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_SELECT:
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		IR_ASSERT(!"an integer elementwise op");
		break;
	}
	return cg_from_i64(c, r, t);
}

/* not, and, or, xor: bitwise on integers, logical on bool. */
static LLVMValueRef logic(struct cg *c, enum ir_op op, LLVMValueRef x, LLVMValueRef z, enum ir_dtype in,
			  enum ir_dtype t)
{
	if (in != IR_BOOL) {
		/* bitwise on integers: sign or zero extension commutes with the
		 * truncation back */
		LLVMValueRef a = cg_to_i64(c, x, in), b = z ? cg_to_i64(c, z, in) : NULL;
		return cg_from_i64(c,
				   op == IR_OP_NOT   ? LLVMBuildNot(c->b, a, "")
				   : op == IR_OP_AND ? LLVMBuildAnd(c->b, a, b, "")
				   : op == IR_OP_OR  ? LLVMBuildOr(c->b, a, b, "")
						     : LLVMBuildXor(c->b, a, b, ""),
				   t);
	}
	if (op == IR_OP_NOT)
		return pred(c, LLVMBuildNot(c->b, nonzero(c, x, in), ""));
	LLVMValueRef a = nonzero(c, x, in), b = nonzero(c, z, in);
	return pred(c, op == IR_OP_AND  ? LLVMBuildAnd(c->b, a, b, "")
		       : op == IR_OP_OR ? LLVMBuildOr(c->b, a, b, "")
					: LLVMBuildXor(c->b, a, b, ""));
}

static LLVMValueRef elementwise(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx)
{
	LLVMValueRef x = cg_value(c, f->in[0], idx);
	LLVMValueRef z = f->nin > 1 ? cg_value(c, f->in[1], idx) : NULL;
	enum ir_dtype in = cg_dtype(c, f->in[0]), t = f->dtype;
	enum ir_op op = f->op;
	switch (op) {
	case IR_OP_SELECT:
		return LLVMBuildSelect(c->b, nonzero(c, x, in), z, cg_value(c, f->in[2], idx), "");
	case IR_OP_CONVERT:
		if (in == t)
			return x;
		if (t == IR_BOOL)
			return pred(c, nonzero(c, x, in));
		if (ir_dtype_is_float(t))
			return cg_from_f64(c, cg_to_f64(c, x, in), t);
		return cg_from_i64(c, cg_to_i64(c, x, in), t);
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
		return compare(c, op, x, z, in);
	case IR_OP_IS_NAN:
		return pred(c, LLVMBuildFCmp(c->b, LLVMRealUNO, x, x, ""));
	case IR_OP_IS_INF: {
		LLVMValueRef a = intrinsic(c, "llvm.fabs", LLVMTypeOf(x), 1, &x);
		return pred(c, LLVMBuildFCmp(c->b, LLVMRealOEQ, a, LLVMConstReal(LLVMTypeOf(x), INFINITY), ""));
	}
	case IR_OP_NOT:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
		return logic(c, op, x, z, in, t);
	case IR_OP_NEG:
	case IR_OP_ABS:
	case IR_OP_SIGN:
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_TANH:
	case IR_OP_ERF:
	case IR_OP_SIGMOID:
	case IR_OP_SOFTPLUS:
	case IR_OP_RELU:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_ADD:
	case IR_OP_SUB:
	case IR_OP_MUL:
	case IR_OP_DIV:
	case IR_OP_REM:
	case IR_OP_POW:
	case IR_OP_MAX:
	case IR_OP_MIN:
		return ir_dtype_is_float(t) ? float_op(c, op, x, z, t) : int_op(c, op, x, z, t, in);
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"an elementwise op");
	return NULL;
}

/* The operand index oi (shape os) that reshape's result index idx (shape
 * s) reads: dimensions grouped where the running products of the two
 * shapes meet ([1,128,12,64] and [1,128,768]: {1}{128}{12,64 | 768}), and
 * the linear offset mapped within each group only, so that a dimension
 * kept whole is its own index and no division spans the whole shape. */
static void reshape_index(struct cg *c, const struct ir_shape *s, const LLVMValueRef *idx, const struct ir_shape *os,
			  LLVMValueRef *oi)
{
	if (ir_shape_numel(s) == 0) {
		cg_delinear(c, cg_linear(c, s, idx, 0, s->rank), os, 0, os->rank, oi);
		return;
	}
	int a = 0, b = 0;
	while (a < s->rank || b < os->rank) {
		int a0 = a, b0 = b;
		int64_t pa = a < s->rank ? s->dims[a++] : 1, pb = b < os->rank ? os->dims[b++] : 1;
		while (pa != pb) {
			IR_ASSERT(pa < pb ? a < s->rank : b < os->rank);
			if (pa < pb)
				pa *= s->dims[a++];
			else
				pb *= os->dims[b++];
		}
		cg_delinear(c, cg_linear(c, s, idx, a0, a), os, b0, b, oi);
	}
}

/* The operand index data movement op f reads for result index idx. */
static void move_index(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx, LLVMValueRef *oi)
{
	const struct ir_shape *os = cg_shape(c, f->in[0]);
	if (f->op == IR_OP_BROADCAST) {
		for (int d = 0; d < os->rank; d++)
			oi[d] = os->dims[d] == 1 ? cg_i64c(c, 0) : idx[f->a.axes.v[d]];
	} else if (f->op == IR_OP_TRANSPOSE) {
		for (int d = 0; d < f->shape.rank; d++)
			oi[f->a.axes.v[d]] = idx[d];
	} else if (f->op == IR_OP_RESHAPE) {
		reshape_index(c, &f->shape, idx, os, oi);
	} else if (f->op == IR_OP_SLICE) {
		for (int d = 0; d < os->rank; d++)
			oi[d] = LLVMBuildAdd(c->b, cg_i64c(c, f->a.start.v[d]),
					     LLVMBuildMul(c->b, idx[d], cg_i64c(c, f->a.stride.v[d]), ""), "");
	} else {
		IR_ASSERT(f->op == IR_OP_REVERSE);
		for (int d = 0; d < os->rank; d++)
			oi[d] = idx[d];
		for (int j = 0; j < f->a.axes.n; j++) {
			int d = (int)f->a.axes.v[j];
			oi[d] = LLVMBuildSub(c->b, cg_i64c(c, os->dims[d] - 1), idx[d], "");
		}
	}
}

/* ---- GPU-only data movement (cg_kernel_compiles_gpu) ------------------------- */

void cg_trap_unless_index(struct cg *c, LLVMValueRef j, int64_t n)
{
	LLVMValueRef bad = LLVMBuildOr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, j, cg_i64c(c, 0), ""),
				       LLVMBuildICmp(c->b, LLVMIntSGE, j, cg_i64c(c, n), ""), "");
	LLVMBasicBlockRef trap = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "oob");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "inb");
	LLVMBuildCondBr(c->b, bad, trap, cont);
	LLVMPositionBuilderAtEnd(c->b, trap);
	LLVMValueRef t = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID("llvm.trap", 9), NULL, 0);
	LLVMBuildCall2(c->b, LLVMGlobalGetValueType(t), t, NULL, 0, "");
	LLVMBuildUnreachable(c->b);
	LLVMPositionBuilderAtEnd(c->b, cont);
}

static LLVMValueRef clamp_i64(struct cg *c, LLVMValueRef x, int64_t lo, int64_t hi)
{
	x = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, x, cg_i64c(c, lo), ""), cg_i64c(c, lo), x, "");
	return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSGT, x, cg_i64c(c, hi), ""), cg_i64c(c, hi), x, "");
}

/* pad: every dim's source index from pad_lo and the mode, as the
 * interpreter's pad_source; a position outside the operand (constant
 * mode) is the value, its load kept in bounds by a clamped index. */
static LLVMValueRef pad_value(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx)
{
	const struct ir_shape *os = cg_shape(c, f->in[0]);
	LLVMValueRef oi[IR_MAX_RANK], inside = LLVMConstInt(c->i1, 1, 0);
	for (int d = 0; d < os->rank; d++) {
		int64_t s = os->dims[d];
		LLVMValueRef p = LLVMBuildSub(c->b, idx[d], cg_i64c(c, f->a.pad_lo.v[d]), "");
		if (f->a.mode == IR_PAD_REFLECT && s > 1) {
			int64_t period = 2 * (s - 1);
			LLVMValueRef q = LLVMBuildSRem(c->b, p, cg_i64c(c, period), "");
			q = LLVMBuildSRem(c->b, LLVMBuildAdd(c->b, q, cg_i64c(c, period), ""), cg_i64c(c, period), "");
			oi[d] = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSGE, q, cg_i64c(c, s), ""),
						LLVMBuildSub(c->b, cg_i64c(c, period), q, ""), q, "");
		} else {
			if (f->a.mode == IR_PAD_CONSTANT || s == 0) {
				LLVMValueRef in = LLVMBuildAnd(c->b,
							       LLVMBuildICmp(c->b, LLVMIntSGE, p, cg_i64c(c, 0), ""),
							       LLVMBuildICmp(c->b, LLVMIntSLT, p, cg_i64c(c, s), ""),
							       "");
				inside = LLVMBuildAnd(c->b, inside, in, "");
			}
			oi[d] = clamp_i64(c, p, 0, s > 0 ? s - 1 : 0);
		}
	}
	if (ir_shape_numel(os) == 0)
		return cg_from_f64(c, LLVMConstReal(c->f64, f->a.value), f->dtype);
	LLVMValueRef v = cg_value(c, f->in[0], oi);
	return LLVMBuildSelect(c->b, inside, v, cg_from_f64(c, LLVMConstReal(c->f64, f->a.value), f->dtype), "");
}

/* concat (up to 3 operands): each operand's value at the index less its
 * offset (clamped into it), the one whose range holds the index chosen. */
static LLVMValueRef concat_value(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx)
{
	int ax = (int)f->a.axis;
	int64_t off[PLAN_FOP_MAX_IN + 1] = { 0 };
	for (int j = 0; j < f->nin; j++)
		off[j + 1] = off[j] + cg_shape(c, f->in[j])->dims[ax];
	LLVMValueRef r = NULL;
	for (int j = f->nin - 1; j >= 0; j--) {
		const struct ir_shape *s = cg_shape(c, f->in[j]);
		if (s->dims[ax] == 0)
			continue;
		LLVMValueRef oi[IR_MAX_RANK];
		for (int d = 0; d < f->shape.rank; d++)
			oi[d] = idx[d];
		oi[ax] = clamp_i64(c, LLVMBuildSub(c->b, idx[ax], cg_i64c(c, off[j]), ""), 0, s->dims[ax] - 1);
		LLVMValueRef v = cg_value(c, f->in[j], oi);
		r = r ? LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, idx[ax], cg_i64c(c, off[j + 1]), ""), v,
					r, "")
		      : v;
	}
	return r;
}

/* gather along axis: the index operand's value (negative counts from the
 * end), one out of range a trap (the kernel fails, as PyTorch's
 * device-side assert does), never a read outside the operand. */
static LLVMValueRef gather_value(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx)
{
	const struct ir_shape *xs = cg_shape(c, f->in[0]), *is = cg_shape(c, f->in[1]);
	int ax = (int)f->a.axis, ri = is->rank;
	int64_t A = xs->dims[ax];
	LLVMValueRef j = cg_to_i64(c, cg_value(c, f->in[1], idx + ax), cg_dtype(c, f->in[1]));
	j = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, j, cg_i64c(c, 0), ""),
			    LLVMBuildAdd(c->b, j, cg_i64c(c, A), ""), j, "");
	cg_trap_unless_index(c, j, A);
	LLVMValueRef xi[IR_MAX_RANK];
	for (int d = 0; d < xs->rank; d++)
		xi[d] = d < ax ? idx[d] : d == ax ? j : idx[d - 1 + ri];
	return cg_value(c, f->in[0], xi);
}

/* The core op's value at idx in the final pass of a row kernel. */
static LLVMValueRef row_value(struct cg *c, const struct plan_fop *f, const LLVMValueRef *idx)
{
	LLVMValueRef x = cg_to_f64(c, cg_value(c, f->in[0], idx), cg_dtype(c, f->in[0])), r;
	if (f->op == IR_OP_SOFTMAX) {
		LLVMValueRef e;
		if (c->row) {
			LLVMValueRef j = cg_linear(c, &f->shape, idx, c->split, f->shape.rank);
			e = LLVMBuildLoad2(c->b, c->f64, LLVMBuildGEP2(c->b, c->f64, c->row, &j, 1, ""), "");
		} else {
			LLVMValueRef d = LLVMBuildFSub(c->b, x, c->stat[0], "");
			e = f->dtype == IR_F32 ? cg_math_f32(c, "exp", d) : cg_math(c, "exp", d, NULL);
		}
		r = LLVMBuildFDiv(c->b, e, c->stat[1], "");
	} else {
		int ax = (int)f->a.axis, nt = f->shape.rank - ax;
		LLVMValueRef ti[IR_MAX_RANK];
		for (int d = 0; d < nt; d++)
			ti[d] = idx[ax + d];
		LLVMValueRef s = cg_to_f64(c, cg_value(c, f->in[1], ti), cg_dtype(c, f->in[1]));
		LLVMValueRef b = cg_to_f64(c, cg_value(c, f->in[2], ti), cg_dtype(c, f->in[2]));
		r = LLVMBuildFMul(c->b, LLVMBuildFSub(c->b, x, c->stat[0], ""), c->stat[1], "");
		r = LLVMBuildFAdd(c->b, LLVMBuildFMul(c->b, r, s, ""), b, "");
	}
	return cg_from_f64(c, r, f->dtype);
}

LLVMValueRef cg_value(struct cg *c, int v, const LLVMValueRef *idx)
{
	const struct plan_kernel *k = c->k;
	if (v < k->nin) {
		/* at the result's own index: its flat offset, where the index
		 * rebuilt from the row's divisions would hide from LLVM that an
		 * epilogue reads each element where it writes it, and the
		 * vectorized loop's overlap check would send every row to the
		 * scalar one */
		if (idx == c->out_idx && ir_shape_eq(&k->shape[v], &k->body[k->nbody - 1].shape))
			return cg_load(c, c->base[v], k->dtype[v], c->out_off);
		return cg_load(c, c->base[v], k->dtype[v], cg_linear(c, &k->shape[v], idx, 0, k->shape[v].rank));
	}
	int i = v - k->nin;
	const struct plan_fop *f = &k->body[i];
	LLVMValueRef oi[IR_MAX_RANK];
	if (f->op == IR_OP_PAD) /* GPU kernels of their own (cg_kernel_compiles_gpu) */
		return pad_value(c, f, idx);
	if (f->op == IR_OP_CONCAT)
		return concat_value(c, f, idx);
	if (f->op == IR_OP_GATHER)
		return gather_value(c, f, idx);
	switch (cg_body_class(k, i)) {
	case CG_ELEM: /* bf16, f16: computed in f32 (or f64), rounded as the interpreter's store rounds */
		return cg_round(c, elementwise(c, f, idx), f->dtype);
	case CG_MOVE:
		if (f->op == IR_OP_CONSTANT)
			return constant(c, f, i, idx);
		if (f->op == IR_OP_IOTA) {
			LLVMValueRef j = idx[f->a.axis];
			return ir_dtype_is_float(f->dtype)
				       ? cg_from_f64(c, LLVMBuildSIToFP(c->b, j, c->f64, ""), f->dtype)
				       : cg_from_i64(c, j, f->dtype);
		}
		move_index(c, f, idx, oi);
		return cg_value(c, f->in[0], oi);
	case CG_REDUCE:
		IR_ASSERT(i == c->core && c->core_val);
		return c->core_val;
	case CG_ROW:
		IR_ASSERT(i == c->core && c->stats_ready);
		return row_value(c, f, idx);
	case CG_NONE:
		break;
	}
	IR_ASSERT(!"op codegen does not compile");
	return NULL;
}
