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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "e2b/internal.h"
#include "policy/policy.h"

/* ---- shared ---------------------------------------------------------------------------------- */

struct timeout_doc {
	int64_t s;
};

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

/* (internal.h) The owner's live E2B sandbox {id} in x->rec, else 404. A stopped one (expired,
 * killed, or its supervisor died) is removed on the way: E2B has no stopped sandboxes. */
int e2b_find_live(struct aj_srv_req *r, struct aj_mgr *m, bool for_connect)
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

/* A body's timeout in seconds, within the daemon's maximum; dst: an int64_t. */
static int read_timeout(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	const struct aj_srv_req *r = o->arg;
	int max = aj_srv_cfg(r->srv)->e2b_max_timeout_s;

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "Error when parsing request: timeout must be a non-negative "
				  "integer of seconds");
	if (json_integer_value(v) > max)
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "Timeout cannot be greater than %d hours%s", max / 3600,
				  max % 3600 ? " (and some minutes)" : "");
	*(int64_t *)dst = json_integer_value(v);
	return 0;
}

#define TIMEOUT_ROW(fl, base, m)                                                               \
	{.name = "timeout", .type = AJ_JF_ANY, .flags = (fl), .off = offsetof(base, m),          \
	 .parse = read_timeout}

static const struct aj_jf_field timeout_required[] = {
	TIMEOUT_ROW(AJ_JF_SEES_ABSENT, struct timeout_doc, s),
	{.name = NULL},
};
static const struct aj_jf_field timeout_optional[] = {
	TIMEOUT_ROW(0, struct timeout_doc, s),
	{.name = NULL},
};

/* The timeout of a body, in seconds: required or defaulted. */
static int timeout_s(struct aj_srv_req *r, bool required, int64_t *out)
{
	struct timeout_doc t = {E2B_DEFAULT_TIMEOUT_S};

	if (e2b_read_msg(r, required ? timeout_required : timeout_optional, &t) < 0)
		return -1;
	*out = t.s;
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
	/* The body (borrowed from the request's JSON). */
	const char *template_id;
	bool auto_pause;
	int64_t timeout_s;
	json_t *internet; /* allow_internet_access: true, false, or anything else (no say) */
	json_t *network;  /* allowPublicTraffic, allowOut, denyOut, rules; the rest is refused */
	json_t *env_vars; /* checked: variable names and strings */
	json_t *volume_mounts; /* [{name, path}]: the owner's volumes (volumes.c) */
};

static void create_free(void *p)
{
	struct create *c = p;

	aj_policy_free(&c->pol);
	aj_strv_free(&c->labels);
	free(c);
}

static int read_template(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_string(v))
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "Error when parsing request: templateID is required");
	*(const char **)dst = json_string_value(v);
	return 0;
}

/* What E2B offers and a policy here has no counterpart for is refused, never dropped. */
static int refuse_unsupported(const struct aj_jf_field *f, const char *path, json_t *v,
			      void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
			  "%s is not supported by agentjail's E2B API: a template's policy sets what "
			  "a sandbox may do (docs/e2b.md)",
			  path);
}

static int refuse_auto_resume(const struct aj_jf_field *f, const char *path, json_t *v,
			      void *dst, const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_true(v))
		return 0;
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "autoResume is not supported: resume a paused "
			  "sandbox with Sandbox.connect");
}

/* autoResume.enabled: only true is refused; anything else is no auto-resume. */
static const struct aj_jf_field auto_resume_rows[] = {
	{.name = "enabled", .type = AJ_JF_ANY, .parse = refuse_auto_resume},
	{.name = NULL},
};

static int read_auto_resume(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_object(v))
		return 0;
	return aj_jf_read(auto_resume_rows, v, NULL,
			  &(struct aj_jf_opts){o->layer, o->flags, "autoResume", o->arg}, e);
}

static int keep_json(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	*(json_t **)dst = v;
	return 0;
}

/* network: allowPublicTraffic (true, E2B's default: every port's preview URL serves anyone;
 * false: requests need the trafficAccessToken); allowOut, denyOut and rules, within what the
 * template allows (network.c). */
