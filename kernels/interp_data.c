/*
 * interp_data.c: what every reference kernel (interp*.c) shares to read
 * and write tensors: whole runs of elements converted between a tensor's
 * dtype and double or int64 buffers (one typed loop each, no per-element
 * dispatch; double -> f16/bf16 through a round-to-odd f32 step so it never
 * double-rounds; float -> int truncated toward zero, NaN to 0, clamped,
 * then wrapped to the width), the integer dtypes' ranges, and row-major
 * layout: strides, index stepping and strided copies.
 *
 * Example: interp_load_f64(t, 0, n, buf) on a bf16 tensor widens its n
 * elements to double; interp_store_f64 rounds them back, nearest even.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/interp_internal.h"

/* ---- dtype conversions ------------------------------------------------- */

/* d rounded to f32 with round-to-odd: a later round-to-nearest-even to a
 * format of at most 22 significant bits then equals rounding d directly. */
static float f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t b;
	if (d != d || (double)f == d)
		return f;
	memcpy(&b, &f, sizeof b);
	if (!(b & 1)) {
		b = fabs((double)f) > fabs(d) ? b - 1 : b + 1;
		memcpy(&f, &b, sizeof f);
	}
	return f;
}

/* Truncation toward zero; NaN -> 0; clamps beyond the int64 range. */
static int64_t f64_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	return (int64_t)v;
}

/* One typed loop: dst[i] = E for i < n, where p[i] is the tensor side. */
#define LOAD(T, E)                                     \
	do {                                           \
		const T *p = (const T *)t->data + off; \
		for (int64_t i = 0; i < n; i++)        \
			dst[i] = (E);                  \
	} while (0)
#define STORE(T, E)                             \
	do {                                    \
		T *p = (T *)t->data + off;      \
		for (int64_t i = 0; i < n; i++) \
			p[i] = (E);             \
	} while (0)

