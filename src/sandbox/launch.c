#include "sandbox/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/lazylib.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/tree.h"
#include "sandbox/launch_internal.h"
#include "sandbox/mount.h"
#include "sandbox/steps.h"
#include "sandbox/userns.h"

#define SETUP_TIMEOUT_MS 30000

/* ---- child side ---------------------------------------------------------------------- */

/* The enforcement sequence (docs/architecture.md, "The enforcement sequence"), numbered as
 * there: the shared steps of steps.h, whose comments say why each sits where it does, and
 * this tier's own (the root filesystem). */
static int enter_sandbox(const struct aj_plan *plan, const struct aj_stdio *io, int sync_fd,
			 struct aj_err *err)
{
	const int keep[] = {io->in, io->out, io->err, sync_fd};

	/* 1. The id maps are written; from then on nothing inside may read this process. */
	if (aj_step_wait_go(sync_fd, "supervisor", err) < 0)
		return -1;
	aj_step_undumpable();
	aj_proctitle_wipe_environment();
	aj_trace("child: go");
	/* 2. Privileged mode: this process is still host uid 0. */
	if (plan->privileged && aj_step_become_ns_root("sandbox's", err) < 0)
		return -1;
	/* 3. The root filesystem (CAP_SYS_ADMIN in our namespaces). */
	if (aj_mount_build_root(plan, err) < 0)
		return -1;
	aj_trace("child: root filesystem built");
	/* 4. The network namespace the supervisor made meanwhile, sent once it has moved this
	 * process into the sandbox's cgroup if it made that meanwhile too (handshake()); 5. the
	 * cgroup namespace, rooted at that cgroup; loopback and hostname; 5b. the proxy's socket,
	 * made in our network namespace, and 5c. the supervisor's way in to it. */
	if (aj_step_join_netns(plan, sync_fd, err) < 0 || aj_step_cgroup_ns(err) < 0 ||
	    aj_step_network(plan, plan->policy->hostname, err) < 0 ||
	    aj_step_pass_listener(plan, sync_fd, err) < 0 ||
	    aj_step_pass_host_ports(plan, sync_fd, err) < 0 ||
	    aj_step_pass_netsock(plan, sync_fd, err) < 0)
		return -1;
	/* 6. Stdio at 0-2, the sync socket at 3; 7. the rlimits; 8. a new session. */
	if (aj_step_place_fds(keep, (int)AJ_ARRAY_SIZE(keep), 0, AJ_STEP_CTL_FD, err) < 0 ||
	    aj_step_plan_rlimits(plan, err) < 0 || aj_step_new_session(err) < 0)
		return -1;
	/* 9. The sandbox user; rootless, the groups stay (setgroups is denied there). An image
	 * root's init is its uid 0 with the plan's capabilities, and starts each command as
	 * its user. */
	if (plan->init_root
		    ? aj_step_become_user(0, 0, NULL, 0, aj_plan_maps_range(plan), plan->caps_keep,
					  err) < 0
		    : aj_step_become_user(plan->uid, plan->gid, NULL, 0, aj_plan_maps_range(plan), 0,
					  err) < 0)
		return -1;
	/* 10. The credential change cleared the parent-death signal. */
	if (aj_step_die_with_parent(err) < 0 || aj_step_supervisor_alive(AJ_STEP_CTL_FD, err) < 0)
		return -1;
	/* 11. no_new_privs. */
	if (aj_step_no_new_privs(err) < 0)
		return -1;
	aj_trace("child: user switched");
	/* 12. Landlock. */
	if (aj_step_landlock(plan, err) < 0)
		return -1;
	aj_trace("child: landlock applied");
	/* 13. seccomp, last. */
	return aj_step_seccomp(plan->sc_insns, plan->sc_len, err);
}

