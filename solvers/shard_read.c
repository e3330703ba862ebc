/*
 * shard_read.c: reads an IOPDDL contest instance into a struct shard_problem.
 *
 * The file is read whole through zlib (gzread passes plain files through, so
 * .json and .json.gz take the same path), parsed with jansson, and every
 * field is validated before a solver sees it: each message names the file and
 * the JSON path of the offending value, e.g.
 *   "G.json.gz: problem.edges.nodes[7]: node 900 does not exist (816 nodes)".
 * usage_limit may be absent (the contest treats it as optional): no limit.
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

int shard_problem_read_iopddl(const char *path, struct shard_problem *p)
{
	struct reader r = { .file = path, .p = p };
	char *buf = NULL;
	size_t len = 0;
	memset(p, 0, sizeof *p);
	int rc = read_all(path, &buf, &len);
	if (rc < 0)
		return rc;
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
