/*
 * test_plan_verify.c: plan_verify (ir/plan_verify.c, plan_verify_comm.c) on
 * small plans built by hand: three valid ones (tensor parallel dot with an
 * all_gather, a two-stage pipeline with send/recv, a 2x2 mesh with
 * all_reduces on both axes) and a memory-reusing one verify; broken
 * variants of them fail with a message naming the device, the instruction
 * and the problem. Then allocation failures, and one timing line for a
 * long program.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/plan.h"
#include "tests/tap.h"

#define SHAPE(...)                                                                               \
	((struct ir_shape){ .rank = (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), \
			    .dims = { __VA_ARGS__ } })

/* ---- building plans ------------------------------------------------------- */

/* Grows an ir_malloc'd array of n elements by one zeroed element. Arrays
 * grow only through here, so their capacity is n rounded up to a power of
 * two: reallocate when n is one (or 0). */
static void *grow(void *a, int n, size_t size)
{
	char *q = a;
	if ((n & (n - 1)) == 0) {
		q = ir_realloc(a, (size_t)(n ? 2 * n : 1) * size);
		IR_ASSERT(q);
	}
	memset(q + (size_t)n * size, 0, size);
	return q;
}

/* A stage of n0 x n1 devices after the plan's last rank. */
static void add_stage(struct plan *p, int n0, int n1)
{
	p->stages = grow(p->stages, p->nstages, sizeof *p->stages);
	p->stages[p->nstages] = (struct plan_stage){
		.first_rank = p->ndevices, .ndevices = n0 * n1, .rows = 1, .cols = n0 * n1, .n0 = n0, .n1 = n1
	};
	for (int i = 0; i < n0 * n1; i++) {
		p->devices = grow(p->devices, p->ndevices, sizeof *p->devices);
		struct plan_device *dev = &p->devices[p->ndevices];
		dev->rank = p->ndevices++;
		dev->stage = p->nstages;
		dev->coord[0] = i / n1;
		dev->coord[1] = i % n1;
	}
	p->nstages++;
}

static void add_tensor(struct plan_tensor **t, int *n, const char *name, struct ir_shape s)
{
	*t = grow(*t, *n, sizeof **t);
	(*t)[*n].name = ir_malloc(strlen(name) + 1);
	IR_ASSERT((*t)[*n].name);
	strcpy((*t)[*n].name, name);
	(*t)[*n].dtype = IR_F32;
	(*t)[*n].shape = s;
	(*n)++;
}

static void add_comm(struct plan *p, int n, const int *ranks)
{
	p->comms = grow(p->comms, p->ncomms, sizeof *p->comms);
	struct plan_comm *c = &p->comms[p->ncomms++];
	c->n = n;
	c->ranks = ir_malloc((size_t)n * sizeof *c->ranks);
	IR_ASSERT(c->ranks);
	memcpy(c->ranks, ranks, (size_t)n * sizeof *c->ranks);
}

/* An f32 kernel; shapes: inputs then outputs. */
static void add_kernel(struct plan *p, enum ir_op op, int nin, int nout, const struct ir_shape *shapes)
{
	p->kernels = grow(p->kernels, p->nkernels, sizeof *p->kernels);
	struct plan_kernel *k = &p->kernels[p->nkernels++];
	k->op = op;
	k->nin = nin;
	k->nout = nout;
	if (op == IR_OP_DOT) {
		k->a.lhs_contract = IR_ILIST(1);
		k->a.rhs_contract = IR_ILIST(0);
	}
	k->dtype = ir_malloc((size_t)(nin + nout) * sizeof *k->dtype);
	k->shape = ir_malloc((size_t)(nin + nout) * sizeof *k->shape);
	IR_ASSERT(k->dtype && k->shape);
	for (int j = 0; j < nin + nout; j++) {
		k->dtype[j] = IR_F32;
		k->shape[j] = shapes[j];
	}
}

