/*
 * plan_io.c: plan.bin, the plan of plan.h on disk (schema: ir/plan.proto):
 * packing. Reading is plan_unpack.c, the file around both plan_file.c.
 *
 * Layout: the 8 bytes "PCCPLAN\n", then a PlanFile message whose content is
 * the serialized Plan and whose checksum is XXH3_64bits(content). The
 * schema's enums are numbered as plan.h's, checked here at compile time.
 * Writing packs to memory; plan_file.c writes "<path>.tmp.<pid>" and renames
 * it over path, so a reader never sees a partial plan.
 */
#include <errno.h>
#include <string.h>
#include <xxhash.h>

#include "ir/plan_io.h"

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
		       SAME(PCC__INSTR_KIND__INSTR_SEND, PLAN_SEND) && SAME(PCC__INSTR_KIND__INSTR_RECV, PLAN_RECV) &&
		       SAME(PCC__INSTR_KIND__INSTR_COPY, PLAN_COPY) && SAME(PCC__INSTR_KIND__INSTR_FREE, PLAN_FREE) &&
		       SAME(PCC__INSTR_KIND__INSTR_FREE + 1, PLAN_INSTR_KIND_COUNT),
	       "schema InstrKind matches enum plan_instr_kind");
_Static_assert(SAME(PCC__REDUCE__REDUCE_SUM, PLAN_SUM) && SAME(PCC__REDUCE__REDUCE_MAX, PLAN_MAX) &&
		       SAME(PCC__REDUCE__REDUCE_MIN, PLAN_MIN) && SAME(PCC__REDUCE__REDUCE_MIN + 1, PLAN_REDUCE_COUNT),
	       "schema Reduce matches enum plan_reduce");
_Static_assert(SAME(PCC__BIND__BIND_NONE, PLAN_BIND_NONE) && SAME(PCC__BIND__BIND_PARAM, PLAN_BIND_PARAM) &&
		       SAME(PCC__BIND__BIND_INPUT, PLAN_BIND_INPUT) && SAME(PCC__BIND__BIND_OUTPUT, PLAN_BIND_OUTPUT) &&
		       SAME(PCC__BIND__BIND_STATE, PLAN_BIND_STATE) && SAME(PCC__BIND__BIND_ACCUM, PLAN_BIND_ACCUM) &&
		       SAME(PCC__BIND__BIND_ACCUM + 1, PLAN_BIND_COUNT),
	       "schema Bind matches enum plan_bind");
#undef SAME

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
	*s = (struct scratch){ 0 };
}

/* n message structs ms[] and the array of pointers to them ps[] */
#define NEW_MSGS(s, ms, ps, n)                                              \
	(((ms) = scratch_calloc((s), (size_t)(n), sizeof *(ms))) != NULL && \
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

static int pack_tensors(struct scratch *s, const struct plan_tensor *t, int n, size_t *n_out, Pcc__Tensor ***out)
{
	Pcc__Tensor *ms, **ps;
	if (!NEW_MSGS(s, ms, ps, n))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		ms[i] = (Pcc__Tensor){ MSG(tensor),
				       .name = (char *)(t[i].name ? t[i].name : ""),
				       .dtype = DTYPE(t[i].dtype),
				       .n_shape = rank_of(&t[i].shape),
				       .shape = DIMS(t[i].shape.dims),
				       .init_bits = (union bits){ .d = t[i].init }.u,
				       .per_step = t[i].per_step };
		ps[i] = &ms[i];
	}
	*n_out = (size_t)n;
	*out = ps;
	return 0;
}

