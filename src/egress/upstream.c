/* Reaching a target: resolve its name outside the sandbox, check every address it resolves
 * to, connect to one of exactly those addresses (never resolving again in between, so a
 * name cannot be re-pointed after the check), and put verified TLS on top when the proxy
 * injects a credential there. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "egress/internal.h"

static void try_next(struct pconn *pc, const char *last_error, enum pc_fail last_fail);

/* The proxy writes whole messages; Nagle's algorithm would only hold back the last
 * segment of each (40 ms with delayed ACKs on the other side). */
void aj_egress_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void up_close(struct pconn *pc)
{
	if (pc->up)
		bufferevent_free(pc->up);
	pc->up = NULL;
	pc->up_reusable = false;
	pc->up_host[0] = '\0';
	if (pc->ai)
		evutil_freeaddrinfo(pc->ai);
	pc->ai = pc->ai_next = NULL;
}

/* A closed connection with a resolution in flight stays allocated until the resolver
 * reports back (the request holds a reference). */
void up_cancel(struct pconn *pc)
{
	if (!pc->dns_pending)
		return;
	pc->eg->n_pending++;
	if (pc->dns)
		evdns_getaddrinfo_cancel(pc->dns);
	pc->dns = NULL;
}

/* Every address must pass: a name that resolves to both a public and a private address is
 * refused as a whole (a rebinding attacker controls which one a client would pick). An address
 * of this host counts as private: from here, outside the sandbox, it reaches the host's own
 * services. */
static bool check_all(struct pconn *pc, struct evutil_addrinfo *ai, char *why, size_t len)
{
	char reason[200], text[64];
	size_t n_local;
	const struct aj_cidr *local = aj_egress_local_addrs(&n_local);

	for (; ai; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (!aj_egress_addr_allowed(ai->ai_addr, pc->eg->private_ok, pc->eg->n_private_ok,
					    reason, sizeof reason)) {
			if (aj_egress_host_is_literal(pc->host))
				snprintf(why, len, "the address %s is refused; the proxy does not "
					 "connect there unless network.allow_private names it",
					 reason);
			else
				snprintf(why, len, "%s resolves to %s; the proxy does not connect "
					 "there unless network.allow_private names it",
					 pc->host, reason);
			return false;
		}
		if (aj_egress_addr_in(ai->ai_addr, local, n_local) &&
		    !aj_egress_addr_in(ai->ai_addr, pc->eg->private_ok, pc->eg->n_private_ok)) {
			aj_egress_addr_text(ai->ai_addr, text, sizeof text);
			snprintf(why, len, "%s is an address of the host agentjail runs on; the proxy "
				 "does not connect there unless network.allow_private names it",
				 text);
			return false;
		}
	}
	return true;
}

static void on_resolved(int result, struct evutil_addrinfo *ai, void *arg)
{
	struct pconn *pc = arg;
	char why[600];

	pc->dns_pending = false;
	pc->dns = NULL;
	if (pc->closed) {
		pc->eg->n_pending--;
		if (ai)
			evutil_freeaddrinfo(ai);
		pc_release(pc);
		return;
	}
	if (result != 0 || !ai) {
		snprintf(why, sizeof why, "cannot resolve %s: %s", pc->host,
			 result ? evutil_gai_strerror(result) : "no address");
		pc_upstream_failed(pc, EF_DNS, why);
	} else if (!check_all(pc, ai, why, sizeof why)) {
		snprintf(pc->rule, sizeof pc->rule, "address guard (network.allow_private)");
		evutil_freeaddrinfo(ai);
		pc_upstream_failed(pc, EF_DENIED, why);
	} else {
		pc->ai = pc->ai_next = ai;
		try_next(pc, "no usable address", EF_UNREACH);
	}
	pc_release(pc);
}

void up_open(struct pconn *pc, bool tls)
{
	struct evutil_addrinfo hints;
	struct evdns_getaddrinfo_request *req;
	char port[8];

	up_close(pc);
	pc->state = PS_UPSTREAM;
	pc->intercept_up = tls;
	bufferevent_disable(pc->cli, EV_READ);
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	snprintf(port, sizeof port, "%u", pc->port);
	pc_hold(pc); /* released by on_resolved */
	pc->dns_pending = true;
	/* The resolver may answer at once (literals, the hosts file): on_resolved may already
	 * have run when this returns. */
	req = evdns_getaddrinfo(pc->eg->dns, pc->host, port, &hints, on_resolved, pc);
	if (pc->dns_pending)
		pc->dns = req;
}

static enum pc_fail fail_kind(int e)
{
	switch (e) {
	case ECONNREFUSED: return EF_REFUSED;
	case ENETUNREACH:
	case EHOSTUNREACH: return EF_UNREACH;
	case ETIMEDOUT: return EF_TIMEOUT;
	default: return EF_UNREACH;
	}
}

