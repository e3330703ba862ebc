/*
 * sched_build.c: pipeline schedules as explicit per-device op orders
 * (GPipe, 1F1B, Megatron's interleaved 1F1B) and their text form.
 *
 * Every schedule here is one pattern with a different warm-up count W on
 * device d: number the device's forwards and backwards j = 0 .. T-1 (T =
 * m v), run forwards 0 .. W-1, then T - W rounds of "forward W+j, backward
 * j", then the remaining W backwards. What differs is W and which
 * (micro-batch, chunk) the j-th forward or backward is:
 *   gpipe        W = T; forward j is micro-batch j, backward j is m-1-j
 *                (reverse order, as autograd runs GPipe's backward: the
 *                last stage starts on the micro-batch it just finished).
 *   1f1b         W = min(p-d-1, m); forward and backward j: micro-batch j.
 *   interleaved  W = min(2 (p-d-1) + (v-1) p, T). Forwards go in groups of
 *                p micro-batches through the chunks in order: j = g p v +
 *                c p + r is micro-batch g p + r of chunk c; backwards the
 *                same with chunk v-1-c (Narayanan et al. 2021, sec. 2.2;
 *                Megatron-LM's interleaved schedule). Megatron runs all
 *                forwards first when m == p; the capped W above is a valid
 *                order too with non-blocking sends, so it is kept.
 * Around each compute op the transfers are placed where they are needed:
 * the receive of its input right before it, the send of its output right
 * after. With p = 1 all virtual stages share one device: no transfers.
 *
 * Example, 1f1b p = 2, m = 2:
 *   device 0: F0 Sa0>1 F1 Sa1>1 Rg0<1 B0 Rg1<1 B1
 *   device 1: Ra0<0 F0 B0 Sg0>0 Ra1<0 F1 B1 Sg1>0
 */
#include <errno.h>
#include <string.h>

#include "compiler/search/search.h"

/* Ops beyond this (p m v) are refused as absurd input rather than risking
 * int overflow: 6 ops per (micro-batch, virtual stage) at most. */
#define MAX_UNITS (1L << 24)

/* Where the j-th forward or backward of device d goes. */
static void nth(const struct sched *s, bool fwd, int j, int *mb, int *chunk)
{
	switch (s->kind) {
	case COST_SCHED_GPIPE:
		*mb = fwd ? j : s->m - 1 - j;
		*chunk = 0;
		return;
	case COST_SCHED_1F1B:
		*mb = j;
		*chunk = 0;
		return;
	case COST_SCHED_INTERLEAVED: {
		int group = j / (s->p * s->v), r = j % (s->p * s->v);
		*mb = group * s->p + r % s->p;
		*chunk = fwd ? r / s->p : s->v - 1 - r / s->p;
		return;
	}
	case COST_SCHED_COUNT:
		break;
	}
	IR_ASSERT(!"schedule out of range");
}

static int warmup(const struct sched *s, int d)
{
	int total = s->m * s->v, w = total;
	switch (s->kind) {
	case COST_SCHED_GPIPE:
		break;
	case COST_SCHED_1F1B:
		w = s->p - d - 1;
		break;
	case COST_SCHED_INTERLEAVED:
		w = 2 * (s->p - d - 1) + (s->v - 1) * s->p;
		break;
	case COST_SCHED_COUNT:
		IR_ASSERT(!"schedule out of range");
	}
	return w < total ? w : total;
}

/* Appends one op; with ops NULL only counts. */
static void push(struct sched_op *ops, int *n, enum sched_kind kind, int mb, int chunk, int peer)
{
	if (ops)
		ops[*n] = (struct sched_op){ .kind = kind, .mb = mb, .chunk = chunk, .peer = peer };
	(*n)++;
}

/* The j-th forward (fwd) or backward of device d with its transfers. */
static void emit(const struct sched *s, int d, bool fwd, int j, struct sched_op *ops, int *n)
{
	int mb, chunk;
	nth(s, fwd, j, &mb, &chunk);
	int k = chunk * s->p + d, last = s->p * s->v - 1;
	int prev = (k + s->p - 1) % s->p, next = (k + 1) % s->p; /* devices of k-1, k+1 */
	bool has_prev = k > 0 && prev != d, has_next = k < last && next != d;
	if (fwd) {
		if (has_prev)
			push(ops, n, SCHED_RECV_ACT, mb, chunk, prev);
		push(ops, n, SCHED_FWD, mb, chunk, 0);
		if (has_next)
			push(ops, n, SCHED_SEND_ACT, mb, chunk, next);
	} else {
		if (has_next)
			push(ops, n, SCHED_RECV_GRAD, mb, chunk, next);
		push(ops, n, SCHED_BWD, mb, chunk, 0);
		if (has_prev)
			push(ops, n, SCHED_SEND_GRAD, mb, chunk, prev);
	}
}

