/*
 * plan_io.c: plan.bin, the plan of plan.h on disk (schema: ir/plan.proto).
 *
 * Layout: the 8 bytes "PCCPLAN\n", then a PlanFile message whose content is
 * the serialized Plan and whose checksum is XXH3_64bits(content). Reading
 * goes outside in, so each way a file can be wrong gets its own message:
 *   1. magic: anything else is "not a pcc plan";
 *   2. the PlanFile framing is walked by hand rather than decoded by
 *      protobuf-c, because a decoder only says "failed": the walk tells a
 *      cut file (a field runs past the end, or content or checksum is
 *      missing) from a newer format (field 1, written first, is read
 *      before anything after it is trusted);
 *   3. the checksum of content;
 *   4. content decoded by protobuf-c (through ir_malloc, so allocation
 *      failures are injected there too) and converted into a struct plan
 *      with structural checks only: names resolve, enums are in range,
 *      arrays hold the counts they claim, ranks fit IR_MAX_RANK, dims are
 *      valid, CONSTANT data has its size. plan_verify checks the meaning.
 * Writing packs to memory; plan_file.c writes "<path>.tmp.<pid>" and renames it over
 * path, so a reader never sees a partial plan.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "ir/plan.h"
#include "ir/plan.pb-c.h"

#define MAGIC "PCCPLAN\n"
#define MAGIC_LEN 8
/* protobuf-c's lengths are 32-bit: keep clear of them, as ONNX does */
#define PLAN_MAX_BYTES ((size_t)INT32_MAX - 64)

/* int buffers of plan.h are written as the schema's int32 arrays in place */
_Static_assert(sizeof(int) == sizeof(int32_t), "int is 32 bits");

/* ---- enums -------------------------------------------------------------------
 * The schema numbers its enums as plan.h does, checked here value by value,
 * so a kind that is added to one and not the other fails to compile;
 * protobuf-c keeps unknown numbers, so reading checks the range. */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(PCC__INSTR_KIND__INSTR_KERNEL, PLAN_KERNEL) &&
	       SAME(PCC__INSTR_KIND__INSTR_ALL_REDUCE, PLAN_ALL_REDUCE) &&
	       SAME(PCC__INSTR_KIND__INSTR_ALL_GATHER, PLAN_ALL_GATHER) &&
	       SAME(PCC__INSTR_KIND__INSTR_REDUCE_SCATTER, PLAN_REDUCE_SCATTER) &&
	       SAME(PCC__INSTR_KIND__INSTR_ALL_TO_ALL, PLAN_ALL_TO_ALL) &&
	       SAME(PCC__INSTR_KIND__INSTR_SEND, PLAN_SEND) &&
	       SAME(PCC__INSTR_KIND__INSTR_RECV, PLAN_RECV) &&
	       SAME(PCC__INSTR_KIND__INSTR_COPY, PLAN_COPY) &&
	       SAME(PCC__INSTR_KIND__INSTR_FREE, PLAN_FREE) &&
	       SAME(PCC__INSTR_KIND__INSTR_FREE + 1, PLAN_INSTR_KIND_COUNT),
	       "schema InstrKind matches enum plan_instr_kind");
_Static_assert(SAME(PCC__REDUCE__REDUCE_SUM, PLAN_SUM) && SAME(PCC__REDUCE__REDUCE_MAX, PLAN_MAX) &&
	       SAME(PCC__REDUCE__REDUCE_MIN, PLAN_MIN) &&
	       SAME(PCC__REDUCE__REDUCE_MIN + 1, PLAN_REDUCE_COUNT),
	       "schema Reduce matches enum plan_reduce");
_Static_assert(SAME(PCC__BIND__BIND_NONE, PLAN_BIND_NONE) && SAME(PCC__BIND__BIND_PARAM, PLAN_BIND_PARAM) &&
	       SAME(PCC__BIND__BIND_INPUT, PLAN_BIND_INPUT) &&
	       SAME(PCC__BIND__BIND_OUTPUT, PLAN_BIND_OUTPUT) &&
	       SAME(PCC__BIND__BIND_STATE, PLAN_BIND_STATE) && SAME(PCC__BIND__BIND_ACCUM, PLAN_BIND_ACCUM) &&
	       SAME(PCC__BIND__BIND_ACCUM + 1, PLAN_BIND_COUNT),
	       "schema Bind matches enum plan_bind");
#undef SAME

/* The ilist attributes, shared by packing and unpacking. */
#define ILIST(f) { #f, offsetof(struct ir_attrs, f), offsetof(Pcc__Attrs, n_##f), offsetof(Pcc__Attrs, f) }
static const struct {
	const char *name;
	size_t ir, pb_n, pb_v;
} ilists[] = {
	ILIST(axes), ILIST(lhs_batch), ILIST(rhs_batch), ILIST(lhs_contract),
	ILIST(rhs_contract), ILIST(start), ILIST(limit), ILIST(stride),
	ILIST(pad_lo), ILIST(pad_hi), ILIST(window), ILIST(dilation),
};
#undef ILIST

