/* Sandboxes: create, list, get, delete, start, stop, pause, resume.
 *
 * Every lookup goes through a manager restricted to the request's owner, so another owner's
 * sandbox is "not found" (404) on every route, never "forbidden". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "server/internal.h"

/* ---- create ------------------------------------------------------------------------------ */

struct create_data {
	struct aj_policy pol;
	struct aj_strv labels;
	struct aj_create_opts o;
};

static void create_data_free(void *p)
{
	struct create_data *d = p;

	aj_policy_free(&d->pol);
	aj_strv_free(&d->labels);
	free(d);
}

static const struct aj_jf_field create_fields[] = {
	AJ_SRV_STRING("name", 0),
	AJ_SRV_OBJECT("policy", 0),
	AJ_SRV_STRING("preset", 0),
	AJ_SRV_LABELS("labels", 0),
	AJ_SRV_STRING("from_snapshot", 0),
	AJ_SRV_STRING("image", 0),
	AJ_SRV_STRING("user", 0),
	{.name = "public_ports", .type = AJ_JF_ANY, .expect = "an array of TCP port numbers"},
	AJ_SRV_BOOL("start", 0),
	AJ_SRV_DURATION("idle_timeout", 0),
	AJ_SRV_STRING("idle_action", 0),
	AJ_SRV_DURATION("max_lifetime", 0),
	AJ_SRV_DURATION("retention", 0),
	AJ_SRV_FIELDS_END,
};

static bool nonempty_array(json_t *v)
{
	return json_is_array(v) && json_array_size(v) > 0;
}

/* Credentials from the daemon's environment or files: the owner's own secrets of the store
 * (from_secret) are all a token owner may name. */
static bool host_credentials(json_t *creds)
{
	const char *k;
	json_t *c;

	if (!creds)
		return false;
	if (!json_is_object(creds))
		return true;
	json_object_foreach(creds, k, c) {
		if (!json_is_object(c) || json_object_get(c, "from_env") ||
		    json_object_get(c, "from_file"))
			return true;
	}
	return false;
}

/* A filesystem.volumes entry that names a host directory (a source with a '/'). */
static bool host_volumes(json_t *volumes)
{
	size_t i;
	json_t *v;

	json_array_foreach(volumes, i, v) {
		const char *s = json_string_value(v);
		const char *colon = s ? strchr(s, ':') : NULL;
		if (!s || !colon || memchr(s, '/', (size_t)(colon - s)))
			return true;
	}
	return false;
}

/* A token owner shares the host with others: it may narrow its sandbox's boundary, not widen
 * it past what the daemon's defaults allow. These fields would let it see or change host
 * files, take the daemon's environment, reach the host's network, or relax the kernel layers
 * (the local owner, like the CLI, may use them all). */
static int check_remote_policy(struct aj_srv_req *r, json_t *pol)
{
	json_t *fs = json_object_get(pol, "filesystem");
	json_t *network = json_object_get(pol, "network");
	const char *net = json_string_value(json_object_get(network, "mode"));
	const char *tier = json_string_value(json_object_get(pol, "tier"));
	const char *field = NULL;

	if (nonempty_array(json_object_get(fs, "read_only")))
		field = "policy.filesystem.read_only";
	else if (nonempty_array(json_object_get(fs, "read_write")))
		field = "policy.filesystem.read_write";
	else if (host_volumes(json_object_get(fs, "volumes")))
		field = "policy.filesystem.volumes"; /* a host directory; volumes by name are theirs */
	else if (nonempty_array(json_object_get(fs, "mask")))
		field = "policy.filesystem.mask"; /* checked against host paths: a probe of the host */
	else if (nonempty_array(json_object_get(json_object_get(pol, "environment"), "allow")))
		field = "policy.environment.allow";
	else if (net && !strcmp(net, "host"))
		field = "policy.network.mode";
	else if (nonempty_array(json_object_get(json_object_get(pol, "syscalls"), "allow")))
		field = "policy.syscalls.allow";
	else if (nonempty_array(json_object_get(pol, "allow_degraded")))
		field = "policy.allow_degraded";
	else if (nonempty_array(json_object_get(network, "allow_private")))
		field = "policy.network.allow_private"; /* the daemon's LAN and metadata service */
	else if (nonempty_array(json_object_get(network, "publish")))
		field = "policy.network.publish"; /* ports of the daemon's host */
	else if (nonempty_array(json_object_get(network, "host_ports")))
		field = "policy.network.host_ports"; /* services on the daemon's loopback */
	else if (host_credentials(json_object_get(pol, "credentials")))
		field = "policy.credentials"; /* secrets are read as the daemon's user */
	else if (tier && strcmp(tier, "namespaces"))
		field = "policy.tier";
	if (!field)
		return 0;
	return aj_srv_fail(r, 403, "forbidden", field,
			   "%s: token owners cannot widen the sandbox boundary (host paths, the "
			   "daemon's environment, files and secrets other than their own of "
			   "/v1/secrets, host or private network, host ports, relaxed layers)",
			   field);
}

