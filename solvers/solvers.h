/*
 * solvers.h: pcc's solver library, the one header that crosses into other
 * modules. Solvers see plain arrays, never the IR: the compiler lowers its
 * graph into a struct shard_problem, a solver returns one strategy index per
 * node, and shard_evaluate re-checks every answer independently.
 *
 * Errors: functions return 0 or a negative errno-style code and leave a
 * one-line message (file, JSON path, what was expected) in shard_error().
 * Library code never exits or prints.
 */
#ifndef PCC_SOLVERS_H
#define PCC_SOLVERS_H

#include <stdbool.h>
#include <stdint.h>

/* Exact sums of int64 costs and usages (tens of thousands of terms up to
 * 2^63 each) need 128 bits; __extension__ keeps -Wpedantic quiet. */
__extension__ typedef __int128 shard_i128;

/* Buffer size that holds any shard_i128 in decimal, sign and NUL included. */
#define SHARD_I128_STRLEN 42

const char *shard_error(void); /* the last error message; never NULL */
/* Frees the calling thread's GLPK state; a thread that ran shard_solve
 * calls it before it returns. */
void shard_thread_exit(void);
/* For tests: the solvers' clock runs `scale` times as fast as the wall
 * clock from now on (1: back to its pace), as a machine that much slower
 * or more loaded would see the time limits. Not thread-safe; GLPK's own
 * time limits keep the wall clock. */
void shard_clock_scale(double scale);
/* Writes v in decimal into buf (SHARD_I128_STRLEN bytes); returns buf. */
char *shard_i128_str(shard_i128 v, char *buf);

/* ---- the intra-op strategy problem ---------------------------------------
 *
 * Pick one strategy per node minimizing the sum of the chosen node costs plus,
 * per edge (u, v), the matrix entry of the chosen pair, such that at every
 * integer time point t the usages of the nodes live at t (lo <= t < hi) sum to
 * at most usage_limit. Costs are in the producer's units (pcc: seconds scaled
 * to integers; IOPDDL: opaque), usages in bytes per device.
 */
struct shard_problem {
	int nnodes;
	/* Strategies of node i are the global indices strat_off[i] ..
	 * strat_off[i+1]-1 (nnodes+1 entries, strat_off[0] = 0); every node
	 * has at least one. */
	int *strat_off;
	int64_t *cost;  /* per global strategy: node cost */
	int64_t *usage; /* per global strategy: memory in bytes, >= 0 */
	/* Per node, the half-open live interval [lo, hi) in time steps; lo ==
	 * hi (e.g. [0, 0]) means the node never holds memory. lo <= hi. */
	int64_t *lo, *hi;

	int nedges;
	int *edge_u, *edge_v; /* per edge: its endpoints, node indices */
	/* Edge k's matrix is edge_cost[edge_off[k] .. edge_off[k+1]-1], row
	 * major, |S_u| x |S_v|: entry su * |S_v| + sv (nedges+1 entries). */
	int64_t *edge_off;
	int64_t *edge_cost;

	int64_t usage_limit; /* bytes per device at any time point */
	char *name;          /* the instance's name, or NULL */
};

static inline int shard_problem_nstrat(const struct shard_problem *p, int i)
{
	return p->strat_off[i + 1] - p->strat_off[i];
}

/* Frees the arrays of p (not p itself) and zeroes it; safe on a zeroed or
 * already freed problem. */
void shard_problem_free(struct shard_problem *p);

/* Reads an IOPDDL contest instance (JSON, or gzip-compressed JSON: zlib
 * reads both) into p, validating it fully. On error p is left zeroed and the
 * message names the file and the JSON path, e.g. "B.json.gz:
 * problem.edges.costs[12]: has 6 entries, expected 3 x 4 = 12". */
int shard_problem_read_iopddl(const char *path, struct shard_problem *p);

/* Checks the invariants above (for problems built in memory); returns 0 or
 * -EINVAL with the first broken one in shard_error(). */
int shard_problem_check(const struct shard_problem *p);

/* ---- the independent evaluator ------------------------------------------- */

