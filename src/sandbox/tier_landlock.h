/* The landlock tier's launch (docs/threat-model.md, "The landlock tier"): a sandbox without
 * any namespace, for hosts that refuse unprivileged user namespaces. aj_sandbox_start()
 * forks (no namespace flags) and the child runs aj_tier_landlock_child() instead of the
 * namespaces tier's sequence; the rest of the launch and of the supervisor is shared.
 *
 * The scratch directory (plan->scratch) is made by aj_tier_landlock_prepare() and removed by
 * aj_tier_landlock_cleanup(), both in the supervisor.
 */
#ifndef AJ_SANDBOX_TIER_LANDLOCK_H
#define AJ_SANDBOX_TIER_LANDLOCK_H

#include <sys/types.h>

#include "common/err.h"
#include "policy/plan.h"
#include "sandbox/launch.h"

/* Supervisor, before the fork: makes itself the child subreaper of everything the sandbox
 * will orphan, and creates the scratch directory (HOME and TMPDIR). */
int aj_tier_landlock_prepare(const struct aj_plan *plan, struct aj_err *err);
/* Runs in the forked child: the tier's enforcement sequence, then the keeper that starts the
 * command under Landlock and seccomp and outlives it. Never returns. */
void aj_tier_landlock_child(const struct aj_plan *plan, const struct aj_stdio *io,
			    const struct aj_cgroup_join *join, int sync_fd)
	__attribute__((noreturn));
/* Supervisor: SIGKILLs every process of the sandbox, i.e. every descendant of the calling
 * supervisor but `spare` (its cgroup guard; 0 if none), and reaps them. */
void aj_tier_landlock_kill(pid_t spare);
/* Supervisor, once the sandbox is gone: removes the scratch directory (never following what
 * the sandbox left in it). */
void aj_tier_landlock_cleanup(const struct aj_plan *plan);

#endif