/* eps and value travel as their bits (plan.proto says why) */
union bits {
	double d;
	uint64_t u;
};

static size_t constant_bytes(const struct ir_attrs *a)
{
	struct ir_tensor t = { .dtype = a->dtype, .shape = a->shape };
	return ir_tensor_bytes(&t);
}

/* ---- packing ----------------------------------------------------------------
 * The schema's structs point into the plan wherever the types agree (dims,
 * ilists, int arrays, names, CONSTANT data); only the message structs and
 * their pointer arrays are allocated, tracked here and freed after packing. */

struct scratch {
	void **p;
	size_t n, cap;
};

static void *scratch_calloc(struct scratch *s, size_t count, size_t size)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		void **np = ir_realloc(s->p, cap * sizeof *np);
		if (!np)
			return NULL;
		s->p = np;
		s->cap = cap;
	}
	void *q = ir_calloc(count, size);
	if (q)
		s->p[s->n++] = q;
	return q;
}

static void scratch_free(struct scratch *s)
{
	for (size_t i = 0; i < s->n; i++)
		ir_free(s->p[i]);
	ir_free(s->p);
}

/* n message structs ms[] and the array of pointers to them ps[] */
#define NEW_MSGS(s, ms, ps, n)                                                 \
	(((ms) = scratch_calloc((s), (size_t)(n), sizeof *(ms))) != NULL &&     \
	 ((ps) = scratch_calloc((s), (size_t)(n), sizeof *(ps))) != NULL)

/* the base of a message struct, for designated initializers */
#define MSG(name) .base = PROTOBUF_C_MESSAGE_INIT(&pcc__##name##__descriptor)
#define DTYPE(t) ((char *)ir_dtype_name(t))
/* shapes and ilists are passed in place */
#define DIMS(d) ((int64_t *)(d))

static size_t rank_of(const struct ir_shape *s)
{
	IR_ASSERT(s->rank >= 0 && s->rank <= IR_MAX_RANK);
	return (size_t)s->rank;
}

static int pack_tensors(struct scratch *s, const struct plan_tensor *t, int n,
			size_t *n_out, Pcc__Tensor ***out)
{
	Pcc__Tensor *ms, **ps;
	if (!NEW_MSGS(s, ms, ps, n))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		ms[i] = (Pcc__Tensor){ MSG(tensor), .name = (char *)(t[i].name ? t[i].name : ""),
				       .dtype = DTYPE(t[i].dtype), .n_shape = rank_of(&t[i].shape),
				       .shape = DIMS(t[i].shape.dims),
				       .init_bits = (union bits){ .d = t[i].init }.u, .per_step = t[i].per_step };
		ps[i] = &ms[i];
	}
	*n_out = (size_t)n;
	*out = ps;
	return 0;
}

static void pack_attrs(enum ir_op op, const struct ir_attrs *a, Pcc__Attrs *m)
{
	*m = (Pcc__Attrs){ MSG(attrs), .dtype = DTYPE(a->dtype), .n_shape = rank_of(&a->shape),
			   .shape = DIMS(a->shape.dims), .axis = a->axis, .k = a->k,
			   .groups = a->groups, .mode = a->mode,
			   .eps_bits = (union bits){ .d = a->eps }.u,
			   .value_bits = (union bits){ .d = a->value }.u };
	for (size_t i = 0; i < sizeof ilists / sizeof ilists[0]; i++) {
		const struct ir_ilist *l = (const struct ir_ilist *)((const char *)a + ilists[i].ir);
		IR_ASSERT(l->n >= 0 && l->n <= IR_MAX_RANK);
		*(size_t *)((char *)m + ilists[i].pb_n) = (size_t)l->n;
		*(int64_t **)((char *)m + ilists[i].pb_v) = DIMS(l->v);
	}
	if (op == IR_OP_CONSTANT) {
		m->data.len = constant_bytes(a);
		IR_ASSERT(a->data || m->data.len == 0);
		m->data.data = (uint8_t *)a->data;
	}
}

