/*
 * test_cost_comm.c: device presets, clusters (short form and JSON), axes
 * and meshes, and the collective model, each against numbers worked out by
 * hand in the comments (never recomputed through the code under test).
 *
 * Usage: test_cost_comm DIR, DIR holding the example cluster files
 * (tests/clusters).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "tests/tap.h"

#define GIB 1073741824.0
#define US 1e-6
#define REL 1e-9 /* relative tolerance of exact hand numbers */

static const char *clusters_dir = "tests/clusters";

static bool has(const char *s)
{
	return strstr(ir_error(), s) != NULL;
}

/* ---- devices ------------------------------------------------------------ */

static void test_presets(void)
{
	struct cost_device d;
	TAP_OK(cost_device_npresets() == 6 && cost_device_preset_at(6) == NULL && cost_device_preset_at(-1) == NULL,
	       "six presets");
	TAP_OK(cost_device_preset("h100-80g", &d) == 0 && !strcmp(d.name, "h100-80g"), "h100-80g found");
	TAP_NEAR(d.peak_flops[COST_PREC_BF16], 989.4e12, REL, "H100 bf16 dense 989.4 TF");
	TAP_NEAR(d.peak_flops[COST_PREC_FP8], 1978.9e12, REL, "H100 fp8 dense 1978.9 TF");
	TAP_NEAR(d.peak_flops[COST_PREC_TF32], 494.7e12, REL, "H100 tf32 dense 494.7 TF");
	TAP_NEAR(d.peak_flops[COST_PREC_F64], 34e12, REL, "H100 f64 34 TF");
	TAP_NEAR(d.mem_bytes, 85899345920.0, REL, "H100 80 GB = 80 x 2^30 bytes");
	TAP_NEAR(d.mem_bw, 3.35e12, REL, "H100 3.35 TB/s");
	TAP_NEAR(d.host_bw, 64e9, REL, "H100 host copies over PCIe 5.0 x16: 64 GB/s");

	TAP_OK(cost_device_preset("V100", &d) == 0 && !strcmp(d.name, "v100-32g"), "alias V100 -> v100-32g");
	TAP_NEAR(d.mem_bytes, 34359738368.0, REL, "V100 32 GB");
	TAP_OK(d.peak_flops[COST_PREC_BF16] == 0 && d.peak_flops[COST_PREC_TF32] == 0 &&
		       d.peak_flops[COST_PREC_FP8] == 0,
	       "V100 has no bf16/tf32/fp8 hardware");
	TAP_NEAR(cost_device_peak(&d, COST_PREC_BF16), 15.7e12, REL, "V100 runs bf16 at its f32 rate");
	TAP_NEAR(cost_device_peak(&d, COST_PREC_F16), 125e12, REL, "V100 f16 tensor 125 TF");
	TAP_NEAR(cost_device_peak(&d, COST_PREC_FP8), 125e12, REL, "V100 runs fp8 at its f16 rate");
	TAP_NEAR(cost_device_peak(&d, COST_PREC_TF32), 15.7e12, REL, "V100 tf32 falls back to f32");
	TAP_OK(cost_device_preset("v100-16g", &d) == 0 && d.mem_bytes == 16 * GIB && d.mem_bw == 900e9,
	       "v100-16g: 16 GB, 900 GB/s");

	TAP_OK(cost_device_preset("a100-40g", &d) == 0 && d.mem_bw == 1555e9 && d.mem_bytes == 40 * GIB,
	       "a100-40g: 1555 GB/s");
	TAP_OK(cost_device_preset("A100", &d) == 0 && d.mem_bw == 2039e9 && d.mem_bytes == 80 * GIB,
	       "A100 (any case) -> a100-80g: 2039 GB/s");
	TAP_NEAR(d.peak_flops[COST_PREC_TF32], 156e12, REL, "A100 tf32 156 TF");
	TAP_NEAR(d.peak_flops[COST_PREC_F32], 19.5e12, REL, "A100 f32 19.5 TF");
	TAP_NEAR(cost_device_peak(&d, COST_PREC_FP8), 312e12, REL, "A100 runs fp8 at its 16-bit rate");
	TAP_OK(cost_device_preset("h200", &d) == 0 && d.mem_bytes == 141 * GIB && d.mem_bw == 4.8e12 &&
		       d.peak_flops[COST_PREC_BF16] == 989.4e12,
	       "h200 -> h200-141g: 141 GB, 4.8 TB/s, H100 compute");

	TAP_OK(cost_device_preset("b200", &d) == -ENOENT && has("b200") && has("a100-80g") && has("h200-141g"),
	       "unknown device lists the presets: %s", ir_error());

	enum cost_prec p;
	TAP_OK(cost_prec_parse("bf16", &p) == 0 && p == COST_PREC_BF16 && cost_prec_parse("FP32", &p) == 0 &&
		       p == COST_PREC_F32 && !strcmp(cost_prec_name(COST_PREC_FP8), "fp8"),
	       "precision names");
	TAP_OK(cost_prec_parse("f33", &p) == -EINVAL && has("f33"), "bad precision: %s", ir_error());
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_host(void)
{
	struct cost_device d;
	double t0 = now();
	int rc = cost_device_host(2, &d);
	double dt = now() - t0;
	TAP_OK(rc == 0 && d.peak_flops[COST_PREC_F32] > 0 && d.peak_flops[COST_PREC_F64] > 0 && d.mem_bw > 0 &&
		       d.mem_bytes > 0,
	       "host: f32 %.3g, f64 %.3g FLOP/s, %.3g B/s, %.3g B per rank", d.peak_flops[COST_PREC_F32],
	       d.peak_flops[COST_PREC_F64], d.mem_bw, d.mem_bytes);
	TAP_OK(dt < tap_seconds(1.0), "host measured in %.3f s", dt);
	TAP_OK(cost_device_peak(&d, COST_PREC_BF16) == d.peak_flops[COST_PREC_F32], "host bf16 runs at f32");
	TAP_OK(cost_device_host(0, &d) == -EINVAL, "0 ranks rejected: %s", ir_error());
	/* One thread's best short gemm, not an all-thread one: a second
	 * measurement agrees (all-thread figures swung 10x on a loaded host). */
	struct cost_device d2;
	rc = cost_device_host(2, &d) | cost_device_host(2, &d2);
	double q = d.peak_flops[COST_PREC_F32] / d2.peak_flops[COST_PREC_F32];
	TAP_OK(rc == 0 && q > 0.25 && q < 4, "host f32 peak repeatable: %.3g vs %.3g FLOP/s",
	       d.peak_flops[COST_PREC_F32], d2.peak_flops[COST_PREC_F32]);
	/* The host's calibration: sub-microsecond kernel dispatch, not a GPU
	 * launch; the GPU defaults stay as they were. */
	struct cost_calib gpu, host;
	cost_calib_init(&gpu);
	cost_calib_host(&host);
	TAP_OK(gpu.cls[COST_CLASS_DOT].overhead == 3e-6 && gpu.cls[COST_CLASS_ELEMENTWISE].overhead == 2e-6,
	       "GPU defaults: 3 us per dot, 2 us per elementwise kernel");
	bool sub_us = true;
	for (int c = 0; c < COST_CLASS_COUNT; c++)
		sub_us &= c == COST_CLASS_FREE ? host.cls[c].overhead == 0
					       : host.cls[c].overhead > 0 && host.cls[c].overhead < 1e-6;
	TAP_OK(sub_us && host.device[0] == 0, "host defaults: 0 < overhead < 1 us per kernel, free ops free");
	TAP_OK(cost_roofline(&d, &host, COST_CLASS_ELEMENTWISE, COST_PREC_F32, 1, 4) <
		       cost_roofline(&d, &gpu, COST_CLASS_ELEMENTWISE, COST_PREC_F32, 1, 4),
	       "a tiny kernel costs less on the host defaults");
}

/* ---- clusters ----------------------------------------------------------- */

static void test_short_form(void)
{
	struct cost_cluster c;
	TAP_OK(cost_cluster_parse("4x8:a100-80g", &c) == 0 && c.ngroups == 1 && c.nodes == 4 && c.ndevices == 32 &&
		       !c.cpu && c.groups[0].devices == 8 && !strcmp(c.groups[0].dev.name, "a100-80g"),
	       "4x8:a100-80g: 4 nodes, 32 devices");
	/* DGX A100: 600 GB/s NVLink both ways -> 300e9; 200 Gb/s HDR -> 25e9 */
	TAP_OK(c.groups[0].intra.bw == 300e9 && c.groups[0].inter.bw == 25e9 && c.groups[0].intra.latency == 1e-6 &&
		       c.groups[0].inter.latency == 5e-6,
	       "A100 defaults: NVLink 300 GB/s 1 us, NIC 25 GB/s 5 us");
	TAP_OK(!strcmp(c.name, "4x8:a100-80g"), "name is the spec");
	TAP_OK(cost_cluster_parse("2 x 8 : h100, ib = 200Gbps", &c) == 0 && c.ndevices == 16 &&
		       c.groups[0].inter.bw == 25e9,
	       "blanks are ignored");

	TAP_OK(cost_cluster_parse("8:h100", &c) == 0 && c.nodes == 1 && c.ndevices == 8 &&
		       c.groups[0].intra.bw == 450e9 && c.groups[0].inter.bw == 50e9,
	       "8:h100: one node, NVLink 450 GB/s, NIC 400 Gb/s = 50 GB/s");
	TAP_OK(cost_cluster_parse("2X8:v100", &c) == 0 && c.ndevices == 16 && c.groups[0].intra.bw == 150e9 &&
		       c.groups[0].inter.bw == 6.25e9,
	       "DGX-1 V100: NVLink 150 GB/s, 4 x 100 Gb/s per 8 GPUs = 6.25 GB/s");
	TAP_OK(cost_cluster_parse("1x8:h200", &c) == 0 && c.groups[0].intra.bw == 450e9 && c.groups[0].inter.bw == 50e9,
	       "DGX H200 links");

	TAP_OK(cost_cluster_parse("4x8:a100-80g,ib=200gbps,nvlink=600GBps,ib_lat=5us,nvlink_lat=1us", &c) == 0 &&
		       c.groups[0].inter.bw == 25e9 && c.groups[0].intra.bw == 300e9 &&
		       c.groups[0].inter.latency == 5e-6 && c.groups[0].intra.latency == 1e-6,
	       "overrides: 200gbps = 25e9 B/s, nvlink 600GBps = 300e9 a direction");
	TAP_OK(cost_cluster_parse("2x8:h100,ib=100,nvlink=1.8TBps,ib_lat=2000ns,nvlink_lat=0.003ms", &c) == 0 &&
		       c.groups[0].inter.bw == 12.5e9,
	       "bare ib is Gb/s (100 -> 12.5e9)");
	TAP_NEAR(c.groups[0].intra.bw, 900e9, REL, "nvlink 1.8TBps -> 900e9 a direction");
	TAP_NEAR(c.groups[0].inter.latency, 2e-6, REL, "2000ns");
	TAP_NEAR(c.groups[0].intra.latency, 3e-6, REL, "0.003ms");
	TAP_OK(cost_cluster_parse("2x8:h100,ib=50GB/s,nvlink=600", &c) == 0 && c.groups[0].inter.bw == 50e9 &&
		       c.groups[0].intra.bw == 300e9,
	       "ib=50GB/s is bytes; bare nvlink is GB/s");
	TAP_OK(cost_cluster_parse("2x8:h100,ib=400Gb/s,ib_lat=3", &c) == 0 && c.groups[0].inter.bw == 50e9 &&
		       c.groups[0].inter.latency == 3e-6,
	       "400Gb/s = 50e9; bare latency is us");
	TAP_OK(cost_cluster_parse("2x8:h100,ib=800Mbps", &c) == 0 && c.groups[0].inter.bw == 100e6,
	       "800Mbps = 1e8 B/s");
	TAP_OK(cost_cluster_parse("2x8:h100,ib=1.6Tbps", &c) == 0, "1.6Tbps parses");
	TAP_NEAR(c.groups[0].inter.bw, 200e9, REL, "1.6Tbps = 2e11 B/s");

	FILE *f = tmpfile();
	char buf[256] = "";
	cost_cluster_parse("2x8:h100", &c);
	cost_cluster_print(&c, f);
	rewind(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	TAP_OK(!strcmp(buf, "2 x 8 h100-80g, NVLink 450 GB/s 1 us, NIC 50 GB/s 5 us\n"),
	       "print: one line, per-direction figures");
	TAP_OK(cost_cluster_uniform(&c), "one group is uniform");
}

static void test_short_form_errors(void)
{
	struct cost_cluster c;
	TAP_OK(cost_cluster_parse("4x8:b100", &c) == -EINVAL && has("4x8:b100") && has("unknown device") &&
		       has("h100-80g") && has("v100-16g"),
	       "unknown kind lists presets: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x:a100", &c) == -EINVAL && has("4x:a100") && has("devices per node"), "4x:a100: %s",
	       ir_error());
	TAP_OK(cost_cluster_parse("0x8:h100", &c) == -EINVAL && has("node count must be at least 1"), "0x8:h100: %s",
	       ir_error());
	TAP_OK(cost_cluster_parse("4x0:h100", &c) == -EINVAL && has("device count must be at least 1"), "4x0:h100: %s",
	       ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,ib=fast", &c) == -EINVAL && has("ib: bad bandwidth \"fast\""),
	       "ib=fast: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,ib=200Gbx", &c) == -EINVAL && has("200Gbx"), "bad unit: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,ib=-5", &c) == -EINVAL && has("bad bandwidth"), "negative: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,ib_lat=5 hours", &c) == -EINVAL && has("ib_lat: bad time"), "bad time: %s",
	       ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,infiniband=200", &c) == -EINVAL && has("unknown key \"infiniband\"") &&
		       has("nvlink_lat"),
	       "unknown key: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x8:h100,ib", &c) == -EINVAL && has("key=value"), "no value: %s", ir_error());
	TAP_OK(cost_cluster_parse("4x8", &c) == -EINVAL && has("DEVICES : KIND"), "no kind: %s", ir_error());
	TAP_OK(cost_cluster_parse("4y8:h100", &c) == -EINVAL && has("y8"), "4y8: %s", ir_error());
	TAP_OK(cost_cluster_parse("99999999x8:h100", &c) == -EINVAL && has("too many"), "huge: %s", ir_error());
	TAP_OK(cost_cluster_parse("cpu:0", &c) == -EINVAL && has("cpu:N"), "cpu:0: %s", ir_error());
	TAP_OK(c.ngroups == 0 && c.ndevices == 0, "a failed parse leaves an empty cluster");
}

