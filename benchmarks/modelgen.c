/*
 * modelgen.c: pcc-modelgen, benchmark models as ONNX (opset 17) with
 * unwritten external weights.
 *
 *   pcc-modelgen MODEL -o OUT.onnx [OPTIONS]   (usage() below says all)
 *
 * The weights are named in OUT.onnx as external data in OUT.weights (next
 * to it), which is never written: pcc compiles from the graph and shapes
 * alone. The batch dimension is symbolic ("batch", bind it with
 * `pcc inspect --dim batch=N`) unless --batch is given. Bad arguments exit
 * with status 2, I/O errors with 1, each with one line "pcc-modelgen: ...".
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchmarks/modelgen.h"
#include "ir/ir.h"
#include "version.h"

#define GPT3 "Brown et al. 2020 (GPT-3), Table 2.1"
#define MEGATRON "Narayanan et al. 2021 (Megatron-LM), Table 1"
#define ALPA "Zheng et al. 2022 (Alpa), Table 4 + benchmark code"
#define LLAMA2 "Touvron et al. 2023 (Llama 2), Table 1"
#define LLAMA3 "Dubey et al. 2024 (Llama 3), Table 3"

static const struct mg_config models[] = {
/*
 * GPT-3: "Language Models are Few-Shot Learners", Brown et al. 2020,
 * arXiv:2005.14165, Table 2.1 (n_layers, d_model, n_heads; context 2048,
 * BPE vocabulary 50257). Two rows of that table do not multiply out: 1.3B
 * lists 24 heads of 128 for d_model 2048, so we keep d_head 128 (16 heads);
 * 13B lists d_model 5140, a typo for 40 x 128 = 5120. "2.6b" is the
 * table's 2.7B.
 * 39b, 76b: "Efficient Large-Scale Language Model Training on GPU Clusters
 * Using Megatron-LM", Narayanan et al. 2021, arXiv:2104.04473, Table 1
 * (39.1B: 48 layers, h 8192, 64 heads; 76.1B: 60, 10240, 80), with GPT-3's
 * context and vocabulary (Megatron pads its vocabulary to 51200).
 */
#define G(n, l, h, a, p, src)                                                                                   \
	{                                                                                                       \
		.name = n, .family = MG_GPT, .layers = l, .hidden = h, .heads = a, .seq = 2048, .vocab = 50257, \
		.mlp_ratio = 4, .published = p, .source = src                                                   \
	}
	G("gpt3-125m", 12, 768, 12, 125e6, GPT3),
	G("gpt3-350m", 24, 1024, 16, 350e6, GPT3),
	G("gpt3-760m", 24, 1536, 16, 760e6, GPT3),
	G("gpt3-1.3b", 24, 2048, 16, 1.3e9, GPT3),
	G("gpt3-2.6b", 32, 2560, 32, 2.7e9, GPT3),
	G("gpt3-6.7b", 32, 4096, 32, 6.7e9, GPT3),
	G("gpt3-13b", 40, 5120, 40, 13e9, GPT3),
	G("gpt3-39b", 48, 8192, 64, 39.1e9, MEGATRON),
	G("gpt3-76b", 60, 10240, 80, 76.1e9, MEGATRON),
	G("gpt3-175b", 96, 12288, 96, 175e9, GPT3),
#undef G
/*
 * GShard MoE: "Alpa: Automating Inter- and Intra-Operator Parallelism for
 * Distributed Deep Learning", Zheng et al., OSDI 2022, arXiv:2201.12023,
 * Table 4 and §8.1 (the weak-scaling models, one size per GPU count 1..64
 * as in benchmark/alpa/suite_auto_moe.py), with the configurations of its
 * benchmark code (github.com/alpa-projects/alpa,
 * benchmark/alpa/suite_manual_moe.py moe_specs: layers, hidden, 16 heads,
 * experts, sequence 1024, vocabulary 32000; benchmark_one_case_moe.py:
 * every MLP 8h wide, "intermediate_size = hidden_size * 8", which the
 * published sizes need; 4h would make moe-380m 214M).
 */
