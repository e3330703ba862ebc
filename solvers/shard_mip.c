/*
 * shard_mip.c: the strategy problem on a window of a reduced model as a
 * mixed-integer program, solved by GLPK's branch and cut.
 *
 * The window W is a set of model nodes; every other node keeps its current
 * strategy, so edges to them become node costs and their usage lowers the
 * memory rows' right-hand sides (with soft boundaries, an outside node
 * touching W once follows its best response instead). The whole model is
 * the window of all nodes. Formulation (FORMULATIONS.md, "Intra-op: the
 * strategy problem"):
 *   x[i][q] binary, sum_q x[i][q] = 1 per node;
 *   y[k][a][b] in [0, 1] per finite entry of each edge inside W, tied to x
 *   by row and column sums: sum_b y[k][a][b] = x[u][a] and sum_a
 *   y[k][a][b] = x[v][b] (the tight, marginal form);
 *   memory: one row per run of segments with the same set of W's pieces
 *   live, leaving out rows that cannot bind and rows whose piece set lies
 *   inside another row's with no larger right-hand side (pieces are
 *   intervals, so a row's supersets are the runs around it);
 *   minimize the node costs plus the entries.
 * Forbidden entries get no y column, so they are never chosen. Memory rows
 * are lazy: only those tight at the incumbent go in first; a solution that
 * breaks others gets them added and is solved again (merged nodes carry
 * hundreds of pieces, and all their rows would swamp the LP).
 *
 * Determinism: GLPK runs the same way on the same input; the search is
 * stopped by a count of branch-and-bound nodes (the callback) and of
 * simplex iterations, the time limit being only a backstop at the
 * solver's deadline. The incumbent is handed to GLPK as its first
 * heuristic solution, so the MIP can only return something at least as
 * good; the caller still re-prices the answer exactly before taking it.
 */
#include <errno.h>
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_mipbuild.h"

#define NOMEM() shard_errorf(-ENOMEM, "mip: out of memory")

/* Adds to lp the rows of the runs that the solution pick (strategy per
 * window position) overfills; returns how many. */
static int add_violated(struct build *b, glp_prob *lp, const int *pick)
{
	const struct shard_model *m = b->m;
	int added = 0;
	for (int r = 0; r < b->nr; r++) {
		if (b->rstate[r])
			continue;
		const struct run *run = &b->runs[r];
		shard_i128 lhs = 0;
		for (int y = 0; y < run->ncover; y++) {
			int z = b->cov[run->cover + y];
			lhs += ms_use(m, b->px[z], pick[b->pn_w[z]]);
		}
		if (lhs <= run->rhs)
			continue;
		double rhs;
		int len = mip_run_row(b, r, &rhs), row = glp_add_rows(lp, 1);
		glp_set_row_bnds(lp, row, GLP_UP, rhs, rhs);
		glp_set_mat_row(lp, row, len, b->ival, b->dval);
		b->rstate[r] = 1;
		b->mem_rows++;
		added++;
	}
	return added;
}

/* ---- GLPK ------------------------------------------------------------------- */

/* Seconds as GLPK's millisecond limit, at least 1. */
static int ms_of(double seconds)
{
	double ms = seconds * 1000;
	return ms < 1 ? 1 : ms > 1e9 ? 1000000000 : (int)ms;
}

struct cb_info {
	const double *warm; /* 1-based column values, or NULL */
	bool sent;
	int nodes, limit;
};

static void callback(glp_tree *tree, void *info)
{
	struct cb_info *cb = info;
	switch (glp_ios_reason(tree)) {
	case GLP_IHEUR:
		if (cb->warm && !cb->sent) {
			cb->sent = true;
			glp_ios_heur_sol(tree, cb->warm);
		}
		break;
	case GLP_ISELECT:
		if (++cb->nodes > cb->limit)
			glp_ios_terminate(tree);
		break;
	default:
		break;
	}
}

static glp_prob *make_lp(const struct build *b)
{
	glp_prob *lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	if (b->nrows > 0)
		glp_add_rows(lp, b->nrows);
	if (b->ncols > 0)
		glp_add_cols(lp, b->ncols);
	for (int r = 1; r <= b->nrows; r++)
		glp_set_row_bnds(lp, r, b->rtype[r], b->rhs[r], b->rhs[r]);
	for (int c = 1; c <= b->ncols; c++) {
		glp_set_obj_coef(lp, c, b->obj[c]);
		glp_set_col_bnds(lp, c, GLP_DB, 0.0, 1.0);
	}
	/* x columns are the ones in assignment rows: kinds set by the caller */
	glp_load_matrix(lp, b->t.n, b->t.ia, b->t.ja, b->t.ar);
	/* memory coefficients in bytes next to 0/1 ones: scale, or the
	 * simplex meets singular bases */
	glp_scale_prob(lp, GLP_SF_AUTO);
	return lp;
}

