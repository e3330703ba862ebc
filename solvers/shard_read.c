/*
 * shard_read.c: reads an IOPDDL contest instance into a struct shard_problem.
 *
 * The file is read whole through zlib (gzread passes plain files through, so
 * .json and .json.gz take the same path), parsed with jansson, and every
 * field is validated before a solver sees it: each message names the file and
 * the JSON path of the offending value, e.g.
 *   "G.json.gz: problem.edges.nodes[7]: node 900 does not exist (816 nodes)".
 * usage_limit may be absent (the contest treats it as optional): no limit.
 *
 * Files as the contest writes them take a fast path first: a parser of
 * just this layout (objects of arrays of arrays of integers, a name, a
 * limit) straight into the problem's arrays, 5-10x faster than building
 * jansson's tree and in a fraction of its memory (a pcc-iopddl run's
 * deadline counts reading). It accepts a file only when every check below
 * passes; anything else (another layout, escapes, floats, any invalid
 * value) goes the jansson way, which gives the message.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "solvers/shard_internal.h"

/* Bytes of JSON read, after gunzip: 14x the largest contest instance (146
 * MB), and a bound a small gzip bomb cannot lift. One gzread at most
 * READ_CHUNK, which fits its int result. */
#define MAX_TEXT ((size_t)1 << 31)
#define READ_CHUNK (1u << 30)
/* Interval ends lie within +-MAX_TIME, so that any span of time points, and
 * their count, fits an int64 (the evaluator sums run lengths). */
#define MAX_TIME ((INT64_C(1) << 62) - 1)

/* The context every message needs. */
struct reader {
	const char *file;
	struct shard_problem *p;
};

static int read_all(const char *file, char **out, size_t *outlen)
{
	gzFile gz = gzopen(file, "rb");
	if (!gz)
		return shard_errorf(-errno ? -errno : -EIO, "%s: cannot open: %s", file,
				    errno ? strerror(errno) : "out of memory");
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	int rc = 0;
	for (;;) {
		if (!buf) {
			rc = shard_errorf(-ENOMEM, "%s: out of memory", file);
			break;
		}
		if (len > MAX_TEXT) {
			rc = shard_errorf(-EFBIG, "%s: more than %zu bytes of JSON", file, MAX_TEXT);
			break;
		}
		if (cap - len < (1 << 16)) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				continue;
			}
			buf = nb;
			cap *= 2;
		}
		int n = gzread(gz, buf + len, cap - len > READ_CHUNK ? READ_CHUNK : (unsigned)(cap - len));
		if (n < 0) {
			int zerr;
			const char *msg = gzerror(gz, &zerr);
			rc = shard_errorf(-EIO, "%s: cannot read: %s", file, zerr == Z_ERRNO ? strerror(errno) : msg);
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (rc == 0) {
		/* A truncated gzip stream reads as a short file; gzerror says so. */
		int zerr;
		const char *msg = gzerror(gz, &zerr);
		if (zerr != Z_OK && zerr != Z_STREAM_END)
			rc = shard_errorf(-EIO, "%s: cannot read: %s", file, msg);
	}
	gzclose(gz);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static json_t *member(const struct reader *r, json_t *obj, const char *path, const char *key, int *rc)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		*rc = shard_errorf(-EINVAL, "%s: %s: missing key \"%s\"", r->file, path, key);
	return v;
}

static json_t *member_array(const struct reader *r, json_t *obj, const char *path, const char *key, int *rc)
{
	json_t *v = member(r, obj, path, key, rc);
	if (v && !json_is_array(v)) {
		*rc = shard_errorf(-EINVAL, "%s: %s.%s: expected an array", r->file, path, key);
		return NULL;
	}
	return v;
}

static json_t *member_object(const struct reader *r, json_t *obj, const char *path, const char *key, int *rc)
{
	json_t *v = member(r, obj, path, key, rc);
	if (v && !json_is_object(v)) {
		*rc = shard_errorf(-EINVAL, "%s: %s.%s: expected an object", r->file, path, key);
		return NULL;
	}
	return v;
}

/* Reads a[j] as an integer; path and i name the array a ("PATH[i]"). */
static int int_at(const struct reader *r, json_t *a, const char *path, int i, size_t j, int64_t *out)
{
	json_t *v = json_array_get(a, j);
	if (!json_is_integer(v))
		return shard_errorf(-EINVAL, "%s: %s[%d][%zu]: expected an integer", r->file, path, i, j);
	*out = (int64_t)json_integer_value(v);
	return 0;
}