struct shard_eval {
	shard_i128 cost;         /* exact: node costs + edge costs */
	bool feasible;           /* no time point over usage_limit */
	shard_i128 peak_usage;   /* bytes, the largest sum over time points */
	int64_t peak_time;       /* the first time point at the peak (0 if none) */
	int64_t over_points;     /* how many integer time points exceed the limit */
	int64_t first_over_time; /* the first such time point; valid if over_points */
};

/* Evaluates choice (one strategy index per node, local to the node: 0 ..
 * |S_i|-1) on p. Returns 0, or -EINVAL naming the first out-of-range choice.
 * An infeasible choice is not an error: out->feasible says so. Uses a sweep
 * over the interval endpoints, so huge time ranges cost nothing extra. */
int shard_evaluate(const struct shard_problem *p, const int *choice, struct shard_eval *out);

/* ---- the heuristic -------------------------------------------------------
 *
 * Greedy start, memory repair, then local search (single-node and edge-pair
 * moves with exact deltas, memory kept feasible with a max segment tree over
 * the compressed time points) and seeded perturbation rounds. Deterministic:
 * the result depends only on p and the parameters; the time limit can only
 * stop the fixed sequence of rounds early.
 */
struct shard_heuristic_params {
	double time_limit; /* seconds of wall time, > 0 */
	uint64_t seed;     /* of the perturbation rounds */
	int max_rounds;    /* perturbation rounds after the first descent */
	bool verbose;      /* progress lines on stderr */
	/* Costs at or above this mark impossible combinations: strategies
	 * they rule out are pruned before the search (INT64_MAX: none are).
	 * The evaluator still counts them exactly. */
	int64_t forbidden_cost;
	/* Optional (NULL: none): set to whether the time limit cut the
	 * rounds short (an output in the parameters, as shard_solve's stats). */
	bool *timed_out;
};

void shard_heuristic_params_init(struct shard_heuristic_params *prm);

/* Writes the best assignment found into choice (nnodes entries) and its
 * evaluation into out. Returns 0 with a feasible choice; -ENOSPC when no
 * assignment fits the usage limit (proved: even the least-usage strategy of
 * every node does not fit), choice then holding that least-usage assignment;
 * -EINVAL on a bad problem; -ENOMEM. */
int shard_heuristic(const struct shard_problem *p, const struct shard_heuristic_params *prm, int *choice,
		    struct shard_eval *out);

/* ---- the solver ------------------------------------------------------------
 *
 * Exact reductions first (solvers/shard_reduce.c: forbidden strategies
 * pruned, single-strategy nodes folded into their neighbours, nodes that
 * a neighbour's strategy determines merged into it, leaves and memory-free
 * chain nodes eliminated, dominated strategies removed: the contest
 * instances shrink from 30-65 thousand nodes to a few hundred, a few with
 * no forbidden entries to 7-16 thousand; then of the connected components
 * that carry no memory, identical ones solved once, shard_dedup.c), then
 * local search over the reduced problem, then Lagrangian relaxation of
 * the memory limit (prices per time segment by subgradient steps, the
 * priced problem solved by TRW-S message passing and descent, each answer
 * repaired into the limit), then exact MIP solves (GLPK) of the whole reduced problem
 * when it is small, or of windows of it around the incumbent
 * (large-neighbourhood search) when it is not. The heuristic above is the
 * fallback. Deterministic when max_rounds and lns_windows are finite
 * ("bounded": every phase then ends at a count of rounds, iterations,
 * windows or branch-and-bound nodes, and the time limit is a backstop for
 * the whole solve only) and the time limit is not reached, which
 * stats->timed_out reports: the result then depends on p and the
 * parameters only, not on the machine's speed or load. With the defaults
 * (unbounded) the phases share the time limit, so a faster machine gets
 * further.
 */
