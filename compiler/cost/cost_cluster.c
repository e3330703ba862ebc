/*
 * cost_cluster.c: clusters (short form or JSON file), the axes collectives
 * run on, and 2-D logical meshes.
 *
 * Short form: [NODES x] DEVICES : KIND [, key=value]...
 *   "4x8:a100-80g", "8:h100", "2x8:h100,ib=400Gbps,nvlink_lat=2us", "cpu:4".
 *   KIND is a device preset (cost_device_preset). Keys:
 *     ib=BW          one device's share of the node's NICs, one direction
 *                    (a bare number is Gb/s, as NICs are quoted)
 *     nvlink=BW      one GPU's NVLink bandwidth as NVIDIA quotes it, both
 *                    directions summed (a bare number is GB/s); a link
 *                    direction gets half
 *     ib_lat=TIME    network latency per hop (a bare number is us)
 *     nvlink_lat=TIME
 *   BW: a number and an optional unit: [k|M|G|T] then b (bits) or B
 *   (bytes), then "ps" or "/s": 200Gbps = 200Gb/s = 25GBps. The b/B is
 *   significant, the prefix's case is not. TIME: a number and ns, us, ms
 *   or s.
 *   "cpu:N": one node of N local ranks; the device is cost_device_host(N),
 *   the link between ranks shared memory (below), inter = intra.
 *
 * JSON file (any spec naming an existing file or ending in ".json"):
 *   { "name": "lab",                   optional; default: the file name
 *     "nodes": [                       groups of identical nodes, at most 16
 *       { "count": 2,                  nodes in the group (default 1)
 *         "devices": 8,                devices per node (required)
 *         "device": "a100-80g",        a preset, or an object (below)
 *         "nvlink_GBps": 600,          per GPU, both directions summed
 *         "nic_Gbps": 200,             per device, one direction
 *         "nvlink_latency_us": 1,      per hop
 *         "nic_latency_us": 5 },
 *       { "count": 1, "devices": 4,
 *         "device": { "name": "mygpu",           required, at most 31 chars
 *                     "desc": "my own GPU",       optional
 *                     "like": "v100-32g",         a preset to start from
 *                     "memory_GB": 32,            2^30 bytes, as the presets
 *                     "memory_GBps": 900,         1e9 bytes/s
 *                     "host_GBps": 16,            host-to-device copies,
 *                                                 1e9 bytes/s (default 32)
 *                     "tflops": { "f32": 15.7, "f16": 125 } } } ] }
 *   Precisions in "tflops" are cost_prec names (f64, f32, tf32, bf16, f16,
 *   fp8); listed ones replace the "like" preset's, the others keep it (or
 *   are 0 without "like"). Links default to those of the preset's (or the
 *   "like" preset's) DGX system; a device with neither must give
 *   nvlink_GBps and nic_Gbps. A device without "like" must give memory_GB,
 *   memory_GBps and tflops. Unknown keys are errors naming the key and its
 *   path ("nodes[1].device"), so a typo never passes silently.
 *
 * Default links (one direction, per device):
 *   V100 in a DGX-1: NVLink2, 6 links x 25 GB/s each way = 300 GB/s per
 *     GPU both ways (V100 datasheet), 150 GB/s a direction (the hybrid
 *     cube-mesh is modelled as a switch); 4 x 100 Gb/s EDR InfiniBand per
 *     8 GPUs (DGX-1 datasheet) = 50 Gb/s = 6.25 GB/s per GPU.
 *   A100 in a DGX A100: NVLink3 600 GB/s per GPU (A100 datasheet), 300
 *     GB/s a direction through NVSwitch; 8 x 200 Gb/s HDR (ConnectX-6),
 *     one per GPU (DGX A100 datasheet) = 25 GB/s.
 *   H100/H200 in a DGX H100/H200: NVLink4 900 GB/s per GPU (H100 and H200
 *     datasheets), 450 GB/s a direction; 8 x 400 Gb/s NDR (ConnectX-7),
 *     one per GPU (DGX H100/H200 datasheets) = 50 GB/s.
 *   Latency per hop: 1 us on NVLink, 5 us on the network. Assumptions,
 *   rounded from NCCL's tuning model (src/graph/tuning.cc, hwLat: NVLink
 *   about 0.5 us (LL) to 2 us (LL128/Simple) a step, network 2.7 to 5 us
 *   (LL) and more for the bulk protocols).
 *   CPU ranks: one core's memcpy rate / 2 a direction (a shared-memory
 *   transfer copies into the shared segment and out again, and a rank
 *   sends and receives at once), 1 us.
 *
 * Axes: device ids are node-major (node k holds k*M .. k*M+M-1, M the
 * devices per node). An axis of n members `stride` apart lies within a
 * node, or has one member per node, or `local` members on each of `nodes`
 * nodes; anything else straddles nodes unevenly and is rejected. Example,
 * 4x8: stride 1 n 8 = (8 local, 1 node); stride 8 n 4 = (1, 4); stride 4
 * n 4 = (2, 2); stride 3 n 4 is rejected.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

#define NVLINK_LAT 1e-6 /* s per hop, see above */
#define NET_LAT 5e-6
#define SHM_LAT 1e-6
#define MAX_DEVICES (1 << 24) /* a sanity bound on nodes x devices */

