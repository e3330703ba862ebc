/*
 * test_sched.c: pipeline schedules (sched_build) and their simulator
 * (sched_simulate): step times and activation peaks against closed forms
 * worked out by hand in the comments and against the cost model
 * (cost_bubble_fraction, cost_inflight, cost_pipeline_time); broken orders
 * rejected with device and op named; every small schedule well formed.
 *
 * Times are small binary fractions (0.25, 0.5, 1, 2, ...) so that the
 * simulator's sums are exact and most checks compare with ==.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/search.h"
#include "tests/tap.h"

#define MAXV 64 /* virtual stages in any test here */

static bool has(const char *s)
{
	return strstr(ir_error(), s) != NULL;
}

/* Equal virtual stages: tf, tb per micro-batch, x per transfer, act bytes
 * per micro-batch. */
static int run(enum cost_sched kind, int p, int m, int v, double tf, double tb, double x, double act,
	       struct sched_sim *r)
{
	double f[MAXV], b[MAXV], xf[MAXV], a[MAXV];
	for (int k = 0; k < p * v; k++) {
		f[k] = tf;
		b[k] = tb;
		xf[k] = x;
		a[k] = act;
	}
	struct sched s;
	int err = sched_build(kind, p, m, v, &s);
	if (err)
		return err;
	struct sched_costs c = { .t_fwd = f, .t_bwd = b, .t_xfer = xf, .act_bytes = a };
	err = sched_simulate(&s, &c, r);
	sched_free(&s);
	return err;
}

/* 1. GPipe and 1F1B, equal stages, no transfer: each stage is busy m (tf +
 * tb) and the pipeline fills and drains over p - 1 more slots, so the step
 * is (m + p - 1)(tf + tb). The bubble relative to the ideal m (tf + tb) is
 * (p - 1)/m, cost_bubble_fraction's definition (sched_sim.bubble_fraction);
 * the idle share of the step is (p - 1)/(m + p - 1). */
static void test_equal_stages(void)
{
	static const int pm[][2] = { { 1, 1 }, { 1, 5 }, { 2, 1 }, { 2, 4 }, { 3, 2 }, { 4, 2 },
				     { 4, 4 }, { 4, 8 }, { 5, 3 }, { 8, 3 }, { 8, 16 } };
	for (int kind = COST_SCHED_GPIPE; kind <= COST_SCHED_1F1B; kind++)
		for (size_t i = 0; i < sizeof pm / sizeof pm[0]; i++) {
			int p = pm[i][0], m = pm[i][1];
			struct sched_sim r = { 0 };
			int err = run(kind, p, m, 1, 1, 2, 0, 0, &r);
			double t[MAXV];
			for (int k = 0; k < p; k++)
				t[k] = 3;
			TAP_OK(err == 0 && r.step_time == (m + p - 1) * 3.0 &&
				       r.step_time == cost_pipeline_time(kind, p, m, 1, t, 0),
			       "%s p=%d m=%d: step %g = (m+p-1)(tf+tb) = %g = cost_pipeline_time",
			       cost_sched_name(kind), p, m, r.step_time, (m + p - 1) * 3.0);
			TAP_OK(fabs(r.bubble_fraction - cost_bubble_fraction(kind, p, m, 1)) < 1e-12 &&
				       fabs(r.idle_fraction - (double)(p - 1) / (m + p - 1)) < 1e-12,
			       "%s p=%d m=%d: bubble %g = cost_bubble_fraction (p-1)/m, idle share %g = (p-1)/(m+p-1)",
			       cost_sched_name(kind), p, m, r.bubble_fraction, r.idle_fraction);
			sched_sim_free(&r);
		}
}

/* 2. Interleaved, v = 2, each chunk half a stage (tf/v, tb/v): the fill
 * and drain shrink to (p - 1)(tf + tb)/v, so the step is (m + (p-1)/v)(tf
 * + tb) and the bubble (p - 1)/(v m), below 1F1B's. */