static int read_network(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	const char *k;
	json_t *m;

	if (!json_is_object(v))
		return aj_jf_fail(e, AJ_JF_TYPE, f, path, v, "%s: expected an object", path);
	json_object_foreach(v, k, m) {
		if (!strcmp(k, "allowOut") || !strcmp(k, "denyOut") || !strcmp(k, "rules"))
			continue; /* read by create_policy */
		if (strcmp(k, "allowPublicTraffic"))
			return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
					  "%s.%s is not supported by agentjail's E2B API: a "
					  "template's policy sets what a sandbox may reach "
					  "(docs/e2b.md)",
					  path, k);
		if (!json_is_boolean(m) && !json_is_null(m))
			return aj_jf_fail(e, AJ_JF_TYPE, f, path, v,
					  "%s.allowPublicTraffic: expected true or false", path);
	}
	*(json_t **)dst = v;
	return 0;
}

static int check_env_name(const char *path, const char *name, struct aj_err *err)
{
	if (aj_policy_env_name_ok(name))
		return 0;
	return aj_err_set(err, AJ_LAYER_API, EINVAL, "%s: expected a variable name and a string",
			  path);
}

static const struct aj_jf_field env_value = {.name = "", .type = AJ_JF_STRING,
					     .refusal = "expected a variable name and a string"};

#define C(m) offsetof(struct create, m)
#define UNSUPPORTED(n)                                                                         \
	{.name = (n), .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = refuse_unsupported}
/* In the order the body has always been checked. */
static const struct aj_jf_field create_fields[] = {
	{.name = "templateID", .type = AJ_JF_ANY, .flags = AJ_JF_SEES_ABSENT, .off = C(template_id),
	 .parse = read_template},
	{.name = "autoPause", .type = AJ_JF_BOOL, .off = C(auto_pause),
	 .refusal = "expected true or false"},
	{.name = "network", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .off = C(network),
	 .parse = read_network},
	UNSUPPORTED("iam"),
	UNSUPPORTED("mcp"),
	{.name = "volumeMounts", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .off = C(volume_mounts),
	 .parse = keep_json},
	{.name = "autoResume", .type = AJ_JF_ANY, .parse = read_auto_resume},
	TIMEOUT_ROW(0, struct create, timeout_s),
	{.name = "allow_internet_access", .type = AJ_JF_ANY, .off = C(internet), .parse = keep_json},
	{.name = "envVars", .type = AJ_JF_MAP, .off = C(env_vars), .check = check_env_name,
	 .sub = &env_value, .parse = keep_json, .refusal = "expected an object of strings"},
	{.name = "metadata", .type = AJ_JF_ANY, .off = C(labels), .parse = e2b_metadata_labels},
	{.name = NULL},
};
#undef C

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

/* volumeMounts [{"name", "path"}]: filesystem.volumes entries NAME:PATH (the manager checks
 * that the owner has each volume; the policy's checks the paths). */
static int volume_mounts(struct aj_srv_req *r, struct create *c)
{
	json_t *m;
	size_t i;

	if (c->volume_mounts && !json_is_null(c->volume_mounts) && !json_is_array(c->volume_mounts))
		return e2b_fail(r, 400, "volumeMounts: expected an array of {name, path}");
	json_array_foreach(c->volume_mounts, i, m) {
		const char *name = json_string_value(json_object_get(m, "name"));
		const char *path = json_string_value(json_object_get(m, "path"));
		if (!json_is_object(m) || json_object_size(m) != 2 || !name || !path)
			return e2b_fail(r, 400, "volumeMounts[%zu]: expected {\"name\", \"path\"} strings",
					i);
		if (strchr(name, ':') || strchr(name, '/') || strchr(path, ':'))
			return e2b_fail(r, 400, "volumeMounts[%zu]: a name or path with ':' or a name "
						"with '/'",
					i);
		aj_strv_pushf(&c->pol.volumes, "%s:%s", name, path);
	}
	return 0;
}

/* The policy any create of template_id starts from, before the request's fields: the
 * template's; for a name no template has, "base"'s on the image of that name, with E2B's home
 * as the workspace and its user (whether the image exists is known at create); for a
 * snapshot, "base"'s, on the image of the snapshot's source if it had one (the manager adopts
 * it). Ports are public, as on E2B, unless the template's policy says. -2: no such template
 * or image name usable. */
static int template_policy(const struct aj_e2b *e, const char *template_id,
			   const struct aj_snapshot_rec *snap, struct aj_policy *pol,
			   struct aj_err *err)
{
	json_t *tpl = snap ? NULL : e2b_template(e, template_id);
	const char *preset = NULL;
	_cleanup_json_ json_t *image = NULL;