static int pack_kernel(struct scratch *s, const struct plan_kernel *k, Pcc__Kernel *m)
{
	IR_ASSERT((unsigned)k->op < IR_OP_COUNT && k->nin >= 0 && k->nout >= 0);
	int n = k->nin + k->nout;
	Pcc__Attrs *a = scratch_calloc(s, 1, sizeof *a);
	Pcc__Operand *ms, **ps;
	if (!a || !NEW_MSGS(s, ms, ps, n))
		return -ENOMEM;
	pack_attrs(k->op, &k->a, a);
	for (int i = 0; i < n; i++) {
		ms[i] = (Pcc__Operand){ MSG(operand), .dtype = DTYPE(k->dtype[i]),
					.n_shape = rank_of(&k->shape[i]),
					.shape = DIMS(k->shape[i].dims) };
		ps[i] = &ms[i];
	}
	*m = (Pcc__Kernel){ MSG(kernel), .op = (char *)ir_op_name(k->op), .attrs = a,
			    .nin = k->nin, .nout = k->nout, .n_operands = (size_t)n, .operands = ps,
			    .host = k->host, .gpu = k->gpu, .rows = k->rows };
	Pcc__FusedOp *fs, **fp;
	if (!NEW_MSGS(s, fs, fp, k->nbody))
		return -ENOMEM;
	for (int i = 0; i < k->nbody; i++) {
		const struct plan_fop *f = &k->body[i];
		Pcc__Attrs *fa = scratch_calloc(s, 1, sizeof *fa);
		Pcc__Operand *r = scratch_calloc(s, 1, sizeof *r);
		if (!fa || !r)
			return -ENOMEM;
		IR_ASSERT((unsigned)f->op < IR_OP_COUNT && f->nin >= 0 && f->nin <= PLAN_FOP_MAX_IN);
		pack_attrs(f->op, &f->a, fa);
		*r = (Pcc__Operand){ MSG(operand), .dtype = DTYPE(f->dtype), .n_shape = rank_of(&f->shape),
				     .shape = DIMS(f->shape.dims) };
		fs[i] = (Pcc__FusedOp){ MSG(fused_op), .op = (char *)ir_op_name(f->op), .attrs = fa,
					.n_in = (size_t)f->nin, .in = (int32_t *)f->in, .result = r };
		fp[i] = &fs[i];
	}
	m->n_body = (size_t)k->nbody;
	m->body = fp;
	return 0;
}

static int pack_device(struct scratch *s, const struct plan_device *d, Pcc__Device *m)
{
	Pcc__Buffer *bs, **bp;
	Pcc__Instr *is, **ip;
	if (!NEW_MSGS(s, bs, bp, d->nbuf) || !NEW_MSGS(s, is, ip, d->ninstr))
		return -ENOMEM;
	for (int i = 0; i < d->nbuf; i++) {
		const struct plan_buffer *b = &d->buf[i];
		IR_ASSERT((unsigned)b->bind < PLAN_BIND_COUNT);
		/* start means something only per dimension of the buffer */
		bs[i] = (Pcc__Buffer){ MSG(buffer), .dtype = DTYPE(b->dtype),
				       .n_shape = rank_of(&b->shape), .shape = DIMS(b->shape.dims),
				       .offset = b->offset, .bytes = b->bytes,
				       .bind = (Pcc__Bind)b->bind, .index = b->index,
				       .n_start = rank_of(&b->shape), .start = DIMS(b->start),
				       .writer = b->writer, .slots = b->slots };
		bp[i] = &bs[i];
	}
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *in = &d->instr[i];
		IR_ASSERT((unsigned)in->kind < PLAN_INSTR_KIND_COUNT &&
			  (unsigned)in->reduce < PLAN_REDUCE_COUNT);
		is[i] = (Pcc__Instr){ MSG(instr), .kind = (Pcc__InstrKind)in->kind,
				      .kernel = in->kernel, .comm = in->comm,
				      .reduce = (Pcc__Reduce)in->reduce, .axis = in->axis,
				      .axis2 = in->axis2, .peer = in->peer, .tag = in->tag,
				      .nin = in->nin, .nout = in->nout, .arg = in->arg };
		ip[i] = &is[i];
	}
	*m = (Pcc__Device){ MSG(device), .rank = d->rank, .stage = d->stage,
			    .n_coord = IR_MESH_AXES, .coord = (int32_t *)d->coord,
			    .n_buffers = (size_t)d->nbuf, .buffers = bp,
			    .n_instructions = (size_t)d->ninstr, .instructions = ip,
			    .n_args = (size_t)d->nargs, .args = (int32_t *)d->args,
			    .arena_bytes = d->arena_bytes, .nstep = d->nstep, .nfwd = d->nfwd };
	return 0;
}