static const struct {
	const char *prefix;  /* device preset names starting with it */
	double nvlink_total; /* bytes/s per GPU, both directions, as quoted */
	double nic_bits;     /* bits/s per GPU, one direction */
} systems[] = {
	{ "v100", 300e9, 50e9 },  /* DGX-1 */
	{ "a100", 600e9, 200e9 }, /* DGX A100 */
	{ "h100", 900e9, 400e9 }, /* DGX H100 */
	{ "h200", 900e9, 400e9 }, /* DGX H200 */
};

/* The default links of a preset's DGX system; false when it has none. */
static bool default_links(const char *preset, struct cost_link *intra, struct cost_link *inter)
{
	for (size_t i = 0; i < sizeof systems / sizeof systems[0]; i++)
		if (!strncasecmp(preset, systems[i].prefix, strlen(systems[i].prefix))) {
			*intra = (struct cost_link){ systems[i].nvlink_total / 2, NVLINK_LAT };
			*inter = (struct cost_link){ systems[i].nic_bits / 8, NET_LAT };
			return true;
		}
	return false;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* ---- units ------------------------------------------------------------------ */

/* A finite number >= 0 at the start of s; *end after it. */
static bool parse_number(const char *s, double *v, const char **end)
{
	char *e;
	if (!*s || !(s[0] == '.' || (s[0] >= '0' && s[0] <= '9')))
		return false;
	*v = strtod(s, &e);
	if (e == s || !isfinite(*v))
		return false;
	*end = e;
	return true;
}

static double si_prefix(char c)
{
	switch (c) {
	case 'k':
	case 'K':
		return 1e3;
	case 'm':
	case 'M':
		return 1e6;
	case 'g':
	case 'G':
		return 1e9;
	case 't':
	case 'T':
		return 1e12;
	default:
		return 0;
	}
}

/* A bandwidth in bytes/s; a bare number is Gb/s (bare_bits) or GB/s. */
static int parse_bw(const char *s, bool bare_bits, double *out)
{
	const char *u;
	double v, scale = 1;
	if (!parse_number(s, &v, &u))
		goto bad;
	if (!*u) {
		*out = v * 1e9 / (bare_bits ? 8 : 1);
		goto check;
	}
	if (si_prefix(*u) > 0)
		scale = si_prefix(*u++);
	if (*u != 'b' && *u != 'B')
		goto bad;
	if (*u++ == 'b')
		scale /= 8;
	if (strcasecmp(u, "ps") && strcasecmp(u, "/s"))
		goto bad;
	*out = v * scale;
check:
	if (*out > 0 && isfinite(*out))
		return 0;
bad:
	return ir_errorf(-EINVAL,
			 "bad bandwidth \"%s\" (expected a positive number and a unit: "
			 "200Gbps, 400Gb/s, 25GBps, 300GB/s)",
			 s);
}

/* A time in seconds; a bare number is us. */
static int parse_time(const char *s, double *out)
{
	/* Divisors rather than factors: 5 / 1e6 is exactly the double
	 * nearest 5e-6, 5 * 1e-6 need not be. */
	static const struct {
		const char *unit;
		double per_s;
	} units[] = { { "", 1e6 }, { "ns", 1e9 }, { "us", 1e6 }, { "ms", 1e3 }, { "s", 1 } };
	const char *u;
	double v;
	if (parse_number(s, &v, &u))
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			if (!strcmp(u, units[i].unit)) {
				*out = v / units[i].per_s;
				return 0;
			}
	return ir_errorf(-EINVAL, "bad time \"%s\" (expected a number and ns, us, ms or s: 5us)", s);
}

/* ---- the short form ----------------------------------------------------- */

/* The decimal count at *p, *p moved past it; false when there is none.
 * Counts beyond MAX_DEVICES read as MAX_DEVICES + 1, for the caller to
 * reject as too many. */
static bool parse_count(const char **p, int *v)
{
	long n = 0;
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++)
		n = n > MAX_DEVICES ? n : n * 10 + (*s - '0');
	*v = n > MAX_DEVICES ? MAX_DEVICES + 1 : (int)n;
	*p = s;
	return true;
}

