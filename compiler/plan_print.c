/*
 * plan_print.c: `pcc inspect plan.bin`: what an executable plan holds, per
 * device (instructions by kind, bytes each device communicates, its arena,
 * which is its peak memory), and one device's program as text (--dump).
 */
#include <errno.h>
#include <string.h>

#include "compiler/compiler.h"
#include "ir/plan.h"

static double tensor_bytes(const struct plan_tensor *t, int n)
{
	double b = 0;
	for (int i = 0; i < n; i++)
		b += (double)ir_dtype_size(t[i].dtype) * (double)ir_shape_numel(&t[i].shape);
	return b;
}

/* Bytes device d sends: a collective's input (what it contributes), a send's buffer. */
static double comm_bytes(const struct plan_device *d)
{
	double b = 0;
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		if (!plan_instr_is_collective(x->kind) && x->kind != PLAN_SEND)
			continue;
		b += (double)d->buf[d->args[x->arg]].bytes;
	}
	return b;
}

int plan_print_summary(const struct plan *p, FILE *f)
{
	fprintf(f, "plan: format %d, %d device%s of cluster %s (%d node%s, %d device%s), %s, %d micro-batch%s\n",
		p->version, p->ndevices, p->ndevices == 1 ? "" : "s", p->cluster ? p->cluster : "?", p->cluster_nodes,
		p->cluster_nodes == 1 ? "" : "s", p->cluster_devices, p->cluster_devices == 1 ? "" : "s",
		p->train ? "training step" : "forward pass", p->micro, p->micro == 1 ? "" : "es");
	fprintf(f, "model %016llx, options %016llx\n", (unsigned long long)p->model_hash,
		(unsigned long long)p->options_hash);
	for (int s = 0; s < p->nstages; s++) {
		const struct plan_stage *st = &p->stages[s];
		fprintf(f, "stage %d: ranks %d-%d, sub-mesh %dx%d, logical mesh %dx%d", s, st->first_rank,
			st->first_rank + st->ndevices - 1, st->rows, st->cols, st->n0, st->n1);
		if (st->norder) {
			/* F0 F1 B0 F2 B1 ...: forward and backward parts of micro-batches */
			fprintf(f, "; schedule");
			for (int k = 0; k < st->norder && k < 32; k++)
				fprintf(f, " %c%d", st->order[k] >= 0 ? 'F' : 'B',
					st->order[k] >= 0 ? st->order[k] : -(st->order[k] + 1));
			int k = plan_schedule_slots(st->order, st->norder);
			fprintf(f, "%s, %d slot%s", st->norder > 32 ? " ..." : "", k, k == 1 ? "" : "s");
		}
		fprintf(f, "\n");
	}
	fprintf(f,
		"%d parameters (%.4g MiB), %d inputs (%.4g MiB), %d outputs (%.4g MiB), %d kernels, %d communicators\n",
		p->nparams, tensor_bytes(p->params, p->nparams) / (1 << 20), p->ninputs,
		tensor_bytes(p->inputs, p->ninputs) / (1 << 20), p->noutputs,
		tensor_bytes(p->outputs, p->noutputs) / (1 << 20), p->nkernels, p->ncomms);
	int fused = 0, host = 0, gpu = 0;
	for (int k = 0; k < p->nkernels; k++) {
		fused += p->kernels[k].nbody > 0;
		host += p->kernels[k].host;
		gpu += p->kernels[k].gpu;
	}
	fprintf(f, "kernels: %d fused; generated code: %d host (%zu-byte x86-64 object for %s, %s), %d GPU (PTX", fused,
		host, p->host_object_len, p->host_cpu ? p->host_cpu : "-", p->host_features ? p->host_features : "-",
		gpu);
	for (int i = 0, n; i < p->nptx; i += n) { /* an architecture's modules are adjacent */
		for (n = 1; i + n < p->nptx && !strcmp(p->ptx[i + n].arch, p->ptx[i].arch); n++)
			;
		fprintf(f, " %s", p->ptx[i].arch);
		if (n > 1)
			fprintf(f, " in %d modules", n);
	}
	fprintf(f, "%s); the rest run reference kernels or library calls\n", p->nptx ? "" : " none");
	if (p->train)
		fprintf(f,
			"training: %s; %d state tensors (%.4g MiB); per device, the last per_step instructions run "
			"once per step, after the last micro-batch\n",
			p->train_config ? p->train_config : "?", p->nstate,
			tensor_bytes(p->state, p->nstate) / (1 << 20));
	for (int i = 0; p->input_file && i < p->ninputs; i++) /* pcc --const bound some of the model's */
		fprintf(f, "%s input %d \"%s\" from input_%d.pb%s",
			i ? "," : "input files (others bound as constants):", i, p->inputs[i].name, p->input_file[i],
			i + 1 == p->ninputs ? "\n" : "");
	if (p->labels_input >= 0)
		fprintf(f, "labels: input %d \"%s\", class indices in [0, %lld) (or the ignored -100)\n",
			p->labels_input, p->inputs[p->labels_input].name, (long long)p->classes);
	fprintf(f, "device stage  instrs  kernels  all_reduce all_gather reduce_scatter all_to_all  send  recv"
		   "  comm_MiB  peak_MiB  per_step\n");
	for (int i = 0; i < p->ndevices; i++) {
		const struct plan_device *d = &p->devices[i];
		int count[PLAN_INSTR_KIND_COUNT] = { 0 };
		for (int k = 0; k < d->ninstr; k++)
			count[d->instr[k].kind]++;
		fprintf(f, "%6d %5d %7d %8d %11d %10d %14d %10d %5d %5d %9.3f %9.3f %9d\n", d->rank, d->stage,
			d->ninstr, count[PLAN_KERNEL], count[PLAN_ALL_REDUCE], count[PLAN_ALL_GATHER],
			count[PLAN_REDUCE_SCATTER], count[PLAN_ALL_TO_ALL], count[PLAN_SEND], count[PLAN_RECV],
			comm_bytes(d) / (1 << 20), (double)d->arena_bytes / (1 << 20), d->nstep);
	}
	return ferror(f) ? ir_errorf(-EIO, "write error") : 0;
}