/* A token owner may lower the limits that protect what the host shares (memory, its pid space,
 * the supervisor's descriptors) but not lift them: no "none", nothing above the defaults for
 * tasks and proxied connections. Memory above the default is what --max-memory bounds. */
static int check_remote_limits(struct aj_srv_req *r, const struct aj_policy *p)
{
	const char *field =
		!p->limits.memory ? "policy.limits.memory"
		: !p->limits.pids || p->limits.pids > AJ_DEFAULT_PIDS ? "policy.limits.pids"
		: !p->net_max_connections || p->net_max_connections > AJ_DEFAULT_MAX_CONNECTIONS
			? "policy.network.max_connections"
			: NULL;

	if (!field)
		return 0;
	return aj_srv_fail(r, 403, "forbidden", field,
			   "%s: token owners cannot lift this limit (none, or above the default: "
			   "pids %d, max_connections %d)",
			   field, AJ_DEFAULT_PIDS, AJ_DEFAULT_MAX_CONNECTIONS);
}

/* "image" and "user": policy.rootfs.image and policy.process.user by shorter names, checked
 * the same way (a difference between the two spellings is refused). */
static int image_and_user(struct aj_srv_req *r, struct create_data *d)
{
	static const struct {
		const char *field, *section, *key;
	} rows[] = {{"image", "rootfs", "image"}, {"user", "process", "user"}};
	struct aj_err err;

	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *v = aj_srv_str(r, rows[i].field);
		char *const *cur = i == 0 ? &d->pol.rootfs_image : &d->pol.process_user;
		_cleanup_json_ json_t *doc = NULL;
		if (!v)
			continue;
		if (*cur && strcmp(*cur, v))
			return aj_srv_fail(r, 400, "invalid_value", rows[i].field,
					   "%s: \"%s\" differs from policy.%s.%s \"%s\"",
					   rows[i].field, v, rows[i].section, rows[i].key, *cur);
		doc = json_pack("{s:{s:s}}", rows[i].section, rows[i].key, v);
		if (aj_policy_apply_json(&d->pol, doc, &err) < 0)
			return aj_srv_fail(r, 400, "invalid_value", rows[i].field, "%s: %s",
					   rows[i].field, err.msg);
	}
	return 0;
}

/* "public_ports": policy.network.public_ports, the ports preview URLs serve to anyone. */
static int public_ports(struct aj_srv_req *r, struct create_data *d)
{
	json_t *v = json_object_get(r->body, "public_ports");
	_cleanup_json_ json_t *doc = NULL;
	struct aj_err err;

	if (!v)
		return 0;
	doc = json_pack("{s:{s:O}}", "network", "public_ports", v);
	if (aj_policy_apply_json(&d->pol, doc, &err) < 0)
		return aj_srv_fail(r, 400, "invalid_value", "public_ports", "public_ports: %s",
				   err.msg);
	return 0;
}

