/* Files inside a running sandbox, through its boundary (control/fsops.h): every path is
 * resolved by the sandbox's init, as the sandbox user, under its mount tree and Landlock
 * rules, so ".." and symlinks resolve inside the sandbox and never reach a host file. The
 * daemon only reads and writes the descriptors init opened. A relative path is taken against
 * the sandbox's working directory (the policy's cwd, else its workspace); ".." in it is passed
 * through for init to resolve.
 *
 * Downloads are sent from init's descriptor with sendfile; directories answer 400
 * "is_a_directory" (list them with files/list). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control/fsops.h"
#include "server/internal.h"

#define MAX_PATH 4095
#define MAX_ENTRIES 10000

/* ---- paths ------------------------------------------------------------------------------- */

static int check_path(struct aj_srv_req *r, const char *field, const char *v)
{
	if (!v || !v[0])
		return aj_srv_fail(r, 400, "missing_field", field, "%s: required", field);
	if (strlen(v) > MAX_PATH)
		return aj_srv_fail(r, 400, "invalid_value", field, "%s: longer than %d bytes",
				   field, MAX_PATH);
	return 0;
}

/* The working directory of the stored policy: "cwd", else the workspace's mount point. */
static void sandbox_cwd(const struct aj_sandbox_rec *rec, char *out, size_t len)
{
	json_t *p = json_loads(rec->policy ? rec->policy : "{}", 0, NULL);
	const char *cwd = json_string_value(json_object_get(p, "cwd"));

	if (!cwd)
		cwd = json_string_value(json_object_get(json_object_get(p, "filesystem"), "workspace"));
	snprintf(out, len, "%s", cwd && cwd[0] == '/' ? cwd : "/");
	json_decref(p);
}

static int resolve(struct aj_srv_req *r, const struct aj_sandbox_rec *rec, const char *field,
		   const char *in, char *out, size_t len)
{
	char cwd[MAX_PATH + 1];

	if (in[0] == '/') {
		snprintf(out, len, "%s", in);
		return 0;
	}
	sandbox_cwd(rec, cwd, sizeof cwd);
	if (strlen(cwd) + 1 + strlen(in) > MAX_PATH)
		return aj_srv_fail(r, 400, "invalid_value", field,
				   "%s: longer than %d bytes once joined to the working directory",
				   field, MAX_PATH);
	snprintf(out, len, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", in);
	return 0;
}

/* A route's connection to the sandbox's supervisor and its record, held from open_ctx() to
 * the end of the route's function (the cleanup attribute FCTX). */
struct fctx {
	int ctl; /* -1: nothing held */
	struct aj_sandbox_rec rec;
	char path[MAX_PATH + 1];
};

static void close_ctx(struct fctx *x)
{
	if (x->ctl < 0)
		return;
	close(aj_steal_fd(&x->ctl));
	aj_sandbox_rec_free(&x->rec);
}

#define FCTX __attribute__((cleanup(close_ctx))) struct fctx

/* Connects to the sandbox's supervisor and resolves the request's path (query or body
 * field); -1 with the request failed. */
static int open_ctx(struct aj_srv_req *r, struct aj_mgr *m, const char *field, const char *in,
		    struct fctx *x)
{
	struct aj_err err;

	x->ctl = aj_mgr_connect(m, r->ref, &x->rec, &err);
	if (x->ctl < 0)
		return aj_srv_fail_err(r, &err, NULL);
	return resolve(r, &x->rec, field, in, x->path, sizeof x->path);
}

static int parse_mode(struct aj_srv_req *r, const char *field, const char *v, int *out)
{
	char *end;
	long n;

	if (!v)
		return 0;
	n = strtol(v, &end, 8);
	if (!v[0] || *end || n < 0 || n > 0777)
		return aj_srv_fail(r, 400, "invalid_value", field,
				   "%s: expected octal permissions from 0 to 0777, such as \"0644\"",
				   field);
	*out = (int)n;
	return 0;
}

static json_t *stat_json(const char *name_key, const char *name, const struct stat *st,
			 const char *link)
{
	char mode[8];

	snprintf(mode, sizeof mode, "%04o", (unsigned)(st->st_mode & 07777));
	return json_pack("{s:s, s:s, s:I, s:s, s:o, s:s?}", name_key, name, "type",
			 aj_fs_type_name(st->st_mode), "size", (json_int_t)st->st_size, "mode",
			 mode, "mtime",
			 aj_srv_time_json((int64_t)st->st_mtim.tv_sec * 1000 +
					  st->st_mtim.tv_nsec / 1000000),
			 "link", link);
}

/* ---- GET, PUT, DELETE .../files ---------------------------------------------------------- */

/* The query parameters of every file route, checked before any worker connects. */
static int path_query_prepare(struct aj_srv_req *r)
{
	bool b = false;
	int mode = 0;

	if (check_path(r, "path", aj_srv_query(r, "path")) < 0 ||
	    aj_srv_query_bool(r, "parents", &b) < 0 || aj_srv_query_bool(r, "recursive", &b) < 0 ||
	    aj_srv_query_bool(r, "follow", &b) < 0)
		return -1;
	return parse_mode(r, "mode", aj_srv_query(r, "mode"), &mode);
}

/* One round trip to init: it opens regular files and directories only (a FIFO would make it
 * wait for a writer; it answers ENXIO instead), and the descriptor tells which it was. */
static void read_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	FCTX x = {.ctl = -1};
	struct aj_err err;
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;
	int fd;

	if (open_ctx(r, m, "path", aj_srv_query(r, "path"), &x) < 0)
		return;
	if (aj_fs_file_open(x.ctl, x.path, AJ_FS_READ, 0, &f, &err) < 0) {
		aj_srv_fail_err(r, &err, "path");
	} else if (!S_ISREG(f.st.st_mode)) {
		if (S_ISDIR(f.st.st_mode))
			aj_srv_fail(r, 400, "is_a_directory", "path",
				    "\"%s\" is a directory; list it with GET .../files/list", x.path);
		else
			aj_srv_fail(r, 400, "not_a_regular_file", "path",
				    "\"%s\" is not a regular file", x.path);
	} else if ((uint64_t)f.st.st_size > r->srv->cfg->max_download) {
		aj_srv_fail(r, 413, "too_large", "path",
			    "\"%s\" is %lld bytes, more than the download limit of %zu", x.path,
			    (long long)f.st.st_size, r->srv->cfg->max_download);
	} else if ((fd = aj_fs_file_take_sendable(&f, &r->file_len, &err)) < 0) {
		aj_srv_fail_err(r, &err, "path");
	} else {
		r->file_fd = fd;
	}
}

