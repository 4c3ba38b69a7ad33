/* The API's route tables and the way from an evhttp request to a handler: authentication
 * (TCP listeners only), path matching with {ref}/{name} captures, 404 and 405 (with Allow)
 * and the query parameters each route declares (the matcher in route.c, shared with the E2B
 * front end), the body, then prepare on the loop thread and work on a worker. New endpoints
 * are rows in a table of an api_*.c file; a new table is one line in `tables` below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server/internal.h"

static const struct aj_srv_table *tables(void)
{
	static const struct aj_srv_table t[] = {
		AJ_SRV_TABLE(aj_api_meta_routes), AJ_SRV_TABLE(aj_api_sandbox_routes),
		AJ_SRV_TABLE(aj_api_snapshot_routes), AJ_SRV_TABLE(aj_api_file_routes),
		AJ_SRV_TABLE(aj_api_event_routes), AJ_SRV_TABLE(aj_api_exec_routes),
		AJ_SRV_TABLE(aj_api_proc_routes), AJ_SRV_TABLE(aj_api_preview_routes),
		AJ_SRV_TABLE(aj_api_secret_routes),
		AJ_SRV_TABLE(aj_api_volume_routes), AJ_SRV_TABLE(aj_api_terminal_routes),
		AJ_SRV_TABLES_END,
	};
	return t;
}

struct listener_ctx {
	struct aj_srv *srv;
	enum aj_srv_listener kind;
};

static int find_route(struct aj_srv_req *r, const char *path)
{
	enum evhttp_cmd_type method = evhttp_request_get_command(r->req);
	struct aj_srv_match m;
	const char *ref, *name;

	if (aj_srv_route_match(tables(), method, path, sizeof r->ref, &m) == 0) {
		r->route = m.route;
		if ((ref = aj_srv_match_capture(&m, "ref")))
			snprintf(r->ref, sizeof r->ref, "%s", ref);
		if ((name = aj_srv_match_capture(&m, "name")))
			snprintf(r->name, sizeof r->name, "%s", name);
		return 0;
	}
	if (!m.methods)
		return aj_srv_fail(r, 404, "not_found", NULL, "no such endpoint");
	snprintf(r->allow, sizeof r->allow, "%s", m.allow);
	return aj_srv_fail(r, 405, "method_not_allowed", NULL, "%s is not allowed here (allowed: %s)",
			   aj_srv_method_name(method), r->allow);
}

/* Every parameter must be one the route takes, once (labels may repeat). */
static int parse_query(struct aj_srv_req *r, const char *q)
{
	static const char *const repeatable[] = {"label", NULL};
	const struct evkeyval *kv;
	bool repeated;

	if (!q || !q[0])
		return 0;
	if (strstr(q, "%00"))
		return aj_srv_fail(r, 400, "invalid_query", NULL, "the query holds a NUL byte");
	if (evhttp_parse_query_str(q, &r->query) < 0)
		return aj_srv_fail(r, 400, "invalid_query", NULL,
				   "the query string is not NAME=VALUE pairs joined by &");
	kv = aj_srv_query_bad(r->route, &r->query, repeatable, &repeated);
	if (kv && !repeated)
		return aj_srv_fail(r, 400, "unknown_parameter", kv->key,
				   "%s: unknown query parameter", kv->key);
	if (kv)
		return aj_srv_fail(r, 400, "invalid_value", kv->key, "%s: given more than once",
				   kv->key);
	return 0;
}

int aj_srv_authenticate(struct aj_srv_req *r)
{
	const char *auth, *owner;

	if (r->console)
		return aj_srv_console_auth(r);
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
	struct aj_srv_req *r = aj_xcalloc(1, sizeof *r);

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

/* ANY /v1/sandboxes/{ref}/ports/{port}/PATH: to the port inside (portproxy.c). */
static bool port_route(struct aj_srv_req *r, const struct evhttp_uri *uri)
{
	const char *path = evhttp_uri_get_path(uri), *query = evhttp_uri_get_query(uri), *rest;
	struct aj_srv_proxy_opts o = {.strip_auth = r->remote || r->console};
	_cleanup_free_ char *target = NULL;
	unsigned port;

	if (!path || !aj_srv_port_path(path, r->ref, &port, &rest))
		return false;
	target = aj_xasprintf("%s%s%s", rest, query ? "?" : "", query ? query : "");
	if (aj_srv_authenticate(r) < 0 || aj_srv_proxy_start(r, port, target, &o) < 0)
		aj_srv_req_finish(r);
	return true;
}

static void dispatch(struct aj_srv_req *r)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
	int rc;

	if (aj_srv_console_route(r, evhttp_uri_get_path(uri)) || port_route(r, uri) ||
	    aj_srv_terminal_route(r, evhttp_uri_get_path(uri)))
		return;
	if (aj_srv_authenticate(r) < 0 || find_route(r, evhttp_uri_get_path(uri)) < 0 ||
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

	if (lc->srv->stopping) {
		struct aj_srv_error e = {503, "shutting_down", "", "the daemon is shutting down"};
		aj_srv_reply_early(lc->srv, req, &e);
		return;
	}
	struct aj_srv_req *r = aj_srv_req_new(lc->srv, req, lc->kind == AJ_SRV_REMOTE);

	r->console = lc->kind == AJ_SRV_CONSOLE;
	dispatch(r);
}

int aj_srv_router_install(struct aj_srv *s, struct evhttp *http, enum aj_srv_listener kind)
{
	/* Freed with the process: one per evhttp instance, which lives as long. */
	static struct listener_ctx ctx[3];

	ctx[kind].srv = s;
	ctx[kind].kind = kind;
	evhttp_set_gencb(http, on_request, &ctx[kind]);
	return 0;
}