/* An f32 buffer placed after the device's others; returns its id. */
static int add_buf(struct plan *p, int d, struct ir_shape s, enum plan_bind bind, int index, int64_t s0, int64_t s1)
{
	struct plan_device *dev = &p->devices[d];
	dev->buf = grow(dev->buf, dev->nbuf, sizeof *dev->buf);
	struct plan_buffer *b = &dev->buf[dev->nbuf];
	b->dtype = IR_F32;
	b->shape = s;
	b->bytes = 4 * ir_shape_numel(&s);
	b->offset = dev->arena_bytes;
	dev->arena_bytes += (b->bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
	b->bind = bind;
	b->index = index;
	b->slice = -1;
	if (bind != PLAN_BIND_NONE) {
		dev->slice = grow(dev->slice, dev->nslice, sizeof *dev->slice);
		b->slice = dev->nslice++;
		dev->slice[b->slice] = (struct plan_slice){ .start = { s0, s1 }, .writer = true };
	}
	return dev->nbuf++;
}

/* Device d's slice of its bound buffer b, to change. */
static struct plan_slice *sl(struct plan *p, int d, int b)
{
	return &p->devices[d].slice[p->devices[d].buf[b].slice];
}

/* Appends an instruction reading then writing the buffer ids that follow;
 * the pointer is good until the device's next instruction. */
static struct plan_instr *add_instr(struct plan *p, int d, enum plan_instr_kind kind, int nin, int nout, ...)
{
	struct plan_device *dev = &p->devices[d];
	dev->instr = grow(dev->instr, dev->ninstr, sizeof *dev->instr);
	struct plan_instr *in = &dev->instr[dev->ninstr];
	*in = (struct plan_instr){ .kind = kind, .nin = nin, .nout = nout, .arg = dev->nargs };
	va_list ap;
	va_start(ap, nout);
	for (int j = 0; j < nin + nout; j++) {
		dev->args = grow(dev->args, dev->nargs, sizeof *dev->args);
		dev->args[dev->nargs++] = va_arg(ap, int);
	}
	va_end(ap);
	return &dev->instr[dev->ninstr++];
}

static void set_shape(struct plan *p, int d, int b, struct ir_shape s)
{
	p->devices[d].buf[b].shape = s;
	p->devices[d].buf[b].bytes = 4 * ir_shape_numel(&s);
}

static void set_arg(struct plan *p, int d, int i, int j, int b)
{
	p->devices[d].args[p->devices[d].instr[i].arg + j] = b;
}

static void swap_instr(struct plan *p, int d, int i, int j)
{
	struct plan_instr t = p->devices[d].instr[i];
	p->devices[d].instr[i] = p->devices[d].instr[j];
	p->devices[d].instr[j] = t;
}

static void drop_instr(struct plan *p, int d, int i)
{
	struct plan_device *dev = &p->devices[d];
	memmove(dev->instr + i, dev->instr + i + 1, (size_t)(dev->ninstr - i - 1) * sizeof *dev->instr);
	dev->ninstr--;
}

/* (a) y = x @ w on a 1x2 stage, w split by columns; each device gathers y
 * along axis 1, device 0 is its writer.
 * buffers: 0 x, 1 w half, 2 t, 3 y; instructions: 0 dot, 1 all_gather, 2 free t */
static struct plan *build_gather(void)
{
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 1, 2);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(4, 8));
	add_tensor(&p->params, &p->nparams, "w", SHAPE(8, 16));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(4, 16));
	add_kernel(p, IR_OP_DOT, 2, 1, (struct ir_shape[]){ SHAPE(4, 8), SHAPE(8, 8), SHAPE(4, 8) });
	add_comm(p, 2, (int[]){ 0, 1 });
	for (int d = 0; d < 2; d++) {
		add_buf(p, d, SHAPE(4, 8), PLAN_BIND_INPUT, 0, 0, 0);
		add_buf(p, d, SHAPE(8, 8), PLAN_BIND_PARAM, 0, 0, 8 * d);
		add_buf(p, d, SHAPE(4, 8), PLAN_BIND_NONE, 0, 0, 0);
		int y = add_buf(p, d, SHAPE(4, 16), PLAN_BIND_OUTPUT, 0, 0, 0);
		sl(p, d, y)->writer = d == 0;
		add_instr(p, d, PLAN_KERNEL, 2, 1, 0, 1, 2)->kernel = 0;
		struct plan_instr *g = add_instr(p, d, PLAN_ALL_GATHER, 1, 1, 2, 3);
		g->comm = 0;
		g->axis = 1;
		add_instr(p, d, PLAN_FREE, 1, 0, 2);
	}
	return p;
}

