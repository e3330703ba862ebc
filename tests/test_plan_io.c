/*
 * test_plan_io.c: plan.bin (ir/plan_io.c). A hand-built two-device plan
 * round-trips through memory and a file with every field intact (checked
 * by a field-by-field comparer that is itself checked against mutations);
 * each way a file can be wrong (cut short, newer format, corrupt content,
 * not a plan, empty, missing, malformed content) is refused with its own
 * message; the rank check; a failed write leaves nothing; and allocation
 * failures injected at every step of unpacking and packing give NULL or a
 * whole plan, with no heap growth. Signed plans: the tag is HMAC-SHA256
 * (an RFC 4231 vector), a plan reads back with its key, and with a key it
 * is refused unsigned, signed with another key, or with any content byte
 * flipped and its checksum recomputed (which the checksum alone passes).
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ir/plan.h"
#include "tests/tap.h"

static bool has(const char *s)
{
	bool ok = strstr(ir_error(), s) != NULL;
	if (!ok)
		TAP_DIAG("message was: %s", ir_error());
	return ok;
}

static char *dup_str(const char *s)
{
	char *d = ir_malloc(strlen(s) + 1);
	return strcpy(d, s);
}

static struct ir_shape shp(int rank, int64_t d0, int64_t d1)
{
	struct ir_shape s = { .rank = rank, .dims = { d0, d1 } };
	return s;
}

/* ---- the plan --------------------------------------------------------------- */

static void set_tensor(struct plan_tensor *t, const char *name, enum ir_dtype dt, struct ir_shape s)
{
	t->name = dup_str(name);
	t->dtype = dt;
	t->shape = s;
}

static void set_kernel(struct plan_kernel *k, enum ir_op op, int nin, int nout, const enum ir_dtype *dt,
		       const struct ir_shape *s)
{
	k->op = op;
	k->nin = nin;
	k->nout = nout;
	k->dtype = ir_calloc((size_t)(nin + nout), sizeof *k->dtype);
	k->shape = ir_calloc((size_t)(nin + nout), sizeof *k->shape);
	for (int i = 0; i < nin + nout; i++) {
		k->dtype[i] = dt[i];
		k->shape[i] = s[i];
	}
}

static struct plan_instr ins(enum plan_instr_kind kind, int nin, int nout, int arg)
{
	return (struct plan_instr){ .kind = kind, .nin = nin, .nout = nout, .arg = arg };
}

/* Buffer i of device d (set in buffer order: a bound one takes the next
 * slice, starting at s0, s1). */
static void set_buffer(struct plan_device *d, int i, enum ir_dtype dt, struct ir_shape s, int64_t offset,
		       enum plan_bind bind, int index, int64_t s0, int64_t s1, bool writer)
{
	struct ir_tensor t = { .dtype = dt, .shape = s };
	d->buf[i] = (struct plan_buffer){ .dtype = dt,
					  .shape = s,
					  .offset = offset,
					  .bytes = (int64_t)ir_tensor_bytes(&t),
					  .bind = bind,
					  .index = index,
					  .slice = -1 };
	if (bind == PLAN_BIND_NONE)
		return;
	struct plan_slice *x = ir_realloc(d->slice, sizeof *x * (size_t)(d->nslice + 1));
	IR_ASSERT(x);
	d->slice = x;
	d->buf[i].slice = d->nslice;
	d->slice[d->nslice++] = (struct plan_slice){ .start = { s0, s1 }, .writer = writer };
}

/* Device d's slice of its bound buffer b, to change. */
static struct plan_slice *sl(struct plan *p, int d, int b)
{
	return &p->devices[d].slice[p->devices[d].buf[b].slice];
}

/* y[8,32] = x[8,64] @ w[64,32] on a 1x2 stage, the contraction split: each
 * device multiplies its halves of x and w and an all-reduce sums the
 * partial products; device 0 writes y and its bf16 copy. Beside it, a
 * constant goes both ways by send and receive and through the other
 * collectives. */
static struct plan *build_plan(void)
{
	struct plan *p = plan_new();
	p->cluster = dup_str("1x2xh100");
	p->cluster_nodes = 1;
	p->cluster_devices = 2;
	p->model_hash = 0x0123456789abcdefull;
	p->options_hash = 0xfedcba9876543210ull; /* top bit set: fixed64 all the way */
	p->train = true;
	p->micro = 4;
	p->device_memory = INT64_C(80) << 30;

	p->stages = ir_calloc(1, sizeof *p->stages);
	p->nstages = 1;
	p->stages[0] = (struct plan_stage){ .first_rank = 0, .ndevices = 2, .rows = 1, .cols = 2, .n0 = 1, .n1 = 2 };
	p->params = ir_calloc(2, sizeof *p->params);
	p->nparams = 2;
	set_tensor(&p->params[0], "w", IR_F32, shp(2, 64, 32));
	set_tensor(&p->params[1], "b1", IR_BF16, shp(1, 32, 0));
	p->inputs = ir_calloc(2, sizeof *p->inputs);
	p->ninputs = 2;
	set_tensor(&p->inputs[0], "x", IR_F32, shp(2, 8, 64));
	set_tensor(&p->inputs[1], "labels", IR_I64, shp(1, 8, 0));
	p->labels_input = 1;
	p->classes = 32;
	p->input_file = ir_calloc(2, sizeof *p->input_file);
	p->input_file[1] = 2; /* input_1.pb's input was bound as a constant (pcc --const) */
	p->outputs = ir_calloc(2, sizeof *p->outputs);
	p->noutputs = 2;
	set_tensor(&p->outputs[0], "y", IR_F32, shp(2, 8, 32));
	set_tensor(&p->outputs[1], "y16", IR_BF16, shp(2, 8, 32));
	p->outputs[1].per_step = true;
	/* training fields: carried whatever the plan does with them */
	p->state = ir_calloc(1, sizeof *p->state);
	p->nstate = 1;
	set_tensor(&p->state[0], "train.loss_scale", IR_F32, shp(0, 0, 0));
	p->state[0].init = 65536;
	p->train_config = dup_str("adamw lr=0.001");
	p->model = dup_str("/models/m.onnx");

	p->kernels = ir_calloc(4, sizeof *p->kernels);
	p->nkernels = 4;
	enum ir_dtype f4[4] = { IR_F32, IR_F32, IR_F32, IR_F32 };
	struct ir_shape dot_s[3] = { shp(2, 8, 32), shp(2, 32, 32), shp(2, 8, 32) };
	set_kernel(&p->kernels[0], IR_OP_DOT, 2, 1, f4, dot_s);
	p->kernels[0].a.lhs_contract = IR_ILIST(1);
	p->kernels[0].a.rhs_contract = IR_ILIST(0);

	struct ir_shape c_s = shp(2, 2, 3);
	set_kernel(&p->kernels[1], IR_OP_CONSTANT, 0, 1, f4, &c_s);
	p->kernels[1].a.dtype = IR_F32;
	p->kernels[1].a.shape = c_s;
	float *c = ir_malloc(6 * sizeof *c);
	for (int i = 0; i < 6; i++)
		c[i] = 0.5f * (float)i - 1.0f;
	p->kernels[1].a.data = c;

