/*
 * onnx_tensor.c: TensorProto <-> host tensors, and ONNX dtype codes.
 *
 * Inline tensor data comes either as raw_data (little-endian bytes) or in
 * the typed repeated fields (float_data, int32_data for every type of 32
 * bits or less, int64_data, double_data, uint64_data). Every size is checked
 * against the shape before anything is allocated from it. 16-bit floats
 * (FLOAT16, BFLOAT16) are bit patterns either way: two little-endian bytes
 * each in raw_data, or one per int32_data element (0 to 65535). ONNX
 * 1.12's test data, written before numpy had bfloat16, stores bfloat16 as
 * UINT16 the same two ways; onnx_tensor_read_as takes those for a bf16
 * input.
 */
#include <errno.h>
#include <string.h>

#include "ir/npy.h"
#include "onnxio/onnxio_pb.h"

/* ONNX TensorProto.DataType codes */
enum {
	T_FLOAT = 1,
	T_UINT8 = 2,
	T_INT8 = 3,
	T_UINT16 = 4,
	T_INT16 = 5,
	T_INT32 = 6,
	T_INT64 = 7,
	T_STRING = 8,
	T_BOOL = 9,
	T_FLOAT16 = 10,
	T_DOUBLE = 11,
	T_UINT32 = 12,
	T_UINT64 = 13,
	T_COMPLEX64 = 14,
	T_COMPLEX128 = 15,
	T_BFLOAT16 = 16,
	/* opset 19 on: 8-bit floats; 21: 4-bit integers; 23: 4-bit floats.
	 * pcc has none of them: they are named in the refusal. */
	T_FLOAT8E4M3FN = 17,
	T_FLOAT8E4M3FNUZ = 18,
	T_FLOAT8E5M2 = 19,
	T_FLOAT8E5M2FNUZ = 20,
	T_UINT4 = 21,
	T_INT4 = 22,
	T_FLOAT4E2M1 = 23,
};

const char *onnx_dtype_name(int32_t t)
{
	static const char *names[] = { "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
				       "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
				       "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
				       "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
				       "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1" };
	return t >= 0 && t <= T_FLOAT4E2M1 ? names[t] : "UNKNOWN";
}

int onnx_dtype_to_ir(int32_t t, enum ir_dtype *out)
{
	switch (t) {
	case T_FLOAT:
		*out = IR_F32;
		return 0;
	case T_DOUBLE:
		*out = IR_F64;
		return 0;
	case T_FLOAT16:
		*out = IR_F16;
		return 0;
	case T_BFLOAT16:
		*out = IR_BF16;
		return 0;
	case T_INT64:
		*out = IR_I64;
		return 0;
	case T_INT32:
		*out = IR_I32;
		return 0;
	case T_INT8:
		*out = IR_I8;
		return 0;
	case T_UINT8:
		*out = IR_U8;
		return 0;
	case T_BOOL:
		*out = IR_BOOL;
		return 0;
	}
	if (t >= T_FLOAT8E4M3FN && t <= T_FLOAT4E2M1)
		return ir_errorf(-ENOTSUP,
				 "element type %s (%d) is not supported (pcc has no 8-bit float or 4-bit types)",
				 onnx_dtype_name(t), (int)t);
	return ir_errorf(-ENOTSUP, "element type %s (%d) is not supported", onnx_dtype_name(t), (int)t);
}

