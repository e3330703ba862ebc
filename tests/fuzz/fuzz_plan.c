/*
 * fuzz_plan.c: libFuzzer target for plan.bin (ir/plan_io.c, plan_unpack.c), the verifier
 * (ir/plan_verify*.c) and `pcc inspect`'s printer (compiler/plan_print.c).
 *
 * An input is a plan file. Its checksum is recomputed before reading
 * (where the framing has a content and a checksum field), so a mutation
 * inside the content reaches the decoder instead of failing the checksum;
 * an input whose checksum field is 8 bytes of 0xee keeps it as written, so
 * the checksum test is fuzzed too. A plan that reads must pack again and
 * read back to the same bytes; a plan that verifies must hold what the
 * runtime indexes by (its schedules), print (summary and every device)
 * and, when small, run one step on the rank simulator of the tests.
 * NULL or -EINVAL with one line is a clean refusal.
 */
#include <xxhash.h>

#include "compiler/compiler.h"
#include "ir/plan.h"
#include "tests/fuzz/fuzz.h"
#include "tests/plan_sim.h"

#define MAGIC "PCCPLAN\n"
#define MAGIC_LEN 8
#define PRINT_MAX_DEVICES 64
/* Verified plans are run (tests/plan_sim.c) only when this small: bytes of
 * arenas and global tensors, instructions of all devices (and tensors fed
 * or taken in a step). */
#define SIM_MAX_BYTES (16 << 20)
#define SIM_MAX_INSTR 20000

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