static int pack_plan(struct scratch *s, const struct plan *p, Pcc__Plan *m)
{
	Pcc__Stage *ss;
	Pcc__Kernel *ks;
	Pcc__Comm *cs;
	Pcc__Device *ds;
	*m = (Pcc__Plan){ MSG(plan), .version = PLAN_FORMAT_VERSION,
			  .cluster = (char *)(p->cluster ? p->cluster : ""),
			  .cluster_nodes = p->cluster_nodes, .cluster_devices = p->cluster_devices,
			  .model_hash = p->model_hash, .options_hash = p->options_hash,
			  .train = p->train, .micro = p->micro, .device_memory = p->device_memory,
			  .train_config = (char *)(p->train_config ? p->train_config : ""),
			  .model = (char *)(p->model ? p->model : ""),
			  .host_object = { p->host_object_len, p->host_object },
			  .host_cpu = (char *)(p->host_cpu ? p->host_cpu : ""),
			  .host_features = (char *)(p->host_features ? p->host_features : ""),
			  .n_stages = (size_t)p->nstages, .n_kernels = (size_t)p->nkernels,
			  .n_comms = (size_t)p->ncomms, .n_devices = (size_t)p->ndevices };
	if (!NEW_MSGS(s, ss, m->stages, p->nstages) || !NEW_MSGS(s, ks, m->kernels, p->nkernels) ||
	    !NEW_MSGS(s, cs, m->comms, p->ncomms) || !NEW_MSGS(s, ds, m->devices, p->ndevices) ||
	    pack_tensors(s, p->params, p->nparams, &m->n_params, &m->params) < 0 ||
	    pack_tensors(s, p->inputs, p->ninputs, &m->n_inputs, &m->inputs) < 0 ||
	    pack_tensors(s, p->outputs, p->noutputs, &m->n_outputs, &m->outputs) < 0 ||
	    pack_tensors(s, p->state, p->nstate, &m->n_state, &m->state) < 0)
		return -ENOMEM;
	for (int i = 0; i < p->nstages; i++) {
		const struct plan_stage *st = &p->stages[i];
		ss[i] = (Pcc__Stage){ MSG(stage), .first_rank = st->first_rank,
				      .ndevices = st->ndevices, .rows = st->rows, .cols = st->cols,
				      .n0 = st->n0, .n1 = st->n1, .n_order = (size_t)st->norder,
				      .order = st->order };
		m->stages[i] = &ss[i];
	}
	for (int i = 0; i < p->nkernels; i++) {
		if (pack_kernel(s, &p->kernels[i], &ks[i]) < 0)
			return -ENOMEM;
		m->kernels[i] = &ks[i];
	}
	Pcc__Ptx *xs;
	if (!NEW_MSGS(s, xs, m->ptx, p->nptx))
		return -ENOMEM;
	m->n_ptx = (size_t)p->nptx;
	for (int i = 0; i < p->nptx; i++) {
		xs[i] = (Pcc__Ptx){ MSG(ptx), .arch = p->ptx[i].arch, .text = p->ptx[i].text };
		m->ptx[i] = &xs[i];
	}
	for (int i = 0; i < p->ncomms; i++) {
		cs[i] = (Pcc__Comm){ MSG(comm), .n_ranks = (size_t)p->comms[i].n,
				     .ranks = (int32_t *)p->comms[i].ranks };
		m->comms[i] = &cs[i];
	}
	for (int i = 0; i < p->ndevices; i++) {
		if (pack_device(s, &p->devices[i], &ds[i]) < 0)
			return -ENOMEM;
		m->devices[i] = &ds[i];
	}
	return 0;
}

int plan_pack(const struct plan *p, uint8_t **out, size_t *n)
{
	struct scratch s = { 0 };
	Pcc__Plan m;
	Pcc__PlanFile f = PCC__PLAN_FILE__INIT;
	uint8_t *content = NULL, *buf = NULL;
	size_t clen = 0;
	int rc = 0;
	IR_ASSERT(p->version == PLAN_FORMAT_VERSION);
	*out = NULL;
	*n = 0;
	if (pack_plan(&s, p, &m) < 0)
		goto nomem;
	clen = pcc__plan__get_packed_size(&m);
	if (clen > PLAN_MAX_BYTES) {
		rc = ir_errorf(-EFBIG, "the plan packs to %zu bytes, more than the 2 GiB a plan file holds", clen);
		goto done;
	}
	if (!(content = ir_malloc(clen)))
		goto nomem;
	pcc__plan__pack(&m, content);
	f.format_version = PLAN_FORMAT_VERSION;
	f.content.len = clen;
	f.content.data = content;
	f.checksum = XXH3_64bits(content, clen);
	*n = MAGIC_LEN + pcc__plan_file__get_packed_size(&f);
	if (!(buf = ir_malloc(*n)))
		goto nomem;
	memcpy(buf, MAGIC, MAGIC_LEN);
	pcc__plan_file__pack(&f, buf + MAGIC_LEN);
	*out = buf;
	goto done;
nomem:
	rc = ir_errorf(-ENOMEM, "out of memory packing the plan");
	*n = 0;
done:
	scratch_free(&s);
	ir_free(content);
	return rc;
}

/* ---- the outer framing ------------------------------------------------------ */

