/* The daemon: listeners (unix socket for the local owner, TCP with bearer tokens), evhttp
 * limits and timeouts, signals, and the graceful shutdown on SIGTERM (stop accepting, finish
 * what is in flight, exit 0; sandboxes keep running, their supervisors are not ours). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/listener.h>
#include <event2/thread.h>

#include "common/evbase.h"
#include "common/util.h"
#include "policy/plan.h" /* the features document */
#include "server/internal.h"
#include "storage/quota.h"

/* The listener error callback has no argument of ours; one daemon runs per process. */
static struct aj_srv *g_srv;

/* Listeners, removed first thing at shutdown. */
#define MAX_LISTENERS 16
static struct {
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
} listeners[MAX_LISTENERS];
static unsigned n_listeners;
static ino_t socket_ino;

void aj_srv_config_init(struct aj_srv_config *c)
{
	memset(c, 0, sizeof *c);
	c->workers = 8;
	c->max_body = 1 << 20;
	c->max_upload = 64 << 20;
	c->max_download = (size_t)1 << 30;
	c->read_timeout_s = 30;
	c->keepalive_s = 15;
	c->shutdown_timeout_s = 30;
	c->gc_interval_s = 60;
	c->e2b_max_timeout_s = 86400;
}

int aj_srv_default_socket(char *buf, size_t len, struct aj_err *err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		snprintf(buf, len, "/run/agentjail/api.sock");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, len, "%s/agentjail/api.sock", xdg);
	else
		return aj_err_set(err, AJ_LAYER_API, ENOENT,
				  "no default socket: XDG_RUNTIME_DIR is not set; pass --socket PATH");
	return 0;
}

/* Out of descriptors, the listening socket stays readable and libevent would spin on it:
 * pause accepting for a moment instead. */
static void on_resume_accept(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evconnlistener_enable(arg);
}

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct timeval tv = {0, 100 * 1000};
	int e = EVUTIL_SOCKET_ERROR();

	(void)arg;
	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
		return;
	evconnlistener_disable(lev);
	if (g_srv && !g_srv->stopping)
		event_base_once(g_srv->base, -1, EV_TIMEOUT, on_resume_accept, lev, &tv);
}

/* Takes the listening socket fd over (the listener closes it, or this on failure). */
static int add_listener(struct aj_srv *s, struct evhttp *http, int fd, const char *what,
			struct aj_err *err)
{
	_cleanup_close_ int sock = fd;
	struct evconnlistener *lev = NULL;
	struct evhttp_bound_socket *bound;

	if (n_listeners == MAX_LISTENERS)
		return aj_err_set(err, AJ_LAYER_API, E2BIG, "at most %d listeners", MAX_LISTENERS);
	/* Backlog 0: the socket already listens with SOMAXCONN; -1 would make libevent call
	 * listen(fd, 128) again, too short a queue for a burst of a thousand connections. */
	lev = evconnlistener_new(s->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
				 0, sock);
	if (!lev)
		return aj_err_sys(err, AJ_LAYER_API, "listen on %s", what);
	aj_steal_fd(&sock); /* the listener's */
	evconnlistener_set_error_cb(lev, on_accept_error);
	bound = evhttp_bind_listener(http, lev);
	if (!bound) {
		evconnlistener_free(lev);
		return aj_err_sys(err, AJ_LAYER_API, "serve HTTP on %s", what);
	}
	listeners[n_listeners].http = http;
	listeners[n_listeners++].bound = bound;
	return 0;
}

/* The socket's directory: made 0700 if missing; the default one is kept at 0700. */
static int prepare_socket_dir(const char *path, bool is_default, struct aj_err *err)
{
	char dir[sizeof ((struct sockaddr_un *)0)->sun_path];
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "create the socket directory \"%s\"", dir);
	if (is_default && chmod(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "chmod 0700 \"%s\"", dir);
	return 0;
}

/* A socket file left by a daemon that died is replaced; one another daemon listens on, or
 * anything that is not a socket, is not. */
static int clear_stale_socket(const struct sockaddr_un *a, struct aj_err *err)
{
	struct stat st;
	_cleanup_close_ int fd = -1;

	if (lstat(a->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_API, "\"%s\"", a->sun_path);
	if (!S_ISSOCK(st.st_mode))
		return aj_err_set(err, AJ_LAYER_API, EEXIST,
				  "\"%s\" exists and is not a socket; not replacing it", a->sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "socket");
	if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0)
		return aj_err_set(err, AJ_LAYER_API, EADDRINUSE,
				  "another daemon is listening on \"%s\"", a->sun_path);
	if (errno != ECONNREFUSED)
		return aj_err_sys(err, AJ_LAYER_API, "probe \"%s\"", a->sun_path);
	if (unlink(a->sun_path) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "remove the stale socket \"%s\"", a->sun_path);
	return 0;
}