static void group_init(struct cost_node_group *g, int count, int devices, const struct cost_device *d)
{
	g->count = count;
	g->devices = devices;
	g->dev = *d;
	if (!default_links(d->name, &g->intra, &g->inter)) {
		g->intra = (struct cost_link){ 0, NVLINK_LAT };
		g->inter = (struct cost_link){ 0, NET_LAT };
	}
}

static void cluster_finish(struct cost_cluster *c)
{
	c->nodes = c->ndevices = 0;
	for (int i = 0; i < c->ngroups; i++) {
		c->nodes += c->groups[i].count;
		c->ndevices += c->groups[i].count * c->groups[i].devices;
	}
}

/* One "key=value" of the short form (len bytes at kv) applied to g. */
static int apply_option(const char *kv, size_t len, struct cost_node_group *g)
{
	char buf[64], *val;
	if (len >= sizeof buf)
		return ir_errorf(-EINVAL, "option \"%.*s\" is too long", (int)len, kv);
	memcpy(buf, kv, len);
	buf[len] = 0;
	if (!(val = strchr(buf, '=')))
		return ir_errorf(-EINVAL, "option \"%s\" is not key=value", buf);
	*val++ = 0;
	int rc;
	double v;
	if (!strcmp(buf, "ib")) {
		if ((rc = parse_bw(val, true, &v)) == 0)
			g->inter.bw = v;
	} else if (!strcmp(buf, "nvlink")) {
		if ((rc = parse_bw(val, false, &v)) == 0)
			g->intra.bw = v / 2;
	} else if (!strcmp(buf, "ib_lat")) {
		if ((rc = parse_time(val, &v)) == 0)
			g->inter.latency = v;
	} else if (!strcmp(buf, "nvlink_lat")) {
		if ((rc = parse_time(val, &v)) == 0)
			g->intra.latency = v;
	} else {
		return ir_errorf(-EINVAL, "unknown key \"%s\" (expected ib, nvlink, ib_lat or nvlink_lat)", buf);
	}
	if (rc < 0)
		ir_error_prefix("%s", buf);
	return rc;
}

/* "cpu:N": local ranks on this host. */
static int parse_cpu(const char *arg, struct cost_cluster *c)
{
	const char *p = arg;
	int n;
	if (!parse_count(&p, &n) || *p || n < 1 || n > 4096)
		return ir_errorf(-EINVAL, "expected cpu:N with 1 to 4096 ranks, got \"cpu:%s\"", arg);
	struct cost_node_group *g = &c->groups[0];
	int rc = cost_device_host(n, &g->dev);
	if (rc < 0)
		return rc;
	g->count = 1;
	g->devices = n;
	/* cost_device_host's mem_bw is 2 x one core's copy rate / ranks. */
	double copy = g->dev.mem_bw * n / 2;
	g->intra = (struct cost_link){ copy / 2, SHM_LAT };
	g->inter = g->intra;
	c->ngroups = 1;
	c->cpu = true;
	return 0;
}

bool cost_cluster_spec_cpu(const char *spec)
{
	const char *colon = spec ? strchr(spec, ':') : NULL;
	return colon && colon - spec == 3 && !strncasecmp(spec, "cpu", 3);
}

