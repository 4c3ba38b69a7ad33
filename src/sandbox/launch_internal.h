/* What the two tiers launch differently, one table of operations each, chosen once per launch
 * from the plan's tier by aj_sandbox_start() and kept in struct aj_sandbox for what the
 * supervisor does at the sandbox's end. The rest of the launch (id range, idmapped trees,
 * cgroup handles, the fork, the handshake) is shared. The namespaces tier's table is in
 * launch.c, the landlock tier's in tier_landlock.c. For this module alone. */
#ifndef AJ_SANDBOX_LAUNCH_INTERNAL_H
#define AJ_SANDBOX_LAUNCH_INTERNAL_H

#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "policy/plan.h"
#include "sandbox/launch.h"

struct aj_launch_ops {
	/* Supervisor, before the fork: what the tier's child needs that it cannot make. */
	int (*prepare)(const struct aj_plan *plan, struct aj_err *err);
	/* The forked child: the tier's enforcement sequence, then its init (or keeper). */
	__attribute__((noreturn)) void (*child)(const struct aj_plan *plan,
						 const struct aj_stdio *io,
						 const struct aj_cgroup_join *join, int sync_fd);
	/* The fork failed with errnum: the error, named for the tier. */
	int (*fork_failed)(int errnum, struct aj_err *err);
	/* Supervisor, between the fork and GO (the id maps). */
	int (*before_go)(const struct aj_plan *plan, pid_t pid, struct aj_err *err);
	/* Supervisor: the error the child sent (or before_go's), with the tier's diagnosis
	 * added; returns -1. */
	int (*explain)(const struct aj_plan *plan, pid_t pid, struct aj_err *err);
	/* Supervisor, after init is killed and at the end: what no pid namespace takes along,
	 * sparing `spare` (the cgroup guard; 0 if none). */
	void (*kill_tree)(pid_t spare, const struct aj_warn *warn);
	/* Supervisor, once the sandbox is gone. */
	void (*cleanup)(const struct aj_plan *plan, const struct aj_warn *warn);
};

extern const struct aj_launch_ops aj_tier_landlock_launch, aj_tier_gvisor_launch;

#endif