static void write_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	bool parents = false, existed;
	int mode = 0644;
	FCTX x = {.ctl = -1};
	struct stat st;
	struct aj_err err;

	if (aj_srv_query_bool(r, "parents", &parents) < 0 ||
	    parse_mode(r, "mode", aj_srv_query(r, "mode"), &mode) < 0 ||
	    open_ctx(r, m, "path", aj_srv_query(r, "path"), &x) < 0)
		return;
	existed = aj_fs_stat(x.ctl, x.path, true, &st, &err) == 0;
	if (aj_fs_write(x.ctl, x.path, r->raw, r->raw_len, AJ_FS_WRITE, mode, parents, &err) < 0)
		aj_srv_fail_err(r, &err, "path");
	else
		aj_srv_ok(r, existed ? 200 : 201, json_pack("{s:s, s:I}", "path", x.path, "size",
							    (json_int_t)r->raw_len));
}

static void remove_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	bool recursive = false;
	FCTX x = {.ctl = -1};
	struct aj_err err;

	if (aj_srv_query_bool(r, "recursive", &recursive) < 0 ||
	    open_ctx(r, m, "path", aj_srv_query(r, "path"), &x) < 0)
		return;
	if (aj_fs_remove(x.ctl, x.path, recursive, &err) < 0)
		aj_srv_fail_err(r, &err, "path");
	else
		aj_srv_ok(r, 204, NULL);
}

/* ---- list, stat ------------------------------------------------------------------------- */

struct listing {
	json_t *entries;
	bool truncated;
};

static int add_entry(void *arg, const struct aj_fs_entry *e)
{
	struct listing *l = arg;

	if (json_array_size(l->entries) >= MAX_ENTRIES) {
		l->truncated = true;
		return 1;
	}
	json_array_append_new(l->entries, stat_json("name", e->name, &e->st, e->link));
	return 0;
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct listing l = {NULL, false};
	FCTX x = {.ctl = -1};
	struct aj_err err;

	if (open_ctx(r, m, "path", aj_srv_query(r, "path"), &x) < 0)
		return;
	l.entries = json_array();
	if (aj_fs_list(x.ctl, x.path, add_entry, &l, &err) < 0) {
		json_decref(l.entries);
		aj_srv_fail_err(r, &err, "path");
	} else {
		aj_srv_ok(r, 200, json_pack("{s:s, s:o, s:b}", "path", x.path, "entries", l.entries,
					    "truncated", l.truncated));
	}
}

