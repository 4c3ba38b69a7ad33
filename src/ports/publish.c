#include "ports/publish.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "ports/relay.h"

/* How long a connection inside may take to be accepted by the server there. */
#define CONNECT_TIMEOUT_S 10

struct listener {
	struct aj_ports *ps;
	struct aj_publish spec; /* host_port as bound */
	int fd;
	struct event *ev;
};

struct pconn {
	struct aj_ports *ps;
	struct listener *l;
	int cli, in;     /* the host side's connection, the socket inside */
	int family;      /* of `in` */
	struct event *ev; /* connecting */
	struct aj_relay *relay;
	char peer[64];
	uint64_t t0_ms;
	struct pconn *prev, *next;
};

struct aj_ports {
	struct listener *v;
	size_t n;
	const char *event;    /* of a connection's end: "port.connection" */
	struct event_base *base;
	struct event *resume; /* out of descriptors: the listeners pause a moment */
	bool limit_told;      /* one port.refused until a connection ends */
	void (*touch)(void *arg);
	void *touch_arg;
	struct aj_relay_pipe pipe;
	aj_ports_socket_fn sock;
	void *sock_arg;
	aj_ports_emit_fn emit;
	void *emit_arg;
	size_t max_conns, n_conns;
	struct pconn *conns;
};

struct aj_ports *aj_ports_new(void)
{
	struct aj_ports *ps = aj_xcalloc(1, sizeof *ps);

	ps->pipe.fd[0] = ps->pipe.fd[1] = -1;
	ps->max_conns = AJ_PORTS_MAX_CONNS;
	ps->event = "port.connection";
	return ps;
}

static void pconn_free(struct pconn *c)
{
	struct aj_ports *ps = c->ps;

	if (c->prev)
		c->prev->next = c->next;
	else
		ps->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ps->n_conns--;
	ps->limit_told = false;
	if (c->ev)
		event_free(c->ev);
	aj_relay_free(c->relay);
	aj_close_fd(&c->cli);
	aj_close_fd(&c->in);
	free(c);
}

void aj_ports_free(struct aj_ports *ps)
{
	if (!ps)
		return;
	for (struct pconn *c = ps->conns, *next; c; c = next) {
		next = c->next;
		pconn_free(c);
	}
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->v[i].ev)
			event_free(ps->v[i].ev);
		aj_close_fd(&ps->v[i].fd);
	}
	if (ps->resume)
		event_free(ps->resume);
	free(ps->v);
	aj_relay_pipe_close(&ps->pipe);
	free(ps);
}

static socklen_t make_addr(const char *ip, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
		return sizeof *s6;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s4->sin_addr);
	return sizeof *s4;
}