#define M(n, l, h, e, p)                                                                                         \
	{                                                                                                        \
		.name = n, .family = MG_MOE, .layers = l, .hidden = h, .heads = 16, .seq = 1024, .vocab = 32000, \
		.mlp_ratio = 8, .experts = e, .published = p, .source = ALPA                                     \
	}
	M("moe-380m", 8, 768, 8, 380e6),
	M("moe-690m", 8, 768, 16, 690e6),
	M("moe-1.3b", 16, 768, 16, 1.3e9),
	M("moe-2.4b", 16, 1024, 16, 2.4e9),
	M("moe-10b", 16, 1536, 32, 10e9),
	M("moe-27b", 16, 2048, 48, 27e9),
	M("moe-70b", 32, 2048, 64, 70e9),
#undef M
/*
 * Llama: "Llama 2: Open Foundation and Fine-Tuned Chat Models", Touvron et
 * al. 2023, arXiv:2307.09288, Table 1 and §2.2 (7B, 13B and 70B; context
 * 4096; grouped-query attention with 8 key/value heads for 70B), and "The
 * Llama 3 Herd of Models", Dubey et al. 2024, arXiv:2407.21783, Table 3
 * (8B and 70B: 8 key/value heads, context 8192, vocabulary 128256, RoPE
 * base 500000), with the MLP widths of their released configurations
 * (11008, 13824, 28672; 14336 for Llama 3 8B).
 */
#define L(n, l, h, a, kv, f, s, v, th, p)                                                                       \
	{                                                                                                       \
		.name = n, .family = MG_LLAMA, .layers = l, .hidden = h, .heads = a, .kv_heads = kv, .ffn = f,  \
		.seq = s, .vocab = v, .rope_theta = th, .published = p, .source = n[5] == '2' ? LLAMA2 : LLAMA3 \
	}
	L("llama2-7b", 32, 4096, 32, 32, 11008, 4096, 32000, 1e4, 6.74e9),
	L("llama2-13b", 40, 5120, 40, 40, 13824, 4096, 32000, 1e4, 13.0e9),
	L("llama2-70b", 80, 8192, 64, 8, 28672, 4096, 32000, 1e4, 68.98e9),
	L("llama3-8b", 32, 4096, 32, 8, 14336, 8192, 128256, 5e5, 8.03e9),
	L("llama3-70b", 80, 8192, 64, 8, 28672, 8192, 128256, 5e5, 70.55e9),
#undef L
/*
 * Wide-ResNet: Alpa (as above), Table 4 and §8.1, with the configurations
 * of benchmark/alpa/suite_wresnet.py wresnet_specs (image 224, depth, base
 * channels, width factor; 500M is its 2-GPU point) and 1024 classes
 * (benchmark_one_case_wresnet.py).
 */
#define W(n, d, ch, w, p)                                                                                  \
	{                                                                                                  \
		.name = n, .family = MG_WRESNET, .layers = d, .channels = ch, .width = w, .classes = 1024, \
		.image = 224, .published = p, .source = ALPA                                               \
	}
	W("wresnet-250m", 50, 160, 2, 250e6),
	W("wresnet-500m", 50, 224, 2, 500e6),
	W("wresnet-1b", 50, 320, 2, 1e9),
	W("wresnet-2b", 50, 448, 2, 2e9),
	W("wresnet-4b", 50, 640, 2, 4e9),
	W("wresnet-6.8b", 50, 320, 16, 6.8e9),
	W("wresnet-13b", 101, 320, 16, 13e9),
#undef W
};

#define NMODELS ((int)(sizeof models / sizeof models[0]))
#define MAX_BATCH (INT64_C(1) << 20)
#define MAX_SEQ (INT64_C(1) << 20)
#define MAX_VOCAB (INT64_C(1) << 24)
#define MAX_LAYERS 4096
#define MAX_IMAGE 8192

struct args {
	const char *model, *out;
	int64_t batch, seq, vocab, layers, image; /* 0: the model's own */
	bool list;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pcc-modelgen MODEL -o OUT.onnx [--batch N] [--seq N] [--vocab N] [--layers N]\n"
		   "                    [--image N]\n"
		   "       pcc-modelgen --list | --help | --version\n"
		   "\n"
		   "Writes a benchmark model as ONNX (opset 17): graph and shapes, with the\n"
		   "weights as external data in OUT.weights, which is never written.\n"
		   "  --batch N  a fixed batch size (default: symbolic dimension \"batch\")\n"
		   "  --seq N    sequence length (transformers)\n"
		   "  --vocab N  vocabulary size (transformers)\n"
		   "  --layers N decoder layers (transformers; MoE layers stay every second one)\n"
		   "  --image N  image height and width (Wide-ResNet; 224 by default)\n"
		   "  --list     every model with its configuration and parameter counts\n");
}