static void test_interleaved(void)
{
	static const int pm[][2] = { { 2, 2 }, { 2, 4 }, { 4, 4 }, { 4, 8 }, { 4, 16 }, { 8, 8 }, { 8, 16 } };
	for (size_t i = 0; i < sizeof pm / sizeof pm[0]; i++) {
		int p = pm[i][0], m = pm[i][1], v = 2;
		struct sched_sim r1 = { 0 }, ri = { 0 };
		int e1 = run(COST_SCHED_1F1B, p, m, 1, 1, 2, 0, 0, &r1);
		int ei = run(COST_SCHED_INTERLEAVED, p, m, v, 1.0 / v, 2.0 / v, 0, 0, &ri);
		double want = (m + (double)(p - 1) / v) * 3;
		TAP_OK(e1 == 0 && ei == 0 && ri.step_time < r1.step_time && fabs(ri.step_time - want) < 1e-9,
		       "interleaved v=2 p=%d m=%d: step %g = (m+(p-1)/v)(tf+tb) = %g < 1f1b's %g", p, m, ri.step_time,
		       want, r1.step_time);
		TAP_OK(fabs(ri.bubble_fraction - cost_bubble_fraction(COST_SCHED_INTERLEAVED, p, m, v)) < 1e-9,
		       "interleaved v=2 p=%d m=%d: bubble %g = cost_bubble_fraction (p-1)/(v m) = %g", p, m,
		       ri.bubble_fraction, cost_bubble_fraction(COST_SCHED_INTERLEAVED, p, m, v));
		sched_sim_free(&r1);
		sched_sim_free(&ri);
	}
	/* v = 3: the same closed form. */
	static const int pm3[][2] = { { 2, 2 }, { 4, 8 }, { 8, 16 } };
	for (size_t i = 0; i < sizeof pm3 / sizeof pm3[0]; i++) {
		int p = pm3[i][0], m = pm3[i][1];
		struct sched_sim r = { 0 };
		int err = run(COST_SCHED_INTERLEAVED, p, m, 3, 1.0 / 3, 2.0 / 3, 0, 0, &r);
		double want = cost_bubble_fraction(COST_SCHED_INTERLEAVED, p, m, 3);
		TAP_OK(err == 0 && fabs(r.bubble_fraction - want) < 1e-9,
		       "interleaved v=3 p=%d m=%d: bubble %g = (p-1)/(v m) = %g", p, m, r.bubble_fraction, want);
		sched_sim_free(&r);
	}
}

/* 3. Activation peaks, in micro-batches of a whole stage (act 1 per stage,
 * 1/v per chunk): GPipe holds all m; 1F1B stage i runs min(p-i-1, m)
 * warm-up forwards and holds one more in its steady state, min(m, p - i);
 * interleaved holds its warm-up W = min(2(p-i-1) + (v-1)p, m v) chunks plus
 * one, min(W + 1, m v)/v. For v = 2 that is cost_inflight's min(m, p - i)
 * + (p - 1)/v (when m > p); for v = 3 it is i/3 more on stage i (v - 2 more
 * chunks of warm-up per stage than Megatron's accounting). */
