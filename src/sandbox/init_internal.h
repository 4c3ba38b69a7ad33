/* Shared between the two modes of the sandbox's init: one-shot (init.c) and serving a
 * persistent sandbox (init_server.c). */
#ifndef AJ_SANDBOX_INIT_INTERNAL_H
#define AJ_SANDBOX_INIT_INTERNAL_H

#include <signal.h>
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
/* posix_spawn in a new session with default signal handling (fork and exec with as_user);
 * returns 0 or an errno, *stage AJ_ISTAGE_* saying which step failed. */
int aj_init_spawn(const struct aj_spawn *sp, pid_t *pid, int *stage);
/* An image root's init: the command's user from the plan, or from spec (USER[:GROUP]) read in
 * the sandbox's own /etc/passwd and /etc/group; 0 or an errno (ENOENT: no such user, EPERM:
 * init cannot switch to it). */
int aj_init_user(const struct aj_plan *plan, const char *spec, struct aj_spawn *sp,
		 gid_t *groups, size_t max_groups, struct aj_user *who);
/* The persistent-sandbox loop; never returns. */
void aj_init_serve(const struct aj_plan *plan, int ctl_fd, int sig_fd) __attribute__((noreturn));

#endif
