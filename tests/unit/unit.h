/* Minimal TAP output for in-process unit tests: one line per check, the process fails if any
 * check failed. Pure modules only (common/, policy/ parsing, units, output accounting, rule
 * parsers, cgroup backends on a simulated tree). */
#ifndef AJ_TESTS_UNIT_H
#define AJ_TESTS_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failures;

/* The condition is evaluated exactly once: checks may call the function under test. */
#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		int pass_ = !!(cond);                                         \
		if (pass_) {                                                  \
			printf("ok - ");                                      \
		} else {                                                      \
			printf("not ok - ");                                  \
			unit_failures++;                                      \
		}                                                             \
		printf(__VA_ARGS__);                                          \
		if (!pass_)                                                   \
			printf(" (%s:%d: %s)", __FILE__, __LINE__, #cond);    \
		printf("\n");                                                 \
	} while (0)

#define CHECK_STR(got, want, ...)                                             \
	do {                                                                  \
		const char *g_ = (got), *w_ = (want);                         \
		int same_ = g_ && w_ && strcmp(g_, w_) == 0;                  \
		CHECK(same_, __VA_ARGS__);                                    \
		if (!same_)                                                   \
			printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_); \
	} while (0)

#define CHECK_CONTAINS(hay, needle, ...)                                      \
	do {                                                                  \
		const char *h_ = (hay);                                       \
		int in_ = h_ && strstr(h_, (needle)) != NULL;                 \
		CHECK(in_, __VA_ARGS__);                                      \
		if (!in_)                                                     \
			printf("#   \"%s\" lacks \"%s\"\n", h_ ? h_ : "(null)", (needle)); \
	} while (0)

#define UNIT_EXIT() return unit_failures ? 1 : 0

#endif
