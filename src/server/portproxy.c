/* HTTP to a port inside a sandbox, for the API's /v1/sandboxes/{ref}/ports/{port}/PATH and
 * the preview listener (preview.c).
 *
 * libevent's evhttp reads the request (head and body, within the daemon's limits); a worker
 * finds the sandbox for the owner, asks its supervisor for a socket in the sandbox's network
 * namespace (the control socket's "socket" operation) and connects it to the port on the
 * sandbox's loopback (127.0.0.1, then ::1). Back on the loop, the client's connection is taken
 * from evhttp, the request is written to the server inside with the daemon's own headers
 * removed (the owner's bearer token, the preview cookie, hop-by-hop headers), and from then on
 * the two sockets are relayed by splice (ports/relay.h): responses of any size stream,
 * WebSocket and other upgrades pass through. A request that is not an upgrade carries
 * "Connection: close" inside, so that every request on the client's side is read and cleaned
 * by evhttp on a connection of its own.
 *
 * Taking a connection from evhttp: its events are disabled, the socket is duplicated, and the
 * descriptor number evhttp knows is pointed at /dev/null before the connection is freed, so
 * that evhttp's shutdown and close of it touch nothing of the client's.
 */
#include <errno.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "control/client.h"
#include "policy/plan.h"
#include "ports/relay.h"
#include "server/internal.h"

/* Connections relayed at once by one daemon; past it a request gets 503. */
#define PROXY_MAX 4096
#define CONNECT_TIMEOUT_MS 5000

static struct aj_relay_pipe relay_pipe = {{-1, -1}, 0};
static size_t n_relays;

struct proxy {
	unsigned port;
	char *target;  /* the request line's target inside: "/rest?query" */
	int up;        /* connected to the port inside (work) */
	bool strip_auth;
	const char *strip_cookie; /* a cookie of the daemon's to drop, or NULL */
	aj_srv_proxy_check_fn check; /* on the worker, with the sandbox's record */
	void *check_arg;
	void (*check_arg_free)(void *arg);
	/* aj_srv_proxy_redirect(): answered with a 302 setting a cookie, not proxied */
	char *redirect, *cookie_name, *cookie_value;
};

static void proxy_free(void *data)
{
	struct proxy *px = data;

	aj_close_fd(&px->up);
	if (px->check_arg_free)
		px->check_arg_free(px->check_arg);
	free(px->target);
	free(px->redirect);
	free(px->cookie_name);
	free(px->cookie_value);
	free(px);
}

/* Connects a socket inside to the sandbox's loopback, waiting at most CONNECT_TIMEOUT_MS. */
static int connect_inside(int fd, int family, unsigned port)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t len = sizeof soerr;

	if (connect(fd, family == AF_INET6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
		    family == AF_INET6 ? sizeof a6 : sizeof a4) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -1;
	errno = soerr;
	return soerr ? -1 : 0;
}

static int socket_inside(int ctl, int family, struct aj_err *err)
{
	int fd = -1;
	size_t n = 0;

	if (aj_ctl_call(ctl, json_pack("{s:s, s:i}", "op", "socket", "family",
				       family == AF_INET6 ? 6 : 4),
			NULL, 0, NULL, &fd, &n, CONNECT_TIMEOUT_MS, err) < 0)
		return -1;
	if (n != 1 || fd < 0)
		return aj_err_set(err, AJ_LAYER_NET, EPROTO, "the supervisor sent no socket");
	return fd;
}

static bool proxy_mode(const char *policy)
{
	_cleanup_json_ json_t *p = policy ? json_loads(policy, 0, NULL) : NULL;
	const char *mode = json_string_value(json_object_get(json_object_get(p, "network"), "mode"));

	return mode && !strcmp(mode, "proxy");
}

static bool host_port(const char *policy, unsigned port)
{
	_cleanup_json_ json_t *p = policy ? json_loads(policy, 0, NULL) : NULL;
	json_t *v, *a = json_object_get(json_object_get(p, "network"), "host_ports");
	size_t i;

	json_array_foreach(a, i, v)
		if (json_integer_value(v) == (json_int_t)port)
			return true;
	return false;
}

