/*
 * npy.h: NumPy's .npy files (format versions 1 to 3) as tensors, so that
 * data written with numpy.save feeds pcc eval, pcc train and pcc-run
 * where an ONNX TensorProto (input_N.pb) would: little-endian or
 * byte-sized float64, float32, float16, int64, int32, int8, uint8 and bool,
 * in C order; and .npz archives of them (numpy.savez), an array per input
 * by name or position. Errors name the file and what is wrong with it.
 */
#ifndef PCC_IR_NPY_H
#define PCC_IR_NPY_H

#include "ir/ir.h"

/* Reads path into *t (t->data ir_malloc'd): 0, or a negative errno. */
int ir_npy_read(const char *path, struct ir_tensor *t);

/* Whether path names a .npz file (numpy.savez's zip of .npy arrays). */
bool ir_npz_path(const char *path);
/* Array `name` of the .npz path (member NAME.npy: numpy.savez(FILE,
 * NAME=array)), else its k-th positional one (arr_K.npy: numpy.savez(FILE,
 * a, b)), into *t: 0, or a negative errno naming the file and member. */
int ir_npz_read(const char *path, const char *name, int k, struct ir_tensor *t);

/* The file of input k in a data folder, into buf: DIR/input_K.pb, else
 * DIR/input_K.npy where only that one exists. Returns buf, or NULL when
 * the path does not fit in n bytes. */
const char *ir_input_path(char *buf, size_t n, const char *dir, int k);

#endif