enum scan { SCAN_OK, SCAN_TRUNCATED, SCAN_BAD };

struct outer {
	bool has_version, has_content, has_checksum;
	uint64_t version, checksum;
	const uint8_t *content;
	size_t clen;
};

static enum scan get_varint(const uint8_t *d, size_t n, size_t *at, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*at >= n)
			return SCAN_TRUNCATED;
		uint8_t b = d[(*at)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return SCAN_OK;
	}
	return SCAN_BAD;
}

/* Walks PlanFile's fields (proto wire format). Version 1 has exactly
 * fields 1-3; anything else there is bad framing, except in a file whose
 * field 1, read first, already says it is of another version. */
static enum scan scan_outer(const uint8_t *d, size_t n, struct outer *o)
{
	size_t at = 0;
	while (at < n) {
		uint64_t tag, v;
		enum scan r = get_varint(d, n, &at, &tag);
		if (r != SCAN_OK)
			return r;
		if (tag == (1 << 3 | 0)) {
			if ((r = get_varint(d, n, &at, &o->version)) != SCAN_OK)
				return r;
			o->has_version = true;
		} else if (tag == (2 << 3 | 2)) {
			if ((r = get_varint(d, n, &at, &v)) != SCAN_OK)
				return r;
			if (v > n - at)
				return SCAN_TRUNCATED;
			o->content = d + at;
			o->clen = (size_t)v;
			o->has_content = true;
			at += (size_t)v;
		} else if (tag == (3 << 3 | 1)) {
			if (n - at < 8)
				return SCAN_TRUNCATED;
			o->checksum = 0;
			for (int i = 7; i >= 0; i--)
				o->checksum = o->checksum << 8 | d[at + (size_t)i];
			o->has_checksum = true;
			at += 8;
		} else {
			return SCAN_BAD;
		}
	}
	return SCAN_OK;
}

/* ---- unpacking ------------------------------------------------------------------
 * Each converter fills a zeroed struct and sets a count no earlier than its
 * array, so plan_free can always release what was built. Content is under
 * INT32_MAX bytes and every element takes at least one, so counts fit an
 * int. Messages get their context on the way out: "device 1: buffer 4:
 * unknown dtype "f33"". */

static int nomem(void)
{
	return ir_errorf(-ENOMEM, "out of memory reading the plan");
}

static void *get_array(size_t n, size_t size, int *count)
{
	void *a = ir_calloc(n, size);
	if (a)
		*count = (int)n;
	return a;
}

static int get_dtype(const char *name, enum ir_dtype *out)
{
	if (ir_dtype_parse(name, out) < 0)
		return ir_errorf(-EINVAL, "unknown dtype \"%s\"", name);
	return 0;
}

static int get_shape(const int64_t *dims, size_t n, struct ir_shape *s)
{
	if (n > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "rank %zu exceeds the limit of %d", n, IR_MAX_RANK);
	s->rank = (int)n;
	if (n)
		memcpy(s->dims, dims, n * sizeof *dims);
	return ir_shape_check(s);
}

static int get_ints(const int32_t *v, size_t n, int **out, int *count)
{
	if (!(*out = get_array(n, sizeof **out, count)))
		return nomem();
	if (n)
		memcpy(*out, v, n * sizeof **out);
	return 0;
}

static char *get_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ir_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static int get_tensors(Pcc__Tensor *const *ms, size_t n, const char *what,
		       struct plan_tensor **out, int *count)
{
	int rc;
	if (!(*out = get_array(n, sizeof **out, count)))
		return nomem();
	for (size_t i = 0; i < n; i++) {
		struct plan_tensor *t = &(*out)[i];
		if (!(t->name = get_str(ms[i]->name)))
			return nomem();
		t->init = (union bits){ .u = ms[i]->init_bits }.d;
		t->per_step = ms[i]->per_step;
		if ((rc = get_dtype(ms[i]->dtype, &t->dtype)) < 0 ||
		    (rc = get_shape(ms[i]->shape, ms[i]->n_shape, &t->shape)) < 0) {
			ir_error_prefix("%s %zu (\"%s\")", what, i, t->name);
			return rc;
		}
	}
	return 0;
}