static int bind_unix(struct aj_srv *s, const char *path, bool is_default, struct aj_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	mode_t old;
	int r;

	if (path[0] != '/' || strlen(path) >= sizeof a.sun_path)
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "--socket: expected an absolute path shorter than %zu bytes, got "
				  "\"%s\"",
				  sizeof a.sun_path, path);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	if (prepare_socket_dir(path, is_default, err) < 0 || clear_stale_socket(&a, err) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "socket");
	/* Created 0600 from the start: no window in which another user could connect. */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (r < 0 || listen(fd, SOMAXCONN) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "listen on \"%s\"", path);
	snprintf(s->socket_path, sizeof s->socket_path, "%s", path);
	s->socket_bound = true;
	{
		struct stat st;
		if (stat(path, &st) == 0)
			socket_ino = st.st_ino;
	}
	return add_listener(s, s->http_local, aj_steal_fd(&fd), path, err);
}

/* bound (when not NULL): the address as bound, HOST:PORT, with the port the kernel chose for
 * port 0 (allowed only then). */
static int bind_tcp_at(struct aj_srv *s, struct evhttp *http, const char *opt,
		       const char *hostport, char *bound, size_t bound_len, struct aj_err *err)
{
	struct sockaddr_storage ss = {0};
	_cleanup_close_ int fd = -1;
	int len = sizeof ss, one = 1;

	if (evutil_parse_sockaddr_port(hostport, (struct sockaddr *)&ss, &len) < 0 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
	    (!bound && ((struct sockaddr_in *)&ss)->sin_port == 0))
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "%s: expected HOST:PORT such as 127.0.0.1:8080 or [::1]:8080, "
				  "got \"%s\"",
				  opt, hostport);
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	/* Inherited by every accepted connection (Linux). Without it a stream's small writes (an
	 * exec's start line, then its exit line) wait for the client's delayed ACK: 40 ms stalls on
	 * every other request of a keep-alive connection (bench/run-e2b.sh). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, (socklen_t)len) < 0 || listen(fd, SOMAXCONN) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "listen on %s", hostport);
	if (bound) {
		socklen_t sl = sizeof ss;
		char host[INET6_ADDRSTRLEN];
		const void *a = ss.ss_family == AF_INET
					? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
					: (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
		    !inet_ntop(ss.ss_family, a, host, sizeof host))
			return aj_err_sys(err, AJ_LAYER_API, "the address of %s", hostport);
		snprintf(bound, bound_len, ss.ss_family == AF_INET ? "%s:%u" : "[%s]:%u", host,
			 ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
	return add_listener(s, http, aj_steal_fd(&fd), hostport, err);
}

static int bind_tcp(struct aj_srv *s, struct evhttp *http, const char *opt, const char *hostport,
		    struct aj_err *err)
{
	return bind_tcp_at(s, http, opt, hostport, NULL, 0, err);
}

static struct evhttp *new_http(struct aj_srv *s, enum aj_srv_listener kind)
{
	const struct aj_srv_config *c = s->cfg;
	struct evhttp *h = evhttp_new(s->base);
	struct timeval tv = {c->read_timeout_s, 0};

	if (!h)
		return NULL;
	/* Every method reaches the router, which answers 405 in JSON. */
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
					      EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
					      EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
					      EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_max_headers_size(h, 16 * 1024);
	/* Beyond this libevent itself answers 413 (without a JSON body); below it the router
	 * applies the per-route limits. */
	evhttp_set_max_body_size(h, (ev_ssize_t)(c->max_upload > c->max_body ? c->max_upload
										: c->max_body));
	/* That 413 comes after the body is read (and dropped): a close with the client's body
	 * still unread makes the kernel reset the connection, and a client still sending lost
	 * the answer (curl saw no status). The read timeout bounds a client that sends on. */
	if (evhttp_set_flags(h, EVHTTP_SERVER_LINGERING_CLOSE) != 0) {
		evhttp_free(h);
		return NULL;
	}
	evhttp_set_timeout_tv(h, &tv);
	evhttp_set_default_content_type(h, "application/json");
	aj_srv_router_install(s, h, kind);
	return h;
}