struct shard_solve_params {
	double time_limit;      /* seconds of wall time, > 0 (bounded: a backstop) */
	double mip_gap;         /* relative gap at which a MIP may stop */
	uint64_t seed;          /* of the randomized search steps */
	bool verbose;           /* progress lines on stderr */
	int64_t forbidden_cost; /* as in shard_heuristic_params */
	/* Reduced problems with at most this many MIP columns (and few
	 * memory pieces) are solved whole; larger ones by windows. */
	int mip_max_cols;
	int lns_window;  /* nodes per window (a starting size) */
	int lns_windows; /* windows at most */
	/* Simplex iterations over all windows at most (0: no limit): a count
	 * that ends the windows at about the same time on any idle machine
	 * (4000-7600 per second on 11-14k-column windows on a 2-core host),
	 * and later on a loaded one, not earlier. */
	int64_t lns_iterations;
	/* Windows in a row that improve nothing after which the windows end
	 * (0: no such end): past them a compiler's stage hardly improves. */
	int lns_patience;
	int mip_node_limit; /* branch-and-bound nodes per MIP solve */
	/* Simplex iterations of the whole problem's root LP (0: none, the
	 * time limit's share only). */
	int mip_it_limit;
	int max_rounds; /* local search rounds per phase */
	/* Share of the time for the Lagrangian phase (problems too big for
	 * one MIP); bounded, it ends after max_rounds / 20 + 1 iterations
	 * and this share is not used. */
	double relax_share;
	/* Bounded: Lagrangian iterations at most (0: max_rounds / 20 + 1). */
	int lagr_iters;
	/* Return as soon as the whole problem's MIP is proved optimal
	 * (else search on until the time limit). */
	bool stop_when_optimal;
	/* Share of the time for first solving without the memory limit: a
	 * proved optimum that happens to fit is the answer (0: skip; bounded,
	 * only whether it is > 0 matters). */
	double memory_free_share;
	/* Solve each class of identical memory-free components of the reduced
	 * problem once (exact; false: search them all, for comparisons). */
	bool dedup;
	/* Optional (NULL: none): filled with what the solve did (an output
	 * in the parameters so that the call keeps its signature). */
	struct shard_solve_stats *stats;
	/* Optional (NULL: none): called with each feasible assignment of the
	 * whole problem that costs less than the last one reported, as the
	 * solve finds them (the least-usage start first, then at the end of
	 * each phase and every 0.1 s at most within one), so that a caller
	 * with a hard deadline can answer with the best so far whatever phase
	 * the deadline interrupts. choice (p->nnodes entries) and ev are valid
	 * during the call only. Never changes what the solve does. */
	void (*incumbent)(void *ctx, const int *choice, const struct shard_eval *ev);
	void *incumbent_ctx;
};

void shard_solve_params_init(struct shard_solve_params *prm);

/* What shard_solve did, for the model that gave the answer (the
 * memory-free one when memory_free says so). */
struct shard_solve_stats {
	int reduced_nodes; /* nodes after the reductions */
	int components;    /* connected components among them */
	int distinct;      /* memory-free components solved: one per class of identical ones */
	int copies;        /* memory-free components that took their class's answer */
	int solved_nodes;  /* nodes searched: reduced_nodes less the copies' */
	bool memory_free;  /* the answer is the optimum without the limit, which fits */
	/* The time limit stopped some phase before its counted work was done,
	 * so the answer may depend on the machine's speed and load (with the
	 * defaults' unbounded rounds and windows, the time limit is the plan:
	 * this is then usually true). */
	bool timed_out;
};

/* Same conventions as shard_heuristic: 0 with a feasible choice and its
 * evaluation in out; -ENOSPC when no assignment fits the usage limit
 * (choice then holds the least-usage assignment); -EINVAL; -ENOMEM. */
int shard_solve(const struct shard_problem *p, const struct shard_solve_params *prm, int *choice,
		struct shard_eval *out);

/* Writes the MIP of the whole, unreduced problem in CPLEX LP format (MPS
 * when path ends in ".mps"): binaries per strategy, pair variables per
 * finite edge entry with row and column sums, one memory row per maximal
 * live set (runs of time contained in another run with no larger room
 * left out). Forbidden entries are left out; the objective omits no
 * constant, so its optimum is the problem's optimal cost. 0, -EINVAL,
 * -ENOMEM or -EIO. */
int shard_mip_write(const struct shard_problem *p, const char *path);

