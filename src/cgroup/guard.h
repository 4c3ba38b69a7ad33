/* Removal of a sandbox's cgroups even when its supervisor is killed (see guard.c). */
#ifndef AJ_CGROUP_GUARD_H
#define AJ_CGROUP_GUARD_H

#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"

struct aj_cgroup_guard {
	pid_t pid;
	int wfd; /* our end of the guard's socket, the only one: its end-of-file wakes the guard */
};

/* Starts the guard over cg's directories, after they have been created (cg NULL: none, for a
 * guard that only holds descriptors). Our end of its socket must not leak into any child (it
 * is O_CLOEXEC; sandboxes close every inherited fd).
 *
 * linger_fd (or -1) is one of the caller's descriptors that the guard holds too, until it
 * exits. The caller's close then is not the last one; the last, which may block, happens in
 * the guard after its release, when nothing waits for it. (An inotify instance's last close
 * waits for an SRCU grace period: 10-20 ms; a mount namespace's unmounts its tree.) */
int aj_cgroup_guard_start(struct aj_cgroup_guard *guard, const struct aj_cgroup *cg,
			  int linger_fd, struct aj_err *err);
/* Hands the running guard a copy of fd, which it holds as it holds linger_fd; the caller
 * still closes its own. -1 with err when no guard runs. */
int aj_cgroup_guard_hold(struct aj_cgroup_guard *guard, int fd, struct aj_err *err);
/* After the supervisor removed the cgroups itself: tells the guard to finish. Nothing waits
 * for it to exit; the next start in this process reaps it, or whoever inherits it when this
 * process exits. */
void aj_cgroup_guard_release(struct aj_cgroup_guard *guard);

#endif