static int get_attrs(const Pcc__Attrs *m, enum ir_op op, struct ir_attrs *a)
{
	int rc;
	if ((rc = get_dtype(m->dtype, &a->dtype)) < 0 ||
	    (rc = get_shape(m->shape, m->n_shape, &a->shape)) < 0)
		return rc;
	for (size_t i = 0; i < sizeof ilists / sizeof ilists[0]; i++) {
		struct ir_ilist *l = (struct ir_ilist *)((char *)a + ilists[i].ir);
		size_t n = *(const size_t *)((const char *)m + ilists[i].pb_n);
		const int64_t *v = *(int64_t *const *)((const char *)m + ilists[i].pb_v);
		if (n > IR_MAX_RANK)
			return ir_errorf(-EINVAL, "attribute %s has %zu entries, more than %d",
					 ilists[i].name, n, IR_MAX_RANK);
		l->n = (int)n;
		if (n)
			memcpy(l->v, v, n * sizeof *v);
	}
	a->axis = m->axis;
	a->k = m->k;
	a->groups = m->groups;
	a->mode = m->mode;
	a->eps = (union bits){ .u = m->eps_bits }.d;
	a->value = (union bits){ .u = m->value_bits }.d;
	size_t want = op == IR_OP_CONSTANT ? constant_bytes(a) : 0;
	if (m->data.len != want) {
		char buf[IR_SHAPE_STR_MAX];
		if (op != IR_OP_CONSTANT)
			return ir_errorf(-EINVAL, "%zu bytes of data on a %s kernel",
					 m->data.len, ir_op_name(op));
		return ir_errorf(-EINVAL, "constant data is %zu bytes, a %s%s constant has %zu",
				 m->data.len, ir_dtype_name(a->dtype),
				 ir_shape_str(&a->shape, buf, sizeof buf), want);
	}
	if (op == IR_OP_CONSTANT) {
		void *data = ir_malloc(want);
		if (!data)
			return nomem();
		if (want)
			memcpy(data, m->data.data, want);
		a->data = data;
	}
	return 0;
}

static int get_kernel(const Pcc__Kernel *m, struct plan_kernel *k)
{
	int rc;
	if (ir_op_parse(m->op, &k->op) < 0)
		return ir_errorf(-EINVAL, "unknown op \"%s\"", m->op);
	if (!m->attrs)
		return ir_errorf(-EINVAL, "no attributes");
	if (m->n_body && m->nout != 1)
		return ir_errorf(-EINVAL, "a fused kernel has %d results, not 1", m->nout);
	if ((rc = get_attrs(m->attrs, k->op, &k->a)) < 0)
		return rc;
	if (m->nin < 0 || m->nout < 0 || m->n_operands != (size_t)m->nin + (size_t)m->nout)
		return ir_errorf(-EINVAL, "%zu operand types for nin %d + nout %d",
				 m->n_operands, m->nin, m->nout);
	k->dtype = ir_calloc(m->n_operands, sizeof *k->dtype);
	k->shape = ir_calloc(m->n_operands, sizeof *k->shape);
	if (!k->dtype || !k->shape)
		return nomem();
	k->nin = m->nin;
	k->nout = m->nout;
	for (size_t i = 0; i < m->n_operands; i++) {
		const Pcc__Operand *o = m->operands[i];
		if ((rc = get_dtype(o->dtype, &k->dtype[i])) < 0 ||
		    (rc = get_shape(o->shape, o->n_shape, &k->shape[i])) < 0) {
			ir_error_prefix("operand %zu", i);
			return rc;
		}
	}
	k->host = m->host;
	k->gpu = m->gpu;
	k->rows = m->rows;
	if (m->n_body > (size_t)INT_MAX / 2)
		return ir_errorf(-EINVAL, "%zu body ops", m->n_body);
	if (!m->n_body)
		return 0;
	if (!(k->body = ir_calloc(m->n_body, sizeof *k->body)))
		return nomem();
	k->nbody = (int)m->n_body;
	for (size_t i = 0; i < m->n_body; i++) {
		const Pcc__FusedOp *f = m->body[i];
		struct plan_fop *o = &k->body[i];
		if (ir_op_parse(f->op, &o->op) < 0)
			return ir_errorf(-EINVAL, "body op %zu: unknown op \"%s\"", i, f->op);
		if (!f->attrs || !f->result)
			return ir_errorf(-EINVAL, "body op %zu: no attributes or result", i);
		if (f->n_in > PLAN_FOP_MAX_IN)
			return ir_errorf(-EINVAL, "body op %zu: %zu operands, more than %d", i, f->n_in,
					 PLAN_FOP_MAX_IN);
		o->nin = (int)f->n_in;
		for (size_t j = 0; j < f->n_in; j++)
			o->in[j] = f->in[j];
		if ((rc = get_attrs(f->attrs, o->op, &o->a)) < 0 ||
		    (rc = get_dtype(f->result->dtype, &o->dtype)) < 0 ||
		    (rc = get_shape(f->result->shape, f->result->n_shape, &o->shape)) < 0) {
			ir_error_prefix("body op %zu", i);
			return rc;
		}
	}
	return 0;
}

