#include "sandbox/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/mount.h"
#include "sandbox/netif.h"
#include "sandbox/seccomp.h"
#include "sandbox/tier_landlock.h"
#include "sandbox/userns.h"

#define SETUP_TIMEOUT_MS 30000

/* ---- child side ---------------------------------------------------------------------- */

static int become_namespace_root(struct aj_err *err)
{
	if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "become root of the sandbox's user namespace");
	return 0;
}

static int apply_rlimits(const struct aj_plan *plan, struct aj_err *err)
{
	for (size_t i = 0; i < plan->n_rlimits; i++) {
		struct rlimit rl = {plan->rlimits[i].value, plan->rlimits[i].value};
		if (setrlimit(plan->rlimits[i].resource, &rl) < 0)
			return aj_err_sys(err, AJ_LAYER_RLIMIT, "setrlimit(%d, %lu)",
					  plan->rlimits[i].resource,
					  (unsigned long)plan->rlimits[i].value);
	}
	return 0;
}

/* The command's stdio becomes 0-2 and the control socket 3; every other descriptor inherited
 * from the caller is closed. */
static int arrange_fds(const struct aj_stdio *io, int sync_fd, struct aj_err *err)
{
	int fds[4] = {io->in, io->out, io->err, sync_fd};
	int high[4];

	for (int i = 0; i < 4; i++) {
		high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
		if (high[i] < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "duplicate descriptor %d", fds[i]);
	}
	for (int i = 0; i < 4; i++)
		if (dup3(high[i], i, i == 3 ? O_CLOEXEC : 0) < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "place descriptor %d", i);
	if (close_range(4, ~0U, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "close inherited descriptors");
	return 0;
}

static int apply_landlock(const struct aj_plan *plan, struct aj_err *err)
{
	struct aj_landlock_rule rules[128];
	struct aj_landlock_spec spec = {
		.abi = plan->landlock_abi,
		.handled_fs = plan->ll_fs,
		.handled_net = plan->ll_net,
		.scoped = plan->ll_scope,
		.rules = rules,
	};

	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct aj_op *op = &plan->ops[i];
		if (!op->landlock || access(op->dst, F_OK) < 0)
			continue; /* an optional entry this host lacks */
		if (spec.n_rules == AJ_ARRAY_SIZE(rules))
			return aj_err_set(err, AJ_LAYER_LANDLOCK, E2BIG, "more than %zu rules",
					  AJ_ARRAY_SIZE(rules));
		rules[spec.n_rules].path = op->dst;
		rules[spec.n_rules++].access = op->landlock;
	}
	/* TCP rules exist only in the landlock tier (the namespaces tier's network namespace is
	 * the boundary there): the proxy's port is the one destination left, and the ports
	 * network.listen names the only ones that may be bound. */
	if (plan->egress.on) {
		spec.connect_ports = &plan->egress.port;
		spec.n_connect_ports = 1;
	}
	spec.bind_ports = plan->policy->net_listen.v;
	spec.n_bind_ports = plan->policy->net_listen.n;
	return aj_landlock_apply(&spec, err);
}

/* The proxy's listening socket is made here, in the sandbox's network namespace, so that
 * only the sandbox can reach it; the supervisor accepts on it from outside. */
static int pass_listener(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	struct aj_sync_msg m = {.type = AJ_SYNC_LISTENER};
	int fd = -1;

	if (aj_netif_proxy_listener(plan->egress.port, &fd, err) < 0)
		return -1;
	if (aj_sync_send_fd(sync_fd, &m, fd) < 0) {
		close(fd);
		return aj_err_sys(err, AJ_LAYER_PROXY, "pass the proxy's socket to the supervisor");
	}
	close(fd);
	return 0;
}

static bool supervisor_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = 0};
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* The enforcement sequence (docs/architecture.md, "The enforcement sequence"). Each step says
 * why it sits where it does. */
static int enter_sandbox(const struct aj_plan *plan, const struct aj_stdio *io, int sync_fd,
			 struct aj_err *err)
{
	struct aj_sync_msg go;

