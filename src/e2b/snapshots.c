/* E2B's snapshots and forks onto agentjail's own (docs/e2b.md "Snapshots and forks"):
 * createSnapshot() is a snapshot of the sandbox's workspace and system layer (files, not
 * process memory), listSnapshots() the owner's, deleteSnapshot() (DELETE /templates/{id},
 * template_build.c) removes one, Sandbox.create(snapshotId) starts from one (control.c), and
 * fork() makes running copies of the sandbox's files now. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "e2b/internal.h"
#include "manager/manager.h"

#define FORK_MAX 20

static json_t *snapshot_json(const struct aj_snapshot_rec *s)
{
	return json_pack("{s:s, s:[s]}", "snapshotID", s->id, "names", s->name);
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	_cleanup_snapshot_rec_ struct aj_snapshot_rec snap = AJ_REC_INIT;
	json_t *name = json_object_get(e2b_of(r)->msg, "name");
	struct aj_err err;

	if (name && !json_is_null(name) &&
	    (!json_is_string(name) || !aj_mgr_name_ok(json_string_value(name)))) {
		e2b_fail(r, 400, "name: 1-63 of A-Za-z0-9_.- not starting with - or .");
		return;
	}
	if (e2b_find_live(r, m, false) < 0)
		return;
	switch (aj_srv_snapshot_create(r, m, e2b_of(r)->rec.id, json_string_value(name), 0, &snap,
				       &err)) {
	case -2:
		e2b_fail_err(r, &err);
		return;
	case -1:
		return;
	}
	aj_srv_ok(r, 201, snapshot_json(&snap));
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *sandbox = aj_srv_query(r, "sandboxID"), *name = aj_srv_query(r, "name");
	struct aj_snapshot_rec *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_store_snapshot_list(m->store, r->job.owner, &v, &n, &err) < 0) {
		e2b_fail_err(r, &err);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		if (v[i].state == AJ_SS_READY && (!sandbox || !strcmp(v[i].source, sandbox)) &&
		    (!name || !strcmp(v[i].name, name)))
			json_array_append_new(a, snapshot_json(&v[i]));
	aj_snapshot_recs_free(v, n);
	aj_srv_ok(r, 200, a);
}

static void fork_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const struct aj_sandbox_rec *rec = &e2b_of(r)->rec;
	_cleanup_strv_ struct aj_strv names = AJ_STRV_INIT;
	json_t *msg = e2b_of(r)->msg, *count = json_object_get(msg, "count");
	json_t *timeout = json_object_get(msg, "timeout"), *out;
	int64_t secs = E2B_DEFAULT_TIMEOUT_S, n = 1;
	struct aj_srv_limits lim;
	struct aj_srv_claim claim;
	struct aj_err err;
	int rc;

	if (count && !json_is_null(count) &&
	    (!json_is_integer(count) || json_integer_value(count) < 1 ||
	     json_integer_value(count) > FORK_MAX)) {
		e2b_fail(r, 400, "count: expected 1 to %d", FORK_MAX);
		return;
	}
	if (count && json_is_integer(count))
		n = json_integer_value(count);
	if (timeout && !json_is_null(timeout)) {
		if (!json_is_integer(timeout) || json_integer_value(timeout) < 0 ||
		    json_integer_value(timeout) > aj_srv_cfg(r->srv)->e2b_max_timeout_s) {
			e2b_fail(r, 400, "timeout: expected 0 to %d seconds",
				 aj_srv_cfg(r->srv)->e2b_max_timeout_s);
			return;
		}
		secs = json_integer_value(timeout);
	}
	if (e2b_find_live(r, m, false) < 0)
		return;
	lim = aj_srv_policy_limits(rec->policy);
	claim = aj_srv_claim_sandboxes((unsigned)n, lim.memory, lim.disk);
	if (aj_srv_quota_claim(r, m, &claim) < 0)
		return;
	rc = aj_mgr_fork(m, rec->id, (unsigned)n, NULL, true, &names, &err);
	aj_srv_quota_unclaim(r, &claim);
	if (rc < 0) {
		e2b_fail_err(r, &err);
		return;
	}
	out = json_array();
	for (size_t i = 0; i < names.n; i++) {
		struct aj_sandbox_rec f;
		/* E2B's timeout from now: the fork's lifetime, counted from its start */
		if (aj_mgr_get(m, names.v[i], &f, &err) == 0) {
			int64_t l = (int64_t)aj_now_realtime_ms() + secs * 1000 - f.started_ms;
			aj_mgr_set_lifetime(m, f.id, l > 0 ? l : 1, NULL);
			aj_sandbox_rec_free(&f);
		}
		if (aj_mgr_get(m, names.v[i], &f, &err) < 0) {
			json_array_append_new(out, json_pack("{s:{s:i, s:s}}", "error", "code", 500,
							     "message", err.msg));
			continue;
		}
		json_array_append_new(out, json_pack("{s:o}", "sandbox",
						     e2b_sandbox_json(e2b_of(r)->e2b, &f)));
		aj_sandbox_rec_free(&f);
	}
	aj_srv_ok(r, 200, out);
}

const struct e2b_route e2b_snapshot_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/snapshots", E2B_API, NULL, create_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/snapshots", E2B_API, NULL, list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/sandboxes/{id}/fork", E2B_API, NULL, fork_work, NULL),
	E2B_ROUTES_END,
};
