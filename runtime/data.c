/*
 * data.c: what a run feeds its plan's inputs (rt.h), in two formats.
 *
 * The ONNX backend-test layout: DIR/input_N.pb, or
 * DIR/test_data_set_K/input_N.pb for K = 0, 1, ... Input i reads
 * input_N.pb with N = plan.input_file[i]: i, or, where pcc bound some of
 * the model's inputs as constants (--const), its place among the model's
 * inputs, so a data set that holds every input feeds it unchanged (the
 * bound inputs' files unread). bfloat16 inputs also read ONNX 1.12's
 * UINT16 files (onnx_tensor_read_as). Every rank reads the
 * sets itself (they are one step's worth of inputs, not the model) and
 * takes its slices in step.c. A set holds one micro-batch, or one whole
 * step whose dimension 0 is micro times the plan's; a step's micro-batches
 * of a whole-step set are views into it. The labels of a class-index loss
 * (plan.labels_input) are checked against the class count when read.
 * numpy's files stand in for TensorProtos: input_N.npy (numpy.save), and
 * .npz archives (numpy.savez), each one set with an array per input, by
 * the input's name or else arr_N (N as above): --data FILE.npz is one set,
 * --data DIR holding neither input files nor test_data_set_0/ takes its
 * .npz files as the sets, in name order.
 *
 * A token file (--tokens): token ids back to back, little-endian u16 (as
 * nanoGPT's train.bin), u32 or i32, for a plan whose inputs are token ids
 * and the labels of its cross entropy, both [B,T]. The file's N tokens
 * hold W = floor((N - 1) / T) windows of T + 1 tokens, window w starting at
 * token w * T (consecutive windows share one token, as llm.c's loader
 * cuts them). Row b of micro-batch m of step s (0-based, counted over the
 * whole run) takes window k mod W, k = (s * micro + m) * B + b: ids are
 * its first T tokens, labels its last T (the next token of each). The
 * position depends on the step alone, so a resumed run reads on where the
 * interrupted one stopped, and every rank reads the same windows. The
 * file is mapped, not read; each token is checked when its window is
 * first cut, so a bad token stops the run (every rank, alike) before the
 * step that would read it. A token read as an id (a window's first T) must
 * be a row of the embedding the ids index (embed_rows); one read as a
 * label (its last T) a class of the loss. The two differ where a model's
 * head has more or fewer classes than its embedding has rows.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/npy.h"
#include "onnxio/onnxio.h"
#include "runtime/rt.h"

struct rt_data {
	const struct plan *p;
	int micro;
	struct ir_tensor *step; /* [micro * ninputs]: what rt_data_next hands out */
	long next;              /* the step the next call feeds (0-based) */
	/* the backend-test layout */
	int nsets;
	bool whole;    /* every set is a whole step */
	bool shuffled; /* rt_data_shuffle: sets in a seeded order per pass */
	uint64_t seed;
	long perm_pass;         /* the pass perm[] is the order of, or -1 */
	int *perm;              /* [nsets] */
	int *fed;               /* [micro]: the sets the last step took */
	struct ir_tensor *sets; /* [nsets * ninputs]; step[] are views into them */
	/* a token file; step[] own their data */
	const char *path;
	const uint8_t *map; /* the file, mapped */
	size_t map_bytes;
	int tsize;          /* bytes per token: 2 or 4 */
	bool tsigned;       /* i32 */
	int64_t ntok, nwin; /* tokens, windows of seq + 1 */
	int ids, labels;    /* input indices */
	int64_t batch, seq; /* of a micro-batch */
	int64_t vocab;      /* ids lie in [0, vocab): the embedding's rows */
	const char *embed;  /* that embedding parameter; NULL: none found, vocab
			     * is the class count */
	uint8_t *seen;      /* [nwin]: window checked against its bounds */
};

void rt_data_close(struct rt_data *d)
{
	if (!d)
		return;
	for (int i = 0; d->sets && i < d->nsets * d->p->ninputs; i++)
		ir_tensor_free(&d->sets[i]);
	for (int i = 0; d->path && d->step && i < d->micro * d->p->ninputs; i++)
		ir_tensor_free(&d->step[i]);
	if (d->map)
		munmap((void *)d->map, d->map_bytes);
	ir_free(d->seen);
	ir_free(d->sets);
	ir_free(d->perm);
	ir_free(d->fed);
	ir_free(d->step);
	ir_free(d);
}

