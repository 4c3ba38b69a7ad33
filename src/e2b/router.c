/* The E2B router: one listener serves both of E2B's sides, told apart as E2B's own proxy does
 * (docs/e2b-protocol.md 3.1): a request with E2b-Sandbox-Id and E2b-Sandbox-Port is for the
 * sandbox side (envd's REST and Connect services, authenticated by the sandbox's access
 * token); /files with a signature and no such headers is a signed URL; everything else is the
 * control plane (X-API-KEY). Then the route's table (the server's route type and matcher,
 * server/frontend.h), the query, the Connect headers, the body, and prepare, work and done as
 * in the server's own router. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "common/base64.h"
#include "e2b/internal.h"

static void req_data_free(void *p)
{
	struct e2b_req *x = p;

	if (x->x_free)
		x->x_free(x->x);
	if (x->ctl >= 0)
		close(x->ctl);
	if (x->have_rec)
		aj_sandbox_rec_free(&x->rec);
	json_decref(x->msg);
	free(x);
}

static void req_done(struct aj_srv_job *j)
{
	struct aj_srv_req *r = (struct aj_srv_req *)j;
	const struct aj_srv_route *rt = r->route;

	if (rt->done && !r->failed)
		rt->done(r);
	else
		e2b_finish(r);
}

/* ---- routes ------------------------------------------------------------------------------ */

static const struct aj_srv_table control_tables[] = {
	E2B_TABLE(e2b_template_routes), E2B_TABLE(e2b_network_routes), E2B_TABLE(e2b_snapshot_routes),
	E2B_TABLE(e2b_metrics_routes), E2B_TABLE(e2b_secret_routes), E2B_TABLE(e2b_volume_routes),
	E2B_TABLE(e2b_control_routes), AJ_SRV_TABLES_END};
static const struct aj_srv_table volume_tables[] = {E2B_TABLE(e2b_volume_content_routes),
						    AJ_SRV_TABLES_END};
static const struct aj_srv_table sandbox_tables[] = {
	E2B_TABLE(e2b_envd_routes), E2B_TABLE(e2b_process_routes), E2B_TABLE(e2b_fs_routes),
	E2B_TABLE(e2b_watch_routes), AJ_SRV_TABLES_END,
};

/* The shared matcher (server/route.c); an {id} longer than the request's room names no
 * route. */
static int find_route(struct aj_srv_req *r, const struct aj_srv_table *tables, const char *path)
{
	struct e2b_req *x = e2b_of(r);
	enum evhttp_cmd_type method = evhttp_request_get_command(r->req);
	struct aj_srv_match m;
	const char *id;

	if (aj_srv_route_match(tables, method, path, sizeof x->id, &m) == 0) {
		r->route = m.route;
		x->style = e2b_route_of(m.route)->style;
		if ((id = aj_srv_match_capture(&m, "id")))
			snprintf(x->id, sizeof x->id, "%s", id);
		if ((id = aj_srv_match_capture(&m, "arg")))
			snprintf(x->arg, sizeof x->arg, "%s", id);
		return 0;
	}
	/* A Connect procedure this server does not have is "unimplemented" in Connect's terms. */
	if (!strncmp(path, "/process.Process/", 17) || !strncmp(path, "/filesystem.Filesystem/", 23)) {
		x->style = E2B_UNARY;
		return e2b_rpc_fail(r, "unimplemented", "%s is not implemented", path + 1);
	}
	if (m.methods)
		return e2b_fail(r, 405, "%s is not allowed on %s",
				method == EVHTTP_REQ_GET ? "GET" : "this method", path);
	return e2b_fail(r, 404, "no such route: %s", path);
}

/* ---- headers ------------------------------------------------------------------------------ */

static const char *header(struct aj_srv_req *r, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(r->req), name);
}

