/* envd's filesystem.Filesystem unary calls (docs/e2b-protocol.md 8): Stat, MakeDir, Move,
 * ListDir, Remove, through the sandbox's boundary (control/fsops.h): init resolves, opens,
 * creates, renames and removes every path inside the sandbox as the sandbox user, and the
 * daemon only looks at descriptors init handed out (fstat, readlinkat, readdir). WatchDir and
 * the watcher calls are in watch.c. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/strv.h"
#include "control/fsops.h"
#include "e2b/internal.h"

#define MAX_ENTRIES 10000
#define MAX_DEPTH 64

struct fsctx {
	struct e2b_user u;
	char path[E2B_PATH_MAX + 1];
};

/* The calls' messages (strings borrowed from the request's). */
struct fs_msg {
	const char *path, *source, *destination;
	uint64_t depth; /* ListDir: 0 is 1 */
};

#define FS_PATH(n, m) E2B_PATH_ROW(n, struct fs_msg, m)
#define FS_END {.name = NULL}

static const struct aj_jf_field path_fields[] = {FS_PATH("path", path), FS_END};
static const struct aj_jf_field move_fields[] = {
	FS_PATH("destination", destination),
	FS_PATH("source", source),
	FS_END,
};
static const struct aj_jf_field listdir_fields[] = {
	{.name = "depth", .type = AJ_JF_ANY, .off = offsetof(struct fs_msg, depth),
	 .max = UINT32_MAX, .parse = e2b_pb_uint_parse, .refusal = "expected an unsigned integer"},
	FS_PATH("path", path),
	FS_END,
};

/* The sandbox, its user and the path `in` as the sandbox's. */
static int fs_open(struct aj_srv_req *r, struct aj_mgr *m, const char *in, struct fsctx *c)
{
	if (e2b_sandbox_open(r, m) < 0 || e2b_user_resolve(r, &c->u) < 0)
		return -1;
	return e2b_path(r, &c->u, in, c->path, sizeof c->path);
}

/* The message read with fields, then the sandbox and the path. */
static int fs_open_msg(struct aj_srv_req *r, struct aj_mgr *m, const struct aj_jf_field *fields,
		       struct fs_msg *msg, struct fsctx *c)
{
	if (e2b_read_msg(r, fields, msg) < 0)
		return -1;
	return fs_open(r, m, msg->path, c);
}

static int fail_path(struct aj_srv_req *r, const struct aj_err *err, const char *path)
{
	if (err->errnum == ENOENT)
		return e2b_rpc_fail(r, "not_found", "file '%s' does not exist", path);
	return e2b_fail_err(r, err);
}

/* A symlink's target as an absolute path, as envd reports it: relative to the link's
 * directory, cleaned. */
static void link_target(const char *path, const char *text, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	char *seg[E2B_PATH_MAX / 2], *save = NULL, *tok, buf[2 * E2B_PATH_MAX + 4];
	size_t n = 0, o = 0;

	if (text[0] == '/')
		snprintf(buf, sizeof buf, "%s", text);
	else
		snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash ? slash - path : 0), path, text);
	for (tok = strtok_r(buf, "/", &save); tok && n < E2B_PATH_MAX / 2;
	     tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "..") && n)
			n--;
		else if (strcmp(tok, ".") && strcmp(tok, ".."))
			seg[n++] = tok;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n && o < len; i++) {
		/* cppcheck-suppress uninitvar ; seg[0, n) were all set above */
		o += (size_t)snprintf(out + o, len - o, "/%s", seg[i]);
	}
	if (!n)
		snprintf(out, len, "/");
}

/* EntryInfo of an entry whose lstat is st (text: a symlink's text); the target of a symlink is
 * stat'ed through init, so it is the sandbox's view that decides what it points to. */
static json_t *entry(int ctl, const char *path, const struct stat *st, const char *text,
		     const struct e2b_user *u)
{
	char target[E2B_PATH_MAX + 1];
	struct stat tst;
	bool have = false;

	if (S_ISLNK(st->st_mode) && text) {
		link_target(path, text, target, sizeof target);
		have = aj_fs_stat(ctl, path, true, &tst, NULL) == 0;
	}
	return e2b_entry_json(path, st, S_ISLNK(st->st_mode) && text ? target : NULL,
			      have ? &tst : NULL, u);
}

/* lstat of a path inside, with a symlink's text. */
static int lstat_entry(struct aj_srv_req *r, const struct fsctx *c, json_t **out)
{
	int ctl = e2b_of(r)->ctl;
	struct aj_err err;
	char text[E2B_PATH_MAX + 1];
	struct stat st;

	if (aj_fs_stat_link(ctl, c->path, false, &st, text, sizeof text, &err) < 0)
		return fail_path(r, &err, c->path);
	*out = entry(ctl, c->path, &st, S_ISLNK(st.st_mode) && text[0] ? text : NULL, &c->u);
	return 0;
}

/* ---- Stat, MakeDir, Move, Remove ----------------------------------------------------------- */

static void stat_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct fs_msg msg = {0};
	struct fsctx c;
	json_t *e = NULL;

	if (fs_open_msg(r, m, path_fields, &msg, &c) == 0 && lstat_entry(r, &c, &e) == 0)
		aj_srv_ok(r, 200, json_pack("{s:o}", "entry", e));
}

