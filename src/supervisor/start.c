#include "supervisor/start.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "common/cleanup.h"

int aj_sv_cgroup_create(const struct aj_plan *plan, const char *name, struct aj_cgroup *cg,
			struct aj_cgroup_guard *guard, int linger_fd, struct aj_err *err)
{
	if (!plan->use_cgroup)
		return linger_fd >= 0 ? aj_cgroup_guard_start(guard, NULL, linger_fd, err) : 0;
	cg->env = plan->features->cgroup;
	if (cg->env->ops->create(cg, name, &plan->cg_limits, err) < 0) {
		cg->env->ops->destroy(cg, NULL);
		aj_cgroup_free(cg);
		return -1;
	}
	if (aj_cgroup_guard_start(guard, cg, linger_fd, err) < 0) {
		cg->env->ops->destroy(cg, NULL);
		aj_cgroup_free(cg);
		return -1;
	}
	return 1;
}

void aj_sv_cgroup_remove(struct aj_cgroup *cg, struct aj_cgroup_guard *guard)
{
	cg->env->ops->destroy(cg, NULL);
	aj_cgroup_free(cg);
	aj_cgroup_guard_release(guard);
}

int aj_sv_egress_new(struct aj_plan *plan, struct aj_egress **out, struct aj_err *err)
{
	char *bundle = NULL, *ca = NULL;
	size_t bundle_len = 0, ca_len = 0;

	*out = NULL;
	if (!plan->egress.on)
		return 0;
	if (aj_egress_new(plan, out, err) < 0)
		return -1;
	if (aj_egress_ca_files(*out, &bundle, &bundle_len, &ca, &ca_len, err) < 0) {
		aj_egress_free(*out);
		*out = NULL;
		return -1;
	}
	if (bundle)
		aj_plan_egress_ca(plan, bundle, bundle_len, ca, ca_len);
	return 0;
}

int aj_sv_ports_bind(const struct aj_plan *plan, struct aj_ports **out, struct aj_err *err)
{
	*out = NULL;
	if (!plan->policy->net_publish.n)
		return 0;
	*out = aj_ports_new();
	if (aj_ports_bind(*out, &plan->policy->net_publish, err) < 0) {
		aj_ports_free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

static int dial(void *arg, int family, struct aj_err *err)
{
	return aj_dialer_socket(arg, family, err);
}

int aj_sv_ports_start(struct aj_ports *ports, struct aj_dialer *d, int net_fd,
		      struct event_base *base, aj_ports_emit_fn emit, void *arg, struct aj_err *err)
{
	if (ports && net_fd < 0)
		return aj_err_set(err, AJ_LAYER_NET, EPROTO,
				  "published ports, but no way into the sandbox's network namespace");
	/* Without published ports the dialer serves port-forward alone: a sandbox whose
	 * namespace it cannot join still starts (port-forward then says why it cannot). */
	if (net_fd >= 0 && aj_dialer_start(d, net_fd, err) < 0) {
		if (ports)
			return -1;
		d->why = err->errnum;
		aj_err_clear(err);
		return 0;
	}
	if (!ports)
		return 0;
	return aj_ports_start(ports, base, dial, d, emit, arg, err);
}

/* A socket of the supervisor's own namespace: the host's loopback. */
static int host_socket(void *arg, int family, struct aj_err *err)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	(void)arg;
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "a socket to the host's loopback");
	return fd;
}

int aj_sv_host_ports_start(struct aj_sandbox *sb, struct event_base *base, aj_ports_emit_fn emit,
			   void *arg, struct aj_ports **out, struct aj_err *err)
{
	*out = NULL;
	if (!sb->n_host_ports)
		return 0;
	*out = aj_ports_new();
	for (size_t i = 0; i < sb->n_host_ports; i++) {
		int fd = aj_steal_fd(&sb->host_port_fd[i]);
		struct sockaddr_in a = {0};
		socklen_t len = sizeof a;
		uint16_t port = getsockname(fd, (struct sockaddr *)&a, &len) == 0 ? ntohs(a.sin_port) : 0;
		aj_ports_adopt(*out, fd, port, "host_port.connection");
	}
	sb->n_host_ports = 0;
	return aj_ports_start(*out, base, host_socket, NULL, emit, arg, err);
}