void interp_load_f64(const struct ir_tensor *t, int64_t off, int64_t n, double *dst)
{
	switch (t->dtype) {
	case IR_F64:
		LOAD(double, p[i]);
		return;
	case IR_F32:
		LOAD(float, p[i]);
		return;
	case IR_F16:
		LOAD(uint16_t, ir_f16_to_f32(p[i]));
		return;
	case IR_BF16:
		LOAD(uint16_t, ir_bf16_to_f32(p[i]));
		return;
	case IR_I64:
		LOAD(int64_t, (double)p[i]);
		return;
	case IR_I32:
		LOAD(int32_t, p[i]);
		return;
	case IR_I8:
		LOAD(int8_t, p[i]);
		return;
	case IR_U8:
		LOAD(uint8_t, p[i]);
		return;
	case IR_BOOL:
		LOAD(uint8_t, p[i] != 0);
		return;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void interp_load_i64(const struct ir_tensor *t, int64_t off, int64_t n, int64_t *dst)
{
	switch (t->dtype) {
	case IR_F64:
		LOAD(double, f64_to_i64(p[i]));
		return;
	case IR_F32:
		LOAD(float, f64_to_i64(p[i]));
		return;
	case IR_F16:
		LOAD(uint16_t, f64_to_i64(ir_f16_to_f32(p[i])));
		return;
	case IR_BF16:
		LOAD(uint16_t, f64_to_i64(ir_bf16_to_f32(p[i])));
		return;
	case IR_I64:
		LOAD(int64_t, p[i]);
		return;
	case IR_I32:
		LOAD(int32_t, p[i]);
		return;
	case IR_I8:
		LOAD(int8_t, p[i]);
		return;
	case IR_U8:
		LOAD(uint8_t, p[i]);
		return;
	case IR_BOOL:
		LOAD(uint8_t, p[i] != 0);
		return;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void interp_store_f64(struct ir_tensor *t, int64_t off, int64_t n, const double *src)
{
	switch (t->dtype) {
	case IR_F64:
		STORE(double, src[i]);
		return;
	case IR_F32:
		STORE(float, (float)src[i]);
		return;
	case IR_F16:
		STORE(uint16_t, ir_f32_to_f16(f64_to_f32_odd(src[i])));
		return;
	case IR_BF16:
		STORE(uint16_t, ir_f32_to_bf16(f64_to_f32_odd(src[i])));
		return;
	case IR_I64:
		STORE(int64_t, f64_to_i64(src[i]));
		return;
	case IR_I32:
		STORE(int32_t, (int32_t)(uint32_t)f64_to_i64(src[i]));
		return;
	case IR_I8:
		STORE(int8_t, (int8_t)(uint8_t)f64_to_i64(src[i]));
		return;
	case IR_U8:
		STORE(uint8_t, (uint8_t)f64_to_i64(src[i]));
		return;
	case IR_BOOL:
		STORE(uint8_t, src[i] != 0);
		return;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void interp_store_i64(struct ir_tensor *t, int64_t off, int64_t n, const int64_t *src)
{
	/* (float)int64 and (double)int64 round once; f16/bf16 go through double
	 * (exact below 2^53) and then the round-to-odd step. */
	switch (t->dtype) {
	case IR_F64:
		STORE(double, (double)src[i]);
		return;
	case IR_F32:
		STORE(float, (float)src[i]);
		return;
	case IR_F16:
		STORE(uint16_t, ir_f32_to_f16(f64_to_f32_odd((double)src[i])));
		return;
	case IR_BF16:
		STORE(uint16_t, ir_f32_to_bf16(f64_to_f32_odd((double)src[i])));
		return;
	case IR_I64:
		STORE(int64_t, src[i]);
		return;
	case IR_I32:
		STORE(int32_t, (int32_t)(uint32_t)src[i]);
		return;
	case IR_I8:
		STORE(int8_t, (int8_t)(uint8_t)src[i]);
		return;
	case IR_U8:
		STORE(uint8_t, (uint8_t)src[i]);
		return;
	case IR_BOOL:
		STORE(uint8_t, src[i] != 0);
		return;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}
#undef LOAD
#undef STORE

double *interp_dup_f64(const struct ir_tensor *t)
{
	int64_t n = ir_shape_numel(&t->shape);
	double *p = ir_malloc((size_t)n * sizeof *p);
	if (!p) {
		interp_nomem("a double copy of an operand");
		return NULL;
	}
	interp_load_f64(t, 0, n, p);
	return p;
}

int64_t *interp_dup_i64(const struct ir_tensor *t)
{
	int64_t n = ir_shape_numel(&t->shape);
	int64_t *p = ir_malloc((size_t)n * sizeof *p);
	if (!p) {
		interp_nomem("an int64 copy of an operand");
		return NULL;
	}
	interp_load_i64(t, 0, n, p);
	return p;
}

int64_t interp_int_lowest(enum ir_dtype t)
{
	switch (t) {
	case IR_I64:
		return INT64_MIN;
	case IR_I32:
		return INT32_MIN;
	case IR_I8:
		return INT8_MIN;
	case IR_U8:
		return 0;
	case IR_BOOL:
		return 0;
	case IR_F64:
	case IR_F32:
	case IR_F16:
	case IR_BF16:
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"not an integer dtype");
}

int64_t interp_int_highest(enum ir_dtype t)
{
	switch (t) {
	case IR_I64:
		return INT64_MAX;
	case IR_I32:
		return INT32_MAX;
	case IR_I8:
		return INT8_MAX;
	case IR_U8:
		return UINT8_MAX;
	case IR_BOOL:
		return 1;
	case IR_F64:
	case IR_F32:
	case IR_F16:
	case IR_BF16:
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"not an integer dtype");
}

/* ---- layout ----------------------------------------------------------- */

void interp_strides(const struct ir_shape *s, int64_t *strides)
{
	int64_t st = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		strides[d] = st;
		st *= s->dims[d];
	}
}

int64_t interp_dims_prod(const struct ir_shape *s, int lo, int hi)
{
	int64_t p = 1;
	for (int d = lo; d < hi; d++)
		p *= s->dims[d];
	return p;
}

void interp_index_next(int64_t *idx, const int64_t *dims, int rank)
{
	for (int k = rank - 1; k >= 0; k--) {
		if (++idx[k] < dims[k])
			return;
		idx[k] = 0;
	}
}

/* n elements of esize bytes from src with a stride (elements) to dst. */
static void copy_run(char *dst, const char *src, size_t esize, int64_t n, int64_t stride)
{
	int64_t i;
	if (stride == 1) {
		memcpy(dst, src, (size_t)n * esize);
		return;
	}
	switch (esize) {
	case 1:
		for (i = 0; i < n; i++)
			dst[i] = src[i * stride];
		return;
	case 2: {
		uint16_t *d = (uint16_t *)(void *)dst;
		const uint16_t *s = (const uint16_t *)(const void *)src;
		for (i = 0; i < n; i++)
			d[i] = s[i * stride];
		return;
	}
	case 4: {
		uint32_t *d = (uint32_t *)(void *)dst;
		const uint32_t *s = (const uint32_t *)(const void *)src;
		for (i = 0; i < n; i++)
			d[i] = s[i * stride];
		return;
	}
	case 8: {
		uint64_t *d = (uint64_t *)(void *)dst;
		const uint64_t *s = (const uint64_t *)(const void *)src;
		for (i = 0; i < n; i++)
			d[i] = s[i * stride];
		return;
	}
	}
	IR_ASSERT(!"element size not 1, 2, 4 or 8");
}

void interp_copy_view(void *dst, const void *src, size_t esize, int rank, const int64_t *dims, const int64_t *strides,
		      int64_t offset)
{
	int64_t idx[IR_MAX_RANK] = { 0 }, total = 1;
	const char *s = src;
	char *d = dst;
	for (int k = 0; k < rank; k++)
		total *= dims[k];
	if (total == 0)
		return;
	if (rank == 0) {
		memcpy(d, s + offset * (int64_t)esize, esize);
		return;
	}
	int64_t inner = dims[rank - 1], outer = total / inner, so = offset;
	for (int64_t o = 0; o < outer; o++) {
		copy_run(d, s + so * (int64_t)esize, esize, inner, strides[rank - 1]);
		d += inner * (int64_t)esize;
		/* odometer over the outer dims, keeping the source offset */
		for (int k = rank - 2; k >= 0; k--) {
			so += strides[k];
			if (++idx[k] < dims[k])
				break;
			so -= idx[k] * strides[k];
			idx[k] = 0;
		}
	}
}