static struct rt_data *data_new(const struct plan *p)
{
	struct rt_data *d = ir_calloc(1, sizeof *d);
	if (d) {
		d->p = p;
		d->micro = p->micro > 0 ? p->micro : 1;
	}
	if (d && !(d->step = ir_calloc((size_t)d->micro * (size_t)p->ninputs + 1, sizeof *d->step))) {
		ir_free(d);
		d = NULL;
	}
	if (!d)
		ir_errorf(-ENOMEM, "out of memory");
	return d;
}

/* scandir's filter: a name ending in .npz (numpy.savez's files) */
static int is_npz(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return n > 4 && !strcmp(e->d_name + n - 4, ".npz");
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Every label of t (read from path) is the ignored -100 or a class. */
static int check_labels(const struct plan *p, const struct ir_tensor *t, const char *path)
{
	const struct ir_value v = { .classes = p->classes, .has_ignore = true, .ignore = -100 };
	int rc = ir_labels_check(&v, t);
	if (rc < 0)
		ir_error_prefix("%s", path);
	return rc;
}

/* Adds to the "cannot open" of input i's file which files the set must
 * hold, and which it need not. */
static void no_file(const struct plan *p, int i, const char *dir)
{
	char want[256] = "", skip[256] = "", was[1024];
	size_t at = 0, sk = 0;
	int nskip = 0;
	snprintf(was, sizeof was, "%s", ir_error());
	for (int k = 0, f = 0; k < p->ninputs && at < sizeof want; k++) {
		int file = p->input_file ? p->input_file[k] : k;
		for (; f < file && sk < sizeof skip; f++, nskip++)
			sk += (size_t)snprintf(skip + sk, sizeof skip - sk, "%sinput_%d.pb", nskip ? ", " : "", f);
		f = file + 1;
		at += (size_t)snprintf(want + at, sizeof want - at, "%sinput_%d.pb", k ? ", " : "", file);
	}
	const char *why = !nskip       ? ""
			  : nskip == 1 ? ": its input is bound as a constant by pcc --const)"
				       : ": their inputs are bound as constants by pcc --const)";
	ir_errorf(-ENOENT, "%s (input %d \"%s\"): the plan reads %s from %s%s%s%s", was, i, p->inputs[i].name, want,
		  dir, nskip ? " (not " : "", skip, why);
}

/* Reads one set's inputs; *whole set when they hold a whole step. */
static int read_set(struct rt_data *d, const char *dir, struct ir_tensor *t, bool *whole)
{
	const struct plan *p = d->p;
	char path[4096], want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];
	bool npz = ir_npz_path(dir);
	for (int i = 0; i < p->ninputs; i++) {
		const struct plan_tensor *x = &p->inputs[i];
		int file = p->input_file ? p->input_file[i] : i;
		if (npz) { /* its array by the input's name, else arr_N */
			snprintf(path, sizeof path, "%s", dir);
			if (ir_npz_read(dir, x->name, file, &t[i]) < 0)
				return -EINVAL;
		} else if (!ir_input_path(path, sizeof path, dir, file)) {
			return ir_errorf(-ENAMETOOLONG, "%s: path too long", dir);
		} else if (onnx_tensor_read_as(path, &t[i], NULL, x->dtype) < 0) {
			if (ir_error_code() == -ENOENT)
				no_file(p, i, dir);
			return -EINVAL;
		}
		struct ir_shape s = x->shape;
		bool one = ir_shape_eq(&t[i].shape, &s), all = false;
		if (s.rank > 0) {
			s.dims[0] *= d->micro;
			all = d->micro > 1 && ir_shape_eq(&t[i].shape, &s);
		}
		if (t[i].dtype != x->dtype || !(one || all))
			return ir_errorf(-EINVAL, "%s: input %d \"%s\" is %s%s, the plan takes %s%s per micro-batch%s",
					 path, i, x->name, ir_dtype_name(t[i].dtype),
					 ir_shape_str(&t[i].shape, got, sizeof got), ir_dtype_name(x->dtype),
					 ir_shape_str(&x->shape, want, sizeof want),
					 d->micro > 1 ? " (or micro-batches times that along dimension 0)" : "");
		if (i > 0 && all != *whole)
			return ir_errorf(-EINVAL, "%s: input %d holds %s the others", path, i,
					 all ? "a whole step, unlike" : "one micro-batch, unlike");
		*whole = all;
		if (i == p->labels_input && check_labels(p, &t[i], path) < 0)
			return -EINVAL;
	}
	return 0;
}

