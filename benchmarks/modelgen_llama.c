/*
 * modelgen_llama.c: Llama decoders (Llama 2 and Llama 3), as a training
 * step's forward pass ending in the loss, written the way PyTorch's
 * exporter writes Hugging Face's LlamaForCausalLM:
 *
 *   a = x + o_proj(attention(RMSNorm1(x)))
 *   y = a + down_proj(silu(gate_proj(n)) * up_proj(n)),  n = RMSNorm2(a)
 *
 * RMSNorm: x / sqrt(mean(x^2) + 1e-5) * weight (Pow, ReduceMean, Add,
 * Sqrt, Reciprocal, Mul: no RMSNormalization op before opset 23).
 * Attention: q, k and v projections without bias; grouped-query attention
 * with kv_heads key and value heads, each read by heads / kv_heads query
 * heads (Hugging Face's repeat_kv: Unsqueeze, Expand, Reshape); rotary
 * position embeddings on q and k (rotate_half: the two halves of each head
 * swapped and the first negated, Slice and Concat) with cos and sin of
 * positions x inverse frequencies (theta 10000 or 500000) computed by ops
 * from a Range; causal mask from a Range, as modelgen_gpt.c's. silu as x *
 * Sigmoid(x). Token embedding [V, h] and an untied LM head [h, V]; loss:
 * mean softmax cross entropy of [b*s, V] logits against int64 labels.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "benchmarks/modelgen.h"

struct ll {
	struct mg_builder *b;
	const struct mg_config *c;
	int64_t hd;                 /* head dim */
	const char *mask, *masked;  /* [s, s] causal mask; a masked score */
	const char *cos, *sin;      /* [s, hd] */
	const char *scale;          /* 1 / sqrt(hd) */
	const char *eps, *two;      /* RMSNorm's epsilon; the exponent 2 */
	const char *q_shape;        /* [0, 0, heads, hd] */
	const char *kv_shape;       /* [0, 0, kv_heads, hd] */
	const char *rep_shape;      /* [b, kv_heads, rep, s, hd] */
	const char *heads4;         /* [b, heads, s, hd] */
	const char *bsh_shape;      /* [0, 0, h] */
	const char *last_axis;      /* [-1] */
	const char *two_axis;       /* [2] */
	const char *lo, *mid, *end; /* [0], [hd / 2], [hd]: the halves of a head */
};

static const char *proj(struct ll *t, const char *x, const char *name, int64_t in, int64_t out)
{
	char w[64];
	snprintf(w, sizeof w, "%s.weight", name);
	return mgb_op(t->b, "MatMul", 2, x, mgb_weight(t->b, w, 2, (int64_t[]){ in, out }));
}

static const char *rms_norm(struct ll *t, const char *x, const char *name)
{
	struct mg_builder *b = t->b;
	char w[64];
	int64_t h = t->c->hidden;
	snprintf(w, sizeof w, "%s.weight", name);
	const char *in[2] = { mgb_op(b, "Pow", 2, x, t->two), t->last_axis };
	struct Onnx__NodeProto *mean = mgb_node(b, "ReduceMean", 2, in, 1);
	mgb_attr_int(b, mean, "keepdims", 1);
	const char *r = mgb_op(b, "Reciprocal", 1, mgb_op(b, "Sqrt", 1, mgb_op(b, "Add", 2, mgb_out(mean, 0), t->eps)));
	return mgb_op(b, "Mul", 2, mgb_weight(b, w, 1, &h), mgb_op(b, "Mul", 2, x, r));
}

static const char *transpose(struct mg_builder *b, const char *x, int rank, const int64_t *perm)
{
	struct Onnx__NodeProto *n = mgb_node(b, "Transpose", 1, &x, 1);
	mgb_attr_ints(b, n, "perm", rank, perm);
	return mgb_out(n, 0);
}

/* x [b, heads, s, hd] with the rotary embedding: x cos + rotate_half(x) sin */
static const char *rotary(struct ll *t, const char *x)
{
	struct mg_builder *b = t->b;
	const char *x1 = mgb_op(b, "Slice", 4, x, t->lo, t->mid, t->last_axis);
	const char *x2 = mgb_op(b, "Slice", 4, x, t->mid, t->end, t->last_axis);
	const char *in[2] = { mgb_op(b, "Neg", 1, x2), x1 };
	struct Onnx__NodeProto *cat = mgb_node(b, "Concat", 2, in, 1);
	mgb_attr_int(b, cat, "axis", -1);
	return mgb_op(b, "Add", 2, mgb_op(b, "Mul", 2, x, t->cos), mgb_op(b, "Mul", 2, mgb_out(cat, 0), t->sin));
}

