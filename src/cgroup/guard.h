/* Removal of a sandbox's cgroups even when its supervisor is killed (see guard.c). */
#ifndef AJ_CGROUP_GUARD_H
#define AJ_CGROUP_GUARD_H

#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"

struct aj_cgroup_guard {
	pid_t pid;
	int wfd; /* the only writer of the guard's pipe: its end-of-file wakes the guard */
};

/* Starts the guard over cg's directories, after they have been created. The write end
 * must not leak into any child (it is O_CLOEXEC; sandboxes close every inherited fd). */
int aj_cgroup_guard_start(struct aj_cgroup_guard *guard, const struct aj_cgroup *cg,
			  struct aj_err *err);
/* After the supervisor removed the cgroups itself: stops and reaps the guard. */
void aj_cgroup_guard_release(struct aj_cgroup_guard *guard);

#endif