struct rt_data *rt_data_open(const char *dir, const struct plan *p)
{
	char path[4096];
	struct rt_data *d = data_new(p);
	if (!d)
		return NULL;
	int first = p->input_file && p->ninputs ? p->input_file[0] : 0;
	ir_input_path(path, sizeof path, dir, first);
	bool flat = ir_npz_path(dir) || exists(path) || p->ninputs == 0;
	int n = 0;
	struct dirent **npz = NULL;
	if (!flat)
		for (;; n++) {
			snprintf(path, sizeof path, "%s/test_data_set_%d", dir, n);
			if (!exists(path))
				break;
		}
	int nnpz = !flat && n == 0 ? scandir(dir, &npz, is_npz, alphasort) : 0;
	int nsets = flat ? 1 : n ? n : nnpz > 0 ? nnpz : 0;
	if (nsets == 0) {
		ir_errorf(-ENOENT,
			  "%s: no input_%d.pb (or .npy), no test_data_set_0/ (the backend-test layout) and no .npz "
			  "files",
			  dir, first);
		rt_data_close(d);
		return NULL;
	}
	if (!(d->sets = ir_calloc((size_t)nsets * (size_t)p->ninputs + 1, sizeof *d->sets))) {
		ir_errorf(-ENOMEM, "out of memory");
		rt_data_close(d);
		return NULL;
	}
	d->nsets = nsets;
	for (int k = 0; k < nsets; k++) {
		bool whole = false;
		if (nnpz > 0)
			snprintf(path, sizeof path, "%s/%s", dir, npz[k]->d_name);
		else if (!flat)
			snprintf(path, sizeof path, "%s/test_data_set_%d", dir, k);
		if (read_set(d, flat ? dir : path, d->sets + (size_t)k * (size_t)p->ninputs, &whole) < 0 ||
		    (k > 0 && whole != d->whole &&
		     ir_errorf(-EINVAL, "%s: its sets mix whole steps and single micro-batches", dir) < 0)) {
			rt_data_close(d);
			d = NULL;
			break;
		}
		d->whole = whole;
	}
	for (int k = 0; k < nnpz; k++)
		free(npz[k]);
	free(npz);
	return d;
}

/* ---- token files */

/* A fused kernel's gather whose indices derive from the ids (from[]: per
 * buffer) and whose table is one of the kernel's operands: that operand's
 * buffer in *table, the axis in *axis. -1 out of memory. */
static int body_gather(const struct plan_kernel *k, const int *arg, const uint8_t *from, int *table, int64_t *axis)
{
	uint8_t *v = ir_calloc((size_t)(k->nin + k->nbody) + 1, 1); /* value derives from the ids */
	if (!v)
		return -1;
	for (int j = 0; j < k->nin; j++)
		v[j] = from[arg[j]];
	for (int j = 0; j < k->nbody; j++) {
		const struct plan_fop *f = &k->body[j];
		if (f->op == IR_OP_GATHER && v[f->in[1]] && f->in[0] < k->nin) {
			*table = arg[f->in[0]];
			*axis = f->a.axis;
		}
		for (int q = 0; q < f->nin; q++)
			v[k->nin + j] |= v[f->in[q]] && ir_dtype_is_int(f->dtype);
	}
	ir_free(v);
	return 0;
}

/* The rows of the embedding the ids input indexes: the smallest, over
 * every gather whose indices derive from the ids (the ids buffer itself or
 * an integer computed from it, as a gather over a row-split table offsets
 * them) and whose table is a parameter's slice (itself, or a copy,
 * all-gather or conversion of it), of that parameter's global extent along
 * the gathered axis. -1 when there is none. */