	/* 1. Wait for the supervisor: switching ids below needs the id maps. */
	if (aj_sync_recv(sync_fd, &go, SETUP_TIMEOUT_MS) < 0 || go.type != AJ_SYNC_GO)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the supervisor");
	/*    Nothing inside may read this process's memory or /proc files: in rootless mode it
	 *    runs as the same host uid as the sandbox user, so only the dumpable flag guards
	 *    /proc/1/mem and /proc/1/environ (commands become dumpable again on exec). Not
	 *    before GO: the supervisor writes our id maps through /proc, which non-dumpable
	 *    would make root's. Nothing runs inside yet. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	aj_proctitle_wipe_environment();
	aj_trace("child: go");
	/* 2. Privileged mode: this process is still host uid 0; become root of the new
	 *    namespace, an unprivileged host uid, before touching any host path. */
	if (plan->privileged && become_namespace_root(err) < 0)
		return -1;
	/* 3. After the cgroup was joined, so that the sandbox's cgroup is the namespace's root. */
	if (unshare(CLONE_NEWCGROUP) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "unshare(CLONE_NEWCGROUP)");
	/* 4. The root filesystem: needs CAP_SYS_ADMIN in our namespaces. */
	if (aj_mount_build_root(plan, err) < 0)
		return -1;
	aj_trace("child: root filesystem built");
	/* 5. Loopback and hostname: need CAP_NET_ADMIN and CAP_SYS_ADMIN in our namespaces. */
	if (((plan->clone_flags & CLONE_NEWNET) && aj_netif_loopback_up(err) < 0) ||
	    aj_netif_set_hostname(plan->policy->hostname, err) < 0)
		return -1;
	/* 5b. The egress proxy's listening socket: after lo is up (127.0.0.1 exists only
	 *     then), before Landlock, which denies bind, and before the fd shuffle of step 6
	 *     moves the sync socket. */
	if (plan->egress.on && pass_listener(plan, sync_fd, err) < 0)
		return -1;
	/* 6. Stdio in place, everything else the caller left open is closed; before the
	 *    rlimits, which may allow fewer descriptors than the numbers used to shuffle them. */
	if (arrange_fds(io, sync_fd, err) < 0)
		return -1;
	/* 7. Resource limits while we still may set them. */
	if (apply_rlimits(plan, err) < 0)
		return -1;
	/* 8. A new session without a controlling terminal: the sandbox cannot push input into
	 *    the caller's terminal (TIOCSTI) nor receive its job-control signals. */
	if (setsid() < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "setsid");
	/* 9. Securebits and the bounding set need CAP_SETPCAP: before the switch to the sandbox
	 *    user, which then clears every remaining capability set. */
	if (aj_caps_lock_and_bound(err) < 0 ||
	    aj_caps_become_user(plan->uid, plan->gid, plan->privileged, err) < 0)
		return -1;
	/* 10. The credential change cleared the parent-death signal: the sandbox must die with
	 *     its supervisor, so set it now and check the supervisor did not already go. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_PDEATHSIG)");
	if (supervisor_gone(3))
		return aj_err_set(err, AJ_LAYER_PROCESS, EPIPE, "the supervisor went away");
	/* 11. no_new_privs: setuid binaries and file capabilities can no longer raise
	 *     privileges, and Landlock and seccomp accept an unprivileged caller. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_NO_NEW_PRIVS)");
	aj_trace("child: user switched");
	/* 12. Landlock after the mounts: its rules open paths of the final tree. */
	if (plan->landlock_abi > 0 && plan->ll_fs && apply_landlock(plan, err) < 0)
		return -1;
	aj_trace("child: landlock applied");
	/* 13. seccomp last, so that the filter need not allow any of the setup above. */
	if (plan->sc_insns && aj_seccomp_load(plan->sc_insns, plan->sc_len, err) < 0)
		return -1;
	return 0;
}

