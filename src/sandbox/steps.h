/* The steps of the enforcement sequences, shared by every launcher of this module: the
 * namespaces tier's child (launch.c), the landlock tier's keeper and command
 * (tier_landlock.c), an OCI container's init and its exec'd processes (container_create.c,
 * container_exec.c, container_proc.c). Each launcher is a short ordered list of these calls
 * plus the few steps that are its own (docs/architecture.md, "The enforcement sequence").
 *
 * Each step is one function; the comment on it says why it sits where it does in the
 * order, which holds in every launcher that takes it. They run in the post-fork child:
 * they allocate nothing, and a failure fills the caller's fixed-size struct aj_err, which
 * aj_step_fail() sends to the supervisor. Nothing here owns a descriptor it is given.
 */
#ifndef AJ_SANDBOX_STEPS_H
#define AJ_SANDBOX_STEPS_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "policy/plan.h"

/* Where aj_step_place_fds() puts the sync socket in the launchers that talk over one. */
#define AJ_STEP_CTL_FD 3

/* First of all: every later process (and the child's own setup) starts in the sandbox's
 * cgroup. The single-threaded child moving only itself avoids the global lock a migration
 * by the parent would take; with clone3 it is already there. (A cgroup made after the clone
 * is joined in aj_step_join_netns().) */
int aj_step_join_cgroup(const struct aj_cgroup_join *join, struct aj_err *err);
/* The sandbox dies with its supervisor (SIGKILL when the parent goes). Armed right after
 * the fork, and again after a credential change, which clears it; err may be NULL where
 * the launcher goes on regardless. */
int aj_step_die_with_parent(struct aj_err *err);
/* Waits for GO from `peer` (named in the error) on sync_fd: what comes next needs what the
 * parent does between fork and GO (the id maps, the cgroup when clone3 was refused). */
int aj_step_wait_go(int sync_fd, const char *peer, struct aj_err *err);
/* Not dumpable: nothing inside may read this process's memory or /proc files (in rootless
 * mode it runs as the same host uid as the sandbox user). After GO: the parent writes the
 * id maps through /proc, which non-dumpable would make root's. */
void aj_step_undumpable(void);
/* Becomes root of the new user namespace (`whose`: "sandbox's", "container's"): a process
 * that came in as host uid 0 is then an unprivileged host uid, before it touches any host
 * path, and holds the namespace's capabilities for the mounts. */
int aj_step_become_ns_root(const char *whose, struct aj_err *err);
/* A cgroup namespace: after the cgroup was joined, so that the sandbox's cgroup is the
 * namespace's root. */
int aj_step_cgroup_ns(struct aj_err *err);
/* plan->netns_later: joins the network namespace the supervisor sends over sync_fd (the
 * process starts in the caller's). Before anything of the network (the steps below); after
 * the root filesystem, beside which the supervisor makes the namespace. Needs CAP_SYS_ADMIN
 * in the sandbox's user namespace, which must own it. Before it, the cgroup v1 hierarchies'
 * "tasks" files of a cgroup the supervisor made meanwhile (AJ_SYNC_CGROUP), joined as
 * aj_step_join_cgroup() joins. Nothing otherwise. */
int aj_step_join_netns(const struct aj_plan *plan, int sync_fd, struct aj_err *err);
/* Loopback up (when the plan made a network namespace) and the hostname (when not NULL):
 * need CAP_NET_ADMIN and CAP_SYS_ADMIN in the new namespaces, so before the user switch. */
int aj_step_network(const struct aj_plan *plan, const char *hostname, struct aj_err *err);
/* network.mode "proxy": the proxy's listening socket on 127.0.0.1:plan->egress.port of the
 * calling process's network namespace, sent to the supervisor over sync_fd. After loopback
 * is up (127.0.0.1 exists only then), before Landlock (in the landlock tier it denies bind)
 * and seccomp, and before the descriptor shuffle moves the sync socket. Nothing without a proxy. */
int aj_step_pass_listener(const struct aj_plan *plan, int sync_fd, struct aj_err *err);
/* plan->inbound: an unbound socket of the calling process's network namespace, sent to the
 * supervisor over sync_fd: its dialer joins the namespace through it (the namespace's own
 * handle, without ptrace access to an undumpable init). Where aj_step_pass_listener is. */
int aj_step_pass_netsock(const struct aj_plan *plan, int sync_fd, struct aj_err *err);
/* network.host_ports: a listening socket on the sandbox's 127.0.0.1:PORT for each, sent to
 * the supervisor, which relays what connects there to the host's 127.0.0.1:PORT. Where
 * aj_step_pass_listener is; in the namespaces tier only (the plan refuses the field in the
 * landlock tier). */
int aj_step_pass_host_ports(const struct aj_plan *plan, int sync_fd, struct aj_err *err);
/* The descriptors the process keeps, at fixed numbers: fds[i] becomes first + i (fds[i] <
 * 0 leaves that number as it is), close-on-exec from number cloexec_from on; every
 * descriptor from first + n up is closed, so nothing the caller left open reaches the
 * sandbox; those below first stay. Before the rlimits, which may allow fewer descriptors
 * than the numbers used to shuffle them. */
int aj_step_place_fds(const int *fds, int n, int first, int cloexec_from, struct aj_err *err);
/* One resource limit, while the process may still set it: before the user switch. */
int aj_step_setrlimit(int resource, uint64_t soft, uint64_t hard, struct aj_err *err);
/* The plan's rlimits (soft = hard), in the same place. */
int aj_step_plan_rlimits(const struct aj_plan *plan, struct aj_err *err);
/* A new session without a controlling terminal: the sandbox cannot push input into the
 * caller's terminal (TIOCSTI) nor receive its job-control signals. */
int aj_step_new_session(struct aj_err *err);
/* Securebits locked and the bounding set emptied (CAP_SETPCAP), the supplementary groups
 * set when set_groups (CAP_SETGID): both before the switch to uid:gid, which then clears
 * every remaining capability set. With `keep` (an image's root, uid 0), those capabilities
 * stay in the bounding, permitted and effective sets (caps.h). */
int aj_step_become_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
			bool set_groups, uint64_t keep, struct aj_err *err);
/* Fails with EPIPE if the supervisor's end of fd is gone: it may have died before the
 * death signal was armed (again), and nothing would then take the sandbox down. */
int aj_step_supervisor_alive(int fd, struct aj_err *err);
/* no_new_privs: setuid binaries and file capabilities can no longer raise privileges, and
 * Landlock and seccomp accept an unprivileged caller. After the last privileged step. */
int aj_step_no_new_privs(struct aj_err *err);
/* The plan's Landlock ruleset (filesystem rules of its operations, TCP rules, scopes), or
 * nothing when the plan has none. After the mounts: its rules open paths of the final tree;
 * after no_new_privs, which it needs unprivileged. */
int aj_step_landlock(const struct aj_plan *plan, struct aj_err *err);
/* A seccomp program (none if insns is NULL). Last, so that the filter need not allow any of
 * the setup before it. */
int aj_step_seccomp(const struct sock_filter *insns, size_t len, struct aj_err *err);
/* A setup step failed: ERROR with err to the supervisor, on sync_fd or, if the descriptor
 * shuffle already moved it, on AJ_STEP_CTL_FD; then exit 125. */
void aj_step_fail(const struct aj_err *err, int sync_fd) __attribute__((noreturn));

#endif