	/* every other attribute, on a kernel no device runs: the file keeps them all */
	struct ir_shape ln_s[4] = { shp(2, 8, 16), shp(1, 16, 0), shp(1, 16, 0), shp(2, 8, 16) };
	set_kernel(&p->kernels[2], IR_OP_LAYER_NORM, 3, 1, f4, ln_s);
	struct ir_attrs *a = &p->kernels[2].a;
	a->dtype = IR_I64;
	a->shape = shp(2, 3, 5);
	a->axes = IR_ILIST(0, 1);
	a->lhs_batch = IR_ILIST(2);
	a->rhs_batch = IR_ILIST(3);
	a->start = IR_ILIST(0, 1, 2);
	a->limit = IR_ILIST(4, 5, 6, 7, 8, 9, 10, 11);
	a->stride = IR_ILIST(1, 2);
	a->pad_lo = IR_ILIST(0);
	a->pad_hi = IR_ILIST(3, 3);
	a->window = IR_ILIST(2, 2);
	a->dilation = IR_ILIST(1, 1);
	a->axis = 1;
	a->k = -7;
	a->groups = 3;
	a->mode = IR_PAD_REFLECT;
	a->eps = 1e-5;
	a->value = -0.0; /* zero with its sign: proto3 would drop a double 0 */

	enum ir_dtype cv_t[2] = { IR_F32, IR_BF16 };
	struct ir_shape cv_s[2] = { shp(2, 8, 32), shp(2, 8, 32) };
	set_kernel(&p->kernels[3], IR_OP_CONVERT, 1, 1, cv_t, cv_s);
	p->kernels[3].a.dtype = IR_BF16;

	p->comms = ir_calloc(1, sizeof *p->comms);
	p->ncomms = 1;
	p->comms[0].n = 2;
	p->comms[0].ranks = ir_malloc(2 * sizeof(int));
	p->comms[0].ranks[0] = 0;
	p->comms[0].ranks[1] = 1;

	p->devices = ir_calloc(2, sizeof *p->devices);
	p->ndevices = 2;
	for (int r = 0; r < 2; r++) {
		struct plan_device *d = &p->devices[r];
		d->rank = r;
		d->coord[1] = r;
		d->nbuf = 12;
		d->buf = ir_calloc(12, sizeof *d->buf);
		set_buffer(d, 0, IR_F32, shp(2, 32, 32), 0, PLAN_BIND_PARAM, 0, 32 * r, 0, false);
		set_buffer(d, 1, IR_F32, shp(2, 8, 32), 4096, PLAN_BIND_INPUT, 0, 0, 32 * r, false);
		set_buffer(d, 2, IR_F32, shp(2, 8, 32), 5120, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 3, IR_F32, shp(2, 8, 32), 6144, PLAN_BIND_OUTPUT, 0, 0, 0, r == 0);
		set_buffer(d, 4, IR_F32, shp(2, 2, 3), 7168, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 5, IR_F32, shp(2, 2, 3), 7424, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 6, IR_F32, shp(2, 2, 6), 7680, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 7, IR_BF16, shp(2, 8, 32), 7936, PLAN_BIND_OUTPUT, 1, 0, 0, r == 0);
		set_buffer(d, 8, IR_BF16, shp(1, 32, 0), 8448, PLAN_BIND_PARAM, 1, 0, 0, false);
		set_buffer(d, 9, IR_F32, shp(2, 2, 6), 8704, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 10, IR_F32, shp(2, 4, 3), 8960, PLAN_BIND_NONE, 0, 0, 0, false);
		set_buffer(d, 11, IR_F32, shp(2, 2, 3), 9216, PLAN_BIND_NONE, 0, 0, 0, false);
		d->arena_bytes = 9472;
		int args[] = { 1, 0, 2, 2, 3, 4, r ? 5 : 4, r ? 4 : 5, 5, 6, 6, 9, 3, 7, 9, 10, 9, 11, 9 };
		d->nargs = (int)(sizeof args / sizeof args[0]);
		d->args = ir_malloc(sizeof args);
		memcpy(d->args, args, sizeof args);
		d->ninstr = 11;
		d->instr = ir_calloc(11, sizeof *d->instr);
		d->instr[0] = ins(PLAN_KERNEL, 2, 1, 0);
		d->instr[1] = ins(PLAN_ALL_REDUCE, 1, 1, 3);
		d->instr[2] = ins(PLAN_KERNEL, 0, 1, 5);
		d->instr[2].kernel = 1;
		d->instr[3] = r ? ins(PLAN_RECV, 0, 1, 6) : ins(PLAN_SEND, 1, 0, 6);
		d->instr[4] = r ? ins(PLAN_SEND, 1, 0, 7) : ins(PLAN_RECV, 0, 1, 7);
		d->instr[3].peer = d->instr[4].peer = 1 - r;
		d->instr[3].tag = 7;
		d->instr[4].tag = 8;
		d->instr[5] = ins(PLAN_ALL_GATHER, 1, 1, 8);
		d->instr[5].axis = 1;
		d->instr[6] = ins(PLAN_COPY, 1, 1, 10);
		d->instr[7] = ins(PLAN_KERNEL, 1, 1, 12);
		d->instr[7].kernel = 3;
		d->instr[8] = ins(PLAN_ALL_TO_ALL, 1, 1, 14);
		d->instr[8].axis = 1;
		d->instr[8].axis2 = 0;
		d->instr[9] = ins(PLAN_REDUCE_SCATTER, 1, 1, 16);
		d->instr[9].axis = 1;
		d->instr[10] = ins(PLAN_FREE, 1, 0, 18);
		d->nstep = 5; /* from the copy into y16, a per-step output */
	}
	return p;
}

/* ---- the comparer --------------------------------------------------------------- */

static char diff[512];

__attribute__((format(printf, 1, 2))) static bool differ(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(diff, sizeof diff, fmt, ap);
	va_end(ap);
	return false;
}

#define SAME(c, ...)                                \
	do {                                        \
		if (!(c))                           \
			return differ(__VA_ARGS__); \
	} while (0)

static bool same_shape(const struct ir_shape *a, const struct ir_shape *b)
{
	return ir_shape_eq(a, b);
}

static bool same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static bool same_ilist(const struct ir_ilist *a, const struct ir_ilist *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->v[i] != b->v[i])
			return false;
	return true;
}

