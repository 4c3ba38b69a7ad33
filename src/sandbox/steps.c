/* The shared steps of the enforcement sequences (steps.h says why each sits where it does).
 * Post-fork code: no allocation, errors into the caller's struct aj_err. */
#include "sandbox/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/netif.h"
#include "sandbox/seccomp.h"
#include "sandbox/sync.h"

#define SETUP_TIMEOUT_MS 30000

int aj_step_join_cgroup(const struct aj_cgroup_join *join, struct aj_err *err)
{
	int r = aj_cgroup_join_self(join);

	if (r < 0)
		return aj_err_set(err, AJ_LAYER_CGROUP, -r, "join the sandbox's cgroup");
	return 0;
}

int aj_step_die_with_parent(struct aj_err *err)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_PDEATHSIG)");
	return 0;
}

int aj_step_wait_go(int sync_fd, const char *peer, struct aj_err *err)
{
	struct aj_sync_msg go;

	if (aj_sync_recv(sync_fd, &go, SETUP_TIMEOUT_MS) < 0 || go.type != AJ_SYNC_GO)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "wait for the %s", peer);
	return 0;
}

void aj_step_undumpable(void)
{
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int aj_step_become_ns_root(const char *whose, struct aj_err *err)
{
	if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "become root of the %s user namespace",
				  whose);
	return 0;
}

int aj_step_cgroup_ns(struct aj_err *err)
{
	if (unshare(CLONE_NEWCGROUP) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "unshare(CLONE_NEWCGROUP)");
	return 0;
}

int aj_step_join_netns(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	struct aj_sync_msg m;
	_cleanup_close_ int fd = -1;

	if (!plan->netns_later)
		return 0;
	for (;;) {
		if (aj_sync_recv_fd(sync_fd, &m, SETUP_TIMEOUT_MS, &fd) < 0)
			return aj_err_sys(err, AJ_LAYER_NS,
					  "wait for the sandbox's network namespace");
		if (m.type != AJ_SYNC_CGROUP)
			break;
		/* "0": this process alone, which the kernel moves without the global lock that
		 * moving another process takes. */
		if (fd < 0 || write(fd, "0", 1) != 1)
			return aj_err_set(err, AJ_LAYER_CGROUP, fd < 0 ? EPROTO : errno,
					  "join the sandbox's cgroup");
		aj_close_fd(&fd);
	}
	if (m.type != AJ_SYNC_NETNS || fd < 0)
		return aj_err_set(err, AJ_LAYER_NS, EPROTO,
				  "unexpected message %u instead of the network namespace", m.type);
	/* Until here this process is in the caller's network namespace. The kernel lets it join
	 * only a namespace its own user namespace owns: never the caller's, nor the host's. */
	if (setns(fd, CLONE_NEWNET) < 0)
		return aj_err_sys(err, AJ_LAYER_NS, "join the sandbox's network namespace");
	return 0;
}

int aj_step_network(const struct aj_plan *plan, const char *hostname, struct aj_err *err)
{
	if ((plan->clone_flags & CLONE_NEWNET) && aj_netif_loopback_up(err) < 0)
		return -1;
	if (hostname && aj_netif_set_hostname(hostname, err) < 0)
		return -1;
	return 0;
}

/* Made here, in the sandbox's network namespace (or, in the landlock tier, on the host's
 * loopback), so that the sandbox reaches it; the supervisor accepts on it from outside. */
int aj_step_pass_listener(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	struct aj_sync_msg m = {.type = AJ_SYNC_LISTENER};
	_cleanup_close_ int fd = -1; /* the supervisor's copy is the one that serves */

	if (!plan->egress.on)
		return 0;
	if (aj_netif_loopback_listener(plan->egress.port, "the egress proxy", &fd, err) < 0)
		return -1;
	if (aj_sync_send_fd(sync_fd, &m, fd) < 0)
		return aj_err_sys(err, AJ_LAYER_PROXY, "pass the proxy's socket to the supervisor");
	return 0;
}

int aj_step_pass_host_ports(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	const struct aj_ports *hp = &plan->policy->net_host_ports;

	for (size_t i = 0; i < hp->n; i++) {
		struct aj_sync_msg m = {.type = AJ_SYNC_HOSTPORT, .status = hp->v[i]};
		_cleanup_close_ int fd = -1;
		if (aj_netif_loopback_listener(hp->v[i], "a host port (network.host_ports)", &fd,
					       err) < 0)
			return -1;
		if (aj_sync_send_fd(sync_fd, &m, fd) < 0)
			return aj_err_sys(err, AJ_LAYER_NET,
					  "pass host port %u's socket to the supervisor", hp->v[i]);
	}
	return 0;
}