static void test_cpu_cluster(void)
{
	struct cost_cluster c;
	int rc = cost_cluster_parse("cpu:2", &c);
	const struct cost_node_group *g = &c.groups[0];
	TAP_OK(rc == 0 && c.cpu && c.ngroups == 1 && c.nodes == 1 && c.ndevices == 2 && !strcmp(g->dev.name, "cpu"),
	       "cpu:2: one node of 2 ranks");
	/* mem_bw = 2 copy / 2 ranks = copy; link = copy / 2 */
	TAP_NEAR(g->intra.bw, g->dev.mem_bw / 2, REL, "shared-memory link = memcpy rate / 2 (%.3g B/s)", g->intra.bw);
	TAP_OK(g->intra.latency == 1e-6 && g->inter.bw == g->intra.bw && g->inter.latency == g->intra.latency,
	       "cpu: 1 us, inter = intra");
	FILE *f = tmpfile();
	char buf[256] = "";
	cost_cluster_print(&c, f);
	rewind(f);
	buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
	fclose(f);
	TAP_OK(strstr(buf, "1 x 2 cpu, shared memory") != NULL, "cpu print names shared memory");
}

static void test_json(void)
{
	char path[512];
	struct cost_cluster c;
	snprintf(path, sizeof path, "%s/mixed.json", clusters_dir);
	int rc = cost_cluster_parse(path, &c);
	TAP_OK(rc == 0, "mixed.json parses: %s", rc ? ir_error() : "");
	if (rc)
		return;
	const struct cost_node_group *a = &c.groups[0], *v = &c.groups[1];
	TAP_OK(!strcmp(c.name, "lab") && c.ngroups == 2 && c.nodes == 3 && c.ndevices == 20 && !c.cpu,
	       "lab: 2 groups, 3 nodes, 2*8 + 4 = 20 devices");
	TAP_OK(a->count == 2 && a->devices == 8 && !strcmp(a->dev.name, "a100-80g") && a->intra.bw == 300e9 &&
		       a->inter.bw == 25e9 && a->intra.latency == 1e-6 && a->inter.latency == 5e-6,
	       "group 0: a100-80g, 600 GB/s -> 300e9, 200 Gb/s -> 25e9");
	TAP_OK(v->count == 1 && v->devices == 4 && !strcmp(v->dev.name, "mygpu") && v->dev.mem_bytes == 32 * GIB &&
		       v->dev.mem_bw == 900e9 && v->dev.peak_flops[COST_PREC_F16] == 125e12 &&
		       v->dev.peak_flops[COST_PREC_F64] == 7.8e12,
	       "group 1: mygpu like v100-32g (f64 7.8 TF kept from the preset)");
	TAP_NEAR(v->dev.peak_flops[COST_PREC_F32], 15.7e12, REL, "mygpu f32 15.7 TF from the file");
	TAP_OK(v->intra.bw == 150e9 && v->inter.bw == 6.25e9, "group 1 links default to the DGX-1's");
	TAP_OK(!cost_cluster_uniform(&c), "mixed is not uniform");

	struct cost_device d;
	struct cost_link li, le;
	int dpn;
	cost_cluster_effective(&c, &d, &li, &le, &dpn);
	TAP_OK(!strcmp(d.name, "mixed") && strstr(d.desc, "a100-80g") && strstr(d.desc, "mygpu"),
	       "effective device: %s (%s)", d.name, d.desc);
	/* min(19.5, 15.7); bf16: min(312, V100-like f32 15.7); f16 min(312,
	 * 125); fp8: min(A100 16-bit 312, mygpu f16 125) */
	TAP_NEAR(d.peak_flops[COST_PREC_F32], 15.7e12, REL, "effective f32: min(19.5, 15.7)");
	TAP_NEAR(d.peak_flops[COST_PREC_BF16], 15.7e12, REL, "effective bf16: mygpu runs it at f32");
	TAP_OK(d.peak_flops[COST_PREC_F16] == 125e12 && d.peak_flops[COST_PREC_FP8] == 125e12 &&
		       d.peak_flops[COST_PREC_F64] == 7.8e12,
	       "effective f16/fp8 125 TF, f64 7.8 TF: the slowest after fallback");
	TAP_OK(d.mem_bytes == 32 * GIB && d.mem_bw == 900e9, "effective memory 32 GB, 900 GB/s");
	TAP_OK(li.bw == 150e9 && li.latency == 1e-6 && le.bw == 6.25e9 && le.latency == 5e-6 && dpn == 4,
	       "effective links are the slowest, 4 devices per node");

	FILE *f = tmpfile();
	char buf[512] = "";
	cost_cluster_print(&c, f);
	rewind(f);
	buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
	fclose(f);
	TAP_OK(!strcmp(buf, "2 x 8 a100-80g, NVLink 300 GB/s 1 us, NIC 25 GB/s 5 us\n"
			    "1 x 4 mygpu, NVLink 150 GB/s 1 us, NIC 6.25 GB/s 5 us\n"),
	       "mixed print, one line a group");
}