static int parse_short(const char *spec, struct cost_cluster *c)
{
	const char *colon = strchr(spec, ':'), *p = spec;
	int nodes = 1, devices;
	if (!colon)
		return ir_errorf(-EINVAL, "expected [NODES x] DEVICES : KIND (4x8:a100-80g, 8:h100, cpu:4) "
					  "or a .json file");
	if (cost_cluster_spec_cpu(spec))
		return parse_cpu(colon + 1, c);
	if (!parse_count(&p, &devices))
		return ir_errorf(-EINVAL, "expected a node or device count at the start");
	if (*p == 'x' || *p == 'X') {
		nodes = devices;
		p++;
		if (!parse_count(&p, &devices))
			return ir_errorf(-EINVAL, "expected the devices per node after \"%.*s\"", (int)(p - spec),
					 spec);
	}
	if (p != colon)
		return ir_errorf(-EINVAL, "unexpected \"%.*s\" before ':' (expected NODESxDEVICES)", (int)(colon - p),
				 p);
	if (nodes < 1 || devices < 1)
		return ir_errorf(-EINVAL, "%s count must be at least 1, got 0", nodes < 1 ? "node" : "device");
	if ((long)nodes * devices > MAX_DEVICES)
		return ir_errorf(-EINVAL, "too many devices (at most %d)", MAX_DEVICES);

	const char *kind = colon + 1, *comma = strchr(kind, ',');
	size_t klen = comma ? (size_t)(comma - kind) : strlen(kind);
	char kbuf[64];
	if (klen >= sizeof kbuf)
		return ir_errorf(-EINVAL, "device kind \"%.*s\" is too long", (int)klen, kind);
	memcpy(kbuf, kind, klen);
	kbuf[klen] = 0;
	struct cost_device d;
	int rc = cost_device_preset(kbuf, &d);
	if (rc < 0) {
		/* A bad spec, not a missing file: -EINVAL, same message. */
		char msg[512];
		copy_str(msg, sizeof msg, ir_error());
		return ir_errorf(-EINVAL, "%s", msg);
	}
	group_init(&c->groups[0], nodes, devices, &d);
	c->ngroups = 1;
	for (p = comma; p; p = comma) {
		p++;
		comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if ((rc = apply_option(p, len, &c->groups[0])) < 0)
			return rc;
	}
	return 0;
}

/* ---- the JSON file ------------------------------------------------------ */

struct jctx {
	const char *file;
	char path[96]; /* of the object being read, "nodes[1].device" */
};

__attribute__((format(printf, 2, 3))) static int jerr(const struct jctx *cx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (cx->path[0])
		return ir_errorf(-EINVAL, "%s: %s: %s", cx->file, cx->path, msg);
	return ir_errorf(-EINVAL, "%s: %s", cx->file, msg);
}

/* Every key of o must be in allowed (NULL-terminated). */
static int check_keys(const struct jctx *cx, json_t *o, const char *const *allowed)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v) {
		bool ok = false;
		for (int i = 0; allowed[i] && !ok; i++)
			ok = !strcmp(key, allowed[i]);
		if (ok)
			continue;
		char list[256] = "";
		for (int i = 0; allowed[i]; i++) {
			size_t n = strlen(list);
			snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", allowed[i]);
		}
		return jerr(cx, "unknown key \"%s\" (expected %s)", key, list);
	}
	return 0;
}

/* o[key] as a number when present (*have), else leaves *out. */
static int get_num(const struct jctx *cx, json_t *o, const char *key, double min, double *out, bool *have)
{
	json_t *v = json_object_get(o, key);
	if (have)
		*have = v != NULL;
	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < min || !isfinite(json_number_value(v)))
		return jerr(cx, "\"%s\" must be a number >= %g", key, min);
	*out = json_number_value(v);
	return 0;
}

static int get_int(const struct jctx *cx, json_t *o, const char *key, bool required, int *out)
{
	json_t *v = json_object_get(o, key);
	if (!v) {
		if (required)
			return jerr(cx, "missing \"%s\"", key);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_DEVICES)
		return jerr(cx, "\"%s\" must be an integer >= 1", key);
	*out = (int)json_integer_value(v);
	return 0;
}

