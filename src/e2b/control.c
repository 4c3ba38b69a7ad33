/* E2B's control plane (docs/e2b-protocol.md 4) on persistent sandboxes.
 *
 * Every lookup goes through a manager restricted to the API key's owner, and only sandboxes
 * this API made (label "e2b/template") are E2B sandboxes: another owner's sandbox, or one made
 * with `agentjail create`, is "not found" (404 with {"code": 404}, which the SDK needs to raise
 * NotFoundError).
 *
 * Lifecycle: E2B's timeout is the sandbox's maximum lifetime, counted from its start
 * (endAt = startedAt + lifetime); setTimeout and connect move it through the supervisor, which
 * enforces it even while this daemon is down. At the end the supervisor stops the sandbox, or
 * with autoPause (lifetime_action "pause") freezes it. E2B forgets a killed or expired sandbox,
 * so a stopped E2B sandbox is gone here too: it is created with a retention of 1 ms (gc deletes
 * it) and removed at once when a request finds it. A paused sandbox does not expire (E2B's
 * rule): pausing clears its lifetime, connect sets a new one before resuming it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "e2b/internal.h"
#include "policy/policy.h"

/* ---- shared ---------------------------------------------------------------------------------- */

static int fail_mgr(struct aj_srv_req *r, const struct aj_err *e)
{
	char msg[sizeof e->msg + sizeof e->hint + 300];

	aj_err_format(e, msg, sizeof msg);
	if (e->hint[0])
		snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (hint: %s)", e->hint);
	if (e->errnum == ENOTSUP || e->errnum == EOPNOTSUPP)
		return e2b_fail(r, 501, "%s", msg);
	if (e->layer == AJ_LAYER_USAGE || e->layer == AJ_LAYER_POLICY)
		return e2b_fail(r, 400, "%s", msg);
	return e2b_fail(r, e->errnum == ENOENT ? 404 : e->errnum == EBUSY ? 409 : 500, "%s", msg);
}

static bool live(const struct aj_sandbox_rec *rec)
{
	return rec->state == AJ_ST_RUNNING || rec->state == AJ_ST_PAUSED;
}

static int not_found(struct aj_srv_req *r, bool paused)
{
	const char *id = e2b_of(r)->id;

	/* The SDK words connect's 404 itself; the bodies are E2B's. */
	if (paused)
		return e2b_fail(r, 404, "Paused sandbox %s not found", id);
	return e2b_fail(r, 404, "sandbox \"%s\" doesn't exist or you don't have access to it", id);
}

/* Worker: the owner's live E2B sandbox {id} in x->rec, else 404. A stopped one (expired,
 * killed, or its supervisor died) is removed on the way: E2B has no stopped sandboxes. */
static int find_live(struct aj_srv_req *r, struct aj_mgr *m, bool for_connect)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;

	if (!e2b_id_ok(x->id) || aj_mgr_get(m, x->id, &x->rec, &err) < 0)
		return not_found(r, for_connect);
	x->have_rec = true;
	if (e2b_is_ours(&x->rec) && live(&x->rec))
		return 0;
	if (e2b_is_ours(&x->rec) && x->rec.state == AJ_ST_STOPPED)
		aj_mgr_remove(m, x->rec.id, true, NULL);
	return not_found(r, for_connect);
}

/* The timeout of a body, in seconds: required or defaulted, within the daemon's maximum. */
static int timeout_s(struct aj_srv_req *r, bool required, int64_t *out)
{
	json_t *t = json_object_get(e2b_of(r)->msg, "timeout");
	int max = aj_srv_cfg(r->srv)->e2b_max_timeout_s;

	*out = E2B_DEFAULT_TIMEOUT_S;
	if (!t && !required)
		return 0;
	if (!json_is_integer(t) || json_integer_value(t) < 0)
		return e2b_fail(r, 400, "Error when parsing request: timeout must be a non-negative "
					"integer of seconds");
	if (json_integer_value(t) > max)
		return e2b_fail(r, 400, "Timeout cannot be greater than %d hours%s", max / 3600,
				max % 3600 ? " (and some minutes)" : "");
	*out = json_integer_value(t);
	return 0;
}

/* The lifetime that makes the sandbox end `secs` from now. 0 is E2B's "now": 1 ms here, as 0
 * would mean no lifetime at all. */
