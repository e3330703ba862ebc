/*
 * intra_explain.c: `pcc MODEL --stage-only --explain`: per op the chosen
 * sharding of its operands and result, its cost, the collectives it causes
 * and the runner-up strategy (the best other choice of its variable with
 * every other variable kept) with how much more it would cost; the same
 * as records, costliest first, for `pcc report --explain` (intra_notes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "compiler/search/intra_internal.h"

static const char *fmt_time(double t, char *buf, size_t n)
{
	if (t >= 1)
		snprintf(buf, n, "%.3f s", t);
	else if (t >= 1e-3)
		snprintf(buf, n, "%.3f ms", t * 1e3);
	else
		snprintf(buf, n, "%.1f us", t * 1e6);
	return buf;
}

static const char *fmt_bytes(double b, char *buf, size_t n)
{
	if (b >= 1 << 30)
		snprintf(buf, n, "%.2f GiB", b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, n, "%.2f MiB", b / (1 << 20));
	else
		snprintf(buf, n, "%.1f KiB", b / 1024);
	return buf;
}

/* local[s] over all strategies: the objective's part that depends on the
 * variable of s's group, every other variable at its choice. */
static double *local_costs(const struct intra_state *st)
{
	const struct shard_problem *p = &st->prob;
	int total = p->strat_off[p->nnodes];
	double *local = ir_calloc((size_t)total + 1, sizeof *local);
	if (!local)
		return NULL;
	for (int s = 0; s < total; s++)
		local[s] = (double)p->cost[s];
	for (int k = 0; k < p->nedges; k++) {
		int a = p->edge_u[k], b = p->edge_v[k];
		int ka = shard_problem_nstrat(p, a), kb = shard_problem_nstrat(p, b);
		const int64_t *m = p->edge_cost + p->edge_off[k];
		for (int s = 0; s < ka; s++)
			local[p->strat_off[a] + s] += (double)m[s * kb + st->choice[b]];
		for (int s = 0; s < kb; s++)
			local[p->strat_off[b] + s] += (double)m[st->choice[a] * kb + s];
	}
	return local;
}

static void put_spec(FILE *f, const struct ir_sharding *s, int rank)
{
	char buf[IR_SHARDING_STR_MAX];
	fputs(ir_sharding_str(s, rank, buf, sizeof buf), f);
}

/* "<S0,R> x <R,S1> -> <S0,S1>" into buf (cut short to fit). */
static const char *strategy_str(const struct intra_unit *x, const struct intra_strat *s, char *buf, size_t n)
{
	const struct ir_node *nd = x->node;
	char one[IR_SHARDING_STR_MAX];
	size_t at = 0;
	buf[0] = 0;
	for (int j = 0; j < nd->nin && at < n; j++) {
		struct ir_sharding sp;
		intra_operand_spec(&x->lab, s, j, nd->in[j]->shape.rank, &sp);
		at += (size_t)snprintf(buf + at, n - at, "%s%s", j ? " x " : "",
				       ir_sharding_str(&sp, nd->in[j]->shape.rank, one, sizeof one));
	}
	if (at < n)
		snprintf(buf + at, n - at, "%s%s", nd->nin ? " -> " : "-> ",
			 ir_sharding_str(&s->out, nd->out[0]->shape.rank, one, sizeof one));
	return buf;
}

static void put_strategy(FILE *f, const struct intra_unit *x, const struct intra_strat *s)
{
	char buf[1024];
	fputs(strategy_str(x, s, buf, sizeof buf), f);
}

/* The best other strategy of unit u's variable (every other variable at
 * its choice), or -1 when it has none of its own. */
static int runner_up(const struct intra_state *st, const double *local, int u)
{
	int gk = st->unit[u].group, best = -1;
	if (st->leader[gk] != u || shard_problem_nstrat(&st->prob, gk) < 2)
		return -1;
	int base = st->prob.strat_off[gk];
	for (int k = 0; k < shard_problem_nstrat(&st->prob, gk); k++)
		if (k != st->choice[gk] && (best < 0 || local[base + k] < local[base + best]))
			best = k;
	return best;
}

static int by_cost(const void *a, const void *b)
{
	const struct intra_note *x = a, *y = b;
	return x->t > y->t ? -1 : x->t < y->t ? 1 : x->node - y->node;
}

