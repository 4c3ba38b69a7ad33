/* Shared between the two modes of the sandbox's init: one-shot (init.c) and serving a
 * persistent sandbox (init_server.c). */
#ifndef AJ_SANDBOX_INIT_INTERNAL_H
#define AJ_SANDBOX_INIT_INTERNAL_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy/plan.h"
#include "policy/users.h"

struct aj_spawn {
	char *const *argv;
	char *const *envp;
	const char *cwd;  /* NULL: init's */
	const int *stdio; /* three descriptors, or NULL to inherit init's */
	int tty_fd;       /* >= 0: the command's controlling terminal and stdio */
	/* init as an image's root (plan->init_root): the command's ids, set before exec */
	bool as_user, set_groups;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;
};

/* Blocks the signals init handles and returns a signalfd for them. */
int aj_init_setup_signals(sigset_t *mask);
/* Points init's own stdio at /dev/null. */
void aj_init_detach_stdio(void);
/* Starts the command in a new session with default signal handling: a clone that shares
 * init's memory until its exec (fork and exec with as_user); returns 0 or an errno, *stage
 * AJ_ISTAGE_* saying which step failed. */
int aj_init_spawn(const struct aj_spawn *sp, pid_t *pid, int *stage);
/* An image root's init: the command's user from the plan, or from spec (USER[:GROUP]) read in
 * the sandbox's own /etc/passwd and /etc/group; 0 or an errno (ENOENT: no such user, EPERM:
 * init cannot switch to it). */
int aj_init_user(const struct aj_plan *plan, const char *spec, struct aj_spawn *sp,
		 gid_t *groups, size_t max_groups, struct aj_user *who);
/* Opens a path for a client: regular files and directories only (plus /dev/ptmx), never
 * blocking init (init_server.c). 0 with *out, or an errno. */
int aj_init_open_for_client(const char *path, int flags, mode_t mode, int *out);

/* init_stream.c: the gvisor tier's by-value operations (initproto.h), jobs of init's poll
 * loop. Each function that takes a socket borrows it (the job keeps a copy). */
struct aj_init_hdr;
#define AJ_INIT_STREAM_POLLFDS 128
/* A pty pair of the sandbox's devpts for a relayed terminal, window size AJ_WINSIZE (0: leave
 * it). 0 with both ends, or an errno (EMFILE: too many jobs). */
int aj_init_tty_open(int32_t winsize, int *master, int *slave);
/* The command `id` (pid) started on the pair's peer: its master (taken) relayed over sock. */
int aj_init_tty_relay(uint64_t id, pid_t pid, int master, int sock);
int aj_init_tty_resize(uint64_t id, int32_t winsize);
/* The command `id` ended: true if its terminal's relay sends this EXITED (a copy) once the
 * command's output is on the socket; false if the caller sends it now. */
bool aj_init_tty_exited(const struct aj_init_hdr *exited);
/* AJ_IOP_STREAM: opens path as aj_init_open_for_client() would and serves it over sock. */
int aj_init_stream_open(const char *path, int flags, mode_t mode, int sock);
/* AJ_IOP_WATCH_STREAM: a watch on the directory path, added to instance (non-zero) or to a new
 * instance whose events go to sock; *wd and *out (the instance) on success. */
int aj_init_watch_stream(const char *path, uint32_t mask, int sock, uint64_t instance, int *wd,
			 uint64_t *out);
/* The jobs' descriptors for poll (at most AJ_INIT_STREAM_POLLFDS) and how long poll may wait;
 * then, with what poll said of them, every job that can move runs. */
size_t aj_init_streams_poll(struct pollfd *p, int *timeout_ms);
void aj_init_streams_run(int ctl, const struct pollfd *p, size_t n);

/* The persistent-sandbox loop; never returns. */
void aj_init_serve(const struct aj_plan *plan, int ctl_fd, int sig_fd) __attribute__((noreturn));

#endif