/* The entry a[i] as an array, with its length checked when want >= 0. */
static json_t *row(const struct reader *r, json_t *a, const char *path, int i, long long want, int *rc)
{
	json_t *v = json_array_get(a, (size_t)i);
	if (!json_is_array(v)) {
		*rc = shard_errorf(-EINVAL, "%s: %s[%d]: expected an array", r->file, path, i);
		return NULL;
	}
	if (want >= 0 && (long long)json_array_size(v) != want) {
		*rc = shard_errorf(-EINVAL, "%s: %s[%d]: has %zu entries, expected %lld", r->file, path, i,
				   json_array_size(v), want);
		return NULL;
	}
	return v;
}

static int check_len(const struct reader *r, json_t *a, const char *path, int want)
{
	if ((long long)json_array_size(a) != want)
		return shard_errorf(-EINVAL, "%s: %s: has %zu entries, expected %d (one per node)", r->file, path,
				    json_array_size(a), want);
	return 0;
}

static int read_strategies(const struct reader *r, json_t *costs, json_t *usages)
{
	struct shard_problem *p = r->p;
	int rc = 0;
	p->strat_off = malloc(sizeof *p->strat_off * ((size_t)p->nnodes + 1));
	if (!p->strat_off)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	p->strat_off[0] = 0;
	for (int i = 0; i < p->nnodes; i++) {
		json_t *c = row(r, costs, "problem.nodes.costs", i, -1, &rc);
		if (!c)
			return rc;
		size_t k = json_array_size(c);
		if (k == 0)
			return shard_errorf(-EINVAL, "%s: problem.nodes.costs[%d]: node has no strategies", r->file, i);
		if (k > (size_t)(INT32_MAX - p->strat_off[i]))
			return shard_errorf(-EINVAL, "%s: problem.nodes.costs[%d]: too many strategies", r->file, i);
		if (!row(r, usages, "problem.nodes.usages", i, (long long)k, &rc))
			return rc;
		p->strat_off[i + 1] = p->strat_off[i] + (int)k;
	}
	size_t ns = (size_t)p->strat_off[p->nnodes];
	p->cost = malloc(sizeof *p->cost * (ns + 1));
	p->usage = malloc(sizeof *p->usage * (ns + 1));
	if (!p->cost || !p->usage)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	for (int i = 0; i < p->nnodes; i++) {
		json_t *c = json_array_get(costs, (size_t)i), *u = json_array_get(usages, (size_t)i);
		for (int s = 0; s < shard_problem_nstrat(p, i); s++) {
			int64_t *cs = &p->cost[p->strat_off[i] + s], *us = &p->usage[p->strat_off[i] + s];
			if ((rc = int_at(r, c, "problem.nodes.costs", i, (size_t)s, cs)) < 0 ||
			    (rc = int_at(r, u, "problem.nodes.usages", i, (size_t)s, us)) < 0)
				return rc;
			if (*us < 0)
				return shard_errorf(-EINVAL, "%s: problem.nodes.usages[%d][%d]: negative usage %lld",
						    r->file, i, s, (long long)*us);
		}
	}
	return 0;
}

static int read_intervals(const struct reader *r, json_t *iv)
{
	struct shard_problem *p = r->p;
	int rc = 0;
	p->lo = malloc(sizeof *p->lo * ((size_t)p->nnodes + 1));
	p->hi = malloc(sizeof *p->hi * ((size_t)p->nnodes + 1));
	if (!p->lo || !p->hi)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	for (int i = 0; i < p->nnodes; i++) {
		json_t *a = row(r, iv, "problem.nodes.intervals", i, 2, &rc);
		if (!a)
			return rc;
		if ((rc = int_at(r, a, "problem.nodes.intervals", i, 0, &p->lo[i])) < 0 ||
		    (rc = int_at(r, a, "problem.nodes.intervals", i, 1, &p->hi[i])) < 0)
			return rc;
		if (p->lo[i] > p->hi[i])
			return shard_errorf(-EINVAL, "%s: problem.nodes.intervals[%d]: [%lld, %lld) has lo > hi",
					    r->file, i, (long long)p->lo[i], (long long)p->hi[i]);
		if (p->lo[i] < -MAX_TIME || p->hi[i] > MAX_TIME)
			return shard_errorf(-EINVAL,
					    "%s: problem.nodes.intervals[%d]: [%lld, %lld) lies outside "
					    "+-(2^62 - 1)",
					    r->file, i, (long long)p->lo[i], (long long)p->hi[i]);
	}
	return 0;
}

