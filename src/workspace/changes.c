#include "workspace/changes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "storage/quota.h"
#include "workspace/diff.h"

static bool valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 16)
		return false;
	for (const char *c = id; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

static int write_meta(const struct aj_changeset *cs, struct aj_err *err)
{
	char path[4200], tmp[4300];
	_cleanup_json_ json_t *m = json_pack("{s:s, s:I, s:i}", "workspace", cs->workspace,
					     "created_ms", (json_int_t)cs->created_ms, "exit_code",
					     cs->exit_code);

	snprintf(path, sizeof path, "%s/meta.json", cs->dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (json_dump_file(m, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", path);
	return 0;
}

/* The new change set's upper, work and meta.json. */
static int fill_new(struct aj_changeset *cs, const struct stat *ws, struct aj_err *err)
{
	char path[4300];

	/* The upper layer stores host ids, like the directory it lies on: owned by its owner. */
	snprintf(path, sizeof path, "%s/upper", cs->dir);
	if (mkdir(path, ws->st_mode & 07777) < 0 ||
	    (geteuid() == 0 && chown(path, ws->st_uid, ws->st_gid) < 0))
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", path);
	snprintf(path, sizeof path, "%s/work", cs->dir);
	if (mkdir(path, 0700) < 0 || (geteuid() == 0 && chown(path, ws->st_uid, ws->st_gid) < 0))
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", path);
	return write_meta(cs, err);
}

int aj_changes_create(const char *state, const char *workspace, uint64_t disk,
		      struct aj_changeset *cs, struct aj_err *err)
{
	char path[4300];
	struct stat st;
	bool limited;

	memset(cs, 0, sizeof *cs);
	if (aj_random_hex(cs->id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "getrandom");
	snprintf(cs->dir, sizeof cs->dir, "%s/changes/%s", state, cs->id);
	snprintf(cs->workspace, sizeof cs->workspace, "%s", workspace);
	cs->created_ms = (int64_t)aj_now_realtime_ms();
	cs->exit_code = -1;
	if (stat(workspace, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", workspace);
	snprintf(path, sizeof path, "%s/changes", state);
	if (aj_mkdir_p(path, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", path);
	if (aj_quota_mkdir(cs->dir, 0700, disk, &limited, err) < 0)
		return -1;
	if (fill_new(cs, &st, err) < 0) {
		aj_quota_remove(cs->dir, NULL);
		return -1;
	}
	return 0;
}

int aj_changes_open(const char *state, const char *id, struct aj_changeset *cs,
		    struct aj_err *err)
{
	char path[4300];
	json_error_t jerr;
	_cleanup_json_ json_t *m = NULL;
	const char *ws = NULL;
	json_int_t created = 0, code = -1;

	memset(cs, 0, sizeof *cs);
	if (!valid_id(id))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "\"%s\" is not a change set id", id);
	snprintf(cs->id, sizeof cs->id, "%s", id);
	snprintf(cs->dir, sizeof cs->dir, "%s/changes/%s", state, id);
	snprintf(path, sizeof path, "%s/meta.json", cs->dir);
	m = json_load_file(path, 0, &jerr);
	if (!m) {
		aj_err_set(err, AJ_LAYER_STATE, ENOENT, "no change set \"%s\"", id);
		return aj_err_class(err, AJ_ERRC_NOT_FOUND);
	}
	if (json_unpack(m, "{s:s, s?I, s?I}", "workspace", &ws, "created_ms", &created,
			"exit_code", &code) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO, "\"%s\" is damaged", path);
	snprintf(cs->workspace, sizeof cs->workspace, "%s", ws);
	cs->created_ms = created;
	cs->exit_code = (int)code;
	return 0;
}

int aj_changes_set_exit(struct aj_changeset *cs, int exit_code, struct aj_err *err)
{
	cs->exit_code = exit_code;
	return write_meta(cs, err);
}

struct count_arg {
	int (*fn)(void *arg, char kind, const char *path);
	void *arg;
	struct aj_change_counts *counts;
};

static int count_one(void *varg, char kind, const char *path)
{
	struct count_arg *a = varg;

	if (a->counts) {
		a->counts->added += kind == 'A';
		a->counts->modified += kind == 'M';
		a->counts->deleted += kind == 'D';
	}
	return a->fn ? a->fn(a->arg, kind, path) : 0;
}

int aj_changes_diff(const struct aj_changeset *cs,
		    int (*fn)(void *arg, char kind, const char *path), void *arg,
		    struct aj_change_counts *counts, struct aj_err *err)
{
	char upper[4200];
	_cleanup_strv_ struct aj_strv lowers = AJ_STRV_INIT;
	struct count_arg a = {fn, arg, counts};

	if (counts)
		memset(counts, 0, sizeof *counts);
	snprintf(upper, sizeof upper, "%s/upper", cs->dir);
	aj_strv_push(&lowers, cs->workspace);
	return aj_ws_diff(upper, &lowers, count_one, &a, err);
}

static int open_sub(int dir, const char *name)
{
	return dir < 0 ? -1 : openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Drops commondir from a git directory of the change set unless the workspace has one
 * already: it would point the host's git at a config and hooks the sandbox wrote (see
 * supervisor/gitwatch.c). */
static void drop_commondir(int up_git, int ws_git, const char *label, const struct aj_warn *warn)
{
	struct stat st;

	if (up_git < 0 || fstatat(up_git, "commondir", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (ws_git >= 0 && fstatat(ws_git, "commondir", &st, AT_SYMLINK_NOFOLLOW) == 0))
		return;
	if (aj_tree_remove_at(up_git, "commondir", NULL) == 0)
		aj_warn(warn,
			"not applying %s/commondir made inside the sandbox (it would redirect git "
			"on the host)",
			label);
}

static void drop_git_redirects(int upper, int ws, const struct aj_warn *warn)
{
	_cleanup_close_ int up_git = open_sub(upper, ".git"), ws_git = open_sub(ws, ".git");
	_cleanup_closedir_ DIR *d = aj_fdopendir(open_sub(up_git, "modules"));
	struct dirent *e;

	drop_commondir(up_git, ws_git, ".git", warn);
	while (d && (e = readdir(d))) {
		char label[300];
		_cleanup_close_ int ws_mods = open_sub(ws_git, "modules");
		_cleanup_close_ int up_m = -1, ws_m = -1;
		if (e->d_name[0] == '.')
			continue;
		up_m = open_sub(dirfd(d), e->d_name);
		ws_m = open_sub(ws_mods, e->d_name);
		snprintf(label, sizeof label, ".git/modules/%.255s", e->d_name);
		drop_commondir(up_m, ws_m, label, warn);
	}
}

int aj_changes_apply(const struct aj_changeset *cs, const struct aj_warn *warn,
		     struct aj_err *err)
{
	char upper[4200];
	_cleanup_close_ int src = -1, dst = -1;

	snprintf(upper, sizeof upper, "%s/upper", cs->dir);
	src = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", upper);
	dst = open(cs->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dst < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", cs->workspace);
	drop_git_redirects(src, dst, warn);
	if (aj_tree_merge(src, dst, NULL, err) < 0)
		return aj_err_prefix(err, "apply change set %s to \"%s\"", cs->id, cs->workspace);
	return aj_changes_discard(cs, err);
}

int aj_changes_discard(const struct aj_changeset *cs, struct aj_err *err)
{
	char parent[4200];
	_cleanup_close_ int fd = -1;

	snprintf(parent, sizeof parent, "%s", cs->dir);
	*strrchr(parent, '/') = '\0';
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", parent);
	return aj_quota_remove_at(fd, cs->id, err);
}

int aj_changes_list(const char *state, int (*fn)(void *arg, const struct aj_changeset *cs),
		    void *arg, struct aj_err *err)
{
	char path[4200];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	snprintf(path, sizeof path, "%s/changes", state);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	while (r == 0 && (e = readdir(d))) {
		struct aj_changeset cs;
		if (!valid_id(e->d_name) || aj_changes_open(state, e->d_name, &cs, NULL) < 0)
			continue;
		r = fn(arg, &cs);
	}
	return r;
}
