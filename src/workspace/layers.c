#include "workspace/layers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "workspace/tree.h"

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
		snprintf(final, sizeof final, "%s/layers/%s", state, layer_id);
		if (aj_mkdir_p(state, 0700) < 0 ||
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