static int build_policy(struct aj_srv_req *r, struct create_data *d)
{
	json_t *pol = json_object_get(r->body, "policy");
	const char *preset = aj_srv_str(r, "preset"), *ppreset = NULL;
	struct aj_err err;

	if (pol && r->remote && check_remote_policy(r, pol) < 0)
		return -1;
	if (pol && aj_policy_json_preset(pol, &ppreset, &err) < 0)
		return aj_srv_fail_err(r, &err, NULL);
	if (preset && ppreset && strcmp(preset, ppreset))
		return aj_srv_fail(r, 400, "invalid_value", "preset",
				   "preset: \"%s\" differs from policy.preset \"%s\"", preset,
				   ppreset);
	if (aj_policy_apply_preset(&d->pol, preset ? preset : ppreset ? ppreset : "workspace-write",
				   &err) < 0)
		return aj_srv_fail(r, 400, "invalid_value", preset ? "preset" : "policy.preset",
				   "%s", err.msg);
	if (pol && aj_policy_apply_json(&d->pol, pol, &err) < 0)
		return aj_srv_fail_err(r, &err, NULL);
	if (image_and_user(r, d) < 0 || public_ports(r, d) < 0)
		return -1;
	return r->remote ? check_remote_limits(r, &d->pol) : 0;
}

static int create_options(struct aj_srv_req *r, struct create_data *d)
{
	const char *name = aj_srv_str(r, "name"), *action = aj_srv_str(r, "idle_action"), *k;
	json_t *v;

	if (name && !aj_mgr_name_ok(name))
		return aj_srv_fail(r, 400, "invalid_value", "name",
				   "name: 1-63 of A-Za-z0-9_.- not starting with - or ., and not "
				   "16 hex digits (an id)");
	if (action && strcmp(action, "pause") && strcmp(action, "stop"))
		return aj_srv_fail(r, 400, "invalid_value", "idle_action",
				   "idle_action: expected \"pause\" or \"stop\"");
	if (aj_srv_duration_ms(r, "idle_timeout", &d->o.idle_timeout_ms) < 0 ||
	    aj_srv_duration_ms(r, "max_lifetime", &d->o.max_lifetime_ms) < 0 ||
	    aj_srv_duration_ms(r, "retention", &d->o.retention_ms) < 0)
		return -1;
	json_object_foreach(json_object_get(r->body, "labels"), k, v) {
		char kv[320];
		snprintf(kv, sizeof kv, "%s=%s", k, json_string_value(v));
		aj_strv_push(&d->labels, kv);
	}
	d->o.name = name;
	d->o.idle_action = action;
	d->o.from_snapshot = aj_srv_str(r, "from_snapshot");
	d->o.start = !json_is_false(json_object_get(r->body, "start"));
	d->o.labels = &d->labels;
	d->o.policy = &d->pol;
	return 0;
}

static int create_prepare(struct aj_srv_req *r)
{
	struct create_data *d = aj_xcalloc(1, sizeof *d);

	aj_policy_init(&d->pol);
	r->data = d;
	r->data_free = create_data_free;
	if (!r->body)
		r->body = json_object(); /* every field is optional */
	if (aj_srv_check_fields(r, create_fields) < 0 || create_options(r, d) < 0)
		return -1;
	return build_policy(r, d);
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct create_data *d = r->data;
	struct aj_sandbox_rec rec;
	struct aj_err err;
	struct aj_srv_claim claim;

	aj_mgr_resolve_disk(m, &d->pol);
	claim = aj_srv_claim_sandboxes(1, d->pol.limits.memory, d->pol.limits.disk);
	if (aj_srv_quota_claim(r, m, &claim) < 0)
		return;
	if (aj_srv_warm_create(r->srv, m, &d->o, &rec, &err) < 0) {
		if (err.errnum == ENOENT && d->o.from_snapshot && strstr(err.msg, "no snapshot"))
			aj_srv_fail(r, 400, "invalid_value", "from_snapshot", "%s", err.msg);
		else if (err.errnum == ENOENT && d->pol.rootfs_image && strstr(err.msg, "no image"))
			aj_srv_fail(r, 400, "invalid_value", "image", "%s", err.msg);
		else
			aj_srv_fail_err(r, &err, err.errnum == EEXIST ? "name" : NULL);
	} else {
		snprintf(r->location, sizeof r->location, "/v1/sandboxes/%s", rec.name);
		aj_srv_ok(r, 201, aj_srv_sandbox_json(&rec));
		aj_sandbox_rec_free(&rec);
	}
	aj_srv_quota_unclaim(r, &claim);
}