static bool same_attrs(enum ir_op op, const struct ir_attrs *a, const struct ir_attrs *b, int k)
{
	const struct ir_ilist *la[] = { &a->axes,         &a->lhs_batch, &a->rhs_batch, &a->lhs_contract,
					&a->rhs_contract, &a->start,     &a->limit,     &a->stride,
					&a->pad_lo,       &a->pad_hi,    &a->window,    &a->dilation };
	const struct ir_ilist *lb[] = { &b->axes,         &b->lhs_batch, &b->rhs_batch, &b->lhs_contract,
					&b->rhs_contract, &b->start,     &b->limit,     &b->stride,
					&b->pad_lo,       &b->pad_hi,    &b->window,    &b->dilation };
	SAME(a->dtype == b->dtype, "kernel %d attrs dtype", k);
	SAME(same_shape(&a->shape, &b->shape), "kernel %d attrs shape", k);
	for (int i = 0; i < 12; i++)
		SAME(same_ilist(la[i], lb[i]), "kernel %d attrs ilist %d", k, i);
	SAME(a->axis == b->axis && a->k == b->k && a->groups == b->groups && a->mode == b->mode,
	     "kernel %d attrs axis/k/groups/mode", k);
	SAME(same_bits(a->eps, b->eps) && same_bits(a->value, b->value), "kernel %d attrs eps/value", k);
	if (op == IR_OP_CONSTANT) {
		struct ir_tensor t = { .dtype = a->dtype, .shape = a->shape };
		SAME(a->data && b->data && memcmp(a->data, b->data, ir_tensor_bytes(&t)) == 0,
		     "kernel %d constant data", k);
	}
	return true;
}

static bool same_tensors(const struct plan_tensor *a, const struct plan_tensor *b, int n, const char *w)
{
	for (int i = 0; i < n; i++) {
		SAME(!strcmp(a[i].name, b[i].name), "%s %d name", w, i);
		SAME(a[i].dtype == b[i].dtype && same_shape(&a[i].shape, &b[i].shape), "%s %d type", w, i);
		SAME(a[i].init == b[i].init && a[i].per_step == b[i].per_step, "%s %d init/per_step", w, i);
	}
	return true;
}

static bool same_device(const struct plan_device *a, const struct plan_device *b, int r)
{
	SAME(a->rank == b->rank && a->stage == b->stage, "device %d rank/stage", r);
	SAME(a->coord[0] == b->coord[0] && a->coord[1] == b->coord[1], "device %d coord", r);
	SAME(a->arena_bytes == b->arena_bytes && a->nstep == b->nstep && a->nfwd == b->nfwd,
	     "device %d arena/nstep/nfwd", r);
	SAME(a->nbuf == b->nbuf && a->ninstr == b->ninstr && a->nargs == b->nargs, "device %d counts", r);
	for (int i = 0; i < a->nbuf; i++) {
		const struct plan_buffer *x = &a->buf[i], *y = &b->buf[i];
		SAME(x->dtype == y->dtype && same_shape(&x->shape, &y->shape), "device %d buffer %d type", r, i);
		SAME(x->offset == y->offset && x->bytes == y->bytes, "device %d buffer %d place", r, i);
		SAME(x->bind == y->bind && x->index == y->index && x->slice == y->slice && x->slots == y->slots &&
			     plan_slice_of(a, i)->writer == plan_slice_of(b, i)->writer,
		     "device %d buffer %d binding", r, i);
		for (int j = 0; j < x->shape.rank; j++)
			SAME(plan_slice_of(a, i)->start[j] == plan_slice_of(b, i)->start[j],
			     "device %d buffer %d start", r, i);
	}
	for (int i = 0; i < a->ninstr; i++) {
		const struct plan_instr *x = &a->instr[i], *y = &b->instr[i];
		SAME(x->kind == y->kind && x->kernel == y->kernel && x->comm == y->comm && x->reduce == y->reduce &&
			     x->axis == y->axis && x->axis2 == y->axis2 && x->peer == y->peer && x->tag == y->tag &&
			     x->nin == y->nin && x->nout == y->nout && x->arg == y->arg,
		     "device %d instruction %d", r, i);
	}
	for (int i = 0; i < a->nargs; i++)
		SAME(a->args[i] == b->args[i], "device %d arg %d", r, i);
	return true;
}

static bool same_plan(const struct plan *a, const struct plan *b)
{
	SAME(a->version == b->version, "version");
	SAME(!strcmp(a->cluster, b->cluster), "cluster");
	SAME(a->cluster_nodes == b->cluster_nodes && a->cluster_devices == b->cluster_devices, "cluster size");
	SAME(a->model_hash == b->model_hash && a->options_hash == b->options_hash, "hashes");
	SAME(a->train == b->train && a->micro == b->micro, "train/micro");
	SAME(a->device_memory == b->device_memory, "device_memory");
	SAME(a->nstages == b->nstages, "nstages");
	for (int i = 0; i < a->nstages; i++) {
		const struct plan_stage *x = &a->stages[i], *y = &b->stages[i];
		SAME(x->first_rank == y->first_rank && x->ndevices == y->ndevices && x->rows == y->rows &&
			     x->cols == y->cols && x->n0 == y->n0 && x->n1 == y->n1 && x->norder == y->norder,
		     "stage %d", i);
		for (int k = 0; k < x->norder; k++)
			SAME(x->order[k] == y->order[k], "stage %d order %d", i, k);
	}
	SAME(a->nparams == b->nparams && a->ninputs == b->ninputs && a->noutputs == b->noutputs, "tensor counts");
	if (!same_tensors(a->params, b->params, a->nparams, "param") ||
	    !same_tensors(a->inputs, b->inputs, a->ninputs, "input") ||
	    !same_tensors(a->outputs, b->outputs, a->noutputs, "output"))
		return false;
	SAME(a->nstate == b->nstate && same_tensors(a->state, b->state, a->nstate, "state"), "state");
	SAME(!a->train_config == !b->train_config && (!a->train_config || !strcmp(a->train_config, b->train_config)),
	     "train_config");
	SAME(!a->model == !b->model && (!a->model || !strcmp(a->model, b->model)), "model");
	SAME(a->labels_input == b->labels_input && a->classes == b->classes, "labels");
	SAME(!a->input_file == !b->input_file &&
		     (!a->input_file ||
		      !memcmp(a->input_file, b->input_file, sizeof *a->input_file * (size_t)a->ninputs)),
	     "input files");
	SAME(a->nkernels == b->nkernels, "nkernels");
	for (int i = 0; i < a->nkernels; i++) {
		const struct plan_kernel *x = &a->kernels[i], *y = &b->kernels[i];
		SAME(x->op == y->op && x->nin == y->nin && x->nout == y->nout, "kernel %d op/arity", i);
		for (int j = 0; j < x->nin + x->nout; j++)
			SAME(x->dtype[j] == y->dtype[j] && same_shape(&x->shape[j], &y->shape[j]),
			     "kernel %d operand %d", i, j);
		if (!same_attrs(x->op, &x->a, &y->a, i))
			return false;
	}
	SAME(a->ncomms == b->ncomms, "ncomms");
	for (int i = 0; i < a->ncomms; i++) {
		SAME(a->comms[i].n == b->comms[i].n, "comm %d size", i);
		for (int j = 0; j < a->comms[i].n; j++)
			SAME(a->comms[i].ranks[j] == b->comms[i].ranks[j], "comm %d rank %d", i, j);
	}
	SAME(a->ndevices == b->ndevices, "ndevices");
	for (int i = 0; i < a->ndevices; i++)
		if (!same_device(&a->devices[i], &b->devices[i], i))
			return false;
	return true;
}