static int bind_one(struct listener *l, struct aj_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(l->spec.host_ip, l->spec.host_port, &ss);
	char host[64];
	int one = 1;

	aj_publish_host(&l->spec, host, sizeof host);
	l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "publish port %u on %s: socket", l->spec.port,
				  host);
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(l->fd, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;
		aj_err_sys(err, AJ_LAYER_NET, "publish port %u on %s", l->spec.port, host);
		if (e == EADDRINUSE)
			aj_err_hint(err, "host port %u is in use: pick another (HOSTPORT:%u) or let "
					 "one be chosen (0:%u)",
				    (unsigned)l->spec.host_port, l->spec.port, l->spec.port);
		else if (e == EACCES)
			aj_err_hint(err, "host ports below 1024 need privilege (root, or "
					 "CAP_NET_BIND_SERVICE): use a port from 1024 up");
		else if (e == EADDRNOTAVAIL)
			aj_err_hint(err, "%s is not an address of this host", l->spec.host_ip);
		return -1;
	}
	if (listen(l->fd, 1024) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "publish port %u on %s: listen", l->spec.port,
				  host);
	if (getsockname(l->fd, (struct sockaddr *)&ss, &len) == 0)
		l->spec.host_port = ntohs(ss.ss_family == AF_INET6
						  ? ((struct sockaddr_in6 *)&ss)->sin6_port
						  : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

void aj_ports_adopt(struct aj_ports *ps, int fd, uint16_t port, const char *event)
{
	struct listener *l;

	ps->v = aj_xrealloc(ps->v, (ps->n + 1) * sizeof *ps->v);
	l = &ps->v[ps->n++];
	memset(l, 0, sizeof *l);
	l->ps = ps;
	l->fd = fd;
	snprintf(l->spec.host_ip, sizeof l->spec.host_ip, "127.0.0.1");
	l->spec.host_port = l->spec.port = port;
	ps->event = event;
}

int aj_ports_bind(struct aj_ports *ps, const struct aj_strv *specs, struct aj_err *err)
{
	char why[160];

	ps->v = aj_xcalloc(specs->n ? specs->n : 1, sizeof *ps->v);
	for (size_t i = 0; i < specs->n; i++) {
		struct listener *l = &ps->v[i];
		l->ps = ps;
		l->fd = -1;
		if (aj_publish_parse(specs->v[i], &l->spec, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "network.publish[%zu]: %s",
					  i, why);
		ps->n = i + 1;
		if (bind_one(l, err) < 0) {
			for (size_t j = 0; j <= i; j++)
				aj_close_fd(&ps->v[j].fd);
			return -1;
		}
	}
	return 0;
}

static void emit_conn(struct pconn *c, uint64_t up, uint64_t down, const char *error)
{
	json_t *f;

	if (!c->ps->emit)
		return;
	f = json_pack("{s:i, s:i, s:s, s:I, s:I, s:I}", "host_port", c->l->spec.host_port, "port",
		      c->l->spec.port, "peer", c->peer, "bytes_in", (json_int_t)up, "bytes_out",
		      (json_int_t)down, "duration_ms",
		      (json_int_t)(aj_now_realtime_ms() - c->t0_ms));
	if (f && error)
		json_object_set_new(f, "error", json_string(error));
	if (f)
		c->ps->emit(c->ps->emit_arg, c->ps->event, f);
}

static void relay_done(void *arg, uint64_t up, uint64_t down)
{
	struct pconn *c = arg;

	c->relay = NULL; /* freed by the relay itself, with both sockets */
	c->cli = c->in = -1;
	emit_conn(c, up, down, NULL);
	pconn_free(c);
}

static void fail_conn(struct pconn *c, const char *error)
{
	emit_conn(c, 0, 0, error);
	pconn_free(c);
}

/* Connects a socket inside to the port on the sandbox's loopback, 127.0.0.1 first. 0
 * (connecting or connected: on_connected runs), or -1 with errno. */
static int start_connect(struct pconn *c);

static void on_connected(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;
	int soerr = 0;
	socklen_t len = sizeof soerr;
	char msg[160];

	(void)fd;
	event_free(c->ev);
	c->ev = NULL;
	if (what & EV_TIMEOUT) {
		snprintf(msg, sizeof msg, "port %u inside did not accept within %d s", c->l->spec.port,
			 CONNECT_TIMEOUT_S);
		fail_conn(c, msg);
		return;
	}
	if (getsockopt(c->in, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == ECONNREFUSED && c->family == AF_INET) {
		/* Nothing on 127.0.0.1: a server may listen on ::1 alone. */
		aj_close_fd(&c->in);
		c->family = AF_INET6;
		if (start_connect(c) == 0)
			return;
		soerr = errno;
	}
	if (soerr) {
		snprintf(msg, sizeof msg, "port %u inside: %s", c->l->spec.port,
			 soerr == ECONNREFUSED ? "nothing listens there" : strerror(soerr));
		fail_conn(c, msg);
		return;
	}
	c->relay = aj_relay_start(c->ps->base, &c->ps->pipe, c->cli, c->in, NULL, AJ_RELAY_OPEN,
				  relay_done, c);
	if (!c->relay) {
		c->cli = c->in = -1; /* closed by the failed start */
		fail_conn(c, "the relay could not start");
		return;
	}
	c->cli = c->in = -1; /* the relay's now */
}

/* Connects the socket inside to the port on the sandbox's loopback. 0 (connecting or
 * connected: on_connected runs), or -1 with errno. */
static int start_connect(struct pconn *c)
{
	struct aj_err err;
	struct sockaddr_storage ss;
	struct timeval tv = {CONNECT_TIMEOUT_S, 0};

	for (;;) {
		socklen_t len = make_addr(c->family == AF_INET6 ? "::1" : "127.0.0.1",
					  c->l->spec.port, &ss);
		c->in = c->ps->sock(c->ps->sock_arg, c->family, &err);
		if (c->in < 0) {
			errno = err.errnum ? err.errnum : EIO;
			return -1;
		}
		if (connect(c->in, (struct sockaddr *)&ss, len) == 0 || errno == EINPROGRESS)
			break;
		if (errno != ECONNREFUSED || c->family != AF_INET)
			return -1;
		aj_close_fd(&c->in); /* nothing on 127.0.0.1: a server may listen on ::1 alone */
		c->family = AF_INET6;
	}
	c->ev = event_new(c->ps->base, c->in, EV_WRITE, on_connected, c);
	if (!c->ev || event_add(c->ev, &tv) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static void peer_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 s6;
		memcpy(&s6, ss, sizeof s6);
		inet_ntop(AF_INET6, &s6.sin6_addr, ip, sizeof ip);
		snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(s6.sin6_port));
	} else {
		struct sockaddr_in s4;
		memcpy(&s4, ss, sizeof s4);
		inet_ntop(AF_INET, &s4.sin_addr, ip, sizeof ip);
		snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(s4.sin_port));
	}
}

static void resume_listening(evutil_socket_t fd, short what, void *arg)
{
	struct aj_ports *ps = arg;

	(void)fd;
	(void)what;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].ev)
			event_add(ps->v[i].ev, NULL);
}