/* ---- list, get, delete --------------------------------------------------------------------- */

static void labels_free(void *p)
{
	aj_strv_free(p);
	free(p);
}

static int list_prepare(struct aj_srv_req *r)
{
	struct aj_strv *labels = aj_xcalloc(1, sizeof *labels);
	struct evkeyval *kv;

	r->data = labels;
	r->data_free = labels_free;
	TAILQ_FOREACH(kv, &r->query, next) {
		if (!strchr(kv->value, '=') || kv->value[0] == '=')
			return aj_srv_fail(r, 400, "invalid_value", "label",
					   "label: expected KEY=VALUE, got \"%s\"", kv->value);
		aj_strv_push(labels, kv->value);
	}
	return 0;
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_sandbox_rec *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_mgr_list(m, r->data, &v, &n, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, aj_srv_sandbox_json(&v[i]));
	aj_sandbox_recs_free(v, n);
	aj_srv_ok(r, 200, json_pack("{s:o}", "sandboxes", a));
}

/* The sandbox as it is now: the answer of get and of every action. */
static void reply_sandbox(struct aj_srv_req *r, struct aj_mgr *m, const char *ref)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;

	if (aj_mgr_get(m, ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, aj_srv_sandbox_json(&rec));
	aj_sandbox_rec_free(&rec);
}

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	reply_sandbox(r, m, r->ref);
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_mgr_remove(m, r->ref, aj_srv_forced(r), &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		aj_srv_ok(r, 204, NULL);
}

/* ---- PATCH: a sandbox changed while it runs (docs/api.md, docs/sandboxes.md) ------------ */

struct update_data {
	struct aj_update u;
	struct aj_strv allow, deny;
};

static void update_data_free(void *p)
{
	struct update_data *d = p;

	aj_strv_free(&d->allow);
	aj_strv_free(&d->deny);
	free(d);
}

static const struct aj_jf_field update_fields[] = {
	AJ_SRV_OBJECT("network", 0),
	AJ_SRV_OBJECT("limits", 0),
	AJ_SRV_DURATION("idle_timeout", 0),
	AJ_SRV_DURATION("max_lifetime", 0),
	AJ_SRV_FIELDS_END,
};

/* Only what a sandbox can change: the members named, each read as a policy file reads it
 * (sizes, "none", CPUs as numbers), into a scratch policy. */
