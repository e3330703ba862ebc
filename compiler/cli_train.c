/*
 * cli_train.c: the `pcc train` command line.
 *
 *   pcc train MODEL -i DIR [--optimizer sgd|momentum|nesterov|adam|adamw] [--lr X]
 *             [--steps N] [--save-onnx OUT.onnx] [--loss SPEC] [--freeze|--trainable PATTERN]...
 *             [--skip-nonfinite]
 *             [--momentum M] [--betas B1,B2] [--eps E] [--weight-decay W] [--clip-norm C]
 *             [--schedule constant|cosine|linear] [--warmup N] [--total-steps N] [--min-lr X]
 *             [--precision f32|bf16|f16|f64] [--accum M] [--log-every N] [--dim N=V]...
 *             [--const NAME=FILE|DIR]...
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli.h"
#include "compiler/compiler.h"

#define MAX_LIST 64

void cli_train_usage(FILE *f)
{
	fprintf(f,
		"       pcc train MODEL -i DIR [--optimizer sgd|momentum|nesterov|adam|adamw] [--lr X]\n"
		"                 [--steps N] [--save-onnx OUT.onnx] [--log-json FILE] [--loss cross_entropy:LOGITS,LABELS|mse:OUT,TARGET]\n"
		"                 [--freeze PATTERN]... [--trainable PATTERN]... [--skip-nonfinite]\n"
		"                 [--momentum M] [--betas B1,B2] [--eps E] [--weight-decay W]\n"
		"                 [--clip-norm C] [--schedule constant|cosine|linear] [--warmup N] [--total-steps N] [--min-lr X]\n"
		"                 [--precision f32|bf16|f16|f64] [--accum M] [--log-every N] [--dim NAME=VALUE]...\n"
		"                 [--const NAME=FILE|DIR]...\n");
}

static int num(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return ir_errorf(-EINVAL, "%s %s: expected a finite number", opt, s);
	*out = v;
	return 0;
}

static int count(const char *opt, const char *s, int64_t lo, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v < lo)
		return ir_errorf(-EINVAL, "%s %s: expected an integer >= %lld", opt, s, (long long)lo);
	*out = v;
	return 0;
}

int cli_train_flag(const char *s, struct train_opts *t)
{
	if (strcmp(s, "--skip-nonfinite"))
		return 0;
	t->skip_nonfinite = true;
	return 1;
}

int cli_train_option(const char *s, const char *v, struct train_opts *t, struct train_pattern *pats, int max_pats)
{
	int64_t k;
	int rc = 0;
	if (!strcmp(s, "--loss"))
		t->loss = v;
	else if (!strcmp(s, "--optimizer") || !strcmp(s, "--optim"))
		rc = train_optim_parse(v, &t->optim);
	else if (!strcmp(s, "--schedule"))
		rc = train_sched_parse(v, &t->sched);
	else if (!strcmp(s, "--lr"))
		rc = num(s, v, &t->lr);
	else if (!strcmp(s, "--min-lr"))
		rc = num(s, v, &t->min_lr);
	else if (!strcmp(s, "--momentum"))
		rc = num(s, v, &t->momentum);
	else if (!strcmp(s, "--eps"))
		rc = num(s, v, &t->eps);
	else if (!strcmp(s, "--weight-decay"))
		rc = num(s, v, &t->weight_decay);
	else if (!strcmp(s, "--clip-norm"))
		rc = num(s, v, &t->clip_norm);
	else if (!strcmp(s, "--betas")) {
		char *end;
		t->beta1 = strtod(v, &end);
		if (*end != ',' || num(s, end + 1, &t->beta2) < 0)
			rc = ir_errorf(-EINVAL, "--betas %s: expected B1,B2", v);
	} else if (!strcmp(s, "--warmup"))
		rc = count(s, v, 0, &t->warmup);
	else if (!strcmp(s, "--total-steps"))
		rc = count(s, v, 1, &t->total);
	else if (!strcmp(s, "--accum")) {
		rc = count(s, v, 1, &k);
		t->accum = (int)(k > 1 << 20 ? 1 << 20 : k);
	} else if (!strcmp(s, "--precision")) {
		rc = ir_dtype_parse(v, &t->compute);
		if (rc < 0)
			rc = ir_errorf(-EINVAL, "--precision %s: expected f32, bf16, f16 or f64", v);
	} else if (!strcmp(s, "--freeze") || !strcmp(s, "--trainable")) {
		if (t->npatterns == max_pats)
			return ir_errorf(-EINVAL, "more than %d --freeze and --trainable patterns", max_pats);
		pats[t->npatterns++] = (struct train_pattern){ v, s[2] == 't' };
		t->patterns = pats;
	} else {
		return 0;
	}
	return rc < 0 ? rc : 1;
}

static int parse(int argc, char **argv, struct train_run_opts *o, struct train_pattern *pats,
		 struct onnx_dim_binding *dims, struct cli_consts *consts)
{
	for (int i = 2; i < argc; i++) {
		const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int rc = 0;
		if (s[0] != '-') {
			if (o->model)
				return ir_errorf(-EINVAL, "train: unexpected argument '%s'", s);
			o->model = s;
			continue;
		}
		if (cli_train_flag(s, &o->t))
			continue;
		if (!v)
			return ir_errorf(-EINVAL, "train: option '%s' needs a value", s);
		i++;
		if (!strcmp(s, "-i"))
			o->in_dir = v;
		else if (!strcmp(s, "--save-onnx"))
			o->save = v;
		else if (!strcmp(s, "--steps"))
			rc = count(s, v, 1, &o->steps);
		else if (!strcmp(s, "--log-every"))
			rc = count(s, v, 1, &o->log_every);
		else if (!strcmp(s, "--log-json"))
			o->log_json = v;
		else if (!strcmp(s, "--dim"))
			rc = cli_parse_dim(v, dims, &o->imp.ndims, MAX_LIST);
		else if (!strcmp(s, "--const"))
			rc = cli_parse_const(v, consts);
		else if ((rc = cli_train_option(s, v, &o->t, pats, MAX_LIST)) == 0)
			return ir_errorf(-EINVAL, "train: unknown option '%s'", s);
		if (rc < 0)
			return rc;
	}
	if (!o->model)
		return ir_errorf(-EINVAL, "train: no model given");
	if (!o->in_dir)
		return ir_errorf(-EINVAL, "train: -i DIR is required");
	return 0;
}

int cmd_train(int argc, char **argv)
{
	struct train_run_opts o = { .log = stdout };
	static struct train_pattern pats[MAX_LIST];
	static struct onnx_dim_binding dims[MAX_LIST];
	static struct cli_consts consts;
	train_opts_init(&o.t);
	onnx_import_opts_init(&o.imp);
	o.imp.dims = dims;
	int rc = parse(argc, argv, &o, pats, dims, &consts);
	if (rc == 0 && (rc = cli_consts_load(&consts, o.model)) == 0)
		cli_consts_use(&consts, &o.imp);
	/* The schedule length defaults to the run. */
	if (rc == 0 && o.t.sched != TRAIN_LR_CONSTANT && o.t.total == 0)
		o.t.total = o.steps > 0 ? o.steps : 1;
	if (rc == 0)
		rc = train_run(&o);
	if (rc == 0 && o.save)
		printf("wrote %s\n", o.save);
	for (int i = 0; i < o.imp.ndims; i++)
		free((char *)dims[i].name);
	cli_consts_free(&consts);
	return rc;
}