static int64_t embed_rows(const struct plan *p, int ids, const char **name)
{
	int64_t rows = -1;
	for (int dv = 0; dv < p->ndevices; dv++) {
		const struct plan_device *d = &p->devices[dv];
		uint8_t *from = ir_calloc((size_t)d->nbuf + 1, 1);          /* buffer derives from the ids */
		int *param = ir_calloc((size_t)d->nbuf + 1, sizeof *param); /* buffer holds parameter param - 1 */
		for (int b = 0; from && param && b < d->nbuf; b++) {
			from[b] = d->buf[b].bind == PLAN_BIND_INPUT && d->buf[b].index == ids;
			param[b] = d->buf[b].bind == PLAN_BIND_PARAM ? d->buf[b].index + 1 : 0;
		}
		for (int i = 0; from && param && i < d->ninstr; i++) {
			const struct plan_instr *x = &d->instr[i];
			const int *arg = d->args + x->arg;
			const struct plan_kernel *k = x->kind == PLAN_KERNEL ? &p->kernels[x->kernel] : NULL;
			int table = -1; /* the gather's table operand */
			int64_t axis = 0;
			if (k && k->nbody == 0 && k->op == IR_OP_GATHER && from[arg[1]]) {
				table = arg[0];
				axis = k->a.axis;
			}
			if (k && k->nbody > 0 && body_gather(k, arg, from, &table, &axis) < 0)
				break;
			const struct plan_tensor *t = table >= 0 && param[table] ? &p->params[param[table] - 1] : NULL;
			if (t && axis >= 0 && axis < t->shape.rank && (rows < 0 || t->shape.dims[axis] < rows)) {
				rows = t->shape.dims[axis];
				*name = t->name;
			}
			bool same = x->nin == 1 && x->nout == 1 &&
				    (x->kind == PLAN_COPY || x->kind == PLAN_ALL_GATHER ||
				     (k && k->nbody == 0 && k->op == IR_OP_CONVERT));
			if (same)
				param[arg[1]] = param[arg[0]];
			bool derived = false;
			for (int j = 0; j < x->nin; j++)
				derived = derived || from[arg[j]];
			for (int j = 0; derived && table < 0 && j < x->nout; j++)
				from[arg[x->nin + j]] = ir_dtype_is_int(d->buf[arg[x->nin + j]].dtype);
		}
		ir_free(from);
		ir_free(param);
	}
	return rows;
}

/* The plan's ids and labels inputs, both integers of shape [B,T]. */
static int token_inputs(struct rt_data *d, const char *path)
{
	const struct plan *p = d->p;
	char a[IR_SHAPE_STR_MAX], b[IR_SHAPE_STR_MAX];
	if (p->labels_input < 0)
		return ir_errorf(-EINVAL,
				 "%s: --tokens needs a plan trained with a cross entropy over token ids "
				 "(pcc MODEL --train --loss cross_entropy:LOGITS,LABELS); this one has no labels input",
				 path);
	const struct plan_tensor *l = &p->inputs[p->labels_input];
	if (p->ninputs != 2 || l->shape.rank != 2)
		return ir_errorf(-EINVAL,
				 "%s: --tokens feeds a plan of two inputs, token ids and labels of shape "
				 "[B,T]; this one has %d inputs, labels \"%s\" of shape %s",
				 path, p->ninputs, l->name, ir_shape_str(&l->shape, a, sizeof a));
	d->labels = p->labels_input;
	d->ids = 1 - d->labels;
	const struct plan_tensor *x = &p->inputs[d->ids];
	if (!ir_dtype_is_int(x->dtype) || !ir_shape_eq(&x->shape, &l->shape))
		return ir_errorf(-EINVAL, "%s: --tokens feeds token ids of the labels' shape %s; input \"%s\" is %s%s",
				 path, ir_shape_str(&l->shape, a, sizeof a), x->name, ir_dtype_name(x->dtype),
				 ir_shape_str(&x->shape, b, sizeof b));
	d->batch = l->shape.dims[0];
	d->seq = l->shape.dims[1];
	d->vocab = embed_rows(p, d->ids, &d->embed);
	if (d->vocab < 0) {
		d->vocab = p->classes;
		d->embed = NULL;
	}
	if (d->batch < 1 || d->seq < 1)
		return ir_errorf(-EINVAL, "%s: --tokens needs windows of at least one token; the labels are %s", path,
				 ir_shape_str(&l->shape, a, sizeof a));
	for (int m = 0; m < d->micro; m++)
		for (int i = 0; i < 2; i++) {
			struct ir_tensor *t = &d->step[(size_t)m * 2 + (size_t)i];
			if (ir_tensor_alloc(t, p->inputs[i].dtype, &p->inputs[i].shape) < 0)
				return ir_errorf(-ENOMEM, "out of memory");
		}
	return 0;
}