/* (b) two stages of one device: device 0 computes h = x @ w0 and sends it
 * (tag 7), device 1 receives it and computes y = h @ w1.
 * device 0: buffers 0 x, 1 w0, 2 h; instructions 0 dot, 1 send, 2 free h
 * device 1: buffers 0 h, 1 w1, 2 y; instructions 0 recv, 1 dot, 2 free h */
static struct plan *build_pipeline(void)
{
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 1, 1);
	add_stage(p, 1, 1);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(4, 8));
	add_tensor(&p->params, &p->nparams, "w0", SHAPE(8, 8));
	add_tensor(&p->params, &p->nparams, "w1", SHAPE(8, 8));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(4, 8));
	add_kernel(p, IR_OP_DOT, 2, 1, (struct ir_shape[]){ SHAPE(4, 8), SHAPE(8, 8), SHAPE(4, 8) });
	add_buf(p, 0, SHAPE(4, 8), PLAN_BIND_INPUT, 0, 0, 0);
	add_buf(p, 0, SHAPE(8, 8), PLAN_BIND_PARAM, 0, 0, 0);
	add_buf(p, 0, SHAPE(4, 8), PLAN_BIND_NONE, 0, 0, 0);
	add_instr(p, 0, PLAN_KERNEL, 2, 1, 0, 1, 2)->kernel = 0;
	struct plan_instr *s = add_instr(p, 0, PLAN_SEND, 1, 0, 2);
	s->peer = 1;
	s->tag = 7;
	add_instr(p, 0, PLAN_FREE, 1, 0, 2);
	add_buf(p, 1, SHAPE(4, 8), PLAN_BIND_NONE, 0, 0, 0);
	add_buf(p, 1, SHAPE(8, 8), PLAN_BIND_PARAM, 1, 0, 0);
	int y = add_buf(p, 1, SHAPE(4, 8), PLAN_BIND_OUTPUT, 0, 0, 0);
	sl(p, 1, y)->writer = true;
	struct plan_instr *r = add_instr(p, 1, PLAN_RECV, 0, 1, 0);
	r->peer = 0;
	r->tag = 7;
	add_instr(p, 1, PLAN_KERNEL, 2, 1, 0, 1, 2)->kernel = 0;
	add_instr(p, 1, PLAN_FREE, 1, 0, 0);
	return p;
}

/* (c) a 2x2 stage: comms 0 {0,2} and 1 {1,3} run along mesh axis 0, comms
 * 2 {0,1} and 3 {2,3} along axis 1. Each device sums x over axis 0 then
 * axis 1 and copies the result to y through w; device 0 writes y.
 * buffers: 0 x, 1 u, 2 v, 3 w, 4 y; instructions: 0 all_reduce x->u,
 * 1 all_reduce u->v, 2 free u, 3 copy v->w, 4 free v, 5 copy w->y, 6 free w */
