/*
 * compile.c: from the inter-op pass's plan to the executable plan: the
 * stage graph at the chosen micro-batch size, its sharding by the intra-op
 * pass on the stage's logical mesh, SPMD lowering and memory planning
 * (lower*.c), then the plan's identity (hashes of the model file and of the
 * options that shaped the plan) and its check (plan_verify).
 *
 * Lowered: inference plans, pipelined or not (each stage's nodes become a
 * graph of their own, graph_extract, sharded on the stage's mesh), and
 * one-stage training plans: the train step (train_build at the micro-batch
 * size, gradients scaled by 1 / micro-batches) sharded whole by the
 * intra-op pass, forward, backward and optimizer together, so the pass
 * chooses how gradients are reduced and whether the update and its state
 * are split (ZeRO). Pipelined training is refused with a message saying so.
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

/* Every stage's graph (the whole graph when there is one stage), sharded
 * by the intra-op pass on the stage's logical mesh, then lowered together. */
static int lower_stages(const struct compile_input *in, const struct ir_graph *g, struct plan **out, double *mem)
{
	const struct inter_plan *ip = in->inter;
	int ns = ip->nstages, rc = 0, rank = 0;
	struct ir_graph **sub = ir_calloc((size_t)ns, sizeof *sub);
	int **src = ir_calloc((size_t)ns, sizeof *src);
	struct intra_result *r = ir_calloc((size_t)ns, sizeof *r);
	struct lower_stage *st = ir_calloc((size_t)ns, sizeof *st);
	bool *solved = ir_calloc((size_t)ns, sizeof *solved);
	if (!sub || !src || !r || !st || !solved) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	for (int s = 0; s < ns && rc == 0; s++) {
		const struct inter_stage *x = &ip->stages[s];
		if (ns > 1 && !(sub[s] = graph_extract(g, x->node_first, x->node_last, false, &src[s]))) {
			rc = -ENOMEM;
			break;
		}
		struct intra_opts o;
		intra_opts_init(&o);
		o.n0 = x->n0;
		o.n1 = x->n1;
		o.mem_limit = in->opts->mem_limit;
		o.cal = in->opts->cal;
		o.inputs_resident = s > 0; /* received from the stage before */
		struct ir_graph *sg = ns > 1 ? sub[s] : (struct ir_graph *)g;
		if ((rc = intra_pass(sg, in->cluster, &o, &r[s])) < 0) {
			if (ns > 1)
				ir_error_prefix("stage %d (nodes %d..%d)", s, x->node_first, x->node_last - 1);
			break;
		}
		solved[s] = true;
		st[s] = (struct lower_stage){ sg, &r[s], rank, x->rows, x->cols, ns > 1 ? src[s] : NULL };
		rank += x->n0 * x->n1;
		*mem = r[s].mem_limit;
	}
	if (rc == 0 && rank > in->cluster->ndevices)
		rc = ir_errorf(-EINVAL, "the stages take %d devices, the cluster has %d", rank, in->cluster->ndevices);
	if (rc == 0)
		rc = lower_plan(g, st, ns, in->cluster_spec, out);
out:
	for (int s = 0; s < ns; s++) {
		if (solved && solved[s])
			intra_result_free(&r[s]);
		if (sub)
			ir_graph_free(sub[s]);
		if (src)
			ir_free(src[s]);
	}
	ir_free(sub);
	ir_free(src);
	ir_free(r);
	ir_free(st);
	ir_free(solved);
	return rc;
}