int aj_step_pass_netsock(const struct aj_plan *plan, int sync_fd, struct aj_err *err)
{
	struct aj_sync_msg m = {.type = AJ_SYNC_NETSOCK};
	_cleanup_close_ int fd = -1;

	if (!plan->inbound)
		return 0;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "a socket for the supervisor's way in");
	if (aj_sync_send_fd(sync_fd, &m, fd) < 0)
		return aj_err_sys(err, AJ_LAYER_NET,
				  "pass the network namespace's socket to the supervisor");
	return 0;
}

#define MAX_PLACED 8

int aj_step_place_fds(const int *fds, int n, int first, int cloexec_from, struct aj_err *err)
{
	int high[MAX_PLACED];

	if (n > MAX_PLACED)
		return aj_err_set(err, AJ_LAYER_INTERNAL, E2BIG, "more than %d descriptors to keep",
				  MAX_PLACED);
	/* Every copy above the target numbers first, so that no dup3 below closes a
	 * descriptor still to be placed. */
	for (int i = 0; i < n; i++) {
		high[i] = fds[i] < 0 ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, first + n);
		if (fds[i] >= 0 && high[i] < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "duplicate descriptor %d", fds[i]);
	}
	for (int i = 0; i < n; i++)
		if (high[i] >= 0 &&
		    dup3(high[i], first + i, first + i >= cloexec_from ? O_CLOEXEC : 0) < 0)
			return aj_err_sys(err, AJ_LAYER_PROCESS, "place descriptor %d", first + i);
	if (close_range((unsigned)(first + n), ~0U, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "close inherited descriptors");
	return 0;
}

int aj_step_setrlimit(int resource, uint64_t soft, uint64_t hard, struct aj_err *err)
{
	struct rlimit rl = {soft, hard};

	if (setrlimit(resource, &rl) < 0)
		return aj_err_sys(err, AJ_LAYER_RLIMIT, "setrlimit(%d, %lu, %lu)", resource,
				  (unsigned long)soft, (unsigned long)hard);
	return 0;
}

int aj_step_plan_rlimits(const struct aj_plan *plan, struct aj_err *err)
{
	for (size_t i = 0; i < plan->n_rlimits; i++)
		if (aj_step_setrlimit(plan->rlimits[i].resource, plan->rlimits[i].value,
				      plan->rlimits[i].value, err) < 0)
			return -1;
	return 0;
}

int aj_step_new_session(struct aj_err *err)
{
	if (setsid() < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "setsid");
	return 0;
}

int aj_step_become_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
			bool set_groups, uint64_t keep, struct aj_err *err)
{
	if (aj_caps_lock_and_bound(keep, err) < 0)
		return -1;
	if (set_groups && setgroups(n_groups, groups) < 0)
		return aj_err_sys(err, AJ_LAYER_CAPS, "setgroups(%zu groups)", n_groups);
	return aj_caps_become_user(uid, gid, false, keep, err);
}

int aj_step_supervisor_alive(int fd, struct aj_err *err)
{
	struct pollfd p = {.fd = fd, .events = 0};

	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)))
		return aj_err_set(err, AJ_LAYER_PROCESS, EPIPE, "the supervisor went away");
	return 0;
}

int aj_step_no_new_privs(struct aj_err *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "prctl(PR_SET_NO_NEW_PRIVS)");
	return 0;
}

int aj_step_landlock(const struct aj_plan *plan, struct aj_err *err)
{
	struct aj_landlock_rule rules[AJ_LANDLOCK_MAX_RULES];
	struct aj_landlock_spec spec = {
		.abi = plan->landlock_abi,
		.handled_fs = plan->ll_fs,
		.handled_net = plan->ll_net,
		.scoped = plan->ll_scope,
		.rules = rules,
	};

	/* No Landlock in the plan: the kernel has none and allow_degraded accepted that. */
	if (plan->landlock_abi <= 0 || !plan->ll_fs)
		return 0;
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct aj_op *op = &plan->ops[i];
		if (!op->landlock)
			continue;
		if (spec.n_rules == AJ_ARRAY_SIZE(rules))
			return aj_err_set(err, AJ_LAYER_LANDLOCK, E2BIG, "more than %zu rules",
					  AJ_ARRAY_SIZE(rules));
		/* optional: an entry this host lacks is not in the tree */
		rules[spec.n_rules++] =
			(struct aj_landlock_rule){.path = op->dst, .access = op->landlock,
						  .optional = true};
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

int aj_step_seccomp(const struct sock_filter *insns, size_t len, struct aj_err *err)
{
	if (insns && aj_seccomp_load(insns, len, err) < 0)
		return -1;
	return 0;
}

void aj_step_fail(const struct aj_err *err, int sync_fd)
{
	struct aj_sync_msg msg;

	memset(&msg, 0, sizeof msg);
	msg.type = AJ_SYNC_ERROR;
	msg.err = *err;
	if (aj_sync_send(sync_fd, &msg) < 0)
		aj_sync_send(AJ_STEP_CTL_FD, &msg);
	_exit(125);
}
