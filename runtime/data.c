/*
 * data.c: inputs in the ONNX backend-test layout (rt.h): DIR/input_N.pb,
 * or DIR/test_data_set_K/input_N.pb for K = 0, 1, ... Every rank reads the
 * sets itself (they are one step's worth of inputs, not the model) and
 * takes its slices in step.c. A set holds one micro-batch, or one whole
 * step whose dimension 0 is micro times the plan's; a step's micro-batches
 * of a whole-step set are views into it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/rt.h"

struct rt_data {
	const struct plan *p;
	int nsets;
	bool whole;              /* every set is a whole step */
	struct ir_tensor *sets;  /* [nsets * ninputs] */
	struct ir_tensor *step;  /* [micro * ninputs]: views */
	int next;                /* the set the next step starts at */
	int micro;
};

void rt_data_close(struct rt_data *d)
{
	if (!d)
		return;
	for (int i = 0; d->sets && i < d->nsets * d->p->ninputs; i++)
		ir_tensor_free(&d->sets[i]);
	ir_free(d->sets);
	ir_free(d->step);
	ir_free(d);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* Reads one set's inputs; *whole set when they hold a whole step. */
static int read_set(struct rt_data *d, const char *dir, struct ir_tensor *t, bool *whole)
{
	const struct plan *p = d->p;
	char path[4096], want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];
	for (int i = 0; i < p->ninputs; i++) {
		const struct plan_tensor *x = &p->inputs[i];
		if (snprintf(path, sizeof path, "%s/input_%d.pb", dir, i) >= (int)sizeof path)
			return ir_errorf(-ENAMETOOLONG, "%s: path too long", dir);
		if (onnx_tensor_read(path, &t[i], NULL) < 0)
			return -EINVAL;
		struct ir_shape s = x->shape;
		bool one = ir_shape_eq(&t[i].shape, &s), all = false;
		if (s.rank > 0) {
			s.dims[0] *= d->micro;
			all = d->micro > 1 && ir_shape_eq(&t[i].shape, &s);
		}
		if (t[i].dtype != x->dtype || !(one || all))
			return ir_errorf(-EINVAL, "%s: input %d \"%s\" is %s%s, the plan takes %s%s per micro-batch%s", path,
					 i, x->name, ir_dtype_name(t[i].dtype), ir_shape_str(&t[i].shape, got, sizeof got),
					 ir_dtype_name(x->dtype), ir_shape_str(&x->shape, want, sizeof want),
					 d->micro > 1 ? " (or micro-batches times that along dimension 0)" : "");
		if (i > 0 && all != *whole)
			return ir_errorf(-EINVAL, "%s: input %d holds %s the others", path, i,
					 all ? "a whole step, unlike" : "one micro-batch, unlike");
		*whole = all;
	}
	return 0;
}

struct rt_data *rt_data_open(const char *dir, const struct plan *p)
{
	char path[4096];
	struct rt_data *d = ir_calloc(1, sizeof *d);
	if (!d) {
		ir_errorf(-ENOMEM, "out of memory");
		return NULL;
	}
	d->p = p;
	d->micro = p->micro > 0 ? p->micro : 1;
	snprintf(path, sizeof path, "%s/input_0.pb", dir);
	bool flat = exists(path) || p->ninputs == 0;
	int n = 0;
	if (!flat)
		for (;; n++) {
			snprintf(path, sizeof path, "%s/test_data_set_%d", dir, n);
			if (!exists(path))
				break;
		}
	int nsets = flat ? 1 : n;
	if (nsets == 0) {
		ir_errorf(-ENOENT, "%s: no input_0.pb and no test_data_set_0/ (the backend-test layout)", dir);
		rt_data_close(d);
		return NULL;
	}
	if (!(d->sets = ir_calloc((size_t)nsets * (size_t)p->ninputs + 1, sizeof *d->sets)) ||
	    !(d->step = ir_calloc((size_t)d->micro * (size_t)p->ninputs + 1, sizeof *d->step))) {
		ir_errorf(-ENOMEM, "out of memory");
		rt_data_close(d);
		return NULL;
	}
	d->nsets = nsets;
	for (int k = 0; k < nsets; k++) {
		bool whole = false;
		if (!flat)
			snprintf(path, sizeof path, "%s/test_data_set_%d", dir, k);
		if (read_set(d, flat ? dir : path, d->sets + (size_t)k * (size_t)p->ninputs, &whole) < 0 ||
		    (k > 0 && whole != d->whole &&
		     ir_errorf(-EINVAL, "%s: its sets mix whole steps and single micro-batches", dir) < 0)) {
			rt_data_close(d);
			return NULL;
		}
		d->whole = whole;
	}
	return d;
}

int rt_data_sets(const struct rt_data *d)
{
	return d->nsets;
}

int rt_data_next(struct rt_data *d, const struct ir_tensor **in)
{
	const struct plan *p = d->p;
	int ni = p->ninputs;
	for (int m = 0; m < d->micro; m++) {
		int set = d->whole ? d->next : (d->next + m) % d->nsets;
		for (int i = 0; i < ni; i++) {
			const struct ir_tensor *s = &d->sets[(size_t)set * (size_t)ni + (size_t)i];
			struct ir_tensor *v = &d->step[(size_t)m * (size_t)ni + (size_t)i];
			*v = (struct ir_tensor){ s->dtype, p->inputs[i].shape, s->data };
			if (d->whole) /* micro-batch m: rows [m * b, (m + 1) * b) */
				v->data = (char *)s->data + (size_t)m * ir_tensor_bytes(v);
		}
	}
	d->next = (d->next + (d->whole ? 1 : d->micro)) % d->nsets;
	*in = d->step;
	return 0;
}