static void test_memory(void)
{
	static const int pm[][2] = { { 1, 3 }, { 2, 1 }, { 4, 2 }, { 4, 8 }, { 8, 16 } };
	for (size_t i = 0; i < sizeof pm / sizeof pm[0]; i++)
		for (int kind = COST_SCHED_GPIPE; kind <= COST_SCHED_1F1B; kind++) {
			int p = pm[i][0], m = pm[i][1];
			struct sched_sim r = { 0 };
			int err = run(kind, p, m, 1, 1, 2, 0, 1, &r), ok = err == 0;
			for (int d = 0; ok && d < p; d++) {
				double want = kind == COST_SCHED_GPIPE ? m : (m < p - d ? m : p - d);
				ok = r.peak_bytes[d] == want && want == cost_inflight(kind, p, m, 1, d);
			}
			TAP_OK(ok, "%s p=%d m=%d: stage i holds %s = cost_inflight", cost_sched_name(kind), p, m,
			       kind == COST_SCHED_GPIPE ? "m" : "min(m, p-i)");
			sched_sim_free(&r);
		}
	static const int pmv[][3] = { { 2, 4, 2 }, { 4, 4, 2 }, { 4, 8, 2 }, { 8, 16, 2 }, { 4, 8, 3 }, { 8, 16, 3 } };
	for (size_t i = 0; i < sizeof pmv / sizeof pmv[0]; i++) {
		int p = pmv[i][0], m = pmv[i][1], v = pmv[i][2];
		struct sched_sim r = { 0 };
		int err = run(COST_SCHED_INTERLEAVED, p, m, v, 1, 2, 0, 1.0 / v, &r), ok = err == 0;
		for (int d = 0; ok && d < p; d++) {
			int w = 2 * (p - d - 1) + (v - 1) * p + 1;
			double want = (w < m * v ? w : m * v) / (double)v;
			double model = cost_inflight(COST_SCHED_INTERLEAVED, p, m, v, d);
			ok = fabs(r.peak_bytes[d] - want) < 1e-12 && (v > 2 || r.peak_bytes[d] <= model + 1e-12);
			TAP_DIAG("interleaved p=%d m=%d v=%d stage %d: holds %g, cost_inflight %g", p, m, v, d,
				 r.peak_bytes[d], model);
		}
		TAP_OK(ok, "interleaved p=%d m=%d v=%d: stage i holds min(2(p-i-1)+(v-1)p+1, mv)/v%s", p, m, v,
		       v == 2 ? " <= cost_inflight" : "");
		sched_sim_free(&r);
	}
	/* Static bytes are added on their device. */
	struct sched s;
	double f[2] = { 1, 1 }, b[2] = { 2, 2 }, a[2] = { 3, 5 }, st[2] = { 100, 200 };
	struct sched_costs c = { .t_fwd = f, .t_bwd = b, .act_bytes = a, .static_bytes = st };
	struct sched_sim r = { 0 };
	int err = sched_build(COST_SCHED_1F1B, 2, 4, 1, &s);
	err = err ? err : sched_simulate(&s, &c, &r);
	TAP_OK(err == 0 && r.peak_bytes[0] == 100 + 2 * 3 && r.peak_bytes[1] == 200 + 5,
	       "1f1b p=2 m=4: peaks 100 + 2 x 3 and 200 + 1 x 5 bytes");
	sched_sim_free(&r);
	sched_free(&s);
}

/* 4. Transfers. Two-stage GPipe, one micro-batch: F0 on device 0, the
 * activation crosses (x), F and B on device 1, the gradient crosses (x),
 * B on device 0: tf0 + x + tf1 + tb1 + x + tb0 = 1 + .25 + 2 + 4 + .25 + 8. */
static void test_transfers(void)
{
	struct sched s;
	double f[2] = { 1, 2 }, b[2] = { 8, 4 }, x[1] = { 0.25 };
	struct sched_costs c = { .t_fwd = f, .t_bwd = b, .t_xfer = x };
	struct sched_sim r = { 0 };
	int err = sched_build(COST_SCHED_GPIPE, 2, 1, 1, &s);
	err = err ? err : sched_simulate(&s, &c, &r);
	TAP_OK(err == 0 && r.step_time == 15.5, "gpipe p=2 m=1: step %g = tf0 + x + tf1 + tb1 + x + tb0 = 15.5",
	       r.step_time);
	TAP_OK(r.busy[0] == 9 && r.busy[1] == 6, "busy 9 s and 6 s");
	sched_sim_free(&r);
	sched_free(&s);

	/* Equal stages with x per transfer: GPipe's fill and drain each pay
	 * x per boundary, (m + p - 1)(tf + tb) + 2 (p - 1) x; the cost model
	 * charges the transfer in every slot (it does not overlap sends), so
	 * it may only be higher. */
	for (int kind = COST_SCHED_GPIPE; kind <= COST_SCHED_INTERLEAVED; kind++) {
		int p = 4, m = 8, v = kind == COST_SCHED_INTERLEAVED ? 2 : 1;
		struct sched_sim r0 = { 0 }, rx = { 0 };
		double t[4] = { 3, 3, 3, 3 };
		int e0 = run(kind, p, m, v, 1.0 / v, 2.0 / v, 0, 0, &r0);
		int ex = run(kind, p, m, v, 1.0 / v, 2.0 / v, 0.25, 0, &rx);
		double model = cost_pipeline_time(kind, p, m, v, t, 2 * 0.25);
		TAP_OK(e0 == 0 && ex == 0 && rx.step_time > r0.step_time && rx.step_time <= model + 1e-9,
		       "%s p=4 m=8: transfers of 0.25 s grow the step %g -> %g, within cost_pipeline_time %g",
		       cost_sched_name(kind), r0.step_time, rx.step_time, model);
		if (kind == COST_SCHED_GPIPE)
			TAP_OK(rx.step_time == 11 * 3 + 2 * 3 * 0.25, "gpipe: (m+p-1)(tf+tb) + 2(p-1)x = 34.5");
		sched_sim_free(&r0);
		sched_sim_free(&rx);
	}
}

