/* E2B's volumes (docs/e2b.md "Volumes"): the Volume class's control routes (/volumes, with the
 * API key's owner) on agentjail's volumes of that owner (storage/volumes.h), and the volume
 * content routes (/volumecontent/{id}/...) it reaches with the volume's token, which the
 * daemon derives from its secret, the owner and the volume's id (no storage; it survives
 * restarts). Sandbox.create's volumeMounts name them (sandboxes.c). Paths in a volume resolve
 * beneath it without following links (volume_files.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "e2b/internal.h"
#include "storage/volumes.h"

static int fail_store(struct aj_srv_req *r, const struct aj_err *err)
{
	int status = err->cls == AJ_ERRC_NOT_FOUND     ? 404
		     : err->cls == AJ_ERRC_EXISTS      ? 409
		     : err->cls == AJ_ERRC_WRONG_STATE ? 409
		     : err->layer == AJ_LAYER_USAGE    ? 400
						       : 500;

	return e2b_fail(r, status, "%s", err->msg);
}

static json_t *volume_json(struct aj_srv_req *r, const struct aj_volume *v, bool with_token)
{
	char token[E2B_VOLUME_TOKEN_MAX];

	if (!with_token)
		return json_pack("{s:s, s:s}", "volumeID", v->id, "name", v->name);
	e2b_volume_token(e2b_of(r)->e2b, r->job.owner, v->id, token, sizeof token);
	return json_pack("{s:s, s:s, s:s}", "volumeID", v->id, "name", v->name, "token", token);
}

static void create_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *msg = e2b_of(r)->msg, *v;
	const char *name = json_string_value(json_object_get(msg, "name")), *k;
	struct aj_volume vol;
	struct aj_err err;

	json_object_foreach(msg, k, v) {
		if (strcmp(k, "name")) {
			e2b_fail(r, 400, "%.64s: unknown field", k);
			return;
		}
	}
	if (!name) {
		e2b_fail(r, 400, "name: expected a string");
		return;
	}
	switch (aj_srv_volume_create(r, m, name, 0, &vol, &err)) {
	case -1: return; /* a quota's answer */
	case -2: fail_store(r, &err); return;
	default: break;
	}
	aj_srv_ok(r, 201, volume_json(r, &vol, true));
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_volume *v = NULL;
	struct aj_err err;
	size_t n = 0;
	json_t *a;

	if (aj_volume_list(m->state, r->job.owner, &v, &n, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, volume_json(r, &v[i], false));
	free(v);
	aj_srv_ok(r, 200, a);
}

/* {arg}: a volume id (the SDK's), or a name. */
static void get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_volume v;
	struct aj_err err;

	if (aj_volume_get(m->state, r->job.owner, e2b_of(r)->arg, &v, &err) < 0)
		fail_store(r, &err);
	else
		aj_srv_ok(r, 200, volume_json(r, &v, true));
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_err err;

	if (aj_volume_remove(m->state, r->job.owner, e2b_of(r)->arg, false, &err) < 0)
		fail_store(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

const struct e2b_route e2b_volume_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/volumes", E2B_API, NULL, list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/volumes", E2B_API, NULL, create_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/volumes/{arg}", E2B_API, NULL, get_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/volumes/{arg}", E2B_API, NULL, delete_work, NULL),
	E2B_ROUTES_END,
};

/* ---- /volumecontent/{id}/...: a volume's files ---------------------------------------------- */

static const char *type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "unknown";
}

static json_t *entry_json(const struct aj_volume_stat *s)
{
	char a[40], mt[40], c[40];
	json_t *j;

	aj_format_time_ms((uint64_t)s->st.st_atim.tv_sec * 1000 + (uint64_t)s->st.st_atim.tv_nsec / 1000000,
			  a, sizeof a);
	aj_format_time_ms((uint64_t)s->st.st_mtim.tv_sec * 1000 + (uint64_t)s->st.st_mtim.tv_nsec / 1000000,
			  mt, sizeof mt);
	aj_format_time_ms((uint64_t)s->st.st_ctim.tv_sec * 1000 + (uint64_t)s->st.st_ctim.tv_nsec / 1000000,
			  c, sizeof c);
	j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s}", "name", s->name, "path",
		      s->path, "type", type_of(s->st.st_mode), "size", (json_int_t)s->st.st_size,
		      "mode", (json_int_t)(s->st.st_mode & 07777), "uid", (json_int_t)s->st.st_uid,
		      "gid", (json_int_t)s->st.st_gid, "atime", a, "mtime", mt, "ctime", c);
	if (S_ISLNK(s->st.st_mode))
		json_object_set_new(j, "target", json_string(s->target));
	return j;
}

/* The volume of the path's {id}, the owner the token named (router.c checked it). */
static int open_volume(struct aj_srv_req *r, struct aj_mgr *m, struct aj_volume *v)
{
	struct aj_err err;

	if (aj_volume_get(m->state, r->job.owner, e2b_of(r)->id, v, &err) < 0)
		return fail_store(r, &err);
	return 0;
}

static const char *path_arg(struct aj_srv_req *r)
{
	const char *p = aj_srv_query(r, "path");

	if (!p || !*p) {
		e2b_fail(r, 400, "path: a query parameter is required");
		return NULL;
	}
	return p;
}

