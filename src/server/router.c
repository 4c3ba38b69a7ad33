/* The route table and the way from an evhttp request to a handler: authentication (TCP
 * listeners only), path matching with {ref}/{name} captures, 404 and 405 (with Allow), query
 * parameters each route declares, the body, then prepare on the loop thread and work on a
 * worker. New endpoints are rows in a table of an api_*.c file; a new table is one line in
 * `tables` below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server/internal.h"

static const struct aj_srv_route *const *tables(void)
{
	static const struct aj_srv_route *const t[] = {
		aj_api_meta_routes, aj_api_sandbox_routes, aj_api_snapshot_routes,
		aj_api_file_routes, aj_api_event_routes,   aj_api_proc_routes, NULL,
	};
	return t;
}

struct listener_ctx {
	struct aj_srv *srv;
	bool remote;
};

#define MAX_SEGS 8

struct path {
	char *seg[MAX_SEGS];
	size_t n;
	char buf[2048];
};

/* Splits "/v1/sandboxes/x" into segments; empty segments (a double or trailing slash) make
 * the path match nothing. */
static bool split_path(const char *p, struct path *out)
{
	char *save = NULL, *tok;

	out->n = 0;
	if (!p || p[0] != '/' || strlen(p) >= sizeof out->buf || strstr(p, "//") ||
	    (strlen(p) > 1 && p[strlen(p) - 1] == '/'))
		return false;
	snprintf(out->buf, sizeof out->buf, "%s", p + 1);
	for (tok = strtok_r(out->buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (out->n == MAX_SEGS)
			return false;
		out->seg[out->n++] = tok;
	}
	return true;
}

/* One pattern segment against one (still encoded) path segment; captures are decoded. */
static bool match_seg(const char *pat, const char *seg, struct aj_srv_req *r)
{
	char *dst, *dec;
	size_t len = 0;

	if (pat[0] != '{')
		return strcmp(pat, seg) == 0;
	dst = !strcmp(pat, "{ref}") ? r->ref : r->name;
	dec = evhttp_uridecode(seg, 0, &len);
	if (!dec)
		return false;
	/* A NUL or slash smuggled in with %00/%2F, or an overlong value, names nothing. */
	if (len != strlen(dec) || len == 0 || len >= sizeof r->ref || strchr(dec, '/')) {
		free(dec);
		return false;
	}
	memcpy(dst, dec, len + 1);
	free(dec);
	return true;
}

static bool match_route(const struct aj_srv_route *rt, const struct path *p,
			struct aj_srv_req *r)
{
	char pat[256], *save = NULL, *tok;
	size_t i = 0;

	snprintf(pat, sizeof pat, "%s", rt->pattern + 1);
	for (tok = strtok_r(pat, "/", &save); tok; tok = strtok_r(NULL, "/", &save), i++)
		if (i >= p->n || !match_seg(tok, p->seg[i], r))
			return false;
	return i == p->n;
}

static const char *method_name(enum evhttp_cmd_type m)
{
	switch (m) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "?";
}

/* The methods some route of this path takes, in a fixed order, for the Allow header. */
static void format_allow(struct aj_srv_req *r, unsigned methods)
{
	static const enum evhttp_cmd_type order[] = {EVHTTP_REQ_GET, EVHTTP_REQ_POST,
						      EVHTTP_REQ_PUT, EVHTTP_REQ_DELETE};

	r->allow[0] = '\0';
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		if (methods & order[i])
			snprintf(r->allow + strlen(r->allow), sizeof r->allow - strlen(r->allow),
				 "%s%s", r->allow[0] ? ", " : "", method_name(order[i]));
}

static int find_route(struct aj_srv_req *r, const char *path)
{
	enum evhttp_cmd_type method = evhttp_request_get_command(r->req);
	unsigned methods = 0;
	struct path p;

	if (!split_path(path, &p))
		return aj_srv_fail(r, 404, "not_found", NULL, "no such endpoint");
	for (const struct aj_srv_route *const *t = tables(); *t; t++)
		for (const struct aj_srv_route *rt = *t; rt->pattern; rt++) {
			if (!match_route(rt, &p, r))
				continue;
			if (rt->method == method) {
				r->route = rt;
				return 0;
			}
			methods |= (unsigned)rt->method;
		}
	if (!methods)
		return aj_srv_fail(r, 404, "not_found", NULL, "no such endpoint");
	format_allow(r, methods);
	return aj_srv_fail(r, 405, "method_not_allowed", NULL, "%s is not allowed here (allowed: %s)",
			   method_name(method), r->allow);
}

static bool query_allowed(const struct aj_srv_route *rt, const char *key)
{
	for (const char *const *q = rt->query; q && *q; q++)
		if (!strcmp(*q, key))
			return true;
	return false;
}

/* Every parameter must be one the route takes, once (labels may repeat). */
static int parse_query(struct aj_srv_req *r, const char *q)
{
	struct evkeyval *kv;

	if (!q || !q[0])
		return 0;
	if (strstr(q, "%00"))
		return aj_srv_fail(r, 400, "invalid_query", NULL, "the query holds a NUL byte");
	if (evhttp_parse_query_str(q, &r->query) < 0)
		return aj_srv_fail(r, 400, "invalid_query", NULL,
				   "the query string is not NAME=VALUE pairs joined by &");
	TAILQ_FOREACH(kv, &r->query, next) {
		if (!query_allowed(r->route, kv->key))
			return aj_srv_fail(r, 400, "unknown_parameter", kv->key,
					   "%s: unknown query parameter", kv->key);
		if (strcmp(kv->key, "label") && evhttp_find_header(&r->query, kv->key) != kv->value)
			return aj_srv_fail(r, 400, "invalid_value", kv->key,
					   "%s: given more than once", kv->key);
	}
	return 0;
}

static int authenticate(struct aj_srv_req *r)
{
	const char *auth, *owner;

	if (!r->remote)
		return 0; /* the unix socket is 0600: the local owner, as the CLI */
	auth = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Authorization");
	owner = auth ? aj_srv_tokens_owner(r->srv->tokens, auth) : NULL;
	if (!owner)
		return aj_srv_fail(r, 401, "unauthorized", NULL,
				   auth ? "the bearer token is not valid"
					: "this listener needs Authorization: Bearer TOKEN");
	snprintf(r->job.owner, sizeof r->job.owner, "%s", owner);
	return 0;
}

static void req_done(struct aj_srv_job *j)
{
	struct aj_srv_req *r = (struct aj_srv_req *)j;

	if (r->route->done && !r->failed)
		r->route->done(r);
	else
		aj_srv_req_finish(r);
}

static void req_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	struct aj_srv_req *r = (struct aj_srv_req *)j;

	r->route->work(r, m);
}

