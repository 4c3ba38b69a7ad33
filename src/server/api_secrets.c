/* /v1/secrets: the request owner's secrets of the store (state/secrets.h), which its
 * sandboxes' policies name as credentials ("from_secret"). A value goes in with POST or PUT
 * and never comes out: every reply is the secret's metadata. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/internal.h"
#include "state/secrets.h"

static const struct aj_jf_field create_fields[] = {
	AJ_SRV_STRING("name", AJ_JF_REQUIRED),
	AJ_SRV_STRING("value", AJ_JF_REQUIRED),
	AJ_SRV_OBJECT("metadata", 0),
	AJ_SRV_FIELDS_END,
};

static const struct aj_jf_field update_fields[] = {
	AJ_SRV_STRING("value", AJ_JF_REQUIRED),
	AJ_SRV_OBJECT("metadata", 0),
	AJ_SRV_FIELDS_END,
};

static int create_prepare(struct aj_srv_req *r)
{
	return aj_srv_check_fields(r, create_fields);
}

static int update_prepare(struct aj_srv_req *r)
{
	return aj_srv_check_fields(r, update_fields);
}

/* The field a store error is about: "name" or "value" lead its message. */
static const char *field_of(const struct aj_err *err)
{
	if (!strncmp(err->msg, "name:", 5) || err->cls == AJ_ERRC_EXISTS)
		return "name";
	if (!strncmp(err->msg, "value:", 6))
		return "value";
	if (!strncmp(err->msg, "metadata", 8))
		return "metadata";
	return NULL;
}

static void put(struct aj_srv_req *r, struct aj_mgr *m, const char *ref, bool create)
{
	const char *value = aj_srv_str(r, "value");
	struct aj_secret s;
	struct aj_err err;

	if (aj_secret_put(m->state, r->job.owner, ref, value, strlen(value),
			  json_object_get(r->body, "metadata"), create, &s, &err) < 0) {
		aj_srv_fail_err(r, &err, field_of(&err));
		return;
	}
	if (create)
		snprintf(r->location, sizeof r->location, "/v1/secrets/%s", s.name);
	aj_srv_ok(r, create ? 201 : 200, aj_secret_json(&s));
	aj_secret_free(&s);
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	put(r, m, aj_srv_str(r, "name"), true);
}

static void update_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	put(r, m, r->name, false);
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_secret *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_secret_list(m->state, r->job.owner, &v, &n, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, aj_secret_json(&v[i]));
	aj_secrets_free(v, n);
	aj_srv_ok(r, 200, json_pack("{s:o}", "secrets", a));
}

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_secret s;
	struct aj_err err;

	if (aj_secret_get(m->state, r->job.owner, r->name, &s, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	aj_srv_ok(r, 200, aj_secret_json(&s));
	aj_secret_free(&s);
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_secret_remove(m->state, r->job.owner, r->name, &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		aj_srv_ok(r, 204, NULL);
}

const struct aj_srv_route aj_api_secret_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/secrets", AJ_SRV_BODY_NONE, NULL, NULL, list_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/secrets", AJ_SRV_BODY_JSON, NULL, create_prepare,
		     create_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/secrets/{name}", AJ_SRV_BODY_NONE, NULL, NULL, get_work,
		     NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_PUT, "/v1/secrets/{name}", AJ_SRV_BODY_JSON, NULL, update_prepare,
		     update_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/secrets/{name}", AJ_SRV_BODY_NONE, NULL, NULL,
		     delete_work, NULL),
	AJ_SRV_ROUTES_END,
};