/* uid, gid, mode: from the query (mkdir, writeFile) or the body (updateMetadata). */
static int read_attrs(struct aj_srv_req *r, json_t *body, struct aj_volume_attrs *a)
{
	static const char *const names[] = {"uid", "gid", "mode"};
	int64_t v[3] = {-1, -1, -1};

	for (int i = 0; i < 3; i++) {
		const char *q = body ? NULL : aj_srv_query(r, names[i]);
		json_t *j = body ? json_object_get(body, names[i]) : NULL;
		char *end;
		if (j && !json_is_null(j)) {
			if (!json_is_integer(j) || json_integer_value(j) < 0)
				return e2b_fail(r, 400, "%s: expected a non-negative integer", names[i]);
			v[i] = json_integer_value(j);
		} else if (q && *q) {
			errno = 0;
			v[i] = strtoll(q, &end, 10);
			if (errno || *end || v[i] < 0)
				return e2b_fail(r, 400, "%s: expected a non-negative integer", names[i]);
		}
		/* the ids sandboxes have; no setuid or setgid bit */
		if (v[i] > (i == 2 ? 01777 : 65535))
			return e2b_fail(r, 400, "%s: out of range (ids 0-65535, modes up to 01777)",
					names[i]);
	}
	a->uid = v[0] < 0 ? (uid_t)-1 : (uid_t)v[0];
	a->gid = v[1] < 0 ? (gid_t)-1 : (gid_t)v[1];
	a->mode = (int)v[2];
	return 0;
}

static void reply_entry(struct aj_srv_req *r, const struct aj_volume *v, const char *path,
			int status)
{
	struct aj_volume_stat s;
	struct aj_err err;

	if (aj_volume_stat(v, path, &s, &err) < 0)
		fail_store(r, &err);
	else
		aj_srv_ok(r, status, entry_json(&s));
}

static void dir_list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume v;
	struct aj_volume_stat *e = NULL;
	struct aj_err err;
	int64_t depth = 1;
	size_t n = 0;
	json_t *a;

	if (!path || open_volume(r, m, &v) < 0)
		return;
	if (aj_srv_query_int(r, "depth", 1, 16, &depth) < 0) {
		e2b_fail(r, 400, "depth must be between 1 and 16");
		return;
	}
	if (aj_volume_list_dir(&v, path, (int)depth, &e, &n, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, entry_json(&e[i]));
	free(e);
	aj_srv_ok(r, 200, a);
}

static bool force_arg(struct aj_srv_req *r)
{
	const char *f = aj_srv_query(r, "force");
	return f && !strcmp(f, "true");
}

static void dir_make_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume_attrs a;
	struct aj_volume v;
	struct aj_err err;

	if (!path || open_volume(r, m, &v) < 0 || read_attrs(r, NULL, &a) < 0)
		return;
	if (aj_volume_mkdir(&v, path, &a, force_arg(r), &err) < 0) {
		fail_store(r, &err);
		return;
	}
	reply_entry(r, &v, path, 201);
}

static void path_get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume v;

	if (path && open_volume(r, m, &v) == 0)
		reply_entry(r, &v, path, 200);
}

static void path_patch_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	json_t *body = e2b_of(r)->msg, *val;
	struct aj_volume_attrs a;
	struct aj_volume v;
	struct aj_err err;
	const char *k;

	if (!path || open_volume(r, m, &v) < 0)
		return;
	json_object_foreach(body, k, val) {
		if (strcmp(k, "uid") && strcmp(k, "gid") && strcmp(k, "mode")) {
			e2b_fail(r, 400, "%.64s: unknown field", k);
			return;
		}
	}
	if (read_attrs(r, body, &a) < 0)
		return;
	if (aj_volume_chattr(&v, path, &a, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	reply_entry(r, &v, path, 200);
}

static void path_delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume v;
	struct aj_err err;

	if (!path || open_volume(r, m, &v) < 0)
		return;
	if (aj_volume_remove_path(&v, path, &err) < 0)
		fail_store(r, &err);
	else
		aj_srv_ok(r, 204, NULL);
}

static void file_get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume v;
	struct aj_err err;
	uint64_t size = 0;
	int fd = -1;

	if (!path || open_volume(r, m, &v) < 0)
		return;
	if (aj_volume_open_file(&v, path, &fd, &size, &err) < 0) {
		fail_store(r, &err);
		return;
	}
	if (size > aj_srv_cfg(r->srv)->max_download) {
		close(fd);
		e2b_fail(r, 413, "%s is larger than the download limit of %zu bytes", path,
			 aj_srv_cfg(r->srv)->max_download);
		return;
	}
	r->file_fd = fd; /* sent by e2b_finish */
	r->file_len = size;
}

static void file_put_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const char *path = path_arg(r);
	struct aj_volume_attrs a;
	struct aj_volume v;
	struct aj_err err;

	if (!path || open_volume(r, m, &v) < 0 || read_attrs(r, NULL, &a) < 0)
		return;
	if (aj_volume_write(&v, path, e2b_of(r)->raw, e2b_of(r)->raw_len, &a, force_arg(r), &err) <
	    0) {
		fail_store(r, &err);
		return;
	}
	reply_entry(r, &v, path, 201);
}

const struct e2b_route e2b_volume_content_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/volumecontent/{id}/dir", E2B_API, NULL, dir_list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/volumecontent/{id}/dir", E2B_API, NULL, dir_make_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/volumecontent/{id}/path", E2B_API, NULL, path_get_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_PATCH, "/volumecontent/{id}/path", E2B_API, NULL, path_patch_work,
		  NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/volumecontent/{id}/path", E2B_API, NULL, path_delete_work,
		  NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/volumecontent/{id}/file", E2B_API, NULL, file_get_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_PUT, "/volumecontent/{id}/file", E2B_API, NULL, file_put_work, NULL),
	E2B_ROUTES_END,
};
