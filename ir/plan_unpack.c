/*
 * plan_unpack.c: reading plan.bin (plan_io.h; packing is plan_io.c).
 *
 * Reading goes outside in, so each way a file can be wrong gets its own
 * message:
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
 *      valid, CONSTANT data has its size, the labels input exists and holds
 *      integers, input files are one per input in increasing order.
 *      plan_verify checks the meaning.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <xxhash.h>

#include "ir/plan_io.h"

/* ---- the outer framing ------------------------------------------------------ */

enum scan { SCAN_OK, SCAN_TRUNCATED, SCAN_BAD };

struct outer {
	bool has_version, has_content, has_checksum;
	uint64_t version, checksum;
	const uint8_t *content;
	size_t clen;
	const uint8_t *tag; /* a signed plan's HMAC (plan_sign.c); NULL: unsigned */
	size_t tag_at;      /* where its field starts: the bytes it covers */
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
 * fields 1-3, and a signed plan field 4 last (32 bytes); anything else
 * there is bad framing, except in a file whose field 1, read first,
 * already says it is of another version. */
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
		} else if (tag == PLAN_TAG_FIELD && !o->tag) {
			/* the signature: its length, and last */
			size_t start = at - 1;
			if ((r = get_varint(d, n, &at, &v)) != SCAN_OK)
				return r;
			if (v != PLAN_TAG_LEN)
				return SCAN_BAD;
			if (v > n - at)
				return SCAN_TRUNCATED;
			if (n - at != PLAN_TAG_LEN)
				return SCAN_BAD;
			o->tag = d + at;
			o->tag_at = start;
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

static int get_tensors(Pcc__Tensor *const *ms, size_t n, const char *what, struct plan_tensor **out, int *count)
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
	if ((rc = get_dtype(m->dtype, &a->dtype)) < 0 || (rc = get_shape(m->shape, m->n_shape, &a->shape)) < 0)
		return rc;
	for (size_t i = 0; i < sizeof ilists / sizeof ilists[0]; i++) {
		struct ir_ilist *l = (struct ir_ilist *)((char *)a + ilists[i].ir);
		size_t n = *(const size_t *)((const char *)m + ilists[i].pb_n);
		const int64_t *v = *(int64_t *const *)((const char *)m + ilists[i].pb_v);
		if (n > IR_MAX_RANK)
			return ir_errorf(-EINVAL, "attribute %s has %zu entries, more than %d", ilists[i].name, n,
					 IR_MAX_RANK);
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
			return ir_errorf(-EINVAL, "%zu bytes of data on a %s kernel", m->data.len, ir_op_name(op));
		return ir_errorf(-EINVAL, "constant data is %zu bytes, a %s%s constant has %zu", m->data.len,
				 ir_dtype_name(a->dtype), ir_shape_str(&a->shape, buf, sizeof buf), want);
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
		return ir_errorf(-EINVAL, "%zu operand types for nin %d + nout %d", m->n_operands, m->nin, m->nout);
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
		if ((rc = get_attrs(f->attrs, o->op, &o->a)) < 0 || (rc = get_dtype(f->result->dtype, &o->dtype)) < 0 ||
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
	if ((rc = get_dtype(m->dtype, &b->dtype)) < 0 || (rc = get_shape(m->shape, m->n_shape, &b->shape)) < 0)
		return rc;
	if ((unsigned)m->bind >= PLAN_BIND_COUNT)
		return ir_errorf(-EINVAL, "unknown bind %d", (int)m->bind);
	if (m->n_start > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "start has %zu entries, more than %d", m->n_start, IR_MAX_RANK);
	b->bind = (enum plan_bind)m->bind;
	b->offset = m->offset;
	b->bytes = m->bytes;
	b->index = m->index;
	b->slots = m->slots;
	return 0;
}

/* Sets buffer b's slice of device d from a start (n entries) and writer
 * flag as the file has them; a temporary has none: its start must be 0
 * (its writer flag means nothing: plan.h). */
static int set_slice(struct plan_device *d, int b, const int64_t *start, size_t n, bool writer)
{
	if (d->buf[b].slice < 0) {
		for (size_t k = 0; k < n; k++)
			if (start[k])
				return ir_errorf(-EINVAL, "buffer %d: a temporary starting at %lld in dimension %zu", b,
						 (long long)start[k], k);
		return 0;
	}
	struct plan_slice *x = &d->slice[d->buf[b].slice];
	memset(x->start, 0, sizeof x->start);
	if (n)
		memcpy(x->start, start, n * sizeof *start);
	x->writer = writer;
	return 0;
}

static int get_instr(const Pcc__Instr *m, struct plan_instr *in)
{
	if ((unsigned)m->kind >= PLAN_INSTR_KIND_COUNT)
		return ir_errorf(-EINVAL, "unknown instruction kind %d", (int)m->kind);
	if ((unsigned)m->reduce >= PLAN_REDUCE_COUNT)
		return ir_errorf(-EINVAL, "unknown reduction %d", (int)m->reduce);
	*in = (struct plan_instr){
		.kind = (enum plan_instr_kind)m->kind,
		.kernel = m->kernel,
		.comm = m->comm,
		.reduce = (enum plan_reduce)m->reduce,
		.axis = m->axis,
		.axis2 = m->axis2,
		.peer = m->peer,
		.tag = m->tag,
		.nin = m->nin,
		.nout = m->nout,
		.arg = m->arg,
	};
	return 0;
}

/* A device written as an earlier device's program with changes
 * (Device.copy_of): that program copied, then the listed fields set. */
static int get_changes(const Pcc__Device *m, const struct plan *p, int at, struct plan_device *d)
{
	int b = m->copy_of - 1, rc;
	if (b < 0 || b >= at)
		return ir_errorf(-EINVAL, "copy of device %d, not an earlier one", b);
	if (m->n_buffers || m->n_instructions || m->n_args)
		return ir_errorf(-EINVAL, "a copy of device %d with a program of its own", b);
	const struct plan_device *s = &p->devices[b];
	/* changes touch neither the arguments nor the buffers, only the
	 * slices: those arrays are shared */
	d->args = s->args;
	d->nargs = s->nargs;
	d->shared_args = true;
	d->buf = s->buf;
	d->nbuf = s->nbuf;
	d->shared_buf = true;
	if (!(d->instr = get_array(s->ninstr, sizeof *d->instr, &d->ninstr)) ||
	    !(d->slice = get_array(s->nslice, sizeof *d->slice, &d->nslice)))
		return nomem();
	if (s->nslice)
		memcpy(d->slice, s->slice, sizeof *d->slice * (size_t)s->nslice);
	if (s->ninstr)
		memcpy(d->instr, s->instr, sizeof *d->instr * (size_t)s->ninstr);
	size_t ni = m->n_instr_at;
	if (m->n_instr_kernel != ni || m->n_instr_comm != ni || m->n_instr_peer != ni || m->n_instr_tag != ni ||
	    m->n_instr_arg != ni)
		return ir_errorf(
			-EINVAL,
			"instruction changes: %zu places, %zu kernels, %zu comms, %zu peers, %zu tags, %zu args", ni,
			m->n_instr_kernel, m->n_instr_comm, m->n_instr_peer, m->n_instr_tag, m->n_instr_arg);
	for (size_t k = 0; k < ni; k++) {
		int i = m->instr_at[k];
		if (i < (k ? m->instr_at[k - 1] + 1 : 0) || i >= d->ninstr)
			return ir_errorf(-EINVAL, "instruction change %zu: instruction %d, out of order or past %d", k,
					 i, d->ninstr);
		d->instr[i].kernel = m->instr_kernel[k];
		d->instr[i].comm = m->instr_comm[k];
		d->instr[i].peer = m->instr_peer[k];
		d->instr[i].tag = m->instr_tag[k];
		d->instr[i].arg = m->instr_arg[k];
	}
	if (m->n_buffer_writer != m->n_buffer_at)
		return ir_errorf(-EINVAL, "buffer changes: %zu places, %zu writers", m->n_buffer_at,
				 m->n_buffer_writer);
	size_t ns = 0;
	for (size_t k = 0; k < m->n_buffer_at; k++) {
		int i = m->buffer_at[k];
		if (i < (k ? m->buffer_at[k - 1] + 1 : 0) || i >= d->nbuf)
			return ir_errorf(-EINVAL, "buffer change %zu: buffer %d, out of order or past %d", k, i,
					 d->nbuf);
		size_t r = (size_t)d->buf[i].shape.rank;
		if (m->n_buffer_start - ns < r)
			return ir_errorf(-EINVAL, "buffer change %zu: %zu starts left for rank %zu", k,
					 m->n_buffer_start - ns, r);
		if ((rc = set_slice(d, i, m->buffer_start + ns, r, m->buffer_writer[k])) < 0)
			return rc;
		ns += r;
	}
	if (ns != m->n_buffer_start)
		return ir_errorf(-EINVAL, "buffer changes: %zu starts, %zu used", m->n_buffer_start, ns);
	return 0;
}

/* Device d, written whole, shares its buffer array with an earlier device
 * of its stage that owns an equal one, its own freed (a copy shares its
 * base's from the start: get_changes). */
static void share_buf(struct plan *p, int d)
{
	struct plan_device *x = &p->devices[d];
	for (int e = d - 1; !x->shared_buf && e >= 0 && p->devices[e].stage == x->stage; e--) {
		const struct plan_device *s = &p->devices[e];
		if (s->shared_buf || s->nbuf != x->nbuf)
			continue;
		int b = 0;
		while (b < x->nbuf && plan_buffer_equal(&x->buf[b], &s->buf[b]))
			b++;
		if (b == x->nbuf) {
			ir_free(x->buf);
			x->buf = s->buf;
			x->shared_buf = true;
		}
	}
}

static int get_device(const Pcc__Device *m, const struct plan *p, int at, struct plan_device *d)
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
	if (m->copy_of)
		return get_changes(m, p, at, d);
	if (m->n_instr_at || m->n_instr_kernel || m->n_instr_comm || m->n_instr_peer || m->n_instr_tag ||
	    m->n_instr_arg || m->n_buffer_at || m->n_buffer_writer || m->n_buffer_start)
		return ir_errorf(-EINVAL, "changes to no device's program");
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
	if ((rc = plan_device_slices(d)) < 0)
		return rc;
	for (int i = 0; i < d->nbuf; i++)
		if ((rc = set_slice(d, i, m->buffers[i]->start, m->buffers[i]->n_start, m->buffers[i]->writer)) < 0)
			return rc;
	for (int i = 0; i < d->ninstr; i++)
		if ((rc = get_instr(m->instructions[i], &d->instr[i])) < 0) {
			ir_error_prefix("instruction %d", i);
			return rc;
		}
	return 0;
}

/* The labels of a class-index loss: an integer input of the plan and a
 * class count a tensor can have (pcc-run checks every label against it). */
static int get_labels(const Pcc__Labels *m, struct plan *p)
{
	p->labels_input = -1;
	if (!m)
		return 0;
	if (m->input < 0 || m->input >= p->ninputs)
		return ir_errorf(-EINVAL, "labels: input %d, the plan has %d", m->input, p->ninputs);
	const struct plan_tensor *t = &p->inputs[m->input];
	if (!ir_dtype_is_int(t->dtype))
		return ir_errorf(-EINVAL, "labels: input %d (\"%s\") is %s, not integer class indices", m->input,
				 t->name, ir_dtype_name(t->dtype));
	if (m->classes < 1 || m->classes > IR_MAX_NUMEL)
		return ir_errorf(-EINVAL, "labels: %lld classes", (long long)m->classes);
	p->labels_input = m->input;
	p->classes = m->classes;
	return 0;
}

/* Which input_N.pb feeds each input: none listed (input i reads
 * input_i.pb), or one per input, strictly increasing from 0. */
static int get_input_files(const Pcc__Plan *m, struct plan *p)
{
	int n;
	if (m->n_input_files == 0)
		return 0;
	if (m->n_input_files != (size_t)p->ninputs)
		return ir_errorf(-EINVAL, "input files: %zu for %d inputs", m->n_input_files, p->ninputs);
	for (size_t i = 0; i < m->n_input_files; i++)
		if (m->input_files[i] < (i ? m->input_files[i - 1] + 1 : 0))
			return ir_errorf(-EINVAL, "input files: input %zu reads input_%d.pb, after input_%d.pb", i,
					 (int)m->input_files[i], i ? (int)m->input_files[i - 1] : -1);
	return get_ints(m->input_files, m->n_input_files, &p->input_file, &n);
}

static int get_plan(const Pcc__Plan *m, struct plan *p)
{
	int rc;
	if (m->version != PLAN_FORMAT_VERSION)
		return ir_errorf(-EINVAL, "content has format version %u, the file %d", m->version,
				 PLAN_FORMAT_VERSION);
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
		p->stages[i] = (struct plan_stage){
			s->first_rank, s->ndevices, s->rows, s->cols, s->n0, s->n1, 0, NULL
		};
		if ((rc = get_ints(s->order, s->n_order, &p->stages[i].order, &p->stages[i].norder)) < 0)
			return rc;
	}
	if ((rc = get_tensors(m->params, m->n_params, "param", &p->params, &p->nparams)) < 0 ||
	    (rc = get_tensors(m->inputs, m->n_inputs, "input", &p->inputs, &p->ninputs)) < 0 ||
	    (rc = get_tensors(m->outputs, m->n_outputs, "output", &p->outputs, &p->noutputs)) < 0 ||
	    (rc = get_tensors(m->state, m->n_state, "state", &p->state, &p->nstate)) < 0)
		return rc;
	if ((rc = get_labels(m->labels, p)) < 0 || (rc = get_input_files(m, p)) < 0)
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
		if ((rc = get_ints(m->comms[i]->ranks, m->comms[i]->n_ranks, &p->comms[i].ranks, &p->comms[i].n)) < 0)
			return rc;
	for (int i = 0; i < p->ndevices; i++) {
		if ((rc = get_device(m->devices[i], p, i, &p->devices[i])) < 0) {
			ir_error_prefix("device %d", i);
			return rc;
		}
		share_buf(p, i);
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
	return plan_unpack_verified(data, n, NULL);
}

/* With a key: a tag that is there and is the key's, checked before the
 * content is trusted to be the plan's (the checksum, the decoder). */
static int check_tag(const uint8_t *data, const struct outer *o, const struct plan_key *k)
{
	uint8_t want[PLAN_TAG_LEN];
	if (!o->tag)
		return ir_errorf(-EACCES,
				 "not signed, and --verify-key %s asks for a plan signed with that key "
				 "(pcc ... -o PLAN --sign-key KEY)",
				 k->path);
	int rc = plan_tag(k, data, MAGIC_LEN + o->tag_at, want);
	if (rc == 0 && !plan_tag_equal(want, o->tag))
		rc = ir_errorf(-EACCES,
			       "its signature does not match the key in %s (the plan changed after it was signed, "
			       "or another key signed it)",
			       k->path);
	return rc;
}

struct plan *plan_unpack_verified(const uint8_t *data, size_t n, const struct plan_key *k)
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
	if (k && check_tag(data, &o, k) < 0)
		return NULL;
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