static void mkdir_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct fs_msg msg = {0};
	struct fsctx c;
	struct stat st;
	struct aj_err err;
	json_t *e = NULL;

	if (fs_open_msg(r, m, path_fields, &msg, &c) < 0)
		return;
	if (aj_fs_stat(e2b_of(r)->ctl, c.path, false, &st, NULL) == 0) {
		if (S_ISDIR(st.st_mode))
			e2b_rpc_fail(r, "already_exists", "directory '%s' already exists", c.path);
		else
			e2b_rpc_fail(r, "invalid_argument", "path '%s' exists and is not a directory",
				     c.path);
		return;
	}
	if (aj_fs_mkdir(e2b_of(r)->ctl, c.path, true, &err) < 0)
		e2b_fail_err(r, &err);
	else if (lstat_entry(r, &c, &e) == 0)
		aj_srv_ok(r, 200, json_pack("{s:o}", "entry", e));
}

static int make_parent(struct aj_srv_req *r, const char *path)
{
	char dir[E2B_PATH_MAX + 1], *slash;
	struct aj_err err;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	return aj_fs_mkdir(e2b_of(r)->ctl, dir, true, &err) < 0 ? e2b_fail_err(r, &err) : 0;
}

static void move_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct fs_msg msg = {0};
	struct fsctx from, to;
	struct stat st;
	struct aj_err err;
	json_t *e = NULL;

	if (e2b_read_msg(r, move_fields, &msg) < 0 || fs_open(r, m, msg.source, &from) < 0)
		return;
	to.u = from.u;
	if (e2b_path(r, &to.u, msg.destination, to.path, sizeof to.path) < 0)
		return;
	if (aj_fs_stat(e2b_of(r)->ctl, from.path, false, &st, &err) < 0) {
		fail_path(r, &err, from.path);
		return;
	}
	if (make_parent(r, to.path) < 0)
		return;
	if (aj_fs_rename(e2b_of(r)->ctl, from.path, to.path, &err) < 0)
		fail_path(r, &err, from.path);
	else if (lstat_entry(r, &to, &e) == 0)
		aj_srv_ok(r, 200, json_pack("{s:o}", "entry", e));
}

/* rm -rf: a missing path is success, as envd's. */
static void remove_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct fs_msg msg = {0};
	struct fsctx c;
	struct aj_err err;

	if (fs_open_msg(r, m, path_fields, &msg, &c) < 0)
		return;
	if (aj_fs_remove(e2b_of(r)->ctl, c.path, true, &err) < 0 && err.errnum != ENOENT)
		e2b_fail_err(r, &err);
	else
		aj_srv_ok(r, 200, json_object());
}

/* ---- ListDir -------------------------------------------------------------------------------- */

struct listing {
	struct aj_srv_req *r;
	const struct fsctx *c;
	const char *dir;
	json_t *entries;
	struct aj_strv *subdirs; /* of this directory, listed after it */
	bool full;
};

static int on_entry(void *arg, const struct aj_fs_entry *e)
{
	struct listing *l = arg;
	char path[E2B_PATH_MAX + 1];

	if (json_array_size(l->entries) >= MAX_ENTRIES) {
		l->full = true;
		return 1;
	}
	if ((size_t)snprintf(path, sizeof path, "%s%s%s", l->dir, strcmp(l->dir, "/") ? "/" : "",
			     e->name) >= sizeof path)
		return 0;
	json_array_append_new(l->entries, entry(e2b_of(l->r)->ctl, path, &e->st, e->link, &l->c->u));
	/* Symlinks are not followed below the root, as envd's walk. */
	if (S_ISDIR(e->st.st_mode))
		aj_strv_push(l->subdirs, path);
	return 0;
}

/* Lists dir into entries and its subdirectories down to `depth` levels; the first call's
 * error is the request's (a missing or non-directory root). */
static int list_dir(struct aj_srv_req *r, const struct fsctx *c, const char *dir, unsigned depth,
		    json_t *entries, bool *full)
{
	_cleanup_strv_ struct aj_strv subdirs = AJ_STRV_INIT;
	struct listing l = {r, c, dir, entries, &subdirs, false};
	struct aj_err err;
	int rc = aj_fs_list(e2b_of(r)->ctl, dir, on_entry, &l, &err);

	if (rc < 0 && dir == c->path)
		return err.errnum == ENOTDIR ? e2b_rpc_fail(r, "invalid_argument",
							    "path '%s' is not a directory", dir)
					     : fail_path(r, &err, dir);
	*full = *full || l.full;
	for (size_t i = 0; depth > 1 && !*full && i < subdirs.n; i++)
		list_dir(r, c, subdirs.v[i], depth - 1, entries, full);
	return 0;
}

static void listdir_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct fs_msg msg = {0};
	unsigned depth;
	json_t *entries;
	struct fsctx c;
	bool full = false;

	if (fs_open_msg(r, m, listdir_fields, &msg, &c) < 0)
		return;
	depth = msg.depth ? (unsigned)(msg.depth > MAX_DEPTH ? MAX_DEPTH : msg.depth) : 1;
	entries = json_array();
	if (list_dir(r, &c, c.path, depth, entries, &full) < 0)
		json_decref(entries);
	else if (full) {
		json_decref(entries);
		e2b_rpc_fail(r, "failed_precondition",
			     "'%s' has more than %d entries to depth %u; list less deep", c.path,
			     MAX_ENTRIES, depth);
	} else
		aj_srv_ok(r, 200, json_pack("{s:o}", "entries", entries));
}

const struct e2b_route e2b_fs_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/Stat", E2B_UNARY, NULL, stat_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/MakeDir", E2B_UNARY, NULL, mkdir_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/Move", E2B_UNARY, NULL, move_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/ListDir", E2B_UNARY, NULL, listdir_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/Remove", E2B_UNARY, NULL, remove_work, NULL),
	E2B_ROUTES_END,
};