/* Writes text to dir/name, parses it, returns the code. */
static int parse_text(const char *dir, const char *name, const char *text, struct cost_cluster *c)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -999;
	fputs(text, f);
	fclose(f);
	int rc = cost_cluster_parse(path, c);
	unlink(path);
	return rc;
}

static void test_json_errors(void)
{
	char dir[] = "/tmp/pcc_cost_XXXXXX";
	struct cost_cluster c;
	if (!mkdtemp(dir)) {
		TAP_OK(0, "mkdtemp");
		return;
	}
	TAP_OK(parse_text(dir, "bad.json", "{ \"nodes\": [ }\n", &c) == -EINVAL && has("bad.json:1:"),
	       "malformed JSON names file and line: %s", ir_error());
	TAP_OK(parse_text(dir, "top.json", "{ \"nodez\": [] }", &c) == -EINVAL && has("top.json") &&
		       has("unknown key \"nodez\""),
	       "unknown top-level key: %s", ir_error());
	TAP_OK(parse_text(dir, "key.json",
			  "{ \"nodes\": [ { \"devices\": 8, \"device\": \"h100\" },"
			  " { \"devices\": 8, \"device\": \"h100\", \"nvlink_gbps\": 900 } ] }",
			  &c) == -EINVAL &&
		       has("key.json: nodes[1]: unknown key \"nvlink_gbps\"") && has("nvlink_GBps"),
	       "unknown group key names its path: %s", ir_error());
	TAP_OK(parse_text(dir, "dev.json",
			  "{ \"nodes\": [ { \"devices\": 4, \"device\": { \"name\": \"x\", \"like\": \"a100\","
			  " \"tflop\": { } } } ] }",
			  &c) == -EINVAL &&
		       has("nodes[0].device: unknown key \"tflop\""),
	       "unknown device key names its path: %s", ir_error());
	TAP_OK(parse_text(dir, "prec.json",
			  "{ \"nodes\": [ { \"devices\": 4, \"device\": { \"name\": \"x\", \"like\": \"a100\","
			  " \"tflops\": { \"f33\": 1 } } } ] }",
			  &c) == -EINVAL &&
		       has("nodes[0].device.tflops: unknown key \"f33\""),
	       "unknown precision names its path: %s", ir_error());
	TAP_OK(parse_text(dir, "nolinks.json",
			  "{ \"nodes\": [ { \"devices\": 4, \"device\": { \"name\": \"x\", \"memory_GB\": 16,"
			  " \"memory_GBps\": 500, \"tflops\": { \"f32\": 10 } } } ] }",
			  &c) == -EINVAL &&
		       has("no default links"),
	       "a custom device needs links: %s", ir_error());
	TAP_OK(parse_text(dir, "custom.json",
			  "{ \"nodes\": [ { \"count\": 3, \"devices\": 4, \"nvlink_GBps\": 100, \"nic_Gbps\": 100,"
			  " \"device\": { \"name\": \"x\", \"memory_GB\": 16, \"memory_GBps\": 500,"
			  " \"tflops\": { \"f32\": 10 } } } ] }",
			  &c) == 0 &&
		       c.ndevices == 12 && c.groups[0].intra.bw == 50e9 && c.groups[0].inter.bw == 12.5e9 &&
		       c.groups[0].dev.peak_flops[COST_PREC_F32] == 10e12 && !strcmp(c.name, "custom.json") &&
		       c.groups[0].dev.host_bw == 32e9,
	       "a custom device with its links; name defaults to the file's; host copies default to 32 GB/s");
	TAP_OK(parse_text(dir, "host.json",
			  "{ \"nodes\": [ { \"devices\": 4, \"device\": { \"name\": \"x\", \"like\": \"v100\","
			  " \"host_GBps\": 8 } } ] }",
			  &c) == 0 &&
		       c.groups[0].dev.host_bw == 8e9,
	       "host_GBps sets the host copy bandwidth");
	TAP_OK(parse_text(dir, "host0.json",
			  "{ \"nodes\": [ { \"devices\": 4, \"device\": { \"name\": \"x\", \"like\": \"v100\","
			  " \"host_GBps\": 0 } } ] }",
			  &c) == -EINVAL &&
		       has("must be positive"),
	       "a zero host bandwidth: %s", ir_error());
	TAP_OK(parse_text(dir, "nodev.json", "{ \"nodes\": [ { \"device\": \"h100\" } ] }", &c) == -EINVAL &&
		       has("nodes[0]: missing \"devices\""),
	       "missing devices: %s", ir_error());
	TAP_OK(parse_text(dir, "zero.json", "{ \"nodes\": [ { \"devices\": 0, \"device\": \"h100\" } ] }", &c) ==
			       -EINVAL &&
		       has("\"devices\" must be an integer >= 1"),
	       "zero devices: %s", ir_error());
	TAP_OK(parse_text(dir, "kind.json", "{ \"nodes\": [ { \"devices\": 8, \"device\": \"tpu\" } ] }", &c) ==
			       -EINVAL &&
		       has("nodes[0]: \"device\": unknown device \"tpu\""),
	       "unknown preset in a file: %s", ir_error());
	rmdir(dir);
	TAP_OK(cost_cluster_parse("/nonexistent/lab.json", &c) == -ENOENT && has("/nonexistent/lab.json"),
	       "missing file: %s", ir_error());
}