/* [b, kv_heads, s, hd] read by heads / kv_heads query heads each: [b, heads, s, hd] */
static const char *repeat_kv(struct ll *t, const char *x)
{
	struct mg_builder *b = t->b;
	if (t->c->kv_heads == t->c->heads)
		return x;
	const char *u = mgb_op(b, "Unsqueeze", 2, x, t->two_axis);
	return mgb_op(b, "Reshape", 2, mgb_op(b, "Expand", 2, u, t->rep_shape), t->heads4);
}

static const char *attention(struct ll *t, const char *x)
{
	struct mg_builder *b = t->b;
	int64_t h = t->c->hidden, kv = t->c->kv_heads * t->hd;
	static const int64_t to_bhsd[4] = { 0, 2, 1, 3 }, swap_last[4] = { 0, 1, 3, 2 };
	const char *q = transpose(b, mgb_op(b, "Reshape", 2, proj(t, x, "q_proj", h, h), t->q_shape), 4, to_bhsd);
	const char *k = transpose(b, mgb_op(b, "Reshape", 2, proj(t, x, "k_proj", h, kv), t->kv_shape), 4, to_bhsd);
	const char *v = transpose(b, mgb_op(b, "Reshape", 2, proj(t, x, "v_proj", h, kv), t->kv_shape), 4, to_bhsd);
	q = rotary(t, q);
	k = repeat_kv(t, rotary(t, k));
	v = repeat_kv(t, v);
	const char *s = mgb_op(b, "Mul", 2, mgb_op(b, "MatMul", 2, q, transpose(b, k, 4, swap_last)), t->scale);
	s = mgb_op(b, "Where", 3, t->mask, s, t->masked);
	struct Onnx__NodeProto *sm = mgb_node(b, "Softmax", 1, &s, 1);
	mgb_attr_int(b, sm, "axis", -1);
	const char *ctx = mgb_op(b, "MatMul", 2, mgb_out(sm, 0), v);
	ctx = mgb_op(b, "Reshape", 2, transpose(b, ctx, 4, to_bhsd), t->bsh_shape);
	return proj(t, ctx, "o_proj", h, h);
}

static const char *mlp(struct ll *t, const char *x)
{
	struct mg_builder *b = t->b;
	int64_t h = t->c->hidden, f = t->c->ffn;
	const char *g = proj(t, x, "gate_proj", h, f);
	g = mgb_op(b, "Mul", 2, g, mgb_op(b, "Sigmoid", 1, g));
	return proj(t, mgb_op(b, "Mul", 2, g, proj(t, x, "up_proj", h, f)), "down_proj", f, h);
}

static const char *layer(struct ll *t, const char *x, int64_t i)
{
	struct mg_builder *b = t->b;
	mgb_scope(b, "layers.%lld", (long long)i);
	const char *a = rms_norm(t, x, "input_layernorm");
	mgb_scope(b, "layers.%lld.self_attn", (long long)i);
	x = mgb_op(b, "Add", 2, x, attention(t, a));
	mgb_scope(b, "layers.%lld", (long long)i);
	const char *n = rms_norm(t, x, "post_attention_layernorm");
	mgb_scope(b, "layers.%lld.mlp", (long long)i);
	return mgb_op(b, "Add", 2, x, mlp(t, n));
}

/* cos and sin [s, hd] of position p x inverse frequency theta^(-2j/hd),
 * each frequency twice (the halves of a head) */
static void rotary_tables(struct ll *t)
{
	struct mg_builder *b = t->b;
	int64_t s = t->c->seq, half = t->hd / 2, one = 1, zero = 0;
	float inv[512];
	for (int64_t j = 0; j < half; j++)
		inv[j] = (float)pow(t->c->rope_theta, -2.0 * (double)j / (double)t->hd);
	const char *pos = mgb_op(b, "Range", 3, mgb_float(b, 0), mgb_float(b, (float)s), mgb_float(b, 1));
	const char *f = mgb_op(b, "Mul", 2, mgb_op(b, "Unsqueeze", 2, pos, mgb_ints(b, 1, &one)),
			       mgb_op(b, "Unsqueeze", 2, mgb_floats(b, (int)half, inv), mgb_ints(b, 1, &zero)));
	const char *in[2] = { f, f };
	struct Onnx__NodeProto *cat = mgb_node(b, "Concat", 2, in, 1);
	mgb_attr_int(b, cat, "axis", -1);
	t->cos = mgb_op(b, "Cos", 1, mgb_out(cat, 0));
	t->sin = mgb_op(b, "Sin", 1, mgb_out(cat, 0));
}