static void print_buf(const struct plan_device *d, int b, FILE *f)
{
	char sh[IR_SHAPE_STR_MAX];
	const struct plan_buffer *x = &d->buf[b];
	fprintf(f, "b%d:%s%s", b, ir_dtype_name(x->dtype), ir_shape_str(&x->shape, sh, sizeof sh));
}

static void print_instr(const struct plan *p, const struct plan_device *d, int i, FILE *f)
{
	const struct plan_instr *x = &d->instr[i];
	fprintf(f, "  %5d  %s", i, plan_instr_kind_name(x->kind));
	const struct plan_kernel *k = x->kind == PLAN_KERNEL ? &p->kernels[x->kernel] : NULL;
	if (k && !k->nbody)
		fprintf(f, " %s (k%d)", ir_op_name(k->op), x->kernel);
	if (k && k->nbody) { /* fused: %j operands, %(nin + i) body op i */
		fprintf(f, " fused (k%d) {", x->kernel);
		for (int o = 0; o < k->nbody; o++) {
			fprintf(f, "%s%%%d = %s", o ? "; " : " ", k->nin + o, ir_op_name(k->body[o].op));
			for (int j = 0; j < k->body[o].nin; j++)
				fprintf(f, " %%%d", k->body[o].in[j]);
		}
		fprintf(f, " }");
	}
	if (x->kind == PLAN_ALL_REDUCE || x->kind == PLAN_REDUCE_SCATTER)
		fprintf(f, "(%s)", plan_reduce_name(x->reduce));
	if (x->kind == PLAN_ALL_GATHER || x->kind == PLAN_REDUCE_SCATTER)
		fprintf(f, " axis %d", x->axis);
	if (x->kind == PLAN_ALL_TO_ALL)
		fprintf(f, " split %d concat %d", x->axis, x->axis2);
	if (x->comm >= 0 && x->comm < p->ncomms) {
		const struct plan_comm *c = &p->comms[x->comm];
		fprintf(f, " comm %d [", x->comm);
		for (int r = 0; r < c->n; r++)
			fprintf(f, "%s%d", r ? "," : "", c->ranks[r]);
		fprintf(f, "]");
	}
	if (x->kind == PLAN_SEND || x->kind == PLAN_RECV)
		fprintf(f, " %s %d tag %d", x->kind == PLAN_SEND ? "to" : "from", x->peer, x->tag);
	for (int j = 0; j < x->nin + x->nout; j++) {
		fprintf(f, j == 0 ? " " : j == x->nin ? " -> " : ", ");
		if (j == x->nin && j == 0)
			fprintf(f, "-> ");
		print_buf(d, d->args[x->arg + j], f);
	}
	fprintf(f, "\n");
}