/* ---- axes and meshes ---------------------------------------------------- */

static bool axis_is(const struct cost_axis *ax, int n, int local, int nodes)
{
	return ax->n == n && ax->local == local && ax->nodes == nodes;
}

static void test_axes(void)
{
	struct cost_cluster c;
	struct cost_axis ax;
	cost_cluster_parse("4x8:a100-80g", &c);
	TAP_OK(cost_axis_make(&c, 1, 8, &ax) == 0 && axis_is(&ax, 8, 8, 1) && ax.intra.bw == 300e9 &&
		       ax.inter.bw == 25e9,
	       "stride 1, n 8: in one node");
	TAP_OK(cost_axis_make(&c, 8, 4, &ax) == 0 && axis_is(&ax, 4, 1, 4), "stride 8, n 4: one per node");
	TAP_OK(cost_axis_make(&c, 4, 4, &ax) == 0 && axis_is(&ax, 4, 2, 2), "stride 4, n 4: 2 local on 2 nodes");
	TAP_OK(cost_axis_make(&c, 2, 4, &ax) == 0 && axis_is(&ax, 4, 4, 1), "stride 2, n 4: in one node");
	TAP_OK(cost_axis_make(&c, 1, 16, &ax) == 0 && axis_is(&ax, 16, 8, 2), "stride 1, n 16: 8 on 2 nodes");
	TAP_OK(cost_axis_make(&c, 1, 32, &ax) == 0 && axis_is(&ax, 32, 8, 4), "stride 1, n 32: the whole cluster");
	TAP_OK(cost_axis_make(&c, 5, 1, &ax) == 0 && axis_is(&ax, 1, 1, 1), "n 1 is trivial");
	TAP_OK(cost_axis_make(&c, 3, 4, &ax) == -EINVAL && has("straddles") && has("stride 3"),
	       "stride 3 straddles: %s", ir_error());
	TAP_OK(cost_axis_make(&c, 1, 6, &ax) == -EINVAL && has("straddles"), "6 of 8 straddles: %s", ir_error());
	TAP_OK(cost_axis_make(&c, 8, 5, &ax) == -EINVAL && has("the cluster has 32"), "too long: %s", ir_error());
	TAP_OK(cost_axis_make(&c, 0, 4, &ax) == -EINVAL, "stride 0 rejected");

	struct cost_mesh m;
	TAP_OK(cost_mesh_make(&c, 2, 8, &m) == 0 && m.n0 == 2 && m.n1 == 8 && axis_is(&m.ax[1], 8, 8, 1) &&
		       axis_is(&m.ax[0], 2, 1, 2),
	       "mesh 2x8 on 4x8: axis 1 in node, axis 0 across 2 nodes");
	TAP_OK(cost_mesh_make(&c, 8, 4, &m) == 0 && axis_is(&m.ax[1], 4, 4, 1) && axis_is(&m.ax[0], 8, 2, 4),
	       "mesh 8x4: axis 0 has 2 per node on 4 nodes");
	TAP_OK(cost_mesh_make(&c, 2, 4, &m) == 0 && axis_is(&m.ax[0], 2, 2, 1), "mesh 2x4 fits one node");
	TAP_OK(cost_mesh_make(&c, 3, 4, &m) == -EINVAL && has("mesh 3x4") && has("straddles"), "mesh 3x4: %s",
	       ir_error());
	TAP_OK(cost_mesh_make(&c, 8, 8, &m) == -EINVAL && has("needs 64 devices"), "mesh 8x8: %s", ir_error());

	/* mixed.json: the effective node is the smallest, 4 devices */
	char path[512];
	snprintf(path, sizeof path, "%s/mixed.json", clusters_dir);
	if (cost_cluster_parse(path, &c) == 0)
		TAP_OK(cost_axis_make(&c, 1, 8, &ax) == 0 && axis_is(&ax, 8, 4, 2) && ax.intra.bw == 150e9 &&
			       ax.inter.bw == 6.25e9,
		       "non-uniform: axes use the effective node (4 devices, slowest links)");
}