static void set_kinds(glp_prob *lp, const struct build *b)
{
	const struct shard_model *m = b->m;
	for (int w = 0; w < b->nw; w++)
		for (int s = m->off[b->nodes[w]]; s < m->off[b->nodes[w] + 1]; s++)
			if (b->xcol[s])
				glp_set_col_kind(lp, b->xcol[s], GLP_BV);
}

int moves_reserve(struct mip_moves *mv, int n)
{
	if (n <= mv->cap)
		return 0;
	int cap = mv->cap ? mv->cap : 64;
	while (cap < n)
		cap *= 2;
	int *a = realloc(mv->node, sizeof *a * (size_t)cap);
	if (a)
		mv->node = a;
	int *t = realloc(mv->to, sizeof *t * (size_t)cap);
	if (t)
		mv->to = t;
	if (!a || !t)
		return NOMEM();
	mv->cap = cap;
	return 0;
}

void moves_free(struct mip_moves *mv)
{
	free(mv->node);
	free(mv->to);
	memset(mv, 0, sizeof *mv);
}

/* One solve of lp. The LP is always solved here first, under 40% of the
 * time limit when the presolver is to follow: GLPK's MIP presolver solves
 * its own LP ignoring tm_lim, so it only starts once this one has shown
 * that an LP of this size fits. With the presolver the relaxation is much
 * tighter (it strengthens the memory rows' coefficients) but the callback
 * sees transformed columns, so the incumbent cannot be handed over.
 * Later rounds start from the last basis with the dual simplex (only rows
 * were added). */
static void solve(glp_prob *lp, const struct build *b, const struct mip_params *prm, double t0, int round,
		  struct mip_result *res)
{
	double t = shard_now();
	res->solved = res->optimal = false;
	glp_smcp smcp;
	glp_init_smcp(&smcp);
	smcp.msg_lev = prm->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	smcp.tm_lim = ms_of((prm->presolve && round == 0 ? 0.4 : 1.0) * (prm->time_limit - (t - t0)));
	if (prm->it_limit > 0)
		smcp.it_lim = prm->it_limit;
	if (round == 0)
		glp_adv_basis(lp, 0);
	else
		smcp.meth = GLP_DUALP;
	int src = glp_simplex(lp, &smcp);
	if (round > 0 && (src != 0 || glp_get_status(lp) != GLP_OPT)) {
		/* the basis a presolved run leaves behind may be singular */
		smcp.meth = GLP_PRIMAL;
		glp_adv_basis(lp, 0);
		src = glp_simplex(lp, &smcp);
	}
	res->timed_out |= src == GLP_ETMLIM;
	res->iterations = glp_get_it_cnt(lp);
	if (src != 0 || glp_get_status(lp) != GLP_OPT)
		return;
	double left = prm->time_limit - (shard_now() - t0);
	bool presolve = prm->presolve;
	struct cb_info cb = { b->warm_ok && !presolve ? b->warm : NULL, false, 0, prm->node_limit };
	glp_iocp iocp;
	glp_init_iocp(&iocp);
	iocp.msg_lev = prm->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	iocp.cb_func = callback;
	iocp.cb_info = &cb;
	iocp.mip_gap = prm->gap;
	iocp.presolve = presolve ? GLP_ON : GLP_OFF;
	iocp.tm_lim = ms_of(left);
	int irc = glp_intopt(lp, &iocp);
	res->timed_out |= irc == GLP_ETMLIM;
	int status = glp_mip_status(lp);
	res->solved = (irc == 0 || irc == GLP_ETMLIM || irc == GLP_EMIPGAP || irc == GLP_ESTOP) &&
		      (status == GLP_OPT || status == GLP_FEAS);
	res->optimal = res->solved && status == GLP_OPT && (irc == 0 || irc == GLP_EMIPGAP);
	res->iterations = glp_get_it_cnt(lp); /* cumulative per problem object */
}