/* ---- the stage DP (solvers/stage_dp.c) ------------------------------------
 *
 * Alpa's inter-op pass over plain cost tables: cut L layers into contiguous
 * stages, give each a sub-mesh kind and a logical-mesh config, use every
 * device exactly once, and minimize the step time for B micro-batches,
 * T = sum_i t_i + (B - 1) max_i t_i. Exact (checked against brute force);
 * deterministic (ties: the smaller slowest stage, then fewer stages).
 */

/* Sub-mesh shapes (rows = nodes, cols = devices per node) of a cluster of
 * nodes x per_node devices: (1,1), (1,2), (1,4) ... powers of two below
 * per_node, then (1,per_node), (2,per_node) ... (nodes,per_node). Writes
 * the first max of them into rows[]/cols[] and returns how many it wrote
 * (at most max; max = log2(per_node) + nodes + 1 always suffices), or
 * -EINVAL when nodes or per_node is below 1. */
int stage_submeshes(int nodes, int per_node, int *rows, int *cols, int max);

struct stage_dp_problem {
	int nlayers;             /* L >= 1 */
	int nmeshes;             /* sub-mesh kinds, index m */
	const int *mesh_devices; /* [nmeshes] devices of kind m, >= 1 */
	int nconfigs;            /* logical-mesh choices per sub-mesh (max over m); index c */
	int ndevices;            /* every device is used: the stages' devices sum to this */
	int nmicro;              /* B micro-batches >= 1 */
	/* Per-micro-batch latency (s) of a stage running layers l..r
	 * (inclusive, 0-based) on sub-mesh m with config c:
	 * t[((l * L + r) * nmeshes + m) * nconfigs + c], for l <= r;
	 * INFINITY (or any non-finite or negative value) means not available. */
	const double *t;
	/* Optional (NULL: none): transfer time (s per micro-batch) of the
	 * values crossing the cut after layer r (0 <= r < L-1) when the sending
	 * stage is on mesh kind m: xfer[r * nmeshes + m]; added to the latency
	 * of the stage that ends at r. Negative or non-finite: not available. */
	const double *xfer;
	/* Optional (NULL: everything fits): whether stage (l, r, m, c) fits
	 * device memory when `after` stages follow it in the pipeline (1F1B
	 * holds after + 1 micro-batches of activations). stage_dp_solve asks
	 * once per available stage and after < min(L, max_stages). */
	bool (*fits)(void *ctx, int l, int r, int m, int c, int after);
	void *ctx;
	int max_stages; /* 0: no limit (else at most this many stages) */
	int min_stages; /* 0: none (else at least this many stages, at most nlayers;
			 * equal to max_stages: exactly that many) */
};

struct stage_dp_stage {
	int first, last;  /* layers first..last, inclusive */
	int mesh, config; /* sub-mesh kind and logical-mesh config */
	double t;         /* s per micro-batch, the outgoing transfer included */
};

struct stage_dp_result {
	double step_time; /* s: sum_i t_i + (B - 1) * max_i t_i */
	double t_max;     /* s: the slowest stage's latency */
	int nstages;
	struct stage_dp_stage *stages; /* [nstages], in pipeline order; malloc'd */
	long long evaluated;           /* t_max bounds tried (brute: plans), for benchmarks */
};

/* Fills r (zeroed on error) and returns 0; -ENOSPC when no assignment
 * exists (the message says whether latencies or memory rule it out);
 * -EINVAL on bad input, including min_stages above nlayers or max_stages
 * and an ndevices that is no sum of k sub-mesh sizes for any stage count
 * k allowed (min_stages <= k <= min(L, max_stages)); -ENOMEM. Messages in
 * shard_error(). */
int stage_dp_solve(const struct stage_dp_problem *p, struct stage_dp_result *r);
/* Frees r's stages and zeroes it; safe on a zeroed result. */
void stage_dp_result_free(struct stage_dp_result *r);
/* The same answer by trying every split, mesh and config (tests only:
 * exponential in L). Same return codes. */
int stage_dp_brute(const struct stage_dp_problem *p, struct stage_dp_result *r);

#endif