static int read_edge_nodes(const struct reader *r, json_t *en)
{
	struct shard_problem *p = r->p;
	int rc = 0;
	p->edge_u = malloc(sizeof *p->edge_u * ((size_t)p->nedges + 1));
	p->edge_v = malloc(sizeof *p->edge_v * ((size_t)p->nedges + 1));
	if (!p->edge_u || !p->edge_v)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	for (int k = 0; k < p->nedges; k++) {
		json_t *a = row(r, en, "problem.edges.nodes", k, 2, &rc);
		if (!a)
			return rc;
		for (int side = 0; side < 2; side++) {
			int64_t x = 0;
			if ((rc = int_at(r, a, "problem.edges.nodes", k, (size_t)side, &x)) < 0)
				return rc;
			if (x < 0 || x >= p->nnodes)
				return shard_errorf(-EINVAL,
						    "%s: problem.edges.nodes[%d]: node %lld does not exist (%d nodes)",
						    r->file, k, (long long)x, p->nnodes);
			(side ? p->edge_v : p->edge_u)[k] = (int)x;
		}
	}
	return 0;
}

static int read_edge_costs(const struct reader *r, json_t *ec)
{
	struct shard_problem *p = r->p;
	int rc = 0;
	p->edge_off = malloc(sizeof *p->edge_off * ((size_t)p->nedges + 1));
	if (!p->edge_off)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	p->edge_off[0] = 0;
	for (int k = 0; k < p->nedges; k++) {
		int ku = shard_problem_nstrat(p, p->edge_u[k]), kv = shard_problem_nstrat(p, p->edge_v[k]);
		json_t *a = json_array_get(ec, (size_t)k);
		if (!json_is_array(a))
			return shard_errorf(-EINVAL, "%s: problem.edges.costs[%d]: expected an array", r->file, k);
		if ((int64_t)json_array_size(a) != (int64_t)ku * kv)
			return shard_errorf(-EINVAL,
					    "%s: problem.edges.costs[%d]: has %zu entries, expected %d x %d = %lld "
					    "(strategies of nodes %d and %d)",
					    r->file, k, json_array_size(a), ku, kv, (long long)ku * kv, p->edge_u[k],
					    p->edge_v[k]);
		p->edge_off[k + 1] = p->edge_off[k] + (int64_t)ku * kv;
	}
	p->edge_cost = malloc(sizeof *p->edge_cost * ((size_t)p->edge_off[p->nedges] + 1));
	if (!p->edge_cost)
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	for (int k = 0; k < p->nedges; k++) {
		json_t *a = json_array_get(ec, (size_t)k);
		for (int64_t j = 0; j < p->edge_off[k + 1] - p->edge_off[k]; j++)
			if ((rc = int_at(r, a, "problem.edges.costs", k, (size_t)j,
					 &p->edge_cost[p->edge_off[k] + j])) < 0)
				return rc;
	}
	return 0;
}

static int read_limit(const struct reader *r, json_t *prob)
{
	json_t *lim = json_object_get(prob, "usage_limit");
	r->p->usage_limit = INT64_MAX;
	if (!lim || json_is_null(lim))
		return 0;
	if (!json_is_integer(lim))
		return shard_errorf(-EINVAL, "%s: problem.usage_limit: expected an integer", r->file);
	r->p->usage_limit = (int64_t)json_integer_value(lim);
	if (r->p->usage_limit < 0)
		return shard_errorf(-EINVAL, "%s: problem.usage_limit: negative limit %lld", r->file,
				    (long long)r->p->usage_limit);
	return 0;
}

