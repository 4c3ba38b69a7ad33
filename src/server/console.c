/* The web console (docs/console.md): one page and its scripts, built into the binary, served
 * at /console/ on the API's TCP listeners (--listen: the page logs in with a bearer token of
 * --token-file and acts as that token's owner) and on the console listener (--console-listen:
 * loopback only, the local owner, with the token and login codes of console_login.c).
 *
 * The page is static and holds no secret: the token lives in the browser's sessionStorage and
 * travels in the Authorization header of every API call, never in a cookie, so a page of
 * another origin cannot make the browser act with it (no CSRF by construction). The answers
 * carry a Content-Security-Policy that allows scripts and styles of this origin only (no
 * inline script), frames of none, connections to this origin only; the one relaxation is a
 * per-answer nonce for the <style> elements xterm.js makes and inline style attributes (its
 * cell colours), neither of which can run code or load anything from elsewhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <event2/util.h>

#include "common/util.h"
#include "server/console_assets.h"
#include "server/internal.h"

#define PREFIX "/console/"

static const struct {
	const char *suffix, *type;
} media_types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".txt", "text/plain; charset=utf-8"},
};

/* Every answer of the console's: nothing of another origin, no inline script, no framing. */
#define CSP_BASE                                                                              \
	"default-src 'none'; script-src 'self'; img-src 'self' data:; font-src 'self'; "      \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const char *media_type(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof media_types / sizeof media_types[0]; i++) {
		size_t k = strlen(media_types[i].suffix);
		if (n > k && !strcmp(name + n - k, media_types[i].suffix))
			return media_types[i].type;
	}
	return "application/octet-stream";
}

static const struct aj_console_asset *find_asset(const char *name)
{
	for (const struct aj_console_asset *a = aj_console_assets; a->name; a++)
		if (!strcmp(a->name, name))
			return a;
	return NULL;
}

static void security_headers(struct evkeyvalq *h, const char *nonce)
{
	char csp[512];

	if (nonce)
		snprintf(csp, sizeof csp,
			 CSP_BASE "; style-src-elem 'self' 'nonce-%s'; style-src-attr 'unsafe-inline'",
			 nonce);
	else
		snprintf(csp, sizeof csp, CSP_BASE "; style-src 'self'");
	evhttp_add_header(h, "Content-Security-Policy", csp);
	evhttp_add_header(h, "X-Frame-Options", "DENY");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Referrer-Policy", "no-referrer");
	evhttp_add_header(h, "Cross-Origin-Opener-Policy", "same-origin");
	evhttp_add_header(h, "Cross-Origin-Resource-Policy", "same-origin");
}

/* index.html with every "{{nonce}}" replaced by this answer's nonce. */
static void add_page(struct evbuffer *out, const struct aj_console_asset *a, const char *nonce)
{
	static const char mark[] = "{{nonce}}";
	const char *p = a->data, *end = a->data + a->len, *m;

	while ((m = memmem(p, (size_t)(end - p), mark, sizeof mark - 1))) {
		evbuffer_add(out, p, (size_t)(m - p));
		evbuffer_add(out, nonce, strlen(nonce));
		p = m + sizeof mark - 1;
	}
	evbuffer_add(out, p, (size_t)(end - p));
}

static void send_asset(struct aj_srv_req *r, const struct aj_console_asset *a)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
	_cleanup_evbuffer_ struct evbuffer *body = evbuffer_new();
	bool page = !strcmp(a->name, "index.html");
	char nonce[33] = "";

	if (page && aj_random_hex(nonce, 16) < 0) {
		aj_srv_fail(r, 500, "internal", NULL, "no random bytes for the page's nonce");
		aj_srv_req_finish(r);
		return;
	}
	security_headers(h, page ? nonce : NULL);
	if (evhttp_request_get_command(r->req) != EVHTTP_REQ_HEAD && body) {
		if (page)
			add_page(body, a, nonce);
		else
			evbuffer_add_reference(body, a->data, a->len, NULL, NULL);
	}
	aj_srv_send(r->srv, r->req, 200, media_type(a->name), body);
	r->req = NULL;
	aj_srv_req_free(r);
}

static void redirect(struct aj_srv_req *r, const char *to)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);

	security_headers(h, NULL);
	evhttp_add_header(h, "Location", to);
	aj_srv_send(r->srv, r->req, 302, NULL, NULL);
	r->req = NULL;
	aj_srv_req_free(r);
}

