/*
 * progress.c: what a long compile or report is doing, on stderr.
 *
 * Passes say which phase they are in and count its work (the search's
 * layer solves, lowering's stages); nothing shows during the first two
 * seconds, so quick runs print nothing. After that a status line shows
 * the phase, work done of the phase's total, the best step time found so
 * far and the time elapsed: redrawn in place on a terminal (at most ten
 * times a second), and as plain lines otherwise (on a phase change, and
 * at most every five seconds within one). progress_init(true) (-q), or
 * PCC_PROGRESS=0 in the environment, silences it; PCC_PROGRESS_AFTER=S
 * shows it after S seconds instead of two (tests use 0).
 *
 * One status for the process: the counters are atomic (the search's
 * solves run on several threads) and drawing takes a lock.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/progress.h"
#include "ir/ir.h"

#define PROGRESS_QUIET_S 2.0 /* seconds before anything shows (PCC_PROGRESS_AFTER) */
#define PROGRESS_TTY_S 0.1   /* between redraws on a terminal */
#define PROGRESS_LINE_S 5.0  /* between plain lines within a phase */

static struct {
	bool on, tty, drawn; /* drawn: a terminal line is showing */
	double t0, last, after;
	char phase[160];
	int phase_no, printed_no; /* the phase's number, the last one printed as a line */
	atomic_int done, total;
	double best; /* s per step, 0: none yet */
	pthread_mutex_t lock;
} P = { .lock = PTHREAD_MUTEX_INITIALIZER };

void progress_init(bool quiet)
{
	const char *env = getenv("PCC_PROGRESS");
	P.on = !quiet && !(env && !strcmp(env, "0"));
	P.tty = isatty(STDERR_FILENO);
	P.t0 = ir_now();
	const char *after = getenv("PCC_PROGRESS_AFTER");
	char *end = NULL;
	P.after = after ? strtod(after, &end) : PROGRESS_QUIET_S;
	if (after && (end == after || *end || !(P.after >= 0)))
		P.after = PROGRESS_QUIET_S;
	P.last = 0;
	P.phase[0] = 0;
	P.best = 0;
	atomic_store(&P.done, 0);
	atomic_store(&P.total, 0);
}

/* Writes the status (lock held). */
static void draw(double now, bool force)
{
	double t = now - P.t0;
	if (!P.on || !P.phase[0] || t < P.after)
		return;
	bool newphase = P.phase_no != P.printed_no;
	if (!force && !newphase && now - P.last < (P.tty ? PROGRESS_TTY_S : PROGRESS_LINE_S))
		return;
	char work[64] = "", best[64] = "";
	int done = atomic_load(&P.done), total = atomic_load(&P.total);
	if (total > 0)
		snprintf(work, sizeof work, ": %d of %d", done < total ? done : total, total);
	if (P.best > 0)
		snprintf(best, sizeof best, "; best so far %.4g s a step", P.best);
	fprintf(stderr, "%spcc: [%.1f s] %s%s%s%s", P.tty ? "\r\033[K" : "", t, P.phase, work, best, P.tty ? "" : "\n");
	fflush(stderr);
	P.drawn = P.tty;
	P.last = now;
	P.printed_no = P.phase_no;
}

static void tick(bool force)
{
	if (!P.on)
		return;
	pthread_mutex_lock(&P.lock);
	draw(ir_now(), force);
	pthread_mutex_unlock(&P.lock);
}

void progress_phase(int total, const char *fmt, ...)
{
	if (!P.on)
		return;
	pthread_mutex_lock(&P.lock);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(P.phase, sizeof P.phase, fmt, ap);
	va_end(ap);
	P.phase_no++;
	atomic_store(&P.done, 0);
	atomic_store(&P.total, total);
	draw(ir_now(), false);
	pthread_mutex_unlock(&P.lock);
}

void progress_add(int total)
{
	if (P.on)
		atomic_fetch_add(&P.total, total);
}

void progress_done(int n)
{
	if (!P.on)
		return;
	atomic_fetch_add(&P.done, n);
	tick(false);
}

void progress_best(double step_s)
{
	if (!P.on || !(step_s > 0))
		return;
	pthread_mutex_lock(&P.lock);
	if (P.best == 0 || step_s < P.best)
		P.best = step_s;
	pthread_mutex_unlock(&P.lock);
}

void progress_clear(void)
{
	if (!P.on)
		return;
	pthread_mutex_lock(&P.lock);
	if (P.drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		P.drawn = false;
	}
	pthread_mutex_unlock(&P.lock);
}

void progress_end(void)
{
	progress_clear();
	pthread_mutex_lock(&P.lock);
	P.phase[0] = 0;
	pthread_mutex_unlock(&P.lock);
}
