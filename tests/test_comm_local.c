/*
 * test_comm_local.c: the in-process communication table
 * (runtime/comm_local.c) on 4 threads, one a rank: every collective of
 * comm.h on the whole world and on a communicator of two, messages in
 * order of their (peer, tag), started operations waited for out of order,
 * ctl_min, each against the values worked out here by hand; then two ranks
 * that each wait for the other's message fail with -EDEADLK within
 * seconds, as does a rank in a collective the others never join.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "runtime/comm.h"
#include "tests/tap.h"

#define N 4

static int world_ranks[N] = { 0, 1, 2, 3 }, pair_ranks[2] = { 3, 1 }; /* comm 1: rank 3 first */
static struct plan_comm comms[2] = { { N, world_ranks }, { 2, pair_ranks } };
static struct plan plan = { .ndevices = N, .ncomms = 2, .comms = comms };

struct out {
	float ar[3], rs[2], sum_pair[2];
	int ag[N], a2a[N], msg[2], min;
	double ar64;
	int rc[8];
};

static struct rt_local *world;
static struct out got[N];

static void *rank_main(void *arg)
{
	int me = (int)(long)arg, *rc = got[me].rc;
	struct rt_comm c;
	struct out *o = &got[me];
	rc[0] = rt_comm_local_init(&c, world, me);
	if (rc[0] == 0)
		rc[0] = c.ops->setup(&c, &plan);
	/* all_reduce: rank r gives r + 1, 10 r, -r; sum, max, min */
	float v[3] = { (float)me + 1, 10.0f * (float)me, -(float)me };
	rc[1] = c.ops->all_reduce(&c, 0, v, o->ar, 1, IR_F32, PLAN_SUM, NULL);
	if (rc[1] == 0)
		rc[1] = c.ops->all_reduce(&c, 0, v + 1, o->ar + 1, 1, IR_F32, PLAN_MAX, NULL);
	if (rc[1] == 0)
		rc[1] = c.ops->all_reduce(&c, 0, v + 2, o->ar + 2, 1, IR_F32, PLAN_MIN, NULL);
	double d = 0.5 * me;
	if (rc[1] == 0)
		rc[1] = c.ops->all_reduce(&c, 0, &d, &o->ar64, 1, IR_F64, PLAN_SUM, NULL);
	/* reduce_scatter: block q of rank r holds (q, r); rank q gets sum_r of it */
	float blocks[N * 2];
	for (int q = 0; q < N; q++) {
		blocks[2 * q] = (float)q;
		blocks[2 * q + 1] = (float)(me * 100);
	}
	rc[2] = c.ops->reduce_scatter(&c, 0, blocks, o->rs, 2, IR_F32, NULL);
	/* all_gather and all_to_all of ints (as bytes) */
	int mine = 7 * me, send[N];
	rc[3] = c.ops->all_gather(&c, 0, &mine, o->ag, sizeof mine, NULL);
	for (int q = 0; q < N; q++)
		send[q] = 10 * me + q;
	if (rc[3] == 0)
		rc[3] = c.ops->all_to_all(&c, 0, send, o->a2a, sizeof(int), NULL);
	/* messages: rank 0 sends two of tag 5 then one of tag 6 to rank 2,
	 * which takes tag 6 first, then the two of tag 5 in order, started
	 * before and waited for after a collective on the pair 3, 1 */
	rc[4] = 0;
	if (me == 0) {
		int a = 1, b = 2, e = 3;
		rc[4] = c.ops->send(&c, &a, sizeof a, 2, 5);
		if (rc[4] == 0)
			rc[4] = c.ops->send(&c, &b, sizeof b, 2, 5);
		if (rc[4] == 0)
			rc[4] = c.ops->send(&c, &e, sizeof e, 2, 6);
	} else if (me == 2) {
		struct rt_comm_req *q0, *q1;
		int six = 0;
		rc[4] = c.ops->recv(&c, &o->msg[0], sizeof(int), 0, 5, &q0);
		if (rc[4] == 0)
			rc[4] = c.ops->recv(&c, &o->msg[1], sizeof(int), 0, 5, &q1);
		if (rc[4] == 0)
			rc[4] = c.ops->recv(&c, &six, sizeof six, 0, 6, NULL);
		if (rc[4] == 0)
			rc[4] = c.ops->wait(&c, q1);
		if (rc[4] == 0)
			rc[4] = c.ops->wait(&c, q0);
		if (rc[4] == 0 && six != 3)
			rc[4] = -EBADMSG;
	} else { /* ranks 3 and 1: comm 1, started, then waited for */
		struct rt_comm_req *q;
		float x[2] = { (float)me, 1 };
		rc[4] = c.ops->all_reduce(&c, 1, x, o->sum_pair, 2, IR_F32, PLAN_SUM, &q);
		if (rc[4] == 0)
			rc[4] = c.ops->wait(&c, q);
	}
	o->min = 5 - me;
	rc[5] = c.ops->ctl_min(&c, &o->min);
	rt_comm_local_done(&c);
	c.ops->finish(&c);
	return NULL;
}