static struct plan *build_mesh(void)
{
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 2, 2);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(4, 8));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(4, 8));
	add_comm(p, 2, (int[]){ 0, 2 });
	add_comm(p, 2, (int[]){ 1, 3 });
	add_comm(p, 2, (int[]){ 0, 1 });
	add_comm(p, 2, (int[]){ 2, 3 });
	for (int d = 0; d < 4; d++) {
		add_buf(p, d, SHAPE(4, 8), PLAN_BIND_INPUT, 0, 0, 0);
		for (int b = 1; b <= 3; b++)
			add_buf(p, d, SHAPE(4, 8), PLAN_BIND_NONE, 0, 0, 0);
		int y = add_buf(p, d, SHAPE(4, 8), PLAN_BIND_OUTPUT, 0, 0, 0);
		sl(p, d, y)->writer = d == 0;
		add_instr(p, d, PLAN_ALL_REDUCE, 1, 1, 0, 1)->comm = d % 2;
		add_instr(p, d, PLAN_ALL_REDUCE, 1, 1, 1, 2)->comm = 2 + d / 2;
		add_instr(p, d, PLAN_FREE, 1, 0, 1);
		add_instr(p, d, PLAN_COPY, 1, 1, 2, 3);
		add_instr(p, d, PLAN_FREE, 1, 0, 2);
		add_instr(p, d, PLAN_COPY, 1, 1, 3, 4);
		add_instr(p, d, PLAN_FREE, 1, 0, 3);
	}
	return p;
}

/* Two devices of a 1x2 stage exchange x: each sends its x (tag: its rank)
 * and receives the other's into r, then copies r into its half of y.
 * buffers: 0 x, 1 r, 2 y; instructions: 0 send, 1 recv, 2 copy, 3 free r
 * (recv_first swaps the first two on both devices). */
static struct plan *build_exchange(bool recv_first)
{
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 1, 2);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(4, 8));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(8, 8));
	for (int d = 0; d < 2; d++) {
		add_buf(p, d, SHAPE(4, 8), PLAN_BIND_INPUT, 0, 0, 0);
		add_buf(p, d, SHAPE(4, 8), PLAN_BIND_NONE, 0, 0, 0);
		int y = add_buf(p, d, SHAPE(4, 8), PLAN_BIND_OUTPUT, 0, 4 * d, 0);
		sl(p, d, y)->writer = true;
		struct plan_instr *s = add_instr(p, d, PLAN_SEND, 1, 0, 0);
		s->peer = 1 - d;
		s->tag = d;
		struct plan_instr *r = add_instr(p, d, PLAN_RECV, 0, 1, 1);
		r->peer = 1 - d;
		r->tag = 1 - d;
		add_instr(p, d, PLAN_COPY, 1, 1, 1, 2);
		add_instr(p, d, PLAN_FREE, 1, 0, 1);
		if (recv_first)
			swap_instr(p, d, 0, 1);
	}
	return p;
}

/* ---- checks --------------------------------------------------------------- */

static void expect_ok(struct plan *p, const char *what)
{
	int r = plan_verify(p);
	if (!TAP_OK(r == 0, "%s verifies", what))
		TAP_DIAG("error: %s", ir_error());
	plan_free(p);
}

/* plan_verify fails with -EINVAL and a message holding every string of
 * want (NULL-terminated). */
static void expect_fail(struct plan *p, const char *what, ...)
{
	int r = plan_verify(p);
	bool ok = r == -EINVAL;
	va_list ap;
	va_start(ap, what);
	for (const char *s; (s = va_arg(ap, const char *));)
		if (!strstr(ir_error(), s)) {
			TAP_DIAG("missing: %s", s);
			ok = false;
		}
	va_end(ap);
	if (!TAP_OK(ok, "%s is refused", what))
		TAP_DIAG("got %d: %s", r, ir_error());
	plan_free(p);
}

static void test_valid(void)
{
	expect_ok(build_gather(), "(a) dot + all_gather on 1x2");
	expect_ok(build_pipeline(), "(b) two stages with send/recv");
	expect_ok(build_mesh(), "(c) all_reduce over both axes of 2x2");
	expect_ok(build_exchange(false), "exchange, sends first");

	struct plan *p = build_mesh();
	for (int d = 0; d < 4; d++) /* w lives after u is freed: same bytes */
		p->devices[d].buf[3].offset = p->devices[d].buf[1].offset;
	expect_ok(p, "temporaries sharing bytes at different times");

	p = build_gather();
	for (int d = 0; d < 2; d++) /* in place: t = relu(t) */
		add_kernel(p, IR_OP_RELU, 1, 1, (struct ir_shape[]){ SHAPE(4, 8), SHAPE(4, 8) });
	for (int d = 0; d < 2; d++) {
		struct plan_device *dev = &p->devices[d];
		add_instr(p, d, PLAN_KERNEL, 1, 1, 2, 2)->kernel = 1;
		/* move it between the dot and the gather */
		struct plan_instr t = dev->instr[3];
		memmove(dev->instr + 2, dev->instr + 1, 2 * sizeof t);
		dev->instr[1] = t;
	}
	expect_ok(p, "an in-place kernel");
}