/* ---- files and bytes ---------------------------------------------------------- */

static char dir[] = "/tmp/pcc_plan_io_XXXXXX";

static const char *in_dir(const char *name)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

static const char *put(const char *name, const uint8_t *b, size_t n)
{
	const char *path = in_dir(name);
	FILE *f = fopen(path, "wb");
	if (f) {
		if (n)
			fwrite(b, 1, n, f);
		fclose(f);
	}
	return path;
}

static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Wraps hand-encoded Plan content into a plan file: magic, then PlanFile
 * { 1: version, 2: content, 3: checksum } (content under 128 bytes). */
static size_t wrap(const uint8_t *content, size_t n, uint8_t *out)
{
	uint64_t h = XXH3_64bits(content, n);
	size_t at = 0;
	memcpy(out, "PCCPLAN\n\x08", 9);
	out[9] = PLAN_FORMAT_VERSION;
	out[10] = 0x12;
	at = 11;
	out[at++] = (uint8_t)n;
	memcpy(out + at, content, n);
	at += n;
	out[at++] = 0x19;
	for (int i = 0; i < 8; i++)
		out[at++] = (uint8_t)(h >> (8 * i));
	return at;
}

/* plan_unpack(b, n) fails with a message containing want */
static bool refused(const uint8_t *b, size_t n, const char *want)
{
	ir_error_clear();
	struct plan *q = plan_unpack(b, n);
	if (q) {
		plan_free(q);
		TAP_DIAG("accepted");
		return false;
	}
	return has(want);
}

/* ---- the tests ------------------------------------------------------------------ */

/* ---- signed plans (plan_sign.c) ------------------------------------------------- */

/* A key file of n bytes, each seed + its index, read into k. */
static int key_file(const char *name, size_t n, int seed, struct plan_key *k)
{
	uint8_t buf[PLAN_KEY_MAX + 8];
	for (size_t i = 0; i < n && i < sizeof buf; i++)
		buf[i] = (uint8_t)(seed + (int)i);
	return plan_key_read(put(name, buf, n), k);
}

/* Where the content (field 2) of a packed unsigned plan b starts; its
 * length in *len (field 3, the checksum, is the last 9 bytes). */
static size_t content_at(const uint8_t *b, size_t n, size_t *len)
{
	size_t at = 11;
	*len = 0;
	for (int shift = 0;; shift += 7) {
		*len |= (size_t)(b[at] & 0x7f) << shift;
		if (!(b[at++] & 0x80))
			break;
	}
	IR_ASSERT(b[8] == 0x08 && b[10] == 0x12 && at + *len + 9 == n && b[at + *len] == 0x19);
	return at;
}

/* The checksum of a packed unsigned plan b (or its first n bytes)
 * recomputed over its content, as someone changing it would. */
