/*
 * lr.c: the learning-rate schedule (lr.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/lr.h"

double ir_lr_at(const struct ir_lr *s, int64_t t)
{
	if (s->warmup > 0 && t < s->warmup)
		return s->lr * (double)(t + 1) / (double)s->warmup;
	if (s->kind == IR_LR_CONSTANT)
		return s->lr;
	double p = (double)(t - s->warmup) / (double)(s->total - s->warmup);
	p = p < 0 ? 0 : p > 1 ? 1 : p;
	double f = s->kind == IR_LR_COSINE ? 0.5 * (1 + cos(M_PI * p)) : 1 - p;
	return s->min_lr + (s->lr - s->min_lr) * f;
}

/* The text after " KEY=" in cfg (or at its start), or NULL. */
static const char *field(const char *cfg, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = cfg; (p = strstr(p, key)); p += n)
		if ((p == cfg || p[-1] == ' ') && p[n] == '=')
			return p + n + 1;
	return NULL;
}

int ir_lr_parse(const char *cfg, struct ir_lr *s)
{
	*s = (struct ir_lr){ .kind = IR_LR_CONSTANT };
	const char *v = cfg ? field(cfg, "lr") : NULL;
	if (!v)
		return -EINVAL;
	s->lr = strtod(v, NULL);
	if ((v = field(cfg, "schedule")))
		s->kind = !strncmp(v, "cosine", 6)   ? IR_LR_COSINE
			  : !strncmp(v, "linear", 6) ? IR_LR_LINEAR
						     : IR_LR_CONSTANT;
	if ((v = field(cfg, "warmup")))
		s->warmup = strtoll(v, NULL, 10);
	if ((v = field(cfg, "total")))
		s->total = strtoll(v, NULL, 10);
	if ((v = field(cfg, "min_lr")))
		s->min_lr = strtod(v, NULL);
	return 0;
}
