/* Launching a sandbox: the supervisor side (clone, id maps, cgroup, handshake) and the
 * ordered enforcement sequence the child runs before it becomes the sandbox's init.
 *
 * The supervisor owns struct aj_sandbox; aj_sandbox_release() closes its descriptors (the
 * sandbox itself dies with its init, see aj_sandbox_kill()).
 */
#ifndef AJ_SANDBOX_LAUNCH_H
#define AJ_SANDBOX_LAUNCH_H

#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "policy/plan.h"
#include "sandbox/sync.h"

/* The command's standard streams, as descriptors of the supervisor. */
struct aj_stdio {
	int in, out, err;
};

struct aj_sandbox {
	pid_t pid;      /* the sandbox's init, as a host pid */
	int pidfd;      /* of init */
	int ctl_fd;     /* supervisor end of the control socket */
	int id_lock_fd; /* privileged: holds the host id range */
	pid_t cmd_pid;  /* the command, as a pid inside the sandbox */
	bool attach_needed; /* the cgroup must be joined by the supervisor (no clone3) */
	int proxy_fd;   /* network.mode "proxy": the listening socket inside the sandbox's
			 * network namespace, made by the child; taken over by the proxy */
};

/* Builds and starts the sandbox and its command. On success *ready holds the child's READY
 * message (exec_errno set if the command could not be started). `cg` may be NULL. */
int aj_sandbox_start(struct aj_plan *plan, const struct aj_stdio *io, struct aj_cgroup *cg,
		     struct aj_sandbox *sb, struct aj_sync_msg *ready, struct aj_err *err);
/* SIGKILLs init; the kernel then kills every process of the sandbox's pid namespace. */
void aj_sandbox_kill(struct aj_sandbox *sb);
void aj_sandbox_release(struct aj_sandbox *sb);
/* The plan's Landlock rules (one per operation that grants rights), applied to the calling
 * process; for other launchers of the same plan (src/sandbox/oci.c). */
int aj_sandbox_apply_landlock(const struct aj_plan *plan, struct aj_err *err);
/* Steps 6 and 7 of the enforcement sequence, for the landlock tier's launcher
 * (tier_landlock.c): stdio at 0-2 and sync_fd at 3, every other descriptor closed; the
 * plan's rlimits. */
int aj_sandbox_arrange_fds(const struct aj_stdio *io, int sync_fd, struct aj_err *err);
int aj_sandbox_apply_rlimits(const struct aj_plan *plan, struct aj_err *err);
/* Step 5b: the egress proxy's listening socket on 127.0.0.1:plan->egress.port of the
 * caller's network namespace, sent to the supervisor over sync_fd. */
int aj_sandbox_pass_listener(const struct aj_plan *plan, int sync_fd, struct aj_err *err);

/* Runs in the cloned child: the enforcement sequence, then init. Never returns. */
void aj_sandbox_child(const struct aj_plan *plan, const struct aj_stdio *io,
		      const struct aj_cgroup_join *join, int sync_fd) __attribute__((noreturn));

/* The sandbox's PID 1 (init.c): starts the command, reaps, forwards signals, reports the
 * command's end to the supervisor. `ctl_fd` is descriptor 3. */
void aj_init_main(const struct aj_plan *plan, int ctl_fd) __attribute__((noreturn));

#endif
