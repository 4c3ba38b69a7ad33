/* The command's stdin for one-shot runs (stdin.c explains when it is relayed). */
#ifndef AJ_SUPERVISOR_STDIN_H
#define AJ_SUPERVISOR_STDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct aj_stdin {
	bool relay;   /* through a pipe; otherwise child_fd is the caller's fd 0 */
	bool owned;   /* child_fd is a read-only reopening of fd 0, ours to close */
	int src;      /* the caller's stdin */
	int child_fd; /* what the command gets */
	int pipe_w;   /* our end of the relay pipe, non-blocking */
	bool src_file; /* src is a regular file: read when the pipe has room, never polled */
	bool eof;
	char buf[16384];
	size_t len, off;
};

/* The host uids the sandbox's ids map to: files they own are never handed over. */
struct aj_stdin_ids {
	uint32_t first, count;
	bool pipes_only; /* the command gets a pipe whatever stdin is (the gvisor tier) */
};

int aj_stdin_setup(struct aj_stdin *s, const struct aj_stdin_ids *ids, struct aj_err *err);
/* Copies from the caller's stdin into the relay pipe; false once the relay is over. */
bool aj_stdin_pump(struct aj_stdin *s);
bool aj_stdin_wants_write(const struct aj_stdin *s);
void aj_stdin_close(struct aj_stdin *s);

#endif
