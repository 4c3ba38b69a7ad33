/* What both supervisors (run.c's one-shot, persist.c's persistent) do around a sandbox's
 * start, written once: the sandbox's cgroup with the guard that removes it if the supervisor
 * is killed, and the egress proxy, whose CA files go into the plan before the sandbox's /etc
 * is built.
 *
 * The caller owns the cgroup, the guard and the proxy these fill, and releases them with
 * aj_sv_cgroup_remove() and aj_egress_free().
 */
#ifndef AJ_SUPERVISOR_START_H
#define AJ_SUPERVISOR_START_H

#include "cgroup/cgroup.h"
#include "cgroup/guard.h"
#include "common/err.h"
#include "egress/egress.h"
#include "policy/plan.h"

/* Creates the cgroup `name` with the plan's limits and starts its guard: 1 when made, 0 when
 * the plan uses no cgroup, -1 with nothing left behind. */
int aj_sv_cgroup_create(const struct aj_plan *plan, const char *name, struct aj_cgroup *cg,
			struct aj_cgroup_guard *guard, struct aj_err *err);
/* Removes the cgroup (its tasks must be gone: kill_all first) and releases the guard. */
void aj_sv_cgroup_remove(struct aj_cgroup *cg, struct aj_cgroup_guard *guard);

/* network.mode "proxy": the proxy (secrets read, the CA made) and the CA files it gives the
 * sandbox, filled into the plan. *out is NULL when the plan has no proxy. */
int aj_sv_egress_new(struct aj_plan *plan, struct aj_egress **out, struct aj_err *err);

#endif