int intra_notes(const struct intra_result *r, struct intra_note **out, int *n)
{
	const struct intra_state *st = r->st;
	*out = NULL;
	*n = 0;
	if (!st)
		return ir_errorf(-EINVAL, "no intra-op result to explain");
	double *local = local_costs(st);
	struct intra_note *v = ir_calloc((size_t)st->nunits + 1, sizeof *v);
	if (!local || !v) {
		ir_free(local);
		ir_free(v);
		return ir_errorf(-ENOMEM, "out of memory explaining the plan");
	}
	int k = 0;
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		if (!x->node)
			continue;
		const struct intra_strat *s = intra_chosen(st, u);
		struct intra_note *o = &v[k++];
		o->node = x->node->id;
		snprintf(o->op, sizeof o->op, "%s", ir_op_name(x->node->op));
		snprintf(o->name, sizeof o->name, "%s", x->node->name ? x->node->name : "");
		strategy_str(x, s, o->chosen, sizeof o->chosen);
		o->t = s->t_compute;
		double worst = -1;
		for (int e = 0; e < r->nevents; e++) {
			const struct intra_event *ev = &r->events[e];
			if (ev->node != x->node->id || ev->once)
				continue;
			o->t += ev->t;
			if (ev->t > worst) {
				char b[32];
				worst = ev->t;
				snprintf(o->coll, sizeof o->coll, "%s%s %s over axis %d", ev->bwd ? "backward " : "",
					 cost_coll_name(ev->coll), fmt_bytes(ev->bytes, b, sizeof b), ev->axis);
			}
		}
		int best = runner_up(st, local, u);
		o->delta = NAN;
		if (best >= 0) {
			int gk = x->group, base = st->prob.strat_off[gk];
			strategy_str(x, &x->strat[x->map[best]], o->runner, sizeof o->runner);
			o->delta = (local[base + best] - local[base + st->choice[gk]]) / INTRA_COST_SCALE;
		}
	}
	ir_free(local);
	qsort(v, (size_t)k, sizeof *v, by_cost);
	*out = v;
	*n = k;
	return 0;
}

int intra_explain(const struct ir_graph *g, const struct intra_result *r, FILE *f)
{
	const struct intra_state *st = r->st;
	char b1[32], b2[32], b3[32], b4[32], b5[32];
	if (!st)
		return ir_errorf(-EINVAL, "no intra-op result to explain");
	double *local = local_costs(st);
	if (!local)
		return ir_errorf(-ENOMEM, "out of memory explaining the plan");
	fprintf(f, "intra-op plan on mesh %dx%d: %s per %s, compute %s, communication %s, peak memory %s of %s\n",
		st->env.mesh.n0, st->env.mesh.n1, fmt_time(r->t_total, b1, sizeof b1),
		st->env.train ? "training step" : "forward pass", fmt_time(r->t_compute, b2, sizeof b2),
		fmt_time(r->t_comm, b3, sizeof b3), fmt_bytes(r->mem_peak, b4, sizeof b4),
		fmt_bytes(r->mem_limit, b5, sizeof b5));
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		const struct intra_strat *s = intra_chosen(st, u);
		if (!x->node) {
			if (x->value->kind == IR_VAL_PARAM || x->value->kind == IR_VAL_INPUT) {
				fprintf(f, "%s \"%s\" ", x->value->kind == IR_VAL_PARAM ? "param" : "input",
					x->value->name ? x->value->name : "");
				put_spec(f, &s->out, x->value->shape.rank);
				fputc('\n', f);
			}
			continue;
		}
		const struct ir_node *n = x->node;
		fprintf(f, "%%%d %s", n->out[0]->id, ir_op_name(n->op));
		if (n->name)
			fprintf(f, " \"%s\"", n->name);
		fputs(": ", f);
		put_strategy(f, x, s);
		fprintf(f, "  %s", fmt_time(s->t_compute + s->t_own, b1, sizeof b1));
		int gk = x->group, best = runner_up(st, local, u);
		if (st->leader[gk] != u) {
			const struct intra_unit *l = &st->unit[st->leader[gk]];
			fprintf(f, "  (follows %%%d)", l->node ? l->node->out[0]->id : l->value->id);
		} else if (best >= 0) {
			int base = st->prob.strat_off[gk];
			fputs("  runner-up ", f);
			put_strategy(f, x, &x->strat[x->map[best]]);
			double d = (local[base + best] - local[base + st->choice[gk]]) / INTRA_COST_SCALE;
			fprintf(f, " %s%s", d >= 0 ? "+" : "-", fmt_time(d >= 0 ? d : -d, b1, sizeof b1));
		}
		fputc('\n', f);
		for (int e = 0; e < r->nevents; e++) {
			const struct intra_event *ev = &r->events[e];
			if (ev->node != n->id)
				continue;
			fprintf(f, "    %s%s %s over axis %d", ev->bwd ? "backward " : "", cost_coll_name(ev->coll),
				fmt_bytes(ev->bytes, b1, sizeof b1), ev->axis);
			if (ev->operand >= 0)
				fprintf(f, " for operand %d", ev->operand);
			fprintf(f, ": %s\n", fmt_time(ev->t, b2, sizeof b2));
		}
	}
	ir_free(local);
	return ferror(f) ? ir_errorf(-EIO, "write error") : 0;
}