static void proxy_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct proxy *px = r->data;
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = {0};
	struct aj_err err;
	_cleanup_close_ int ctl = -1;

	aj_err_clear(&err);
	ctl = aj_mgr_connect(m, r->ref, &rec, &err);
	if (ctl < 0 && r->job.any_owner) {
		/* No owner's token: the same answer for a sandbox that is not there and one that
		 * is not running, before its access is checked (no oracle of names or states). */
		aj_srv_fail(r, 404, "not_found", NULL, "no sandbox \"%s\" is serving", r->ref);
		return;
	}
	if (ctl < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	if (px->check && px->check(r, &rec, px->check_arg) < 0)
		return;
	if (host_port(rec.policy, px->port)) {
		aj_srv_fail(r, 403, "forbidden", "port",
			    "port %u inside is the sandbox's way to a host service "
			    "(network.host_ports), not a server of its own",
			    px->port);
		return;
	}
	if (px->port == AJ_EGRESS_PORT && proxy_mode(rec.policy)) {
		aj_srv_fail(r, 403, "forbidden", "port",
			    "port %u inside is the sandbox's egress proxy, not a server of its own",
			    px->port);
		return;
	}
	if (px->redirect)
		return; /* answered in done, nothing to connect */
	for (int family = AF_INET;; family = AF_INET6) {
		_cleanup_close_ int fd = socket_inside(ctl, family, &err);
		if (fd < 0) {
			aj_srv_fail_err(r, &err, NULL);
			return;
		}
		if (connect_inside(fd, family, px->port) == 0) {
			px->up = aj_steal_fd(&fd);
			return;
		}
		if (errno != ECONNREFUSED || family == AF_INET6) {
			aj_srv_fail(r, 502, "port_unreachable", NULL,
				    "port %u inside the sandbox: %s", px->port,
				    errno == ECONNREFUSED ? "nothing listens there" : strerror(errno));
			return;
		}
	}
}

/* Hop-by-hop headers, and the daemon's own credentials (E2B's API key, envd and traffic
 * tokens, preview tokens), which are never the server inside's to see. */
static bool hop_by_hop(const char *name)
{
	static const char *const names[] = {"Connection", "Keep-Alive", "Proxy-Connection",
					    "Proxy-Authorization", "TE", "Trailer",
					    "Transfer-Encoding", "Upgrade", "Content-Length",
					    "X-API-KEY", "X-Access-Token", "E2B-Traffic-Access-Token",
					    "X-Agentjail-Preview-Token", "E2b-Sandbox-Id",
					    "E2b-Sandbox-Port", NULL};

	for (size_t i = 0; names[i]; i++)
		if (!strcasecmp(name, names[i]))
			return true;
	return false;
}

/* The Cookie header without the daemon's cookie `drop`; "" when nothing is left. */
static void cookie_without(const char *value, const char *drop, struct evbuffer *out)
{
	size_t dl = strlen(drop);
	bool first = true;

	for (const char *p = value; *p;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && *p == ' ') {
			p++;
			n--;
		}
		if (n && !(n > dl && !strncmp(p, drop, dl) && p[dl] == '=')) {
			evbuffer_add_printf(out, "%s%.*s", first ? "" : "; ", (int)n, p);
			first = false;
		}
		p = end ? end + 1 : p + n;
	}
}

/* An upgrade (WebSocket...): Upgrade, and Connection naming it. */
static bool is_upgrade(struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *conn = evhttp_find_header(h, "Connection");

	return evhttp_find_header(h, "Upgrade") && conn && strcasestr(conn, "upgrade");
}