void aj_sandbox_child(const struct aj_plan *plan, const struct aj_stdio *io,
		      const struct aj_cgroup_join *join, int sync_fd)
{
	struct aj_err err;
	struct aj_sync_msg msg;
	int r;

	aj_err_clear(&err);
	aj_proctitle_set("agentjail-init");
	/* Until step 10 re-arms it for the final credentials. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* 0. Into the cgroup before anything else, so that every later process starts there. */
	r = aj_cgroup_join_self(join);
	if (r < 0)
		aj_err_set(&err, AJ_LAYER_CGROUP, -r, "join the sandbox's cgroup");
	if (r < 0 || enter_sandbox(plan, io, sync_fd, &err) < 0) {
		memset(&msg, 0, sizeof msg);
		msg.type = AJ_SYNC_ERROR;
		msg.err = err;
		/* sync_fd may already have moved to 3 */
		if (aj_sync_send(sync_fd, &msg) < 0)
			aj_sync_send(3, &msg);
		_exit(125);
	}
	aj_init_main(plan, 3);
}

/* ---- supervisor side ------------------------------------------------------------------ */

struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/* Fork semantics (no new stack): the child continues in the caller with a copy of the plan.
 * CLONE_PIDFD gives a race-free handle on init. */
static pid_t clone_sandbox(int flags, int cgroup_fd, int *pidfd)
{
	struct clone3_args a;

	if (cgroup_fd < 0)
		return (pid_t)syscall(SYS_clone, (unsigned long)flags | CLONE_PIDFD | SIGCHLD, NULL,
				      pidfd, NULL, 0);
	memset(&a, 0, sizeof a);
	a.flags = (uint64_t)(unsigned)flags | CLONE_PIDFD | CLONE_INTO_CGROUP;
	a.pidfd = (uint64_t)(uintptr_t)pidfd;
	a.exit_signal = SIGCHLD;
	a.cgroup = (uint64_t)cgroup_fd;
	return (pid_t)syscall(SYS_clone3, &a, sizeof a);
}

/* The child's answer to GO: with the egress proxy, first its listening socket, then READY
 * (or an ERROR at any point). */
static int recv_setup(const struct aj_plan *plan, struct aj_sandbox *sb,
		      struct aj_sync_msg *ready, struct aj_err *err)
{
	int fd = -1;

	for (;;) {
		if (aj_sync_recv_fd(sb->ctl_fd, ready, SETUP_TIMEOUT_MS, &fd) < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the sandbox to be built");
		if (ready->type != AJ_SYNC_LISTENER) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
		if (!plan->egress.on || fd < 0 || sb->proxy_fd >= 0) {
			if (fd >= 0)
				close(fd);
			return aj_err_set(err, AJ_LAYER_PROXY, EPROTO,
					  "unexpected proxy socket message from the sandbox");
		}
		sb->proxy_fd = fd;
	}
}

static int handshake(struct aj_plan *plan, struct aj_cgroup *cg, struct aj_sandbox *sb,
		     struct aj_sync_msg *ready, struct aj_err *err)
{
	struct aj_sync_msg go = {.type = AJ_SYNC_GO};

	/* The landlock tier has no user namespace, hence no maps. */
	if (plan->tier == AJ_TIER_NAMESPACES && aj_userns_write_maps(sb->pid, plan, err) < 0)
		return aj_userns_explain(err, plan->privileged, sb->pid);
	/* Only when CLONE_INTO_CGROUP was not available: before GO, nothing has forked yet. */
	if (cg && sb->attach_needed && cg->env->ops->attach(cg, sb->pid, err) < 0)
		return -1;
	if (aj_sync_send(sb->ctl_fd, &go) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "signal the sandbox to start");
	if (recv_setup(plan, sb, ready, err) < 0)
		return -1;
	if (ready->type == AJ_SYNC_ERROR) {
		*err = ready->err;
		return plan->tier == AJ_TIER_NAMESPACES
			       ? aj_userns_explain(err, plan->privileged, sb->pid)
			       : -1;
	}
	if (ready->type != AJ_SYNC_READY)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPROTO, "unexpected message %u from the "
								 "sandbox",
				  ready->type);
	sb->cmd_pid = ready->pid;
	aj_trace("parent: sandbox ready");
	return 0;
}