static int read_problem(const struct reader *r, json_t *root)
{
	int rc = 0;
	if (!json_is_object(root))
		return shard_errorf(-EINVAL, "%s: the top level is not an object", r->file);
	json_t *prob = member_object(r, root, "(top level)", "problem", &rc), *nodes, *edges;
	if (!prob || !(nodes = member_object(r, prob, "problem", "nodes", &rc)) ||
	    !(edges = member_object(r, prob, "problem", "edges", &rc)))
		return rc;
	json_t *costs, *usages, *iv, *en, *ec;
	if (!(costs = member_array(r, nodes, "problem.nodes", "costs", &rc)) ||
	    !(usages = member_array(r, nodes, "problem.nodes", "usages", &rc)) ||
	    !(iv = member_array(r, nodes, "problem.nodes", "intervals", &rc)) ||
	    !(en = member_array(r, edges, "problem.edges", "nodes", &rc)) ||
	    !(ec = member_array(r, edges, "problem.edges", "costs", &rc)))
		return rc;
	if (json_array_size(costs) > INT32_MAX || json_array_size(en) > INT32_MAX)
		return shard_errorf(-EINVAL, "%s: too many nodes or edges", r->file);
	r->p->nnodes = (int)json_array_size(costs);
	r->p->nedges = (int)json_array_size(en);
	if ((rc = check_len(r, usages, "problem.nodes.usages", r->p->nnodes)) < 0 ||
	    (rc = check_len(r, iv, "problem.nodes.intervals", r->p->nnodes)) < 0)
		return rc;
	if (json_array_size(ec) != json_array_size(en))
		return shard_errorf(-EINVAL, "%s: problem.edges.costs: has %zu entries, expected %d (one per edge)",
				    r->file, json_array_size(ec), r->p->nedges);
	json_t *name = json_object_get(prob, "name");
	if (json_is_string(name) && !(r->p->name = strdup(json_string_value(name))))
		return shard_errorf(-ENOMEM, "%s: out of memory", r->file);
	if ((rc = read_strategies(r, costs, usages)) < 0 || (rc = read_intervals(r, iv)) < 0 ||
	    (rc = read_edge_nodes(r, en)) < 0 || (rc = read_edge_costs(r, ec)) < 0)
		return rc;
	return read_limit(r, prob);
}

/* ---- the fast path ------------------------------------------------------- */

/* An array of arrays of integers: row r is v[off[r] .. off[r+1]-1]. */
struct ragged {
	int64_t *v, *off;
	size_t nv, vcap, n, ocap;
	bool seen;
};

struct fast {
	const char *s, *end;
	struct ragged costs, usages, iv, en, ec;
	int64_t limit;
	bool limit_seen;
	char *name;
	bool nomem;
};

static void ws(struct fast *f)
{
	while (f->s < f->end && (*f->s == ' ' || *f->s == '\n' || *f->s == '\r' || *f->s == '\t'))
		f->s++;
}

static bool eat(struct fast *f, char c)
{
	ws(f);
	if (f->s < f->end && *f->s == c) {
		f->s++;
		return true;
	}
	return false;
}

/* A JSON integer that fits int64, not followed by a fraction or exponent. */
static bool integer(struct fast *f, int64_t *out)
{
	ws(f);
	const char *s = f->s;
	bool neg = s < f->end && *s == '-';
	s += neg;
	if (s == f->end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < f->end && s[1] >= '0' && s[1] <= '9'))
		return false;
	uint64_t x = 0;
	int digits = 0;
	for (; s < f->end && *s >= '0' && *s <= '9'; s++, digits++)
		x = x * 10 + (uint64_t)(*s - '0');
	/* 19 digits fit a uint64; more, or above INT64_MAX, or a fraction or
	 * exponent: jansson decides */
	if (digits > 19 || x > (uint64_t)INT64_MAX || (s < f->end && (*s == '.' || *s == 'e' || *s == 'E')))
		return false;
	*out = neg ? -(int64_t)x : (int64_t)x;
	f->s = s;
	return true;
}

static bool grow(struct fast *f, int64_t **a, size_t *cap, size_t need)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	int64_t *b = realloc(*a, sizeof *b * c);
	if (!b) {
		f->nomem = true;
		return false;
	}
	*a = b;
	*cap = c;
	return true;
}

static bool ragged(struct fast *f, struct ragged *r)
{
	if (r->seen || !eat(f, '['))
		return false;
	r->seen = true;
	if (!grow(f, &r->off, &r->ocap, 1))
		return false;
	r->off[0] = 0;
	if (eat(f, ']'))
		return true;
	do {
		if (!eat(f, '['))
			return false;
		if (!eat(f, ']')) {
			do {
				if (!grow(f, &r->v, &r->vcap, r->nv + 1) || !integer(f, &r->v[r->nv]))
					return false;
				r->nv++;
			} while (eat(f, ','));
			if (!eat(f, ']'))
				return false;
		}
		if (!grow(f, &r->off, &r->ocap, r->n + 2))
			return false;
		r->off[++r->n] = (int64_t)r->nv;
	} while (eat(f, ','));
	return eat(f, ']');
}

