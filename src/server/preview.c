/* Preview URLs (`serve --preview-listen ADDR:PORT --preview-domain DOMAIN`): a request whose
 * Host is PORT-REF.DOMAIN (REF a sandbox's id, or a name of the bearer token's owner) goes to
 * PORT inside that sandbox (portproxy.c), for browsers.
 *
 * Private by default. A request passes with the owner's bearer token (Authorization; a
 * token of the daemon's --token-file), with the preview token of that sandbox and port, or
 * when the sandbox's policy lists the port in network.public_ports. A preview token is
 * HMAC-SHA256 over "SANDBOX_ID:PORT" with the daemon's preview key (<state>/preview.key, made
 * once, mode 0600): it opens that one port of that one sandbox and nothing else. It comes as
 * ?aj_token=TOKEN (answered with a redirect that sets it as the host's cookie aj_preview and
 * drops it from the URL), as that cookie, or as the header X-Agentjail-Preview-Token. None of
 * them reaches the server inside.
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "server/internal.h"

#define COOKIE "aj_preview"
#define QUERY "aj_token"

/* ---- the key and the tokens ------------------------------------------------------------ */

int aj_srv_preview_key(const char *state_dir, unsigned char key[AJ_PREVIEW_KEY_LEN],
		       struct aj_err *err)
{
	char path[4200];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "%s/preview.key", state_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		char tmp[4300];
		unsigned char fresh[AJ_PREVIEW_KEY_LEN];
		_cleanup_close_ int w = -1;
		snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
		if (getrandom(fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh)
			return aj_err_sys(err, AJ_LAYER_API, "make the preview key");
		w = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (w < 0 || aj_write_all(w, fresh, sizeof fresh) < 0 || fsync(w) < 0) {
			aj_err_sys(err, AJ_LAYER_API, "write the preview key \"%s\"", tmp);
			unlink(tmp);
			return -1;
		}
		/* link(2) fails if another process made the key first: theirs is kept. */
		if (link(tmp, path) < 0 && errno != EEXIST) {
			aj_err_sys(err, AJ_LAYER_API, "install the preview key \"%s\"", path);
			unlink(tmp);
			return -1;
		}
		unlink(tmp);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_API, "read the preview key \"%s\"", path);
	if (read(fd, key, AJ_PREVIEW_KEY_LEN) != AJ_PREVIEW_KEY_LEN)
		return aj_err_set(err, AJ_LAYER_API, EINVAL,
				  "the preview key \"%s\" is not %d bytes", path, AJ_PREVIEW_KEY_LEN);
	return 0;
}