static int64_t lifetime_for(const struct aj_sandbox_rec *rec, int64_t secs)
{
	int64_t l = (int64_t)aj_now_realtime_ms() + secs * 1000 - rec->started_ms;

	return l > 0 ? l : 1;
}

/* ---- POST /v2/sandboxes ----------------------------------------------------------------------- */

struct create {
	struct aj_policy pol;
	struct aj_strv labels;
	struct aj_create_opts o;
};

static void create_free(void *p)
{
	struct create *c = p;

	aj_policy_free(&c->pol);
	aj_strv_free(&c->labels);
	free(c);
}

/* What E2B offers and a policy here has no counterpart for is refused, never dropped. */
static int unsupported(struct aj_srv_req *r, json_t *b)
{
	static const char *const fields[] = {"network", "iam", "mcp", "volumeMounts", NULL};
	json_t *ar = json_object_get(b, "autoResume");

	for (const char *const *f = fields; *f; f++)
		if (json_object_get(b, *f) && !json_is_null(json_object_get(b, *f)))
			return e2b_fail(r, 400, "%s is not supported by agentjail's E2B API: a "
						"template's policy sets what a sandbox may do "
						"(docs/e2b.md)",
					*f);
	if (json_is_true(json_object_get(ar, "enabled")))
		return e2b_fail(r, 400, "autoResume is not supported: resume a paused sandbox with "
					"Sandbox.connect");
	return 0;
}

static bool can_pause(const struct aj_srv *s)
{
	json_t *cg = json_object_get(aj_srv_features(s), "cgroup");
	const char *mode = json_string_value(json_object_get(cg, "mode"));
	json_t *ctl = json_object_get(cg, "controllers"), *c;
	const char *k;

	if (mode && !strcmp(mode, "v1"))
		return json_is_true(json_object_get(json_object_get(ctl, "freezer"), "usable"));
	json_object_foreach(ctl, k, c) if (json_is_true(json_object_get(c, "usable"))) return true;
	return false;
}

static int env_vars(struct aj_srv_req *r, struct create *c, json_t *env)
{
	const char *k;
	json_t *v;

	if (env && !json_is_object(env))
		return e2b_fail(r, 400, "envVars: expected an object of strings");
	json_object_foreach(env, k, v) {
		if (!aj_policy_env_name_ok(k) || !json_is_string(v))
			return e2b_fail(r, 400, "envVars.%s: expected a variable name and a string",
					k);
		aj_strv_setenv(&c->pol.env_set, k, json_string_value(v));
	}
	return 0;
}

static int create_policy(struct aj_srv_req *r, struct create *c, const char *tmpl)
{
	json_t *pol = e2b_template(e2b_of(r)->e2b, tmpl), *net;
	const char *preset = NULL;
	struct aj_err err;

	if (!pol)
		return e2b_fail(r, 400, "template '%s' is not available: agentjail sandboxes are not "
					"made from images, a template names a policy (\"base\" and "
					"those of --e2b-templates; docs/e2b.md)",
				tmpl);
	if (aj_policy_json_preset(pol, &preset, &err) < 0 ||
	    aj_policy_apply_preset(&c->pol, preset ? preset : "workspace-write", &err) < 0 ||
	    aj_policy_apply_json(&c->pol, pol, &err) < 0)
		return fail_mgr(r, &err);
	net = json_object_get(e2b_of(r)->msg, "allow_internet_access");
	if (json_is_false(net))
		c->pol.net_mode = AJ_NET_NONE;
	else if (json_is_true(net) && c->pol.net_mode == AJ_NET_NONE)
		return e2b_fail(r, 400, "allow_internet_access: template '%s' gives its sandboxes no "
					"network; use a template whose policy has one",
				tmpl);
	return env_vars(r, c, json_object_get(e2b_of(r)->msg, "envVars"));
}

