/*
 * report_whatif.c: one plan's figures as a struct whatif, whatever made
 * the plan: its parts, the figures every what-if derives the same way
 * (throughput, FLOP/s, MFU, price), and the checks on output files the
 * report commands share. The planner's plans, automatic or held to a
 * manual plan, fill one (report_auto.c).
 */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/report/report_internal.h"

const char *const wi_mem_key[WI_MEM_COUNT] = { "params", "grads", "optimizer", "activations", "workspace" };
const char *const wi_mem_label[WI_MEM_COUNT] = { "parameters", "gradients", "optimizer state", "activations",
						 "buffers and workspace" };

void wi_free(struct whatif *w)
{
	ir_free(w->stages);
	w->stages = NULL;
	w->nstages = 0;
}

void wi_add_part(struct whatif *w, const char *key, const char *label, double s)
{
	IR_ASSERT(w->nparts < WI_MAX_PARTS);
	struct wi_part *p = &w->part[w->nparts++];
	snprintf(p->key, sizeof p->key, "%s", key);
	snprintf(p->label, sizeof p->label, "%s", label);
	p->s = s;
}

const char *const wi_group_label[WI_GROUP_COUNT] = { "compute",
						     "recomputation",
						     "collectives inside the micro-batches",
						     "pipeline transfers",
						     "pipeline bubble",
						     "gradient sync left exposed",
						     "optimizer step" };

static enum wi_group group_of(const char *key)
{
	static const struct {
		const char *key;
		enum wi_group g;
	} map[] = {
		{ "compute", WI_GROUP_COMPUTE }, { "recompute", WI_GROUP_RECOMPUTE }, { "comm_axis0", WI_GROUP_COLL },
		{ "comm_axis1", WI_GROUP_COLL }, { "transfers", WI_GROUP_TRANSFERS }, { "bubble", WI_GROUP_BUBBLE },
		{ "sync_axis0", WI_GROUP_SYNC }, { "sync_axis1", WI_GROUP_SYNC },     { "optimizer", WI_GROUP_OPTIM },
	};
	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (!strcmp(map[i].key, key))
			return map[i].g;
	IR_ASSERT(!"a step-time part in no group");
	return WI_GROUP_COMPUTE;
}

double wi_group_time(const struct whatif *w, enum wi_group g)
{
	double s = 0;
	for (int i = 0; i < w->nparts; i++)
		s += group_of(w->part[i].key) == g ? w->part[i].s : 0;
	return s;
}

void wi_finish(struct whatif *w, double price)
{
	w->samples_per_s = w->t_step > 0 ? (double)w->batch / w->t_step : 0;
	w->tokens_per_s = w->samples_per_s * w->tokens_per_sample;
	w->tflops_per_device = w->t_step > 0 ? w->hw_flops / w->t_step / w->devices / 1e12 : 0;
	w->mfu = w->peak_flops > 0 && w->t_step > 0 ? w->model_flops / (w->t_step * w->devices * w->peak_flops) : 0;
	w->price = price;
	w->cost_per_step = price * w->devices * w->t_step / 3600;
	w->cost_per_msamples = w->batch > 0 ? w->cost_per_step / (double)w->batch * 1e6 : 0;
	w->cost_per_mtokens = w->tokens_per_sample > 0 ? w->cost_per_msamples / w->tokens_per_sample : 0;
	w->peak_stage = 0;
	for (int s = 0; s < w->nstages; s++) {
		struct wi_stage *st = &w->stages[s];
		st->mem_total = 0;
		for (int k = 0; k < WI_MEM_COUNT; k++)
			st->mem_total += st->mem[k];
		if (st->mem_total > w->stages[w->peak_stage].mem_total)
			w->peak_stage = s;
	}
	w->mem_peak = w->nstages ? w->stages[w->peak_stage].mem_total : 0;
	w->fits = w->mem_peak <= w->mem_limit;
}

const char *wi_secs(double t, char *b, size_t n)
{
	if (fabs(t) >= 1)
		snprintf(b, n, "%.3f s", t);
	else if (fabs(t) >= 1e-3)
		snprintf(b, n, "%.3f ms", t * 1e3);
	else
		snprintf(b, n, "%.1f us", t * 1e6);
	return b;
}

int wi_check_writable(const char *opt, const char *path)
{
	struct stat sb;
	if (!path || !*path)
		return ir_errorf(-EINVAL, "%s: expected a file name", opt);
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		return ir_errorf(-EINVAL, "%s %s: is a folder, expected a file", opt, path);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	const char *d = dirname(dir);
	if (stat(d, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return ir_errorf(-ENOENT, "%s %s: folder %s does not exist", opt, path, d);
	if (access(d, W_OK) != 0 || (access(path, F_OK) == 0 && access(path, W_OK) != 0))
		return ir_errorf(-EACCES, "%s %s: cannot write there: %s", opt, path, strerror(EACCES));
	return 0;
}

int wi_json_write(json_t *o, const char *path)
{
	FILE *f = path ? fopen(path, "w") : stdout;
	if (!f)
		return ir_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	fputc('\n', f);
	if (path ? fclose(f) != 0 : fflush(f) != 0)
		rc = -1;
	return rc < 0 ? ir_errorf(-EIO, "%s: write error", path ? path : "standard output") : 0;
}
