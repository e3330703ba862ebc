/*
 * onnxio.h: the interface of onnxio/, ONNX files read and written
 * without the importer: tensors in the backend-test layout (TensorProto
 * files, or numpy's .npy), a runtime rank's slices of a model's
 * initializers, trained weights written back into the model. pcc-run
 * loads, feeds and saves through it and so links no importer and no graph
 * builder; the compiler's importer shares its protobuf level
 * (onnxio_pb.h). Depends on ir/ and protobuf-c. Errors follow ir.h:
 * negative errno, message in ir_error().
 *
 *   onnx_tensor.c   TensorProto <-> host tensors, ONNX dtype codes
 *   onnx_weights.c  a rank's slices of the initializers
 *   onnx_save.c     trained weights written back
 *   onnx_file.c     a whole model file read, external data references
 */
#ifndef PCC_ONNXIO_ONNXIO_H
#define PCC_ONNXIO_ONNXIO_H

#include "ir/ir.h"

/* ---- tensor files (onnx_tensor.c) -------------------------------------------
 * TensorProto files (the ONNX backend-test layout input_N.pb/output_N.pb);
 * read also takes numpy's .npy for a path ending so (ir_npy_read).
 * read: t->data is ir_malloc'd; *name (may be NULL) is ir_malloc'd too.
 * read_as: for an input of dtype want (IR_DTYPE_COUNT: any), which reads
 * a UINT16 tensor as bfloat16 bit patterns where want is bf16 (ONNX 1.12's
 * test data stores bfloat16 so) and refuses it naming want otherwise. */
int onnx_tensor_read(const char *path, struct ir_tensor *t, char **name);
int onnx_tensor_read_as(const char *path, struct ir_tensor *t, char **name, enum ir_dtype want);
int onnx_tensor_write(const char *path, const struct ir_tensor *t, const char *name);

/* ---- writing trained weights back (onnx_save.c) -----------------------------
 * Copies the ONNX model at src to dst with the initializers named names[i]
 * replaced by values[i] (same dtype and shape as the initializer, else
 * -EINVAL naming it); everything else (graph, opset, metadata, other
 * initializers) is kept. External data in src is read and written inline,
 * or, when the result would pass protobuf's 2 GiB limit, into
 * "<dst>.data" beside dst. dst is written to a temporary file and renamed,
 * so on any error no partial dst exists. */
int onnx_save_params(const char *src, const char *dst, int n, const char *const *names, const struct ir_tensor *values);

/* ---- a rank's slices of the initializers (onnx_weights.c) -------------------
 * What a runtime rank loads: onnx_weights_open unpacks the model (inline
 * data is bounded by protobuf's 2 GiB); onnx_weights_read copies the block
 * of initializer `name` of shape block starting at start[] into dst,
 * converting floating point data to dtype; external data is read with
 * pread, run by contiguous run, so only the slice's bytes are read.
 * Errors name the file and the initializer: missing (-ENOENT), another
 * shape or a non-float dtype change, a slice outside it (-EINVAL), short
 * external data (-EIO). */
struct onnx_weights;
struct onnx_weights *onnx_weights_open(const char *path);
int onnx_weights_type(const struct onnx_weights *w, const char *name, enum ir_dtype *dt, struct ir_shape *shape);
int onnx_weights_read(const struct onnx_weights *w, const char *name, enum ir_dtype dtype,
		      const struct ir_shape *global, const int64_t *start, const struct ir_shape *block, void *dst);
/* Whether initializer name keeps its data in an external file that does
 * not exist (a model shipped without its weights: pcc-run --init). */
bool onnx_weights_absent(const struct onnx_weights *w, const char *name);
void onnx_weights_close(struct onnx_weights *w);

#endif