static int get_buffer(const Pcc__Buffer *m, struct plan_buffer *b)
{
	int rc;
	if ((rc = get_dtype(m->dtype, &b->dtype)) < 0 ||
	    (rc = get_shape(m->shape, m->n_shape, &b->shape)) < 0)
		return rc;
	if ((unsigned)m->bind >= PLAN_BIND_COUNT)
		return ir_errorf(-EINVAL, "unknown bind %d", (int)m->bind);
	if (m->n_start > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "start has %zu entries, more than %d", m->n_start, IR_MAX_RANK);
	if (m->n_start)
		memcpy(b->start, m->start, m->n_start * sizeof *m->start);
	b->bind = (enum plan_bind)m->bind;
	b->offset = m->offset;
	b->bytes = m->bytes;
	b->index = m->index;
	b->writer = m->writer;
	b->slots = m->slots;
	return 0;
}

static int get_instr(const Pcc__Instr *m, struct plan_instr *in)
{
	if ((unsigned)m->kind >= PLAN_INSTR_KIND_COUNT)
		return ir_errorf(-EINVAL, "unknown instruction kind %d", (int)m->kind);
	if ((unsigned)m->reduce >= PLAN_REDUCE_COUNT)
		return ir_errorf(-EINVAL, "unknown reduction %d", (int)m->reduce);
	*in = (struct plan_instr){
		.kind = (enum plan_instr_kind)m->kind, .kernel = m->kernel, .comm = m->comm,
		.reduce = (enum plan_reduce)m->reduce, .axis = m->axis, .axis2 = m->axis2,
		.peer = m->peer, .tag = m->tag, .nin = m->nin, .nout = m->nout, .arg = m->arg,
	};
	return 0;
}

static int get_device(const Pcc__Device *m, struct plan_device *d)
{
	int rc;
	d->rank = m->rank;
	d->stage = m->stage;
	if (m->n_coord > IR_MESH_AXES)
		return ir_errorf(-EINVAL, "%zu mesh coordinates, more than %d", m->n_coord, IR_MESH_AXES);
	for (size_t i = 0; i < m->n_coord; i++)
		d->coord[i] = m->coord[i];
	d->arena_bytes = m->arena_bytes;
	d->nstep = m->nstep;
	d->nfwd = m->nfwd;
	if ((rc = get_ints(m->args, m->n_args, &d->args, &d->nargs)) < 0)
		return rc;
	if (!(d->buf = get_array(m->n_buffers, sizeof *d->buf, &d->nbuf)) ||
	    !(d->instr = get_array(m->n_instructions, sizeof *d->instr, &d->ninstr)))
		return nomem();
	for (int i = 0; i < d->nbuf; i++)
		if ((rc = get_buffer(m->buffers[i], &d->buf[i])) < 0) {
			ir_error_prefix("buffer %d", i);
			return rc;
		}
	for (int i = 0; i < d->ninstr; i++)
		if ((rc = get_instr(m->instructions[i], &d->instr[i])) < 0) {
			ir_error_prefix("instruction %d", i);
			return rc;
		}
	return 0;
}

static int get_plan(const Pcc__Plan *m, struct plan *p)
{
	int rc;
	if (m->version != PLAN_FORMAT_VERSION)
		return ir_errorf(-EINVAL, "content has format version %u, the file %d",
				 m->version, PLAN_FORMAT_VERSION);
	p->version = PLAN_FORMAT_VERSION;
	p->cluster_nodes = m->cluster_nodes;
	p->cluster_devices = m->cluster_devices;
	p->model_hash = m->model_hash;
	p->options_hash = m->options_hash;
	p->train = m->train;
	p->micro = m->micro;
	p->device_memory = m->device_memory;
	/* calloc leaves every op 0, not CONSTANT: a kernel not reached yet owns no data */
	_Static_assert(IR_OP_CONSTANT != 0, "a zeroed kernel owns no data");
	if (!(p->cluster = get_str(m->cluster)) ||
	    !(p->stages = get_array(m->n_stages, sizeof *p->stages, &p->nstages)) ||
	    !(p->kernels = get_array(m->n_kernels, sizeof *p->kernels, &p->nkernels)) ||
	    !(p->comms = get_array(m->n_comms, sizeof *p->comms, &p->ncomms)) ||
	    !(p->devices = get_array(m->n_devices, sizeof *p->devices, &p->ndevices)))
		return nomem();
	for (int i = 0; i < p->nstages; i++) {
		const Pcc__Stage *s = m->stages[i];
		p->stages[i] = (struct plan_stage){ s->first_rank, s->ndevices, s->rows,
						    s->cols, s->n0, s->n1, 0, NULL };
		if ((rc = get_ints(s->order, s->n_order, &p->stages[i].order, &p->stages[i].norder)) < 0)
			return rc;
	}
	if ((rc = get_tensors(m->params, m->n_params, "param", &p->params, &p->nparams)) < 0 ||
	    (rc = get_tensors(m->inputs, m->n_inputs, "input", &p->inputs, &p->ninputs)) < 0 ||
	    (rc = get_tensors(m->outputs, m->n_outputs, "output", &p->outputs, &p->noutputs)) < 0 ||
	    (rc = get_tensors(m->state, m->n_state, "state", &p->state, &p->nstate)) < 0)
		return rc;
	if (m->model[0] && !(p->model = get_str(m->model)))
		return nomem();
	if (m->train_config[0] && !(p->train_config = get_str(m->train_config)))
		return nomem();
	if (m->host_object.len) {
		if (!(p->host_object = ir_malloc(m->host_object.len)))
			return nomem();
		memcpy(p->host_object, m->host_object.data, m->host_object.len);
		p->host_object_len = m->host_object.len;
	}
	if ((m->host_cpu[0] && !(p->host_cpu = get_str(m->host_cpu))) ||
	    (m->host_features[0] && !(p->host_features = get_str(m->host_features))))
		return nomem();
	if (!(p->ptx = get_array(m->n_ptx, sizeof *p->ptx, &p->nptx)))
		return nomem();
	for (int i = 0; i < p->nptx; i++)
		if (!(p->ptx[i].arch = get_str(m->ptx[i]->arch)) || !(p->ptx[i].text = get_str(m->ptx[i]->text)))
			return nomem();
	for (int i = 0; i < p->nkernels; i++)
		if ((rc = get_kernel(m->kernels[i], &p->kernels[i])) < 0) {
			ir_error_prefix("kernel %d", i);
			return rc;
		}
	for (int i = 0; i < p->ncomms; i++)
		if ((rc = get_ints(m->comms[i]->ranks, m->comms[i]->n_ranks,
				   &p->comms[i].ranks, &p->comms[i].n)) < 0)
			return rc;
	for (int i = 0; i < p->ndevices; i++)
		if ((rc = get_device(m->devices[i], &p->devices[i])) < 0) {
			ir_error_prefix("device %d", i);
			return rc;
		}
	return 0;
}