/* The request as the server inside gets it. */
static void request_head(struct aj_srv_req *r, const struct proxy *px, struct evbuffer *out)
{
	struct evhttp_request *req = r->req;
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *upgrade = evhttp_find_header(h, "Upgrade");
	bool up = is_upgrade(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	const char *peer = NULL;
	ev_uint16_t peer_port = 0;
	struct evkeyval *kv;

	evbuffer_add_printf(out, "%s %s HTTP/1.1\r\n",
			    aj_srv_method_name(evhttp_request_get_command(req)), px->target);
	TAILQ_FOREACH(kv, h, next) {
		if (hop_by_hop(kv->key) || (px->strip_auth && !strcasecmp(kv->key, "Authorization")) ||
		    !strncasecmp(kv->key, "X-Forwarded-", 12))
			continue;
		if (px->strip_cookie && !strcasecmp(kv->key, "Cookie")) {
			struct evbuffer *c = evbuffer_new();
			cookie_without(kv->value, px->strip_cookie, c);
			if (evbuffer_get_length(c)) {
				evbuffer_add_printf(out, "Cookie: ");
				evbuffer_add_buffer(out, c);
				evbuffer_add(out, "\r\n", 2);
			}
			evbuffer_free(c);
			continue;
		}
		evbuffer_add_printf(out, "%s: %s\r\n", kv->key, kv->value);
	}
	if (evcon)
		evhttp_connection_get_peer(evcon, (char **)&peer, &peer_port);
	if (peer && *peer)
		evbuffer_add_printf(out, "X-Forwarded-For: %s\r\n", peer);
	evbuffer_add_printf(out, "X-Forwarded-Proto: http\r\n");
	if (up)
		evbuffer_add_printf(out, "Connection: Upgrade\r\nUpgrade: %s\r\n", upgrade);
	else
		evbuffer_add_printf(out, "Connection: close\r\n");
	if (evbuffer_get_length(body) || evhttp_find_header(h, "Content-Length") ||
	    evhttp_find_header(h, "Transfer-Encoding"))
		evbuffer_add_printf(out, "Content-Length: %zu\r\n", evbuffer_get_length(body));
	evbuffer_add(out, "\r\n", 2);
	evbuffer_add_buffer(out, body);
}

/* The client's socket, taken from evhttp (see the top of the file); bytes evhttp read past
 * the request go to `rest`. -1 when the client is gone. Also the terminal's (WebSocket). */
int aj_srv_take_connection(struct evhttp_request *req, struct evbuffer *rest)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	int fd = bev ? bufferevent_getfd(bev) : -1, mine;
	_cleanup_close_ int null = -1;

	if (fd < 0)
		return -1;
	bufferevent_disable(bev, EV_READ | EV_WRITE);
	mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (mine < 0 || null < 0 || dup3(null, fd, O_CLOEXEC) < 0) {
		if (mine >= 0)
			close(mine);
		return -1; /* evhttp still owns the connection: the request gets its 500 */
	}
	evbuffer_add_buffer(rest, bufferevent_get_input(bev));
	evhttp_connection_free(evcon); /* frees req, closes /dev/null */
	aj_fd_set_nonblock(mine, true);
	return mine;
}

static void relay_done(void *arg, uint64_t up, uint64_t down)
{
	(void)arg;
	(void)up;
	(void)down;
	n_relays--;
}

