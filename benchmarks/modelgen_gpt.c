/*
 * modelgen_gpt.c: GPT-3 decoders and GShard MoE decoders, as a training
 * step's forward pass ending in the loss.
 *
 * Layer i, pre-LayerNorm as GPT-2/GPT-3 and Megatron-LM:
 *   a = x + proj(attention(LN1(x)))
 *   y = a + MLP(LN2(a))           or, in MoE layers, a + MoE(LN2(a))
 * attention: one fused QKV MatMul [h, 3h] + bias, laid out head-major as
 * Megatron does (reshape to [b, s, heads, 3*hd], split the last axis into
 * q, k, v), scores q k^T / sqrt(hd), a causal mask built by ops (Range,
 * Unsqueeze, GreaterOrEqual; never an s x s initializer), Softmax, @ v.
 * MLP: [h, r*h] + bias, GELU as x * 0.5 * (1 + erf(x / sqrt 2)), [r*h, h] +
 * bias. Embeddings: token table [V, h] tied to the LM head (logits =
 * x wte^T) and a learned position table [s, h]. Loss: mean softmax cross
 * entropy of [b*s, V] logits against int64 labels.
 *
 * MoE layers (every second layer, starting with layer 0 as Alpa does)
 * follow GShard's top-2 gating with einsum dispatch (Lepikhin et al. 2020,
 * Algorithm 1; the form written out in Alpa's alpa/model/moe.py,
 * top2_gating): a group is one sequence of S = s tokens, every expert holds
 * C = 2S/E tokens, first choices take slots before second choices, tokens
 * past the capacity are dropped, and the two kept gate values are
 * renormalized. The dispatch mask [b, S, E, C] moves tokens into the
 * expert buffers (einsum "bsec,bsm->ebcm"), the experts are one batched
 * MatMul pair over [E, b*C, h], and the combine weights bring them back
 * ("bsec,ebcm->bsm").
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "benchmarks/modelgen.h"

/* Values shared by all layers: built once, named once. */
struct tf {
	struct mg_builder *b;
	const struct mg_config *c;
	int64_t hd;         /* head dim */
	int64_t ffn;        /* MLP width */
	int64_t capacity;   /* MoE: tokens per expert and group */
	const char *mask;   /* [s, s] bool: key position <= query position */
	const char *scale;  /* 1 / sqrt(hd) */
	const char *masked; /* the score of a masked position, -1e4 */
	const char *zero, *half, *one, *sqrt2;
	const char *heads_shape; /* [0, 0, heads, 3 hd] */
	const char *bsh_shape;   /* [0, 0, h] */
	const char *qkv_split;   /* [hd, hd, hd] */
	const char *last_axis;   /* [-1] */
};

static bool is_moe_layer(const struct mg_config *c, int64_t i)
{
	return c->family == MG_MOE && i % 2 == 0;
}

/* ---- building blocks -------------------------------------------------- */

static const char *linear(struct tf *t, const char *x, const char *name, int64_t in, int64_t out)
{
	char w[64], bias[64];
	snprintf(w, sizeof w, "%s.weight", name);
	snprintf(bias, sizeof bias, "%s.bias", name);
	const char *y = mgb_op(t->b, "MatMul", 2, x, mgb_weight(t->b, w, 2, (int64_t[]){ in, out }));
	return mgb_op(t->b, "Add", 2, y, mgb_weight(t->b, bias, 1, (int64_t[]){ out }));
}

static const char *layer_norm(struct tf *t, const char *x, const char *name)
{
	char w[64], bias[64];
	int64_t h = t->c->hidden;
	snprintf(w, sizeof w, "%s.weight", name);
	snprintf(bias, sizeof bias, "%s.bias", name);
	const char *in[3] = { x, mgb_weight(t->b, w, 1, &h), mgb_weight(t->b, bias, 1, &h) };
	struct Onnx__NodeProto *n = mgb_node(t->b, "LayerNormalization", 3, in, 1);
	mgb_attr_int(t->b, n, "axis", -1);
	mgb_attr_float(t->b, n, "epsilon", 1e-5f);
	return mgb_out(n, 0);
}

/* GELU, exact: x * 0.5 * (1 + erf(x / sqrt 2)) */
static const char *gelu(struct tf *t, const char *x)
{
	struct mg_builder *b = t->b;
	const char *e = mgb_op(b, "Erf", 1, mgb_op(b, "Div", 2, x, t->sqrt2));
	return mgb_op(b, "Mul", 2, mgb_op(b, "Mul", 2, x, t->half), mgb_op(b, "Add", 2, t->one, e));
}

