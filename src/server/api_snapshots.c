/* Snapshots, forks and diffs. Snapshots are looked up with the request's owner as well: a
 * snapshot of another owner is not found, and cannot be the base of a new sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

static const char *owner_of(const struct aj_mgr *m)
{
	return m->any_owner ? NULL : m->owner;
}

/* ---- snapshots --------------------------------------------------------------------------- */

static const struct aj_jf_field snapshot_fields[] = {
	AJ_SRV_STRING("name", 0),
	AJ_SRV_DURATION("retention", 0),
	AJ_SRV_FIELDS_END,
};

static int snapshot_prepare(struct aj_srv_req *r)
{
	const char *name;
	int64_t *retention = aj_xcalloc(1, sizeof *retention);

	r->data = retention;
	r->data_free = free;
	if (!r->body)
		r->body = json_object();
	if (aj_srv_check_fields(r, snapshot_fields) < 0 ||
	    aj_srv_duration_ms(r, "retention", retention) < 0)
		return -1;
	name = aj_srv_str(r, "name");
	if (name && !aj_mgr_name_ok(name))
		return aj_srv_fail(r, 400, "invalid_value", "name",
				   "name: 1-63 of A-Za-z0-9_.- not starting with - or ., and not "
				   "16 hex digits");
	return 0;
}

int aj_srv_snapshot_create(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
			   const char *name, int64_t retention_ms, struct aj_snapshot_rec *out,
			   struct aj_err *err)
{
	struct aj_srv_claim claim = {.snapshots = 1, .disk = aj_mgr_disk_used(m, id)};
	int rc;

	if (aj_srv_quota_claim(r, m, &claim) < 0)
		return -1;
	rc = aj_mgr_snapshot(m, id, name, retention_ms, out, err);
	aj_srv_quota_unclaim(r, &claim);
	return rc < 0 ? -2 : 0;
}

static void snapshot_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_sandbox_rec rec;
	struct aj_snapshot_rec s;
	struct aj_err err;
	int rc;

	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	rc = aj_srv_snapshot_create(r, m, rec.id, aj_srv_str(r, "name"), *(int64_t *)r->data, &s,
				    &err);
	aj_sandbox_rec_free(&rec);
	if (rc == -2)
		aj_srv_fail_err(r, &err, err.errnum == EEXIST ? "name" : NULL);
	if (rc < 0)
		return;
	snprintf(r->location, sizeof r->location, "/v1/snapshots/%s", s.name);
	aj_srv_ok(r, 201, aj_srv_snapshot_json(&s));
	aj_snapshot_rec_free(&s);
}

/* The owner's snapshots, or those taken of one sandbox (source: its id). */
static void list_snapshots(struct aj_srv_req *r, struct aj_mgr *m, const char *source)
{
	struct aj_snapshot_rec *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_store_snapshot_list(m->store, owner_of(m), &v, &n, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		if (!source || !strcmp(v[i].source, source))
			json_array_append_new(a, aj_srv_snapshot_json(&v[i]));
	aj_snapshot_recs_free(v, n);
	aj_srv_ok(r, 200, json_pack("{s:o}", "snapshots", a));
}

static void sandbox_snapshots_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;

	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	list_snapshots(r, m, rec.id);
	aj_sandbox_rec_free(&rec);
}

static void all_snapshots_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	list_snapshots(r, m, NULL);
}

static void snapshot_get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_snapshot_rec s;
	struct aj_err err;

	if (aj_store_snapshot_get(m->store, r->name, owner_of(m), &s, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, aj_srv_snapshot_json(&s));
	aj_snapshot_rec_free(&s);
}

static void snapshot_delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_mgr_snapshot_remove(m, r->name, &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		aj_srv_ok(r, 204, NULL);
}

/* ---- fork -------------------------------------------------------------------------------- */

static const struct aj_jf_field fork_fields[] = {
	AJ_SRV_UINT("count", 0),
	AJ_SRV_STRING("prefix", 0),
	AJ_SRV_BOOL("start", 0),
	AJ_SRV_FIELDS_END,
};

