/* /v1/volumes: the request owner's volumes (storage/volumes.h), which its sandboxes' policies
 * mount with filesystem.volumes ["NAME:/path"]. Token owners are held to --max-volumes and,
 * with --max-volume-bytes or --max-disk, to sizes that add up to at most that (each volume then
 * needs one); quota.c weighs them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"
#include "storage/volumes.h"

static const struct aj_jf_field create_fields[] = {
	AJ_SRV_STRING("name", AJ_JF_REQUIRED),
	AJ_SRV_UINT("size", 0),
	AJ_SRV_FIELDS_END,
};

static int create_prepare(struct aj_srv_req *r)
{
	return aj_srv_check_fields(r, create_fields);
}

static json_t *volume_json(const struct aj_volume *v)
{
	json_t *j = aj_volume_json(v);

	json_object_set_new(j, "used_bytes", json_integer((json_int_t)aj_volume_used(v)));
	json_object_set_new(j, "in_use", json_boolean(aj_volume_in_use(v)));
	return j;
}

int aj_srv_volume_create(struct aj_srv_req *r, struct aj_mgr *m, const char *name,
			 uint64_t size, struct aj_volume *out, struct aj_err *err)
{
	struct aj_srv_claim claim = {.volumes = 1, .volume_bytes = size, .disk = size};
	int rc;

	if (aj_srv_quota_claim(r, m, &claim) < 0)
		return -1;
	rc = aj_volume_create(m->state, r->job.owner, name, size, out, err);
	aj_srv_quota_unclaim(r, &claim);
	return rc < 0 ? -2 : 0;
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *name = aj_srv_str(r, "name");
	uint64_t size = (uint64_t)json_integer_value(json_object_get(r->body, "size"));
	struct aj_volume v;
	struct aj_err err;
	int rc = aj_srv_volume_create(r, m, name, size, &v, &err);

	if (rc == -2)
		aj_srv_fail_err(r, &err, !strncmp(err.msg, "--size", 6) ? "size" : "name");
	if (rc < 0)
		return;
	snprintf(r->location, sizeof r->location, "/v1/volumes/%s", v.name);
	aj_srv_ok(r, 201, volume_json(&v));
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_volume *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_volume_list(m->state, r->job.owner, &v, &n, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, volume_json(&v[i]));
	free(v);
	aj_srv_ok(r, 200, json_pack("{s:o}", "volumes", a));
}

static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_volume v;
	struct aj_err err;

	if (aj_volume_get(m->state, r->job.owner, r->name, &v, &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		aj_srv_ok(r, 200, volume_json(&v));
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_volume_remove(m->state, r->job.owner, r->name, aj_srv_forced(r), &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else
		aj_srv_ok(r, 204, NULL);
}

static const char *const delete_query[] = {"force", NULL};

const struct aj_srv_route aj_api_volume_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/volumes", AJ_SRV_BODY_NONE, NULL, NULL, list_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/volumes", AJ_SRV_BODY_JSON, NULL, create_prepare,
		     create_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/volumes/{name}", AJ_SRV_BODY_NONE, NULL, NULL, get_work,
		     NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/volumes/{name}", AJ_SRV_BODY_NONE, delete_query,
		     aj_srv_force_prepare, delete_work, NULL),
	AJ_SRV_ROUTES_END,
};