static void proxy_done(struct aj_srv_req *r)
{
	struct proxy *px = r->data;
	_cleanup_evbuffer_ struct evbuffer *first = evbuffer_new(), *rest = evbuffer_new();
	enum aj_relay_gate gate;
	int cli;

	if (!r->failed && px->redirect && evhttp_request_get_connection(r->req)) {
		struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
		char cookie[256];
		snprintf(cookie, sizeof cookie, "%s=%s; Path=/; HttpOnly; SameSite=Lax",
			 px->cookie_name, px->cookie_value);
		evhttp_add_header(out, "Set-Cookie", cookie);
		evhttp_add_header(out, "Location", px->redirect);
		aj_srv_send(r->srv, r->req, 302, NULL, NULL);
		r->req = NULL;
		aj_srv_req_free(r);
		return;
	}
	if (r->failed || px->up < 0 || !evhttp_request_get_connection(r->req)) {
		aj_srv_req_finish(r);
		return;
	}
	if (relay_pipe.fd[0] < 0 && aj_relay_pipe_open(&relay_pipe) < 0) {
		aj_srv_fail(r, 503, "unavailable", NULL, "the daemon cannot relay: %s",
			    strerror(errno));
		aj_srv_req_finish(r);
		return;
	}
	/* Only the request the daemon checked goes in: what the client sends after it (a next
	 * request on a kept-alive connection, bytes evhttp read ahead) would carry the daemon's
	 * credentials unchecked. An upgrade's bytes flow once the server inside says 101. */
	gate = is_upgrade(r->req) ? AJ_RELAY_UPGRADE : AJ_RELAY_ONE;
	request_head(r, px, first);
	cli = aj_srv_take_connection(r->req, rest);
	if (cli < 0) {
		aj_srv_req_free(r); /* the client went away, or the request gets a 500 */
		return;
	}
	r->req = NULL; /* freed with its connection */
	if (aj_relay_start(aj_srv_base(r->srv), &relay_pipe, cli, aj_steal_fd(&px->up), first,
			   gate, relay_done, NULL))
		n_relays++;
	aj_srv_req_free(r);
}

void aj_srv_proxy_redirect(struct aj_srv_req *r, const char *location, const char *cookie_name,
			   const char *cookie_value)
{
	struct proxy *px = r->data;

	px->redirect = aj_xstrdup(location);
	px->cookie_name = aj_xstrdup(cookie_name);
	px->cookie_value = aj_xstrdup(cookie_value);
}

static void job_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	proxy_work((struct aj_srv_req *)j, m);
}

static void job_done(struct aj_srv_job *j)
{
	proxy_done((struct aj_srv_req *)j);
}

int aj_srv_proxy_start(struct aj_srv_req *r, unsigned port, const char *target,
		       const struct aj_srv_proxy_opts *o)
{
	struct proxy *px = aj_xcalloc(1, sizeof *px);

	px->port = port;
	px->target = aj_xstrdup(target);
	px->up = -1;
	px->strip_auth = o->strip_auth;
	px->strip_cookie = o->strip_cookie;
	px->check = o->check;
	px->check_arg = o->check_arg;
	px->check_arg_free = o->check_arg_free;
	r->data = px;
	r->data_free = proxy_free;
	if (port < 1 || port > 65535)
		return aj_srv_fail(r, 400, "invalid_value", "port",
				   "the port must be a number from 1 to 65535");
	if (n_relays >= PROXY_MAX)
		return aj_srv_fail(r, 503, "too_many_connections", NULL,
				   "%d connections to sandboxes are open through this daemon",
				   PROXY_MAX);
	r->job.work = job_work;
	r->job.done = job_done;
	aj_srv_pool_submit(r->srv, &r->job);
	return 0;
}

/* ---- the API's route ------------------------------------------------------------------- */

/* "/v1/sandboxes/REF/ports/PORT[/REST]": REF into ref, PORT, and REST (with its leading
 * '/'; "/" when there is none) into *rest. */
bool aj_srv_port_path(const char *path, char ref[256], unsigned *port, const char **rest)
{
	static const char prefix[] = "/v1/sandboxes/";
	const char *p, *slash;
	char *end;
	unsigned long v;

	if (strncmp(path, prefix, sizeof prefix - 1))
		return false;
	p = path + sizeof prefix - 1;
	slash = strchr(p, '/');
	if (!slash || slash == p || (size_t)(slash - p) >= 256 || strncmp(slash, "/ports/", 7))
		return false;
	memcpy(ref, p, (size_t)(slash - p));
	ref[slash - p] = '\0';
	p = slash + 7;
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	v = strtoul(p, &end, 10);
	if (errno || (*end && *end != '/') || end - p > 5)
		return false;
	*port = (unsigned)v;
	*rest = *end ? end : "/";
	return true;
}