static int print_memory(const struct plan_device *d, FILE *f)
{
	struct plan_mem m;
	int rc = plan_device_memory(d, &m);
	if (rc < 0)
		return ir_errorf(rc, "out of memory");
	const int64_t *k = m.bytes;
	fprintf(f,
		"memory at its peak (instruction %d, %s): params %lld, grad accumulators %lld, state %lld, "
		"inputs/outputs %lld, in-flight stash %lld, temporaries %lld; live %lld, arena %lld bytes\n",
		m.at, m.at >= plan_step_first(d) ? "per step" : "per micro-batch", (long long)k[PLAN_MEM_PARAM],
		(long long)k[PLAN_MEM_ACCUM], (long long)k[PLAN_MEM_STATE], (long long)k[PLAN_MEM_IO],
		(long long)k[PLAN_MEM_STASH], (long long)k[PLAN_MEM_TEMP], (long long)m.live,
		(long long)d->arena_bytes);
	return 0;
}

int plan_print_device(const struct plan *p, int dev, FILE *f)
{
	if (dev < 0 || dev >= p->ndevices)
		return ir_errorf(-EINVAL, "--dump %d: the plan has devices 0 to %d", dev, p->ndevices - 1);
	const struct plan_device *d = &p->devices[dev];
	fprintf(f, "device %d: stage %d, mesh position (%d,%d), arena %lld bytes, %d buffers, %d instructions\n",
		d->rank, d->stage, d->coord[0], d->coord[1], (long long)d->arena_bytes, d->nbuf, d->ninstr);
	int rc = print_memory(d, f);
	return rc < 0 ? rc : plan_print_program(p, d, f);
}

int plan_print_program(const struct plan *p, const struct plan_device *d, FILE *f)
{
	fprintf(f, "buffers:\n");
	for (int b = 0; b < d->nbuf; b++) {
		const struct plan_buffer *x = &d->buf[b];
		fprintf(f, "  ");
		print_buf(d, b, f);
		fprintf(f, " @%lld", (long long)x->offset);
		if (x->slots > 1)
			fprintf(f, " x%d slots (one per micro-batch in flight)", x->slots);
		if (x->bind != PLAN_BIND_NONE) {
			const struct plan_tensor *t = x->bind == PLAN_BIND_PARAM || x->bind == PLAN_BIND_ACCUM
							      ? p->params
						      : x->bind == PLAN_BIND_INPUT ? p->inputs
						      : x->bind == PLAN_BIND_STATE ? p->state
										   : p->outputs;
			fprintf(f, " %s %d \"%s\" from [", plan_bind_name(x->bind), x->index, t[x->index].name);
			const struct plan_slice *sl = plan_slice_of(d, b);
			for (int e = 0; e < x->shape.rank; e++)
				fprintf(f, "%s%lld", e ? "," : "", (long long)sl->start[e]);
			fprintf(f, "]%s",
				x->bind == PLAN_BIND_OUTPUT && !sl->writer ? " (copy, not written back)" : "");
		}
		fprintf(f, "\n");
	}
	fprintf(f, "program:%s\n",
		d->nfwd    ? " forward part, per micro-batch"
		: d->nstep ? " once per micro-batch"
			   : "");
	for (int i = 0; i < d->ninstr; i++) {
		if (d->nfwd && i == d->nfwd)
			fprintf(f, "backward part, per micro-batch:\n");
		if (d->nstep && i == plan_step_first(d))
			fprintf(f, "once per step, after the last micro-batch:\n");
		print_instr(p, d, i, f);
	}
	return ferror(f) ? ir_errorf(-EIO, "write error") : 0;
}