bool aj_srv_console_route(struct aj_srv_req *r, const char *path)
{
	enum evhttp_cmd_type method = evhttp_request_get_command(r->req);
	const struct aj_console_asset *a;

	if (aj_srv_console_session_route(r, path))
		return true;
	if (!path || (strcmp(path, "/console") && strncmp(path, PREFIX, sizeof PREFIX - 1) &&
		      !(r->console && !strcmp(path, "/"))))
		return false;
	if (r->console && aj_srv_console_host_check(r) < 0) {
		aj_srv_req_finish(r);
		return true;
	}
	if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
		snprintf(r->allow, sizeof r->allow, "GET, HEAD");
		aj_srv_fail(r, 405, "method_not_allowed", NULL, "the console's files are read-only");
		aj_srv_req_finish(r);
		return true;
	}
	if (!strncmp(path, PREFIX, sizeof PREFIX - 1)) {
		a = find_asset(path[sizeof PREFIX - 1] ? path + sizeof PREFIX - 1 : "index.html");
		if (a) {
			send_asset(r, a);
		} else {
			aj_srv_fail(r, 404, "not_found", NULL, "the console has no file \"%s\"", path);
			aj_srv_req_finish(r);
		}
		return true;
	}
	redirect(r, PREFIX);
	return true;
}

/* ---- the console listener ------------------------------------------------------------------ */

/* A Host of the loopback: localhost, 127.0.0.0/8 or [::1], with or without a port. A name that
 * resolves elsewhere (DNS rebinding, a page of another site aiming at this port) is refused
 * before anything else. */
static bool loopback_host(const char *host)
{
	char name[256];
	const char *colon;
	size_t n;
	struct in_addr a4;

	if (!host)
		return false;
	if (host[0] == '[') {
		const char *close = strchr(host, ']');
		return close && !strncmp(host, "[::1]", 5) && close == host + 4 &&
		       (!close[1] || close[1] == ':');
	}
	colon = strchr(host, ':');
	n = colon ? (size_t)(colon - host) : strlen(host);
	if (n == 0 || n >= sizeof name)
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (!strcasecmp(name, "localhost"))
		return true;
	return inet_pton(AF_INET, name, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

int aj_srv_console_host_check(struct aj_srv_req *r)
{
	const char *host = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Host");

	if (!loopback_host(host))
		return aj_srv_fail(r, 403, "forbidden", NULL,
				   "the console listener answers only to a loopback Host "
				   "(localhost, 127.0.0.1, [::1])");
	return 0;
}

int aj_srv_console_auth(struct aj_srv_req *r)
{
	const char *auth = evhttp_find_header(evhttp_request_get_input_headers(r->req),
					      "Authorization");
	const char *v;
	size_t n;

	if (aj_srv_console_host_check(r) < 0)
		return -1;
	if (!auth || strncasecmp(auth, "Bearer ", 7))
		return aj_srv_fail(r, 401, "unauthorized", NULL,
				   "this listener needs Authorization: Bearer TOKEN (the console's "
				   "token, in the state directory's console.json, or a session's)");
	v = auth + 7 + strspn(auth + 7, " ");
	n = strcspn(v, " \t");
	if (v[n + strspn(v + n, " \t")] != '\0' || !aj_srv_console_credential_ok(v, n))
		return aj_srv_fail(r, 401, "unauthorized", NULL, "the bearer token is not valid");
	r->job.owner[0] = '\0'; /* the local owner */
	return 0;
}

/* The address must be a loopback one: the listener acts for the local owner, the host's
 * administrator, whose token must never cross a network. Port 0 (or none): one the kernel
 * picks, which no other local user can hold in advance. */
int aj_srv_console_check_listen(const char *hostport, char *addr, size_t addr_len,
				struct aj_err *err)
{
	struct sockaddr_storage ss = {0};
	int len = sizeof ss;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;
	size_t n = strlen(hostport);

	/* libevent's parser refuses port 0; an address without a port is the same. */
	snprintf(addr, addr_len, "%.*s", (int)(n > 2 && !strcmp(hostport + n - 2, ":0") ? n - 2 : n),
		 hostport);
	if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &len) < 0 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--console-listen: expected HOST:PORT such as 127.0.0.1:0, got "
				  "\"%s\"",
				  hostport);
	if ((ss.ss_family == AF_INET && (ntohl(a4->sin_addr.s_addr) >> 24) != 127) ||
	    (ss.ss_family == AF_INET6 && !IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr)))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--console-listen: \"%s\" is not a loopback address; the console "
				  "acts for the local owner and listens on 127.0.0.0/8 or [::1] only "
				  "(for other machines, use --listen with tokens: /console/ is served "
				  "there too)",
				  hostport);
	return 0;
}
