/*
 * cost_comm.c: the time of one collective on an axis, in the alpha-beta
 * form of NCCL's own tuning model (src/graph/tuning.cc).
 *
 * An axis has n = k * m members, k on each of m nodes; the intra-node link
 * has bandwidth bw_i and latency lat_i per hop, the network bw_e (one
 * device's NIC share, one direction) and lat_e. B is the per-device byte
 * count of cost.h. Every collective pays BASE_LAT once per launch.
 *
 *   ring      NCCL rings. Within a node bw_r = bw_i; across nodes NCCL
 *             runs one channel per NIC, so the node boundary carries k
 *             NICs: bw_r = min(bw_i, k bw_e). A pass of the ring is n - 1
 *             hops, m - 1 of them between nodes (tuning.cc counts the
 *             inter-node steps apart: nInterSteps), so
 *             hops = (n - m) lat_i + (m - 1) lat_e per pass.
 *               all-reduce      base + 2 hops + 2 (n-1)/n B / bw_r
 *               all-gather,
 *               reduce-scatter  base + hops + (n-1)/n B / bw_r
 *               broadcast       base + hops + B / bw_r (pipelined)
 *   tree      NCCL's double binary tree, all-reduce only: a chain of k in
 *             each node and a tree of depth ceil(log2 m) across nodes,
 *             walked up and down; NCCL's algbw is busbw / 2 and its tree
 *             busbw 0.92 of the ring's (TREE_BW_EFF):
 *               base + 2 ((k-1) lat_i + ceil(log2 m) lat_e)
 *                    + 2 B / (TREE_BW_EFF bw_r)
 *   hier      (m > 1 and k > 1) stages, each a ring launch of its own:
 *               all-reduce      reduce-scatter in the node (B among k),
 *                               all-reduce of B/k among the m peers with
 *                               the same local index (bw_e, lat_e),
 *                               all-gather in the node (B among k)
 *               all-gather      all-gather of B/k among the m peers, then
 *                               all-gather of B in the node
 *               reduce-scatter  the same stages reversed (same cost)
 *   direct    all-to-all: every device sends (k-1)/n of B over NVLink
 *             and (n-k)/n over its NIC at once:
 *               base + lat + max((k-1)/n B / bw_i, (n-k)/n B / bw_e),
 *               lat = lat_e if m > 1 else lat_i
 *             send/recv: lat + B / bw of the link between the two
 *             members (the network when the axis spans nodes), no
 *             launch cost (it is part of a pipeline stage's step).
 *
 * The fastest applicable algorithm wins. Example, 4x8 A100 (bw_i 300 GB/s,
 * bw_e 25 GB/s, 1 us / 5 us), all-reduce of 1 MB on the 32-device axis:
 * ring 5 + 2 (28 + 15) = 91 us + 2 (31/32) 1e6 / 200e9 = 100.7 us; tree
 * 5 + 2 (7 + 10) = 39 us + 2e6 / 184e9 = 49.9 us: tree. At 1 GB the ring
 * (9.78 ms) beats the tree (10.91 ms).
 *
 * Two refinements over the plainest alpha-beta model, both NCCL's: the
 * ring's hops inside a node cost lat_i even on a multi-node axis, and the
 * tree runs at 0.92 of the ring's bus bandwidth. Without the latter a tree
 * would beat the ring on any multi-node axis up to terabyte messages.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <strings.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

/* Launch latency of one collective, s: NCCL's baseLat is 4.4 to 8.4 us for
 * the LL/LL128 protocols and the ring (tuning.cc); 5 us is what a launched
 * kernel costs before any data moves. */
#define BASE_LAT 5e-6

/* NCCL tuning.cc: "if (a == NCCL_ALGO_TREE) busBw = std::min(busBw*.92, ...)". */
#define TREE_BW_EFF 0.92

static const char *const coll_names[COST_COLL_COUNT] = {
	[COST_ALL_REDUCE] = "all-reduce", [COST_ALL_GATHER] = "all-gather", [COST_REDUCE_SCATTER] = "reduce-scatter",
	[COST_ALL_TO_ALL] = "all-to-all", [COST_BROADCAST] = "broadcast",   [COST_SEND_RECV] = "send-recv",
};

static const char *const algo_names[COST_ALGO_COUNT] = {
	[COST_ALGO_NONE] = "none",         [COST_ALGO_RING] = "ring",     [COST_ALGO_TREE] = "tree",
	[COST_ALGO_HIER] = "hierarchical", [COST_ALGO_DIRECT] = "direct",
};

const char *cost_coll_name(enum cost_coll op)
{
	return (unsigned)op < COST_COLL_COUNT ? coll_names[op] : "?";
}

const char *cost_algo_name(enum cost_algo a)
{
	return (unsigned)a < COST_ALGO_COUNT ? algo_names[a] : "?";
}

/* Equal ignoring case, '-' and '_': "all_reduce", "AllReduce", "all-reduce". */
static bool name_eq(const char *a, const char *b)
{
	for (;;) {
		while (*a == '-' || *a == '_')
			a++;
		while (*b == '-' || *b == '_')
			b++;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		if (!*a)
			return true;
		a++;
		b++;
	}
}

int cost_coll_parse(const char *s, enum cost_coll *out)
{
	for (int i = 0; i < COST_COLL_COUNT; i++)
		if (name_eq(s, coll_names[i])) {
			*out = (enum cost_coll)i;
			return 0;
		}
	return ir_errorf(-EINVAL,
			 "unknown collective \"%s\" (expected all-reduce, all-gather, reduce-scatter, "
			 "all-to-all, broadcast or send-recv)",
			 s);
}

