/* One command in a running persistent sandbox, for every client of its supervisor (the CLI's
 * exec, the MCP server's shell tool, the HTTP API): the client makes the command's stdio
 * pipes, hands their far ends to the supervisor's "exec" operation (init starts the command
 * with them, no namespaces made per command), reads the near ends itself, and waits for the
 * supervisor's "exit" event on the same control connection.
 *
 * Ownership: struct aj_exec borrows the control descriptor (one exec at a time on it) and owns
 * the pipe ends and the terminal it holds; aj_exec_close() releases them. struct
 * aj_exec_capture owns its buffers; aj_exec_capture_free() releases them.
 */
#ifndef AJ_CONTROL_EXEC_H
#define AJ_CONTROL_EXEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct aj_exec_opts {
	const char *const *argv;   /* NULL-terminated, at least one element */
	json_t *env;               /* {NAME: value} over the sandbox's environment; NULL: none */
	const char *cwd;           /* NULL: the sandbox's working directory */
	const char *user;          /* USER[:GROUP] (an image sandbox's); NULL: the sandbox's */
	uint64_t timeout_ms;       /* 0: the policy's per-command timeout */
	bool tty;                  /* a terminal made inside the sandbox (x->master: its master,
				    * or a socket to it in the gvisor tier) */
	unsigned short rows, cols; /* its size; 0: leave it */
	bool stdin_pipe;           /* stdin is a pipe the caller writes (x->in); else /dev/null */
	const char *name;          /* the sandbox meant, when the socket was found by name: sent
				    * as "exec_named", which a supervisor of another refuses
				    * (AJ_LAYER_STATE, ESTALE), one of an earlier build too
				    * (AJ_LAYER_USAGE, EINVAL: an unknown operation) */
};

struct aj_exec_result {
	int exit_code;  /* the command's; 128+N for signal N; AJ_EXIT_TIMEOUT and friends when a
			 * limit ended it; AJ_EXIT_ERROR when the supervisor went away */
	char limit[32]; /* the limit that ended it ("timeout"), "" if none */
	int signal;     /* the signal that ended it, 0 if it exited */
	double wall_ms, cpu_ms;
	bool lost;      /* the supervisor went away before it reported the end */
};

struct aj_exec {
	int ctl;          /* borrowed */
	uint64_t id;      /* the supervisor's id of the command */
	int out[2];       /* read ends of stdout, stderr (tty: out[0] reads the terminal); -1 at EOF */
	int in;           /* stdin pipe's write end, or the terminal; -1: none */
	int master;       /* the terminal (tty), -1 */
	int64_t output_cap; /* the policy's output cap as the supervisor said (0: none), -1:
			     * not said (a supervisor of an earlier build) */
	bool exited;
	struct aj_exec_result res;
};

struct aj_exec_hooks {
	/* Output as it arrives; stream 0 is stdout (or the terminal), 1 stderr. */
	void (*output)(void *arg, int stream, const char *buf, size_t n);
	/* A descriptor of the caller's to watch as well (its own input), -1: none. on_watch runs
	 * when it is readable and returns -1 to stop watching it. */
	int watch_fd;
	int (*on_watch)(void *arg, struct aj_exec *x);
	/* Runs after every wake-up, at least every tick_ms (> 0), and after a signal interrupted
	 * the wait; non-zero stops waiting (aj_exec_wait returns 1, the command runs on). */
	int (*on_wake)(void *arg, struct aj_exec *x);
	int tick_ms;
	void *arg;
};

/* Starts the command. On a refusal err says why; a command that could not be executed has
 * err->layer AJ_LAYER_EXEC with errnum ENOENT (not found) or another errno. */
int aj_exec_start(struct aj_exec *x, int ctl, const struct aj_exec_opts *o, struct aj_err *err);
/* Relays output until the command ended and its output is drained: 0, with x->res filled.
 * 1 when on_wake asked to stop first. Output that background processes keep writing after the
 * command ended is read for a short while only. */
int aj_exec_wait(struct aj_exec *x, const struct aj_exec_hooks *h);
/* The terminal's window size: set on the master, or (the gvisor tier's terminal, kept inside
 * by init) asked of the supervisor. */
int aj_exec_resize(struct aj_exec *x, unsigned short rows, unsigned short cols);
/* Sends a signal to the command's process group. */
int aj_exec_signal(struct aj_exec *x, int sig);
void aj_exec_close(struct aj_exec *x);

/* An output hook that keeps up to `cap` bytes of each stream (arg: struct aj_exec_capture). */
struct aj_exec_capture {
	size_t cap;
	char *data[2];
	size_t len[2];
	uint64_t total[2]; /* bytes the command wrote, kept or not */
	bool truncated[2];
};
void aj_exec_capture_output(void *arg, int stream, const char *buf, size_t n);
void aj_exec_capture_free(struct aj_exec_capture *c);

#endif