static int parse_tflops(struct jctx *cx, json_t *t, struct cost_device *d)
{
	const char *key;
	json_t *v;
	size_t len = strlen(cx->path);
	snprintf(cx->path + len, sizeof cx->path - len, ".tflops");
	if (!json_is_object(t))
		return jerr(cx, "expected an object of precision: TFLOP/s");
	json_object_foreach(t, key, v) {
		enum cost_prec p;
		if (cost_prec_parse(key, &p) < 0)
			return jerr(cx, "unknown key \"%s\" (expected f64, f32, tf32, bf16, f16 or fp8)", key);
		if (!json_is_number(v) || json_number_value(v) < 0 || !isfinite(json_number_value(v) * 1e12))
			return jerr(cx, "\"%s\" must be a number from 0 to 1e296", key);
		d->peak_flops[p] = json_number_value(v) * 1e12;
	}
	cx->path[len] = 0;
	return 0;
}

/* A device object; *kind gets the preset whose links are the defaults ("" if
 * none). */
static int parse_device_obj(struct jctx *cx, json_t *o, struct cost_device *d, char *kind, size_t ksize)
{
	static const char *const keys[] = { "name",        "desc",      "like",   "memory_GB",
					    "memory_GBps", "host_GBps", "tflops", NULL };
	int rc = check_keys(cx, o, keys);
	if (rc < 0)
		return rc;
	json_t *name = json_object_get(o, "name"), *desc = json_object_get(o, "desc"),
	       *like = json_object_get(o, "like"), *tflops = json_object_get(o, "tflops");
	memset(d, 0, sizeof *d);
	kind[0] = 0;
	if (like) {
		if (!json_is_string(like))
			return jerr(cx, "\"like\" must be a preset name");
		if (cost_device_preset(json_string_value(like), d) < 0)
			return jerr(cx, "\"like\": %s", ir_error());
		copy_str(kind, ksize, d->name);
	}
	if (!json_is_string(name) || !json_string_length(name) || json_string_length(name) >= sizeof d->name)
		return jerr(cx, "\"name\" must be a string of 1 to %zu characters", sizeof d->name - 1);
	copy_str(d->name, sizeof d->name, json_string_value(name));
	if (desc && !json_is_string(desc))
		return jerr(cx, "\"desc\" must be a string");
	if (desc)
		copy_str(d->desc, sizeof d->desc, json_string_value(desc));
	else if (!like)
		copy_str(d->desc, sizeof d->desc, d->name);
	bool have_mem, have_bw, have_host;
	double gb = 0, gbps = 0, host = 0;
	if ((rc = get_num(cx, o, "memory_GB", 0, &gb, &have_mem)) < 0 ||
	    (rc = get_num(cx, o, "memory_GBps", 0, &gbps, &have_bw)) < 0 ||
	    (rc = get_num(cx, o, "host_GBps", 0, &host, &have_host)) < 0)
		return rc;
	if (have_host)
		d->host_bw = host * 1e9;
	else if (!like)
		d->host_bw = 32e9; /* PCIe 4.0 x16 */
	if (have_mem)
		d->mem_bytes = gb * 1073741824.0; /* 2^30, as the presets */
	if (have_bw)
		d->mem_bw = gbps * 1e9;
	if (tflops && (rc = parse_tflops(cx, tflops, d)) < 0)
		return rc;
	if (!like && (!have_mem || !have_bw || !tflops))
		return jerr(cx, "a device without \"like\" needs memory_GB, memory_GBps and tflops");
	if (d->mem_bytes <= 0 || d->mem_bw <= 0 || d->host_bw <= 0 || cost_device_peak(d, COST_PREC_FP8) <= 0)
		return jerr(cx, "memory, bandwidth and some peak must be positive");
	if (!isfinite(d->mem_bytes) || !isfinite(d->mem_bw) || !isfinite(d->host_bw))
		return jerr(cx, "memory_GB, memory_GBps or host_GBps is too large");
	return 0;
}