/* protobuf-c allocates through ir_malloc, and says whether it ran out */
static void *pb_alloc(void *failed, size_t n)
{
	void *q = ir_malloc(n);
	if (!q)
		*(bool *)failed = true;
	return q;
}

static void pb_free(void *failed, void *q)
{
	ir_free(q);
}

struct plan *plan_unpack(const uint8_t *data, size_t n)
{
	struct outer o = { 0 };
	bool failed = false;
	ProtobufCAllocator al = { .alloc = pb_alloc, .free = pb_free, .allocator_data = &failed };
	if (n < MAGIC_LEN || memcmp(data, MAGIC, MAGIC_LEN) != 0) {
		/* a prefix of the magic is a plan cut short, anything else is not one */
		if (n < MAGIC_LEN && (n == 0 || memcmp(data, MAGIC, n) == 0))
			ir_errorf(-EINVAL, "truncated (%zu bytes)", n);
		else
			ir_errorf(-EINVAL, "not a pcc plan (bad magic)");
		return NULL;
	}
	enum scan r = scan_outer(data + MAGIC_LEN, n - MAGIC_LEN, &o);
	/* the version is the first field: trust it before the rest */
	if (o.has_version && o.version != PLAN_FORMAT_VERSION) {
		ir_errorf(-EINVAL, "plan format version %llu, this build reads version %d",
			  (unsigned long long)o.version, PLAN_FORMAT_VERSION);
		return NULL;
	}
	if (r == SCAN_BAD || (r == SCAN_OK && o.has_content && o.has_checksum && !o.has_version)) {
		ir_errorf(-EINVAL, "malformed plan: bad file framing");
		return NULL;
	}
	if (r == SCAN_TRUNCATED || !o.has_content || !o.has_checksum) {
		ir_errorf(-EINVAL, "truncated (%zu bytes)", n);
		return NULL;
	}
	if (o.clen > PLAN_MAX_BYTES) {
		ir_errorf(-EINVAL, "malformed plan: %zu bytes of content, more than a plan holds", o.clen);
		return NULL;
	}
	if (XXH3_64bits(o.content, o.clen) != o.checksum) {
		ir_errorf(-EINVAL, "checksum mismatch (file is corrupt)");
		return NULL;
	}
	Pcc__Plan *m = pcc__plan__unpack(&al, o.clen, o.content);
	if (!m) {
		if (failed)
			nomem();
		else
			ir_errorf(-EINVAL, "malformed plan: the content does not decode");
		return NULL;
	}
	struct plan *p = ir_calloc(1, sizeof *p);
	int rc = p ? get_plan(m, p) : nomem();
	pcc__plan__free_unpacked(m, &al);
	if (rc < 0) {
		if (rc == -EINVAL)
			ir_error_prefix("malformed plan");
		plan_free(p);
		return NULL;
	}
	return p;
}