int aj_sandbox_start(struct aj_plan *plan, const struct aj_stdio *io, struct aj_cgroup *cg,
		     struct aj_sandbox *sb, struct aj_sync_msg *ready, struct aj_err *err)
{
	struct aj_cgroup_join join = {.clone_into = -1, .n_tasks = 0};
	int sv[2];

	memset(sb, 0, sizeof *sb);
	sb->pidfd = sb->ctl_fd = sb->id_lock_fd = sb->proxy_fd = -1;
	if (plan->privileged && aj_idrange_acquire(&plan->id_base, &sb->id_lock_fd, err) < 0)
		return -1;
	aj_trace("parent: id range");
	if (aj_userns_prepare_trees(plan, err) < 0 ||
	    (plan->tier == AJ_TIER_LANDLOCK && aj_tier_landlock_prepare(plan, err) < 0) ||
	    (cg && cg->env->ops->open_join(cg, &join, err) < 0))
		goto fail;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		aj_err_sys(err, AJ_LAYER_PROCESS, "socketpair");
		goto fail;
	}
	aj_trace("parent: trees and cgroup fds ready");
	sb->pid = clone_sandbox(plan->clone_flags, join.clone_into, &sb->pidfd);
	if (sb->pid < 0 && errno == ENOSYS && join.clone_into >= 0) {
		/* clone3 refused (container seccomp profiles answer ENOSYS): plain clone, and the
		 * supervisor moves the child into the cgroup before letting it go on. */
		close(join.clone_into);
		join.clone_into = -1;
		sb->attach_needed = true;
		sb->pid = clone_sandbox(plan->clone_flags, -1, &sb->pidfd);
	}
	if (sb->pid == 0) {
		close(sv[0]);
		if (plan->tier == AJ_TIER_LANDLOCK)
			aj_tier_landlock_child(plan, io, &join, sv[1]);
		aj_sandbox_child(plan, io, &join, sv[1]);
	}
	aj_cgroup_join_close(&join);
	close(sv[1]);
	sb->ctl_fd = sv[0];
	aj_userns_close_trees(plan);
	if (sb->pid < 0 && plan->tier == AJ_TIER_LANDLOCK) {
		aj_err_sys(err, AJ_LAYER_PROCESS, "fork the sandbox's keeper");
		goto fail;
	}
	if (sb->pid < 0) {
		aj_userns_fail(err, errno, "clone into new namespaces");
		goto fail;
	}
	aj_trace("parent: cloned");
	if (handshake(plan, cg, sb, ready, err) < 0)
		goto fail;
	return 0;
fail:
	aj_cgroup_join_close(&join);
	aj_userns_close_trees(plan);
	aj_sandbox_kill(sb);
	aj_sandbox_release(sb);
	return -1;
}

void aj_sandbox_kill(struct aj_sandbox *sb)
{
	if (sb->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
	else if (sb->pid > 0)
		kill(sb->pid, SIGKILL);
}

void aj_sandbox_release(struct aj_sandbox *sb)
{
	if (sb->pid > 0) {
		waitpid(sb->pid, NULL, 0);
		sb->pid = 0;
	}
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	if (sb->ctl_fd >= 0)
		close(sb->ctl_fd);
	if (sb->id_lock_fd >= 0)
		close(sb->id_lock_fd);
	if (sb->proxy_fd >= 0)
		close(sb->proxy_fd);
	sb->pidfd = sb->ctl_fd = sb->id_lock_fd = sb->proxy_fd = -1;
}

int aj_sandbox_apply_landlock(const struct aj_plan *plan, struct aj_err *err)
{
	return apply_landlock(plan, err);
}

int aj_sandbox_arrange_fds(const struct aj_stdio *io, int sync_fd, struct aj_err *err)
{
	return arrange_fds(io, sync_fd, err);
}

int aj_sandbox_apply_rlimits(const struct aj_plan *plan, struct aj_err *err)
{
	return apply_rlimits(plan, err);
}

int aj_sandbox_pass_listener(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	return pass_listener(plan, sync_fd, err);
}