/* ---- shutdown ----------------------------------------------------------------------------- */

static struct event *drain_ev;
static uint64_t drain_deadline_ms, answered_ms;

/* Done when every request is answered and libevent has written the answers out. A client that
 * vanished mid-answer never completes its write: after the last answer such writes get two
 * seconds, requests still working get --shutdown-timeout. */
static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct aj_srv *s = arg;
	uint64_t now = aj_now_monotonic_us() / 1000;
	bool answered = s->inflight == 0 && aj_srv_pool_busy(s) == 0;

	(void)fd;
	(void)what;
	if (!answered)
		answered_ms = 0;
	else if (!answered_ms)
		answered_ms = now;
	if ((answered && (s->flushing == 0 || now >= answered_ms + 2000)) ||
	    now >= drain_deadline_ms) {
		if (!answered)
			fprintf(stderr, "agentjail: serve: shutdown timeout with %u requests in "
					"flight\n",
				s->inflight);
		event_base_loopexit(s->base, NULL);
	}
}

/* New connections are refused from here on; connections already open finish their
 * requests (and get 503 for new ones). The socket file goes unless another daemon has
 * replaced it meanwhile. */
static void remove_listeners(struct aj_srv *s)
{
	struct stat st;

	for (unsigned i = 0; i < n_listeners; i++)
		evhttp_del_accept_socket(listeners[i].http, listeners[i].bound);
	n_listeners = 0;
	if (s->socket_bound && stat(s->socket_path, &st) == 0 && st.st_ino == socket_ino)
		unlink(s->socket_path);
	s->socket_bound = false;
}