/* ---- collectives -------------------------------------------------------- */

static double coll(const struct cost_axis *ax, enum cost_coll op, double bytes, enum cost_algo *a)
{
	return cost_collective(ax, op, bytes, a);
}

/* 1x8 A100: n = k = 8, m = 1, bw_i 300e9, lat_i 1 us. */
static void test_one_node(void)
{
	struct cost_cluster c;
	struct cost_axis ax;
	enum cost_algo a;
	cost_cluster_parse("1x8:a100", &c);
	cost_axis_make(&c, 1, 8, &ax);

	/* ring: 5 + 2*7*1 = 19 us + 2 (7/8) 1e9 / 300e9 = 5.8333333 ms */
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e9, &a), 19e-6 + 5.8333333333333333e-3, REL, "1x8 all-reduce 1 GB");
	TAP_OK(a == COST_ALGO_RING, "one node: ring (got %s)", cost_algo_name(a));
	/* small: ring 19 us + 1.75e3/300e9 beats tree 19 us + 2e3/276e9 */
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e3, &a), 19e-6 + 5.8333333333333333e-9, REL, "1x8 all-reduce 1 kB");
	TAP_OK(a == COST_ALGO_RING, "one node, small: still ring");
	/* 5 + 7 = 12 us + (7/8) 1e9 / 300e9 = 2.9166667 ms */
	TAP_NEAR(coll(&ax, COST_ALL_GATHER, 1e9, &a), 12e-6 + 2.9166666666666667e-3, REL, "1x8 all-gather 1 GB");
	TAP_OK(a == COST_ALGO_RING, "all-gather: ring");
	TAP_NEAR(coll(&ax, COST_REDUCE_SCATTER, 1e9, &a), 12e-6 + 2.9166666666666667e-3, REL,
		 "1x8 reduce-scatter 1 GB");
	/* 5 + 1 us + (7/8) 1e9 / 300e9 */
	TAP_NEAR(coll(&ax, COST_ALL_TO_ALL, 1e9, &a), 6e-6 + 2.9166666666666667e-3, REL, "1x8 all-to-all 1 GB");
	TAP_OK(a == COST_ALGO_DIRECT, "all-to-all: direct");
	/* 5 + 7 us + 1e9 / 300e9 */
	TAP_NEAR(coll(&ax, COST_BROADCAST, 1e9, &a), 12e-6 + 3.3333333333333333e-3, REL, "1x8 broadcast 1 GB");
	/* 1 us + 1e9 / 300e9, no launch */
	TAP_NEAR(coll(&ax, COST_SEND_RECV, 1e9, &a), 1e-6 + 3.3333333333333333e-3, REL, "1x8 send/recv 1 GB");
	TAP_OK(a == COST_ALGO_DIRECT, "send/recv: direct");

	/* NCCL's bus bandwidth of a large collective is the link's */
	double t = coll(&ax, COST_ALL_REDUCE, 1e10, NULL);
	TAP_NEAR(cost_busbw(COST_ALL_REDUCE, 8, 1e10, t), 300e9, 1e-3, "all-reduce busbw = bw_i within 0.1%%");
	t = coll(&ax, COST_ALL_GATHER, 1e10, NULL);
	TAP_NEAR(cost_busbw(COST_ALL_GATHER, 8, 1e10, t), 300e9, 1e-3, "all-gather busbw = bw_i within 0.1%%");
	t = coll(&ax, COST_REDUCE_SCATTER, 1e10, NULL);
	TAP_NEAR(cost_busbw(COST_REDUCE_SCATTER, 8, 1e10, t), 300e9, 1e-3, "reduce-scatter busbw = bw_i");

	/* free cases */
	struct cost_axis one;
	cost_axis_make(&c, 1, 1, &one);
	a = COST_ALGO_RING;
	TAP_OK(coll(&one, COST_ALL_REDUCE, 1e9, &a) == 0 && a == COST_ALGO_NONE, "n = 1 is free");
	a = COST_ALGO_RING;
	TAP_OK(coll(&ax, COST_ALL_GATHER, 0, &a) == 0 && a == COST_ALGO_NONE, "0 bytes is free");
	TAP_OK(coll(&ax, COST_SEND_RECV, 1e3, NULL) > 0, "algo pointer may be NULL");
}