/* The user of an RPC: Authorization: Basic base64("<user>:"). */
static int basic_user(struct aj_srv_req *r)
{
	const char *a = header(r, "Authorization");
	unsigned char dec[96];
	size_t n;
	long got;

	if (!a)
		return 0;
	if (strncasecmp(a, "Basic ", 6) || (n = strlen(a + 6)) > 120 ||
	    (got = aj_base64_decode(a + 6, n, dec)) < 1 || !memchr(dec, ':', (size_t)got))
		return e2b_fail(r, 401, "Authorization: expected Basic with \"user:\"");
	n = (size_t)((char *)memchr(dec, ':', (size_t)got) - (char *)dec);
	if (n >= sizeof e2b_of(r)->user || memchr(dec, '\0', n))
		return e2b_fail(r, 401, "Authorization: the user name is too long");
	snprintf(e2b_of(r)->user, sizeof e2b_of(r)->user, "%.*s", (int)n, (const char *)dec);
	return 0;
}

static int connect_headers(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	const char *t = header(r, "Connect-Timeout-Ms"), *k = header(r, "Keepalive-Ping-Interval");
	char *end;

	x->keepalive_s = 90; /* envd's when absent or invalid */
	if (k && *k && strlen(k) < 6 && strspn(k, "0123456789") == strlen(k) && atoi(k) > 0)
		x->keepalive_s = atoi(k);
	if (!t)
		return 0;
	errno = 0;
	x->timeout_ms = strtoll(t, &end, 10);
	/* Connect: at most 10 digits. */
	if (!*t || *end || errno || strlen(t) > 10 || x->timeout_ms < 0)
		return e2b_rpc_fail(r, "invalid_argument", "Connect-Timeout-Ms: expected 1-10 digits");
	return 0;
}

/* The sandbox side: the access token (or a signed /files URL), the user, Connect's headers. */
static int sandbox_auth(struct aj_srv_req *r, const char *path)
{
	struct e2b_req *x = e2b_of(r);
	const char *tok = header(r, "X-Access-Token");
	bool files = !strcmp(path, "/files");

	r->job.any_owner = true; /* the token, not an owner, says who may */
	if (!e2b_id_ok(x->id))
		return e2b_fail_gone(r);
	if (!strcmp(path, "/health"))
		return 0;
	if (files && !tok && aj_srv_query(r, "signature"))
		x->signed_url = true; /* checked against the sandbox's token by the route */
	else if (!e2b_token_ok(x->e2b, x->id, tok))
		return x->style == E2B_API
			       ? e2b_fail(r, 401, "unauthorized access, please provide a valid access "
						  "token or method signing if supported")
			       : e2b_rpc_fail(r, "unauthenticated", "invalid access token");
	if (aj_srv_query(r, "username"))
		snprintf(x->user, sizeof x->user, "%s", aj_srv_query(r, "username"));
	return basic_user(r) < 0 || connect_headers(r) < 0 ? -1 : 0;
}

/* The volume content routes: Authorization: Bearer <the volume's token> names the owner. */
static int volume_auth(struct aj_srv_req *r, const char *path)
{
	const char *auth = header(r, "Authorization");
	struct e2b_req *x = e2b_of(r);

	if (!auth || strncasecmp(auth, "Bearer ", 7) ||
	    !e2b_volume_token_owner(x->e2b, auth + 7, x->id, r->job.owner))
		return e2b_fail(r, 401, "invalid or missing volume token");
	x->upload = !strcmp(path + strlen(path) - 5, "/file") &&
		    evhttp_request_get_command(r->req) == EVHTTP_REQ_PUT;
	return 0;
}

static int control_auth(struct aj_srv_req *r, const char *path)
{
	const char *key = header(r, "X-API-KEY");

	if (!strcmp(path, "/health"))
		return 0;
	if (!e2b_key_owner(e2b_of(r)->e2b, key, r->job.owner))
		return e2b_fail(r, 401, key ? "Invalid API key" : "X-API-KEY header is missing");
	return 0;
}

/* ---- bodies -------------------------------------------------------------------------------- */