static int create_prepare(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	struct create *c = calloc(1, sizeof *c);
	const char *tmpl = json_string_value(json_object_get(x->msg, "templateID"));
	json_t *ap = json_object_get(x->msg, "autoPause");
	int64_t secs;
	char label[200];

	if (!c)
		return e2b_fail(r, 500, "out of memory");
	aj_policy_init(&c->pol);
	x->x = c;
	x->x_free = create_free;
	if (!tmpl)
		return e2b_fail(r, 400, "Error when parsing request: templateID is required");
	if (ap && !json_is_boolean(ap))
		return e2b_fail(r, 400, "autoPause: expected true or false");
	if (unsupported(r, x->msg) < 0 || timeout_s(r, false, &secs) < 0 ||
	    create_policy(r, c, tmpl) < 0 ||
	    e2b_metadata_labels(r, json_object_get(x->msg, "metadata"), &c->labels) < 0)
		return -1;
	if (json_is_true(ap) && !can_pause(r->srv))
		return e2b_fail(r, 400, "lifecycle.onTimeout 'pause' needs the cgroup freezer, which "
					"this host does not give agentjail (rootless without a "
					"delegated cgroup?); use 'kill'");
	snprintf(label, sizeof label, "%s=%s", E2B_LABEL_TEMPLATE, tmpl);
	aj_strv_push(&c->labels, label);
	c->o.labels = &c->labels;
	c->o.policy = &c->pol;
	c->o.start = true;
	c->o.max_lifetime_ms = secs ? secs * 1000 : 1;
	c->o.lifetime_action = json_is_true(ap) ? "pause" : "stop";
	c->o.retention_ms = 1;
	return 0;
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct create *c = e2b_of(r)->x;
	struct aj_sandbox_rec rec;
	struct aj_err err;
	uint64_t mem = c->pol.limits.memory;

	if (aj_srv_quota_reserve(r, m, 1, mem) < 0)
		return;
	if (aj_mgr_create(m, &c->o, &rec, &err) < 0) {
		fail_mgr(r, &err);
	} else {
		aj_srv_ok(r, 201, e2b_sandbox_json(e2b_of(r)->e2b, &rec));
		aj_sandbox_rec_free(&rec);
	}
	aj_srv_quota_release(r, 1, mem);
}

/* ---- GET /sandboxes/{id}, DELETE, timeout, pause --------------------------------------------- */

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	if (find_live(r, m, false) == 0)
		aj_srv_ok(r, 200, e2b_detail_json(e2b_of(r)->e2b, &e2b_of(r)->rec, true));
}

static void kill_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (find_live(r, m, false) < 0)
		return;
	if (aj_mgr_remove(m, e2b_of(r)->rec.id, true, &err) < 0)
		fail_mgr(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

static void timeout_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;
	int64_t secs;

	if (timeout_s(r, true, &secs) < 0 || find_live(r, m, false) < 0)
		return;
	/* E2B's API answers 404 for a paused sandbox here: its timeout starts anew on connect. */
	if (x->rec.state == AJ_ST_PAUSED)
		e2b_fail(r, 404, "sandbox \"%s\" is paused", x->id);
	else if (aj_mgr_set_lifetime(m, x->rec.id, lifetime_for(&x->rec, secs), &err) < 0)
		fail_mgr(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

/* Paused first, the lifetime cleared after: a daemon killed between the two leaves a paused
 * sandbox that still expires (bounded), never a running one without a lifetime. */
static void pause_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;

	if (find_live(r, m, false) < 0)
		return;
	if (x->rec.state == AJ_ST_PAUSED) {
		e2b_fail(r, 409, "Error pausing sandbox - sandbox '%s' is already paused", x->id);
		return;
	}
	if (aj_mgr_pause(m, x->rec.id, true, &err) < 0) {
		if (err.layer == AJ_LAYER_CGROUP && err.errnum == ENOTSUP)
			e2b_fail(r, 501, "pausing is not supported on this host: it needs the cgroup "
					 "freezer (rootless agentjail without a delegated cgroup has "
					 "none)");
		else
			fail_mgr(r, &err);
		return;
	}
	if (aj_mgr_set_lifetime(m, x->rec.id, 0, &err) < 0)
		fail_mgr(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

/* ---- POST /v2/sandboxes/{id}/connect, /sandboxes/{id}/resume ---------------------------------- */

static void reply_current(struct aj_srv_req *r, struct aj_mgr *m, int status)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;

	if (aj_mgr_get(m, e2b_of(r)->rec.id, &rec, &err) < 0) {
		fail_mgr(r, &err);
		return;
	}
	aj_srv_ok(r, status, e2b_sandbox_json(e2b_of(r)->e2b, &rec));
	aj_sandbox_rec_free(&rec);
}

/* A running sandbox's end only moves later; a paused one gets its lifetime before it runs. */
static void connect_sandbox(struct aj_srv_req *r, struct aj_mgr *m, bool resume_only)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;
	int64_t secs, want;
	bool paused;

	if (timeout_s(r, false, &secs) < 0 || find_live(r, m, true) < 0)
		return;
	paused = x->rec.state == AJ_ST_PAUSED;
	want = lifetime_for(&x->rec, secs);
	if (!paused && resume_only) {
		e2b_fail(r, 409, "Sandbox %s is already running", x->id);
		return;
	}
	if ((paused || (x->rec.max_lifetime_ms && want > x->rec.max_lifetime_ms)) &&
	    aj_mgr_set_lifetime(m, x->rec.id, want, &err) < 0) {
		fail_mgr(r, &err);
		return;
	}
	if (paused && aj_mgr_pause(m, x->rec.id, false, &err) < 0) {
		fail_mgr(r, &err);
		return;
	}
	reply_current(r, m, paused ? 201 : 200);
}

static void connect_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	connect_sandbox(r, m, false);
}