/* Out of descriptors the listening sockets stay readable and the loop would spin on them:
 * they pause for 100 ms; connections already accepted go on. */
static void pause_listening(struct aj_ports *ps)
{
	struct timeval tv = {0, 100 * 1000};

	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].ev)
			event_del(ps->v[i].ev);
	if (!ps->resume)
		ps->resume = evtimer_new(ps->base, resume_listening, ps);
	if (!ps->resume || evtimer_add(ps->resume, &tv) < 0)
		resume_listening(-1, 0, ps); /* cannot pause: spinning beats never accepting */
}

static void on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;
	struct aj_ports *ps = l->ps;

	(void)what;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss = {0};
		socklen_t len = sizeof ss;
		int cli = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cli < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				pause_listening(ps);
			return; /* EAGAIN: the backlog is empty */
		}
		if (ps->touch)
			ps->touch(ps->touch_arg);
		if (ps->n_conns >= ps->max_conns) {
			close(cli);
			if (ps->emit && !ps->limit_told)
				ps->emit(ps->emit_arg, "port.refused",
					 json_pack("{s:i, s:i, s:s, s:I}", "host_port",
						   l->spec.host_port, "port", l->spec.port, "reason",
						   "connection limit reached", "limit",
						   (json_int_t)ps->max_conns));
			ps->limit_told = true;
			continue;
		}
		struct pconn *c = aj_xcalloc(1, sizeof *c);
		c->ps = ps;
		c->l = l;
		c->cli = cli;
		c->in = -1;
		c->family = AF_INET;
		c->t0_ms = aj_now_realtime_ms();
		peer_text(&ss, c->peer, sizeof c->peer);
		c->next = ps->conns;
		if (ps->conns)
			ps->conns->prev = c;
		ps->conns = c;
		ps->n_conns++;
		if (start_connect(c) < 0) {
			char msg[160];
			snprintf(msg, sizeof msg, "port %u inside: %s", l->spec.port, strerror(errno));
			fail_conn(c, msg);
		}
	}
}

int aj_ports_start(struct aj_ports *ps, struct event_base *base, aj_ports_socket_fn sock,
		   void *sock_arg, aj_ports_emit_fn emit, void *emit_arg, struct aj_err *err)
{
	unsigned long nofile = aj_nofile_raise();

	/* Each connection holds two descriptors; a reserve stays for everything else. */
	if (nofile > 256 && (nofile - 256) / 2 < ps->max_conns)
		ps->max_conns = (nofile - 256) / 2;
	ps->base = base;
	ps->sock = sock;
	ps->sock_arg = sock_arg;
	ps->emit = emit;
	ps->emit_arg = emit_arg;
	if (!ps->n)
		return 0;
	if (aj_relay_pipe_open(&ps->pipe) < 0)
		return aj_err_sys(err, AJ_LAYER_NET, "the published ports' relay pipe");
	for (size_t i = 0; i < ps->n; i++) {
		struct listener *l = &ps->v[i];
		l->ev = event_new(base, l->fd, EV_READ | EV_PERSIST, on_accept, l);
		if (!l->ev || event_add(l->ev, NULL) < 0)
			return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	}
	return 0;
}

void aj_ports_set_touch(struct aj_ports *ps, void (*touch)(void *arg), void *arg)
{
	if (!ps)
		return;
	ps->touch = touch;
	ps->touch_arg = arg;
}

size_t aj_ports_open_connections(const struct aj_ports *ps)
{
	return ps ? ps->n_conns : 0;
}

size_t aj_ports_count(const struct aj_ports *ps)
{
	return ps ? ps->n : 0;
}

const struct aj_publish *aj_ports_at(const struct aj_ports *ps, size_t i)
{
	return &ps->v[i].spec;
}

json_t *aj_ports_json(const struct aj_ports *ps)
{
	json_t *a = json_array();

	for (size_t i = 0; ps && i < ps->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:i, s:i}", "host_ip", ps->v[i].spec.host_ip,
						   "host_port", ps->v[i].spec.host_port, "port",
						   ps->v[i].spec.port));
	return a;
}