static const char *transpose(struct mg_builder *b, const char *x, int rank, const int64_t *perm)
{
	struct Onnx__NodeProto *n = mgb_node(b, "Transpose", 1, &x, 1);
	mgb_attr_ints(b, n, "perm", rank, perm);
	return mgb_out(n, 0);
}

static const char *softmax(struct mg_builder *b, const char *x)
{
	struct Onnx__NodeProto *n = mgb_node(b, "Softmax", 1, &x, 1);
	mgb_attr_int(b, n, "axis", -1);
	return mgb_out(n, 0);
}

/* A node taking (x, constant) with one int attribute: Gather, CumSum... */
static const char *op_attr(struct mg_builder *b, const char *op, const char *x, const char *k, const char *attr,
			   int64_t v)
{
	const char *in[2] = { x, k };
	struct Onnx__NodeProto *n = mgb_node(b, op, 2, in, 1);
	mgb_attr_int(b, n, attr, v);
	return mgb_out(n, 0);
}

/* ReduceSum over one axis */
static const char *reduce_sum(struct tf *t, const char *x, int64_t axis, bool keepdims)
{
	return op_attr(t->b, "ReduceSum", x, mgb_ints(t->b, 1, &axis), "keepdims", keepdims);
}

/* ---- attention and MLPs --------------------------------------------------- */

static const char *attention(struct tf *t, const char *x)
{
	struct mg_builder *b = t->b;
	int64_t h = t->c->hidden;
	static const int64_t to_bhsd[4] = { 0, 2, 1, 3 }, to_bhds[4] = { 0, 2, 3, 1 };
	const char *qkv = mgb_op(b, "Reshape", 2, linear(t, x, "qkv", h, 3 * h), t->heads_shape);
	const char *in[2] = { qkv, t->qkv_split };
	struct Onnx__NodeProto *split = mgb_node(b, "Split", 2, in, 3);
	mgb_attr_int(b, split, "axis", 3);
	const char *q = transpose(b, mgb_out(split, 0), 4, to_bhsd);
	const char *kt = transpose(b, mgb_out(split, 1), 4, to_bhds);
	const char *v = transpose(b, mgb_out(split, 2), 4, to_bhsd);
	const char *s = mgb_op(b, "Mul", 2, mgb_op(b, "MatMul", 2, q, kt), t->scale);
	s = mgb_op(b, "Where", 3, t->mask, s, t->masked);
	const char *ctx = mgb_op(b, "MatMul", 2, softmax(b, s), v);
	ctx = mgb_op(b, "Reshape", 2, transpose(b, ctx, 4, to_bhsd), t->bsh_shape);
	return linear(t, ctx, "proj", h, h);
}

static const char *mlp(struct tf *t, const char *x)
{
	int64_t h = t->c->hidden;
	return linear(t, gelu(t, linear(t, x, "fc", h, t->ffn)), "proj", t->ffn, h);
}

/* Slot of each token's choice in its expert's buffer, and the choice mask
 * with tokens past the capacity dropped. mask [b, S, E] one-hot; base
 * [b, 1, E] slots already taken (by first choices), or NULL. */
static const char *keep_within_capacity(struct tf *t, const char *mask, const char *base, const char **slot)
{
	struct mg_builder *b = t->b;
	const char *pos = op_attr(b, "CumSum", mask, mgb_int(b, 1), "exclusive", 1);
	if (base)
		pos = mgb_op(b, "Add", 2, pos, base);
	const char *fits = mgb_op(b, "Less", 2, pos, mgb_float(b, (float)t->capacity));
	const char *kept = mgb_op(b, "Where", 3, fits, mask, t->zero);
	*slot = reduce_sum(t, mgb_op(b, "Mul", 2, pos, kept), -1, false); /* [b, S] */
	return kept;
}

/* combine weights of one choice: [b, S, E, C] = (gate * kept) x onehot(slot) */
static const char *combine_part(struct tf *t, const char *gate, const char *kept, const char *slot)
{
	struct mg_builder *b = t->b;
	const char *w = mgb_op(b, "Mul", 2, mgb_op(b, "Unsqueeze", 2, gate, t->last_axis), kept);
	const char *oh_in[3] = { slot, mgb_int(b, t->capacity), mgb_floats(b, 2, (float[]){ 0, 1 }) };
	struct Onnx__NodeProto *oh = mgb_node(b, "OneHot", 3, oh_in, 1);
	mgb_attr_int(b, oh, "axis", -1);
	const char *in[2] = { w, mgb_out(oh, 0) };
	struct Onnx__NodeProto *e = mgb_node(b, "Einsum", 2, in, 1);
	mgb_attr_str(b, e, "equation", "bse,bsc->bsec");
	return mgb_out(e, 0);
}