void aj_srv_preview_token(const unsigned char key[AJ_PREVIEW_KEY_LEN], const char *sandbox_id,
			  unsigned port, char out[AJ_PREVIEW_TOKEN_LEN + 1])
{
	char msg[64];
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	/* Port 0: the sandbox's token, for every port (E2B's traffic access token). */
	int n = port ? snprintf(msg, sizeof msg, "%s:%u", sandbox_id, port)
		     : snprintf(msg, sizeof msg, "%s:*", sandbox_id);

	HMAC(EVP_sha256(), key, AJ_PREVIEW_KEY_LEN, (const unsigned char *)msg, (size_t)n, mac,
	     &len);
	for (size_t i = 0; i < AJ_PREVIEW_TOKEN_LEN / 2; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
	out[AJ_PREVIEW_TOKEN_LEN] = '\0';
}

/* ---- requests -------------------------------------------------------------------------- */

struct preview {
	struct aj_srv *srv;
	bool on;
	unsigned char key[AJ_PREVIEW_KEY_LEN];
	char domain[256]; /* lower case, without a leading dot */
	char host_suffix[300]; /* DOMAIN[:LISTENPORT], what follows "PORT-ID." in a URL */
};

static struct preview g_preview;

/* What one request brought, for the check on the worker. */
struct pv_req {
	unsigned port;
	bool bearer;           /* the owner's token: the sandbox is looked up as that owner's */
	bool from_query;       /* the token came as ?aj_token= */
	char token[AJ_PREVIEW_TOKEN_LEN + 8];
	char *target_clean;    /* the target without aj_token, for the redirect */
};

static void pv_free(void *arg)
{
	struct pv_req *pv = arg;

	free(pv->target_clean);
	free(pv);
}

static bool public_port(const char *policy, unsigned port)
{
	_cleanup_json_ json_t *p = policy ? json_loads(policy, 0, NULL) : NULL;
	json_t *net = json_object_get(p, "network");
	json_t *v, *a = json_object_get(net, "public_ports");
	const char *mode = json_string_value(json_object_get(net, "preview"));
	size_t i;

	if (mode && !strcmp(mode, "public"))
		return true;
	json_array_foreach(a, i, v)
		if (json_integer_value(v) == (json_int_t)port)
			return true;
	return false;
}

static int pv_check(struct aj_srv_req *r, const struct aj_sandbox_rec *rec, void *arg)
{
	struct pv_req *pv = arg;
	char want[AJ_PREVIEW_TOKEN_LEN + 1];

	if (pv->bearer)
		return 0; /* found among the token owner's sandboxes */
	/* Without the owner's token a sandbox is named by its id: names are per owner. */
	if (strcmp(rec->id, r->ref))
		return aj_srv_fail(r, 404, "not_found", NULL, "no sandbox \"%s\"", r->ref);
	aj_srv_preview_token(g_preview.key, rec->id, pv->port, want);
	if (pv->token[0] && strlen(pv->token) == AJ_PREVIEW_TOKEN_LEN &&
	    CRYPTO_memcmp(pv->token, want, AJ_PREVIEW_TOKEN_LEN) != 0) {
		aj_srv_preview_token(g_preview.key, rec->id, 0, want); /* the sandbox's own */
	}
	if (pv->token[0] && strlen(pv->token) == AJ_PREVIEW_TOKEN_LEN &&
	    CRYPTO_memcmp(pv->token, want, AJ_PREVIEW_TOKEN_LEN) == 0) {
		if (pv->from_query)
			aj_srv_proxy_redirect(r, pv->target_clean, COOKIE, pv->token);
		return 0;
	}
	if (public_port(rec->policy, pv->port))
		return 0;
	return aj_srv_fail(r, 401, "unauthorized", NULL,
			   pv->token[0] ? "the preview token is not valid for this sandbox and port"
					: "this preview needs the owner's bearer token or a preview "
					  "token (agentjail port NAME --url)");
}

bool aj_srv_preview_host_parse(const char *host, unsigned *port, char ref[256])
{
	char h[512];
	size_t n, dl = strlen(g_preview.domain);
	char *dash, *end;
	unsigned long v;

	if (!g_preview.on || !host || strlen(host) >= sizeof h)
		return false;
	for (n = 0; host[n] && host[n] != ':'; n++)
		h[n] = (char)(host[n] >= 'A' && host[n] <= 'Z' ? host[n] + 32 : host[n]);
	h[n] = '\0';
	if (n > 0 && h[n - 1] == '.')
		h[--n] = '\0'; /* a fully qualified name's trailing dot */
	if (n <= dl + 1 || strcmp(h + n - dl, g_preview.domain) || h[n - dl - 1] != '.')
		return false;
	h[n - dl - 1] = '\0';
	if (strchr(h, '.') || h[0] < '0' || h[0] > '9')
		return false;
	errno = 0;
	v = strtoul(h, &end, 10);
	dash = end;
	if (errno || *dash != '-' || dash - h > 5 || v < 1 || v > 65535 || !dash[1] ||
	    strlen(dash + 1) >= 256)
		return false;
	*port = (unsigned)v;
	snprintf(ref, 256, "%s", dash + 1);
	return true;
}

/* The token of the request (query, cookie or header) into pv; the target inside without
 * ?aj_token into *target. */
static void find_token(struct evhttp_request *req, struct pv_req *pv, char **target)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *path = evhttp_uri_get_path(uri), *query = evhttp_uri_get_query(uri);
	const char *hdr = evhttp_find_header(h, "X-Agentjail-Preview-Token");
	const char *e2b = evhttp_find_header(h, "E2B-Traffic-Access-Token");
	const char *cookie = evhttp_find_header(h, "Cookie");
	_cleanup_evbuffer_ struct evbuffer *q = evbuffer_new();
	size_t len;
	char *qs;

	if (!path || !*path)
		path = "/";
	for (const char *p = query; p && *p;) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		if (n > sizeof QUERY && !strncmp(p, QUERY "=", sizeof QUERY)) {
			snprintf(pv->token, sizeof pv->token, "%.*s", (int)(n - sizeof QUERY),
				 p + sizeof QUERY);
			pv->from_query = true;
		} else if (n) {
			evbuffer_add_printf(q, "%s%.*s", evbuffer_get_length(q) ? "&" : "", (int)n, p);
		}
		p = amp ? amp + 1 : p + n;
	}
	len = evbuffer_get_length(q);
	qs = aj_xcalloc(1, len + 1);
	evbuffer_remove(q, qs, len);
	*target = aj_xasprintf("%s%s%s", path, len ? "?" : "", qs);
	free(qs);
	if (pv->token[0])
		return;
	if (hdr || e2b) {
		snprintf(pv->token, sizeof pv->token, "%s", hdr ? hdr : e2b);
		return;
	}
	for (const char *p = cookie; p && *p;) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, COOKIE "=", sizeof COOKIE)) {
			const char *v = p + sizeof COOKIE, *semi = strchr(v, ';');
			snprintf(pv->token, sizeof pv->token, "%.*s",
				 (int)(semi ? (size_t)(semi - v) : strlen(v)), v);
			return;
		}
		p = strchr(p, ';');
		p = p ? p + 1 : NULL;
	}
}