static void test_comm_errors(void)
{
	struct plan *p = build_pipeline();
	drop_instr(p, 0, 1);
	expect_fail(p, "a recv without its send", "device 1, instruction 0 (recv)",
		    "receives from device 0 (tag 7), but device 0 has no matching send", NULL);

	p = build_exchange(false);
	p->devices[1].instr[1].tag = 9;
	expect_fail(p, "a send without its recv", "device 0, instruction 0 (send)",
		    "sends to device 1 (tag 0), but device 1 has no matching recv", NULL);

	p = build_pipeline();
	set_arg(p, 0, 1, 0, 1);
	expect_fail(p, "send and recv of different sizes", "device 0, instruction 1 (send)",
		    "sends f32 [8,8] (256 bytes) to device 1 (tag 7)",
		    "device 1's instruction 0 (recv) receives f32 [4,8] (128 bytes)", NULL);

	p = build_mesh();
	for (int b = 0; b < 5; b++)
		set_shape(p, 3, b, SHAPE(2, 8));
	sl(p, 3, 4)->writer = false;
	expect_fail(p, "an all_reduce of another size on one rank", "device 3, instruction 0 (all_reduce)",
		    "collective 0 on comm 1 is all_reduce sum of f32 [2,8]",
		    "device 1's (instruction 0) is all_reduce sum of f32 [4,8]", NULL);

	p = build_mesh();
	p->devices[2].instr[1].kind = PLAN_COPY;
	expect_fail(p, "a collective missing on one rank",
		    "device 2 never joins collective 0 on comm 3 (device 3's instruction 1)", NULL);

	p = build_mesh();
	p->devices[1].instr[1].reduce = PLAN_MAX;
	expect_fail(p, "a reduction that differs across ranks", "device 1, instruction 1 (all_reduce)",
		    "all_reduce max of f32 [4,8], device 0's (instruction 1) is all_reduce sum", NULL);

	p = build_exchange(true);
	expect_fail(p, "two devices each receiving first",
		    "deadlock: device 0 waits at instruction 0 (recv from 1, tag 1); "
		    "device 1 waits at instruction 0 (recv from 0, tag 0)",
		    NULL);

	/* a cycle: 0 waits for 1 on comm 2, 1 for 3 on comm 1, 3 for 2 on
	 * comm 3, 2 for 0 on comm 0 */
	p = build_mesh();
	for (int d = 0; d < 4; d += 3) {
		swap_instr(p, d, 0, 1);
		set_arg(p, d, 0, 0, 0); /* reduce x on both axes: u is not yet written */
	}
	expect_fail(p, "collectives on two comms in crossed orders",
		    "deadlock: device 0 waits at instruction 0 (all_reduce on comm 2, 1 of 2 ranks arrived); "
		    "device 1 waits at instruction 0 (all_reduce on comm 1, 1 of 2 ranks arrived); "
		    "device 2 waits at instruction 0 (all_reduce on comm 0, 1 of 2 ranks arrived); "
		    "device 3 waits at instruction 0 (all_reduce on comm 3, 1 of 2 ranks arrived)",
		    NULL);

	p = build_gather();
	p->comms[0].ranks[1] = 5;
	expect_fail(p, "a comm with a rank outside the plan", "plan: comm 0: rank 5 is not in the plan (2 devices)",
		    NULL);

	p = build_mesh();
	p->devices[0].instr[0].comm = 1;
	expect_fail(p, "a collective on a comm the device is not in",
		    "device 0, instruction 0 (all_reduce): device 0 is not a member of comm 1", NULL);
}

