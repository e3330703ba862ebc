/*
 * modelgen_wresnet.c: Wide-ResNet as Alpa benchmarks it (alpa/model/
 * wide_resnet.py, after Flax's ImageNet ResNet v1.5), a training step's
 * forward pass ending in the loss.
 *
 * Stem: Conv 7x7/2 (C channels) + BN + ReLU, MaxPool 3x3/2. Four stages of
 * bottleneck blocks ({3,4,6,3} for depth 50, {3,4,23,3} for 101); stage i
 * has f = C 2^i and its first block strides by 2 (but stage 0's). Block:
 * 1x1 f, 3x3 f*width (the stride), 1x1 4f, each Conv (no bias) + BN, ReLU
 * between; a 1x1 projection + BN on the shortcut where the shape changes;
 * ReLU after the residual Add. Note that, as in Alpa's model, the width
 * factor widens only the 3x3 convolution. Head: GlobalAveragePool, a
 * dense layer [4f, classes] + bias, mean softmax cross entropy against
 * int64 labels [batch].
 *
 * BatchNormalization runs in training mode (batch statistics). Its running
 * mean and variance are initializers (model state), but not parameters:
 * as in torch's training-mode export, the updated running statistics
 * (BN outputs 1 and 2) are not graph outputs, so nothing the loss needs
 * reads them and `pcc inspect` does not count them, which is also how
 * Alpa counts (params apart from batch_stats).
 */
#include <stdbool.h>
#include <stdio.h>

#include "benchmarks/modelgen.h"

static const char *conv_bn(struct mg_builder *b, const char *x, const char *name, int64_t cin, int64_t cout, int64_t k,
			   int64_t stride, bool relu)
{
	char w[48], scale[48], bias[48], mean[48], var[48];
	int64_t pad = k / 2;
	snprintf(w, sizeof w, "%s.weight", name);
	snprintf(scale, sizeof scale, "%s.bn.scale", name);
	snprintf(bias, sizeof bias, "%s.bn.bias", name);
	snprintf(mean, sizeof mean, "%s.bn.running_mean", name);
	snprintf(var, sizeof var, "%s.bn.running_var", name);
	const char *conv_in[2] = { x, mgb_weight(b, w, 4, (int64_t[]){ cout, cin, k, k }) };
	struct Onnx__NodeProto *conv = mgb_node(b, "Conv", 2, conv_in, 1);
	mgb_attr_ints(b, conv, "kernel_shape", 2, (int64_t[]){ k, k });
	mgb_attr_ints(b, conv, "strides", 2, (int64_t[]){ stride, stride });
	mgb_attr_ints(b, conv, "pads", 4, (int64_t[]){ pad, pad, pad, pad });
	const char *bn_in[5] = { mgb_out(conv, 0), mgb_weight(b, scale, 1, &cout), mgb_weight(b, bias, 1, &cout),
				 mgb_state(b, mean, 1, &cout), mgb_state(b, var, 1, &cout) };
	/* training mode has the updated running statistics as outputs 1, 2 */
	struct Onnx__NodeProto *bn = mgb_node(b, "BatchNormalization", 5, bn_in, 3);
	mgb_attr_float(b, bn, "epsilon", 1e-5f);
	mgb_attr_float(b, bn, "momentum", 0.9f);
	mgb_attr_int(b, bn, "training_mode", 1);
	return relu ? mgb_op(b, "Relu", 1, mgb_out(bn, 0)) : mgb_out(bn, 0);
}

static int64_t conv_bn_params(int64_t cin, int64_t cout, int64_t k)
{
	return cin * cout * k * k + 2 * cout; /* weight; BN scale and bias */
}

static const int64_t stages50[4] = { 3, 4, 6, 3 }, stages101[4] = { 3, 4, 23, 3 };

static const int64_t *stage_sizes(const struct mg_config *c)
{
	return c->layers == 101 ? stages101 : stages50;
}

static const char *block(struct mg_builder *b, const char *x, int64_t cin, int64_t f, int64_t width, int64_t stride)
{
	const char *y = conv_bn(b, x, "conv1", cin, f, 1, 1, true);
	y = conv_bn(b, y, "conv2", f, f * width, 3, stride, true);
	y = conv_bn(b, y, "conv3", f * width, 4 * f, 1, 1, false);
	const char *shortcut = cin != 4 * f || stride != 1 ? conv_bn(b, x, "proj", cin, 4 * f, 1, stride, false) : x;
	return mgb_op(b, "Relu", 1, mgb_op(b, "Add", 2, y, shortcut));
}

int mg_build_wresnet(struct mg_builder *b, const struct mg_config *c)
{
	const int64_t *sizes = stage_sizes(c);
	int64_t batch = c->batch ? c->batch : -1, ch = c->channels;
	const char *x = mgb_input(b, "images", MG_FLOAT, 4, (int64_t[]){ batch, 3, c->image, c->image });
	const char *labels = mgb_input(b, "labels", MG_INT64, 1, &batch);
	mgb_scope(b, "stem");
	x = conv_bn(b, x, "conv", 3, ch, 7, 2, true);
	struct Onnx__NodeProto *pool = mgb_node(b, "MaxPool", 1, &x, 1);
	mgb_attr_ints(b, pool, "kernel_shape", 2, (int64_t[]){ 3, 3 });
	mgb_attr_ints(b, pool, "strides", 2, (int64_t[]){ 2, 2 });
	mgb_attr_ints(b, pool, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
	x = mgb_out(pool, 0);
	int64_t cin = ch;
	for (int i = 0; i < 4; i++) {
		int64_t f = ch << i;
		for (int64_t j = 0; j < sizes[i]; j++) {
			mgb_scope(b, "stage%d.block%lld", i + 1, (long long)j);
			x = block(b, x, cin, f, c->width, i > 0 && j == 0 ? 2 : 1);
			cin = 4 * f;
		}
	}
	mgb_scope(b, "head");
	x = mgb_op(b, "GlobalAveragePool", 1, x);
	struct Onnx__NodeProto *flat = mgb_node(b, "Flatten", 1, &x, 1);
	mgb_attr_int(b, flat, "axis", 1);
	const char *gemm_in[3] = { mgb_out(flat, 0), mgb_weight(b, "fc.weight", 2, (int64_t[]){ cin, c->classes }),
				   mgb_weight(b, "fc.bias", 1, &c->classes) };
	const char *logits = mgb_out(mgb_node(b, "Gemm", 3, gemm_in, 1), 0);
	const char *loss_in[2] = { logits, labels };
	struct Onnx__NodeProto *loss = mgb_node(b, "SoftmaxCrossEntropyLoss", 2, loss_in, 1);
	mgb_attr_str(b, loss, "reduction", "mean");
	mgb_rename(b, loss, 0, "loss");
	mgb_output(b, "loss", MG_FLOAT, 0, NULL);
	return 0;
}

int64_t mg_wresnet_params(const struct mg_config *c)
{
	const int64_t *sizes = stage_sizes(c);
	int64_t ch = c->channels, cin = ch, n = conv_bn_params(3, ch, 7);
	for (int i = 0; i < 4; i++) {
		int64_t f = ch << i;
		for (int64_t j = 0; j < sizes[i]; j++) {
			n += conv_bn_params(cin, f, 1) + conv_bn_params(f, f * c->width, 3) +
			     conv_bn_params(f * c->width, 4 * f, 1);
			if (cin != 4 * f || (i > 0 && j == 0))
				n += conv_bn_params(cin, 4 * f, 1);
			cin = 4 * f;
		}
	}
	return n + cin * c->classes + c->classes;
}