static void begin_shutdown(struct aj_srv *s)
{
	struct timeval tick = {0, 50 * 1000};

	if (s->stopping)
		return;
	s->stopping = true;
	fprintf(stderr, "agentjail: serve: shutting down\n");
	remove_listeners(s);
	aj_srv_streams_shutdown(s);
	aj_srv_terminals_shutdown(s);
	drain_deadline_ms = aj_now_monotonic_us() / 1000 + (uint64_t)s->cfg->shutdown_timeout_s * 1000;
	drain_ev = event_new(s->base, -1, EV_PERSIST, on_drain_tick, s);
	if (drain_ev)
		event_add(drain_ev, &tick);
	else
		event_base_loopexit(s->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	begin_shutdown(arg);
}

/* ---- start-up ------------------------------------------------------------------------------ */

/* Probed once, before any worker exists: the user namespace probe forks. */
static int probe_features(struct aj_srv *s, struct aj_err *err)
{
	struct aj_features f;

	aj_features_probe_all(&f, NULL);
	s->features = aj_plan_features_json(&f, s->cfg->version);
	return s->features ? 0 : aj_err_set(err, AJ_LAYER_API, ENOMEM, "probe the features");
}

/* What a daemon killed mid-operation left half done (snapshots, forks) is finished or undone
 * now, as `agentjail gc` would; running sandboxes are untouched and served again. */
static int recover(const struct aj_srv_config *c, struct aj_err *err)
{
	struct aj_mgr m;
	unsigned n = 0;
	int r;

	if (aj_mgr_open(&m, c->state_dir, NULL, err) < 0)
		return -1;
	r = aj_mgr_recover(&m, &n, err);
	aj_mgr_close(&m);
	if (r == 0 && n)
		fprintf(stderr, "agentjail: serve: recovered %u interrupted operations\n", n);
	return r;
}

static struct event *signal_evs[2];

const struct aj_srv_config *aj_srv_cfg(const struct aj_srv *s)
{
	return s->cfg;
}

struct event_base *aj_srv_base(const struct aj_srv *s)
{
	return s->base;
}

bool aj_srv_stopping(const struct aj_srv *s)
{
	return s->stopping;
}

const json_t *aj_srv_features(const struct aj_srv *s)
{
	return s->features;
}

static int add_signal(struct aj_srv *s, int i, int sig, struct aj_err *err)
{
	signal_evs[i] = evsignal_new(s->base, sig, on_signal, s);
	if (!signal_evs[i] || event_add(signal_evs[i], NULL) < 0)
		return aj_err_sys(err, AJ_LAYER_API, "watch signal %d", sig);
	return 0;
}

/* The E2B-compatible API: its own evhttp, whose requests the front end (src/e2b/) routes by
 * header. */
static int open_e2b_listeners(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = s->cfg;

	if (!c->e2b_listen.n)
		return 0;
	s->http_front = new_http(s, AJ_SRV_REMOTE);
	if (!s->http_front)
		return aj_err_sys(err, AJ_LAYER_API, "set up the %s's HTTP server", c->e2b->name);
	c->e2b->install(s->front, s->http_front);
	for (size_t i = 0; i < c->e2b_listen.n; i++) {
		if (bind_tcp(s, s->http_front, "--e2b-listen", c->e2b_listen.v[i], err) < 0)
			return -1;
		fprintf(stderr, "agentjail: serve: %s on %s (%s)\n", c->e2b->name,
			c->e2b_listen.v[i],
			c->e2b_keys ? "API keys" : "loopback, any API key is its own owner");
	}
	return 0;
}

/* Preview URLs: an evhttp of their own, routed by Host (preview.c). The listener and the
 * domain go into <state>/preview.json for `agentjail port --url`. */
static int open_preview_listener(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = s->cfg;
	struct aj_mgr m;
	char path[4200], tmp[4300];
	_cleanup_json_ json_t *info = NULL;

	if (!c->preview_listen)
		return 0;
	s->http_preview = new_http(s, AJ_SRV_REMOTE);
	if (!s->http_preview)
		return aj_err_sys(err, AJ_LAYER_API, "set up the preview listener");
	if (aj_srv_preview_install(s, s->http_preview, c->preview_domain, err) < 0 ||
	    bind_tcp(s, s->http_preview, "--preview-listen", c->preview_listen, err) < 0)
		return -1;
	if (aj_mgr_open(&m, c->state_dir, NULL, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/preview.json", m.state);
	aj_mgr_close(&m);
	snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
	info = json_pack("{s:s, s:s}", "listen", c->preview_listen, "domain", c->preview_domain);
	if (json_dump_file(info, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		return aj_err_sys(err, AJ_LAYER_API, "write \"%s\"", path);
	}
	fprintf(stderr, "agentjail: serve: preview URLs PORT-SANDBOX.%s on %s\n", c->preview_domain,
		c->preview_listen);
	return 0;
}

/* The web console for the local owner (console.c): loopback only. Its credentials and
 * console.json come once the port is bound, so the file never names a port that another
 * process holds (and port 0 is a port the kernel picked). */
static int open_console_listener(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = s->cfg;
	char addr[300], bound[INET6_ADDRSTRLEN + 10];

	if (!c->console_listen)
		return 0;
	if (aj_srv_console_check_listen(c->console_listen, addr, sizeof addr, err) < 0)
		return -1;
	s->http_console = new_http(s, AJ_SRV_CONSOLE);
	if (!s->http_console)
		return aj_err_sys(err, AJ_LAYER_API, "set up the console listener");
	if (bind_tcp_at(s, s->http_console, "--console-listen", addr, bound, sizeof bound, err) < 0 ||
	    aj_srv_console_login_start(s, bound, err) < 0)
		return -1;
	fprintf(stderr,
		"agentjail: serve: console for the local owner on http://%s/console/ (its login URL "
		"is in the state directory's console.json)\n",
		bound);
	return 0;
}

static int open_listeners(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = s->cfg;
	char path[108];

	if (c->socket_path)
		snprintf(path, sizeof path, "%s", c->socket_path);
	else if (aj_srv_default_socket(path, sizeof path, err) < 0)
		return -1;
	s->http_local = new_http(s, AJ_SRV_LOCAL);
	s->http_remote = c->listen.n ? new_http(s, AJ_SRV_REMOTE) : NULL;
	if (!s->http_local || (c->listen.n && !s->http_remote))
		return aj_err_sys(err, AJ_LAYER_API, "set up the HTTP server");
	if (bind_unix(s, path, c->socket_path == NULL, err) < 0)
		return -1;
	fprintf(stderr, "agentjail: serve: listening on %s\n", path);
	for (size_t i = 0; i < c->listen.n; i++) {
		if (bind_tcp(s, s->http_remote, "--listen", c->listen.v[i], err) < 0)
			return -1;
		fprintf(stderr, "agentjail: serve: listening on %s (bearer tokens)\n",
			c->listen.v[i]);
	}
	if (open_e2b_listeners(s, err) < 0 || open_preview_listener(s, err) < 0)
		return -1;
	return open_console_listener(s, err);
}

/* --max-disk weighs disk limits and sizes, which only the state directory's quotas make true:
 * without them it would count promises nothing keeps, so it is refused. */
static int check_disk_quota(const struct aj_srv_config *c, const char *state, struct aj_err *err)
{
	struct aj_quota_probe q;

	if (!c->max_disk)
		return 0;
	aj_quota_probe(state, &q);
	if (q.kind)
		return 0;
	aj_err_set(err, AJ_LAYER_STATE, 0, "--max-disk: no disk quota on \"%s\": %s", state,
		   q.why);
	return aj_err_hint(err, "put the state directory on a quota-capable filesystem "
				"(`agentjail storage init`)");
}

static int attach_state(const struct aj_srv_config *c, struct aj_err *err)
{
	struct aj_mgr m;
	int rc;

	if (aj_mgr_open(&m, c->state_dir, NULL, err) < 0)
		return -1;
	rc = check_disk_quota(c, m.state, err);
	aj_mgr_close(&m);
	return rc;
}

static int setup(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = s->cfg;

	if (c->listen.n && !c->token_file)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--listen needs --token-file: TCP clients authenticate with bearer "
				  "tokens");
	if (c->token_file && aj_srv_tokens_load(c->token_file, &s->tokens, err) < 0)
		return -1;
	/* 1,000 concurrent clients need more than the usual soft limit of 1,024 descriptors. */
	errno = 0;
	if (!aj_nofile_raise() || errno)
		fprintf(stderr, "agentjail: serve: raising the descriptor limit: %s\n",
			strerror(errno ? errno : EINVAL));
	/* Written to a client that went away: an error to handle, not a signal that kills. */
	signal(SIGPIPE, SIG_IGN);
	if (evthread_use_pthreads() < 0)
		return aj_err_set(err, AJ_LAYER_API, ENOSYS, "libevent without thread support");
	s->base = aj_event_base_new();
	s->quota = aj_srv_quota_new(c);
	if (!s->base)
		return aj_err_sys(err, AJ_LAYER_API, "set up the event loop");
	if (!c->preview_listen != !c->preview_domain)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--preview-listen and --preview-domain go together");
	if (c->e2b_listen.n && !c->e2b)
		return aj_err_set(err, AJ_LAYER_INTERNAL, EINVAL, "--e2b-listen without a front end");
	/* The state directory first (storage init's filesystem mounted again after a reboot),
	 * before a front end writes its keys there. */
	if (attach_state(c, err) < 0)
		return -1;
	if (c->e2b_listen.n && c->e2b->create(s, &s->front, err) < 0)
		return -1;
	if (recover(c, err) < 0 || probe_features(s, err) < 0 || open_listeners(s, err) < 0 ||
	    add_signal(s, 0, SIGTERM, err) < 0 || add_signal(s, 1, SIGINT, err) < 0)
		return -1;
	return aj_srv_pool_start(s, err) < 0 || aj_srv_gc_start(s, err) < 0
		       ? -1
		       : aj_srv_warm_start(s, err);
}

static void teardown(struct aj_srv *s)
{
	aj_srv_pool_stop(s);
	aj_srv_gc_stop(s);
	aj_srv_warm_stop(s);
	remove_listeners(s);
	if (s->http_local)
		evhttp_free(s->http_local);
	if (s->http_remote)
		evhttp_free(s->http_remote);
	if (s->http_front)
		evhttp_free(s->http_front);
	if (s->http_preview)
		evhttp_free(s->http_preview);
	if (s->http_console)
		evhttp_free(s->http_console);
	aj_srv_console_login_stop();
	if (s->front)
		s->cfg->e2b->destroy(s->front);
	if (drain_ev)
		event_free(drain_ev);
	drain_ev = NULL;
	for (int i = 0; i < 2; i++)
		if (signal_evs[i])
			event_free(signal_evs[i]);
	if (s->base)
		event_base_free(s->base);
	aj_srv_tokens_free(s->tokens);
	aj_srv_quota_free(s->quota);
	json_decref(s->features);
}

int aj_srv_run(const struct aj_srv_config *c, struct aj_err *err)
{
	struct aj_srv s;
	int rc = 0;

	memset(&s, 0, sizeof s);
	s.cfg = c;
	g_srv = &s;
	if (setup(&s, err) < 0) {
		rc = -1;
	} else if (event_base_dispatch(s.base) < 0) {
		rc = aj_err_set(err, AJ_LAYER_API, EIO, "the event loop failed");
	} else {
		fprintf(stderr, "agentjail: serve: stopped\n");
	}
	teardown(&s);
	g_srv = NULL;
	return rc;
}
