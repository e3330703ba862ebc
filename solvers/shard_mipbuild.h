/*
 * shard_mipbuild.h: the MIP of a window under construction, shared by its
 * builder (shard_mipbuild.c: columns, rows, memory runs, no GLPK solving)
 * and its solver (shard_mip.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_MIPBUILD_H
#define PCC_SOLVERS_SHARD_MIPBUILD_H

#include "solvers/shard_mip.h"

/* Growable triplets for glp_load_matrix (1-based, as GLPK wants). */
struct trip {
	int n, cap;
	int *ia, *ja;
	double *ar;
};

/* An outside node that follows window node owner: rpool[off + q] is its
 * strategy when owner takes q. */
struct responder {
	int node, owner;
	int64_t off;
};

/* ---- memory rows ------------------------------------------------------------ */

struct run {
	int a, b;             /* segments */
	int cover, ncover;    /* covering pieces: cov[cover .. cover+ncover-1] */
	int minend, maxstart; /* over the covering pieces */
	shard_i128 rhs;       /* limit less the fixed usage (original form) */
	shard_i128 slack;     /* rhs less the largest usage W can put here */
	shard_i128 cur;       /* W's usage here at the incumbent */
};

/* The model under construction. */
struct build {
	const struct mstate *st;
	const struct shard_model *m;
	const int *nodes;
	int nw;
	int *pos;               /* per model node: index in W or -1 */
	unsigned char *outside; /* per model node: not in W */
	int *xcol;              /* per model strategy of W's nodes: its column or 0 */
	struct trip t;
	int ncols, nrows, cols_cap, rows_cap;
	double *obj, *warm;
	int *rtype; /* per row: GLP_FX or GLP_UP */
	double *rhs;
	bool warm_ok;
	int mem_rows;
	int max_cols;
	int *nin; /* soft boundaries: per model node, its neighbours in W */
	/* memory runs (see add_memory): W's pieces, the runs between their
	 * endpoints, and per run 0 (no row yet), 1 (row added), 2 (never
	 * needed) */
	int np, nr;
	int *pn, *px, *cov, *pn_w; /* pn_w: the piece's node's window position */
	struct run *runs;
	unsigned char *rstate;
	int *ival; /* scratch for one row: 1-based column indices */
	double *dval;
	struct responder *rsp;
	int nrsp, rsp_cap, rpool_cap;
	int *rpool;
	int64_t rpool_n;
};

/* Builds the window's columns and rows (see shard_mip.c for the
 * formulation); *too_big when it would need more than max_cols columns
 * (0: no limit), and then nothing is built. lazy: memory rows only for the
 * runs tight at the incumbent. 0 or -ENOMEM. */
int mip_build(struct build *b, const struct mstate *st, const int *nodes, int nw, int max_cols, bool soft, bool lazy,
	      bool *too_big);
void mip_build_free(struct build *b);
/* Run r's memory row into b->ival/dval (1-based); returns its length,
 * *rhs its bound. */
int mip_run_row(struct build *b, int r, double *rhs);

#endif