int mg_build_llama(struct mg_builder *b, const struct mg_config *c)
{
	struct ll t = { .b = b, .c = c, .hd = c->hidden / c->heads };
	int64_t h = c->hidden, v = c->vocab, bs[2] = { c->batch ? c->batch : -1, c->seq }, minus1 = -1, two = 2;
	if (t.hd % 2 || t.hd / 2 > 512 || c->heads % c->kv_heads)
		return mg_errorf(-EINVAL,
				 "%s: head dim %lld and %lld of %lld heads for keys and values do not make a "
				 "Llama",
				 c->name, (long long)t.hd, (long long)c->kv_heads, (long long)c->heads);
	const char *ids = mgb_input(b, "input_ids", MG_INT64, 2, bs);
	const char *labels = mgb_input(b, "labels", MG_INT64, 2, bs);
	mgb_scope(b, "shared");
	int64_t zero = 0, s = c->seq, one = 1;
	const char *p = mgb_op(b, "Range", 3, mgb_int(b, 0), mgb_int(b, s), mgb_int(b, 1));
	t.mask = mgb_op(b, "GreaterOrEqual", 2, mgb_op(b, "Unsqueeze", 2, p, mgb_ints(b, 1, &one)),
			mgb_op(b, "Unsqueeze", 2, p, mgb_ints(b, 1, &zero)));
	t.masked = mgb_float(b, -1e4f);
	t.scale = mgb_float(b, (float)(1 / sqrt((double)t.hd)));
	t.eps = mgb_float(b, 1e-5f);
	t.two = mgb_float(b, 2);
	t.q_shape = mgb_ints(b, 4, (int64_t[]){ 0, 0, c->heads, t.hd });
	t.kv_shape = mgb_ints(b, 4, (int64_t[]){ 0, 0, c->kv_heads, t.hd });
	/* a static batch for Expand's and Reshape's shapes; a symbolic one
	 * takes them from the input */
	const char *bdim = c->batch ? mgb_ints(b, 1, (int64_t[]){ c->batch })
				    : mgb_op(b, "Slice", 4, mgb_op(b, "Shape", 1, ids), mgb_ints(b, 1, &zero),
					     mgb_ints(b, 1, &one), mgb_ints(b, 1, &zero));
	const char *rin[2] = { bdim, mgb_ints(b, 4, (int64_t[]){ c->kv_heads, c->heads / c->kv_heads, s, t.hd }) };
	struct Onnx__NodeProto *rep = mgb_node(b, "Concat", 2, rin, 1);
	mgb_attr_int(b, rep, "axis", 0);
	t.rep_shape = mgb_out(rep, 0);
	const char *hin[2] = { bdim, mgb_ints(b, 3, (int64_t[]){ c->heads, s, t.hd }) };
	struct Onnx__NodeProto *h4 = mgb_node(b, "Concat", 2, hin, 1);
	mgb_attr_int(b, h4, "axis", 0);
	t.heads4 = mgb_out(h4, 0);
	t.bsh_shape = mgb_ints(b, 3, (int64_t[]){ 0, 0, h });
	t.last_axis = mgb_ints(b, 1, &minus1);
	t.two_axis = mgb_ints(b, 1, &two);
	t.lo = mgb_ints(b, 1, &zero);
	t.mid = mgb_ints(b, 1, (int64_t[]){ t.hd / 2 });
	t.end = mgb_ints(b, 1, &t.hd);
	rotary_tables(&t);
	mgb_scope_clear(b);
	const char *x = mgb_op(b, "Gather", 2, mgb_weight(b, "embed_tokens.weight", 2, (int64_t[]){ v, h }), ids);
	for (int64_t i = 0; i < c->layers; i++)
		x = layer(&t, x, i);
	mgb_scope_clear(b);
	x = rms_norm(&t, x, "norm");
	mgb_lm_loss(b, proj(&t, x, "lm_head", h, v), labels, v);
	return 0;
}

/* Per layer q and o [h, h], k and v [h, kv_heads hd], gate, up [h, f] and
 * down [f, h], two RMSNorm weights [h]; then the embedding and the LM head
 * [V, h] each, and the final norm [h]. */
int64_t mg_llama_params(const struct mg_config *c)
{
	int64_t h = c->hidden, kv = c->kv_heads * (h / c->heads), f = c->ffn;
	return c->layers * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + 2 * c->vocab * h + h;
}
