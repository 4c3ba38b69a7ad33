/* Layer storage: the directories of layers and sandboxes under the state directory, layers
 * published through .tmp- directories and rename, their locks, and the files of an in-place
 * restore. What a sandbox changed is diff.c's. */
#include "workspace/layers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "storage/quota.h"
#include "workspace/internal.h"

int aj_ws_path(char *buf, size_t len, const char *state, const char *kind, const char *id,
	       const char *sub)
{
	int n = snprintf(buf, len, "%s/%s/%s%s%s", state, kind, id, sub ? "/" : "", sub ? sub : "");
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int ws_open_dir(const char *path, struct aj_err *err)
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

int aj_ws_sandbox_dir(const char *state, const char *id, uint64_t disk, struct aj_err *err)
{
	char dir[4096], parent[4096];
	bool limited;

	if (aj_ws_path(dir, sizeof dir, state, "sandboxes", id, NULL) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "state directory path");
	snprintf(parent, sizeof parent, "%s/sandboxes", state);
	if (aj_mkdir_p(parent, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", parent);
	return aj_quota_mkdir(dir, 0700, disk, &limited, err);
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
	return aj_quota_remove(dir, err);
}

int aj_ws_sandbox_usage(const char *state, const char *id, struct aj_quota_use *u)
{
	char dir[4096];

	if (aj_ws_path(dir, sizeof dir, state, "sandboxes", id, NULL) < 0)
		return -1;
	return aj_quota_usage(dir, false, u);
}

uint64_t aj_ws_sandbox_disk(const char *state, const char *id)
{
	struct aj_quota_use u;

	return aj_ws_sandbox_usage(state, id, &u) < 0 ? 0 : u.limit;
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
	dst = ws_open_dir(tmp, err);
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
		/* project quotas: a rename out of a sandbox's project becomes EXDEV below */
		aj_quota_mark_shared(final);
		snprintf(final, sizeof final, "%s/layers/%s", state, layer_id);
		if ((mkdir(final, 0700) < 0 && errno != EEXIST) || rmdir(final) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", final);
		if (rename(upper, final) < 0) {
			if (errno != EXDEV)
				return aj_err_sys(err, AJ_LAYER_STATE, "move \"%s\" to \"%s\"", upper,
						  final);
			/* A disk quota's boundary (a btrfs subvolume, a project): copied, then
			 * emptied. A crash in between leaves the same files in the upper and the
			 * layer below it, which shows the same tree. */
			src = ws_open_dir(upper, err);
			if (src < 0)
				return -1;
			a.src = src;
			a.bytes = bytes;
			if (publish_layer(state, layer_id, fill_copy, &a, err) < 0)
				return -1;
			return aj_tree_clear(src, err);
		}
		if (bytes) {
			_cleanup_close_ int fd = ws_open_dir(final, NULL);
			if (fd >= 0)
				aj_tree_size(fd, bytes, NULL);
		}
		return make_owned_dir(upper, 0755, uid, gid, err);
	}
	src = ws_open_dir(upper, err);
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
		fd = ws_open_dir(path, err);
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
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int r = 0;

	snprintf(path, sizeof path, "%s/layers", state);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
	while (r == 0 && (e = readdir(d)))
		if (strncmp(e->d_name, ".tmp-", 5) == 0)
			r = aj_tree_remove_at(dirfd(d), e->d_name, err);
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
		_cleanup_close_ int fd = -1;
		int r;

		if (make_parent && slash && aj_mkdir_p(parent, 0700) < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", parent);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", path);
		while ((r = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
			;
		if (r < 0)
			return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s\"", path);
		/* The lock counts only if the path still names the locked file: a holder unlinks
		 * it before closing, and a new file at the path is someone else's lock. */
		if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_ino == named.st_ino &&
		    held.st_dev == named.st_dev)
			return aj_steal_fd(&fd);
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
	_cleanup_closedir_ DIR *d = NULL;
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