static const char *einsum(struct mg_builder *b, const char *eq, const char *x, const char *y)
{
	const char *in[2] = { x, y };
	struct Onnx__NodeProto *n = mgb_node(b, "Einsum", 2, in, 1);
	mgb_attr_str(b, n, "equation", eq);
	return mgb_out(n, 0);
}

/* The combine tensor [b, S, E, C] of GShard's top-2 gating. */
static const char *top2_combine(struct tf *t, const char *x)
{
	struct mg_builder *b = t->b;
	int64_t h = t->c->hidden, e = t->c->experts, two = 2;
	const char *gates = softmax(b, mgb_op(b, "MatMul", 2, x, mgb_weight(b, "gate.weight", 2, (int64_t[]){ h, e })));
	const char *tk_in[2] = { gates, mgb_ints(b, 1, &two) };
	struct Onnx__NodeProto *top = mgb_node(b, "TopK", 2, tk_in, 2);
	mgb_attr_int(b, top, "axis", -1);
	const char *oh_in[3] = { mgb_out(top, 1), mgb_int(b, e), mgb_floats(b, 2, (float[]){ 0, 1 }) };
	struct Onnx__NodeProto *oh = mgb_node(b, "OneHot", 3, oh_in, 1); /* [b, S, 2, E] */
	mgb_attr_int(b, oh, "axis", -1);
	const char *first = mgb_int(b, 0), *second = mgb_int(b, 1);
	const char *m1 = op_attr(b, "Gather", mgb_out(oh, 0), first, "axis", 2);
	const char *m2 = op_attr(b, "Gather", mgb_out(oh, 0), second, "axis", 2);
	const char *g1 = op_attr(b, "Gather", mgb_out(top, 0), first, "axis", 2);
	const char *g2 = op_attr(b, "Gather", mgb_out(top, 0), second, "axis", 2);
	/* first choices take slots before second choices */
	const char *slot1, *slot2;
	m1 = keep_within_capacity(t, m1, NULL, &slot1);
	m2 = keep_within_capacity(t, m2, reduce_sum(t, m1, 1, true), &slot2);
	/* gate values of the kept choices, renormalized to sum to 1 */
	g1 = mgb_op(b, "Mul", 2, g1, reduce_sum(t, m1, -1, false));
	g2 = mgb_op(b, "Mul", 2, g2, reduce_sum(t, m2, -1, false));
	const char *sum = mgb_op(b, "Add", 2, g1, g2);
	sum = mgb_op(b, "Where", 3, mgb_op(b, "Greater", 2, sum, t->zero), sum, t->one);
	g1 = mgb_op(b, "Div", 2, g1, sum);
	g2 = mgb_op(b, "Div", 2, g2, sum);
	return mgb_op(b, "Add", 2, combine_part(t, g1, m1, slot1), combine_part(t, g2, m2, slot2));
}

static const char *experts(struct tf *t, const char *x)
{
	struct mg_builder *b = t->b;
	int64_t h = t->c->hidden, e = t->c->experts, f = t->ffn, c = t->capacity;
	const char *combine = top2_combine(t, x);
	struct Onnx__NodeProto *cast = mgb_node(b, "Cast", 1,
						(const char *[]){ mgb_op(b, "Greater", 2, combine, t->zero) }, 1);
	mgb_attr_int(b, cast, "to", MG_FLOAT);
	const char *in = einsum(b, "bsec,bsm->ebcm", mgb_out(cast, 0), x); /* [E, b, C, h] */
	in = mgb_op(b, "Reshape", 2, in, mgb_ints(b, 3, (int64_t[]){ e, -1, h }));
	const char *y = mgb_op(b, "MatMul", 2, in, mgb_weight(b, "wi.weight", 3, (int64_t[]){ e, h, f }));
	y = gelu(t, mgb_op(b, "Add", 2, y, mgb_weight(b, "wi.bias", 3, (int64_t[]){ e, 1, f })));
	y = mgb_op(b, "MatMul", 2, y, mgb_weight(b, "wo.weight", 3, (int64_t[]){ e, f, h }));
	y = mgb_op(b, "Add", 2, y, mgb_weight(b, "wo.bias", 3, (int64_t[]){ e, 1, h }));
	y = mgb_op(b, "Reshape", 2, y, mgb_ints(b, 4, (int64_t[]){ e, -1, c, h }));
	return einsum(b, "bsec,ebcm->bsm", combine, y);
}