static int parse_group(struct jctx *cx, json_t *o, struct cost_node_group *g)
{
	static const char *const keys[] = { "count",    "devices",           "device",         "nvlink_GBps",
					    "nic_Gbps", "nvlink_latency_us", "nic_latency_us", NULL };
	if (!json_is_object(o))
		return jerr(cx, "expected an object");
	int rc = check_keys(cx, o, keys), count = 1, devices = 0;
	if (rc < 0 || (rc = get_int(cx, o, "count", false, &count)) < 0 ||
	    (rc = get_int(cx, o, "devices", true, &devices)) < 0)
		return rc;

	json_t *dev = json_object_get(o, "device");
	struct cost_device d;
	char kind[32] = "";
	if (json_is_string(dev)) {
		if (cost_device_preset(json_string_value(dev), &d) < 0)
			return jerr(cx, "\"device\": %s", ir_error());
		copy_str(kind, sizeof kind, d.name);
	} else if (json_is_object(dev)) {
		size_t len = strlen(cx->path);
		snprintf(cx->path + len, sizeof cx->path - len, ".device");
		if ((rc = parse_device_obj(cx, dev, &d, kind, sizeof kind)) < 0)
			return rc;
		cx->path[len] = 0;
	} else {
		return jerr(cx, "\"device\" must be a preset name or a device object");
	}
	group_init(g, count, devices, &d);
	if (kind[0])
		default_links(kind, &g->intra, &g->inter);

	/* Given figures replace the defaults; converted by division so that
	 * "5" us is exactly the double nearest 5e-6. */
	double nvlink = 0, nic = 0, nvlink_us = 0, nic_us = 0;
	bool have_nvlink, have_nic, have_nvlink_us, have_nic_us;
	if ((rc = get_num(cx, o, "nvlink_GBps", 0, &nvlink, &have_nvlink)) < 0 ||
	    (rc = get_num(cx, o, "nic_Gbps", 0, &nic, &have_nic)) < 0 ||
	    (rc = get_num(cx, o, "nvlink_latency_us", 0, &nvlink_us, &have_nvlink_us)) < 0 ||
	    (rc = get_num(cx, o, "nic_latency_us", 0, &nic_us, &have_nic_us)) < 0)
		return rc;
	if (!kind[0] && (!have_nvlink || !have_nic))
		return jerr(cx, "device \"%s\" has no default links: give nvlink_GBps and nic_Gbps", d.name);
	if ((have_nvlink && nvlink <= 0) || (have_nic && nic <= 0))
		return jerr(cx, "nvlink_GBps and nic_Gbps must be positive");
	if (!isfinite(nvlink * 1e9) || !isfinite(nic * 1e9))
		return jerr(cx, "nvlink_GBps and nic_Gbps must be below 1e299");
	if (have_nvlink)
		g->intra.bw = nvlink * 1e9 / 2;
	if (have_nic)
		g->inter.bw = nic * 1e9 / 8;
	if (have_nvlink_us)
		g->intra.latency = nvlink_us / 1e6;
	if (have_nic_us)
		g->inter.latency = nic_us / 1e6;
	return 0;
}

static int parse_root(struct jctx *cx, json_t *root, struct cost_cluster *c)
{
	static const char *const keys[] = { "name", "nodes", NULL };
	if (!json_is_object(root))
		return jerr(cx, "expected an object with \"nodes\"");
	int rc = check_keys(cx, root, keys);
	if (rc < 0)
		return rc;
	json_t *name = json_object_get(root, "name"), *nodes = json_object_get(root, "nodes");
	if (name && !json_is_string(name))
		return jerr(cx, "\"name\" must be a string");
	if (name) {
		copy_str(c->name, sizeof c->name, json_string_value(name));
	} else {
		const char *base = strrchr(cx->file, '/');
		copy_str(c->name, sizeof c->name, base ? base + 1 : cx->file);
	}
	if (!json_is_array(nodes) || json_array_size(nodes) < 1 || json_array_size(nodes) > COST_MAX_GROUPS)
		return jerr(cx, "\"nodes\" must be an array of 1 to %d groups", COST_MAX_GROUPS);
	long long total = 0; /* devices: each group's count x devices is up to 2^48 */
	for (size_t i = 0; i < json_array_size(nodes); i++) {
		snprintf(cx->path, sizeof cx->path, "nodes[%zu]", i);
		if ((rc = parse_group(cx, json_array_get(nodes, i), &c->groups[i])) < 0)
			return rc;
		total += (long long)c->groups[i].count * c->groups[i].devices;
	}
	cx->path[0] = 0;
	if (total > MAX_DEVICES)
		return jerr(cx, "%lld devices is too many (at most %d)", total, MAX_DEVICES);
	c->ngroups = (int)json_array_size(nodes);
	cluster_finish(c);
	return 0;
}