int aj_srv_preview_forward(struct aj_srv_req *r, unsigned port, const char *owner)
{
	struct pv_req *pv = aj_xcalloc(1, sizeof *pv);
	char *target = NULL;
	int rc;

	pv->port = port;
	pv->bearer = owner != NULL;
	if (owner)
		snprintf(r->job.owner, sizeof r->job.owner, "%s", owner);
	else
		r->job.any_owner = true;
	find_token(r->req, pv, &target);
	pv->target_clean = aj_xstrdup(target);
	struct aj_srv_proxy_opts o = {.strip_auth = owner != NULL,
				      .strip_cookie = COOKIE,
				      .check = pv_check,
				      .check_arg = pv,
				      .check_arg_free = pv_free};
	rc = aj_srv_proxy_start(r, port, target, &o);
	free(target);
	return rc;
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct preview *pv_cfg = arg;
	struct aj_srv *s = pv_cfg->srv;
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	const char *auth = evhttp_find_header(h, "Authorization");
	const char *owner = auth ? aj_srv_tokens_owner(s->tokens, auth) : NULL;
	struct aj_srv_req *r;
	unsigned port = 0;

	if (s->stopping) {
		struct aj_srv_error e = {503, "shutting_down", "", "the daemon is shutting down"};
		aj_srv_reply_early(s, req, &e);
		return;
	}
	r = aj_srv_req_new(s, req, true);
	if (!aj_srv_preview_host_parse(evhttp_find_header(h, "Host"), &port, r->ref)) {
		aj_srv_fail(r, 404, "not_found", "Host",
			    "the Host is not PORT-SANDBOX.%s", pv_cfg->domain);
		aj_srv_req_finish(r);
		return;
	}
	if (aj_srv_preview_forward(r, port, owner) < 0)
		aj_srv_req_finish(r);
}

const char *aj_srv_preview_domain(void)
{
	return g_preview.on ? g_preview.host_suffix : NULL;
}

void aj_srv_preview_sandbox_token(const char *sandbox_id, char out[AJ_PREVIEW_TOKEN_LEN + 1])
{
	aj_srv_preview_token(g_preview.key, sandbox_id, 0, out);
}

int aj_srv_preview_install(struct aj_srv *s, struct evhttp *http, const char *domain,
			   struct aj_err *err)
{
	struct aj_mgr m;
	int r;

	g_preview.srv = s;
	snprintf(g_preview.domain, sizeof g_preview.domain, "%s", domain[0] == '.' ? domain + 1 : domain);
	for (char *c = g_preview.domain; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
	if (aj_mgr_open(&m, s->cfg->state_dir, NULL, err) < 0)
		return -1;
	r = aj_srv_preview_key(m.state, g_preview.key, err);
	aj_mgr_close(&m);
	if (r < 0)
		return -1;
	evhttp_set_gencb(http, on_request, &g_preview);
	{
		const char *colon = strrchr(s->cfg->preview_listen, ':');
		snprintf(g_preview.host_suffix, sizeof g_preview.host_suffix, "%s%s%s",
			 g_preview.domain, colon && strcmp(colon, ":80") ? ":" : "",
			 colon && strcmp(colon, ":80") ? colon + 1 : "");
	}
	g_preview.on = true;
	return 0;
}

/* ---- GET /v1/sandboxes/{ref}/preview?port=N --------------------------------------------- */

static const char *const preview_query[] = {"port", NULL};

static int url_prepare(struct aj_srv_req *r)
{
	const char *v = aj_srv_query(r, "port");
	char *end;
	unsigned long port;

	if (!g_preview.on)
		return aj_srv_fail(r, 409, "not_configured", NULL,
				   "the daemon serves no preview URLs (serve --preview-listen "
				   "--preview-domain)");
	errno = 0;
	port = v ? strtoul(v, &end, 10) : 0;
	if (!v || errno || *end || port < 1 || port > 65535)
		return aj_srv_fail(r, 400, "invalid_value", "port",
				   "port: a port number from 1 to 65535 is needed");
	r->data = (void *)(uintptr_t)port;
	return 0;
}

static void url_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = {0};
	unsigned port = (unsigned)(uintptr_t)r->data;
	char token[AJ_PREVIEW_TOKEN_LEN + 1], host[320];
	struct aj_err err;

	r->data = NULL;
	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_preview_token(g_preview.key, rec.id, port, token);
	snprintf(host, sizeof host, "%u-%s.%s", port, rec.id, g_preview.host_suffix);
	aj_srv_ok(r, 200,
		  json_pack("{s:s, s:s+, s:s, s:i, s:b}", "host", host, "url", "http://", host,
			    "token", token, "port", (int)port, "public",
			    public_port(rec.policy, port)));
	/* The URL with the token, for a browser: it becomes the host's cookie. */
	json_object_set_new(r->result, "url_with_token",
			    json_sprintf("http://%s/?%s=%s", host, QUERY, token));
}

const struct aj_srv_route aj_api_preview_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/preview", AJ_SRV_BODY_NONE, preview_query,
		     url_prepare, url_work, NULL),
	AJ_SRV_ROUTES_END,
};
