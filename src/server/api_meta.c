/* GET /v1/health, /v1/version, /v1/features and /v1/whoami: answered on the loop thread, no
 * manager. */
#include "server/internal.h"

static int health(struct aj_srv_req *r)
{
	aj_srv_ok(r, 200, json_pack("{s:s}", "status", "ok"));
	return 0;
}

static int version(struct aj_srv_req *r)
{
	aj_srv_ok(r, 200, json_pack("{s:s, s:s}", "version", r->srv->cfg->version, "api", "v1"));
	return 0;
}

/* Probed at start-up (the probe forks; the daemon's threads must not): the host's kernel
 * does not change under a running daemon, its cgroup delegation rarely does. */
static int features(struct aj_srv_req *r)
{
	aj_srv_ok(r, 200, json_incref(r->srv->features));
	return 0;
}

/* Whom the request acts for: a token's owner, or the local owner (null) on the unix socket and
 * the console listener. The console shows it in its header. */
static int whoami(struct aj_srv_req *r)
{
	aj_srv_ok(r, 200, json_pack("{s:s?, s:s}", "owner", r->job.owner[0] ? r->job.owner : NULL,
				    "listener", r->console ? "console" : r->remote ? "tcp" : "unix"));
	return 0;
}

const struct aj_srv_route aj_api_meta_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/health", AJ_SRV_BODY_NONE, NULL, health, NULL, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/version", AJ_SRV_BODY_NONE, NULL, version, NULL, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/features", AJ_SRV_BODY_NONE, NULL, features, NULL, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/whoami", AJ_SRV_BODY_NONE, NULL, whoami, NULL, NULL),
	AJ_SRV_ROUTES_END,
};
