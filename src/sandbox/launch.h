/* Launching a sandbox: the supervisor side (clone, id maps, cgroup, handshake) and the
 * ordered enforcement sequence the child runs before it becomes the sandbox's init. What
 * the tiers do differently is behind a table of operations (launch_internal.h) that
 * aj_sandbox_start() chooses once from the plan's tier.
 *
 * The supervisor owns struct aj_sandbox; aj_sandbox_release() closes its descriptors (the
 * sandbox itself dies with its init, see aj_sandbox_kill()); its table of operations is
 * static.
 */
#ifndef AJ_SANDBOX_LAUNCH_H
#define AJ_SANDBOX_LAUNCH_H

#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "common/warn.h"
#include "policy/plan.h"
#include "sandbox/sync.h"

/* The command's standard streams, as descriptors of the supervisor. */
struct aj_stdio {
	int in, out, err;
};

struct aj_launch_ops;

struct aj_sandbox {
	pid_t pid;      /* the sandbox's init, as a host pid */
	int pidfd;      /* of init */
	int ctl_fd;     /* supervisor end of the control socket */
	int id_lock_fd; /* privileged: holds the host id range */
	pid_t cmd_pid;  /* the command, as a pid inside the sandbox */
	bool attach_needed; /* the cgroup must be joined by the supervisor (no clone3) */
	int proxy_fd;   /* network.mode "proxy": the listening socket inside the sandbox's
			 * network namespace, made by the child; taken over by the proxy */
	int net_fd;     /* plan->inbound: a socket of the sandbox's network namespace, made by
			 * the child; the supervisor's way in (ports/dialer.h) */
	int mnt_fd;     /* the namespaces tier: the sandbox's mount namespace, opened before
			 * GO (see aj_sandbox_start()); -1 where it could not be */
	int host_port_fd[AJ_PORTS_MAX]; /* network.host_ports: listening on the sandbox's
					 * 127.0.0.1:PORT, in the policy's order */
	size_t n_host_ports;
	const struct aj_launch_ops *ops; /* the tier's launcher (launch_internal.h) */
};

/* A sandbox not started (yet): aj_sandbox_kill() and aj_sandbox_release() do nothing to it.
 * aj_sandbox_start() begins with it; a caller whose exit path may come first calls it too. */
void aj_sandbox_init(struct aj_sandbox *sb);
/* The sandbox's cgroup, made by the caller's function when aj_sandbox_start() calls it. */
struct aj_cgroup_maker {
	/* 1 with *cg set, 0 for a sandbox without a cgroup, -1 with err set. */
	int (*make)(void *arg, struct aj_cgroup **cg, struct aj_err *err);
	void *arg;
};

/* Builds and starts the sandbox and its command. On success *ready holds the child's READY
 * message (exec_errno set if the command could not be started). The cgroup is `cg`, or what
 * `maker` makes (at most one of them is not NULL; both NULL: none). The namespaces tier
 * with a network namespace on cgroup v1 calls maker while the child builds its root
 * filesystem, and the child joins the cgroup before it goes past that: before anything of
 * the command's runs, as when it joins first. Otherwise maker is called before the clone.
 * In the namespaces tier sb->mnt_fd then refers to the sandbox's mount namespace: whoever
 * holds a copy past init's exit takes the unmounting of the sandbox's whole tree (0.2 ms
 * for the default root) off init's exit. */
int aj_sandbox_start(struct aj_plan *plan, const struct aj_stdio *io, struct aj_cgroup *cg,
		     const struct aj_cgroup_maker *maker, struct aj_sandbox *sb,
		     struct aj_sync_msg *ready, struct aj_err *err);
/* SIGKILLs init; the kernel then kills every process of the sandbox's pid namespace. */
void aj_sandbox_kill(struct aj_sandbox *sb);
void aj_sandbox_release(struct aj_sandbox *sb);
/* What the sandbox's tier leaves to the supervisor around the sandbox's end (nothing in the
 * namespaces tier, whose pid namespace takes every process along; nothing before
 * aj_sandbox_start()). kill_tree: SIGKILLs and reaps what is left of the sandbox, sparing
 * `spare` (the cgroup guard; 0 if none), after init was killed. cleanup: once the sandbox
 * is gone, removes what the launch made on the host (the landlock tier's scratch
 * directory). What they could not do goes to `warn` (common/warn.h). */
void aj_sandbox_kill_tree(const struct aj_sandbox *sb, pid_t spare, const struct aj_warn *warn);
void aj_sandbox_cleanup(const struct aj_sandbox *sb, const struct aj_plan *plan,
			const struct aj_warn *warn);

/* The sandbox's PID 1 (init.c): starts the command, reaps, forwards signals, reports the
 * command's end to the supervisor. `ctl_fd` is descriptor 3. */
void aj_init_main(const struct aj_plan *plan, int ctl_fd) __attribute__((noreturn));
/* The gvisor tier's init inside the Sentry (tier_gvisor.c, `agentjail __gvinit [USER]`):
 * serves a persistent sandbox's supervisor over its stdin, the control socket runsc was
 * handed, as the sandbox user it was started as; or, started as an image's uid 0, as
 * user ("UID:GID[:G1,G2...]", the sandbox user it starts commands as). 125 for a user it
 * cannot read. */
int aj_gvisor_guest_init(const char *user);

#endif
