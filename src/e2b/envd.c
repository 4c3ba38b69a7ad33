/* envd's REST side (docs/e2b-protocol.md 5): /health, /files (download; upload as multipart
 * or raw, gzip too; signed URLs), /envs; and what every sandbox-side route shares: finding the
 * running sandbox, its user, and paths.
 *
 * Files go through the sandbox's boundary (control/fsops.h): init opens, creates and removes
 * every path inside the sandbox, as the sandbox user, and the daemon only reads and writes the
 * descriptors it hands out. No host path is ever resolved on the sandbox's behalf. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "control/client.h"
#include "control/fsops.h"
#include "e2b/internal.h"

#define MAX_PARTS 1000

int e2b_sandbox_open(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;

	if (aj_mgr_get(m, x->id, &x->rec, &err) < 0)
		return e2b_fail_gone(r);
	x->have_rec = true;
	/* Paused and stopped sandboxes are "not found" to the SDK, as E2B's proxy has them. */
	if (!e2b_is_ours(&x->rec) || x->rec.state != AJ_ST_RUNNING)
		return e2b_fail_gone(r);
	x->ctl = aj_ctl_connect(x->rec.socket, &err);
	return x->ctl < 0 ? e2b_fail_gone(r) : 0;
}

/* ---- users and paths ------------------------------------------------------------------------ */

int e2b_user_resolve(struct aj_srv_req *r, struct e2b_user *u)
{
	struct e2b_req *x = e2b_of(r);
	json_t *p = json_loads(x->rec.policy ? x->rec.policy : "{}", 0, NULL);
	json_t *user = json_object_get(p, "user");
	const char *name = json_string_value(json_object_get(user, "name"));
	const char *home = json_string_value(json_object_get(user, "home"));

	memset(u, 0, sizeof *u);
	snprintf(u->name, sizeof u->name, "%s", name ? name : "user");
	snprintf(u->home, sizeof u->home, "%s", home && home[0] == '/' ? home : "/home/user");
	u->uid = (unsigned)json_integer_value(json_object_get(user, "uid"));
	u->gid = (unsigned)json_integer_value(json_object_get(user, "gid"));
	/* An image sandbox has a real root (its own user namespace's): "root" runs as it. */
	u->root = !strcmp(x->user, "root") &&
		  json_is_string(json_object_get(json_object_get(p, "rootfs"), "image"));
	if (u->root)
		snprintf(u->home, sizeof u->home, "/root");
	json_decref(p);
	if (!x->user[0] || !strcmp(x->user, u->name) || !strcmp(x->user, "root"))
		return 0;
	if (x->style == E2B_API)
		return e2b_fail(r, 401, "invalid username: '%s'", x->user);
	return e2b_rpc_fail(r, "unauthenticated", "invalid username: '%s'", x->user);
}

/* "." and ".." and repeated slashes resolved on the text, as envd's filepath.Clean; init
 * resolves the result (symlinks included) inside the sandbox. */
static void clean(char *p)
{
	char *seg[E2B_PATH_MAX / 2 + 1], *save = NULL, *tok, buf[E2B_PATH_MAX + 1];
	size_t n = 0, o = 0;

	snprintf(buf, sizeof buf, "%s", p);
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, "..")) {
			if (n)
				n--;
			continue;
		}
		seg[n++] = tok;
	}
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(p + o, E2B_PATH_MAX + 1 - o, "/%s", seg[i]);
	if (!n)
		snprintf(p, 2, "/");
}

int e2b_path(struct aj_srv_req *r, const struct e2b_user *u, const char *in, char *out,
	     size_t len)
{
	int n;

	if (!in)
		in = "";
	if (in[0] == '/')
		n = snprintf(out, len, "%s", in);
	else if (!strcmp(in, "~") || !in[0])
		n = snprintf(out, len, "%s", u->home);
	else if (!strncmp(in, "~/", 2))
		n = snprintf(out, len, "%s/%s", u->home, in + 2);
	else
		n = snprintf(out, len, "%s/%s", u->home, in);
	if (n < 0 || (size_t)n >= len || (size_t)n > E2B_PATH_MAX)
		return e2b_of(r)->style == E2B_API
			       ? e2b_fail(r, 400, "path is longer than %d bytes", E2B_PATH_MAX)
			       : e2b_rpc_fail(r, "invalid_argument", "path is longer than %d bytes",
					      E2B_PATH_MAX);
	clean(out);
	return 0;
}