	if (!tpl) {
		json_t *base = e2b_template(e, "base");
		if (snap && snap->image[0])
			image = json_pack("{s:{s:s}, s:{s:s}}", "filesystem", "mount", "/home/user",
					  "process", "user", "user");
		else if (snap)
			image = json_object();
		else
			image = json_pack("{s:{s:s}, s:{s:s}, s:{s:s}}", "rootfs", "image",
					  template_id, "filesystem", "mount", "/home/user",
					  "process", "user", "user");
		if (aj_policy_json_preset(base, &preset, err) < 0 ||
		    aj_policy_apply_preset(pol, preset ? preset : "workspace-write", err) < 0 ||
		    aj_policy_apply_json(pol, base, err) < 0 || aj_policy_apply_json(pol, image, err) < 0)
			return -2;
	} else if (aj_policy_json_preset(tpl, &preset, err) < 0 ||
		   aj_policy_apply_preset(pol, preset ? preset : "workspace-write", err) < 0 ||
		   aj_policy_apply_json(pol, tpl, err) < 0) {
		return -1;
	}
	if (!json_object_get(json_object_get(tpl ? tpl : e2b_template(e, "base"), "network"),
			     "preview"))
		pol->net_preview = AJ_PREVIEW_PUBLIC;
	return 0;
}

/* For `serve --warm-pool e2b:NAME=N`: what Sandbox.create(NAME) with no other option gets. */
int e2b_warm_policy(void *state, const char *name, struct aj_policy *pol, struct aj_err *err)
{
	int rc = template_policy(state, name, NULL, pol, err);

	if (rc == -2)
		aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
			   "template '%s' is neither a template (\"base\" and those of "
			   "--e2b-templates) nor an image name",
			   name);
	return rc < 0 ? -1 : 0;
}

static int create_policy(struct aj_srv_req *r, struct create *c,
			 const struct aj_snapshot_rec *snap)
{
	json_t *v;
	const char *k;
	struct aj_err err;
	int rc = template_policy(e2b_of(r)->e2b, c->template_id, snap, &c->pol, &err);

	if (rc == -2)
		return e2b_fail(r, 400, "template '%s' is not available: it is neither a "
					"template (\"base\" and those of --e2b-templates) nor "
					"an image name (docs/e2b.md)",
				c->template_id);
	if (rc < 0)
		return fail_mgr(r, &err);
	if (json_is_false(c->internet))
		c->pol.net_mode = AJ_NET_NONE;
	else if (json_is_true(c->internet) && c->pol.net_mode == AJ_NET_NONE)
		return e2b_fail(r, 400, "allow_internet_access: template '%s' gives its sandboxes no "
					"network; use a template whose policy has one",
				c->template_id);
	if (json_object_get(c->network, "allowOut") || json_object_get(c->network, "denyOut")) {
		_cleanup_strv_ struct aj_strv allow = AJ_STRV_INIT, deny = AJ_STRV_INIT;
		if (e2b_network_egress(r, c->network, NULL, &c->pol, &allow, &deny) < 0)
			return -1;
		aj_strv_free(&c->pol.net_allow);
		aj_strv_free(&c->pol.net_deny);
		c->pol.net_allow = allow;
		c->pol.net_deny = deny;
		allow = (struct aj_strv)AJ_STRV_INIT;
		deny = (struct aj_strv)AJ_STRV_INIT;
	}
	if (e2b_network_rules(r, json_object_get(c->network, "rules"), &c->pol) < 0)
		return -1;
	json_object_foreach(c->env_vars, k, v)
		aj_strv_setenv(&c->pol.env_set, k, json_string_value(v));
	if (volume_mounts(r, c) < 0)
		return -1;
	/* A request may narrow what its template allows, never widen it. */
	if (json_is_false(json_object_get(c->network, "allowPublicTraffic")))
		c->pol.net_preview = AJ_PREVIEW_TOKEN;
	return 0;
}