static void test_local_errors(void)
{
	struct plan *p = build_mesh();
	p->devices[1].buf[2].offset = p->devices[1].buf[1].offset;
	expect_fail(
		p, "two live temporaries sharing bytes",
		"device 1: buffers 1 and 2 overlap (bytes [256, 384) and [256, 384)) while both live at instruction 1",
		NULL);

	p = build_gather();
	p->devices[0].buf[3].offset = 512; /* y onto t: both live at the gather */
	expect_fail(
		p, "an output sharing bytes with a temporary",
		"device 0: buffers 2 and 3 overlap (bytes [512, 640) and [512, 768)) while both live at instruction 0",
		NULL);

	p = build_gather();
	swap_instr(p, 1, 0, 1);
	expect_fail(p, "a buffer read before it is written",
		    "device 1, instruction 0 (all_gather): reads buffer 2 before it is written", NULL);

	p = build_gather();
	swap_instr(p, 0, 1, 2);
	expect_fail(p, "a buffer read after it is freed",
		    "device 0, instruction 2 (all_gather): reads buffer 2 after it is freed (at instruction 1)", NULL);

	p = build_gather();
	add_instr(p, 1, PLAN_FREE, 1, 0, 2);
	expect_fail(p, "a buffer freed twice", "device 1, instruction 3 (free): frees buffer 2 again", NULL);

	p = build_gather();
	drop_instr(p, 1, 1);
	expect_fail(p, "an output never written", "device 1: output buffer 3 is never written", NULL);

	p = build_gather();
	set_shape(p, 1, 1, SHAPE(8, 4));
	expect_fail(
		p, "a kernel operand of the wrong shape",
		"device 1, instruction 0 (kernel): operand 1 (buffer 1) is f32 [8,4], kernel 0 (dot) expects f32 [8,8]",
		NULL);

	p = build_gather();
	p->devices[0].instr[1].axis = 0;
	expect_fail(
		p, "an all_gather along the wrong axis",
		"device 0, instruction 1 (all_gather): input buffer 2 is f32 [4,8] and output buffer 3 is f32 [4,16]",
		NULL);

	p = build_gather();
	p->devices[0].buf[2].offset += 8;
	expect_fail(p, "an unaligned buffer", "device 0, buffer 2: offset 520 is not a multiple of 256", NULL);

	p = build_gather();
	p->devices[0].buf[3].bytes = 100;
	expect_fail(p, "a buffer of the wrong size", "device 0, buffer 3: has 100 bytes, f32 [4,16] needs 256", NULL);

	p = build_gather();
	p->device_memory = 512;
	expect_fail(p, "an arena larger than device memory", "device 0: arena needs 1024 bytes, devices have 512",
		    NULL);

	p = build_gather();
	sl(p, 1, 1)->start[1] = 12;
	expect_fail(p, "a slice outside its parameter",
		    "device 1, buffer 1: slice [12, 20) of dimension 1 lies outside parameter 0 \"w\" f32 [8,16]",
		    NULL);

	p = build_gather();
	sl(p, 0, 3)->writer = false;
	expect_fail(p, "an output no device writes",
		    "plan: output 0 \"y\": the writer slices cover 0 of its 64 elements", NULL);

	p = build_gather();
	sl(p, 1, 3)->writer = true;
	expect_fail(p, "an output written twice",
		    "plan: output 0 \"y\": device 0, buffer 3 and device 1, buffer 3 both write", NULL);

	p = build_pipeline();
	p->devices[1].instr[0].peer = 1;
	expect_fail(p, "a recv from itself", "device 1, instruction 0 (recv): peer 1 is not another device", NULL);

	p = build_pipeline();
	p->stages[1].first_rank = 0;
	expect_fail(p, "stages that do not tile the ranks", "plan: stage 1 starts at rank 0", NULL);

	p = build_gather();
	p->version = 99;
	expect_fail(p, "another format version", "plan: format version 99", NULL);
}