int32_t onnx_dtype_from_ir(enum ir_dtype t)
{
	switch (t) {
	case IR_F64:
		return T_DOUBLE;
	case IR_F32:
		return T_FLOAT;
	case IR_F16:
		return T_FLOAT16;
	case IR_BF16:
		return T_BFLOAT16;
	case IR_I64:
		return T_INT64;
	case IR_I32:
		return T_INT32;
	case IR_I8:
		return T_INT8;
	case IR_U8:
		return T_UINT8;
	case IR_BOOL:
		return T_BOOL;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

int onnx_tensor_type(const Onnx__TensorProto *t, enum ir_dtype *dt, struct ir_shape *s)
{
	if (!t->has_data_type)
		return ir_errorf(-EINVAL, "tensor has no element type");
	if (onnx_dtype_to_ir(t->data_type, dt) < 0)
		return -EINVAL;
	if (t->n_dims > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "rank %zu exceeds %d", t->n_dims, IR_MAX_RANK);
	if (t->segment)
		return ir_errorf(-ENOTSUP, "segmented tensors are not supported");
	s->rank = (int)t->n_dims;
	for (int i = 0; i < s->rank; i++)
		s->dims[i] = t->dims[i];
	return ir_shape_check(s);
}

int onnx_tensor_decode(const Onnx__TensorProto *p, struct ir_tensor *t)
{
	enum ir_dtype dt;
	struct ir_shape s;
	memset(t, 0, sizeof *t);
	if (onnx_tensor_type(p, &dt, &s) < 0)
		return -EINVAL;
	if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return ir_errorf(-ENOTSUP, "tensor data is external");
	int64_t n = ir_shape_numel(&s);
	size_t want = (size_t)n * ir_dtype_size(dt);
	size_t have = 0;
	if (p->has_raw_data)
		have = p->raw_data.len;
	else if (dt == IR_F32)
		have = p->n_float_data * 4;
	else if (dt == IR_F64)
		have = p->n_double_data * 8;
	else if (dt == IR_I64)
		have = p->n_int64_data * 8;
	else
		have = p->n_int32_data * ir_dtype_size(dt);
	if (have != want)
		return ir_errorf(-EINVAL, "data holds %lld elements, shape %s needs %lld",
				 (long long)(have / ir_dtype_size(dt)),
				 ir_shape_str(&s, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX), (long long)n);
	if (ir_tensor_alloc(t, dt, &s) < 0)
		return -ENOMEM;
	if (p->has_raw_data) {
		if (want)
			memcpy(t->data, p->raw_data.data, want);
		return 0;
	}
	for (int64_t i = 0; i < n && (dt == IR_F16 || dt == IR_BF16); i++)
		if (p->int32_data[i] < 0 || p->int32_data[i] > 0xffff) {
			ir_tensor_free(t);
			return ir_errorf(-EINVAL,
					 "int32_data element %lld is %d, not the bit pattern of a 16-bit "
					 "float (0 to 65535)",
					 (long long)i, (int)p->int32_data[i]);
		}
	for (int64_t i = 0; i < n; i++) {
		switch (dt) {
		case IR_F32:
			((float *)t->data)[i] = p->float_data[i];
			break;
		case IR_F64:
			((double *)t->data)[i] = p->double_data[i];
			break;
		case IR_I64:
			((int64_t *)t->data)[i] = p->int64_data[i];
			break;
		/* 16-bit floats travel as their bit patterns in int32_data */
		case IR_F16:
		case IR_BF16:
			((uint16_t *)t->data)[i] = (uint16_t)p->int32_data[i];
			break;
		case IR_I32:
		case IR_I8:
		case IR_U8:
		case IR_BOOL:
			ir_tensor_set_i64(t, i, p->int32_data[i]);
			break;
		case IR_DTYPE_COUNT:
			IR_ASSERT(!"bad dtype");
		}
	}
	return 0;
}

int onnx_tensor_read(const char *path, struct ir_tensor *t, char **name)
{
	return onnx_tensor_read_as(path, t, name, IR_DTYPE_COUNT);
}

int onnx_tensor_read_as(const char *path, struct ir_tensor *t, char **name, enum ir_dtype want)
{
	uint8_t *buf = NULL;
	size_t len = 0, pl = strlen(path);
	if (pl > 4 && !strcmp(path + pl - 4, ".npy")) { /* numpy.save's, in place of a TensorProto */
		if (name)
			*name = NULL;
		return ir_npy_read(path, t);
	}
	FILE *f = fopen(path, "rb");
	memset(t, 0, sizeof *t);
	if (name)
		*name = NULL;
	if (!f)
		return ir_errorf(-ENOENT, "%s: cannot open: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) == 0) {
		long sz = ftell(f);
		if (sz >= 0 && (buf = ir_malloc((size_t)sz + 1))) {
			rewind(f);
			len = fread(buf, 1, (size_t)sz, f);
			if (len != (size_t)sz) {
				ir_free(buf);
				buf = NULL;
			}
		}
	}
	fclose(f);
	if (!buf)
		return ir_errorf(-EIO, "%s: cannot read", path);
	Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, buf);
	ir_free(buf);
	if (!p)
		return ir_errorf(-EINVAL, "%s: not a valid TensorProto (protobuf decoding failed)", path);
	int rc = 0;
	if (p->has_data_type && p->data_type == T_UINT16 && want == IR_BF16)
		p->data_type = T_BFLOAT16; /* the same bits, both storage forms */
	else if (p->has_data_type && p->data_type == T_UINT16 && want != IR_DTYPE_COUNT)
		rc = ir_errorf(-EINVAL,
			       "holds UINT16, which pcc reads only as bfloat16 bit patterns (as ONNX "
			       "1.12's test data stores bfloat16) for a bf16 input; the input it feeds is %s",
			       ir_dtype_name(want));
	if (rc == 0)
		rc = onnx_tensor_decode(p, t);
	if (rc == 0 && name && p->name) {
		size_t n = strlen(p->name) + 1;
		if ((*name = ir_malloc(n)))
			memcpy(*name, p->name, n);
	}
	onnx__tensor_proto__free_unpacked(p, NULL);
	if (rc < 0)
		ir_error_prefix("%s", path);
	return rc;
}

int onnx_tensor_write(const char *path, const struct ir_tensor *t, const char *name)
{
	Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
	int64_t dims[IR_MAX_RANK];
	for (int i = 0; i < t->shape.rank; i++)
		dims[i] = t->shape.dims[i];
	p.n_dims = (size_t)t->shape.rank;
	p.dims = dims;
	p.has_data_type = 1;
	p.data_type = onnx_dtype_from_ir(t->dtype);
	p.name = (char *)(name ? name : "");
	p.has_raw_data = 1;
	p.raw_data.len = ir_tensor_bytes(t);
	p.raw_data.data = t->data;
	size_t n = onnx__tensor_proto__get_packed_size(&p);
	uint8_t *buf = ir_malloc(n);
	if (!buf)
		return ir_errorf(-ENOMEM, "%s: out of memory", path);
	onnx__tensor_proto__pack(&p, buf);
	FILE *f = fopen(path, "wb");
	int rc = 0;
	if (!f || fwrite(buf, 1, n, f) != n)
		rc = ir_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	if (f && fclose(f) != 0 && rc == 0)
		rc = ir_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	ir_free(buf);
	return rc;
}