static bool varint(const uint8_t *d, size_t n, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *at < n; shift += 7) {
		uint8_t b = d[(*at)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* Walks the PlanFile fields after the magic (1: version, 2: content, 3:
 * checksum) and writes XXH3(content) over the checksum. */
static void fix_checksum(uint8_t *d, size_t n)
{
	static const uint8_t keep[8] = { 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee };
	size_t at = MAGIC_LEN, content = 0, clen = 0, sum = 0;
	bool have_content = false, have_sum = false;
	uint64_t tag, v;
	while (at < n && varint(d, n, &at, &tag)) {
		if (tag == (1 << 3 | 0)) {
			if (!varint(d, n, &at, &v))
				return;
		} else if (tag == (2 << 3 | 2)) {
			if (!varint(d, n, &at, &v) || v > n - at)
				return;
			content = at;
			clen = (size_t)v;
			have_content = true;
			at += clen;
		} else if (tag == (3 << 3 | 1)) {
			if (n - at < 8)
				return;
			sum = at;
			have_sum = true;
			at += 8;
		} else {
			return;
		}
	}
	if (!have_content || !have_sum || !memcmp(d + sum, keep, sizeof keep))
		return;
	uint64_t h = XXH3_64bits(d + content, clen);
	for (int i = 0; i < 8; i++)
		d[sum + (size_t)i] = (uint8_t)(h >> (8 * i));
}

/* What the runtime indexes by in a verified plan (runtime/step.c, data.c):
 * micro-batches per step within the verifier's bound (it allocates per
 * micro-batch), and each stage's schedule running every micro-batch's
 * forward and backward part exactly once, each below micro. */
static void check_schedules(const struct plan *p)
{
	if (p->micro < 1 || p->micro > 1 << 16)
		FUZZ_FAIL("a verified plan has %d micro-batches per step", p->micro);
	int *seen = calloc((size_t)p->micro, sizeof *seen);
	if (!seen)
		abort();
	for (int s = 0; s < p->nstages; s++) {
		const struct plan_stage *st = &p->stages[s];
		if (!st->norder)
			continue;
		memset(seen, 0, (size_t)p->micro * sizeof *seen);
		for (int k = 0; k < st->norder; k++) {
			int e = st->order[k], m = e >= 0 ? e : -(e + 1), bit = e >= 0 ? 1 : 2;
			if (m >= p->micro || (seen[m] & bit) || (bit == 2 && !(seen[m] & 1)))
				FUZZ_FAIL("stage %d's verified schedule runs entry %d (%d) of %d micro-batches", s, k,
					  e, p->micro);
			seen[m] |= bit;
		}
	}
	free(seen);
}

static double tensors_bytes(const struct plan_tensor *t, int n)
{
	double b = 0;
	for (int i = 0; i < n; i++)
		b += (double)ir_shape_numel(&t[i].shape) * (double)ir_dtype_size(t[i].dtype);
	return b;
}

/* Zeroed global tensors for t[0..n) (simulate checked their size). */
static struct ir_tensor *zeros(const struct plan_tensor *t, int n)
{
	struct ir_tensor *x = calloc((size_t)n + 1, sizeof *x);
	for (int i = 0; x && i < n; i++)
		if (ir_tensor_alloc(&x[i], t[i].dtype, &t[i].shape) < 0)
			abort();
	return x;
}

static void free_tensors(struct ir_tensor *x, int n)
{
	for (int i = 0; x && i < n; i++)
		ir_tensor_free(&x[i]);
	free(x);
}

/* One step of a small verified plan on every rank at once, as pcc-run's
 * reference kernels run it: whatever it computes, nothing it does may
 * crash (errors from the kernels, a bad index, are fine). */
static void simulate(const struct plan *p)
{
	double bytes = tensors_bytes(p->params, p->nparams) +
		       p->micro * (tensors_bytes(p->inputs, p->ninputs) + tensors_bytes(p->outputs, p->noutputs));
	int64_t instr = 0;
	for (int d = 0; d < p->ndevices; d++) {
		bytes += (double)p->devices[d].arena_bytes;
		instr += p->devices[d].ninstr;
	}
	if (bytes > SIM_MAX_BYTES || instr > SIM_MAX_INSTR ||
	    (double)p->micro * (p->ninputs + p->noutputs) > SIM_MAX_INSTR)
		return;
	struct ir_tensor *params = zeros(p->params, p->nparams), *inputs = NULL, *outputs;
	int nin = p->micro * p->ninputs, nout = p->micro * p->noutputs;
	inputs = calloc((size_t)nin + 1, sizeof *inputs);
	outputs = calloc((size_t)nout + 1, sizeof *outputs);
	if (!params || !inputs || !outputs)
		abort();
	for (int m = 0; m < p->micro; m++)
		for (int i = 0; i < p->ninputs; i++)
			if (ir_tensor_alloc(&inputs[m * p->ninputs + i], p->inputs[i].dtype, &p->inputs[i].shape) < 0)
				abort();
	struct plan_sim *s = plan_sim_new(p, params);
	if (s)
		plan_sim_step(s, inputs, outputs);
	plan_sim_free(s);
	free_tensors(params, p->nparams);
	free_tensors(inputs, nin);
	free_tensors(outputs, nout);
}

/* pack(p) reads back, and packs to the same bytes again. */
static void round_trip(const struct plan *p)
{
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	if (plan_pack(p, &a, &na) < 0)
		FUZZ_FAIL("a plan that read does not pack: %s", ir_error());
	struct plan *q = plan_unpack(a, na);
	if (!q)
		FUZZ_FAIL("a packed plan does not read back: %s", ir_error());
	if (plan_pack(q, &b, &nb) < 0)
		FUZZ_FAIL("a plan read back does not pack: %s", ir_error());
	if (na != nb || memcmp(a, b, na))
		FUZZ_FAIL("pack(unpack(pack(p))) differs from pack(p) (%zu and %zu bytes)", na, nb);
	plan_free(q);
	ir_free(a);
	ir_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *d = malloc(size + 1);
	if (!d)
		abort();
	memcpy(d, data, size);
	if (size >= MAGIC_LEN && !memcmp(d, MAGIC, MAGIC_LEN))
		fix_checksum(d, size);
	struct plan *p = plan_unpack(d, size);
	free(d);
	if (!p) {
		fuzz_check_message("plan_unpack", ir_error());
		return 0;
	}
	round_trip(p);
	if (plan_verify(p) < 0) {
		fuzz_check_message("plan_verify", ir_error());
	} else {
		check_schedules(p);
		simulate(p);
		if (plan_print_summary(p, devnull) < 0)
			FUZZ_FAIL("a verified plan does not print: %s", ir_error());
		for (int i = 0; i < p->ndevices && i < PRINT_MAX_DEVICES; i++)
			if (plan_print_device(p, i, devnull) < 0)
				FUZZ_FAIL("device %d of a verified plan does not print: %s", i, ir_error());
	}
	plan_free(p);
	return 0;
}