/* The train step of forward graph g (taken over) on the one stage's mesh. */
static int lower_training(const struct compile_input *in, struct ir_graph *g, struct plan **out, double *mem)
{
	const struct inter_plan *ip = in->inter;
	const struct inter_stage *x = &ip->stages[0];
	struct train_opts to;
	struct train_step ts;
	struct intra_opts o;
	struct intra_result r;
	char cfg[512];
	if (ip->nstages > 1) {
		ir_graph_free(g);
		return ir_errorf(-ENOTSUP, "the plan pipelines training over %d stages, and lowering pipelined "
				 "training is not implemented yet (--layers 1 asks for one stage, if it fits)",
				 ip->nstages);
	}
	if (in->train)
		to = *in->train;
	else
		train_opts_init(&to);
	to.grad_scale = 1.0 / ip->micro;
	int rc = train_build(g, &to, &ts);
	if (rc < 0) {
		train_step_free(&ts);
		return rc;
	}
	double *start = ir_calloc((size_t)ts.nstate + 1, sizeof *start);
	int (*ties)[2] = ir_calloc((size_t)(ts.nparams + ts.nstate) + 1, sizeof *ties);
	if (!start || !ties) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	train_state_start(&ts, &to, start);
	train_step_ties(&ts, ties);
	intra_opts_init(&o);
	o.n0 = x->n0;
	o.n1 = x->n1;
	o.mem_limit = in->opts->mem_limit;
	o.cal = in->opts->cal;
	o.update_first = ts.update_first;
	o.step_share = 1.0 / ip->micro;
	o.ties = (const int (*)[2])ties;
	o.nties = ts.nparams + ts.nstate;
	if ((rc = intra_pass(ts.g, in->cluster, &o, &r)) < 0) {
		ir_error_prefix("the train step");
		goto out;
	}
	*mem = r.mem_limit;
	train_opts_str(&to, cfg, sizeof cfg);
	struct lower_train tr = { &ts, ip->micro, start, cfg };
	struct lower_stage st = { ts.g, &r, 0, x->rows, x->cols, NULL };
	rc = lower_train(&tr, &st, in->cluster_spec, out);
	intra_result_free(&r);
out:
	ir_free(start);
	ir_free(ties);
	train_step_free(&ts);
	return rc;
}

int compile_lower(const struct compile_input *in, struct plan **out)
{
	const struct inter_plan *ip = in->inter;
	double mem = 0;
	int rc;
	*out = NULL;
	struct ir_graph *g = in->opts->load(in->opts->ctx, ip->micro_batch);
	if (!g)
		return -EINVAL;
	if (ip->train) {
		rc = lower_training(in, g, out, &mem);
	} else {
		rc = lower_stages(in, g, out, &mem);
		ir_graph_free(g);
	}
	if (rc < 0)
		return rc;
	struct plan *p = *out;
	p->cluster_nodes = in->cluster->nodes;
	p->cluster_devices = in->cluster->ndevices;
	p->micro = ip->micro;
	p->device_memory = (int64_t)mem;
	char opts[1024];
	snprintf(opts, sizeof opts, "cluster=%s;batch=%lld;micro=%d;train=%d;mem=%.17g;step=%s", in->cluster_spec,
		 (long long)ip->batch, ip->micro, ip->train, in->opts->mem_limit,
		 p->train_config ? p->train_config : "");
	p->options_hash = XXH3_64bits(opts, strlen(opts));
	for (int i = 0; i < p->ndevices && rc == 0; i++) {
		char need[IR_BYTES_STRLEN], have[IR_BYTES_STRLEN];
		if (p->devices[i].arena_bytes > p->device_memory)
			rc = ir_errorf(-ENOSPC, "the lowered plan needs %s on device %d, more than the %s allowed "
				       "(every intermediate is materialized until kernel fusion exists)",
				       ir_bytes_str((double)p->devices[i].arena_bytes, need), i,
				       ir_bytes_str((double)p->device_memory, have));
	}
	if (rc < 0 || (rc = hash_file(in->model, &p->model_hash)) < 0 || (rc = plan_verify(p)) < 0) {
		if (rc == -EINVAL)
			ir_error_prefix("lowered plan fails its check (a compiler bug)");
		plan_free(p);
		*out = NULL;
	}
	return rc;
}