static void rechecksum(uint8_t *b, size_t n)
{
	size_t len, at = content_at(b, n, &len);
	uint64_t h = XXH3_64bits(b + at, len);
	for (int i = 0; i < 8; i++)
		b[n - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

/* plan_unpack_verified(b, n, k) refuses with a message holding want. */
static bool refused_key(const uint8_t *b, size_t n, const struct plan_key *k, const char *want)
{
	ir_error_clear();
	struct plan *q = plan_unpack_verified(b, n, k);
	plan_free(q);
	return !q && has(want);
}

static void test_signed(const struct plan *p, const uint8_t *b, size_t n)
{
	struct plan_key k, k2, bad;
	/* RFC 4231 test case 1: HMAC-SHA-256, key 20 bytes of 0x0b, "Hi There" */
	static const uint8_t rfc[32] = { 0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf,
					 0xce, 0xaf, 0x0b, 0xf1, 0x2b, 0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83,
					 0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7 };
	uint8_t *t = ir_malloc(8);
	size_t tn = 8;
	memcpy(t, "Hi There", 8);
	memset(k.bytes, 0x0b, 20);
	k.n = 20;
	TAP_OK(plan_sign(&t, &tn, &k) == 0 && tn == 8 + 34 && t[8] == 0x22 && t[9] == 32 && !memcmp(t + 10, rfc, 32),
	       "the tag is HMAC-SHA256 (RFC 4231 test case 1), appended as field 4 of 32 bytes");
	ir_free(t);

	TAP_OK(key_file("k", 32, 1, &k) == 0 && k.n == 32 && key_file("k2", 32, 2, &k2) == 0, "32-byte keys read");
	TAP_OK(key_file("k15", 15, 1, &bad) < 0 && has("k15: a key of 15 bytes: expected 16 to 1024"),
	       "a 15-byte key is refused: %s", ir_error());
	TAP_OK(key_file("k0", 0, 1, &bad) < 0 && has("a key of 0 bytes"), "an empty key is refused: %s", ir_error());
	TAP_OK(key_file("k1025", PLAN_KEY_MAX + 1, 1, &bad) < 0 && has("a key of more than 1024 bytes"),
	       "a 1025-byte key is refused: %s", ir_error());
	TAP_OK(key_file("k1024", PLAN_KEY_MAX, 1, &bad) == 0 && bad.n == PLAN_KEY_MAX, "a 1024-byte key is taken");
	TAP_OK(plan_key_read(dir, &bad) < 0 && has("a key is a regular file"), "a directory as the key: %s",
	       ir_error());
	TAP_OK(plan_key_read(in_dir("nokey"), &bad) < 0 && has("nokey: cannot read the key"), "a missing key: %s",
	       ir_error());

	uint8_t *s = ir_malloc(n);
	size_t sn = n;
	memcpy(s, b, n);
	TAP_OK(plan_sign(&s, &sn, &k) == 0 && sn == n + 34 && !memcmp(s, b, n),
	       "plan_sign appends 34 bytes and changes none before them");
	struct plan *q = plan_unpack_verified(s, sn, &k);
	TAP_OK(q && same_plan(p, q), "a signed plan read with its key is the plan%s%s", q ? "" : ": ",
	       q ? "" : ir_error());
	plan_free(q);
	q = plan_unpack(s, sn);
	TAP_OK(q && same_plan(p, q), "read without a key, the tag is passed over%s%s", q ? "" : ": ",
	       q ? "" : ir_error());
	plan_free(q);
	TAP_OK(refused_key(b, n, &k, "not signed, and --verify-key"), "an unsigned plan read with a key: %s",
	       ir_error());
	TAP_OK(refused_key(s, sn, &k2, "its signature does not match the key in"),
	       "a signed plan read with another key: %s", ir_error());
	TAP_OK(refused_key(s, sn, &k2, k2.path), "... the message names the key file");

	/* every byte of the content flipped, the checksum recomputed: the
	 * checksum passes (without the key the plan gets past it), the tag
	 * does not */
	int passed_checksum = 0, caught = 0, total = 0;
	size_t clen, first = content_at(b, n, &clen), last = first + clen;
	for (size_t i = first; i < last; i++, total++) {
		uint8_t *c = ir_malloc(sn);
		memcpy(c, s, sn);
		c[i] ^= 0x01;
		rechecksum(c, n);
		ir_error_clear();
		q = plan_unpack(c, sn);
		passed_checksum += q || !strstr(ir_error(), "checksum");
		plan_free(q);
		caught += refused_key(c, sn, &k, "its signature does not match");
		ir_free(c);
	}
	TAP_OK(total == (int)clen && total > 100 && passed_checksum == total && caught == total,
	       "each of %d content bytes flipped, checksum recomputed: %d get past the checksum, %d refused by the "
	       "key",
	       total, passed_checksum, caught);
	s[sn - 1] ^= 0x80;
	TAP_OK(refused_key(s, sn, &k, "its signature does not match"), "a flipped bit in the tag: %s", ir_error());
	s[sn - 1] ^= 0x80;
	TAP_OK(refused(s, sn - 1, "truncated"), "a tag cut short: %s", ir_error());
	s[n + 1] = 31;
	TAP_OK(refused(s, sn, "bad file framing"), "a tag of 31 bytes: %s", ir_error());
	s[n + 1] = 32;

	const char *path = in_dir("signed.bin");
	TAP_OK(plan_write_signed(p, path, &k) == 0 && (q = plan_read_verified(path, &k)) && same_plan(p, q),
	       "plan_write_signed, plan_read_verified: the plan back");
	plan_free(q);
	TAP_OK(!plan_read_verified(path, &k2) && has(path) && has("its signature does not match"),
	       "plan_read_verified with another key names the file: %s", ir_error());
	plan_key_wipe(&k);
	TAP_OK(k.n == 0 && k.bytes[0] == 0 && k.bytes[31] == 0, "plan_key_wipe clears the key");
	ir_free(s);
}

static void test_round_trip(const struct plan *p, const uint8_t *b, size_t n)
{
	struct plan *q = plan_unpack(b, n);
	if (!TAP_OK(q != NULL, "unpack of a packed plan (%zu bytes)", n)) {
		TAP_DIAG("%s", ir_error());
		return;
	}
	bool ok = same_plan(p, q);
	if (!TAP_OK(ok, "pack/unpack keeps every field"))
		TAP_DIAG("differs at %s", diff);

	uint8_t *b2 = NULL;
	size_t n2 = 0;
	TAP_OK(plan_pack(q, &b2, &n2) == 0 && n2 == n && !memcmp(b, b2, n),
	       "repacking the unpacked plan gives the same bytes");
	ir_free(b2);

	/* the comparer sees a change anywhere */
	q->devices[1].instr[3].tag++;
	TAP_OK(!same_plan(p, q), "comparer catches a changed tag (%s)", diff);
	q->devices[1].instr[3].tag--;
	q->kernels[0].a.rhs_contract.v[0] = 1;
	TAP_OK(!same_plan(p, q), "comparer catches a changed contraction (%s)", diff);
	q->kernels[0].a.rhs_contract.v[0] = 0;
	((float *)q->kernels[1].a.data)[5] = 9.0f;
	TAP_OK(!same_plan(p, q), "comparer catches changed constant data (%s)", diff);
	((float *)q->kernels[1].a.data)[5] = 0.5f * 5 - 1.0f;
	q->kernels[2].a.value = 0.0;
	TAP_OK(!same_plan(p, q), "comparer tells -0.0 from 0.0 (%s)", diff);
	q->kernels[2].a.value = -0.0;
	sl(q, 0, 0)->start[1] = 3;
	TAP_OK(!same_plan(p, q), "comparer catches a changed slice start (%s)", diff);
	sl(q, 0, 0)->start[1] = 0;
	q->classes++;
	TAP_OK(!same_plan(p, q), "comparer catches a changed class count (%s)", diff);
	q->classes--;
	TAP_OK(same_plan(p, q), "and the undone copy compares equal again");
	plan_free(q);

	/* every instruction kind and reduction, in one place of the plan */
	struct plan *v = build_plan();
	bool all = true;
	for (int k = 0; k < PLAN_INSTR_KIND_COUNT; k++)
		for (int r = 0; r < PLAN_REDUCE_COUNT; r++) {
			v->devices[1].instr[1].kind = (enum plan_instr_kind)k;
			v->devices[1].instr[1].reduce = (enum plan_reduce)r;
			uint8_t *vb = NULL;
			size_t vn = 0;
			q = plan_pack(v, &vb, &vn) == 0 ? plan_unpack(vb, vn) : NULL;
			if (!q || !same_plan(v, q)) {
				all = false;
				TAP_DIAG("%s/%s: %s", plan_instr_kind_name(k), plan_reduce_name(r),
					 q ? diff : ir_error());
			}
			plan_free(q);
			ir_free(vb);
		}
	TAP_OK(all, "every instruction kind and reduction round-trips");
	plan_free(v);
}

static void test_files(const struct plan *p, const uint8_t *b, size_t n)
{
	const char *path = in_dir("plan.bin");
	TAP_OK(plan_write(p, path) == 0, "plan_write %s", ir_error_code() ? ir_error() : "");
	TAP_OK(count_entries(dir) == 1, "no temporary file is left beside it");
	struct plan *q = plan_read(path);
	TAP_OK(q && same_plan(p, q), "plan_read gives the plan back%s%s", q ? " " : ": ", q ? diff : ir_error());
	plan_free(q);

	TAP_OK(plan_write(p, path) == 0 && (q = plan_read(path)) != NULL, "plan_write replaces an existing plan");
	plan_free(q);

	static const size_t cuts[] = { 1, 7, 8, 9, 10, 12, 40 };
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		char name[32];
		snprintf(name, sizeof name, "cut%zu.bin", cuts[i]);
		const char *f = put(name, b, cuts[i]);
		char want[64];
		snprintf(want, sizeof want, "%s: truncated (%zu bytes)", f, cuts[i]);
		TAP_OK(!plan_read(f) && has(want), "file cut at %zu bytes: %s", cuts[i], ir_error());
	}
	const char *f = put("cut_end.bin", b, n - 1);
	TAP_OK(!plan_read(f) && has(f) && has("truncated"), "file missing its last byte: %s", ir_error());

	uint8_t *c = ir_malloc(n);
	memcpy(c, b, n);
	IR_ASSERT(c[8] == 0x08 && c[9] == PLAN_FORMAT_VERSION); /* field 1, varint, right after the magic */
	c[9] = PLAN_FORMAT_VERSION + 1;
	char newer[96];
	snprintf(newer, sizeof newer, "plan format version %d, this build reads version %d", PLAN_FORMAT_VERSION + 1,
		 PLAN_FORMAT_VERSION);
	f = put("vnext.bin", c, n);
	TAP_OK(!plan_read(f) && has(f) && has(newer), "a newer format version is refused: %s", ir_error());
	f = put("vnextcut.bin", c, 12);
	TAP_OK(!plan_read(f) && has(newer), "the version is read before the rest is trusted: %s", ir_error());
	c[9] = PLAN_FORMAT_VERSION;

	c[n / 2] ^= 0x20;
	f = put("flip.bin", c, n);
	TAP_OK(!plan_read(f) && has(f) && has("checksum mismatch (file is corrupt)"), "a flipped byte in content: %s",
	       ir_error());
	c[n / 2] ^= 0x20;
	c[n - 1] ^= 1;
	TAP_OK(refused(c, n, "checksum mismatch"), "a flipped byte in the checksum: %s", ir_error());
	c[n - 1] ^= 1;

	c[6] = 'X';
	f = put("magic.bin", c, n);
	TAP_OK(!plan_read(f) && has(f) && has("not a pcc plan (bad magic)"), "no magic: %s", ir_error());
	f = put("text.bin", (const uint8_t *)"hello, world\n", 13);
	TAP_OK(!plan_read(f) && has("not a pcc plan (bad magic)"), "a text file: %s", ir_error());
	f = put("short.bin", (const uint8_t *)"PCX", 3);
	TAP_OK(!plan_read(f) && has("not a pcc plan (bad magic)"), "a short non-plan: %s", ir_error());
	ir_free(c);

	f = put("empty.bin", b, 0);
	TAP_OK(!plan_read(f) && has(f) && has("truncated (0 bytes)"), "an empty file: %s", ir_error());
	f = in_dir("missing.bin");
	TAP_OK(!plan_read(f) && ir_error_code() == -ENOENT && has(f) && has("cannot read"), "a missing file: %s",
	       ir_error());
	TAP_OK(!plan_read(dir) && ir_error_code() == -EIO && has("cannot read"), "a directory: %s", ir_error());

	f = in_dir("nodir/plan.bin");
	TAP_OK(plan_write(p, f) < 0 && has(f) && has("cannot write"), "writing into a missing directory fails: %s",
	       ir_error());
	struct stat st;
	TAP_OK(stat(in_dir("nodir"), &st) < 0, "and leaves nothing behind");
}

static void test_malformed(const uint8_t *b, size_t n)
{
	uint8_t c[256];
	uint8_t *x = ir_malloc(n);
	memcpy(x, b, n);
	/* same-length edits inside content, resealed with a fresh checksum */
	const uint8_t *content = b + 12 + (b[11] & 0x80 ? 1 : 0); /* length < 16384 */
	size_t clen = (size_t)(b[11] & 0x7f) | (b[11] & 0x80 ? (size_t)b[12] << 7 : 0);
	IR_ASSERT(content + clen + 9 == b + n);
	struct {
		const char *from, *to;
		size_t len;
		const char *want;
	} edits[] = {
		{ "\x0a\x03"
		  "dot",
		  "\x0a\x03"
		  "dox",
		  5, "malformed plan: kernel 0: unknown op \"dox\"" },
		{ "\x12\x04"
		  "bf16",
		  "\x12\x04"
		  "bf17",
		  6, "param 1 (\"b1\"): unknown dtype \"bf17\"" },
		{ "\x18\x02\x20\x01", "\x18\x03\x20\x01", 4, "kernel 0: 3 operand types for nin 3 + nout 1" },
	};
	for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
		memcpy(x, b, n);
		uint8_t *cx = x + (content - b), *at = NULL;
		for (size_t i = 0; i + edits[e].len <= clen && !at; i++)
			if (!memcmp(cx + i, edits[e].from, edits[e].len))
				at = cx + i;
		IR_ASSERT(at);
		memcpy(at, edits[e].to, edits[e].len);
		uint64_t h = XXH3_64bits(cx, clen);
		for (int i = 0; i < 8; i++)
			x[n - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
		TAP_OK(refused(x, n, edits[e].want), "malformed: %s", ir_error());
	}
	ir_free(x);

	/* hand-encoded content: this version and one param of rank 9 */
	static const uint8_t rank9[] = { 0x08, PLAN_FORMAT_VERSION,
					 0x5a, 19,
					 0x0a, 1,
					 'a',  0x12,
					 3,    'f',
					 '3',  '2',
					 0x1a, 9,
					 1,    1,
					 1,    1,
					 1,    1,
					 1,    1,
					 1 };
	TAP_OK(refused(c, wrap(rank9, sizeof rank9, c),
		       "malformed plan: param 0 (\"a\"): rank 9 exceeds the limit of 8"),
	       "rank over IR_MAX_RANK: %s", ir_error());
	/* a device with an instruction of kind 99 */
	static const uint8_t kind99[] = { 0x08, PLAN_FORMAT_VERSION, 0x82, 0x01, 4, 0x2a, 2, 0x08, 99 };
	TAP_OK(refused(c, wrap(kind99, sizeof kind99, c), "device 0: instruction 0: unknown instruction kind 99"),
	       "instruction kind out of range: %s", ir_error());
	/* a f32[2] constant with 4 bytes of data */
	static const uint8_t cdata[] = { 0x08, PLAN_FORMAT_VERSION,
					 0x72, 29,
					 0x0a, 8,
					 'c',  'o',
					 'n',  's',
					 't',  'a',
					 'n',  't',
					 0x12, 15,
					 0x0a, 3,
					 'f',  '3',
					 '2',  0x12,
					 1,    2,
					 0xaa, 0x01,
					 4,    0,
					 0,    0,
					 0,    0x20,
					 0x01 };
	TAP_OK(refused(c, wrap(cdata, sizeof cdata, c), "kernel 0: constant data is 4 bytes, a f32[2] constant has 8"),
	       "constant data of the wrong size: %s", ir_error());
	static const uint8_t v7[] = { 0x08, 0x07 };
	TAP_OK(refused(c, wrap(v7, sizeof v7, c), "malformed plan: content has format version 7"),
	       "content version differs from the file's: %s", ir_error());
	static const uint8_t junk[] = { 0x08, PLAN_FORMAT_VERSION, 0x5a, 40, 0x0a };
	TAP_OK(refused(c, wrap(junk, sizeof junk, c), "malformed plan: the content does not decode"),
	       "content that does not decode: %s", ir_error());
	size_t m = wrap(v7, sizeof v7, c);
	c[m - 9] = 0x1d; /* field 3 as a 32-bit field */
	TAP_OK(refused(c, m, "bad file framing"), "framing with a wrong wire type: %s", ir_error());
}

/* ---- devices written as another's program with changes -------------------------
 * A device whose program is another's but for kernels, communicators, peers,
 * tags, a transfer's arguments, slice starts and writers is written as that
 * one's changes (Device.copy_of): it reads back the same, takes far less
 * room than a device written whole, and a broken list of changes is refused
 * naming the device and the change. */

static void copy_device(struct plan_device *d, const struct plan_device *s, int rank)
{
	*d = *s;
	d->rank = rank;
	d->buf = ir_malloc(sizeof *d->buf * (size_t)s->nbuf);
	d->instr = ir_malloc(sizeof *d->instr * (size_t)(s->ninstr + 1));
	d->args = ir_malloc(sizeof *d->args * (size_t)s->nargs);
	memcpy(d->buf, s->buf, sizeof *d->buf * (size_t)s->nbuf);
	memcpy(d->instr, s->instr, sizeof *d->instr * (size_t)s->ninstr);
	memcpy(d->args, s->args, sizeof *d->args * (size_t)s->nargs);
	d->slice = ir_malloc(sizeof *d->slice * (size_t)(s->nslice + 1));
	memcpy(d->slice, s->slice, sizeof *d->slice * (size_t)s->nslice);
}

/* build_plan's two devices and, from rank 2 on, devices 2 .. n-1: copies of
 * device 0 with changes (2: none; 3: kernel, comm, peer, tag, arg, start,
 * writer; 4: device 1's program), then 5: an instruction more (written whole) */
static struct plan *copies_plan(int n)
{
	struct plan *p = build_plan();
	struct plan_device *dv = ir_realloc(p->devices, sizeof *dv * (size_t)n);
	IR_ASSERT(dv);
	p->devices = dv;
	for (int r = 2; r < n; r++) {
		copy_device(&dv[r], &dv[r == 4 ? 1 : 0], r);
		dv[r].coord[1] = r;
		p->ndevices = r + 1;
	}
	if (n > 3) {
		struct plan_device *d = &dv[3];
		d->instr[7].kernel = 2;
		d->instr[1].comm = 5;
		d->instr[3].peer = 3;
		d->instr[3].tag = 70;
		d->instr[6].arg = 12;
		sl(p, 3, 0)->start[1] = 96;
		sl(p, 3, 3)->writer = true;
		d->arena_bytes = 9984;
	}
	if (n > 5) {
		struct plan_device *d = &dv[5];
		d->instr[d->ninstr++] = ins(PLAN_FREE, 1, 0, 18);
	}
	p->stages[0].ndevices = p->cluster_devices = n;
	return p;
}

static void test_copies(void)
{
	size_t n[7] = { 0 };
	bool all = true;
	for (int k = 2; k <= 6; k++) {
		struct plan *p = copies_plan(k), *q = NULL;
		uint8_t *b = NULL;
		all = all && plan_pack(p, &b, &n[k]) == 0 && (q = plan_unpack(b, n[k])) && same_plan(p, q);
		if (!all)
			TAP_DIAG("%d devices: %s", k, q ? diff : ir_error());
		plan_free(q);
		plan_free(p);
		ir_free(b);
	}
	TAP_OK(all, "plans whose devices copy others' programs with changes read back the same");
	size_t whole = n[6] - n[5], copies = n[5] - n[2];
	TAP_OK(copies * 3 < whole, "three devices written as changes take %zu bytes, one written whole %zu", copies,
	       whole);
	TAP_OK(n[3] - n[2] < whole / 10, "a copy with no change takes %zu bytes", n[3] - n[2]);

	/* in memory, copies share the arrays they have alike: device 2
	 * copies device 0 unchanged, device 3 with other slices */
	struct plan *p6 = copies_plan(6), *r = NULL;
	uint8_t *b6 = NULL;
	size_t n6;
	if (plan_pack(p6, &b6, &n6) == 0)
		r = plan_unpack(b6, n6);
	bool shares = r && r->devices[2].shared_args && r->devices[2].shared_buf &&
		      r->devices[2].buf == r->devices[0].buf && r->devices[3].shared_args && r->devices[3].shared_buf &&
		      r->devices[3].buf == r->devices[0].buf && plan_slice_of(&r->devices[3], 0)->start[1] == 96 &&
		      plan_slice_of(&r->devices[0], 0)->start[1] == 0 && !r->devices[0].shared_buf;
	TAP_OK(shares, "copies read back share the arguments and buffers, each with slices of its own");
	bool owns = r && plan_device_unshare(&r->devices[2]) == 0 && !r->devices[2].shared_buf &&
		    r->devices[2].buf != r->devices[0].buf;
	if (owns) {
		r->devices[2].buf[0].offset += PLAN_ALIGN;
		owns = r->devices[0].buf[0].offset == 0 && !same_plan(p6, r);
		r->devices[2].buf[0].offset -= PLAN_ALIGN;
		owns = owns && same_plan(p6, r);
	}
	TAP_OK(owns, "a device made to own its arrays changes without changing the device it shared them with");
	plan_free(r);
	plan_free(p6);
	ir_free(b6);

	uint8_t c[256];
	/* device 0: a copy of device 1 */
	static const uint8_t later[] = { 0x08, PLAN_FORMAT_VERSION, 0x82, 0x01, 2, 0x50, 2 };
	TAP_OK(refused(c, wrap(later, sizeof later, c),
		       "malformed plan: device 0: copy of device 1, not an earlier one"),
	       "a copy of a later device: %s", ir_error());
	/* device 0: changes but no program to change */
	static const uint8_t nobase[] = { 0x08, PLAN_FORMAT_VERSION, 0x82, 0x01, 3, 0x5a, 1, 0 };
	TAP_OK(refused(c, wrap(nobase, sizeof nobase, c), "device 0: changes to no device's program"),
	       "changes without a device to copy: %s", ir_error());
	/* device 0: one instruction, one f32[2,2] buffer; device 1 copies it */
#define DEV0 0x82, 0x01, 13, 0x2a, 0, 0x22, 9, 0x0a, 3, 'f', '3', '2', 0x12, 2, 2, 2
#define INSTR_CHANGE(at) 0x5a, 1, at, 0x62, 1, 0, 0x6a, 1, 0, 0x72, 1, 0, 0x92, 0x01, 1, 0, 0x9a, 0x01, 1, 0
	static const uint8_t past[] = { 0x08, PLAN_FORMAT_VERSION, DEV0, 0x82, 0x01, 22, 0x50, 1, INSTR_CHANGE(3) };
	TAP_OK(refused(c, wrap(past, sizeof past, c),
		       "device 1: instruction change 0: instruction 3, out of order or past 1"),
	       "a change past the last instruction: %s", ir_error());
	static const uint8_t ok1[] = { 0x08, PLAN_FORMAT_VERSION, DEV0, 0x82, 0x01, 22, 0x50, 1, INSTR_CHANGE(0) };
	struct plan *q = plan_unpack(c, wrap(ok1, sizeof ok1, c));
	TAP_OK(q && q->ndevices == 2 && q->devices[1].ninstr == 1 && q->devices[1].nbuf == 1 &&
		       q->devices[1].buf[0].shape.rank == 2,
	       "the same change of instruction 0 is taken%s%s", q ? "" : ": ", q ? "" : ir_error());
	plan_free(q);
	static const uint8_t fewer[] = { 0x08, PLAN_FORMAT_VERSION, DEV0, 0x82, 0x01, 5, 0x50, 1, 0x5a, 1, 0 };
	TAP_OK(refused(c, wrap(fewer, sizeof fewer, c),
		       "device 1: instruction changes: 1 places, 0 kernels, 0 comms, 0 peers, 0 tags, 0 args"),
	       "a change without its values: %s", ir_error());
	static const uint8_t starts[] = {
		0x08, PLAN_FORMAT_VERSION, DEV0, 0x82, 0x01, 13, 0x50, 1, 0x7a, 1, 0, 0x82, 0x01, 1, 1, 0x8a, 0x01, 1, 5
	};
	TAP_OK(refused(c, wrap(starts, sizeof starts, c), "device 1: buffer change 0: 1 starts left for rank 2"),
	       "a buffer change short of starts: %s", ir_error());
	static const uint8_t own[] = { 0x08, PLAN_FORMAT_VERSION, DEV0, 0x82, 0x01, 4, 0x50, 1, 0x2a, 0 };
	TAP_OK(refused(c, wrap(own, sizeof own, c), "device 1: a copy of device 0 with a program of its own"),
	       "a copy with instructions of its own: %s", ir_error());
#undef DEV0
#undef INSTR_CHANGE
}

/* Packed plans a reader refuses for what is inside: a negative dimension;
 * labels naming no input, a float input, no classes. And a plan without
 * labels reads back without. */
static void test_content(void)
{
	static const struct {
		int64_t dim;
		int labels;
		int64_t classes;
		const char *want;
	} bad[] = {
		{ -5, 1, 32, "malformed plan: device 1: buffer 2: negative dimension in shape [-5,32]" },
		{ 8, 0, 32, "malformed plan: labels: input 0 (\"x\") is f32, not integer class indices" },
		{ 8, 2, 32, "malformed plan: labels: input 2, the plan has 2" },
		{ 8, 1, 0, "malformed plan: labels: 0 classes" },
	};
	struct plan *q = build_plan(), *u;
	uint8_t *b = NULL;
	size_t n = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		q->devices[1].buf[2].shape.dims[0] = bad[i].dim;
		q->labels_input = bad[i].labels;
		q->classes = bad[i].classes;
		TAP_OK(plan_pack(q, &b, &n) == 0 && refused(b, n, bad[i].want), "refused: %s", ir_error());
		ir_free(b);
		b = NULL;
	}
	q->devices[1].buf[2].shape.dims[0] = 8;
	q->labels_input = 1;
	q->classes = 32;
	q->input_file[1] = 0;
	TAP_OK(plan_pack(q, &b, &n) == 0 &&
		       refused(b, n, "malformed plan: input files: input 1 reads input_0.pb, after input_0.pb"),
	       "refused: %s", ir_error());
	ir_free(b);
	b = NULL;
	q->input_file[1] = 2;
	q->labels_input = -1;
	q->classes = 0;
	u = plan_pack(q, &b, &n) == 0 ? plan_unpack(b, n) : NULL;
	TAP_OK(u && u->labels_input == -1 && same_plan(q, u), "a plan without labels reads back without");
	plan_free(u);
	ir_free(b);
	plan_free(q);
}