static int64_t params(const struct mg_config *c)
{
	return c->family == MG_WRESNET ? mg_wresnet_params(c)
	       : c->family == MG_LLAMA ? mg_llama_params(c)
				       : mg_transformer_params(c);
}

static const struct mg_config *find_model(const char *name)
{
	for (int i = 0; i < NMODELS; i++)
		if (strcmp(models[i].name, name) == 0)
			return &models[i];
	return NULL;
}

/* ---- --list ------------------------------------------------------------- */

static const char *human(double x, char *buf, size_t n)
{
	if (x >= 1e9)
		snprintf(buf, n, "%.4gB", x / 1e9);
	else
		snprintf(buf, n, "%.4gM", x / 1e6);
	return buf;
}

static void describe(const struct mg_config *c, char *buf, size_t n)
{
	switch (c->family) {
	case MG_GPT:
		snprintf(buf, n, "layers %lld, hidden %lld, heads %lld, seq %lld, vocab %lld", (long long)c->layers,
			 (long long)c->hidden, (long long)c->heads, (long long)c->seq, (long long)c->vocab);
		return;
	case MG_MOE:
		snprintf(buf, n, "layers %lld, hidden %lld, heads %lld, experts %lld, mlp %lldh, seq %lld, vocab %lld",
			 (long long)c->layers, (long long)c->hidden, (long long)c->heads, (long long)c->experts,
			 (long long)c->mlp_ratio, (long long)c->seq, (long long)c->vocab);
		return;
	case MG_LLAMA:
		snprintf(buf, n, "layers %lld, hidden %lld, heads %lld (kv %lld), mlp %lld, seq %lld, vocab %lld",
			 (long long)c->layers, (long long)c->hidden, (long long)c->heads, (long long)c->kv_heads,
			 (long long)c->ffn, (long long)c->seq, (long long)c->vocab);
		return;
	case MG_WRESNET:
		snprintf(buf, n, "depth %lld, channels %lld, width %lld, image %lld, classes %lld",
			 (long long)c->layers, (long long)c->channels, (long long)c->width, (long long)c->image,
			 (long long)c->classes);
		return;
	case MG_FAMILY_COUNT:
		break;
	}
	assert(!"bad family");
}

static void list(FILE *f)
{
	char cfg[160], pub[32];
	fprintf(f, "%-13s %-76s %13s %9s %7s  %s\n", "model", "configuration", "params", "published", "diff", "source");
	for (int i = 0; i < NMODELS; i++) {
		const struct mg_config *c = &models[i];
		int64_t p = params(c);
		describe(c, cfg, sizeof cfg);
		fprintf(f, "%-13s %-76s %13lld %9s %+6.2f%%  %s\n", c->name, cfg, (long long)p,
			human(c->published, pub, sizeof pub), 100 * ((double)p / c->published - 1), c->source);
	}
}

/* ---- arguments ----------------------------------------------------------- */

static int parse_count(const char *opt, const char *s, int64_t max, int64_t *out)
{
	char *end = (char *)s;
	errno = 0;
	long long v = s[0] >= '0' && s[0] <= '9' ? strtoll(s, &end, 10) : -1;
	if (v < 1 || v > max || errno || *end)
		return mg_errorf(-EINVAL, "%s expects an integer from 1 to %lld, not '%s'", opt, (long long)max, s);
	*out = v;
	return 0;
}

enum { PARSE_HELP = 1, PARSE_VERSION };

