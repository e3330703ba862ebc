/*
 * fill.c: pcc-run --init [SPEC] --seed N: values for the parameters
 * whose weights the model names but does not have (external data whose
 * file is absent: a model shipped or generated without its weights, or
 * training from scratch).
 *
 * SPEC is a comma-separated list of PATTERN=KIND; the first rule whose
 * shell pattern (fnmatch, '*' matching '/' and '.') matches a parameter's
 * name decides, else the defaults: a name holding "bias" or "beta": zeros;
 * a vector (rank 0 or 1; LayerNorm's gains): ones; anything else: normal
 * with standard deviation 0.02 (GPT-2's). KIND is zeros, ones, const:V,
 * normal[:STD] (mean 0, STD 0.02 when not given) or uniform:A (-A to A).
 *
 * Element e (row-major in the whole parameter) of parameter "name" is a
 * function of (seed, name, e) alone, from a counter-based generator
 * (splitmix64 over a hash of the name and seed, Box-Muller for normals):
 * every rank fills its own slice, and the values do not depend on the mesh
 * or the sharding the plan chose. Example:
 *
 *   pcc-run plan.bin --data DIR --init 'ln*.weight=ones,*.bias=zeros,*=normal:0.02' --seed 1
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"

static const char *const kind_name[RT_FILL_COUNT] = {
	[RT_FILL_ZEROS] = "zeros",   [RT_FILL_ONES] = "ones",       [RT_FILL_CONST] = "const",
	[RT_FILL_NORMAL] = "normal", [RT_FILL_UNIFORM] = "uniform",
};

#define KINDS "zeros, ones, const:V, normal[:STD] or uniform:A"

/* KIND of one rule ("normal:0.02") into *r. */
static int parse_kind(const char *s, struct rt_fill_rule *r)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	int k = 0;
	while (k < RT_FILL_COUNT && (strlen(kind_name[k]) != n || strncmp(s, kind_name[k], n)))
		k++;
	if (k == RT_FILL_COUNT)
		return ir_errorf(-EINVAL, "unknown initializer \"%s\" (expected %s)", s, KINDS);
	r->kind = (enum rt_fill_kind)k;
	r->value = r->kind == RT_FILL_NORMAL ? 0.02 : 0;
	bool wants = r->kind == RT_FILL_CONST || r->kind == RT_FILL_UNIFORM, may = wants || r->kind == RT_FILL_NORMAL;
	if (!colon && wants)
		return ir_errorf(-EINVAL, "initializer \"%s\" needs a value (%s:V)", s, kind_name[k]);
	if (colon && !may)
		return ir_errorf(-EINVAL, "initializer \"%s\" takes no value", s);
	if (colon) {
		char *end;
		r->value = strtod(colon + 1, &end);
		if (end == colon + 1 || *end || !isfinite(r->value) || (r->kind != RT_FILL_CONST && r->value < 0))
			return ir_errorf(-EINVAL, "initializer \"%s\": expected a %snumber after ':'", s,
					 r->kind == RT_FILL_CONST ? "" : "non-negative ");
	}
	return 0;
}

int rt_fill_parse(struct rt_fill *in, const char *spec, uint64_t seed)
{
	memset(in, 0, sizeof *in);
	in->on = true;
	in->seed = seed;
	if (!spec || !*spec)
		return 0;
	int n = 1, rc = 0;
	for (const char *s = spec; *s; s++)
		n += *s == ',';
	char *copy = ir_malloc(strlen(spec) + 1);
	in->rule = ir_calloc((size_t)n, sizeof *in->rule);
	if (!copy || !in->rule) {
		ir_free(copy);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	strcpy(copy, spec);
	in->text = copy;
	for (char *item = copy, *next; item && rc == 0; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = 0;
		char *eq = strrchr(item, '=');
		if (!eq || eq == item)
			rc = ir_errorf(-EINVAL, "--init %s: \"%s\" is not PATTERN=KIND (KIND: %s)", spec, item, KINDS);
		else {
			*eq = 0;
			in->rule[in->n].pattern = item;
			if ((rc = parse_kind(eq + 1, &in->rule[in->n])) < 0)
				ir_error_prefix("--init %s", spec);
			in->n++;
		}
	}
	if (rc < 0)
		rt_fill_release(in);
	return rc;
}

void rt_fill_release(struct rt_fill *in)
{
	ir_free(in->text);
	ir_free(in->rule);
	memset(in, 0, sizeof *in);
}

struct rt_fill_rule rt_fill_rule_for(const struct rt_fill *in, const char *name, int rank)
{
	for (int i = 0; i < in->n; i++)
		if (fnmatch(in->rule[i].pattern, name, 0) == 0)
			return in->rule[i];
	struct rt_fill_rule r = { "(default)", RT_FILL_NORMAL, 0.02 };
	if (strstr(name, "bias") || strstr(name, "beta"))
		r.kind = RT_FILL_ZEROS;
	else if (rank <= 1)
		r.kind = RT_FILL_ONES;
	return r;
}

const char *rt_fill_kind_name(enum rt_fill_kind k)
{
	return kind_name[k];
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* In (0, 1). */
static double unit(uint64_t h)
{
	return ((double)(h >> 11) + 0.5) * 0x1.0p-53;
}

static double value(const struct rt_fill_rule *r, uint64_t key, int64_t e)
{
	switch (r->kind) {
	case RT_FILL_ZEROS:
		return 0;
	case RT_FILL_ONES:
		return 1;
	case RT_FILL_CONST:
		return r->value;
	case RT_FILL_UNIFORM:
		return r->value * (2 * unit(mix(key + (uint64_t)e)) - 1);
	case RT_FILL_NORMAL: {
		double u1 = unit(mix(key + 2 * (uint64_t)e)), u2 = unit(mix(key + 2 * (uint64_t)e + 1));
		return r->value * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
	}
	case RT_FILL_COUNT:
		break;
	}
	return 0;
}

int rt_fill_block(const struct rt_fill *in, const char *name, enum ir_dtype dtype, const struct ir_shape *global,
		  const int64_t *start, const struct ir_shape *block, void *dst)
{
	struct rt_fill_rule r = rt_fill_rule_for(in, name, global->rank);
	if (!ir_dtype_is_float(dtype))
		return ir_errorf(-EINVAL,
				 "parameter \"%s\" is %s: --init fills floating point parameters only (rule %s=%s)",
				 name, ir_dtype_name(dtype), r.pattern, kind_name[r.kind]);
	uint64_t key = mix(in->seed);
	for (const char *s = name; *s; s++) /* FNV-1a of the name, mixed with the seed */
		key = (key ^ (uint8_t)*s) * 0x100000001b3ull;
	key = mix(key);
	struct ir_tensor out = { dtype, *block, dst };
	int64_t idx[IR_MAX_RANK] = { 0 }, n = ir_shape_numel(block);
	for (int64_t i = 0; i < n; i++) {
		int64_t e = 0; /* the element's place in the whole parameter */
		for (int d = 0; d < global->rank; d++)
			e = e * global->dims[d] + start[d] + idx[d];
		ir_tensor_set_f64(&out, i, value(&r, key, e));
		for (int d = block->rank - 1; d >= 0 && ++idx[d] == block->dims[d]; d--)
			idx[d] = 0;
	}
	return 0;
}