static const char *layer(struct tf *t, const char *x, int64_t i)
{
	struct mg_builder *b = t->b;
	mgb_scope(b, "h.%lld", (long long)i);
	const char *a = layer_norm(t, x, "ln_1");
	mgb_scope(b, "h.%lld.attn", (long long)i);
	x = mgb_op(b, "Add", 2, x, attention(t, a));
	mgb_scope(b, "h.%lld", (long long)i);
	const char *m = layer_norm(t, x, "ln_2");
	bool moe = is_moe_layer(t->c, i);
	mgb_scope(b, moe ? "h.%lld.moe" : "h.%lld.mlp", (long long)i);
	return mgb_op(b, "Add", 2, x, moe ? experts(t, m) : mlp(t, m));
}

/* ---- the model ------------------------------------------------------------- */

/* mask[q, k] = k <= q, from a Range of positions: never an s x s initializer */
static const char *causal_mask(struct mg_builder *b, int64_t s)
{
	int64_t zero = 0, one = 1;
	const char *pos = mgb_op(b, "Range", 3, mgb_int(b, 0), mgb_int(b, s), mgb_int(b, 1));
	const char *rows = mgb_op(b, "Unsqueeze", 2, pos, mgb_ints(b, 1, &one));
	const char *cols = mgb_op(b, "Unsqueeze", 2, pos, mgb_ints(b, 1, &zero));
	return mgb_op(b, "GreaterOrEqual", 2, rows, cols);
}

static void shared_values(struct tf *t)
{
	struct mg_builder *b = t->b;
	const struct mg_config *c = t->c;
	int64_t minus1 = -1;
	mgb_scope(b, "shared");
	t->mask = causal_mask(b, c->seq);
	t->scale = mgb_float(b, (float)(1 / sqrt((double)t->hd)));
	t->masked = mgb_float(b, -1e4f);
	t->zero = mgb_float(b, 0);
	t->half = mgb_float(b, 0.5f);
	t->one = mgb_float(b, 1);
	t->sqrt2 = mgb_float(b, (float)sqrt(2.0));
	t->heads_shape = mgb_ints(b, 4, (int64_t[]){ 0, 0, c->heads, 3 * t->hd });
	t->bsh_shape = mgb_ints(b, 3, (int64_t[]){ 0, 0, c->hidden });
	t->qkv_split = mgb_ints(b, 3, (int64_t[]){ t->hd, t->hd, t->hd });
	t->last_axis = mgb_ints(b, 1, &minus1);
}

int mg_build_transformer(struct mg_builder *b, const struct mg_config *c)
{
	struct tf t = { .b = b, .c = c, .hd = c->hidden / c->heads, .ffn = c->mlp_ratio * c->hidden };
	int64_t h = c->hidden, v = c->vocab, bs[2] = { c->batch ? c->batch : -1, c->seq };
	if (c->family == MG_MOE)
		t.capacity = 2 * c->seq / c->experts > 0 ? 2 * c->seq / c->experts : 1;
	const char *ids = mgb_input(b, "input_ids", MG_INT64, 2, bs);
	const char *labels = mgb_input(b, "labels", MG_INT64, 2, bs);
	shared_values(&t);
	mgb_scope_clear(b);
	const char *wte = mgb_weight(b, "wte", 2, (int64_t[]){ v, h });
	/* positions 0..s-1 are the rows of wpe in order, so it is added whole */
	const char *wpe = mgb_weight(b, "wpe", 2, (int64_t[]){ c->seq, h });
	const char *x = mgb_op(b, "Add", 2, mgb_op(b, "Gather", 2, wte, ids), wpe);
	for (int64_t i = 0; i < c->layers; i++)
		x = layer(&t, x, i);
	mgb_scope_clear(b);
	x = layer_norm(&t, x, "ln_f");
	static const int64_t swap[2] = { 1, 0 };
	const char *logits = mgb_op(b, "MatMul", 2, x, transpose(b, wte, 2, swap)); /* tied LM head */
	mgb_lm_loss(b, logits, labels, v);
	return 0;
}

/* Exactly the f32 initializers above: per layer QKV and output projection
 * with biases (4h^2 + 4h), two LayerNorms (4h), then either the MLP
 * (2hf + f + h, f = r h; 12h^2 + 13h per GPT layer with r = 4) or a gate
 * [h, E] and E expert MLPs; then wte, wpe and the final LayerNorm. */
int64_t mg_transformer_params(const struct mg_config *c)
{
	int64_t h = c->hidden, f = c->mlp_ratio * h;
	int64_t mlp = 2 * h * f + f + h, n = 0;
	for (int64_t i = 0; i < c->layers; i++)
		n += 4 * h * h + 4 * h + 4 * h + (is_moe_layer(c, i) ? h * c->experts + c->experts * mlp : mlp);
	return n + c->vocab * h + c->seq * h + 2 * h;
}
