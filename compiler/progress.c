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
#include <time.h>
#include <unistd.h>

#include "compiler/progress.h"
#include "ir/ir.h"

#define PROGRESS_QUIET_S 2.0 /* seconds before anything shows (PCC_PROGRESS_AFTER) */
#define PROGRESS_TTY_S 0.1   /* between redraws on a terminal */
#define PROGRESS_LINE_S 5.0  /* between plain lines within a phase */

/* --time-passes: wall and CPU time per kind of phase (its name up to a '(',
 * ';' or path, numbers as N: "search: micro-batch size 4 (3 of at most
 * 11)" and "search: micro-batch size 8" are one row), kept whether or not
 * the status shows. */
#define PROGRESS_KINDS 32
static struct {
	bool on;
	int n, cur; /* kinds, the one timing (-1: none) */
	char name[PROGRESS_KINDS][72];
	double wall[PROGRESS_KINDS], cpu[PROGRESS_KINDS];
	int count[PROGRESS_KINDS];
	double t, c, t0, c0; /* the current phase's start, the first's */
	pthread_mutex_t lock;
} T = { .cur = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

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

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Charges the phase timing since T.t to its kind (T.lock held). */
static void time_close(double now, double cpu)
{
	if (T.cur >= 0) {
		T.wall[T.cur] += now - T.t;
		T.cpu[T.cur] += cpu - T.c;
	}
	T.cur = -1;
}

static void time_open(const char *phase)
{
	double now = ir_now(), cpu = cpu_now();
	pthread_mutex_lock(&T.lock);
	time_close(now, cpu);
	char kind[sizeof T.name[0]];
	size_t len = 0;
	for (const char *c = phase; *c && !strchr("(;", *c) && !(c[0] == ' ' && c[1] == '/') && len < sizeof kind - 1;
	     c++) {
		if (*c >= '0' && *c <= '9') { /* a number: N */
			while ((c[1] >= '0' && c[1] <= '9') || (c[1] == '.' && c[2] >= '0' && c[2] <= '9'))
				c++;
			kind[len++] = 'N';
		} else {
			kind[len++] = *c;
		}
	}
	while (len > 0 && kind[len - 1] == ' ')
		len--;
	kind[len] = 0;
	int k = 0;
	while (k < T.n && strcmp(T.name[k], kind))
		k++;
	if (k == T.n && T.n < PROGRESS_KINDS)
		memcpy(T.name[T.n++], kind, len + 1);
	if (k < T.n) {
		T.cur = k;
		T.count[k]++;
		T.t = now;
		T.c = cpu;
	}
	pthread_mutex_unlock(&T.lock);
}

void progress_time_passes(void)
{
	T.on = true;
	T.t0 = ir_now();
	T.c0 = cpu_now();
}

void progress_time_print(FILE *f)
{
	if (!T.on)
		return;
	double now = ir_now(), cpu = cpu_now(), w = 0, c = 0;
	pthread_mutex_lock(&T.lock);
	time_close(now, cpu);
	fprintf(f, "pass timings (wall and CPU seconds; CPU above wall: the pass ran on several cores):\n");
	fprintf(f, "  %-62s %9s %9s %6s %6s\n", "phase", "wall s", "cpu s", "wall%", "runs");
	for (int k = 0; k < T.n; k++) {
		w += T.wall[k];
		c += T.cpu[k];
	}
	double total = now - T.t0;
	for (int k = 0; k < T.n; k++)
		fprintf(f, "  %-62s %9.3f %9.3f %5.1f%% %6d\n", T.name[k], T.wall[k], T.cpu[k],
			total > 0 ? 100 * T.wall[k] / total : 0, T.count[k]);
	fprintf(f, "  %-62s %9.3f %9.3f %5.1f%%\n", "(outside the phases: import, checks)", total - w, cpu - T.c0 - c,
		total > 0 ? 100 * (total - w) / total : 0);
	fprintf(f, "  %-62s %9.3f %9.3f\n", "total", total, cpu - T.c0);
	pthread_mutex_unlock(&T.lock);
}

void progress_phase(int total, const char *fmt, ...)
{
	if (!P.on && !T.on)
		return;
	char phase[sizeof P.phase];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(phase, sizeof phase, fmt, ap);
	va_end(ap);
	if (T.on)
		time_open(phase);
	if (!P.on)
		return;
	pthread_mutex_lock(&P.lock);
	memcpy(P.phase, phase, sizeof P.phase);
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