/* Device d's whole order; returns the op count. */
static int order(const struct sched *s, int d, struct sched_op *ops)
{
	int n = 0, total = s->m * s->v, w = warmup(s, d);
	for (int j = 0; j < w; j++)
		emit(s, d, true, j, ops, &n);
	for (int j = 0; j < total - w; j++) {
		emit(s, d, true, w + j, ops, &n);
		emit(s, d, false, j, ops, &n);
	}
	for (int j = total - w; j < total; j++)
		emit(s, d, false, j, ops, &n);
	return n;
}

static int check_args(enum cost_sched kind, int p, int m, int v)
{
	IR_ASSERT(kind >= 0 && kind < COST_SCHED_COUNT);
	const char *name = cost_sched_name(kind);
	if (p < 1)
		return ir_errorf(-EINVAL, "%s schedule: %d pipeline stages; need at least 1", name, p);
	if (m < 1)
		return ir_errorf(-EINVAL, "%s schedule: %d micro-batches; need at least 1", name, m);
	if (kind != COST_SCHED_INTERLEAVED && v != 1)
		return ir_errorf(-EINVAL,
				 "%s schedule: one model chunk per device, not %d (more chunks need interleaved)", name,
				 v);
	if (kind == COST_SCHED_INTERLEAVED && v < 2)
		return ir_errorf(-EINVAL,
				 "interleaved schedule: %d model chunks per device; need at least 2 (1 is 1f1b)", v);
	if ((long)p * m * v > MAX_UNITS)
		return ir_errorf(-EINVAL, "%s schedule: %d stages x %d micro-batches x %d chunks is too large", name, p,
				 m, v);
	if (kind == COST_SCHED_INTERLEAVED && m % p != 0) {
		int lo = m / p * p, hi = lo + p;
		if (lo == 0)
			return ir_errorf(-EINVAL,
					 "interleaved schedule: %d micro-batches is not a multiple of the %d "
					 "pipeline stages; nearest valid: %d",
					 m, p, hi);
		return ir_errorf(-EINVAL,
				 "interleaved schedule: %d micro-batches is not a multiple of the %d "
				 "pipeline stages; nearest valid: %d or %d",
				 m, p, lo, hi);
	}
	return 0;
}

int sched_build(enum cost_sched kind, int p, int m, int v, struct sched *s)
{
	memset(s, 0, sizeof *s);
	int err = check_args(kind, p, m, v);
	if (err)
		return err;
	s->kind = kind;
	s->p = p;
	s->m = m;
	s->v = v;
	s->nops = ir_calloc((size_t)p, sizeof *s->nops);
	s->ops = ir_calloc((size_t)p, sizeof *s->ops);
	if (!s->nops || !s->ops)
		goto oom;
	for (int d = 0; d < p; d++) {
		int n = order(s, d, NULL);
		s->ops[d] = ir_malloc((size_t)n * sizeof *s->ops[d]);
		if (!s->ops[d])
			goto oom;
		s->nops[d] = order(s, d, s->ops[d]);
	}
	return 0;
oom:
	sched_free(s);
	return ir_errorf(-ENOMEM, "%s schedule: out of memory for %d stages", cost_sched_name(kind), p);
}

void sched_free(struct sched *s)
{
	if (s->ops)
		for (int d = 0; d < s->p; d++)
			ir_free(s->ops[d]);
	ir_free(s->ops);
	ir_free(s->nops);
	memset(s, 0, sizeof *s);
}

const char *sched_op_str(const struct sched_op *op, char *buf, size_t n)
{
	const char *name = "?", *dir = "";
	switch (op->kind) {
	case SCHED_FWD:
		name = "F";
		break;
	case SCHED_BWD:
		name = "B";
		break;
	case SCHED_SEND_ACT:
		name = "Sa";
		dir = ">";
		break;
	case SCHED_RECV_ACT:
		name = "Ra";
		dir = "<";
		break;
	case SCHED_SEND_GRAD:
		name = "Sg";
		dir = ">";
		break;
	case SCHED_RECV_GRAD:
		name = "Rg";
		dir = "<";
		break;
	case SCHED_KIND_COUNT:
		break;
	}
	char chunk[16] = "", peer[16] = "";
	if (op->chunk != 0)
		snprintf(chunk, sizeof chunk, ".%d", op->chunk);
	if (*dir)
		snprintf(peer, sizeof peer, "%s%d", dir, op->peer);
	snprintf(buf, n, "%s%d%s%s", name, op->mb, chunk, peer);
	return buf;
}

int sched_print(const struct sched *s, int device, FILE *f)
{
	if (device < 0 || device >= s->p)
		return ir_errorf(-EINVAL, "schedule has devices 0..%d, not %d", s->p - 1, device);
	for (int i = 0; i < s->nops[device]; i++) {
		char buf[64];
		fprintf(f, "%s%s", i ? " " : "", sched_op_str(&s->ops[device][i], buf, sizeof buf));
	}
	fputc('\n', f);
	if (ferror(f))
		return ir_errorf(-EIO, "writing the schedule of device %d failed", device);
	return 0;
}