static int create_prepare(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	struct create *c = aj_xcalloc(1, sizeof *c);
	char label[200];

	aj_policy_init(&c->pol);
	c->timeout_s = E2B_DEFAULT_TIMEOUT_S;
	x->x = c;
	x->x_free = create_free;
	if (e2b_read_msg(r, create_fields, c) < 0 || create_policy(r, c, NULL) < 0)
		return -1;
	if (c->auto_pause && !can_pause(r->srv))
		return e2b_fail(r, 400, "lifecycle.onTimeout 'pause' needs the cgroup freezer, which "
					"this host does not give agentjail (rootless without a "
					"delegated cgroup?); use 'kill'");
	snprintf(label, sizeof label, "%s=%s", E2B_LABEL_TEMPLATE, c->template_id);
	aj_strv_push(&c->labels, label);
	c->o.labels = &c->labels;
	c->o.policy = &c->pol;
	c->o.start = true;
	c->o.max_lifetime_ms = c->timeout_s ? c->timeout_s * 1000 : 1;
	c->o.lifetime_action = c->auto_pause ? "pause" : "stop";
	c->o.retention_ms = 1;
	return 0;
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct create *c = e2b_of(r)->x;
	struct aj_sandbox_rec rec;
	struct aj_err err;
	struct aj_srv_claim claim;
	int rc;

	/* Sandbox.create(snapshotId): a name no template has may be the owner's snapshot. */
	if (!e2b_template(e2b_of(r)->e2b, c->template_id)) {
		struct aj_snapshot_rec snap = AJ_REC_INIT;
		if (aj_store_snapshot_get(m->store, c->template_id, r->job.owner, &snap, &err) == 0) {
			aj_policy_free(&c->pol);
			aj_policy_init(&c->pol);
			c->o.from_snapshot = c->template_id;
			rc = create_policy(r, c, &snap);
			aj_snapshot_rec_free(&snap);
			if (rc < 0)
				return;
		}
	}
	aj_mgr_resolve_disk(m, &c->pol);
	claim = aj_srv_claim_sandboxes(1, c->pol.limits.memory, c->pol.limits.disk);
	if (aj_srv_quota_claim(r, m, &claim) < 0)
		return;
	if (aj_srv_warm_create(r->srv, m, &c->o, &rec, &err) < 0) {
		if (err.cls == AJ_ERRC_NOT_FOUND && strstr(err.msg, "no image"))
			e2b_fail(r, 400, "template '%s' is not available: it is neither a template "
					 "(\"base\" and those of --e2b-templates) nor an image of "
					 "the store (docs/e2b.md)",
				 c->template_id);
		else
			fail_mgr(r, &err);
	} else if (c->pol.rootfs_image && e2b_template_start(r, m, rec.id, c->pol.rootfs_image) < 0) {
		aj_mgr_remove(m, rec.id, true, NULL); /* the request says why */
		aj_sandbox_rec_free(&rec);
	} else {
		aj_srv_ok(r, 201, e2b_sandbox_json(e2b_of(r)->e2b, &rec));
		aj_sandbox_rec_free(&rec);
	}
	aj_srv_quota_unclaim(r, &claim);
}

/* ---- GET /sandboxes/{id}, DELETE, timeout, pause --------------------------------------------- */

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	if (e2b_find_live(r, m, false) == 0)
		aj_srv_ok(r, 200, e2b_detail_json(e2b_of(r)->e2b, &e2b_of(r)->rec, true));
}

static void kill_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (e2b_find_live(r, m, false) < 0)
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

	if (timeout_s(r, true, &secs) < 0 || e2b_find_live(r, m, false) < 0)
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

	if (e2b_find_live(r, m, false) < 0)
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

	if (timeout_s(r, false, &secs) < 0 || e2b_find_live(r, m, true) < 0)
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

const struct e2b_route e2b_control_routes[] = {
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
	NOT_IMPL(EVHTTP_REQ_GET, "/sandboxes/metrics"),
	NOT_IMPL(EVHTTP_REQ_GET, "/sandboxes/{id}/logs"),
	NOT_IMPL(EVHTTP_REQ_GET, "/v2/sandboxes/{id}/logs"),
	NOT_IMPL(EVHTTP_REQ_POST, "/sandboxes/{id}/refreshes"),
	NOT_IMPL(EVHTTP_REQ_GET, "/templates"),
	NOT_IMPL(EVHTTP_REQ_POST, "/templates"),
	NOT_IMPL(EVHTTP_REQ_POST, "/v2/templates"),
	NOT_IMPL(EVHTTP_REQ_GET, "/templates/{id}"),
	NOT_IMPL(EVHTTP_REQ_GET, "/volumes"),
	E2B_ROUTES_END,
};
