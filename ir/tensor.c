/*
 * tensor.c: host tensors and scalar conversions between dtypes, including
 * f16 and bf16 with round-to-nearest-even.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "ir/ir.h"

size_t ir_tensor_bytes(const struct ir_tensor *t)
{
	return (size_t)ir_shape_numel(&t->shape) * ir_dtype_size(t->dtype);
}

int ir_tensor_alloc(struct ir_tensor *t, enum ir_dtype dtype, const struct ir_shape *shape)
{
	t->dtype = dtype;
	t->shape = *shape;
	t->data = ir_calloc(1, ir_tensor_bytes(t));
	if (!t->data) {
		char buf[IR_SHAPE_STR_MAX];
		return ir_errorf(-ENOMEM, "out of memory allocating a %s%s tensor (%zu bytes)", ir_dtype_name(dtype),
				 ir_shape_str(shape, buf, sizeof buf), ir_tensor_bytes(t));
	}
	return 0;
}

void ir_tensor_free(struct ir_tensor *t)
{
	ir_free(t->data);
	t->data = NULL;
}

float ir_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	if (exp == 0) {
		/* zero or subnormal: value = man * 2^-24 */
		float f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t ir_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf or nan */
		return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
	if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
		return sign | 0x7c00;
	if (ax < 0x38800000u) {
		/* result is subnormal or zero: round man*2^-24 to an integer */
		float af;
		memcpy(&af, &ax, 4);
		float q = af * 16777216.0f; /* exact scaling by 2^24 */
		return sign | (uint16_t)nearbyintf(q);
	}
	uint32_t exp = (ax >> 23) - 112, man = ax & 0x7fffff;
	uint32_t r = (exp << 10) | (man >> 13);
	uint32_t rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (r & 1)))
		r++;
	return sign | (uint16_t)r;
}

float ir_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t ir_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

double ir_tensor_get_f64(const struct ir_tensor *t, int64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case IR_F64:
		return ((const double *)p)[i];
	case IR_F32:
		return ((const float *)p)[i];
	case IR_F16:
		return ir_f16_to_f32(((const uint16_t *)p)[i]);
	case IR_BF16:
		return ir_bf16_to_f32(((const uint16_t *)p)[i]);
	case IR_I64:
		return (double)((const int64_t *)p)[i];
	case IR_I32:
		return ((const int32_t *)p)[i];
	case IR_I8:
		return ((const int8_t *)p)[i];
	case IR_U8:
		return ((const uint8_t *)p)[i];
	case IR_BOOL:
		return ((const uint8_t *)p)[i] != 0;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

int ir_labels_check(const struct ir_value *v, const struct ir_tensor *t)
{
	int64_t n = v->classes ? ir_shape_numel(&t->shape) : 0;
	char why[64] = "";
	if (v->has_ignore)
		snprintf(why, sizeof why, " (and not the ignored %lld)", (long long)v->ignore);
	for (int64_t i = 0; i < n; i++) {
		int64_t l = ir_tensor_get_i64(t, i);
		if ((l < 0 || l >= v->classes) && !(v->has_ignore && l == v->ignore))
			return ir_errorf(-EINVAL, "label %lld at element %lld is outside [0, %lld)%s", (long long)l,
					 (long long)i, (long long)v->classes, why);
	}
	return 0;
}

int64_t ir_tensor_get_i64(const struct ir_tensor *t, int64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case IR_I64:
		return ((const int64_t *)p)[i];
	case IR_I32:
		return ((const int32_t *)p)[i];
	case IR_I8:
		return ((const int8_t *)p)[i];
	case IR_U8:
		return ((const uint8_t *)p)[i];
	case IR_BOOL:
		return ((const uint8_t *)p)[i] != 0;
	case IR_F64:
	case IR_F32:
	case IR_F16:
	case IR_BF16: {
		double d = ir_tensor_get_f64(t, i);
		if (!(d == d))
			return 0;
		if (d >= 9.2233720368547758e18)
			return INT64_MAX;
		if (d <= -9.2233720368547758e18)
			return INT64_MIN;
		return (int64_t)d;
	}
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void ir_tensor_set_f64(struct ir_tensor *t, int64_t i, double v)
{
	void *p = t->data;
	switch (t->dtype) {
	case IR_F64:
		((double *)p)[i] = v;
		return;
	case IR_F32:
		((float *)p)[i] = (float)v;
		return;
	case IR_F16:
		((uint16_t *)p)[i] = ir_f32_to_f16((float)v);
		return;
	case IR_BF16:
		((uint16_t *)p)[i] = ir_f32_to_bf16((float)v);
		return;
	case IR_BOOL:
		((uint8_t *)p)[i] = v != 0;
		return;
	case IR_I64:
	case IR_I32:
	case IR_I8:
	case IR_U8: {
		int64_t x;
		if (!(v == v))
			x = 0;
		else if (v >= 9.2233720368547758e18)
			x = INT64_MAX;
		else if (v <= -9.2233720368547758e18)
			x = INT64_MIN;
		else
			x = (int64_t)v;
		ir_tensor_set_i64(t, i, x);
		return;
	}
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void ir_tensor_set_i64(struct ir_tensor *t, int64_t i, int64_t v)
{
	void *p = t->data;
	switch (t->dtype) {
	case IR_I64:
		((int64_t *)p)[i] = v;
		return;
	case IR_I32:
		((int32_t *)p)[i] = (int32_t)(uint32_t)v;
		return;
	case IR_I8:
		((int8_t *)p)[i] = (int8_t)(uint8_t)v;
		return;
	case IR_U8:
		((uint8_t *)p)[i] = (uint8_t)v;
		return;
	case IR_BOOL:
		((uint8_t *)p)[i] = v != 0;
		return;
	case IR_F64:
	case IR_F32:
	case IR_F16:
	case IR_BF16:
		ir_tensor_set_f64(t, i, (double)v);
		return;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

void ir_copy_block(void *dst, const struct ir_shape *dst_shape, const int64_t *dst_start, const void *src,
		   const struct ir_shape *src_shape, const int64_t *src_start, const struct ir_shape *block, size_t es)
{
	static const int64_t zero[IR_MAX_RANK];
	int r = block->rank;
	int64_t idx[IR_MAX_RANK] = { 0 };
	dst_start = dst_start ? dst_start : zero;
	src_start = src_start ? src_start : zero;
	if (ir_shape_numel(block) == 0)
		return;
	if (r == 0) {
		memcpy(dst, src, es);
		return;
	}
	size_t row = (size_t)block->dims[r - 1] * es;
	for (;;) {
		int64_t so = 0, dof = 0;
		for (int d = 0; d < r; d++) {
			so = so * src_shape->dims[d] + src_start[d] + (d == r - 1 ? 0 : idx[d]);
			dof = dof * dst_shape->dims[d] + dst_start[d] + (d == r - 1 ? 0 : idx[d]);
		}
		memcpy((char *)dst + (size_t)dof * es, (const char *)src + (size_t)so * es, row);
		int d = r - 2;
		for (; d >= 0; d--) {
			if (++idx[d] < block->dims[d])
				break;
			idx[d] = 0;
		}
		if (d < 0)
			return;
	}
}
