/*
 * tap.h: a minimal TAP producer for pcc's C tests. Each check is one test
 * case ("ok N - what" / "not ok N - what"); scripts/test counts them.
 *
 *   TAP_OK(cond, "fmt", ...)        one case
 *   TAP_NEAR(got, want, tol, "fmt", ...)  |got - want| <= tol * max(1, |want|)
 *   return tap_done();              prints the plan, exit status 0 or 1
 *   tap_seconds(s)                  a wall-clock bound of s seconds, times
 *                                   $PCC_TEST_TIME_SCALE (scripts/test-sanitize
 *                                   sets 4, as its timeouts)
 */
#ifndef PCC_TESTS_TAP_H
#define PCC_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((format(printf, 4, 5), unused)) static int tap_ok_at(int cond, const char *file, int line,
								   const char *fmt, ...)
{
	va_list ap;
	tap_n++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define TAP_OK(cond, ...) tap_ok_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define TAP_NEAR(got, want, tol, ...)                                                                                 \
	(tap_ok_at(fabs((double)(got) - (double)(want)) <= (tol)*fmax(1.0, fabs((double)(want))), __FILE__, __LINE__, \
		   __VA_ARGS__) ||                                                                                    \
	 (printf("#   got %.17g want %.17g\n", (double)(got), (double)(want)), 0))
/* A diagnostic: every line of it behind "# ", so that text holding line
 * breaks (a program's output) stays out of the TAP stream. */
__attribute__((format(printf, 1, 2), unused)) static void tap_diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!s)
		return;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	for (char *l = s, *nl; l; l = nl) {
		if ((nl = strchr(l, '\n')))
			*nl++ = 0;
		if (*l || nl)
			printf("# %s\n", l);
		if (nl && !*nl)
			break;
	}
	free(s);
}
#define TAP_DIAG(...) tap_diag(__VA_ARGS__)

/* Diagnostics for two texts that should be equal: the first line where
 * they differ, from each. */
__attribute__((unused)) static void tap_diff(const char *want, const char *got)
{
	int line = 1;
	while (*want && *want == *got) {
		line += *want == '\n';
		want++, got++;
	}
	while (line > 1 && want[-1] != '\n')
		want--, got--;
	TAP_DIAG("first difference on line %d:", line);
	TAP_DIAG("  want: %.*s", (int)strcspn(want, "\n"), want);
	TAP_DIAG("  got:  %.*s", (int)strcspn(got, "\n"), got);
}

__attribute__((unused)) static double tap_seconds(double s)
{
	const char *e = getenv("PCC_TEST_TIME_SCALE");
	double k = e ? atof(e) : 1.0;
	return s * (k > 0 ? k : 1.0);
}

__attribute__((unused)) static int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