static void test_mesh(const struct plan *p)
{
	TAP_OK(plan_check_mesh(p, 2) == 0, "plan_check_mesh accepts 2 ranks for 2 devices");
	TAP_OK(plan_check_mesh(p, 4) == -EINVAL &&
		       has("plan compiled for 2 devices (cluster 1x2xh100), run with 4 ranks"),
	       "plan_check_mesh refuses 4 ranks: %s", ir_error());
}

static size_t heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	return mallinfo2().uordblks;
#else
	return 0;
#endif
}

struct sweep {
	int unpack_fail, unpack_bad, pack_fail, pack_bad;
	bool unpack_same, pack_same;
};

/* Fails allocation k = 0, 1, ... of plan_unpack and of plan_pack until one
 * succeeds; each failure must come back whole: NULL or -ENOMEM, a message. */
static struct sweep sweep(const struct plan *p, const uint8_t *b, size_t n)
{
	struct sweep s = { 0 };
	for (int k = 0; k < 100000; k++) {
		ir_alloc_fail_after(k);
		struct plan *q = plan_unpack(b, n);
		ir_alloc_fail_after(-1);
		if (q) {
			s.unpack_same = same_plan(p, q);
			plan_free(q);
			break;
		}
		s.unpack_fail++;
		s.unpack_bad += !strstr(ir_error(), "out of memory");
	}
	for (int k = 0; k < 100000; k++) {
		uint8_t *out = NULL;
		size_t on = 0;
		ir_alloc_fail_after(k);
		int rc = plan_pack(p, &out, &on);
		ir_alloc_fail_after(-1);
		if (rc == 0) {
			s.pack_same = on == n && !memcmp(out, b, n);
			ir_free(out);
			break;
		}
		s.pack_fail++;
		s.pack_bad += rc != -ENOMEM || out || on || !strstr(ir_error(), "out of memory");
	}
	return s;
}