/* A string without escapes: its bytes at *k, *n of them. */
static bool string(struct fast *f, const char **k, size_t *n)
{
	if (!eat(f, '"'))
		return false;
	const char *s = f->s;
	while (f->s < f->end && *f->s != '"' && *f->s != '\\' && (unsigned char)*f->s >= 0x20)
		f->s++;
	if (f->s == f->end || *f->s != '"')
		return false;
	*k = s;
	*n = (size_t)(f->s - s);
	f->s++;
	return true;
}

static bool key(struct fast *f, const char **k, size_t *n)
{
	return string(f, k, n) && eat(f, ':');
}

static bool is(const char *k, size_t n, const char *want)
{
	return strlen(want) == n && !memcmp(k, want, n);
}

/* {"KEY": ragged, ...} with the keys of one of problem's two objects. */
static bool group(struct fast *f, bool nodes)
{
	if (!eat(f, '{'))
		return false;
	if (eat(f, '}'))
		return true;
	do {
		const char *k;
		size_t n;
		if (!key(f, &k, &n))
			return false;
		struct ragged *r = nodes ? (is(k, n, "costs")       ? &f->costs
					    : is(k, n, "usages")    ? &f->usages
					    : is(k, n, "intervals") ? &f->iv
								    : NULL)
					 : (is(k, n, "nodes")   ? &f->en
					    : is(k, n, "costs") ? &f->ec
								: NULL);
		if (!r || !ragged(f, r))
			return false;
	} while (eat(f, ','));
	return eat(f, '}');
}

static bool problem(struct fast *f)
{
	bool nodes = false, edges = false;
	if (!eat(f, '{'))
		return false;
	do {
		const char *k;
		size_t n;
		if (!key(f, &k, &n))
			return false;
		if (is(k, n, "nodes") && !nodes) {
			if (!(nodes = group(f, true)))
				return false;
		} else if (is(k, n, "edges") && !edges) {
			if (!(edges = group(f, false)))
				return false;
		} else if (is(k, n, "usage_limit") && !f->limit_seen) {
			f->limit_seen = true;
			ws(f);
			if (f->end - f->s >= 4 && !memcmp(f->s, "null", 4))
				f->s += 4, f->limit_seen = false;
			else if (!integer(f, &f->limit))
				return false;
		} else if (is(k, n, "name") && !f->name) {
			const char *v;
			size_t len;
			if (!string(f, &v, &len))
				return false;
			if (!(f->name = strndup(v, len))) {
				f->nomem = true;
				return false;
			}
		} else {
			return false;
		}
	} while (eat(f, ','));
	return eat(f, '}') && nodes && edges;
}

static void fast_free(struct fast *f)
{
	struct ragged *r[] = { &f->costs, &f->usages, &f->iv, &f->en, &f->ec };
	for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
		free(r[i]->v);
		free(r[i]->off);
	}
	free(f->name);
}

static size_t row_len(const struct ragged *r, size_t i)
{
	return (size_t)(r->off[i + 1] - r->off[i]);
}