/* ---- signed URLs ----------------------------------------------------------------------------- */

static bool signature_of(struct aj_srv_req *r, const char *id, const char *op)
{
	char token[E2B_TOKEN_LEN + 1], want[64];

	e2b_access_token(e2b_of(r)->e2b, id, token);
	e2b_signature(aj_srv_query(r, "path") ?: "", op, aj_srv_query(r, "username") ?: "", token,
		      aj_srv_query(r, "signature_expiration"), want);
	return e2b_str_eq_ct(aj_srv_query(r, "signature"), want);
}

/* The URL carries no sandbox id when every sandbox shares E2B_SANDBOX_URL: the sandbox is the
 * running E2B one whose token made the signature (each one is tried, in constant time). */
static int find_signed(struct aj_srv_req *r, struct aj_mgr *m, const char *op)
{
	struct e2b_req *x = e2b_of(r);
	const char *exp = aj_srv_query(r, "signature_expiration");
	struct aj_sandbox_rec *v = NULL;
	struct aj_err err;
	size_t n = 0;
	bool found = false;

	if (x->id[0] && strcmp(x->id, "0000000000000000")) {
		found = signature_of(r, x->id, op);
	} else if (aj_mgr_list(m, NULL, &v, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++)
			if (e2b_is_ours(&v[i]) && v[i].state == AJ_ST_RUNNING &&
			    signature_of(r, v[i].id, op) && !found) {
				snprintf(x->id, sizeof x->id, "%s", v[i].id);
				found = true;
			}
		aj_sandbox_recs_free(v, n);
	}
	if (!found)
		return e2b_fail(r, 401, "invalid signature");
	if (exp && (strspn(exp, "0123456789") != strlen(exp) || atoll(exp) < (long long)time(NULL)))
		return e2b_fail(r, 401, "signature is already expired");
	return 0;
}

/* The sandbox, user and path of a /files request. */
static int files_open(struct aj_srv_req *r, struct aj_mgr *m, const char *op, const char *in,
		      struct e2b_user *u, char *path)
{
	if (e2b_of(r)->signed_url && find_signed(r, m, op) < 0)
		return -1;
	if (e2b_sandbox_open(r, m) < 0 || e2b_user_resolve(r, u) < 0)
		return -1;
	return in ? e2b_path(r, u, in, path, E2B_PATH_MAX + 1) : 0;
}

/* ---- GET /health, GET /envs ------------------------------------------------------------------ */

static void health_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	if (e2b_sandbox_open(r, m) == 0)
		aj_srv_ok(r, 204, NULL);
}

static void envs_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *p, *set;

	if (e2b_sandbox_open(r, m) < 0)
		return;
	p = json_loads(e2b_of(r)->rec.policy ? e2b_of(r)->rec.policy : "{}", 0, NULL);
	set = json_object_get(json_object_get(p, "environment"), "set");
	aj_srv_ok(r, 200, json_is_object(set) ? json_incref(set) : json_object());
	json_decref(p);
}

/* ---- GET /files ------------------------------------------------------------------------------- */

static void download_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	char path[E2B_PATH_MAX + 1];
	struct e2b_user u;
	struct aj_err err;
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;
	int fd;

	if (files_open(r, m, "read", aj_srv_query(r, "path"), &u, path) < 0)
		return;
	if (aj_fs_file_open(e2b_of(r)->ctl, path, AJ_FS_READ, 0, &f, &err) < 0) {
		if (err.errnum == ENOENT)
			e2b_fail(r, 404, "path '%s' does not exist", path);
		else if (err.errnum == ENXIO)
			e2b_fail(r, 400, "path '%s' is not a regular file", path);
		else
			e2b_fail_err(r, &err);
	} else if (!S_ISREG(f.st.st_mode)) {
		e2b_fail(r, 400, "path '%s' is a directory", path);
	} else if ((uint64_t)f.st.st_size > aj_srv_cfg(r->srv)->max_download) {
		e2b_fail(r, 413, "'%s' is %lld bytes, more than the download limit of %zu", path,
			 (long long)f.st.st_size, aj_srv_cfg(r->srv)->max_download);
	} else if ((fd = aj_fs_file_take_sendable(&f, &r->file_len, &err)) < 0) {
		e2b_fail_err(r, &err);
	} else {
		r->file_fd = fd;
	}
}

/* ---- POST /files ------------------------------------------------------------------------------ */