static int update_policy_part(struct aj_srv_req *r, struct update_data *d)
{
	static const char *const net_ok[] = {"mode", "allow", "deny", NULL};
	static const char *const lim_ok[] = {"memory", "pids", "cpus", NULL};
	json_t *net = json_object_get(r->body, "network"), *lim = json_object_get(r->body, "limits");
	_cleanup_policy_ struct aj_policy scratch;
	_cleanup_json_ json_t *doc = json_object();
	struct aj_err err;
	const char *k;
	json_t *v;

	aj_policy_init(&scratch);
	json_object_foreach(net, k, v) {
		size_t i = 0;
		while (net_ok[i] && strcmp(net_ok[i], k))
			i++;
		if (!net_ok[i])
			return aj_srv_fail(r, 400, "invalid_value", "network",
					   "network.%s: not changed on a sandbox (mode, allow and "
					   "deny are)", k);
	}
	json_object_foreach(lim, k, v) {
		size_t i = 0;
		while (lim_ok[i] && strcmp(lim_ok[i], k))
			i++;
		if (!lim_ok[i])
			return aj_srv_fail(r, 400, "invalid_value", "limits",
					   "limits.%s: not changed on a sandbox (memory, pids and "
					   "cpus are)", k);
	}
	if (net)
		json_object_set(doc, "network", net);
	if (lim)
		json_object_set(doc, "limits", lim);
	if (aj_policy_apply_json(&scratch, doc, &err) < 0)
		return aj_srv_fail_err(r, &err, NULL);
	if (json_object_get(net, "mode")) {
		if (scratch.net_mode == AJ_NET_HOST)
			return aj_srv_fail(r, 400, "invalid_value", "network.mode",
					   "network.mode: none or proxy (host is given only at "
					   "create)");
		d->u.net_mode = (int)scratch.net_mode;
	}
	if (json_object_get(net, "allow")) {
		aj_strv_copy(&d->allow, &scratch.net_allow);
		d->u.allow = &d->allow;
	}
	if (json_object_get(net, "deny")) {
		aj_strv_copy(&d->deny, &scratch.net_deny);
		d->u.deny = &d->deny;
	}
	d->u.set_memory = json_object_get(lim, "memory") != NULL;
	d->u.memory = scratch.limits.memory;
	d->u.set_pids = json_object_get(lim, "pids") != NULL;
	d->u.pids = scratch.limits.pids;
	d->u.set_cpus = json_object_get(lim, "cpus") != NULL;
	d->u.cpu_milli = scratch.limits.cpu_milli;
	if (r->remote && ((d->u.set_memory && !d->u.memory) ||
			  (d->u.set_pids && (!d->u.pids || d->u.pids > AJ_DEFAULT_PIDS))))
		return aj_srv_fail(r, 403, "forbidden",
				   d->u.set_memory && !d->u.memory ? "limits.memory" : "limits.pids",
				   "%s: token owners cannot lift this limit (none, or above the "
				   "default: pids %d)",
				   d->u.set_memory && !d->u.memory ? "limits.memory" : "limits.pids",
				   AJ_DEFAULT_PIDS);
	return 0;
}

static int update_prepare(struct aj_srv_req *r)
{
	struct update_data *d = aj_xcalloc(1, sizeof *d);
	int64_t ms;

	d->u = (struct aj_update)AJ_UPDATE_INIT;
	d->allow = d->deny = (struct aj_strv)AJ_STRV_INIT;
	r->data = d;
	r->data_free = update_data_free;
	if (!r->body)
		return aj_srv_fail(r, 400, "invalid_value", NULL,
				   "the body: {network, limits, idle_timeout, max_lifetime}");
	if (aj_srv_check_fields(r, update_fields) < 0 || update_policy_part(r, d) < 0)
		return -1;
	if (json_object_get(r->body, "idle_timeout")) {
		if (aj_srv_duration_ms(r, "idle_timeout", &ms) < 0)
			return -1;
		d->u.idle_timeout_ms = ms;
	}
	if (json_object_get(r->body, "max_lifetime")) {
		if (aj_srv_duration_ms(r, "max_lifetime", &ms) < 0)
			return -1;
		d->u.max_lifetime_ms = ms;
	}
	return 0;
}