static void stat_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	bool follow = false;
	char link[MAX_PATH + 1];
	FCTX x = {.ctl = -1};
	struct stat st;
	struct aj_err err;

	if (aj_srv_query_bool(r, "follow", &follow) < 0 ||
	    open_ctx(r, m, "path", aj_srv_query(r, "path"), &x) < 0)
		return;
	/* The link's own text, read by init: nothing is followed. */
	if (aj_fs_stat_link(x.ctl, x.path, follow, &st, link, sizeof link, &err) < 0)
		aj_srv_fail_err(r, &err, "path");
	else
		aj_srv_ok(r, 200, stat_json("path", x.path, &st, S_ISLNK(st.st_mode) && link[0] ? link : NULL));
}

/* ---- mkdir, move ------------------------------------------------------------------------ */

static const struct aj_jf_field mkdir_fields[] = {
	AJ_SRV_STRING("path", AJ_JF_REQUIRED),
	AJ_SRV_BOOL("parents", 0),
	AJ_SRV_STRING("mode", 0),
	AJ_SRV_FIELDS_END,
};

static int mkdir_prepare(struct aj_srv_req *r)
{
	int mode = 0755;

	if (!r->body)
		r->body = json_object();
	if (aj_srv_check_fields(r, mkdir_fields) < 0 || check_path(r, "path", aj_srv_str(r, "path")) < 0)
		return -1;
	return parse_mode(r, "mode", aj_srv_str(r, "mode"), &mode);
}

static void mkdir_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	int mode = 0755;
	FCTX x = {.ctl = -1};
	struct aj_err err;

	parse_mode(r, "mode", aj_srv_str(r, "mode"), &mode);
	if (open_ctx(r, m, "path", aj_srv_str(r, "path"), &x) < 0)
		return;
	if (aj_fs_mkdir_mode(x.ctl, x.path, json_is_true(json_object_get(r->body, "parents")), mode,
			     &err) < 0)
		aj_srv_fail_err(r, &err, "path");
	else
		aj_srv_ok(r, 201, json_pack("{s:s}", "path", x.path));
}

static const struct aj_jf_field move_fields[] = {
	AJ_SRV_STRING("from", AJ_JF_REQUIRED),
	AJ_SRV_STRING("to", AJ_JF_REQUIRED),
	AJ_SRV_FIELDS_END,
};

static int move_prepare(struct aj_srv_req *r)
{
	if (!r->body)
		r->body = json_object();
	if (aj_srv_check_fields(r, move_fields) < 0)
		return -1;
	return check_path(r, "from", aj_srv_str(r, "from")) < 0 ||
			       check_path(r, "to", aj_srv_str(r, "to")) < 0
		       ? -1
		       : 0;
}

static void move_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	char to[MAX_PATH + 1];
	FCTX x = {.ctl = -1};
	struct aj_err err;

	if (open_ctx(r, m, "from", aj_srv_str(r, "from"), &x) < 0)
		return;
	if (resolve(r, &x.rec, "to", aj_srv_str(r, "to"), to, sizeof to) == 0) {
		if (aj_fs_rename(x.ctl, x.path, to, &err) < 0)
			aj_srv_fail_err(r, &err, "from");
		else
			aj_srv_ok(r, 200, json_pack("{s:s, s:s}", "from", x.path, "to", to));
	}
}

static const char *const read_query[] = {"path", NULL};
static const char *const write_query[] = {"path", "parents", "mode", NULL};
static const char *const remove_query[] = {"path", "recursive", NULL};
static const char *const stat_query[] = {"path", "follow", NULL};

const struct aj_srv_route aj_api_file_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/files", AJ_SRV_BODY_NONE, read_query,
	 path_query_prepare, read_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_PUT, "/v1/sandboxes/{ref}/files", AJ_SRV_BODY_RAW, write_query,
	 path_query_prepare, write_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_DELETE, "/v1/sandboxes/{ref}/files", AJ_SRV_BODY_NONE, remove_query,
	 path_query_prepare, remove_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/files/list", AJ_SRV_BODY_NONE, read_query,
	 path_query_prepare, list_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/files/stat", AJ_SRV_BODY_NONE, stat_query,
	 path_query_prepare, stat_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/files/mkdir", AJ_SRV_BODY_JSON, NULL, mkdir_prepare,
	 mkdir_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/files/move", AJ_SRV_BODY_JSON, NULL, move_prepare,
	 move_work, NULL),
	AJ_SRV_ROUTES_END,
};