/* Simulates s with unit costs; returns the error. */
static int sim_unit(const struct sched *s)
{
	double f[MAXV], b[MAXV];
	for (int k = 0; k < s->p * s->v; k++) {
		f[k] = 1;
		b[k] = 2;
	}
	struct sched_costs c = { .t_fwd = f, .t_bwd = b };
	struct sched_sim r = { 0 };
	int err = sched_simulate(s, &c, &r);
	sched_sim_free(&r);
	return err;
}

static void remove_op(struct sched *s, int d, int i)
{
	memmove(&s->ops[d][i], &s->ops[d][i + 1], (size_t)(s->nops[d] - i - 1) * sizeof s->ops[d][0]);
	s->nops[d]--;
}

/* 5. Broken orders, from 1f1b p=2 m=2:
 *   device 0: F0 Sa0>1 F1 Sa1>1 Rg0<1 B0 Rg1<1 B1
 *   device 1: Ra0<0 F0 B0 Sg0>0 Ra1<0 F1 B1 Sg1>0 */
static void test_broken(void)
{
	struct sched s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err = sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	TAP_OK(err == 0 && sched_print(&s, 0, f) == 0 && sched_print(&s, 1, f) == 0 && fflush(f) == 0 &&
		       !strcmp(buf, "F0 Sa0>1 F1 Sa1>1 Rg0<1 B0 Rg1<1 B1\nRa0<0 F0 B0 Sg0>0 Ra1<0 F1 B1 Sg1>0\n"),
	       "1f1b p=2 m=2 prints as worked out by hand");
	TAP_OK(sched_print(&s, 2, f) == -EINVAL && has("not 2"), "print: device out of range");
	fclose(f);
	free(buf);
	/* gpipe p=2 m=2, device 1: both forwards, backwards in reverse. */
	struct sched g;
	f = open_memstream(&buf, &len);
	err = sched_build(COST_SCHED_GPIPE, 2, 2, 1, &g);
	TAP_OK(err == 0 && sched_print(&g, 1, f) == 0 && fflush(f) == 0 &&
		       !strcmp(buf, "Ra0<0 F0 Ra1<0 F1 B1 Sg1>0 B0 Sg0>0\n"),
	       "gpipe p=2 m=2 device 1 prints as worked out by hand");
	fclose(f);
	free(buf);
	sched_free(&g);
	/* interleaved p=2 m=2 v=2: device 0 (stages 0, 2) warms up with all 4
	 * forwards, chunk 0 then chunk 1, backwards chunk 1 first; device 1
	 * (stages 1, 3) with min(2 (p-1-1) + (v-1) p, m v) = 2. */
	f = open_memstream(&buf, &len);
	err = sched_build(COST_SCHED_INTERLEAVED, 2, 2, 2, &g);
	TAP_OK(err == 0 && sched_print(&g, 0, f) == 0 && sched_print(&g, 1, f) == 0 && fflush(f) == 0 &&
		       !strcmp(buf, "F0 Sa0>1 F1 Sa1>1 Ra0.1<1 F0.1 Sa0.1>1 Ra1.1<1 F1.1 Sa1.1>1 "
				    "Rg0.1<1 B0.1 Sg0.1>1 Rg1.1<1 B1.1 Sg1.1>1 Rg0<1 B0 Rg1<1 B1\n"
				    "Ra0<0 F0 Sa0>0 Ra1<0 F1 Sa1>0 Ra0.1<0 F0.1 B0.1 Sg0.1>0 Ra1.1<0 F1.1 B1.1 "
				    "Sg1.1>0 Rg0<0 B0 Sg0>0 Rg1<0 B1 Sg1>0\n"),
	       "interleaved p=2 m=2 v=2 prints as worked out by hand");
	fclose(f);
	free(buf);
	sched_free(&g);
	TAP_OK(sim_unit(&s) == 0, "the intact schedule simulates");

	remove_op(&s, 1, 4); /* device 1's Ra1<0 */
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 0 op 3 (Sa1>1): device 1 never receives it"), "a send never received: %s",
	       ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	struct sched_op t = s.ops[0][1]; /* device 0: F0 Rg0<1 F1 Sa1>1 Sa0>1 B0 ... */
	s.ops[0][1] = s.ops[0][4];
	s.ops[0][4] = t;
	err = sim_unit(&s);
	TAP_OK(err == -EDEADLK && has("device 0 op 1 (Rg0<1) waits for device 1 op 3 (Sg0>0)") &&
		       has("device 1 op 0 (Ra0<0) waits for device 0 op 4 (Sa0>1)"),
	       "waiting for a gradient before sending the activation deadlocks: %s", ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	s.ops[0] = ir_realloc(s.ops[0], (size_t)(s.nops[0] + 1) * sizeof s.ops[0][0]);
	s.ops[0][s.nops[0]++] = s.ops[0][0]; /* F0 again at the end */
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 0 op 8 (F0) repeats op 0"), "a repeated FWD: %s", ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	t = s.ops[1][1]; /* device 1: Ra0<0 B0 F0 ... */
	s.ops[1][1] = s.ops[1][2];
	s.ops[1][2] = t;
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 1 op 1 (B0): backward before its forward, device 1 op 2 (F0)"),
	       "a BWD before its FWD: %s", ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	remove_op(&s, 0, 2); /* F1 */
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 0 never runs F1"), "a missing FWD: %s", ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	t = s.ops[1][0]; /* device 1: F0 Ra0<0 ... */
	s.ops[1][0] = s.ops[1][1];
	s.ops[1][1] = t;
	err = sim_unit(&s);
	TAP_OK(err == -EDEADLK && has("device 1 op 0 (F0): comes before device 1 op 1 (Ra0<0)"),
	       "a FWD before the receive of its input: %s", ir_error());
	sched_free(&s);

	sched_build(COST_SCHED_1F1B, 2, 2, 1, &s);
	s.ops[0][1].peer = 0;
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 0 op 1 (Sa0>0)"), "a send to the wrong peer: %s", ir_error());
	s.ops[0][1].peer = 1;
	s.ops[0][0].mb = 2;
	err = sim_unit(&s);
	TAP_OK(err == -EINVAL && has("device 0 op 0 (F2): micro-batch or chunk out of range"),
	       "a micro-batch out of range: %s", ir_error());
	sched_free(&s);
}

/* 6. Every schedule for p 1..8, m 1..16 (interleaved v = 2, 3 where m % p
 * == 0) simulates with varied stage times, each device running m v FWD
 * and m v BWD. GPipe with tb = 2 tf on every stage meets
 * cost_pipeline_time exactly: each phase is a flow shop of m equal jobs,
 * sum_i t_i + (m - 1) max_i t_i. */
static void test_all(void)
{
	for (int kind = COST_SCHED_GPIPE; kind < COST_SCHED_COUNT; kind++)
		for (int v = kind == COST_SCHED_INTERLEAVED ? 2 : 1; v <= (kind == COST_SCHED_INTERLEAVED ? 3 : 1);
		     v++) {
			int n = 0, bad = 0;
			for (int p = 1; p <= 8; p++)
				for (int m = 1; m <= 16; m++) {
					if (kind == COST_SCHED_INTERLEAVED && m % p)
						continue;
					struct sched s;
					double f[MAXV], b[MAXV], x[MAXV], t[MAXV] = { 0 };
					for (int k = 0; k < p * v; k++) {
						f[k] = 1 + (k * 7 % 5) * 0.25; /* 1 .. 2 */
						b[k] = 2 * f[k];
						x[k] = (k % 3) * 0.125;
						t[k % p] += f[k] + b[k];
					}
					struct sched_costs c = { .t_fwd = f, .t_bwd = b };
					struct sched_sim r = { 0 };
					int err = sched_build(kind, p, m, v, &s);
					err = err ? err : sched_simulate(&s, &c, &r);
					for (int d = 0; !err && d < p; d++) {
						int nf = 0, nb = 0;
						for (int i = 0; i < s.nops[d]; i++) {
							nf += s.ops[d][i].kind == SCHED_FWD;
							nb += s.ops[d][i].kind == SCHED_BWD;
						}
						err = nf != m * v || nb != m * v;
					}
					if (!err && kind == COST_SCHED_GPIPE &&
					    fabs(r.step_time - cost_pipeline_time(kind, p, m, v, t, 0)) > 1e-9)
						err = 1;
					sched_sim_free(&r);
					c.t_xfer = x;
					err = err ? err : sched_simulate(&s, &c, &r);
					sched_sim_free(&r);
					sched_free(&s);
					n++;
					if (err && bad++ == 0)
						TAP_DIAG("%s v=%d p=%d m=%d fails: %s", cost_sched_name(kind), v, p, m,
							 err < 0 ? ir_error() : "op counts or step time");
				}
			TAP_OK(bad == 0,
			       "%s v=%d: %d schedules simulate with and without transfers, m v FWD and BWD per device%s",
			       cost_sched_name(kind), v, n,
			       kind == COST_SCHED_GPIPE ? ", step = cost_pipeline_time" : "");
		}
}

/* 7. sched_build's errors. */
static void test_build_errors(void)
{
	struct sched s;
	TAP_OK(sched_build(COST_SCHED_INTERLEAVED, 4, 10, 2, &s) == -EINVAL &&
		       has("10 micro-batches is not a multiple of the 4 pipeline stages; nearest valid: 8 or 12"),
	       "interleaved m=10 p=4: %s", ir_error());
	TAP_OK(sched_build(COST_SCHED_INTERLEAVED, 4, 3, 2, &s) == -EINVAL && has("nearest valid: 4") && !has(" or "),
	       "interleaved m=3 p=4: %s", ir_error());
	TAP_OK(sched_build(COST_SCHED_INTERLEAVED, 4, 8, 1, &s) == -EINVAL && has("at least 2"), "interleaved v=1: %s",
	       ir_error());
	TAP_OK(sched_build(COST_SCHED_1F1B, 0, 8, 1, &s) == -EINVAL && has("0 pipeline stages"), "p=0: %s", ir_error());
	TAP_OK(sched_build(COST_SCHED_GPIPE, 2, 0, 1, &s) == -EINVAL && has("0 micro-batches"), "m=0: %s", ir_error());
	TAP_OK(sched_build(COST_SCHED_GPIPE, 2, 4, 2, &s) == -EINVAL && has("interleaved"), "gpipe v=2: %s",
	       ir_error());
	sched_free(&s);

	/* Every allocation failing in turn: -ENOMEM, nothing leaked (valgrind). */
	bool ok = true;
	for (long n = 0; n < 16; n++) {
		ir_alloc_fail_after(n);
		int err = sched_build(COST_SCHED_1F1B, 4, 4, 1, &s);
		if (err == 0) {
			err = sim_unit(&s);
			sched_free(&s);
		}
		ok = ok && (err == 0 || err == -ENOMEM);
	}
	ir_alloc_fail_after(-1);
	TAP_OK(ok, "allocation failures give -ENOMEM");
}

int main(void)
{
	test_equal_stages();
	test_interleaved();
	test_memory();
	test_transfers();
	test_broken();
	test_all();
	test_build_errors();
	return tap_done();
}
