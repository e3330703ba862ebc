/*
 * grad_internal.h: shared by the autodiff files (grad.c, grad_rules*.c,
 * grad_ops.c) and nothing else.
 *
 * Gradient rules emit core ops through a builder whose error is sticky:
 * every builder returns NULL when any operand is NULL or the node cannot be
 * made, and the first failure's code stays in b->err. A rule can then chain
 * builders without checking each step and look at b->err once.
 */
#ifndef PCC_GRAD_INTERNAL_H
#define PCC_GRAD_INTERNAL_H

#include "compiler/train/train.h"

struct gb {
	struct ir_graph *g;
	const char *name; /* the forward node's name: new nodes carry it */
	int err;          /* 0, or the first error's negative code */
	bool tagged;      /* new nodes get tag (ir_node.tag) */
	int tag;
	int recompute; /* new nodes' ir_node.recompute (0: none) */
};

struct ir_value *gb_op(struct gb *b, enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a);
struct ir_value *gb_un(struct gb *b, enum ir_op op, struct ir_value *x);
struct ir_value *gb_bin(struct gb *b, enum ir_op op, struct ir_value *x, struct ir_value *y);
struct ir_value *gb_select(struct gb *b, struct ir_value *c, struct ir_value *x, struct ir_value *y);
/* x * v and x + v for a scalar v (broadcast to x). */
struct ir_value *gb_scale(struct gb *b, struct ir_value *x, double v);
struct ir_value *gb_offset(struct gb *b, struct ir_value *x, double v);
/* A tensor of dtype t and shape s filled with v. */
struct ir_value *gb_full(struct gb *b, enum ir_dtype t, const struct ir_shape *s, double v);
struct ir_value *gb_like(struct gb *b, const struct ir_value *x, double v);
struct ir_value *gb_convert(struct gb *b, struct ir_value *x, enum ir_dtype t);
struct ir_value *gb_reshape(struct gb *b, struct ir_value *x, const struct ir_shape *s);
/* Result dim i is operand dim perm[i]; the identity makes no node. */
struct ir_value *gb_transpose(struct gb *b, struct ir_value *x, const int64_t *perm);
/* Operand dim i goes to result dim axes->v[i]. */
struct ir_value *gb_broadcast(struct gb *b, struct ir_value *x, const struct ir_shape *s, const struct ir_ilist *axes);
/* reduce_sum over the sorted axes; none makes no node. */
struct ir_value *gb_sum(struct gb *b, struct ir_value *x, const struct ir_ilist *axes);
/* Sums g (of shape s) over dims axis..rank-1 and broadcasts it back to s:
 * the per-row totals the normalizing rules need. */
struct ir_value *gb_rowsum(struct gb *b, struct ir_value *g, int64_t axis, int64_t last);
struct ir_value *gb_slice(struct gb *b, struct ir_value *x, const struct ir_ilist *start, const struct ir_ilist *limit,
			  const struct ir_ilist *stride);
/* Slice of one dim (stride 1). */
struct ir_value *gb_slice_dim(struct gb *b, struct ir_value *x, int dim, int64_t start, int64_t limit);
struct ir_value *gb_pad(struct gb *b, struct ir_value *x, const struct ir_ilist *lo, const struct ir_ilist *hi,
			double value);
/* The transpose of a strided slice: g placed into zeros of shape full at
 * start + i * stride (the VJP of SLICE, and of strided windows). */
struct ir_value *gb_unslice(struct gb *b, struct ir_value *g, const struct ir_shape *full, const struct ir_ilist *start,
			    const struct ir_ilist *stride);
/* Zeros interleaved after every element of dims with stride > 1, keeping
 * (n - 1) * stride + 1 elements. */
struct ir_value *gb_dilate(struct gb *b, struct ir_value *g, const struct ir_ilist *stride);
/* a + b where either may be NULL (a missing term is zero). */
struct ir_value *gb_accumulate(struct gb *b, struct ir_value *a, struct ir_value *c);

/* The VJP of node n: gout[j] is the gradient of output j (NULL: zero),
 * want[k] says whether operand k needs one; gin[k] receives its gradient
 * contribution (NULL: zero). 0, or -ENOTSUP when n has no rule (message
 * names the op and why), or the builder's error. */
int grad_rule(struct gb *b, const struct ir_node *n, struct ir_value *const *gout, const bool *want,
	      struct ir_value **gin);

/* The larger rules (grad_rules_nn.c). */
int grad_dot(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin);
int grad_conv(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin);
int grad_window(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin);
int grad_layer_norm(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin);
int grad_topk(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin);
int grad_gather(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin);
int grad_pad(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin);

#endif
