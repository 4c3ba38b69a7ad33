/* What both supervisors (run.c's one-shot, persist.c's persistent) do around a sandbox's
 * start, written once: the sandbox's cgroup with the guard that removes it if the supervisor
 * is killed, and the egress proxy, whose CA files go into the plan before the sandbox's /etc
 * is built.
 *
 * and the published ports, bound on the host before the sandbox starts.
 *
 * The caller owns the cgroup, the guard, the proxy and the ports these fill, and releases
 * them with aj_sv_cgroup_remove(), aj_egress_free(), aj_ports_free() and aj_dialer_stop().
 */
#ifndef AJ_SUPERVISOR_START_H
#define AJ_SUPERVISOR_START_H

#include "cgroup/cgroup.h"
#include "cgroup/guard.h"
#include "common/err.h"
#include "egress/egress.h"
#include "policy/plan.h"
#include "ports/dialer.h"
#include "ports/publish.h"
#include "sandbox/launch.h"

/* Creates the cgroup `name` with the plan's limits and starts its guard, which holds
 * linger_fd (or -1) too (see aj_cgroup_guard_start()): 1 when made, 0 when the plan uses no
 * cgroup (the guard then starts only for a linger_fd, and aj_cgroup_guard_release() ends it),
 * -1 with nothing left behind. */
int aj_sv_cgroup_create(const struct aj_plan *plan, const char *name, struct aj_cgroup *cg,
			struct aj_cgroup_guard *guard, int linger_fd, struct aj_err *err);
/* Removes the cgroup (its tasks must be gone: kill_all first) and releases the guard. */
void aj_sv_cgroup_remove(struct aj_cgroup *cg, struct aj_cgroup_guard *guard);

/* network.mode "proxy": the proxy (secrets read, the CA made) and the CA files it gives the
 * sandbox, filled into the plan. *out is NULL when the plan has no proxy. */
int aj_sv_egress_new(struct aj_plan *plan, struct aj_egress **out, struct aj_err *err);

/* network.publish: the host ports bound (and listening) before the sandbox starts, so that
 * a port in use fails the start before anything runs. *out is NULL when none is published;
 * the caller frees it with aj_ports_free(). */
int aj_sv_ports_bind(const struct aj_plan *plan, struct aj_ports **out, struct aj_err *err);
/* Once the sandbox runs: the dialer joins its network namespace through net_fd (the socket
 * the sandbox's child made there; -1: no way in) and the ports accept on the loop. */
int aj_sv_ports_start(struct aj_ports *ports, struct aj_dialer *d, int net_fd,
		      struct event_base *base, aj_ports_emit_fn emit, void *arg, struct aj_err *err);

/* network.host_ports: the listeners the sandbox's child passed (taken from sb), each
 * connection relayed to the host's 127.0.0.1:PORT; *out NULL when there are none. */
int aj_sv_host_ports_start(struct aj_sandbox *sb, struct event_base *base, aj_ports_emit_fn emit,
			   void *arg, struct aj_ports **out, struct aj_err *err);

#endif
