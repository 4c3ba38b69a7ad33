#include "workspace/layers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"

int aj_ws_path(char *buf, size_t len, const char *state, const char *kind, const char *id,
	       const char *sub)
{
	int n = snprintf(buf, len, "%s/%s/%s%s%s", state, kind, id, sub ? "/" : "", sub ? sub : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int open_dir(const char *path, struct aj_err *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	return fd;
}

static int make_owned_dir(const char *path, mode_t mode, uid_t uid, gid_t gid,
			  struct aj_err *err)
{
	if (mkdir(path, mode) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", path);
	if (geteuid() == 0 && chown(path, uid, gid) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "chown \"%s\"", path);
	if (chmod(path, mode) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "chmod \"%s\"", path);
	return 0;
}

int aj_ws_sandbox_create(const char *state, const char *id, uid_t uid, gid_t gid,
			 struct aj_err *err)
{
	char dir[4096], upper[4200], work[4200];

	if (aj_ws_path(dir, sizeof dir, state, "sandboxes", id, NULL) < 0 ||
	    aj_ws_path(upper, sizeof upper, state, "sandboxes", id, "upper") < 0 ||
	    aj_ws_path(work, sizeof work, state, "sandboxes", id, "work") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", dir);
	if (make_owned_dir(upper, 0755, uid, gid, err) < 0 ||
	    make_owned_dir(work, 0700, 0, 0, err) < 0)
		return -1;
	return 0;
}

static int remove_path(const char *path, struct aj_err *err)
{
	char parent[4096];
	char *slash;
	_cleanup_close_ int fd = -1;

	snprintf(parent, sizeof parent, "%s", path);
	slash = strrchr(parent, '/');
	if (!slash)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL, "remove \"%s\"", path);
	*slash = '\0';
	fd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", parent);
	return aj_tree_remove_at(fd, slash + 1, err);
}

int aj_ws_sandbox_remove(const char *state, const char *id, struct aj_err *err)
{
	char dir[4096];

	if (aj_ws_path(dir, sizeof dir, state, "sandboxes", id, NULL) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	return remove_path(dir, err);
}

/* Writes a layer into layers/.tmp-<id> with `fill`, then renames it into place. */
static int publish_layer(const char *state, const char *layer_id,
			 int (*fill)(int dst, void *arg, struct aj_err *err), void *arg,
			 struct aj_err *err)
{
	char layers[4096], tmp[4200], final[4200];
	_cleanup_close_ int dst = -1;

	snprintf(layers, sizeof layers, "%s/layers", state);
	snprintf(tmp, sizeof tmp, "%s/.tmp-%s", layers, layer_id);
	snprintf(final, sizeof final, "%s/%s", layers, layer_id);
	if (aj_mkdir_p(layers, 0700) < 0 || mkdir(tmp, 0755) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", tmp);
	dst = open_dir(tmp, err);
	if (dst < 0 || fill(dst, arg, err) < 0 || fsync(dst) < 0 || rename(tmp, final) < 0) {
		if (!err->msg[0])
			aj_err_sys(err, AJ_LAYER_STATE, "publish layer \"%s\"", final);
		remove_path(tmp, NULL);
		return -1;
	}
	return 0;
}

struct copy_arg {
	int src;
	uint64_t *bytes;
};

static int fill_copy(int dst, void *arg, struct aj_err *err)
{
	struct copy_arg *a = arg;
	struct stat st;

	/* The layer's root carries the upper's owner and mode: it becomes the merged root. */
	if (fstat(a->src, &st) == 0) {
		if (fchown(dst, st.st_uid, st.st_gid) < 0 && errno != EPERM)
			return aj_err_sys(err, AJ_LAYER_STATE, "chown layer root");
		fchmod(dst, st.st_mode & 07777);
	}
	return aj_tree_copy(a->src, dst, a->bytes, err);
}

int aj_ws_layer_from_upper(const char *state, const char *sandbox_id, const char *layer_id,
			   bool move, uid_t uid, gid_t gid, uint64_t *bytes, struct aj_err *err)
{
	char upper[4096], final[4200];
	_cleanup_close_ int src = -1;
	struct copy_arg a;

	if (aj_ws_path(upper, sizeof upper, state, "sandboxes", sandbox_id, "upper") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	if (move) {
		/* layers/ itself may not exist yet: the state directory's first snapshot. */
		snprintf(final, sizeof final, "%s/layers", state);
		if (aj_mkdir_p(final, 0700) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", final);
		snprintf(final, sizeof final, "%s/layers/%s", state, layer_id);
		if (
		    (mkdir(final, 0700) < 0 && errno != EEXIST) || rmdir(final) < 0 ||
		    rename(upper, final) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "move \"%s\" to \"%s\"", upper, final);
		if (bytes) {
			_cleanup_close_ int fd = open_dir(final, NULL);
			if (fd >= 0)
				aj_tree_size(fd, bytes, NULL);
		}
		return make_owned_dir(upper, 0755, uid, gid, err);
	}
	src = open_dir(upper, err);
	if (src < 0)
		return -1;
	a.src = src;
	a.bytes = bytes;
	return publish_layer(state, layer_id, fill_copy, &a, err);
}

struct squash_arg {
	const char *state;
	const struct aj_strv *layers;
};

static int fill_squash(int dst, void *arg, struct aj_err *err)
{
	struct squash_arg *a = arg;
	char path[4200];

	for (size_t i = 0; i < a->layers->n; i++) {
		_cleanup_close_ int fd = -1;
		snprintf(path, sizeof path, "%s/layers/%s", a->state, a->layers->v[i]);
		fd = open_dir(path, err);
		if (fd < 0 || aj_tree_merge(fd, dst, NULL, err) < 0)
			return -1;
	}
	return 0;
}

int aj_ws_layer_squash(const char *state, const struct aj_strv *layers, const char *layer_id,
		       struct aj_err *err)
{
	struct squash_arg a = {state, layers};
	return publish_layer(state, layer_id, fill_squash, &a, err);
}

int aj_ws_layer_remove(const char *state, const char *layer_id, struct aj_err *err)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/layers/%s", state, layer_id);
	return remove_path(path, err);
}

int aj_ws_layers_clean_tmp(const char *state, struct aj_err *err)
{
	char path[4200];
	DIR *d;
	struct dirent *e;
	int r = 0;

	snprintf(path, sizeof path, "%s/layers", state);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	while (r == 0 && (e = readdir(d)))
		if (strncmp(e->d_name, ".tmp-", 5) == 0)
			r = aj_tree_remove_at(dirfd(d), e->d_name, err);
	closedir(d);
	return r;
}

/* ---- locks, repair, leftovers ---------------------------------------------------------- */

int aj_ws_lock_path(const char *path, bool make_parent, bool wait, struct aj_err *err)
{
	char parent[4200];
	char *slash;

	snprintf(parent, sizeof parent, "%s", path);
	slash = strrchr(parent, '/');
	if (slash)
		*slash = '\0';
	/* Bounded: each retry means another holder removed the file while we waited. */
	for (int tries = 0; tries < 64; tries++) {
		struct stat held, named;
		int fd, r;

		if (make_parent && slash && aj_mkdir_p(parent, 0700) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", parent);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
		while ((r = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
			;
		if (r < 0) {
			aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s\"", path);
			close(fd);
			return -1;
		}
		/* The lock counts only if the path still names the locked file: a holder unlinks
		 * it before closing, and a new file at the path is someone else's lock. */
		if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_ino == named.st_ino &&
		    held.st_dev == named.st_dev)
			return fd;
		close(fd);
	}
	return aj_err_set(err, AJ_LAYER_STATE, EAGAIN, "lock \"%s\": removed again and again",
			  path);
}

static void layer_lock_path(char *buf, size_t len, const char *state, const char *layer_id)
{
	snprintf(buf, len, "%s/layers/.lock-%s", state, layer_id);
}

int aj_ws_layer_lock(const char *state, const char *layer_id, bool wait, struct aj_err *err)
{
	char path[4200];

	layer_lock_path(path, sizeof path, state, layer_id);
	return aj_ws_lock_path(path, true, wait, err);
}

void aj_ws_layer_unlock(const char *state, const char *layer_id, int fd)
{
	char path[4200];

	if (fd < 0)
		return;
	layer_lock_path(path, sizeof path, state, layer_id);
	unlink(path); /* while still held: see aj_ws_lock_path */
	close(fd);
}

int aj_ws_sandbox_repair(const char *state, const char *id, const char *like_dir,
			 struct aj_err *err)
{
	char upper[4200], work[4200];
	struct stat st;

	if (aj_ws_path(upper, sizeof upper, state, "sandboxes", id, "upper") < 0 ||
	    aj_ws_path(work, sizeof work, state, "sandboxes", id, "work") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	if (access(upper, F_OK) < 0) {
		/* The upper that became the layer was the merged root: its owner and mode. */
		if (stat(like_dir, &st) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", like_dir);
		if (make_owned_dir(upper, st.st_mode & 07777, st.st_uid, st.st_gid, err) < 0)
			return -1;
	}
	if (access(work, F_OK) < 0 && make_owned_dir(work, 0700, 0, 0, err) < 0)
		return -1;
	return 0;
}

bool aj_ws_sandbox_has_upper(const char *state, const char *id)
{
	char upper[4200];

	return aj_ws_path(upper, sizeof upper, state, "sandboxes", id, "upper") == 0 &&
	       access(upper, F_OK) == 0;
}

/* Adds the id a layers/ or sandboxes/ entry is named after (16 hex digits, after `prefix`). */
static void push_id(struct aj_strv *ids, const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);

	if (strncmp(name, prefix, pl) != 0 || strlen(name + pl) != 16 ||
	    strspn(name + pl, "0123456789abcdef") != 16 || aj_strv_contains(ids, name + pl))
		return;
	aj_strv_push(ids, name + pl);
}

int aj_ws_dir_ids(const char *state, const char *kind, struct aj_strv *ids, struct aj_err *err)
{
	char path[4200];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "%s/%s", state, kind);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	while ((e = readdir(d))) {
		push_id(ids, e->d_name, "");
		if (!strcmp(kind, "layers")) {
			push_id(ids, e->d_name, ".tmp-");
			push_id(ids, e->d_name, ".lock-");
		}
	}
	closedir(d);
	return 0;
}

int aj_ws_layer_discard(const char *state, const char *layer_id, struct aj_err *err)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/layers/.tmp-%s", state, layer_id);
	if (remove_path(path, err) < 0)
		return -1;
	return aj_ws_layer_remove(state, layer_id, err);
}

/* ---- in-place restore ----------------------------------------------------------------- */

int aj_ws_upper_set_aside(const char *state, const char *sandbox_id, struct aj_err *err)
{
	char upper[4200], aside[4200];
	struct stat st;

	if (aj_ws_path(upper, sizeof upper, state, "sandboxes", sandbox_id, "upper") < 0 ||
	    aj_ws_path(aside, sizeof aside, state, "sandboxes", sandbox_id, "upper.old") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	if (lstat(aside, &st) < 0) {
		if (errno != ENOENT)
			return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", aside);
		if (rename(upper, aside) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "move \"%s\" aside", upper);
		if (lstat(aside, &st) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "stat \"%s\"", aside);
	}
	if (access(upper, F_OK) == 0)
		return 0;
	/* The new upper is the merged root's top: the old one's owner and mode. */
	if (make_owned_dir(upper, st.st_mode & 07777, st.st_uid, st.st_gid, err) < 0)
		return -1;
	return 0;
}

bool aj_ws_upper_aside_exists(const char *state, const char *sandbox_id)
{
	char aside[4200];

	return aj_ws_path(aside, sizeof aside, state, "sandboxes", sandbox_id, "upper.old") == 0 &&
	       access(aside, F_OK) == 0;
}

int aj_ws_upper_drop_aside(const char *state, const char *sandbox_id, struct aj_err *err)
{
	char aside[4200];

	if (aj_ws_path(aside, sizeof aside, state, "sandboxes", sandbox_id, "upper.old") < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	return remove_path(aside, err);
}

/* ---- diff ------------------------------------------------------------------------------ */

enum lookup { L_ABSENT, L_FOUND_DIR, L_FOUND, L_WHITEOUT };

/* Looks `rel` up in one layer without following any symlink. */
static enum lookup layer_lookup(int layer, const char *rel, bool *opaque)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
					  RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, layer, rel, &how, sizeof how);
	struct stat st;
	char v[8];

	*opaque = false;
	if (fd < 0 || fstat(fd, &st) < 0)
		return L_ABSENT;
	if (aj_tree_is_whiteout((int)st.st_mode, st.st_rdev))
		return L_WHITEOUT;
	if (!S_ISDIR(st.st_mode))
		return L_FOUND;
	{
		_cleanup_close_ int dfd = (int)syscall(SYS_openat2, layer, rel,
						       &(struct open_how){.flags = O_RDONLY |
									   O_DIRECTORY |
									   O_NOFOLLOW |
									   O_CLOEXEC,
								  .resolve = how.resolve},
						       sizeof how);
		*opaque = dfd >= 0 && fgetxattr(dfd, AJ_OVL_OPAQUE_XATTR, v, sizeof v) > 0 &&
			  v[0] == 'y';
	}
	return L_FOUND_DIR;
}

struct diff_ctx {
	int *lowers; /* top first */
	size_t n;
	int (*fn)(void *arg, char kind, const char *path);
	void *arg;
	struct aj_strv out; /* "K path", sorted at the end */
};

/* Does `rel` exist in the merged lower layers? Stops at whiteouts and opaque directories. */
static bool in_lowers(struct diff_ctx *c, const char *rel)
{
	for (size_t i = 0; i < c->n; i++) {
		bool opaque;
		enum lookup l = layer_lookup(c->lowers[i], rel, &opaque);
		if (l == L_WHITEOUT)
			return false;
		if (l == L_FOUND || l == L_FOUND_DIR)
			return true;
	}
	return false;
}

static int emit(struct diff_ctx *c, char kind, const char *rel)
{
	return aj_strv_pushf(&c->out, "%c %s", kind, rel) < 0 ? -1 : 0;
}

static int diff_dir(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		    struct aj_err *err);

/* Children of a lower directory hidden by an opaque upper directory count as deleted unless
 * the upper has them again. */
static int opaque_deletions(struct diff_ctx *c, int upper_root, const char *rel)
{
	for (size_t i = 0; i < c->n; i++) {
		bool opaque;
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
		int fd;
		DIR *d;
		struct dirent *e;

		if (layer_lookup(c->lowers[i], rel, &opaque) != L_FOUND_DIR)
			continue;
		fd = (int)syscall(SYS_openat2, c->lowers[i], rel, &how, sizeof how);
		if (fd < 0 || !(d = fdopendir(fd))) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((e = readdir(d))) {
			char child[4200];
			bool o;
			if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
				continue;
			snprintf(child, sizeof child, "%s/%s", rel, e->d_name);
			if (layer_lookup(upper_root, child, &o) == L_ABSENT &&
			    !aj_strv_contains(&c->out, child))
				emit(c, 'D', child);
		}
		closedir(d);
		if (opaque)
			break;
	}
	return 0;
}

static int diff_entry(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		      bool parent_opaque, struct aj_err *err)
{
	bool opaque, existed = !parent_opaque && in_lowers(c, rel);
	enum lookup l = layer_lookup(upper_root, rel, &opaque);

	if (parent_opaque)
		existed = in_lowers(c, rel);
	if (l == L_WHITEOUT)
		return existed ? emit(c, 'D', rel) : 0;
	if (l != L_FOUND_DIR)
		return emit(c, existed ? 'M' : 'A', rel);
	if (!existed && emit(c, 'A', rel) < 0)
		return -1;
	if (existed && opaque && opaque_deletions(c, upper_root, rel) < 0)
		return -1;
	return diff_dir(c, upper_root, rel, depth + 1, err);
}

static int diff_dir(struct diff_ctx *c, int upper_root, const char *rel, int depth,
		    struct aj_err *err)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
	int fd;
	DIR *d;
	struct dirent *e;
	bool opaque = false;
	int r = 0;

	if (depth > 256)
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "workspace deeper than 256 levels");
	if (rel[0])
		layer_lookup(upper_root, rel, &opaque);
	fd = (int)syscall(SYS_openat2, upper_root, rel[0] ? rel : ".", &how, sizeof how);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\" in the upper layer", rel);
	}
	while (r == 0 && (e = readdir(d))) {
		char child[4200];
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		r = diff_entry(c, upper_root, child, depth, opaque, err);
	}
	closedir(d);
	return r;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(*(char *const *)a + 2, *(char *const *)b + 2);
}

int aj_ws_diff(const char *upper_dir, const struct aj_strv *lower_dirs,
	       int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err)
{
	struct diff_ctx c = {.n = 0, .fn = fn, .arg = arg};
	_cleanup_close_ int upper = open_dir(upper_dir, err);
	int r = -1;

	if (upper < 0)
		return -1;
	c.lowers = calloc(lower_dirs->n + 1, sizeof *c.lowers);
	if (!c.lowers)
		return aj_err_sys(err, AJ_LAYER_STATE, "diff");
	for (; c.n < lower_dirs->n; c.n++) {
		c.lowers[c.n] = open_dir(lower_dirs->v[c.n], err);
		if (c.lowers[c.n] < 0)
			goto out;
	}
	if (diff_dir(&c, upper, "", 0, err) < 0)
		goto out;
	if (c.out.n)
		qsort(c.out.v, c.out.n, sizeof *c.out.v, cmp_entry);
	r = 0;
	for (size_t i = 0; i < c.out.n && r == 0; i++)
		r = fn(arg, c.out.v[i][0], c.out.v[i] + 2);
out:
	for (size_t i = 0; i < c.n; i++)
		close(c.lowers[i]);
	free(c.lowers);
	aj_strv_free(&c.out);
	return r;
}

/* ---- diff against a base stack --------------------------------------------------------- */

/* A stack of open layers, top first, as overlayfs merges them. */
struct view {
	int *fd;
	size_t n;
	bool *live; /* scratch for merged_exists */
};

/* Does `rel` exist in the merged view, and is it a directory? Resolved one component at a
 * time as overlayfs does: a whiteout or a non-directory hides the layers below it, an opaque
 * directory hides what the layers below have beneath it. */
static bool merged_exists(const struct view *v, const char *rel, bool *is_dir)
{
	char prefix[4200];
	bool found = false, dir = true;

	for (size_t i = 0; i < v->n; i++)
		v->live[i] = true;
	for (const char *p = rel; *p;) {
		const char *slash = strchr(p, '/');
		size_t end = slash ? (size_t)(slash - rel) : strlen(rel);
		bool hidden = false;

		if (!dir) /* a file in the middle of the path */
			return false;
		snprintf(prefix, sizeof prefix, "%.*s", (int)end, rel);
		found = false;
		for (size_t i = 0; i < v->n; i++) {
			bool opaque;
			if (!v->live[i] || hidden) {
				v->live[i] = false;
				continue;
			}
			switch (layer_lookup(v->fd[i], prefix, &opaque)) {
			case L_ABSENT:
				v->live[i] = false;
				break;
			case L_WHITEOUT:
				v->live[i] = false;
				hidden = true;
				break;
			case L_FOUND:
				v->live[i] = false;
				hidden = true;
				dir = found ? dir : false;
				found = true;
				break;
			case L_FOUND_DIR:
				found = true;
				hidden = opaque;
				break;
			}
		}
		if (!found)
			return false;
		p = slash ? slash + 1 : rel + end;
	}
	*is_dir = dir;
	return found;
}

struct sdiff {
	struct view base, final; /* final: upper, own layers, base layers */
	/* "0path": a path an own layer or the upper has; "1path": a path of a layer below one
	 * of their directories, which they may hide (deleted if it is gone from the final view). */
	struct aj_strv paths;
};

/* The entries of directory `rel` in the final view's layers from index `from` down. */
static void push_lower_children(struct sdiff *c, size_t from, const char *rel)
{
	for (size_t i = from; i < c->final.n; i++) {
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
		int fd = (int)syscall(SYS_openat2, c->final.fd[i], rel[0] ? rel : ".", &how,
				      sizeof how);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;

		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				aj_strv_pushf(&c->paths, "1%s%s%s", rel, rel[0] ? "/" : "",
					      e->d_name);
		closedir(d);
	}
}

/* Records every path below `rel` in layer `idx` of the final view, and what the layers below
 * have in each of its directories: a whiteout, opaque directory or file there may have hidden
 * it, even when a layer above made the directory again. dir: rel, open; closed here. */
static int collect(struct sdiff *c, size_t idx, int dir, const char *rel, int depth,
		   struct aj_err *err)
{
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (depth > 256) {
		close(dir);
		return aj_err_set(err, AJ_LAYER_STATE, ELOOP, "workspace deeper than 256 levels");
	}
	if (!(d = fdopendir(dir))) {
		close(dir);
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\" in a layer", rel);
	}
	push_lower_children(c, idx + 1, rel);
	while (r == 0 && (e = readdir(d))) {
		char child[4200];
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
		if (aj_strv_pushf(&c->paths, "0%s", child) < 0)
			r = aj_err_sys(err, AJ_LAYER_STATE, "diff");
		if (r < 0 || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\" in a layer", child);
			break;
		}
		r = collect(c, idx, sub, child, depth + 1, err);
	}
	closedir(d);
	return r;
}