/* 0, PARSE_HELP, PARSE_VERSION, or -EINVAL naming the usage error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	enum { O_BATCH = 256, O_SEQ, O_VOCAB, O_LAYERS, O_IMAGE, O_LIST, O_VERSION };
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ "list", no_argument, NULL, O_LIST },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "vocab", required_argument, NULL, O_VOCAB },
		{ "layers", required_argument, NULL, O_LAYERS },
		{ "image", required_argument, NULL, O_IMAGE },
		{ 0 },
	};
	int c, li = 0, rc = 0;
	memset(a, 0, sizeof *a);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", lo, &li)) != -1) {
		switch (c) {
		case 'h':
			return PARSE_HELP;
		case O_VERSION:
			return PARSE_VERSION;
		case O_LIST:
			a->list = true;
			break;
		case 'o':
			a->out = optarg;
			break;
		case O_BATCH:
			rc = parse_count("--batch", optarg, MAX_BATCH, &a->batch);
			break;
		case O_SEQ:
			rc = parse_count("--seq", optarg, MAX_SEQ, &a->seq);
			break;
		case O_VOCAB:
			rc = parse_count("--vocab", optarg, MAX_VOCAB, &a->vocab);
			break;
		case O_LAYERS:
			rc = parse_count("--layers", optarg, MAX_LAYERS, &a->layers);
			break;
		case O_IMAGE:
			rc = parse_count("--image", optarg, MAX_IMAGE, &a->image);
			break;
		default:
			ir_getopt_error(c, argv);
			return mg_errorf(-EINVAL, "%s", ir_error());
		}
		if (rc < 0)
			return rc;
	}
	if (optind < argc)
		a->model = argv[optind];
	if (optind + 1 < argc)
		return mg_errorf(-EINVAL, "one model at a time ('%s' and '%s')", a->model, argv[optind + 1]);
	if (a->list)
		return 0;
	if (!a->model)
		return mg_errorf(-EINVAL, "no model given (try --list)");
	if (!find_model(a->model))
		return mg_errorf(-EINVAL, "unknown model '%s' (try --list)", a->model);
	if (!a->out)
		return mg_errorf(-EINVAL, "no output file given (-o OUT.onnx)");
	if (find_model(a->model)->family == MG_WRESNET && (a->seq || a->vocab || a->layers))
		return mg_errorf(-EINVAL, "%s is not a transformer: --seq, --vocab and --layers do not apply",
				 a->model);
	if (find_model(a->model)->family != MG_WRESNET && a->image)
		return mg_errorf(-EINVAL, "%s is not a Wide-ResNet: --image does not apply", a->model);
	return 0;
}

/* ---- generation ---------------------------------------------------------- */

/* OUT.onnx -> OUT.weights, relative to the model's directory */
static void weights_location(const char *out, char *buf, size_t n)
{
	const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
	size_t len = strlen(base);
	if (len > 5 && strcmp(base + len - 5, ".onnx") == 0)
		len -= 5;
	snprintf(buf, n, "%.*s.weights", (int)len, base);
}

static int generate(const struct args *a)
{
	struct mg_config c = *find_model(a->model);
	char loc[256];
	c.batch = a->batch;
	c.seq = a->seq ? a->seq : c.seq;
	c.vocab = a->vocab ? a->vocab : c.vocab;
	c.layers = a->layers ? a->layers : c.layers;
	c.image = a->image ? a->image : c.image;
	weights_location(a->out, loc, sizeof loc);
	struct mg_builder *b = mgb_new(loc);
	if (!b)
		return -ENOMEM;
	int rc = c.family == MG_WRESNET ? mg_build_wresnet(b, &c)
		 : c.family == MG_LLAMA ? mg_build_llama(b, &c)
					: mg_build_transformer(b, &c);
	if (rc == 0)
		rc = mgb_write(b, a->out, c.name);
	if (rc == 0) {
		/* the closed form and the graph are written separately; they must agree */
		assert(mgb_params(b) == params(&c));
		printf("%s: %s, %lld parameters, weights in %s (not written)\n", a->out, c.name,
		       (long long)mgb_params(b), loc);
	}
	mgb_free(b);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc < 0) {
		fprintf(stderr, "pcc-modelgen: %s (try 'pcc-modelgen --help')\n", mg_error());
		return 2;
	}
	if (rc == PARSE_HELP) {
		usage(stdout);
		return 0;
	}
	if (rc == PARSE_VERSION) {
		printf("pcc-modelgen %s\n", PCC_VERSION);
		return 0;
	}
	if (a.list) {
		list(stdout);
		return 0;
	}
	if (generate(&a) < 0) {
		fprintf(stderr, "pcc-modelgen: %s\n", mg_error());
		return 1;
	}
	return 0;
}