struct upload {
	struct aj_srv_req *r;
	const struct e2b_user *u;
	json_t *out;  /* [{path, name, type}] */
	int failed;
};

static int write_one(struct aj_srv_req *r, const char *path, const char *data, size_t len)
{
	struct aj_err err;

	if (aj_fs_write(e2b_of(r)->ctl, path, data, len, AJ_FS_WRITE, 0644, true, &err) == 0)
		return 0;
	if (err.errnum == EISDIR)
		return e2b_fail(r, 400, "path '%s' is a directory", path);
	return e2b_fail_err(r, &err);
}

static int add_written(struct upload *up, const char *path)
{
	size_t i;
	json_t *w;

	json_array_foreach(up->out, i, w) if (!strcmp(json_string_value(json_object_get(w, "path")),
						      path)) return e2b_fail(up->r, 400,
									     "you cannot upload "
									     "multiple files to the "
									     "same path '%s' in one "
									     "upload request",
									     path);
	json_array_append_new(up->out, json_pack("{s:s, s:s, s:s}", "path", path, "name",
						 strrchr(path, '/') + 1, "type", "file"));
	return 0;
}

/* A part "file": written to ?path if given, else to its filename. */
static int on_part(void *arg, const struct e2b_part *p)
{
	struct upload *up = arg;
	const char *q = aj_srv_query(up->r, "path");
	char path[E2B_PATH_MAX + 1];

	if (strcmp(p->name, "file"))
		return 0;
	if (json_array_size(up->out) >= MAX_PARTS)
		return up->failed = e2b_fail(up->r, 400, "at most %d files per upload", MAX_PARTS);
	if (e2b_path(up->r, up->u, q ? q : p->filename, path, sizeof path) < 0 ||
	    add_written(up, path) < 0 || write_one(up->r, path, p->data, p->len) < 0)
		return up->failed = -1;
	return 0;
}

static int upload_raw(struct aj_srv_req *r, struct upload *up)
{
	struct e2b_req *x = e2b_of(r);
	const char *enc = evhttp_find_header(evhttp_request_get_input_headers(r->req),
					     "Content-Encoding");
	const char *q = aj_srv_query(r, "path");
	char path[E2B_PATH_MAX + 1], why[160];
	_cleanup_free_ char *plain = NULL;
	size_t plain_len = 0;

	if (!q)
		return e2b_fail(r, 400, "the path query parameter is required for a raw body upload");
	if (enc && strcasecmp(enc, "gzip") && strcasecmp(enc, "identity"))
		return e2b_fail(r, 400, "Content-Encoding %s is not supported (gzip is)", enc);
	if (enc && !strcasecmp(enc, "gzip") &&
	    e2b_gunzip(x->raw, x->raw_len, aj_srv_cfg(r->srv)->max_upload, &plain, &plain_len, why,
		       sizeof why) < 0)
		return e2b_fail(r, 400, "the gzip body: %s", why);
	if (e2b_path(r, up->u, q, path, sizeof path) < 0 || add_written(up, path) < 0)
		return -1;
	return write_one(r, path, plain ? plain : x->raw, plain ? plain_len : x->raw_len);
}

static void upload_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Content-Type");
	struct e2b_user u;
	struct upload up = {r, &u, json_array(), 0};
	char why[160];

	if (files_open(r, m, "write", NULL, &u, NULL) < 0) {
		json_decref(up.out);
		return;
	}
	if (ct && !strncasecmp(ct, "multipart/", 10)) {
		if (e2b_multipart(x->raw, x->raw_len, ct, on_part, &up, why, sizeof why) < 0 &&
		    !up.failed)
			e2b_fail(r, 400, "error parsing multipart form: %s", why);
	} else if (ct && !strncasecmp(ct, "application/octet-stream", 24)) {
		upload_raw(r, &up);
	} else {
		e2b_fail(r, 400, "unsupported content type: %s, expected multipart/form-data or "
				 "application/octet-stream", ct ? ct : "none");
	}
	if (!r->failed && json_array_size(up.out) == 0)
		e2b_fail(r, 400, "no \"file\" part in the upload");
	if (r->failed)
		json_decref(up.out);
	else
		aj_srv_ok(r, 200, up.out);
}

const struct e2b_route e2b_envd_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/health", E2B_API, NULL, health_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/envs", E2B_API, NULL, envs_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/files", E2B_API, NULL, download_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/files", E2B_API, NULL, upload_work, NULL),
	E2B_ROUTES_END,
};