static void __attribute__((noreturn))
namespaces_child(const struct aj_plan *plan, const struct aj_stdio *io,
		 const struct aj_cgroup_join *join, int sync_fd)
{
	struct aj_err err;

	aj_err_clear(&err);
	/* The title must not carry the caller's command line into the sandbox's /proc. */
	aj_proctitle_set("agentjail-init");
	aj_lazylib_forbid(); /* a root the sandbox controls is never searched for a library */
	/* Until step 10 re-arms it for the final credentials. */
	aj_step_die_with_parent(NULL);
	/* 0. */
	if (aj_step_join_cgroup(join, &err) < 0 || enter_sandbox(plan, io, sync_fd, &err) < 0)
		aj_step_fail(&err, sync_fd);
	aj_init_main(plan, AJ_STEP_CTL_FD);
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

/* The child's answer to GO: with the egress proxy, first its listening socket, with a way in a
 * socket of its network namespace, then READY (or an ERROR at any point). */
static int recv_setup(const struct aj_plan *plan, struct aj_sandbox *sb,
		      struct aj_sync_msg *ready, struct aj_err *err)
{
	for (;;) {
		_cleanup_close_ int fd = -1;

		if (aj_sync_recv_fd(sb->ctl_fd, ready, SETUP_TIMEOUT_MS, &fd) < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the sandbox to be built");
		if (ready->type == AJ_SYNC_HOSTPORT) {
			const struct aj_ports *hp = &plan->policy->net_host_ports;
			if (fd < 0 || sb->n_host_ports >= hp->n ||
			    ready->status != hp->v[sb->n_host_ports])
				return aj_err_set(err, AJ_LAYER_NET, EPROTO,
						  "unexpected host port message from the sandbox");
			sb->host_port_fd[sb->n_host_ports++] = aj_steal_fd(&fd);
			continue;
		}
		if (ready->type == AJ_SYNC_NETSOCK) {
			if (!plan->inbound || fd < 0 || sb->net_fd >= 0)
				return aj_err_set(err, AJ_LAYER_NET, EPROTO,
						  "unexpected network socket message from the "
						  "sandbox");
			sb->net_fd = aj_steal_fd(&fd);
			continue;
		}
		if (ready->type != AJ_SYNC_LISTENER) {
			if (ready->type == AJ_SYNC_READY &&
			    ((plan->inbound && sb->net_fd < 0) ||
			     sb->n_host_ports != plan->policy->net_host_ports.n))
				return aj_err_set(err, AJ_LAYER_NET, EPROTO,
						  "the sandbox did not pass its network "
						  "namespace's sockets");
			return 0;
		}
		if (!plan->egress.on || fd < 0 || sb->proxy_fd >= 0)
			return aj_err_set(err, AJ_LAYER_PROXY, EPROTO,
					  "unexpected proxy socket message from the sandbox");
		sb->proxy_fd = aj_steal_fd(&fd);
	}
}

/* ---- the network namespace, made beside the child --------------------------------------
 *
 * A new network namespace is the dearest part of the clone (about 0.25 ms of its 0.45), and
 * the child needs it only at its network step, after the root filesystem. So the namespaces
 * tier clones the child without CLONE_NEWNET, and while the child builds its root the
 * supervisor makes the namespace: a helper on the supervisor's memory and descriptor table
 * joins the child's user namespace, so that the new namespace is owned by it as if the child
 * had made it (its root's capabilities hold there, the sandbox's namespace limits count it),
 * unshares one and opens it. The child joins it before anything of its network
 * (aj_step_join_netns); until then it only mounts. */

struct netns_args {
	int user;         /* the child's user namespace */
	int net;          /* out: the new network namespace, in the shared descriptor table */
	int err;          /* out: errno of the step that failed */
	const char *what; /* out: that step, NULL if none did */
};

/* The helper's stack: the supervisor waits while it runs (CLONE_VFORK), one at a time. */
static char netns_stack[16 * 1024] __attribute__((aligned(64)));

/* System calls only: it runs on the supervisor's memory, its errno included, every signal
 * blocked, on a stack the address sanitizer does not know. Its credentials and namespaces are
 * its own: the supervisor's stay as they were. */
static __attribute__((no_sanitize("address"))) int netns_helper(void *arg)
{
	struct netns_args *a = arg;

	if (setns(a->user, CLONE_NEWUSER) < 0)
		a->what = "join the sandbox's user namespace";
	else if (unshare(CLONE_NEWNET) < 0)
		a->what = "unshare(CLONE_NEWNET)";
	else if ((a->net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
		a->what = "open the new network namespace";
	else
		return 0;
	a->err = errno;
	return 1;
}

/* The child's network namespace, made and sent to it; user: its user namespace. */
static int pass_netns(struct aj_sandbox *sb, int user, struct aj_err *err)
{
	struct aj_sync_msg m = {.type = AJ_SYNC_NETNS};
	struct netns_args a = {.user = user, .net = -1};
	_cleanup_close_ int net = -1;
	sigset_t all, old;
	pid_t pid;
	int e, status = 0;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	/* No exit signal: nobody's waitpid(-1) takes it, only ours with __WCLONE. */
	pid = clone(netns_helper, netns_stack + sizeof netns_stack,
		    CLONE_VM | CLONE_VFORK | CLONE_FILES, &a);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return aj_err_set(err, AJ_LAYER_NS, e, "start the sandbox's network namespace");
	while (waitpid(pid, &status, __WCLONE) < 0 && errno == EINTR)
		;
	net = a.net;
	if (!a.what && net < 0) /* it ended before it could say: killed */
		return aj_err_set(err, AJ_LAYER_NS, EINTR,
				  "the network namespace's helper ended without one (wait status "
				  "%d)",
				  status);
	if (a.what) {
		aj_err_set(err, AJ_LAYER_NS, a.err,
			   "the network-namespace layer cannot be set up (%s)", a.what);
		if (a.err == ENOSPC)
			return aj_err_hint(err, "the limit on network namespaces "
						"(user.max_net_namespaces) is used up: end other "
						"sandboxes or containers, or raise it");
		return aj_err_hint(err, "where a seccomp profile or LSM policy on agentjail refuses "
					"it, allow setns(2) and unshare(CLONE_NEWNET) there");
	}
	/* A child that failed meanwhile has sent ERROR, which recv_setup() reads. */
	if (aj_sync_send_fd(sb->ctl_fd, &m, net) < 0 && errno != EPIPE && errno != ECONNRESET)
		return aj_err_sys(err, AJ_LAYER_NS, "send the network namespace to the sandbox");
	return 0;
}

/* Before GO: the child is still dumpable, so a rootless supervisor may open it too. Without
 * it only the unmounting moves back into init's exit. */
static int open_ns(pid_t pid, const char *which)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, which);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static void open_mount_ns(struct aj_sandbox *sb)
{
	sb->mnt_fd = open_ns(sb->pid, "mnt");
}

/* cgroup v1, while the child builds its root: the cgroup made, and each hierarchy's "tasks"
 * file sent for the child to join before the network namespace lets it go on. The child
 * writing "0" moves itself alone: the supervisor writing its pid would take the kernel's
 * global lock on every process's fork and exit (cgroup_threadgroup_rwsem) for an RCU grace
 * period. */
static int make_cgroup_later(const struct aj_cgroup_maker *maker, struct aj_sandbox *sb,
			     struct aj_err *err)
{
	__attribute__((cleanup(aj_cgroup_join_close))) struct aj_cgroup_join join = {
		.clone_into = -1, .n_tasks = 0};
	struct aj_sync_msg m = {.type = AJ_SYNC_CGROUP};
	struct aj_cgroup *cg = NULL;

	if (maker->make(maker->arg, &cg, err) < 0 ||
	    (cg && cg->env->ops->open_join(cg, &join, err) < 0))
		return -1;
	if (join.clone_into >= 0) /* v2: joined at the clone only (aj_sandbox_start()) */
		return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL,
				  "a cgroup v2 cgroup made after the clone");
	/* A child that failed meanwhile has sent ERROR, which recv_setup() reads: its reason,
	 * not the closed socket, is the run's error (as in pass_netns()). */
	for (size_t i = 0; i < join.n_tasks; i++)
		if (aj_sync_send_fd(sb->ctl_fd, &m, join.tasks[i]) < 0) {
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			return aj_err_sys(err, AJ_LAYER_CGROUP,
					  "send the sandbox its cgroup to join");
		}
	aj_trace("parent: cgroup made meanwhile");
	return 0;
}

static int handshake(struct aj_plan *plan, struct aj_cgroup *cg,
		     const struct aj_cgroup_maker *maker, struct aj_sandbox *sb,
		     struct aj_sync_msg *ready, struct aj_err *err)
{
	struct aj_sync_msg go = {.type = AJ_SYNC_GO};
	_cleanup_close_ int user = -1;

	if (sb->ops->before_go(plan, sb->pid, err) < 0)
		return -1;
	/* Only when CLONE_INTO_CGROUP was not available: before GO, nothing has forked yet. */
	if (cg && sb->attach_needed && cg->env->ops->attach(cg, sb->pid, err) < 0)
		return -1;
	if (plan->tier == AJ_TIER_NAMESPACES && (plan->clone_flags & CLONE_NEWNS))
		open_mount_ns(sb);
	if (plan->netns_later && (user = open_ns(sb->pid, "user")) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "open the sandbox's user namespace");
	if (aj_sync_send(sb->ctl_fd, &go) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "signal the sandbox to start");
	/* While the child builds its root, which only mounts: the cgroup, for the child to join
	 * before the network namespace lets it go on. */
	if (maker && make_cgroup_later(maker, sb, err) < 0)
		return -1;
	if (plan->netns_later && pass_netns(sb, user, err) < 0)
		return -1;
	if (recv_setup(plan, sb, ready, err) < 0)
		return -1;
	if (ready->type == AJ_SYNC_ERROR) {
		*err = ready->err;
		return sb->ops->explain(plan, sb->pid, err);
	}
	if (ready->type != AJ_SYNC_READY)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPROTO, "unexpected message %u from the "
								 "sandbox",
				  ready->type);
	sb->cmd_pid = ready->pid;
	aj_trace("parent: sandbox ready");
	return 0;
}

/* ---- the namespaces tier's operations ---------------------------------------------------- */

static int namespaces_prepare(const struct aj_plan *plan, struct aj_err *err)
{
	return 0; /* the idmapped trees and the id range are made for both tiers */
}

static int namespaces_fork_failed(int errnum, struct aj_err *err)
{
	return aj_userns_fail(err, errnum, "clone into new namespaces");
}

static int namespaces_explain(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	return aj_userns_explain(err, plan->privileged, pid);
}

static int namespaces_before_go(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	if (aj_userns_write_maps(pid, plan, err) < 0)
		return namespaces_explain(plan, pid, err);
	return 0;
}

/* The pid namespace takes every process along with init; nothing was made on the host. */
static void namespaces_kill_tree(pid_t spare, const struct aj_warn *warn)
{
}

static void namespaces_cleanup(const struct aj_plan *plan, const struct aj_warn *warn)
{
}

static const struct aj_launch_ops namespaces_launch = {
	.prepare = namespaces_prepare,
	.child = namespaces_child,
	.fork_failed = namespaces_fork_failed,
	.before_go = namespaces_before_go,
	.explain = namespaces_explain,
	.kill_tree = namespaces_kill_tree,
	.cleanup = namespaces_cleanup,
};

/* The launcher of the plan's tier. A tier the table lacks cannot come from the policy
 * parser; it gets the namespaces tier, as the plan builder gives it. */
static const struct aj_launch_ops *launch_ops(const struct aj_plan *plan)
{
	switch (plan->tier) {
	case AJ_TIER_NAMESPACES: return &namespaces_launch;
	case AJ_TIER_LANDLOCK: return &aj_tier_landlock_launch;
	case AJ_TIER_GVISOR: return &aj_tier_gvisor_launch;
	}
	return &namespaces_launch;
}

/* ---- start --------------------------------------------------------------------------------- */

void aj_sandbox_init(struct aj_sandbox *sb)
{
	memset(sb, 0, sizeof *sb);
	sb->pidfd = sb->ctl_fd = sb->id_lock_fd = sb->proxy_fd = sb->net_fd = sb->mnt_fd = -1;
}

/* What a start that failed undoes, in this order: the idmapped trees not attached yet, then
 * the child (killed, reaped) and the descriptors sb holds. Returns -1. */
static int start_failed(struct aj_plan *plan, struct aj_sandbox *sb)
{
	aj_userns_close_trees(plan);
	aj_sandbox_kill(sb);
	aj_sandbox_release(sb);
	return -1;
}

int aj_sandbox_start(struct aj_plan *plan, const struct aj_stdio *io, struct aj_cgroup *cg,
		     const struct aj_cgroup_maker *maker, struct aj_sandbox *sb,
		     struct aj_sync_msg *ready, struct aj_err *err)
{
	__attribute__((cleanup(aj_cgroup_join_close))) struct aj_cgroup_join join = {
		.clone_into = -1, .n_tasks = 0};
	int sv[2], clone_errno, flags;
	_cleanup_close_ int ours = -1, childs = -1;

	aj_sandbox_init(sb);
	sb->ops = launch_ops(plan);
	/* The namespaces tier's child gets its network namespace later (pass_netns()), and on
	 * cgroup v1 its cgroup then too (make_cgroup_later()): making one is half a millisecond,
	 * which the child spends on its root. On v2 the clone goes into it (CLONE_INTO_CGROUP),
	 * and it is made first. */
	plan->netns_later = sb->ops == &namespaces_launch &&
			    (plan->clone_flags & (CLONE_NEWUSER | CLONE_NEWNET)) ==
				    (CLONE_NEWUSER | CLONE_NEWNET);
	if (maker && !(plan->netns_later && plan->features->cgroup &&
		       plan->features->cgroup->mode == AJ_CGROUP_V1)) {
		if (maker->make(maker->arg, &cg, err) < 0)
			return -1;
		maker = NULL;
	}
	if (plan->privileged && aj_idrange_acquire(&plan->id_base, &sb->id_lock_fd, err) < 0)
		return -1;
	aj_trace("parent: id range");
	if (aj_userns_prepare_trees(plan, err) < 0 || sb->ops->prepare(plan, err) < 0 ||
	    (cg && cg->env->ops->open_join(cg, &join, err) < 0))
		return start_failed(plan, sb);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		aj_err_sys(err, AJ_LAYER_PROCESS, "socketpair");
		return start_failed(plan, sb);
	}
	ours = sv[0];
	childs = sv[1];
	aj_trace("parent: trees and cgroup fds ready");
	flags = plan->clone_flags & ~(plan->netns_later ? CLONE_NEWNET : 0);
	sb->pid = clone_sandbox(flags, join.clone_into, &sb->pidfd);
	if (sb->pid < 0 && errno == ENOSYS && join.clone_into >= 0) {
		/* clone3 refused (container seccomp profiles answer ENOSYS): plain clone, and the
		 * supervisor moves the child into the cgroup before letting it go on. */
		aj_close_fd(&join.clone_into);
		sb->attach_needed = true;
		sb->pid = clone_sandbox(flags, -1, &sb->pidfd);
	}
	clone_errno = errno;
	if (sb->pid == 0) { /* the child: never returns, so no cleanup runs here */
		aj_close_fd(&ours);
		aj_tree_set_elevate(NULL); /* inside, nothing acts for more than the sandbox */
		sb->ops->child(plan, io, &join, childs);
	}
	aj_cgroup_join_close(&join);
	aj_close_fd(&childs);
	sb->ctl_fd = aj_steal_fd(&ours);
	aj_userns_close_trees(plan);
	if (sb->pid < 0) {
		sb->ops->fork_failed(clone_errno, err);
		return start_failed(plan, sb);
	}
	aj_trace("parent: cloned");
	if (handshake(plan, cg, maker, sb, ready, err) < 0)
		return start_failed(plan, sb);
	return 0;
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
	aj_close_fd(&sb->pidfd);
	aj_close_fd(&sb->ctl_fd);
	aj_close_fd(&sb->id_lock_fd);
	aj_close_fd(&sb->proxy_fd);
	aj_close_fd(&sb->net_fd);
	aj_close_fd(&sb->mnt_fd);
	for (size_t i = 0; i < sb->n_host_ports; i++)
		aj_close_fd(&sb->host_port_fd[i]);
	sb->n_host_ports = 0;
}

void aj_sandbox_kill_tree(const struct aj_sandbox *sb, pid_t spare, const struct aj_warn *warn)
{
	if (sb->ops) /* NULL: aj_sandbox_start() was never called, nothing was launched */
		sb->ops->kill_tree(spare, warn);
}

void aj_sandbox_cleanup(const struct aj_sandbox *sb, const struct aj_plan *plan,
			const struct aj_warn *warn)
{
	if (sb->ops)
		sb->ops->cleanup(plan, warn);
}