/* ---- random schedules against a naive scheduler ------------------------- */

static uint64_t rng = 88172645463325252ull;

static int below(int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int)(rng % (uint64_t)n);
}

/* Whether the devices run to the end, found by rescanning every device
 * until none moves (plan_verify's scheduler wakes devices instead). A
 * collective is the k-th on its comm for each member; tags are unique. */
static bool naive_runs(const struct plan *p)
{
	int nd = p->ndevices, pc[16] = { 0 };
	for (bool moved = true; moved;) {
		moved = false;
		for (int d = 0; d < nd; d++) {
			const struct plan_device *dev = &p->devices[d];
			if (pc[d] >= dev->ninstr)
				continue;
			const struct plan_instr *in = &dev->instr[pc[d]];
			if (in->kind == PLAN_RECV) {
				const struct plan_device *s = &p->devices[in->peer];
				int at = 0;
				while (s->instr[at].kind != PLAN_SEND || s->instr[at].tag != in->tag)
					at++;
				if (pc[in->peer] > at)
					pc[d]++, moved = true;
				continue;
			}
			if (in->kind != PLAN_ALL_REDUCE) {
				pc[d]++, moved = true;
				continue;
			}
			const struct plan_comm *c = &p->comms[in->comm];
			int k = -1;
			bool all = true;
			for (int j = 0; j < c->n && all; j++) {
				const struct plan_device *m = &p->devices[c->ranks[j]];
				int at = pc[c->ranks[j]], kj = 0;
				all = at < m->ninstr && m->instr[at].kind == PLAN_ALL_REDUCE &&
				      m->instr[at].comm == in->comm;
				for (int i = 0; i < at && all; i++)
					kj += m->instr[i].kind == PLAN_ALL_REDUCE && m->instr[i].comm == in->comm;
				all = all && (k < 0 || kj == k);
				k = kj;
			}
			if (all) {
				for (int j = 0; j < c->n; j++)
					pc[c->ranks[j]]++;
				moved = true;
			}
		}
	}
	for (int d = 0; d < nd; d++)
		if (pc[d] < p->devices[d].ninstr)
			return false;
	return true;
}

/* A 2x4 stage; comms: 4 along mesh axis 0, 2 along axis 1, one of all.
 * A random global sequence of all_reduces and sends gives each device its
 * program (in place on buffer 1), then random adjacent swaps may make the
 * order deadlock. */
static struct plan *build_random(int nevents, int nswaps)
{
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 2, 4);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(8));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(8));
	for (int i1 = 0; i1 < 4; i1++)
		add_comm(p, 2, (int[]){ i1, 4 + i1 });
	for (int i0 = 0; i0 < 2; i0++)
		add_comm(p, 4, (int[]){ 4 * i0, 4 * i0 + 1, 4 * i0 + 2, 4 * i0 + 3 });
	add_comm(p, 8, (int[]){ 0, 1, 2, 3, 4, 5, 6, 7 });
	for (int d = 0; d < 8; d++) {
		add_buf(p, d, SHAPE(8), PLAN_BIND_INPUT, 0, 0, 0);
		add_buf(p, d, SHAPE(8), PLAN_BIND_NONE, 0, 0, 0);
		add_buf(p, d, SHAPE(8), PLAN_BIND_OUTPUT, 0, 0, 0);
		sl(p, d, 2)->writer = d == 0;
		add_instr(p, d, PLAN_COPY, 1, 1, 0, 1);
	}
	for (int e = 0; e < nevents; e++) {
		if (below(2)) {
			int c = below(p->ncomms);
			for (int j = 0; j < p->comms[c].n; j++)
				add_instr(p, p->comms[c].ranks[j], PLAN_ALL_REDUCE, 1, 1, 1, 1)->comm = c;
			continue;
		}
		int a = below(8), b = (a + 1 + below(7)) % 8;
		struct plan_instr *s = add_instr(p, a, PLAN_SEND, 1, 0, 1);
		s->peer = b;
		s->tag = e;
		struct plan_instr *r = add_instr(p, b, PLAN_RECV, 0, 1, 1);
		r->peer = a;
		r->tag = e;
	}
	for (int k = 0; k < nswaps; k++) {
		int d = below(8), n = p->devices[d].ninstr;
		if (n > 2) {
			int i = 1 + below(n - 2);
			swap_instr(p, d, i, i + 1);
		}
	}
	for (int d = 0; d < 8; d++) {
		add_instr(p, d, PLAN_COPY, 1, 1, 1, 2);
		add_instr(p, d, PLAN_FREE, 1, 0, 1);
	}
	return p;
}

