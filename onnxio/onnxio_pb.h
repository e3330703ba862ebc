/*
 * onnxio_pb.h: onnxio's protobuf level (onnx.pb-c.h, generated from the
 * system's onnx.proto), shared with the compiler's ONNX importer
 * (compiler/frontend/onnx_internal.h): a whole model file read, where external data
 * lives, ONNX dtype codes, TensorProto decoding. pcc-run needs only
 * onnxio.h.
 */
#ifndef PCC_ONNXIO_ONNXIO_PB_H
#define PCC_ONNXIO_ONNXIO_PB_H

#include "onnxio/onnxio.h"
#include "onnx.pb-c.h"

/* ---- files (onnx_file.c) */
/* Reads a whole ONNX file (regular, under 2 GiB) into *buf (ir_malloc'd).
 * Errors name the file: -errno when it cannot be opened, -EINVAL not a
 * regular file, -EFBIG too large, -EIO, -ENOMEM. */
int onnx_read_file(const char *path, uint8_t **buf, size_t *len);

/* Where an initializer with data_location EXTERNAL keeps its bytes: the
 * location (a relative path inside the model's directory, base_dir),
 * offset and length (-1 when not given). -EINVAL naming a bad entry. */
int onnx_external_ref(const char *base_dir, const Onnx__TensorProto *t, struct ir_data *d);
/* Whether an external data location is a relative path that stays inside
 * the model's directory: no leading '/', no ".." component. */
bool onnx_path_inside(const char *p);

/* ---- dtypes (onnx_tensor.c) */
int onnx_dtype_to_ir(int32_t onnx_type, enum ir_dtype *out); /* -EINVAL if unsupported */
int32_t onnx_dtype_from_ir(enum ir_dtype t);
const char *onnx_dtype_name(int32_t onnx_type);

/* ---- TensorProto decoding (onnx_tensor.c)
 * Shape and dtype of a tensor proto, with all checks (rank, absurd size). */
int onnx_tensor_type(const Onnx__TensorProto *t, enum ir_dtype *dt, struct ir_shape *s);
/* Decodes an inline tensor proto into t (ir_malloc'd). Fails on external
 * data (-ENOTSUP), size mismatch or unsupported dtype (-EINVAL). */
int onnx_tensor_decode(const Onnx__TensorProto *p, struct ir_tensor *t);

#endif