static void pack_attrs(enum ir_op op, const struct ir_attrs *a, Pcc__Attrs *m)
{
	*m = (Pcc__Attrs){ MSG(attrs),
			   .dtype = DTYPE(a->dtype),
			   .n_shape = rank_of(&a->shape),
			   .shape = DIMS(a->shape.dims),
			   .axis = a->axis,
			   .k = a->k,
			   .groups = a->groups,
			   .mode = a->mode,
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
		ms[i] = (Pcc__Operand){ MSG(operand), .dtype = DTYPE(k->dtype[i]), .n_shape = rank_of(&k->shape[i]),
					.shape = DIMS(k->shape[i].dims) };
		ps[i] = &ms[i];
	}
	*m = (Pcc__Kernel){ MSG(kernel),     .op = (char *)ir_op_name(k->op),
			    .attrs = a,      .nin = k->nin,
			    .nout = k->nout, .n_operands = (size_t)n,
			    .operands = ps,  .host = k->host,
			    .gpu = k->gpu,   .rows = k->rows };
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
		fs[i] = (Pcc__FusedOp){ MSG(fused_op),          .op = (char *)ir_op_name(f->op), .attrs = fa,
					.n_in = (size_t)f->nin, .in = (int32_t *)f->in,          .result = r };
		fp[i] = &fs[i];
	}
	m->n_body = (size_t)k->nbody;
	m->body = fp;
	return 0;
}

/* ---- a device as another's with changes ----------------------------------------
 * The devices of a stage run one program whose buffers differ only in where
 * their slices start and which copy is the writer, and whose instructions
 * differ only in the kernel (a slice at the device's offset), communicator,
 * peer and tag and, in a transfer's block, its arguments. Such a device is written as an earlier one's program with
 * those fields listed where they differ (Device.copy_of, plan.proto): GPT-3 175B's 1024 programs take the room of about
 * ten. */

/* everything but kernel, comm, peer, tag and arg (a transfer's block: each
 * device's own part of the args) */
static bool instr_alike(const struct plan_instr *a, const struct plan_instr *b)
{
	return a->kind == b->kind && a->reduce == b->reduce && a->axis == b->axis && a->axis2 == b->axis2 &&
	       a->nin == b->nin && a->nout == b->nout;
}

static bool program_alike(const struct plan_device *a, const struct plan_device *b)
{
	if (a->nbuf != b->nbuf || a->ninstr != b->ninstr || a->nargs != b->nargs ||
	    (a->nargs && memcmp(a->args, b->args, sizeof *a->args * (size_t)a->nargs)))
		return false;
	for (int i = 0; i < a->ninstr; i++)
		if (!instr_alike(&a->instr[i], &b->instr[i]))
			return false;
	for (int i = 0; i < a->nbuf; i++)
		if (!plan_buffer_equal(&a->buf[i], &b->buf[i]))
			return false;
	return true;
}

static bool instr_same(const struct plan_instr *a, const struct plan_instr *b)
{
	return a->kernel == b->kernel && a->comm == b->comm && a->peer == b->peer && a->tag == b->tag &&
	       a->arg == b->arg;
}

static bool slice_same(const struct plan_slice *a, const struct plan_slice *b, size_t rank)
{
	return a->writer == b->writer && !memcmp(a->start, b->start, sizeof *a->start * rank);
}

/* m's program as base's (alike) with d's changes */
static int pack_changes(struct scratch *s, const struct plan_device *base, const struct plan_device *d, Pcc__Device *m)
{
	size_t ni = 0, nb = 0, ns = 0;
	for (int i = 0; i < d->ninstr; i++)
		ni += !instr_same(&d->instr[i], &base->instr[i]);
	for (int i = 0; i < d->nbuf; i++)
		if (!slice_same(plan_slice_of(d, i), plan_slice_of(base, i), rank_of(&d->buf[i].shape))) {
			nb++;
			ns += rank_of(&d->buf[i].shape);
		}
	m->copy_of = base->rank + 1;
	m->n_instr_at = m->n_instr_kernel = m->n_instr_comm = m->n_instr_peer = m->n_instr_tag = m->n_instr_arg = ni;
	m->n_buffer_at = m->n_buffer_writer = nb;
	m->n_buffer_start = ns;
	if (!(m->instr_at = scratch_calloc(s, ni + 1, sizeof *m->instr_at)) ||
	    !(m->instr_kernel = scratch_calloc(s, ni + 1, sizeof *m->instr_kernel)) ||
	    !(m->instr_comm = scratch_calloc(s, ni + 1, sizeof *m->instr_comm)) ||
	    !(m->instr_peer = scratch_calloc(s, ni + 1, sizeof *m->instr_peer)) ||
	    !(m->instr_tag = scratch_calloc(s, ni + 1, sizeof *m->instr_tag)) ||
	    !(m->instr_arg = scratch_calloc(s, ni + 1, sizeof *m->instr_arg)) ||
	    !(m->buffer_at = scratch_calloc(s, nb + 1, sizeof *m->buffer_at)) ||
	    !(m->buffer_writer = scratch_calloc(s, nb + 1, sizeof *m->buffer_writer)) ||
	    !(m->buffer_start = scratch_calloc(s, ns + 1, sizeof *m->buffer_start)))
		return -ENOMEM;
	ni = nb = ns = 0;
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *in = &d->instr[i];
		if (instr_same(in, &base->instr[i]))
			continue;
		m->instr_at[ni] = i;
		m->instr_kernel[ni] = in->kernel;
		m->instr_comm[ni] = in->comm;
		m->instr_peer[ni] = in->peer;
		m->instr_tag[ni] = in->tag;
		m->instr_arg[ni++] = in->arg;
	}
	for (int i = 0; i < d->nbuf; i++) {
		const struct plan_slice *x = plan_slice_of(d, i);
		size_t rank = rank_of(&d->buf[i].shape);
		if (slice_same(x, plan_slice_of(base, i), rank))
			continue;
		m->buffer_at[nb] = i;
		m->buffer_writer[nb++] = x->writer;
		memcpy(m->buffer_start + ns, x->start, sizeof *x->start * rank);
		ns += rank;
	}
	return 0;
}

