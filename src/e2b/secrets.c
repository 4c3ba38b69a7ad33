/* E2B's secrets API (Secret.create, update, getInfo, list, destroy; docs/e2b.md "Secrets"):
 * the key owner's secrets of agentjail's store (state/secrets.h), named as E2B names them
 * (lower-cased) and addressed by name or id. A value is never answered back. Sandbox.create's
 * network rules name them as "${e2b.secrets.NAME}" (control.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "e2b/internal.h"
#include "state/secrets.h"

#define PAGE_MAX 100

static json_t *secret_json(const struct aj_secret *s)
{
	char created[40], updated[40];

	aj_format_time_ms((uint64_t)s->created_ms, created, sizeof created);
	aj_format_time_ms((uint64_t)s->updated_ms, updated, sizeof updated);
	return json_pack("{s:s, s:s, s:I, s:O, s:s, s:s}", "secretID", s->id, "name", s->name,
			 "currentVersion", (json_int_t)s->version, "metadata", s->metadata,
			 "createdAt", created, "updatedAt", updated);
}

static int fail_store(struct aj_srv_req *r, const struct aj_err *err)
{
	int status = err->cls == AJ_ERRC_NOT_FOUND ? 404
		     : err->cls == AJ_ERRC_EXISTS  ? 409
		     : err->layer == AJ_LAYER_USAGE ? 400
						    : 500;

	return e2b_fail(r, status, "%s", err->msg);
}

/* {name, value, metadata} or {value, metadata}: the members, of their types, and no other. */
static int read_body(struct aj_srv_req *r, bool with_name, const char **name, const char **value,
		     json_t **meta)
{
	json_t *m = e2b_of(r)->msg, *v;
	const char *k;

	if (!json_is_object(m))
		return e2b_fail(r, 400, "expected a JSON object");
	json_object_foreach(m, k, v) {
		if (!strcmp(k, "value") || (with_name && !strcmp(k, "name")) ||
		    !strcmp(k, "metadata"))
			continue;
		return e2b_fail(r, 400, "%.64s: unknown field", k);
	}
	*name = json_string_value(json_object_get(m, "name"));
	*value = json_string_value(json_object_get(m, "value"));
	*meta = json_object_get(m, "metadata");
	if (json_is_null(*meta))
		*meta = NULL;
	if (with_name && !*name)
		return e2b_fail(r, 400, "name: expected a string");
	if (!*value)
		return e2b_fail(r, 400, "value: expected a string");
	return 0;
}

static void put(struct aj_srv_req *r, struct aj_mgr *m, bool create)
{
	const char *name = NULL, *value = NULL;
	json_t *meta = NULL;
	struct aj_secret s;
	struct aj_err err;

	if (read_body(r, create, &name, &value, &meta) < 0 || !value || (create && !name))
		return;
	if (create && !strncmp(name, "sec_", 4)) {
		e2b_fail(r, 400, "name: the sec_ prefix is for secret ids");
		return;
	}
	if (aj_secret_put(m->state, r->job.owner, create ? name : e2b_of(r)->arg, value,
			  strlen(value), meta, create, &s, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	aj_srv_ok(r, create ? 201 : 200, secret_json(&s));
	aj_secret_free(&s);
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	put(r, m, true);
}

static void update_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	put(r, m, false);
}

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_secret s;
	struct aj_err err;

	if (aj_secret_get(m->state, r->job.owner, e2b_of(r)->arg, &s, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	aj_srv_ok(r, 200, secret_json(&s));
	aj_secret_free(&s);
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_secret_remove(m->state, r->job.owner, e2b_of(r)->arg, &err) < 0)
		fail_store(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

/* By name; a page ends with X-Next-Token, the name of its last secret. */
static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *after = aj_srv_query(r, "nextToken");
	struct aj_secret *v = NULL;
	int64_t limit = PAGE_MAX;
	struct aj_err err;
	size_t n = 0, taken = 0, i = 0;
	json_t *a;

	if (aj_srv_query_int(r, "limit", 1, PAGE_MAX, &limit) < 0) {
		e2b_fail(r, 400, "limit must be between 1 and %d", PAGE_MAX);
		return;
	}
	if (aj_secret_list(m->state, r->job.owner, &v, &n, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	if (after && *after)
		while (i < n && strcmp(v[i].name, after) <= 0)
			i++;
	a = json_array();
	for (; i < n && taken < (size_t)limit; i++, taken++)
		json_array_append_new(a, secret_json(&v[i]));
	if (i < n && taken)
		snprintf(e2b_of(r)->next_token, sizeof e2b_of(r)->next_token, "%s", v[i - 1].name);
	aj_secrets_free(v, n);
	aj_srv_ok(r, 200, a);
}

const struct e2b_route e2b_secret_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/secrets", E2B_API, NULL, list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/secrets", E2B_API, NULL, create_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/secrets/{arg}", E2B_API, NULL, get_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/secrets/{arg}", E2B_API, NULL, update_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/secrets/{arg}", E2B_API, NULL, delete_work, NULL),
	E2B_ROUTES_END,
};