int shard_mip_window(const struct mstate *st, const int *nodes, int nw, const struct mip_params *prm,
		     struct mip_moves *mv, struct mip_result *res)
{
	const struct shard_model *m = st->m;
	double t0 = shard_now();
	struct build b;
	memset(res, 0, sizeof *res);
	int rc = mip_build(&b, st, nodes, nw, prm->max_cols, prm->soft, prm->lazy, &res->too_big);
	/* memory rows over many pieces make the LP slow whatever the columns */
	if (rc == 0 && prm->max_nnz > 0 && b.t.n > prm->max_nnz)
		res->too_big = true;
	if (rc < 0 || res->too_big) {
		mip_build_free(&b);
		return rc;
	}
	res->cols = b.ncols;
	res->rows = b.nrows;
	res->mem_rows = b.mem_rows;
	glp_term_out(prm->verbose ? GLP_ON : GLP_OFF);
	glp_prob *lp = make_lp(&b);
	set_kinds(lp, &b);
	int *pick = malloc(sizeof *pick * ((size_t)nw + 1));
	if (!pick) {
		glp_delete_prob(lp);
		mip_build_free(&b);
		return NOMEM();
	}
	/* Memory rows are lazy: solve, add the rows the solution breaks,
	 * solve again (the incumbent satisfies every row, so it stays a valid
	 * warm start), a few rounds at most. */
	for (int round = 0; round < 8; round++) {
		solve(lp, &b, prm, t0, round, res);
		for (int w = 0; w < nw && res->solved; w++) {
			int i = nodes[w];
			pick[w] = -1;
			for (int q = 0; q < shard_model_nstrat(m, i); q++)
				if (b.xcol[m->off[i] + q] && glp_mip_col_val(lp, b.xcol[m->off[i] + q]) > 0.5)
					pick[w] = q;
			res->solved = pick[w] >= 0;
		}
		if (!res->solved || add_violated(&b, lp, pick) == 0)
			break;
		res->solved = res->optimal = false;
		res->lazy_rounds++;
	}
	res->mem_rows = b.mem_rows;
	mv->n = 0;
	if (res->solved && (rc = moves_reserve(mv, nw + b.nrsp)) < 0)
		res->solved = false;
	for (int w = 0; w < nw && res->solved; w++) {
		mv->node[mv->n] = nodes[w];
		mv->to[mv->n++] = pick[w];
	}
	for (int r = 0; r < b.nrsp && res->solved; r++) {
		int w = 0;
		while (nodes[w] != b.rsp[r].owner) /* windows are small */
			w++;
		mv->node[mv->n] = b.rsp[r].node;
		mv->to[mv->n++] = b.rpool[b.rsp[r].off + pick[w]];
	}
	free(pick);
	glp_delete_prob(lp);
	mip_build_free(&b);
	res->seconds = shard_now() - t0;
	return 0;
}

int shard_mip_write_model(const struct mstate *st, const char *path)
{
	const struct shard_model *m = st->m;
	int *nodes = malloc(sizeof *nodes * ((size_t)m->n + 1));
	if (!nodes)
		return NOMEM();
	for (int i = 0; i < m->n; i++)
		nodes[i] = i;
	struct build b;
	bool too_big;
	int rc = mip_build(&b, st, nodes, m->n, 0, false, false, &too_big);
	if (rc == 0) {
		glp_term_out(GLP_OFF);
		glp_prob *lp = make_lp(&b);
		set_kinds(lp, &b);
		size_t len = strlen(path);
		bool mps = len > 4 && !strcmp(path + len - 4, ".mps");
		int wrc = mps ? glp_write_mps(lp, GLP_MPS_FILE, NULL, path) : glp_write_lp(lp, NULL, path);
		if (wrc != 0)
			rc = shard_errorf(-EIO, "%s: cannot write the MIP", path);
		glp_delete_prob(lp);
	}
	mip_build_free(&b);
	free(nodes);
	return rc;
}

int shard_mip_write(const struct shard_problem *p, const char *path)
{
	struct shard_model m;
	struct mstate st;
	int rc = shard_problem_check(p);
	if (rc < 0)
		return rc;
	if ((rc = shard_model_plain(p, 1000000000000000000, &m)) < 0)
		return rc;
	if ((rc = ms_init(&st, &m, 0)) == 0) {
		int *zero = calloc((size_t)m.n + 1, sizeof *zero);
		if (!zero) {
			rc = NOMEM();
		} else {
			ms_load(&st, zero);
			rc = shard_mip_write_model(&st, path);
		}
		free(zero);
		ms_free(&st);
	}
	shard_model_free(&m);
	return rc;
}

void shard_thread_exit(void)
{
	glp_free_env();
}