/* Up to this many programs of a stage are written whole; a device whose
 * program is alike one of them is written as its changes. */
#define PACK_BASES 8

static int pack_device(struct scratch *s, const struct plan_device *d, const struct plan_device *base, Pcc__Device *m)
{
	Pcc__Buffer *bs, **bp;
	Pcc__Instr *is, **ip;
	if (base) {
		*m = (Pcc__Device){ MSG(device),
				    .rank = d->rank,
				    .stage = d->stage,
				    .n_coord = IR_MESH_AXES,
				    .coord = (int32_t *)d->coord,
				    .arena_bytes = d->arena_bytes,
				    .nstep = d->nstep,
				    .nfwd = d->nfwd };
		return pack_changes(s, base, d, m);
	}
	if (!NEW_MSGS(s, bs, bp, d->nbuf) || !NEW_MSGS(s, is, ip, d->ninstr))
		return -ENOMEM;
	for (int i = 0; i < d->nbuf; i++) {
		const struct plan_buffer *b = &d->buf[i];
		IR_ASSERT((unsigned)b->bind < PLAN_BIND_COUNT);
		/* start means something only per dimension of the buffer */
		bs[i] = (Pcc__Buffer){ MSG(buffer),
				       .dtype = DTYPE(b->dtype),
				       .n_shape = rank_of(&b->shape),
				       .shape = DIMS(b->shape.dims),
				       .offset = b->offset,
				       .bytes = b->bytes,
				       .bind = (Pcc__Bind)b->bind,
				       .index = b->index,
				       .n_start = rank_of(&b->shape),
				       .start = DIMS(plan_slice_of(d, i)->start),
				       .writer = plan_slice_of(d, i)->writer,
				       .slots = b->slots };
		bp[i] = &bs[i];
	}
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *in = &d->instr[i];
		IR_ASSERT((unsigned)in->kind < PLAN_INSTR_KIND_COUNT && (unsigned)in->reduce < PLAN_REDUCE_COUNT);
		is[i] = (Pcc__Instr){ MSG(instr),
				      .kind = (Pcc__InstrKind)in->kind,
				      .kernel = in->kernel,
				      .comm = in->comm,
				      .reduce = (Pcc__Reduce)in->reduce,
				      .axis = in->axis,
				      .axis2 = in->axis2,
				      .peer = in->peer,
				      .tag = in->tag,
				      .nin = in->nin,
				      .nout = in->nout,
				      .arg = in->arg };
		ip[i] = &is[i];
	}
	*m = (Pcc__Device){ MSG(device),
			    .rank = d->rank,
			    .stage = d->stage,
			    .n_coord = IR_MESH_AXES,
			    .coord = (int32_t *)d->coord,
			    .n_buffers = (size_t)d->nbuf,
			    .buffers = bp,
			    .n_instructions = (size_t)d->ninstr,
			    .instructions = ip,
			    .n_args = (size_t)d->nargs,
			    .args = (int32_t *)d->args,
			    .arena_bytes = d->arena_bytes,
			    .nstep = d->nstep,
			    .nfwd = d->nfwd };
	return 0;
}

