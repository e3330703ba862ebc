/*
 * steplog.c: JSON Lines of training steps through jansson (steplog.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ir/ir.h"
#include "ir/steplog.h"

struct ir_steplog {
	FILE *f;
	char *path;
};

int ir_steplog_open(const char *path, struct ir_steplog **out)
{
	struct ir_steplog *l = ir_calloc(1, sizeof *l);
	size_t n = strlen(path) + 1;
	if (!l || !(l->path = ir_malloc(n))) {
		ir_free(l);
		return ir_errorf(-ENOMEM, "out of memory opening %s", path);
	}
	memcpy(l->path, path, n);
	if (!(l->f = fopen(path, "w"))) {
		int e = errno;
		ir_free(l->path);
		ir_free(l);
		return ir_errorf(-e, "--log-json %s: cannot write: %s", path, strerror(e));
	}
	*out = l;
	return 0;
}

/* x, or null where it is not finite */
static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* seconds as milliseconds, to the microsecond */
static json_t *ms(double s)
{
	return num(round(s * 1e6) / 1e3);
}

int ir_steplog_write(struct ir_steplog *l, const struct ir_steprec *r)
{
	double t = r->seconds > 0 ? r->seconds : 1e-9;
	json_t *o = json_object();
	json_object_set_new(o, "step", json_integer(r->step));
	json_object_set_new(o, "steps", json_integer(r->steps));
	json_object_set_new(o, "loss", num(r->loss));
	if (r->evaluated)
		json_object_set_new(o, "eval_loss", num(r->eval_loss));
	json_object_set_new(o, "grad_norm", num(r->grad_norm));
	json_object_set_new(o, "lr", num(r->lr));
	json_object_set_new(o, "skipped", json_boolean(r->skipped));
	json_object_set_new(o, "step_ms", ms(r->seconds));
	json_object_set_new(o, "samples", num(r->samples));
	if (r->tokens > 0)
		json_object_set_new(o, "tokens", num(r->tokens));
	json_object_set_new(o, "samples_per_s", num(r->samples / t));
	if (r->tokens > 0)
		json_object_set_new(o, "tokens_per_s", num(r->tokens / t));
	if (r->nsets > 0) {
		json_t *a = json_array();
		for (int i = 0; i < r->nsets; i++)
			json_array_append_new(a, json_integer(r->sets[i]));
		json_object_set_new(o, "sets", a);
	}
	if (r->nranks > 0) {
		json_t *a = json_array();
		for (int i = 0; i < r->nranks; i++)
			json_array_append_new(a, json_pack("{s:i, s:o, s:o}", "rank", i, "kernel_ms",
							   ms(r->kernel_s[i]), "comm_ms", ms(r->comm_s[i])));
		json_object_set_new(o, "ranks", a);
	}
	int rc = json_dumpf(o, l->f, JSON_COMPACT | JSON_REAL_PRECISION(10)) == 0 && fputc('\n', l->f) != EOF &&
				 fflush(l->f) == 0
			 ? 0
			 : ir_errorf(-EIO, "--log-json %s: cannot write: %s", l->path, strerror(errno));
	json_decref(o);
	return rc;
}

int ir_steplog_close(struct ir_steplog *l)
{
	if (!l)
		return 0;
	int rc = fclose(l->f) == 0 ? 0 : ir_errorf(-EIO, "--log-json %s: cannot write: %s", l->path, strerror(errno));
	ir_free(l->path);
	ir_free(l);
	return rc;
}