static int parse_file(const char *path, struct cost_cluster *c)
{
	struct jctx cx = { .file = path };
	FILE *f = fopen(path, "r");
	if (!f)
		return ir_errorf(-errno, "%s: cannot open: %s", path, strerror(errno));
	json_error_t jerror;
	json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerror);
	fclose(f);
	if (!root)
		return ir_errorf(-EINVAL, "%s:%d:%d: %s", path, jerror.line, jerror.column, jerror.text);
	int rc = parse_root(&cx, root, c);
	json_decref(root);
	return rc;
}

int cost_cluster_parse(const char *spec, struct cost_cluster *c)
{
	size_t n = strlen(spec);
	memset(c, 0, sizeof *c);
	if (access(spec, F_OK) == 0 || (n >= 5 && !strcmp(spec + n - 5, ".json")))
		return parse_file(spec, c);
	copy_str(c->name, sizeof c->name, spec);
	/* Blanks carry no meaning in the short form: "4 x 8 : a100" is
	 * "4x8:a100". */
	char buf[256];
	size_t k = 0;
	for (const char *p = spec; *p && k < sizeof buf - 1; p++)
		if (*p != ' ' && *p != '\t')
			buf[k++] = *p;
	buf[k] = 0;
	int rc = n >= sizeof buf ? ir_errorf(-EINVAL, "too long (at most %zu characters)", sizeof buf - 1)
				 : parse_short(buf, c);
	if (rc < 0) {
		ir_error_prefix("cluster \"%s\"", spec);
		memset(c, 0, sizeof *c);
		return rc;
	}
	cluster_finish(c);
	return 0;
}

/* ---- queries ------------------------------------------------------------ */

static bool link_eq(const struct cost_link *a, const struct cost_link *b)
{
	return a->bw == b->bw && a->latency == b->latency;
}

static bool device_eq(const struct cost_device *a, const struct cost_device *b)
{
	if (strcmp(a->name, b->name) || a->mem_bytes != b->mem_bytes || a->mem_bw != b->mem_bw ||
	    a->host_bw != b->host_bw)
		return false;
	for (int p = 0; p < COST_PREC_COUNT; p++)
		if (a->peak_flops[p] != b->peak_flops[p])
			return false;
	return true;
}

bool cost_cluster_uniform(const struct cost_cluster *c)
{
	for (int i = 1; i < c->ngroups; i++) {
		const struct cost_node_group *a = &c->groups[0], *b = &c->groups[i];
		if (a->devices != b->devices || !device_eq(&a->dev, &b->dev) || !link_eq(&a->intra, &b->intra) ||
		    !link_eq(&a->inter, &b->inter))
			return false;
	}
	return true;
}

static void slower_link(struct cost_link *acc, const struct cost_link *l)
{
	acc->bw = fmin(acc->bw, l->bw);
	acc->latency = fmax(acc->latency, l->latency);
}