/* Moves f's arrays into p when every check of the jansson path passes. */
static bool fast_build(struct fast *f, struct shard_problem *p)
{
	if (!f->costs.seen || !f->usages.seen || !f->iv.seen || !f->en.seen || !f->ec.seen || f->costs.n > INT32_MAX ||
	    f->en.n > INT32_MAX || f->usages.n != f->costs.n || f->iv.n != f->costs.n || f->ec.n != f->en.n ||
	    (f->limit_seen && f->limit < 0))
		return false;
	int n = (int)f->costs.n, m = (int)f->en.n;
	int64_t total = 0;
	for (int i = 0; i < n; i++) {
		size_t k = row_len(&f->costs, (size_t)i);
		if (k == 0 || (int64_t)k > INT32_MAX - total || row_len(&f->usages, (size_t)i) != k ||
		    row_len(&f->iv, (size_t)i) != 2)
			return false;
		total += (int64_t)k;
		int64_t lo = f->iv.v[2 * i], hi = f->iv.v[2 * i + 1];
		if (lo > hi || lo < -MAX_TIME || hi > MAX_TIME)
			return false;
	}
	for (size_t x = 0; x < f->usages.nv; x++)
		if (f->usages.v[x] < 0)
			return false;
	for (int k = 0; k < m; k++) {
		if (row_len(&f->en, (size_t)k) != 2)
			return false;
		int64_t u = f->en.v[2 * k], v = f->en.v[2 * k + 1];
		if (u < 0 || u >= n || v < 0 || v >= n)
			return false;
		int64_t ku = f->costs.off[u + 1] - f->costs.off[u], kv = f->costs.off[v + 1] - f->costs.off[v];
		if ((int64_t)row_len(&f->ec, (size_t)k) != ku * kv)
			return false;
	}
	p->strat_off = malloc(sizeof *p->strat_off * ((size_t)n + 1));
	p->lo = malloc(sizeof *p->lo * ((size_t)n + 1));
	p->hi = malloc(sizeof *p->hi * ((size_t)n + 1));
	p->edge_u = malloc(sizeof *p->edge_u * ((size_t)m + 1));
	p->edge_v = malloc(sizeof *p->edge_v * ((size_t)m + 1));
	if (!p->strat_off || !p->lo || !p->hi || !p->edge_u || !p->edge_v) {
		f->nomem = true;
		return false;
	}
	p->nnodes = n;
	p->nedges = m;
	for (int i = 0; i <= n; i++)
		p->strat_off[i] = (int)f->costs.off[i];
	for (int i = 0; i < n; i++)
		p->lo[i] = f->iv.v[2 * i], p->hi[i] = f->iv.v[2 * i + 1];
	for (int k = 0; k < m; k++)
		p->edge_u[k] = (int)f->en.v[2 * k], p->edge_v[k] = (int)f->en.v[2 * k + 1];
	/* the pools are already in the problem's layout */
	p->cost = f->costs.v, f->costs.v = NULL;
	p->usage = f->usages.v, f->usages.v = NULL;
	p->edge_off = f->ec.off, f->ec.off = NULL;
	p->edge_cost = f->ec.v, f->ec.v = NULL;
	p->usage_limit = f->limit_seen ? f->limit : INT64_MAX;
	p->name = f->name, f->name = NULL;
	/* an empty pool was never allocated: the problem's arrays always are */
	if (!p->cost)
		p->cost = malloc(sizeof *p->cost);
	if (!p->usage)
		p->usage = malloc(sizeof *p->usage);
	if (!p->edge_cost)
		p->edge_cost = malloc(sizeof *p->edge_cost);
	if (!p->cost || !p->usage || !p->edge_cost) {
		f->nomem = true;
		return false;
	}
	return true;
}

/* 1: p read; 0: not this layout or not valid (p untouched: the jansson
 * path decides); -ENOMEM. */
static int read_fast(const char *file, const char *buf, size_t len, struct shard_problem *p)
{
	struct fast f;
	memset(&f, 0, sizeof f);
	f.s = buf, f.end = buf + len;
	const char *k;
	size_t n;
	bool ok = eat(&f, '{') && key(&f, &k, &n) && is(k, n, "problem") && problem(&f) && eat(&f, '}');
	ws(&f);
	ok = ok && f.s == f.end && fast_build(&f, p);
	bool nomem = f.nomem;
	fast_free(&f);
	if (!ok)
		shard_problem_free(p);
	if (nomem)
		return shard_errorf(-ENOMEM, "%s: out of memory", file);
	return ok;
}

int shard_problem_read_iopddl(const char *path, struct shard_problem *p)
{
	struct reader r = { .file = path, .p = p };
	char *buf = NULL;
	size_t len = 0;
	memset(p, 0, sizeof *p);
	int rc = read_all(path, &buf, &len);
	if (rc < 0)
		return rc;
	if ((rc = read_fast(path, buf, len, p)) != 0) {
		free(buf);
		return rc < 0 ? rc : 0;
	}
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, 0, &jerr);
	free(buf);
	if (!root)
		return shard_errorf(-EINVAL, "%s: malformed JSON at line %d column %d: %s", path, jerr.line,
				    jerr.column, jerr.text);
	rc = read_problem(&r, root);
	json_decref(root);
	if (rc < 0)
		shard_problem_free(p);
	return rc;
}