/* By path, then a layer's own path ("0") before one it may hide ("1"). */
static int cmp_path(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int r = strcmp(x + 1, y + 1);

	return r ? r : x[0] - y[0];
}

/* A, M, D or 0 (not a change) for one touched path. */
static char classify(const struct sdiff *c, const char *rel)
{
	bool bdir = false, fdir = false, pdir;
	bool in_base = merged_exists(&c->base, rel, &bdir);
	bool in_final = merged_exists(&c->final, rel, &fdir);
	const char *slash = strrchr(rel, '/');
	char parent[4200];

	if (in_final)
		return !in_base ? 'A' : bdir && fdir ? 0 : 'M';
	if (!in_base)
		return 0;
	/* Below a directory that is gone as a whole, only the directory is listed. */
	if (!slash)
		return 'D';
	snprintf(parent, sizeof parent, "%.*s", (int)(slash - rel), rel);
	return merged_exists(&c->final, parent, &pdir) && pdir ? 'D' : 0;
}

/* Opens `dirs` (bottom first) into v from position `at` on, top first. */
static int open_view(struct view *v, size_t at, const struct aj_strv *dirs, struct aj_err *err)
{
	for (size_t i = 0; i < dirs->n; i++) {
		v->fd[at + dirs->n - 1 - i] = open_dir(dirs->v[i], err);
		if (v->fd[at + dirs->n - 1 - i] < 0)
			return -1;
	}
	return 0;
}