static void update_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct update_data *d = r->data;
	struct aj_sandbox_rec rec;
	struct aj_err err;
	struct aj_srv_claim extra = {0};
	int rc;

	/* A higher memory limit is more of the owner's memory quota (--max-memory). */
	if (d->u.set_memory) {
		if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
			aj_srv_fail_err(r, &err, NULL);
			return;
		}
		uint64_t old = aj_srv_policy_limits(rec.policy).memory;
		aj_sandbox_rec_free(&rec);
		extra.memory = d->u.memory > old ? d->u.memory - old : 0;
		if (aj_srv_quota_claim(r, m, &extra) < 0)
			return;
	}
	rc = aj_mgr_update(m, r->ref, &d->u, &rec, &err);
	aj_srv_quota_unclaim(r, &extra);
	if (rc < 0) {
		/* What the running sandbox cannot take (its mode, memory below its use, a
		 * controller it lacks): its state's answer, not the host's. */
		if (!err.cls && (err.errnum == EBUSY || err.errnum == ENOTSUP) &&
		    (err.layer == AJ_LAYER_CGROUP || err.layer == AJ_LAYER_NET))
			aj_srv_fail(r, 409, "wrong_state",
				    err.layer == AJ_LAYER_NET ? "network" : "limits", "%s", err.msg);
		else
			aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, aj_srv_sandbox_json(&rec));
	aj_sandbox_rec_free(&rec);
}

/* ---- GET /v1/sandboxes/{ref}/metrics --------------------------------------------------- */

static const char *const metrics_query[] = {"start", "end", NULL};

static void metrics_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	int64_t start = 0, end = 0;
	json_t *reply = NULL;
	struct aj_err err;

	if (aj_srv_query_int(r, "start", 0, INT64_MAX / 1000 - 1, &start) < 0 ||
	    aj_srv_query_int(r, "end", 0, INT64_MAX / 1000 - 1, &end) < 0)
		return;
	/* end: its whole second */
	if (aj_mgr_metrics(m, r->ref, start * 1000, end ? end * 1000 + 999 : 0, &reply, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, json_pack("{s:O, s:O, s:O}", "now", json_object_get(reply, "now"),
				    "samples", json_object_get(reply, "samples"), "every_s",
				    json_object_get(reply, "every_s")));
	json_decref(reply);
}

/* ---- start, stop, pause, resume -------------------------------------------------------- */

static const struct aj_jf_field no_fields[] = {AJ_SRV_FIELDS_END};

static int action_prepare(struct aj_srv_req *r)
{
	return r->body ? aj_srv_check_fields(r, no_fields) : 0;
}

/* The action by the last segment of the path. */
static void action_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *verb = strrchr(r->route->pattern, '/') + 1;
	struct aj_sandbox_rec rec;
	struct aj_err err;
	int rc;

	/* By id from here on: the name could be taken by a new sandbox meanwhile. */
	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	if (!strcmp(verb, "start"))
		rc = aj_mgr_start(m, rec.id, &err);
	else if (!strcmp(verb, "stop"))
		rc = aj_mgr_stop(m, rec.id, &err);
	else
		rc = aj_mgr_pause(m, rec.id, !strcmp(verb, "pause"), &err);
	if (rc < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		reply_sandbox(r, m, rec.id);
	aj_sandbox_rec_free(&rec);
}

static const char *const list_query[] = {"label", NULL};
static const char *const delete_query[] = {"force", NULL};

#define ACTION(verb)                                                                            \
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/" verb, AJ_SRV_BODY_JSON, NULL,       \
		     action_prepare, action_work, NULL)

const struct aj_srv_route aj_api_sandbox_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes", AJ_SRV_BODY_JSON, NULL, create_prepare, create_work,
	 NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes", AJ_SRV_BODY_NONE, list_query, list_prepare, list_work,
	 NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}", AJ_SRV_BODY_NONE, NULL, NULL, get_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/sandboxes/{ref}", AJ_SRV_BODY_NONE, delete_query,
		     aj_srv_force_prepare, delete_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_PATCH, "/v1/sandboxes/{ref}", AJ_SRV_BODY_JSON, NULL, update_prepare,
		     update_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/metrics", AJ_SRV_BODY_NONE, metrics_query,
		     NULL, metrics_work, NULL),
	ACTION("start"),
	ACTION("stop"),
	ACTION("pause"),
	ACTION("resume"),
	AJ_SRV_ROUTES_END,
};