static void on_tls_event(struct bufferevent *b, short what, void *arg)
{
	struct pconn *pc = arg;
	char why[400], msg[600];

	pc_hold(pc);
	if (what & BEV_EVENT_CONNECTED) {
		pc_upstream_ready(pc);
	} else if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF | BEV_EVENT_TIMEOUT)) {
		aj_egress_tls_why(bufferevent_openssl_get_ssl(b), bufferevent_get_openssl_error(b),
				  why, sizeof why);
		snprintf(msg, sizeof msg, "TLS to %s (%s) failed: %s", pc->host, pc->addr, why);
		up_close(pc);
		pc_upstream_failed(pc, EF_TLS, msg);
	}
	pc_release(pc);
}

static void start_tls(struct pconn *pc)
{
	struct aj_err err;
	struct bufferevent *tls;
	_cleanup_ssl_ SSL *ssl = aj_egress_tls_client(pc->eg->tls, pc->host, &err);

	tls = ssl ? bufferevent_openssl_filter_new(pc->eg->base, pc->up, ssl,
						   BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE)
		  : NULL;
	if (!tls) {
		pc_upstream_failed(pc, EF_TLS, ssl ? "cannot start TLS" : err.msg);
		return;
	}
	aj_steal_ptr(&ssl); /* the filter frees it */
	bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
	pc->up = tls;
	bufferevent_setcb(tls, NULL, NULL, on_tls_event, pc);
	bufferevent_enable(tls, EV_READ | EV_WRITE);
}

static void on_connect_event(struct bufferevent *b, short what, void *arg)
{
	struct pconn *pc = arg;
	int e = EVUTIL_SOCKET_ERROR();
	char msg[300];

	(void)b;
	pc_hold(pc);
	if (what & BEV_EVENT_CONNECTED) {
		evutil_freeaddrinfo(pc->ai);
		pc->ai = pc->ai_next = NULL;
		if (pc->intercept_up)
			start_tls(pc);
		else
			pc_upstream_ready(pc);
	} else if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT | BEV_EVENT_EOF)) {
		bufferevent_free(pc->up);
		pc->up = NULL;
		if (what & BEV_EVENT_TIMEOUT)
			e = ETIMEDOUT;
		snprintf(msg, sizeof msg, "cannot connect to %s port %u (%s): %s", pc->host,
			 pc->port, pc->addr, strerror(e));
		try_next(pc, msg, fail_kind(e));
	}
	pc_release(pc);
}

static int start_connect(struct pconn *pc, struct evutil_addrinfo *ai)
{
	struct sockaddr_storage ss;
	socklen_t len = (socklen_t)ai->ai_addrlen;
	struct timeval tv = {EG_CONNECT_TIMEOUT_S, 0};
	_cleanup_close_ int fd = -1;
	_cleanup_bufferevent_ struct bufferevent *up = NULL;

	if (len > sizeof ss)
		return -1;
	memcpy(&ss, ai->ai_addr, len);
	/* An IPv4-mapped address is connected to as the IPv4 address it was checked as. */
	len = aj_egress_addr_unmap(&ss, len);
	aj_egress_addr_text((struct sockaddr *)&ss, pc->addr, sizeof pc->addr);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	aj_egress_nodelay(fd);
	up = bufferevent_socket_new(pc->eg->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!up)
		return -1;
	aj_steal_fd(&fd); /* the bufferevent closes it */
	bufferevent_setcb(up, NULL, NULL, on_connect_event, pc);
	bufferevent_set_timeouts(up, NULL, &tv);
	if (bufferevent_socket_connect(up, (struct sockaddr *)&ss, (int)len) < 0)
		return -1;
	pc->up = aj_steal_ptr(&up);
	return 0;
}

static void try_next(struct pconn *pc, const char *last_error, enum pc_fail last_fail)
{
	char msg[400], local[400];

	snprintf(msg, sizeof msg, "%s", last_error);
	while (pc->ai_next) {
		struct evutil_addrinfo *ai = pc->ai_next;
		pc->ai_next = ai->ai_next;
		if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
		    start_connect(pc, ai) == 0)
			return;
		snprintf(local, sizeof local, "cannot connect to %s port %u: %s", pc->host,
			 pc->port, strerror(errno));
		memcpy(msg, local, sizeof msg);
		last_fail = fail_kind(errno);
	}
	if (pc->ai)
		evutil_freeaddrinfo(pc->ai);
	pc->ai = pc->ai_next = NULL;
	pc_upstream_failed(pc, last_fail, msg);
}
