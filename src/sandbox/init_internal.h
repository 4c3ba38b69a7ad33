/* Shared between the two modes of the sandbox's init: one-shot (init.c) and serving a
 * persistent sandbox (init_server.c). */
#ifndef AJ_SANDBOX_INIT_INTERNAL_H
#define AJ_SANDBOX_INIT_INTERNAL_H

#include <signal.h>
#include <sys/types.h>

#include "policy/plan.h"

struct aj_spawn {
	char *const *argv;
	char *const *envp;
	const char *cwd;  /* NULL: init's */
	const int *stdio; /* three descriptors, or NULL to inherit init's */
	int tty_fd;       /* >= 0: the command's controlling terminal and stdio */
};

/* Blocks the signals init handles and returns a signalfd for them. */
int aj_init_setup_signals(sigset_t *mask);
/* Points init's own stdio at /dev/null. */
void aj_init_detach_stdio(void);
/* posix_spawn in a new session with default signal handling; returns 0 or an errno. */
int aj_init_spawn(const struct aj_spawn *sp, pid_t *pid);
/* The persistent-sandbox loop; never returns. */
void aj_init_serve(const struct aj_plan *plan, int ctl_fd, int sig_fd) __attribute__((noreturn));

#endif