void cost_cluster_effective(const struct cost_cluster *c, struct cost_device *d, struct cost_link *intra,
			    struct cost_link *inter, int *devices_per_node)
{
	struct cost_device dv = { 0 };
	struct cost_link li = { 0 }, le = { 0 };
	int dpn = 0;
	if (c->ngroups > 0) {
		const struct cost_node_group *g0 = &c->groups[0];
		dv = g0->dev;
		li = g0->intra;
		le = g0->inter;
		dpn = g0->devices;
		/* Resolved peaks, so a V100 next to an A100 makes bf16 run at
		 * the V100's f32 rate rather than at 0. */
		for (int p = 0; p < COST_PREC_COUNT; p++)
			dv.peak_flops[p] = cost_device_peak(&g0->dev, (enum cost_prec)p);
	}
	bool mixed = false;
	for (int i = 1; i < c->ngroups; i++) {
		const struct cost_node_group *g = &c->groups[i];
		for (int p = 0; p < COST_PREC_COUNT; p++)
			dv.peak_flops[p] = fmin(dv.peak_flops[p], cost_device_peak(&g->dev, (enum cost_prec)p));
		dv.mem_bytes = fmin(dv.mem_bytes, g->dev.mem_bytes);
		dv.mem_bw = fmin(dv.mem_bw, g->dev.mem_bw);
		dv.host_bw = fmin(dv.host_bw, g->dev.host_bw);
		slower_link(&li, &g->intra);
		slower_link(&le, &g->inter);
		dpn = g->devices < dpn ? g->devices : dpn;
		mixed |= strcmp(g->dev.name, dv.name) != 0;
	}
	if (mixed) {
		copy_str(dv.name, sizeof dv.name, "mixed");
		size_t n = 0;
		dv.desc[0] = 0;
		for (int i = 0; i < c->ngroups && n < sizeof dv.desc; i++)
			n += (size_t)snprintf(dv.desc + n, sizeof dv.desc - n, "%s%s", i ? ", " : "slowest of ",
					      c->groups[i].dev.name);
	}
	if (d)
		*d = dv;
	if (intra)
		*intra = li;
	if (inter)
		*inter = le;
	if (devices_per_node)
		*devices_per_node = dpn;
}

void cost_cluster_print(const struct cost_cluster *c, FILE *f)
{
	for (int i = 0; i < c->ngroups; i++) {
		const struct cost_node_group *g = &c->groups[i];
		if (c->cpu)
			fprintf(f, "%d x %d %s, shared memory %.4g GB/s %.4g us\n", g->count, g->devices, g->dev.name,
				g->intra.bw / 1e9, g->intra.latency * 1e6);
		else
			fprintf(f, "%d x %d %s, NVLink %.4g GB/s %.4g us, NIC %.4g GB/s %.4g us\n", g->count,
				g->devices, g->dev.name, g->intra.bw / 1e9, g->intra.latency * 1e6, g->inter.bw / 1e9,
				g->inter.latency * 1e6);
	}
}

/* ---- axes and meshes ---------------------------------------------------- */

int cost_axis_make(const struct cost_cluster *c, int stride, int n, struct cost_axis *ax)
{
	int m;
	memset(ax, 0, sizeof *ax);
	cost_cluster_effective(c, NULL, &ax->intra, &ax->inter, &m);
	if (n < 1 || stride < 1)
		return ir_errorf(-EINVAL, "axis of %d devices with stride %d (both must be at least 1)", n, stride);
	if ((long)stride * n > c->ndevices)
		return ir_errorf(-EINVAL, "axis of %d devices with stride %d spans %ld devices; the cluster has %d", n,
				 stride, (long)stride * n, c->ndevices);
	ax->n = n;
	if (n == 1 || (stride * n <= m && m % (stride * n) == 0)) {
		ax->local = n;
		ax->nodes = 1;
	} else if (stride >= m && stride % m == 0) {
		ax->local = 1;
		ax->nodes = n;
	} else if (stride < m && m < stride * n && m % stride == 0 && n % (m / stride) == 0) {
		ax->local = m / stride;
		ax->nodes = n / ax->local;
	} else {
		ax->n = 0;
		return ir_errorf(-EINVAL,
				 "axis of %d devices with stride %d straddles nodes of %d devices "
				 "unevenly",
				 n, stride, m);
	}
	return 0;
}

int cost_mesh_make(const struct cost_cluster *c, int n0, int n1, struct cost_mesh *m)
{
	int rc;
	memset(m, 0, sizeof *m);
	if (n0 < 1 || n1 < 1 || (long)n0 * n1 > c->ndevices)
		return ir_errorf(-EINVAL, "mesh %dx%d needs %ld devices; the cluster has %d", n0, n1, (long)n0 * n1,
				 c->ndevices);
	if ((rc = cost_axis_make(c, 1, n1, &m->ax[1])) < 0 || (rc = cost_axis_make(c, n1, n0, &m->ax[0])) < 0) {
		ir_error_prefix("mesh %dx%d", n0, n1);
		return rc;
	}
	m->n0 = n0;
	m->n1 = n1;
	return 0;
}