struct aj_srv_req *aj_srv_req_new(struct aj_srv *s, struct evhttp_request *req, bool remote)
{
	struct aj_srv_req *r = calloc(1, sizeof *r);

	if (!r)
		return NULL;
	r->srv = s;
	r->req = req;
	r->remote = remote;
	r->file_fd = -1;
	TAILQ_INIT(&r->query);
	r->job.work = req_work;
	r->job.done = req_done;
	s->inflight++;
	return r;
}

static void dispatch(struct aj_srv_req *r)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
	int rc;

	if (authenticate(r) < 0 || find_route(r, evhttp_uri_get_path(uri)) < 0 ||
	    parse_query(r, evhttp_uri_get_query(uri)) < 0 || aj_srv_read_body(r) < 0) {
		aj_srv_req_finish(r);
		return;
	}
	rc = r->route->prepare ? r->route->prepare(r) : 0;
	if (rc > 0)
		return;
	if (rc < 0 || !r->route->work) {
		aj_srv_req_finish(r);
		return;
	}
	aj_srv_pool_submit(r->srv, &r->job);
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct listener_ctx *lc = arg;
	struct aj_srv_req *r;

	if (lc->srv->stopping) {
		struct aj_srv_error e = {503, "shutting_down", "", "the daemon is shutting down"};
		aj_srv_reply_early(lc->srv, req, &e);
		return;
	}
	r = aj_srv_req_new(lc->srv, req, lc->remote);
	if (!r) {
		struct aj_srv_error e = {500, "internal", "", "out of memory"};
		aj_srv_reply_early(lc->srv, req, &e);
		return;
	}
	dispatch(r);
}

int aj_srv_router_install(struct aj_srv *s, struct evhttp *http, bool remote)
{
	/* Freed with the process: one per evhttp instance, which lives as long. */
	static struct listener_ctx ctx[2];

	ctx[remote].srv = s;
	ctx[remote].remote = remote;
	evhttp_set_gencb(http, on_request, &ctx[remote]);
	return 0;
}