static void test_random_schedules(void)
{
	int bad = 0, stuck = 0, runs = 400;
	for (int t = 0; t < runs; t++) {
		struct plan *p = build_random(4 + below(24), below(4));
		bool want = naive_runs(p);
		int r = plan_verify(p);
		bool agree = want ? r == 0 : r == -EINVAL && !strncmp(ir_error(), "deadlock:", 9);
		if (!agree && bad++ < 3)
			TAP_DIAG("schedule %d: naive says %s, plan_verify %d: %s", t, want ? "runs" : "deadlocks", r,
				 r ? ir_error() : "");
		stuck += !want;
		plan_free(p);
	}
	TAP_OK(bad == 0, "%d random schedules (%d deadlocked): plan_verify agrees with a naive scheduler", runs, stuck);
}

/* Every allocation plan_verify makes may fail: -ENOMEM, never a crash. */
static void test_alloc_failures(void)
{
	struct plan *p = build_mesh();
	bool ok = true;
	int r = -ENOMEM;
	for (long n = 0; n < 100 && r == -ENOMEM; n++) {
		ir_alloc_fail_after(n);
		r = plan_verify(p);
		ir_alloc_fail_after(-1);
		ok = ok && (r == 0 || r == -ENOMEM);
	}
	TAP_OK(ok && r == 0, "allocation failures give -ENOMEM, then success");
	plan_free(p);
}

/* A long chain t[k+1] = neg(t[k]) on one device, two slots reused. */
static void test_long_program(void)
{
	enum { N = 100000 };
	struct plan *p = plan_new();
	IR_ASSERT(p);
	add_stage(p, 1, 1);
	add_tensor(&p->inputs, &p->ninputs, "x", SHAPE(64));
	add_tensor(&p->outputs, &p->noutputs, "y", SHAPE(64));
	add_kernel(p, IR_OP_NEG, 1, 1, (struct ir_shape[]){ SHAPE(64), SHAPE(64) });
	add_buf(p, 0, SHAPE(64), PLAN_BIND_INPUT, 0, 0, 0);
	int y = add_buf(p, 0, SHAPE(64), PLAN_BIND_OUTPUT, 0, 0, 0);
	sl(p, 0, y)->writer = true;
	int prev = 0;
	for (int k = 0; k < N; k++) {
		int t = add_buf(p, 0, SHAPE(64), PLAN_BIND_NONE, 0, 0, 0);
		p->devices[0].buf[t].offset = 512 + 256 * (k % 2);
		add_instr(p, 0, PLAN_KERNEL, 1, 1, prev, t)->kernel = 0;
		if (prev)
			add_instr(p, 0, PLAN_FREE, 1, 0, prev);
		prev = t;
	}
	add_instr(p, 0, PLAN_KERNEL, 1, 1, prev, y)->kernel = 0;
	add_instr(p, 0, PLAN_FREE, 1, 0, prev);
	p->devices[0].arena_bytes = 1024;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = plan_verify(p);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!TAP_OK(r == 0, "a program of %d temporaries verifies", N))
		TAP_DIAG("error: %s", ir_error());
	TAP_DIAG("plan_verify: %d buffers, %d instructions in %.1f ms", p->devices[0].nbuf, p->devices[0].ninstr,
		 (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	plan_free(p);
}

int main(void)
{
	test_valid();
	test_comm_errors();
	test_local_errors();
	test_random_schedules();
	test_alloc_failures();
	test_long_program();
	return tap_done();
}