static int view_alloc(struct view *v, size_t n)
{
	v->n = n;
	v->fd = malloc((n + 1) * sizeof *v->fd);
	v->live = calloc(n + 1, sizeof *v->live);
	/* Before the check: view_free() closes what fd holds, also after a failure here. */
	for (size_t i = 0; v->fd && i < n; i++)
		v->fd[i] = -1;
	return v->fd && v->live ? 0 : -1;
}

static void view_free(struct view *v, bool close_fds)
{
	for (size_t i = 0; close_fds && v->fd && i < v->n; i++)
		if (v->fd[i] >= 0)
			close(v->fd[i]);
	free(v->fd);
	free(v->live);
}

int aj_ws_diff_stack(const struct aj_strv *base_dirs, const struct aj_strv *own_dirs,
		     const char *upper_dir, int (*fn)(void *arg, char kind, const char *path),
		     void *arg, struct aj_err *err)
{
	struct sdiff c = {0};
	size_t own = own_dirs->n + 1, n = own + base_dirs->n;
	int r = -1;

	if (view_alloc(&c.final, n) < 0 || view_alloc(&c.base, base_dirs->n) < 0) {
		aj_err_sys(err, AJ_LAYER_STATE, "diff");
		goto out;
	}
	if ((c.final.fd[0] = open_dir(upper_dir, err)) < 0 || open_view(&c.final, 1, own_dirs, err) < 0 ||
	    open_view(&c.final, own, base_dirs, err) < 0)
		goto out;
	/* The base view shares the final view's descriptors of the base layers. */
	memcpy(c.base.fd, c.final.fd + own, base_dirs->n * sizeof *c.base.fd);
	for (size_t i = 0; i < own; i++) {
		int dup_fd = fcntl(c.final.fd[i], F_DUPFD_CLOEXEC, 0);
		if (dup_fd < 0) {
			aj_err_sys(err, AJ_LAYER_STATE, "diff");
			goto out;
		}
		if (collect(&c, i, dup_fd, "", 0, err) < 0)
			goto out;
	}
	if (c.paths.n)
		qsort(c.paths.v, c.paths.n, sizeof *c.paths.v, cmp_path);
	r = 0;
	for (size_t i = 0; i < c.paths.n && r == 0; i++) {
		const char *path = c.paths.v[i] + 1;
		char kind;
		if (i && !strcmp(path, c.paths.v[i - 1] + 1))
			continue;
		/* A path only a lower layer has can only have been deleted. */
		kind = classify(&c, path);
		if (kind && (c.paths.v[i][0] == '0' || kind == 'D'))
			r = fn(arg, kind, path);
	}
out:
	view_free(&c.final, true);
	view_free(&c.base, false);
	aj_strv_free(&c.paths);
	return r;
}
