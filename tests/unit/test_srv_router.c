/* The route matcher both HTTP front ends share (src/server/route.c): patterns, captures,
 * 404 against 405 with the Allow list, and the query parameter checks. */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>
#include <sys/queue.h>

#include "server/frontend.h"
#include "unit.h"

static const char *const list_query[] = {"label", "limit", NULL};

static const struct aj_srv_route api_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes", AJ_SRV_BODY_NONE, list_query, NULL, NULL,
		     NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes", AJ_SRV_BODY_JSON, NULL, NULL, NULL, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}", AJ_SRV_BODY_NONE, NULL, NULL, NULL,
		     NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/sandboxes/{ref}", AJ_SRV_BODY_NONE, NULL, NULL, NULL,
		     NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/sandboxes/{ref}/snapshots/{name}", AJ_SRV_BODY_NONE,
		     NULL, NULL, NULL, NULL),
	AJ_SRV_ROUTES_END,
};

/* A second table, as E2B has them: rows of the front end's own type, which begins with the
 * server's route and adds the front end's style. */
enum own_style { OWN_PLAIN, OWN_STREAM, OWN_UNARY };

struct own_route {
	struct aj_srv_route rt;
	enum own_style style;
};

static const struct own_route e2b_routes[] = {
	{.rt = {.method = EVHTTP_REQ_POST, .pattern = "/sandboxes/{id}/pause"}, .style = OWN_UNARY},
	{.rt = {.method = EVHTTP_REQ_POST, .pattern = "/process.Process/Start"},
	 .style = OWN_STREAM},
	{.rt = AJ_SRV_ROUTES_END},
};

static const struct aj_srv_table tables[] = {
	AJ_SRV_TABLE(api_routes),
	{&e2b_routes[0].rt, sizeof e2b_routes[0]},
	AJ_SRV_TABLES_END,
};

static struct aj_srv_match m;

static int match(enum evhttp_cmd_type method, const char *path)
{
	return aj_srv_route_match(tables, method, path, 0, &m);
}

static void patterns(void)
{
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes") == 0 && m.route == &api_routes[0],
	      "a literal path and its method");
	CHECK(match(EVHTTP_REQ_POST, "/v1/sandboxes") == 0 && m.route == &api_routes[1],
	      "the same path with another method is another route");
	CHECK(match(EVHTTP_REQ_POST, "/process.Process/Start") == 0 &&
		      m.route == &e2b_routes[1].rt &&
		      ((const struct own_route *)m.route)->style == OWN_STREAM,
	      "routes of a later table, with their style");
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes/") == -1 && m.methods == 0,
	      "a trailing slash matches nothing");
	CHECK(match(EVHTTP_REQ_GET, "/v1//sandboxes") == -1 && m.methods == 0,
	      "an empty segment matches nothing");
	CHECK(match(EVHTTP_REQ_GET, "v1/sandboxes") == -1, "a relative path matches nothing");
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes/a/b") == -1 && m.methods == 0,
	      "more segments than the pattern: no match");
	CHECK(match(EVHTTP_REQ_GET, "/v1") == -1 && m.methods == 0,
	      "fewer segments than the pattern: no match");
	CHECK(match(EVHTTP_REQ_GET, "/a/b/c/d/e/f/g/h/i") == -1, "too many segments");
}

static void captures(void)
{
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes/box-1") == 0 && m.n == 1,
	      "a capture is taken");
	CHECK_STR(aj_srv_match_capture(&m, "ref"), "box-1", "{ref} by its name");
	CHECK(aj_srv_match_capture(&m, "name") == NULL, "no such capture: NULL");
	CHECK(match(EVHTTP_REQ_DELETE, "/v1/sandboxes/b/snapshots/s%201") == 0 && m.n == 2,
	      "two captures");
	CHECK_STR(aj_srv_match_capture(&m, "name"), "s 1", "captures are percent-decoded");
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes/a%2Fb") == -1 && m.methods == 0,
	      "a slash smuggled in with %%2F names nothing");
	CHECK(match(EVHTTP_REQ_GET, "/v1/sandboxes/a%00b") == -1, "so does a NUL");
	CHECK(match(EVHTTP_REQ_POST, "/sandboxes/0123456789/pause") == 0 &&
		      !strcmp(aj_srv_match_capture(&m, "id"), "0123456789"),
	      "{id} of a second table");
	CHECK(aj_srv_route_match(tables, EVHTTP_REQ_POST, "/sandboxes/0123456789/pause", 10, &m) ==
			      -1 &&
		      m.methods == 0,
	      "a capture as long as cap_max names nothing");
	CHECK(aj_srv_route_match(tables, EVHTTP_REQ_POST, "/sandboxes/012345678/pause", 10, &m) == 0,
	      "one shorter is taken");
}

static void not_allowed(void)
{
	CHECK(match(EVHTTP_REQ_GET, "/v1/nothing") == -1 && m.methods == 0 && !m.route,
	      "an unknown path is a 404 (no methods)");
	CHECK(match(EVHTTP_REQ_PUT, "/v1/sandboxes") == -1 && m.methods != 0,
	      "a known path with another method is a 405");
	CHECK_STR(m.allow, "GET, POST", "Allow lists the path's methods in a fixed order");
	CHECK(match(EVHTTP_REQ_POST, "/v1/sandboxes/x") == -1, "405 on a path with a capture");
	CHECK_STR(m.allow, "GET, DELETE", "...with its own methods");
	CHECK(m.n == 0, "a failed match leaves no captures");
	CHECK_STR(aj_srv_method_name(EVHTTP_REQ_PATCH), "PATCH", "method names");
}

static const struct evkeyval *query(const char *q, bool *repeated)
{
	static struct evkeyvalq kv = TAILQ_HEAD_INITIALIZER(kv);
	static const char *const repeatable[] = {"label", NULL};

	evhttp_clear_headers(&kv);
	if (evhttp_parse_query_str(q, &kv) < 0)
		return NULL;
	return aj_srv_query_bad(&api_routes[0], &kv, repeatable, repeated);
}

static void queries(void)
{
	const struct evkeyval *bad;
	bool repeated;

	CHECK(query("label=a&limit=3", &repeated) == NULL, "listed parameters are taken");
	CHECK(query("label=a&label=b", &repeated) == NULL, "a repeatable one may repeat");
	bad = query("limit=1&limit=2", &repeated);
	CHECK(bad && repeated && !strcmp(bad->key, "limit"), "another one given twice is named");
	bad = query("limit=1&sort=name", &repeated);
	CHECK(bad && !repeated && !strcmp(bad->key, "sort"), "an unlisted one is named");
	{
		struct evkeyvalq kv;

		TAILQ_INIT(&kv);
		CHECK(aj_srv_query_bad(&api_routes[1], &kv, NULL, &repeated) == NULL,
		      "no parameters: nothing to refuse");
		evhttp_parse_query_str("x=1", &kv);
		bad = aj_srv_query_bad(&api_routes[1], &kv, NULL, &repeated);
		CHECK(bad && !strcmp(bad->key, "x"), "a route without a list takes none");
		evhttp_clear_headers(&kv);
	}
}

int main(void)
{
	patterns();
	captures();
	not_allowed();
	queries();
	UNIT_EXIT();
}