static void test_alloc_failures(const struct plan *p, const uint8_t *b, size_t n)
{
	struct sweep s = sweep(p, b, n);
	TAP_OK(s.unpack_fail > 10 && s.unpack_bad == 0 && s.unpack_same,
	       "unpack: %d allocation failures each gave NULL and \"out of memory\", then the whole plan",
	       s.unpack_fail);
	TAP_OK(s.pack_fail > 10 && s.pack_bad == 0 && s.pack_same,
	       "pack: %d allocation failures each gave -ENOMEM, then the same bytes", s.pack_fail);
	/* malloc keeps some freed blocks in per-thread caches that it counts
	 * as in use, so the heap settles only after a few sweeps; a leak on
	 * any failure path grows it every sweep, so it never stays flat for 8
	 * sweeps in a row */
	int flat = 0, sweeps;
	size_t h = heap_in_use(), h0 = h;
	for (sweeps = 0; sweeps < 64 && flat < 8; sweeps++) {
		sweep(p, b, n);
		size_t now = heap_in_use();
		flat = now == h ? flat + 1 : 0;
		h = now;
	}
	TAP_OK(flat == 8, "the heap stays flat over repeated sweeps (%zu -> %zu bytes in use, %d sweeps)", h0, h,
	       sweeps);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		TAP_OK(0, "mkdtemp");
		return tap_done();
	}
	struct plan *p = build_plan();
	uint8_t *b = NULL;
	size_t n = 0;
	int rc = plan_pack(p, &b, &n);
	if (!TAP_OK(rc == 0 && n > 20 && !memcmp(b, "PCCPLAN\n", 8), "plan_pack: %zu bytes starting with the magic", n))
		return tap_done();
	test_round_trip(p, b, n);
	test_files(p, b, n);
	test_malformed(b, n);
	test_content();
	test_copies();
	test_mesh(p);
	test_signed(p, b, n);
	size_t cut;
	for (cut = 0; cut < n; cut++) {
		struct plan *q = plan_unpack(b, cut);
		bool ok = !q && strstr(ir_error(), "truncated");
		plan_free(q);
		if (!ok)
			break;
	}
	TAP_OK(cut == n, "every cut from 0 to %zu bytes says \"truncated\"%s%s", n - 1, cut < n ? ", not at " : "",
	       cut < n ? ir_error() : "");
	test_alloc_failures(p, b, n);
	ir_free(b);
	plan_free(p);

	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(in_dir(e->d_name));
	if (d)
		closedir(d);
	rmdir(dir);
	return tap_done();
}