static int fork_prepare(struct aj_srv_req *r)
{
	json_t *count;
	const char *prefix;

	if (!r->body)
		r->body = json_object();
	if (aj_srv_check_fields(r, fork_fields) < 0)
		return -1;
	count = json_object_get(r->body, "count");
	if (count && (json_integer_value(count) < 1 || json_integer_value(count) > 1000))
		return aj_srv_fail(r, 400, "invalid_value", "count", "count: 1 to 1000");
	prefix = aj_srv_str(r, "prefix");
	/* The new names are PREFIX-1, PREFIX-2...: valid names themselves. */
	if (prefix && (strlen(prefix) > 56 || !aj_mgr_name_ok(prefix)))
		return aj_srv_fail(r, 400, "invalid_value", "prefix",
				   "prefix: 1-56 of A-Za-z0-9_.- not starting with - or .");
	return 0;
}

static void fork_run(struct aj_srv_req *r, struct aj_mgr *m, const struct aj_sandbox_rec *src,
		     unsigned count)
{
	_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;
	struct aj_err err;
	json_t *a;

	if (aj_mgr_fork(m, src->id, count, aj_srv_str(r, "prefix"),
			!json_is_false(json_object_get(r->body, "start")), &names, &err) < 0) {
		aj_srv_fail_err(r, &err, err.errnum == EEXIST ? "prefix" : NULL);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < names.n; i++)
		json_array_append_new(a, json_string(names.v[i]));
	if (names.n)
		snprintf(r->location, sizeof r->location, "/v1/sandboxes/%s", names.v[0]);
	aj_srv_ok(r, 201, json_pack("{s:o}", "names", a));
}

static void fork_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *c = json_object_get(r->body, "count");
	unsigned count = c ? (unsigned)json_integer_value(c) : 1;
	struct aj_sandbox_rec src;
	struct aj_err err;
	struct aj_srv_limits l;
	struct aj_srv_claim claim;

	if (aj_mgr_get(m, r->ref, &src, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	/* The forks have the source's policy, so its memory and disk limits each. */
	l = aj_srv_policy_limits(src.policy);
	claim = aj_srv_claim_sandboxes(count, l.memory, l.disk);
	if (aj_srv_quota_claim(r, m, &claim) == 0) {
		fork_run(r, m, &src, count);
		aj_srv_quota_unclaim(r, &claim);
	}
	aj_sandbox_rec_free(&src);
}

/* ---- diff -------------------------------------------------------------------------------- */

static int add_change(void *arg, char kind, const char *path)
{
	return json_array_append_new(arg, json_pack("{s:s, s:s}", "change",
						    kind == 'A'   ? "added"
						    : kind == 'M' ? "modified"
								  : "deleted",
						    "path", path));
}

static void diff_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *a = json_array();
	struct aj_err err;

	if (aj_mgr_diff(m, r->ref, add_change, a, &err) < 0) {
		json_decref(a);
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, json_pack("{s:o}", "changes", a));
}

/* ---- restore ------------------------------------------------------------------------------- */

static const struct aj_jf_field restore_fields[] = {
	AJ_SRV_STRING("snapshot", AJ_JF_REQUIRED),
	AJ_SRV_FIELDS_END,
};

static int restore_prepare(struct aj_srv_req *r)
{
	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "snapshot", "snapshot: required");
	return aj_srv_check_fields(r, restore_fields);
}

/* The sandbox's workspace goes back to the snapshot (stopped and started again if it ran). */
static void restore_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;

	if (aj_mgr_restore(m, r->ref, aj_srv_str(r, "snapshot"), &err) < 0) {
		aj_srv_fail_err(r, &err, err.errnum == ENOENT ? "snapshot" : NULL);
		return;
	}
	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, aj_srv_sandbox_json(&rec));
	aj_sandbox_rec_free(&rec);
}

const struct aj_srv_route aj_api_snapshot_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/restore", AJ_SRV_BODY_JSON, NULL, restore_prepare,
	 restore_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/snapshots", AJ_SRV_BODY_JSON, NULL,
	 snapshot_prepare, snapshot_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/snapshots", AJ_SRV_BODY_NONE, NULL, NULL,
	 sandbox_snapshots_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/snapshots", AJ_SRV_BODY_NONE, NULL, NULL, all_snapshots_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/snapshots/{name}", AJ_SRV_BODY_NONE, NULL, NULL, snapshot_get_work,
	 NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/snapshots/{name}", AJ_SRV_BODY_NONE, NULL, NULL,
	 snapshot_delete_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/fork", AJ_SRV_BODY_JSON, NULL, fork_prepare,
	 fork_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/diff", AJ_SRV_BODY_NONE, NULL, NULL, diff_work, NULL),
	AJ_SRV_ROUTES_END,
};