/* 4x8 A100: n 32, k 8, m 4; bw_i 300e9, bw_e 25e9, bw_r = min(300e9,
 * 8 x 25e9) = 200e9; a ring pass is 28 intra hops (1 us) + 3 inter (5 us)
 * = 43 us. */
static void test_four_nodes(void)
{
	struct cost_cluster c;
	struct cost_axis ax;
	enum cost_algo a;
	cost_cluster_parse("4x8:a100", &c);
	cost_axis_make(&c, 1, 32, &ax);

	/* 1 MB: ring 5 + 86 = 91 us + 2 (31/32) 1e6/200e9 = 9.6875 us;
	 * tree 5 + 2 (7 + 2*5) = 39 us + 2e6 / (0.92 * 200e9) = 10.869565 us;
	 * hier 2 (5 + 7 (1 + 1e6/8/300e9 us)) + 5 + 6 (5 + 1.25e5/4/25e9) =
	 * 72.33 us. */
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e6, &a), 39e-6 + 2e6 / 184e9, REL, "4x8 all-reduce 1 MB");
	TAP_OK(a == COST_ALGO_TREE, "small on many nodes: tree (got %s)", cost_algo_name(a));
	/* 1 GB: ring 91 us + 9.6875 ms; tree 39 us + 10.869565 ms; hier
	 * 2 (12 us + 2.916667 ms) + 35 us + 7.5 ms = 13.39 ms */
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e9, &a), 91e-6 + 9.6875e-3, REL, "4x8 all-reduce 1 GB");
	TAP_OK(a == COST_ALGO_RING, "large: ring (got %s)", cost_algo_name(a));
	/* crossover: 52 us = B (2/184e9 - 1.9375/200e9) -> B = 43.99 MB */
	coll(&ax, COST_ALL_REDUCE, 40e6, &a);
	TAP_OK(a == COST_ALGO_TREE, "40 MB: tree");
	coll(&ax, COST_ALL_REDUCE, 48e6, &a);
	TAP_OK(a == COST_ALGO_RING, "48 MB: ring");

	/* all-gather 1 GB: ring 5 + 43 us + (31/32) 1e9/200e9 = 4.84375 ms;
	 * hier (5 + 3 (5 us + 1.25 ms)) + (5 + 7 (1 us + 0.4166667 ms)) =
	 * 6.6987 ms */
	TAP_NEAR(coll(&ax, COST_ALL_GATHER, 1e9, &a), 48e-6 + 4.84375e-3, REL, "4x8 all-gather 1 GB");
	TAP_OK(a == COST_ALGO_RING, "all-gather large: ring");
	/* 10 kB: ring 48 us + 0.0484 us; hier 5 + 3 (5 + 0.0125) + 5 + 7 (1 +
	 * 0.0041667) = 32.0667 us */
	TAP_NEAR(coll(&ax, COST_ALL_GATHER, 1e4, &a), 5e-6 + 3 * (5e-6 + 12.5e-9) + 5e-6 + 7 * (1e-6 + 1e4 / 2.4e12),
		 REL, "4x8 all-gather 10 kB");
	TAP_OK(a == COST_ALGO_HIER, "all-gather small across nodes: hierarchical (got %s)", cost_algo_name(a));
	coll(&ax, COST_REDUCE_SCATTER, 1e4, &a);
	TAP_OK(a == COST_ALGO_HIER, "reduce-scatter small: hierarchical");

	/* all-to-all 1 GB: 5 + 5 us + max(7/32 1e9/300e9, 24/32 1e9/25e9 = 30 ms) */
	TAP_NEAR(coll(&ax, COST_ALL_TO_ALL, 1e9, &a), 10e-6 + 30e-3, REL, "4x8 all-to-all 1 GB");
	/* broadcast: 5 + 43 us + 1e9 / 200e9 */
	TAP_NEAR(coll(&ax, COST_BROADCAST, 1e9, &a), 48e-6 + 5e-3, REL, "4x8 broadcast 1 GB");
	/* send/recv across nodes: 5 us + 1e9 / 25e9 */
	TAP_NEAR(coll(&ax, COST_SEND_RECV, 1e9, &a), 5e-6 + 40e-3, REL, "4x8 send/recv 1 GB over the NIC");

	/* one member per node (stride 8): bw_r = min(300e9, 25e9); ring 5 +
	 * 2*3*5 = 35 us + 2 (3/4) 1e6/25e9 = 60 us; tree 5 + 2*2*5 = 25 us +
	 * 2e6/23e9 = 86.96 us; no hierarchy with one local member */
	cost_axis_make(&c, 8, 4, &ax);
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e6, &a), 95e-6, REL, "stride-8 axis all-reduce 1 MB");
	TAP_OK(a == COST_ALGO_RING, "one per node, 1 MB: ring");
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e3, &a), 25e-6 + 2e3 / 23e9, REL, "stride-8 axis all-reduce 1 kB: tree");
	TAP_OK(a == COST_ALGO_TREE, "one per node, 1 kB: tree");
	/* all-to-all with k = 1: 5 + 5 us + (3/4) 1e6 / 25e9 = 30 us */
	TAP_NEAR(coll(&ax, COST_ALL_TO_ALL, 1e6, &a), 40e-6, REL, "stride-8 all-to-all 1 MB");

	/* slow NVLink (24 GB/s quoted -> 12e9): bw_r = 12e9; ring 91 us +
	 * 2 (31/32) 1e9/12e9 = 161.458 ms; tree 39 us + 2e9/11.04e9 = 181.16
	 * ms; hier 2 (5 + 7 us + 7/8 1e9/12e9 = 72.9167 ms) + 35 us + 7.5 ms
	 * = 153.392 ms: hierarchical */
	cost_cluster_parse("4x8:a100,nvlink=24", &c);
	cost_axis_make(&c, 1, 32, &ax);
	TAP_NEAR(coll(&ax, COST_ALL_REDUCE, 1e9, &a), 2 * (12e-6 + 0.875 / 12) + 35e-6 + 7.5e-3, REL,
		 "slow NVLink all-reduce 1 GB");
	TAP_OK(a == COST_ALGO_HIER, "slow NVLink: hierarchical (got %s)", cost_algo_name(a));
}