static void resume_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	connect_sandbox(r, m, true);
}

/* ---- what this API does not offer ------------------------------------------------------------ */

static int not_implemented(struct aj_srv_req *r)
{
	/* 501, never 404: the SDK reads a 404's {"code": 404} as "sandbox not found". */
	return e2b_fail(r, 501, "not implemented by agentjail's E2B API (docs/e2b.md)");
}

static int health_prepare(struct aj_srv_req *r)
{
	aj_srv_ok(r, 200, NULL);
	return 0;
}

#define NOT_IMPL(m, p) E2B_ROUTE(m, p, E2B_API, not_implemented, NULL, NULL)

const struct aj_srv_route e2b_control_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/health", E2B_API, health_prepare, NULL, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/v2/sandboxes", E2B_API, create_prepare, create_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes", E2B_API, create_prepare, create_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/v2/sandboxes", E2B_API, NULL, e2b_list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/sandboxes", E2B_API, NULL, e2b_list_v1_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/sandboxes/{id}", E2B_API, NULL, get_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/sandboxes/{id}", E2B_API, NULL, kill_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/timeout", E2B_API, NULL, timeout_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/pause", E2B_API, NULL, pause_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/v2/sandboxes/{id}/connect", E2B_API, NULL, connect_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/connect", E2B_API, NULL, connect_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/resume", E2B_API, NULL, resume_work, NULL),
	NOT_IMPL(EVHTTP_REQ_GET, "/sandboxes/{id}/metrics"),
	NOT_IMPL(EVHTTP_REQ_GET, "/sandboxes/metrics"),
	NOT_IMPL(EVHTTP_REQ_GET, "/sandboxes/{id}/logs"),
	NOT_IMPL(EVHTTP_REQ_GET, "/v2/sandboxes/{id}/logs"),
	NOT_IMPL(EVHTTP_REQ_POST, "/sandboxes/{id}/refreshes"),
	NOT_IMPL(EVHTTP_REQ_PUT, "/sandboxes/{id}/network"),
	NOT_IMPL(EVHTTP_REQ_POST, "/sandboxes/{id}/snapshots"),
	NOT_IMPL(EVHTTP_REQ_POST, "/sandboxes/{id}/fork"),
	NOT_IMPL(EVHTTP_REQ_GET, "/snapshots"),
	NOT_IMPL(EVHTTP_REQ_GET, "/templates"),
	NOT_IMPL(EVHTTP_REQ_POST, "/templates"),
	NOT_IMPL(EVHTTP_REQ_POST, "/v2/templates"),
	NOT_IMPL(EVHTTP_REQ_POST, "/v3/templates"),
	NOT_IMPL(EVHTTP_REQ_GET, "/templates/{id}"),
	NOT_IMPL(EVHTTP_REQ_DELETE, "/templates/{id}"),
	NOT_IMPL(EVHTTP_REQ_GET, "/volumes"),
	NOT_IMPL(EVHTTP_REQ_GET, "/secrets"),
	E2B_ROUTES_END,
};