int cost_algo_parse(const char *s, enum cost_algo *out)
{
	for (int i = 0; i < COST_ALGO_COUNT; i++)
		if (name_eq(s, algo_names[i]) || (i == COST_ALGO_HIER && name_eq(s, "hier"))) {
			*out = (enum cost_algo)i;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown algorithm \"%s\" (expected none, ring, tree, hierarchical or direct)", s);
}

/* ---- the model ------------------------------------------------------------ */

static double ring_bw(const struct cost_axis *ax)
{
	return ax->nodes == 1 ? ax->intra.bw : fmin(ax->intra.bw, ax->local * ax->inter.bw);
}

/* Latency of one pass around the ring: n - 1 hops, m - 1 between nodes. */
static double ring_hops(const struct cost_axis *ax)
{
	return (ax->n - ax->nodes) * ax->intra.latency + (ax->nodes - 1) * ax->inter.latency;
}

/* A ring over the whole axis moving `passes` (n-1)/n B per device. */
static double ring(const struct cost_axis *ax, double bytes, int passes)
{
	return BASE_LAT + passes * (ring_hops(ax) + (ax->n - 1) * bytes / ax->n / ring_bw(ax));
}

/* A ring of k members over one link (a stage of a hierarchical
 * collective): passes (k-1) hops, passes (k-1)/k B per device. */
static double flat_ring(int k, double bytes, const struct cost_link *l, int passes)
{
	if (k <= 1)
		return 0;
	return BASE_LAT + passes * (k - 1) * (l->latency + bytes / k / l->bw);
}

static double tree(const struct cost_axis *ax, double bytes)
{
	double depth = ceil(log2((double)ax->nodes));
	return BASE_LAT + 2 * ((ax->local - 1) * ax->intra.latency + depth * ax->inter.latency) +
	       2 * bytes / (TREE_BW_EFF * ring_bw(ax));
}

static double hier(const struct cost_axis *ax, enum cost_coll op, double bytes)
{
	int k = ax->local, m = ax->nodes;
	double in_node = flat_ring(k, bytes, &ax->intra, 1);
	if (op == COST_ALL_REDUCE)
		return 2 * in_node + flat_ring(m, bytes / k, &ax->inter, 2);
	return in_node + flat_ring(m, bytes / k, &ax->inter, 1);
}

static double all_to_all(const struct cost_axis *ax, double bytes)
{
	int n = ax->n, k = ax->local;
	double lat = ax->nodes > 1 ? ax->inter.latency : ax->intra.latency;
	double t_in = (k - 1) * bytes / n / ax->intra.bw;
	double t_out = ax->nodes > 1 ? (n - k) * bytes / n / ax->inter.bw : 0;
	return BASE_LAT + lat + fmax(t_in, t_out);
}

/* Keeps the faster of (t, a) in (*best, *algo); ties keep the earlier. */
static void consider(double t, enum cost_algo a, double *best, enum cost_algo *algo)
{
	if (t < *best) {
		*best = t;
		*algo = a;
	}
}

double cost_collective(const struct cost_axis *ax, enum cost_coll op, double bytes, enum cost_algo *algo)
{
	enum cost_algo a = COST_ALGO_NONE;
	double t = 0;
	if (ax->n <= 1 || !(bytes > 0))
		goto out;
	IR_ASSERT(ax->local >= 1 && ax->local * ax->nodes == ax->n);
	IR_ASSERT(ax->intra.bw > 0 && (ax->nodes == 1 || ax->inter.bw > 0));
	bool can_hier = ax->nodes > 1 && ax->local > 1;
	t = INFINITY;
	switch (op) {
	case COST_ALL_REDUCE:
		consider(ring(ax, bytes, 2), COST_ALGO_RING, &t, &a);
		consider(tree(ax, bytes), COST_ALGO_TREE, &t, &a);
		if (can_hier)
			consider(hier(ax, op, bytes), COST_ALGO_HIER, &t, &a);
		break;
	case COST_ALL_GATHER:
	case COST_REDUCE_SCATTER:
		consider(ring(ax, bytes, 1), COST_ALGO_RING, &t, &a);
		if (can_hier)
			consider(hier(ax, op, bytes), COST_ALGO_HIER, &t, &a);
		break;
	case COST_ALL_TO_ALL:
		consider(all_to_all(ax, bytes), COST_ALGO_DIRECT, &t, &a);
		break;
	case COST_BROADCAST:
		consider(BASE_LAT + ring_hops(ax) + bytes / ring_bw(ax), COST_ALGO_RING, &t, &a);
		break;
	case COST_SEND_RECV: {
		const struct cost_link *l = ax->nodes > 1 ? &ax->inter : &ax->intra;
		consider(l->latency + bytes / l->bw, COST_ALGO_DIRECT, &t, &a);
		break;
	}
	case COST_COLL_COUNT:
		IR_ASSERT(!"bad collective");
	}
out:
	if (algo)
		*algo = a;
	return t;
}

double cost_busbw(enum cost_coll op, int n, double bytes, double seconds)
{
	if (!(seconds > 0) || n < 1)
		return 0;
	double algbw = bytes / seconds;
	switch (op) {
	case COST_ALL_REDUCE:
		return algbw * 2 * (n - 1) / n;
	case COST_ALL_GATHER:
	case COST_REDUCE_SCATTER:
		return algbw * (n - 1) / n;
	case COST_ALL_TO_ALL:
	case COST_BROADCAST:
	case COST_SEND_RECV:
		return algbw;
	case COST_COLL_COUNT:
		break;
	}
	IR_ASSERT(!"bad collective");
}