static bool media_type_is(const char *ct, const char *want)
{
	size_t n = strlen(want);

	return ct && !strncasecmp(ct, want, n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int parse_json(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	json_error_t jerr;

	x->msg = x->raw_len ? json_loadb(x->raw, x->raw_len, JSON_REJECT_DUPLICATES, &jerr)
			    : json_object();
	if (x->msg && json_is_object(x->msg))
		return 0;
	if (x->style == E2B_API)
		return e2b_fail(r, 400, "Error when parsing request: %s",
				x->msg ? "the body must be a JSON object" : jerr.text);
	return e2b_rpc_fail(r, "invalid_argument", "the request message is not a JSON object%s%s",
			    x->msg ? "" : ": ", x->msg ? "" : jerr.text);
}

/* A Connect call in another codec or framing: a plain 415, as the Connect protocol asks, never
 * an answer in Connect's framing (a stream's error would come with HTTP 200 and read as a
 * success to a client that does not speak it). */
static int unsupported_type(struct aj_srv_req *r, const char *msg)
{
	e2b_of(r)->style = E2B_API;
	return e2b_fail(r, 415, "%s", msg);
}

static int read_body(struct aj_srv_req *r, const char *path)
{
	struct e2b_req *x = e2b_of(r);
	struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
	const char *ct = header(r, "Content-Type");
	bool upload = (!strcmp(path, "/files") || x->signed_url || x->upload) && x->style == E2B_API;
	size_t len = evbuffer_get_length(in), max = upload ? aj_srv_cfg(r->srv)->max_upload
							    : aj_srv_cfg(r->srv)->max_body;

	if (len > max)
		return x->style == E2B_API
			       ? e2b_fail(r, 413, "the request body (%zu bytes) is larger than the "
						  "limit of %zu bytes", len, max)
			       : e2b_rpc_fail(r, "resource_exhausted", "the request (%zu bytes) is "
					      "larger than the limit of %zu bytes", len, max);
	x->raw = len ? (const char *)evbuffer_pullup(in, -1) : "";
	x->raw_len = len;
	if (!x->raw) /* libevent's allocation */
		return e2b_fail(r, 500, "out of memory");
	if (x->style == E2B_STREAM) {
		if (!media_type_is(ct, "application/connect+json"))
			return unsupported_type(r, "a streaming call needs Content-Type: "
						   "application/connect+json");
		return e2b_envelope_msg(r);
	}
	if (x->style == E2B_UNARY) {
		if (!media_type_is(ct, "application/json"))
			return unsupported_type(r, "a unary call needs Content-Type: "
						   "application/json");
		return parse_json(r);
	}
	if (upload || !len)
		return 0;
	if (!media_type_is(ct, "application/json"))
		return e2b_fail(r, 415, "the body needs Content-Type: application/json");
	return parse_json(r);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static int parse_query(struct aj_srv_req *r)
{
	const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(r->req));

	if (!q || !q[0])
		return 0;
	if (strstr(q, "%00") || evhttp_parse_query_str(q, &r->query) < 0)
		return e2b_fail(r, 400, "the query string is not NAME=VALUE pairs joined by &");
	return 0;
}

static int route(struct aj_srv_req *r, const char *path)
{
	struct e2b_req *x = e2b_of(r);
	const char *sid = header(r, "E2b-Sandbox-Id"), *port = header(r, "E2b-Sandbox-Port");

	if (parse_query(r) < 0)
		return -1;
	if (!sid && !port && !strcmp(path, "/files") && aj_srv_query(r, "signature")) {
		snprintf(x->id, sizeof x->id, "%s", "0000000000000000");
		if (find_route(r, sandbox_tables, path) < 0)
			return -1;
		r->job.any_owner = true;
		x->signed_url = true;
		snprintf(x->user, sizeof x->user, "%s", aj_srv_query(r, "username") ?: "");
		return read_body(r, path);
	}
	/* A template upload's signed URL (template_build.c checks the signature). */
	if (!sid && !port && evhttp_request_get_command(r->req) == EVHTTP_REQ_PUT &&
	    !strncmp(path, "/templates/", 11) && aj_srv_query(r, "signature")) {
		if (find_route(r, control_tables, path) < 0)
			return -1;
		if (strcmp(r->route->pattern, "/templates/{id}/files/{arg}"))
			return e2b_fail(r, 401, "X-API-KEY header is missing");
		x->signed_url = true;
		return read_body(r, path);
	}
	if (!sid && !port && !strncmp(path, "/volumecontent/", 15))
		return find_route(r, volume_tables, path) < 0 || volume_auth(r, path) < 0
			       ? -1
			       : read_body(r, path);
	if (!sid != !port)
		return e2b_fail(r, 400, "missing header: E2b-Sandbox-Id and E2b-Sandbox-Port go "
					"together");
	if (!sid)
		return find_route(r, control_tables, path) < 0 || control_auth(r, path) < 0
			       ? -1
			       : read_body(r, path);
	snprintf(x->id, sizeof x->id, "%.63s", sid);
	return find_route(r, sandbox_tables, path) < 0 || sandbox_auth(r, path) < 0
		       ? -1
		       : read_body(r, path);
}

/* A request for a port other than envd's, by E2b-Sandbox-Port or by a Host PORT-ID.DOMAIN of
 * the preview domain: to that port inside (server/preview.c's access rules: public unless the
 * sandbox was made without allowPublicTraffic, then the traffic access token). True when it
 * was one (and is answered or under way). */
static bool port_request(struct aj_srv_req *r)
{
	const char *sid = header(r, "E2b-Sandbox-Id"), *port = header(r, "E2b-Sandbox-Port");
	unsigned p = 0;
	char *end;

	if (sid && port && strcmp(port, E2B_ENVD_PORT)) {
		unsigned long v = strtoul(port, &end, 10);
		/* Digits only, no leading zero: "049983" is not envd's port by another name. */
		if (port[0] < '1' || port[0] > '9' || strspn(port, "0123456789") != strlen(port) ||
		    *end || v > 65535 || strlen(sid) >= sizeof r->ref) {
			e2b_fail(r, 400, "E2b-Sandbox-Port: expected a port number from 1 to 65535");
			e2b_finish(r);
			return true;
		}
		p = (unsigned)v;
		snprintf(r->ref, sizeof r->ref, "%s", sid);
	} else if (!sid && !port && aj_srv_preview_host_parse(header(r, "Host"), &p, r->ref)) {
		if (p == (unsigned)atoi(E2B_ENVD_PORT))
			return false;
	} else {
		return false;
	}
	/* The request is the proxy's from here: E2B's own data goes. */
	req_data_free(r->data);
	r->data = NULL;
	r->data_free = NULL;
	if (aj_srv_preview_forward(r, p, NULL) < 0)
		aj_srv_req_finish(r);
	return true;
}

static void dispatch(struct aj_srv_req *r)
{
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(r->req));
	int rc;

	if (port_request(r))
		return;
	if (!path || route(r, path) < 0) {
		e2b_finish(r);
		return;
	}
	rc = r->route->prepare ? r->route->prepare(r) : 0;
	if (rc > 0)
		return;
	if (rc < 0 || !r->route->work) {
		if (rc == 0 && r->route->done)
			r->route->done(r);
		else
			e2b_finish(r);
		return;
	}
	aj_srv_pool_submit(r->srv, &r->job);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct aj_e2b *e = arg;
	struct aj_srv_req *r;
	struct e2b_req *x;

	if (aj_srv_stopping(e->srv)) {
		e2b_reply_early(e->srv, req, 503, "the daemon is shutting down");
		return;
	}
	r = aj_srv_req_new(e->srv, req, true);
	x = aj_xcalloc(1, sizeof *x);
	x->e2b = e;
	x->ctl = -1;
	r->data = x;
	r->data_free = req_data_free;
	r->job.done = req_done; /* the server's job.work runs r->route's work */
	dispatch(r);
}

static void install(void *state, struct evhttp *http)
{
	evhttp_set_gencb(http, on_request, state);
}

static void destroy(void *state)
{
	struct aj_e2b *e = state;

	if (!e)
		return;
	e2b_watchers_free(e);
	aj_srv_tokens_free(e->keys);
	json_decref(e->templates);
	explicit_bzero(e->secret, sizeof e->secret);
	free(e);
}

static int create(struct aj_srv *s, void **state, struct aj_err *err)
{
	const struct aj_srv_config *c = aj_srv_cfg(s);
	struct aj_e2b *e = aj_xcalloc(1, sizeof *e);

	e->srv = s;
	e->next_watcher = 1;
	*state = e;
	if (e2b_keys_load(e, c, err) < 0 || e2b_secret_load(e, c->state_dir, err) < 0 ||
	    e2b_templates_load(e, c->e2b_templates, err) < 0)
		return -1;
	return 0;
}

const struct aj_srv_frontend aj_e2b_frontend = {
	.name = "E2B API",
	.create = create,
	.install = install,
	.destroy = destroy,
	.warm_policy = e2b_warm_policy,
};