static int64_t token_at(const struct rt_data *d, int64_t i)
{
	const uint8_t *q = d->map + (size_t)i * (size_t)d->tsize;
	if (d->tsize == 2)
		return (int64_t)q[0] | (int64_t)q[1] << 8;
	uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
	return d->tsigned ? (int64_t)(int32_t)u : (int64_t)u;
}

struct rt_data *rt_data_open_tokens(const char *path, const char *type, const struct plan *p)
{
	struct rt_data *d = data_new(p);
	if (!d)
		return NULL;
	d->path = path;
	d->tsize = 2;
	if (type && (!strcmp(type, "u32") || !strcmp(type, "i32"))) {
		d->tsize = 4;
		d->tsigned = type[0] == 'i';
	} else if (type && strcmp(type, "u16")) {
		ir_errorf(-EINVAL, "--token-type %s: expected u16, u32 or i32", type);
		goto fail;
	}
	if (token_inputs(d, path) < 0)
		goto fail;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ir_errorf(-errno, "%s: cannot open: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	d->ntok = (int64_t)st.st_size / d->tsize;
	if (st.st_size % d->tsize)
		ir_errorf(-EINVAL, "%s: %lld bytes is not a whole number of %s tokens (%d bytes each)", path,
			  (long long)st.st_size, type ? type : "u16", d->tsize);
	else if (d->ntok < d->seq + 1)
		ir_errorf(-EINVAL,
			  "%s: %lld tokens, fewer than one window of %lld (the plan's sequence of %lld, "
			  "plus the last label)",
			  path, (long long)d->ntok, (long long)(d->seq + 1), (long long)d->seq);
	else if ((d->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
		ir_errorf(-errno, "%s: cannot map: %s", path, strerror(errno));
	close(fd);
	if (d->map == MAP_FAILED)
		d->map = NULL;
	if (!d->map)
		goto fail;
	d->map_bytes = (size_t)st.st_size;
	d->nwin = (d->ntok - 1) / d->seq;
	if (!(d->seen = ir_calloc((size_t)d->nwin + 1, 1))) {
		ir_errorf(-ENOMEM, "out of memory");
		goto fail;
	}
	return d;
fail:
	rt_data_close(d);
	return NULL;
}

/* Window w's tokens checked, once: its first T are ids, rows of the
 * embedding; its last T labels, classes of the loss. */
static int check_window(struct rt_data *d, int64_t w)
{
	if (d->seen[w])
		return 0;
	for (int64_t i = w * d->seq; i <= (w + 1) * d->seq; i++) {
		int64_t t = token_at(d, i);
		/* clang-format would read i < ... > as a template */
		/* clang-format off */
		bool id = i < (w + 1) * d->seq, label = i > w * d->seq;
		/* clang-format on */
		if (id && (t < 0 || t >= d->vocab)) {
			if (d->embed)
				return ir_errorf(-EINVAL,
						 "%s: token %lld at element %lld is outside [0, %lld) (the "
						 "vocabulary: the rows of the embedding \"%s\" the ids index)",
						 d->path, (long long)t, (long long)i, (long long)d->vocab, d->embed);
			return ir_errorf(-EINVAL,
					 "%s: token %lld at element %lld is outside [0, %lld) (the vocabulary: "
					 "the class count of the plan's loss; no embedding of the ids was found)",
					 d->path, (long long)t, (long long)i, (long long)d->vocab);
		}
		if (label && (t < 0 || t >= d->p->classes))
			return ir_errorf(-EINVAL,
					 "%s: token %lld at element %lld is outside [0, %lld) (the class count "
					 "of the plan's loss, which the labels, the ids shifted by one, index)",
					 d->path, (long long)t, (long long)i, (long long)d->p->classes);
	}
	d->seen[w] = 1;
	return 0;
}

/* Fills step[] with step s's windows. */
static int cut_windows(struct rt_data *d, long s)
{
	/* k mod W without overflow: s * micro * B may pass 2^63 */
	__extension__ typedef unsigned __int128 u128;
	u128 per = (u128)d->micro * (u128)d->batch, w0 = (u128)s * per;
	for (int m = 0; m < d->micro; m++) {
		struct ir_tensor *ids = &d->step[(size_t)m * 2 + (size_t)d->ids];
		struct ir_tensor *lab = &d->step[(size_t)m * 2 + (size_t)d->labels];
		for (int64_t b = 0; b < d->batch; b++) {
			int64_t w = (int64_t)((w0 + (u128)m * (u128)d->batch + (u128)b) % (u128)d->nwin);
			int rc = check_window(d, w);
			if (rc < 0)
				return rc;
			for (int64_t j = 0; j < d->seq; j++) {
				ir_tensor_set_i64(ids, b * d->seq + j, token_at(d, w * d->seq + j));
				ir_tensor_set_i64(lab, b * d->seq + j, token_at(d, w * d->seq + j + 1));
			}
		}
	}
	return 0;
}

/* ---- both */

void rt_data_describe(const struct rt_data *d, char *buf, size_t n)
{
	if (d->map)
		snprintf(buf, n, "%s: %lld tokens, %lld windows of %lld + 1", d->path, (long long)d->ntok,
			 (long long)d->nwin, (long long)d->seq);
	else
		snprintf(buf, n, "%d data set%s", d->nsets, d->nsets == 1 ? "" : "s");
}

void rt_data_seek(struct rt_data *d, long step)
{
	d->next = step;
}

int rt_data_shuffle(struct rt_data *d, uint64_t seed)
{
	if (d->map)
		return ir_errorf(-EINVAL, "--shuffle reorders data sets (--data DIR); a token file is read in "
					  "window order");
	if (!(d->perm = ir_calloc((size_t)d->nsets + 1, sizeof *d->perm)))
		return ir_errorf(-ENOMEM, "out of memory shuffling the data sets");
	d->shuffled = true;
	d->seed = seed;
	d->perm_pass = -1;
	return 0;
}

/* splitmix64: the next of a stream of well-mixed 64-bit values */
static uint64_t mix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The k-th set used in the run (0-based, counted over every step's). */
static int set_at(struct rt_data *d, long k)
{
	if (!d->shuffled)
		return (int)(k % d->nsets);
	long pass = k / d->nsets;
	if (pass != d->perm_pass) { /* Fisher-Yates, from the seed and the pass alone */
		uint64_t x = d->seed ^ ((uint64_t)pass * 0xd1b54a32d192ed03ull);
		for (int i = 0; i < d->nsets; i++)
			d->perm[i] = i;
		for (int i = d->nsets - 1; i > 0; i--) {
			int j = (int)(mix(&x) % (uint64_t)(i + 1)), t = d->perm[i];
			d->perm[i] = d->perm[j];
			d->perm[j] = t;
		}
		d->perm_pass = pass;
	}
	return d->perm[k % d->nsets];
}

int rt_data_pass(const struct rt_data *d, int *mbs)
{
	int n = d->whole ? d->nsets : (d->nsets + d->micro - 1) / d->micro;
	*mbs = d->whole ? d->nsets * d->micro : d->nsets;
	return n;
}

const int *rt_data_sets(const struct rt_data *d, int *n)
{
	*n = d->map || !d->fed ? 0 : d->micro;
	return d->fed;
}

int rt_data_next(struct rt_data *d, const struct ir_tensor **in)
{
	const struct plan *p = d->p;
	int ni = p->ninputs;
	*in = d->step;
	if (d->map)
		return cut_windows(d, d->next++);
	/* the set step s starts at: sets are used in turn, a step takes micro
	 * of them (one when each is a whole step) */
	long first = d->next++ * (d->whole ? 1 : (long)d->micro);
	if (!d->fed && !(d->fed = ir_calloc((size_t)d->micro + 1, sizeof *d->fed)))
		return ir_errorf(-ENOMEM, "out of memory reading the data");
	for (int m = 0; m < d->micro; m++) {
		int set = set_at(d, d->whole ? first : first + m);
		d->fed[m] = set;
		for (int i = 0; i < ni; i++) {
			const struct ir_tensor *s = &d->sets[(size_t)set * (size_t)ni + (size_t)i];
			struct ir_tensor *v = &d->step[(size_t)m * (size_t)ni + (size_t)i];
			*v = (struct ir_tensor){ s->dtype, p->inputs[i].shape, s->data };
			if (d->whole) /* micro-batch m: rows [m * b, (m + 1) * b) */
				v->data = (char *)s->data + (size_t)m * ir_tensor_bytes(v);
		}
	}
	return 0;
}
