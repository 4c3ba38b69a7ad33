#include "build/display.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

#define WINDOW_LINES 6
#define TAIL_MAX (64 * 1024)
#define LINE_MAX_KEPT 512

struct aj_build_display {
	FILE *tty;
	unsigned cols;
	char tail[TAIL_MAX]; /* the last bytes of output, for a failure */
	size_t tail_len;
	bool tail_cut;
	char lines[WINDOW_LINES][LINE_MAX_KEPT]; /* the last complete lines, oldest first */
	size_t n_lines;
	char partial[LINE_MAX_KEPT];
	size_t partial_len;
	unsigned drawn; /* lines on the screen now */
	uint64_t t0_us;
};

static void keep_tail(struct aj_build_display *d, const char *buf, size_t n)
{
	if (n > TAIL_MAX) { /* reads are smaller; kept for the function's own sake */
		buf += n - TAIL_MAX;
		n = TAIL_MAX;
	}
	if (d->tail_len + n > TAIL_MAX) {
		size_t drop = d->tail_len + n - TAIL_MAX;
		memmove(d->tail, d->tail + drop, d->tail_len - drop);
		d->tail_len -= drop;
		d->tail_cut = true;
	}
	memcpy(d->tail + d->tail_len, buf, n);
	d->tail_len += n;
}

static void push_line(struct aj_build_display *d)
{
	if (d->n_lines == WINDOW_LINES) {
		memmove(d->lines[0], d->lines[1], sizeof d->lines[0] * (WINDOW_LINES - 1));
		d->n_lines--;
	}
	memcpy(d->lines[d->n_lines], d->partial, d->partial_len);
	d->lines[d->n_lines++][d->partial_len] = '\0';
	d->partial_len = 0;
}

static void take(struct aj_build_display *d, const char *buf, size_t n)
{
	keep_tail(d, buf, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n') {
			push_line(d);
		} else if (c == '\r') {
			d->partial_len = 0; /* a progress bar redrawing its line */
		} else if (d->partial_len + 1 < LINE_MAX_KEPT) {
			/* control characters and escapes would move the cursor under the window,
			 * C1 controls (U+0080-U+009F, UTF-8 C2 80-9F) too */
			if (c == 0xc2 && i + 1 < n && (unsigned char)buf[i + 1] >= 0x80 &&
			    (unsigned char)buf[i + 1] <= 0x9f) {
				i++;
				c = ' ';
			}
			d->partial[d->partial_len++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
		}
	}
}

static void erase(struct aj_build_display *d)
{
	if (d->drawn)
		fprintf(d->tty, "\033[%uA", d->drawn);
	fputs("\r\033[J", d->tty);
	d->drawn = 0;
}

/* One line of the window, cut to the terminal's width; UTF-8 sequences are counted as the
 * columns they usually take (one). */
static void put_cut(struct aj_build_display *d, const char *prefix, unsigned prefix_cols,
		    const char *s)
{
	unsigned room = d->cols > prefix_cols + 1 ? d->cols - prefix_cols - 1 : 0;
	unsigned cols = 0;
	const char *p = s;

	fputs(prefix, d->tty);
	for (; *p && cols < room; p++)
		if (((unsigned char)*p & 0xc0) != 0x80)
			cols++;
	while (((unsigned char)*p & 0xc0) == 0x80) /* finish the character */
		p++;
	fwrite(s, 1, (size_t)(p - s), d->tty);
	fputs("\033[K\n", d->tty);
}

static void draw(struct aj_build_display *d)
{
	char head[64];
	double secs = (double)(aj_now_monotonic_us() - d->t0_us) / 1e6;

	struct winsize ws;

	erase(d);
	if (ioctl(fileno(d->tty), TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		d->cols = ws.ws_col; /* the terminal may have been resized */
	/* No autowrap while drawing: a line wider than counted (wide characters) is cut by the
	 * terminal instead of taking a second row that erase() would not know of. */
	fputs("\033[?7l", d->tty);
	snprintf(head, sizeof head, "  running %.1fs", secs);
	put_cut(d, "", 0, head);
	d->drawn = 1;
	for (size_t i = 0; i < d->n_lines; i++, d->drawn++)
		put_cut(d, "  \033[2m|\033[0m ", 4, d->lines[i]);
	if (d->partial_len) {
		d->partial[d->partial_len] = '\0';
		put_cut(d, "  \033[2m|\033[0m ", 4, d->partial);
		d->drawn++;
	}
	fputs("\033[?7h", d->tty);
	fflush(d->tty);
}

struct aj_build_display *aj_build_display(FILE *tty, int fd)
{
	struct aj_build_display *d = calloc(1, sizeof *d);
	struct winsize ws;
	char buf[8192];
	uint64_t last = 0;

	if (!d)
		return NULL;
	d->tty = tty;
	d->cols = ioctl(fileno(tty), TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
	d->t0_us = aj_now_monotonic_us();
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, 100);
		uint64_t now = aj_now_monotonic_us();
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0) {
			ssize_t n = read(fd, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			take(d, buf, (size_t)n);
		}
		if (now - last >= 100000) { /* at most ten redraws a second */
			draw(d);
			last = now;
		}
	}
	erase(d);
	fflush(tty);
	return d;
}

void aj_build_display_done(struct aj_build_display *d, bool failed)
{
	if (!d)
		return;
	if (failed) { /* what the step said, for the error that follows */
		if (d->tail_cut)
			fputs("  (the step's output before its last 64 KiB is not shown)\n", d->tty);
		fwrite(d->tail, 1, d->tail_len, d->tty);
		if (d->tail_len && d->tail[d->tail_len - 1] != '\n')
			fputc('\n', d->tty);
		fflush(d->tty);
	}
	free(d);
}