static void test_names(void)
{
	enum cost_coll op;
	enum cost_algo al;
	TAP_OK(!strcmp(cost_coll_name(COST_REDUCE_SCATTER), "reduce-scatter") &&
		       !strcmp(cost_coll_name(COST_SEND_RECV), "send-recv") &&
		       !strcmp(cost_algo_name(COST_ALGO_HIER), "hierarchical"),
	       "names");
	TAP_OK(cost_coll_parse("AllReduce", &op) == 0 && op == COST_ALL_REDUCE &&
		       cost_coll_parse("all_gather", &op) == 0 && op == COST_ALL_GATHER &&
		       cost_coll_parse("all-to-all", &op) == 0 && op == COST_ALL_TO_ALL,
	       "collective names parse");
	TAP_OK(cost_coll_parse("allreduc", &op) == -EINVAL && has("allreduc"), "bad collective: %s", ir_error());
	TAP_OK(cost_algo_parse("hier", &al) == 0 && al == COST_ALGO_HIER && cost_algo_parse("Tree", &al) == 0 &&
		       al == COST_ALGO_TREE && cost_algo_parse("star", &al) == -EINVAL,
	       "algorithm names parse");
	/* busbw: algbw 1e11 */
	TAP_NEAR(cost_busbw(COST_ALL_REDUCE, 8, 1e9, 1e-2), 1.75e11, REL, "busbw all-reduce: 2 (n-1)/n");
	TAP_NEAR(cost_busbw(COST_ALL_GATHER, 8, 1e9, 1e-2), 8.75e10, REL, "busbw all-gather: (n-1)/n");
	TAP_NEAR(cost_busbw(COST_ALL_TO_ALL, 8, 1e9, 1e-2), 1e11, REL, "busbw all-to-all: 1");
	TAP_OK(cost_busbw(COST_BROADCAST, 8, 1e9, 0) == 0, "busbw of no time is 0");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		clusters_dir = argv[1];
	test_presets();
	test_host();
	test_short_form();
	test_short_form_errors();
	test_cpu_cluster();
	test_json();
	test_json_errors();
	test_axes();
	test_one_node();
	test_four_nodes();
	test_names();
	return tap_done();
}
