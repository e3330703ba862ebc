/*
 * progress.h: the status line of long compiles and reports (progress.c).
 *
 * Passes call these whether or not anything shows; they cost an atomic
 * add when silent. A message a pass prints on stderr itself should call
 * progress_clear() first, so that it does not land on the status line.
 */
#ifndef PCC_PROGRESS_H
#define PCC_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

/* Starts the clock; quiet (-q) or PCC_PROGRESS=0: nothing shows. */
void progress_init(bool quiet);
/* Enters a phase of `total` work items (0: not counted), named by fmt. */
void progress_phase(int total, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* More work items in the current phase. */
void progress_add(int total);
/* n items of the current phase done (any thread). */
void progress_done(int n);
/* A plan of step_s seconds a step was found; the status shows the least. */
void progress_best(double step_s);
/* Erases the status line on a terminal (before other output). */
void progress_clear(void);
/* The work is over: the line erased, nothing more shows. */
void progress_end(void);
/* --time-passes: from now on, wall and CPU time per kind of phase (a
 * phase's name up to a '(', ';' or path, its numbers as N), silent
 * or not ... */
void progress_time_passes(void);
/* ... printed as a table to f (nothing when not asked for). */
void progress_time_print(FILE *f);

#endif