/* Ranks 0 and 1 each wait for a message the other never sends, rank 2
 * in a collective, rank 3 has stopped. */
static void *stuck(void *arg)
{
	int me = (int)(long)arg, x = 0;
	struct rt_comm c;
	got[me].rc[6] = rt_comm_local_init(&c, world, me);
	if (got[me].rc[6] == 0)
		got[me].rc[6] = c.ops->setup(&c, &plan);
	if (got[me].rc[6] == 0 && me < 2)
		got[me].rc[6] = c.ops->recv(&c, &x, sizeof x, 1 - me, 9, NULL);
	if (got[me].rc[6] == 0 && me == 2) /* rank 3 has stopped, 0 and 1 wait */
		got[me].rc[6] = c.ops->all_reduce(&c, 0, &x, &x, 1, IR_I32, PLAN_SUM, NULL);
	rt_comm_local_done(&c);
	c.ops->finish(&c);
	return NULL;
}

static void run(void *(*f)(void *), int n)
{
	pthread_t t[N];
	rt_local_start(world);
	for (long k = 0; k < n; k++)
		pthread_create(&t[k], NULL, f, (void *)k);
	for (int k = 0; k < n; k++)
		pthread_join(t[k], NULL);
}

int main(void)
{
	world = rt_local_new(N, 60);
	TAP_OK(world != NULL, "a world of %d ranks", N);
	if (!world)
		return tap_done();
	run(rank_main, N);
	for (int r = 0; r < N; r++) {
		const struct out *o = &got[r];
		bool ok = true;
		for (int k = 0; k < 6; k++)
			ok = ok && o->rc[k] == 0;
		TAP_OK(ok, "rank %d: every call returns 0", r);
		TAP_OK(o->ar[0] == 10 && o->ar[1] == 30 && o->ar[2] == -3 && o->ar64 == 3,
		       "rank %d: all_reduce sum, max, min (f32) and sum (f64): %g %g %g %g", r, o->ar[0], o->ar[1],
		       o->ar[2], o->ar64);
		TAP_OK(o->rs[0] == (float)(N * r) && o->rs[1] == 600,
		       "rank %d: reduce_scatter gets its block's sum: %g %g", r, o->rs[0], o->rs[1]);
		TAP_OK(o->ag[0] == 0 && o->ag[1] == 7 && o->ag[2] == 14 && o->ag[3] == 21,
		       "rank %d: all_gather in rank order", r);
		bool a2a = true;
		for (int q = 0; q < N; q++)
			a2a = a2a && o->a2a[q] == 10 * q + r;
		TAP_OK(a2a, "rank %d: all_to_all: block q from rank q", r);
		TAP_OK(o->min == 2, "rank %d: ctl_min is the least of every rank's (%d)", r, o->min);
	}
	TAP_OK(got[2].msg[0] == 1 && got[2].msg[1] == 2,
	       "messages of one (peer, tag) match receives in the order they were started (%d %d)", got[2].msg[0],
	       got[2].msg[1]);
	TAP_OK(got[3].sum_pair[0] == 4 && got[3].sum_pair[1] == 2 && got[1].sum_pair[0] == 4,
	       "a started all_reduce on a communicator of ranks 3 and 1, waited for");
	rt_local_free(world);
	world = rt_local_new(N, 60);
	if (!world)
		return tap_done();
	double t0 = ir_now();
	run(stuck, N);
	double t = ir_now() - t0;
	TAP_OK(got[0].rc[6] == -EDEADLK && got[1].rc[6] == -EDEADLK,
	       "two ranks waiting for each other's message fail with EDEADLK (%d %d)", got[0].rc[6], got[1].rc[6]);
	TAP_OK(got[2].rc[6] == -EDEADLK, "a rank in a collective that the others never join fails with EDEADLK (%d)",
	       got[2].rc[6]);
	TAP_OK(t < tap_seconds(10), "within seconds, not the timeout (%.1f s)", t);
	rt_local_free(world);
	return tap_done();
}
