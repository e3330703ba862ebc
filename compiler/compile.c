/*
 * compile.c: from the inter-op pass's plan to the executable plan: the
 * stage graph at the chosen micro-batch size, its sharding by the intra-op
 * pass on the stage's logical mesh, SPMD lowering and memory planning
 * (lower*.c), then the plan's identity (hashes of the model file and of the
 * options that shaped the plan) and its check (plan_verify).
 *
 * Lowered so far: plans of one stage, forward pass. Pipelined and training
 * plans are refused with a message saying so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "compiler/compiler.h"
#include "ir/plan.h"

static int hash_file(const char *path, uint64_t *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return ir_errorf(-errno, "%s: cannot read: %s", path, strerror(errno));
	XXH3_state_t *s = XXH3_createState();
	if (!s) {
		fclose(f);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	XXH3_64bits_reset(s);
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		XXH3_64bits_update(s, buf, n);
	int err = ferror(f);
	fclose(f);
	*out = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	return err ? ir_errorf(-EIO, "%s: read error", path) : 0;
}

int compile_lower(const struct compile_input *in, struct plan **out)
{
	const struct inter_plan *ip = in->inter;
	struct intra_opts o;
	struct intra_result r;
	int rc;
	*out = NULL;
	if (ip->nstages > 1)
		return ir_errorf(-ENOTSUP, "the plan has %d pipeline stages; lowering pipelined plans to plan.bin is "
				 "not implemented yet (write the text form with -o FILE.txt)", ip->nstages);
	if (ip->train)
		return ir_errorf(-ENOTSUP, "lowering training plans to plan.bin is not implemented yet (write the "
				 "text form with -o FILE.txt)");
	struct ir_graph *g = in->opts->load(in->opts->ctx, ip->micro_batch);
	if (!g)
		return -EINVAL;
	intra_opts_init(&o);
	o.n0 = ip->stages[0].n0;
	o.n1 = ip->stages[0].n1;
	o.mem_limit = in->opts->mem_limit;
	o.cal = in->opts->cal;
	if ((rc = intra_pass(g, in->cluster, &o, &r)) < 0) {
		ir_graph_free(g);
		return rc;
	}
	rc = lower_single(g, &r, in->cluster_spec, out);
	double mem = r.mem_limit;
	intra_result_free(&r);
	ir_graph_free(g);
	if (rc < 0)
		return rc;
	struct plan *p = *out;
	p->cluster_nodes = in->cluster->nodes;
	p->cluster_devices = in->cluster->ndevices;
	p->micro = ip->micro;
	p->train = ip->train;
	p->device_memory = (int64_t)mem;
	char opts[512];
	snprintf(opts, sizeof opts, "cluster=%s;batch=%lld;micro=%d;train=%d;mem=%.17g", in->cluster_spec,
		 (long long)ip->batch, ip->micro, ip->train, in->opts->mem_limit);
	p->options_hash = XXH3_64bits(opts, strlen(opts));
	for (int i = 0; i < p->ndevices && rc == 0; i++)
		if (p->devices[i].arena_bytes > p->device_memory)
			rc = ir_errorf(-ENOSPC, "the lowered plan needs %.4g MiB on device %d, more than the %.4g MiB "
				       "allowed (every intermediate is materialized until kernel fusion exists)",
				       (double)p->devices[i].arena_bytes / (1 << 20), i, (double)p->device_memory / (1 << 20));
	if (rc < 0 || (rc = hash_file(in->model, &p->model_hash)) < 0 || (rc = plan_verify(p)) < 0) {
		if (rc == -EINVAL)
			ir_error_prefix("lowered plan fails its check (a compiler bug)");
		plan_free(p);
		*out = NULL;
	}
	return rc;
}