static int pack_plan(struct scratch *s, const struct plan *p, Pcc__Plan *m)
{
	Pcc__Stage *ss;
	Pcc__Kernel *ks;
	Pcc__Comm *cs;
	Pcc__Device *ds;
	*m = (Pcc__Plan){ MSG(plan),
			  .version = PLAN_FORMAT_VERSION,
			  .cluster = (char *)(p->cluster ? p->cluster : ""),
			  .cluster_nodes = p->cluster_nodes,
			  .cluster_devices = p->cluster_devices,
			  .model_hash = p->model_hash,
			  .options_hash = p->options_hash,
			  .train = p->train,
			  .micro = p->micro,
			  .device_memory = p->device_memory,
			  .train_config = (char *)(p->train_config ? p->train_config : ""),
			  .model = (char *)(p->model ? p->model : ""),
			  .host_object = { p->host_object_len, p->host_object },
			  .host_cpu = (char *)(p->host_cpu ? p->host_cpu : ""),
			  .host_features = (char *)(p->host_features ? p->host_features : ""),
			  .n_input_files = p->input_file ? (size_t)p->ninputs : 0,
			  .input_files = (int32_t *)p->input_file,
			  .n_stages = (size_t)p->nstages,
			  .n_kernels = (size_t)p->nkernels,
			  .n_comms = (size_t)p->ncomms,
			  .n_devices = (size_t)p->ndevices };
	if (!NEW_MSGS(s, ss, m->stages, p->nstages) || !NEW_MSGS(s, ks, m->kernels, p->nkernels) ||
	    !NEW_MSGS(s, cs, m->comms, p->ncomms) || !NEW_MSGS(s, ds, m->devices, p->ndevices) ||
	    pack_tensors(s, p->params, p->nparams, &m->n_params, &m->params) < 0 ||
	    pack_tensors(s, p->inputs, p->ninputs, &m->n_inputs, &m->inputs) < 0 ||
	    pack_tensors(s, p->outputs, p->noutputs, &m->n_outputs, &m->outputs) < 0 ||
	    pack_tensors(s, p->state, p->nstate, &m->n_state, &m->state) < 0)
		return -ENOMEM;
	if (p->labels_input >= 0) {
		Pcc__Labels *l = scratch_calloc(s, 1, sizeof *l);
		if (!l)
			return -ENOMEM;
		*l = (Pcc__Labels){ MSG(labels), .input = p->labels_input, .classes = p->classes };
		m->labels = l;
	}
	for (int i = 0; i < p->nstages; i++) {
		const struct plan_stage *st = &p->stages[i];
		ss[i] = (Pcc__Stage){ MSG(stage),
				      .first_rank = st->first_rank,
				      .ndevices = st->ndevices,
				      .rows = st->rows,
				      .cols = st->cols,
				      .n0 = st->n0,
				      .n1 = st->n1,
				      .n_order = (size_t)st->norder,
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
	/* bases[stage * PACK_BASES + j]: the stage's programs written whole */
	int *bases = scratch_calloc(s, (size_t)p->nstages * PACK_BASES + 1, sizeof *bases);
	int *nbases = scratch_calloc(s, (size_t)p->nstages + 1, sizeof *nbases);
	if (!bases || !nbases)
		return -ENOMEM;
	for (int i = 0; i < p->ndevices; i++) {
		const struct plan_device *d = &p->devices[i], *base = NULL;
		int st = d->stage >= 0 && d->stage < p->nstages && d->rank == i ? d->stage : -1;
		for (int j = 0; st >= 0 && j < nbases[st] && !base; j++)
			if (program_alike(&p->devices[bases[st * PACK_BASES + j]], d))
				base = &p->devices[bases[st * PACK_BASES + j]];
		if (!base && st >= 0 && nbases[st] < PACK_BASES)
			bases[st * PACK_BASES + nbases[st]++] = i;
		if (pack_device(s, d, base, &ds[i]) < 0)
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
	scratch_free(&s); /* the message structs, before the file's copy of content */
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
