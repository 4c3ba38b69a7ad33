/* A RUN step's output on a terminal (docs/build.md): a window of its last lines under a line
 * with the time it has run, redrawn at most ten times a second, erased when the step ends;
 * when it failed, the last 64 KiB of its output are printed whole, for the error that
 * follows. Without a terminal the output is the step's own, passed through. */
#ifndef AJ_BUILD_DISPLAY_H
#define AJ_BUILD_DISPLAY_H

#include <stdbool.h>
#include <stdio.h>

struct aj_build_display;

/* Reads fd (the step's stdout and stderr) until every writer closed it, drawing on tty; the
 * window is erased at the end. NULL when out of memory (the output is then lost). */
struct aj_build_display *aj_build_display(FILE *tty, int fd);
/* The step's outcome: its output printed if it failed; frees d. */
void aj_build_display_done(struct aj_build_display *d, bool failed);

#endif
