/*
 * fuzz_cluster.c: libFuzzer target for clusters, `--cluster SPEC`
 * (compiler/cost/cost_cluster.c): the short form and the JSON file.
 *
 * An input with a '{', a newline or a NUL is a JSON file, written to one
 * file per process and read by path; any other is a short-form spec
 * ("4x8:a100-80g,ib=200Gbps"), unless it names an existing file. A cluster
 * that parses must print, and every mesh of its devices that
 * cost_mesh_make accepts must give finite, non-negative collective times.
 * -EINVAL or -ENOENT with one line is a clean refusal.
 *
 * "cpu:N" measures the host (a second of sgemm): the link wraps
 * cost_device_host (-Wl,--wrap, run-fuzz.sh) with the fixed device below.
 */
#include <errno.h>
#include <math.h>

#include "compiler/compiler.h"
#include "tests/fuzz/fuzz.h"

int __wrap_cost_device_host(int ranks, struct cost_device *d);

static char path[4096];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_path(path, sizeof path, "fuzz_cluster", ".json");
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

/* A host of 64 GFLOP/s and 20 GB/s shared by ranks (cost_device_host's form). */
int __wrap_cost_device_host(int ranks, struct cost_device *d)
{
	if (ranks < 1)
		return ir_errorf(-EINVAL, "cpu: %d ranks (expected at least 1)", ranks);
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "cpu");
	d->peak_flops[COST_PREC_F32] = 64e9 / ranks;
	d->peak_flops[COST_PREC_F64] = 32e9 / ranks;
	d->mem_bw = 40e9 / ranks;
	d->host_bw = 20e9 / ranks;
	d->mem_bytes = 64e9 / ranks;
	return 0;
}

static void check_mesh(const struct cost_cluster *c, int n0, int n1)
{
	struct cost_mesh m;
	if (cost_mesh_make(c, n0, n1, &m) < 0) {
		fuzz_check_message("cost_mesh_make", ir_error());
		return;
	}
	for (int a = 0; a < 2; a++)
		for (int op = 0; op < COST_COLL_COUNT; op++) {
			double t = cost_collective(&m.ax[a], (enum cost_coll)op, 1 << 20, NULL);
			if (!(t >= 0) || isinf(t))
				FUZZ_FAIL("mesh %dx%d axis %d: %s of 1 MiB takes %g s", n0, n1, a,
					  cost_coll_name((enum cost_coll)op), t);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cost_cluster c;
	int rc;
	if (memchr(data, '{', size) || memchr(data, '\n', size) || memchr(data, 0, size)) {
		fuzz_write(path, data, size);
		rc = cost_cluster_parse(path, &c);
	} else {
		char *spec = fuzz_cstr(data, size);
		rc = access(spec, F_OK) == 0 ? 1 : cost_cluster_parse(spec, &c);
		free(spec);
		if (rc > 0)
			return 0;
	}
	if (rc < 0) {
		fuzz_check_message("cost_cluster_parse", ir_error());
		return 0;
	}
	if (c.ngroups < 1 || c.ndevices < 1 || c.nodes < 1)
		FUZZ_FAIL("a cluster of %d groups, %d nodes, %d devices", c.ngroups, c.nodes, c.ndevices);
	cost_cluster_print(&c, devnull);
	cost_cluster_uniform(&c);
	int per_node;
	struct cost_device d;
	cost_cluster_effective(&c, &d, NULL, NULL, &per_node);
	for (int p = 0; p < COST_PREC_COUNT; p++)
		if (!(cost_device_peak(&d, (enum cost_prec)p) >= 0))
			FUZZ_FAIL("the effective device's %s peak is %g", cost_prec_name((enum cost_prec)p),
				  cost_device_peak(&d, (enum cost_prec)p));
	check_mesh(&c, 1, 1);
	check_mesh(&c, 1, per_node);
	check_mesh(&c, c.ndevices / per_node, per_node);
	check_mesh(&c, c.ndevices, 1);
	check_mesh(&c, 2, c.ndevices / 2);
	return 0;
}
