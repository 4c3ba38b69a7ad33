/* A volume's files for the APIs (E2B's volume content routes): stat, list, read, write, make,
 * change and remove paths inside a volume from the host. As in volume_copy.c, nothing is
 * followed: every path resolves beneath the volume's data without symlinks (openat2), and the
 * last component is acted on with *at() calls that do not follow it. Owners are the ids the
 * sandboxes see, which are the ids on disk. */
#include "storage/volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"

static int open_root(const struct aj_volume *v, struct aj_err *err)
{
	char data[4300];
	int fd;

	if (aj_volume_data(v, data, sizeof data) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the volume's path");
	fd = open(data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		aj_err_sys(err, AJ_LAYER_STATE, "open volume \"%s\"", v->name);
	return fd;
}

/* "/a/b/c" -> the directory "/a/b" opened beneath root, and "c" into leaf. The volume's root
 * itself has no parent: leaf "" and the root. */
static int split(int root, const char *path, char *leaf, size_t len, struct aj_err *err)
{
	char dir[4096];
	const char *slash;
	size_t n;
	int fd;

	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "path: too long");
	for (n = strlen(dir); n > 0 && dir[n - 1] == '/'; n--)
		dir[n - 1] = '\0';
	slash = strrchr(dir, '/');
	if (strlen(slash ? slash + 1 : dir) >= len)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "path \"%s\"", path);
	snprintf(leaf, len, "%s", slash ? slash + 1 : dir);
	if (!strcmp(leaf, "..") || !strcmp(leaf, "."))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "path \"%s\": names no entry", path);
	if (slash)
		dir[slash - dir] = '\0';
	else
		dir[0] = '\0';
	fd = leaf[0] ? aj_open_beneath(root, dir, O_RDONLY | O_DIRECTORY, RESOLVE_NO_XDEV)
		     : dup(root);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\"%s", path,
				  errno == ELOOP || errno == EXDEV
					  ? " (through a link or out of the volume)"
					  : "");
	return fd;
}

static void fill(struct aj_volume_stat *s, const char *path, const char *name,
		 const struct stat *st, int dir, const char *leaf)
{
	memset(s, 0, sizeof *s);
	snprintf(s->path, sizeof s->path, "%s", path);
	snprintf(s->name, sizeof s->name, "%s", name);
	s->st = *st;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlinkat(dir, leaf, s->target, sizeof s->target - 1);
		s->target[n > 0 ? n : 0] = '\0';
	}
}

/* path as the API shows it: "/" and the components, without repeated or trailing '/'. */
static void clean_path(const char *in, char *out, size_t len)
{
	size_t o = 0;

	out[o++] = '/';
	for (const char *p = in; *p && o + 1 < len; p++)
		if (*p != '/' || (o > 0 && out[o - 1] != '/'))
			out[o++] = *p;
	if (o > 1 && out[o - 1] == '/')
		o--;
	out[o] = '\0';
}

int aj_volume_stat(const struct aj_volume *v, const char *path, struct aj_volume_stat *out,
		   struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1;
	char leaf[256], clean[4096];
	struct stat st;

	if (root < 0 || (dir = split(root, path, leaf, sizeof leaf, err)) < 0)
		return -1;
	if (fstatat(dir, leaf[0] ? leaf : "", &st, AT_SYMLINK_NOFOLLOW | (leaf[0] ? 0 : AT_EMPTY_PATH)) < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	clean_path(path, clean, sizeof clean);
	fill(out, clean, leaf[0] ? leaf : "", &st, dir, leaf);
	return 0;
}

static int list_at(int dir, const char *prefix, int depth, struct aj_volume_stat **out,
		   size_t *n, size_t *cap, struct aj_err *err)
{
	_cleanup_closedir_ DIR *d = fdopendir(dup(dir));
	struct dirent *e;

	if (!d)
		return aj_err_sys(err, AJ_LAYER_IO, "read \"%s\"", prefix);
	while ((e = readdir(d))) {
		struct stat st;
		char path[4096];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", strcmp(prefix, "/") ? prefix : "", e->d_name);
		if (*n >= AJ_VOLUME_LIST_MAX)
			return aj_err_set(err, AJ_LAYER_USAGE, EFBIG,
					  "more than %d entries: list less deep", AJ_VOLUME_LIST_MAX);
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 32;
			*out = aj_xrealloc(*out, *cap * sizeof **out);
		}
		fill(&(*out)[(*n)++], path, e->d_name, &st, dir, e->d_name);
		if (S_ISDIR(st.st_mode) && depth > 1) {
			_cleanup_close_ int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY |
								  O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0 && list_at(sub, path, depth - 1, out, n, cap, err) < 0)
				return -1;
		}
	}
	return 0;
}

int aj_volume_list_dir(const struct aj_volume *v, const char *path, int depth,
		       struct aj_volume_stat **out, size_t *n, struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1;
	char clean[4096];
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (root < 0)
		return -1;
	dir = aj_open_beneath(root, path, O_RDONLY | O_DIRECTORY, RESOLVE_NO_XDEV);
	if (dir < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	clean_path(path, clean, sizeof clean);
	return list_at(dir, clean, depth < 1 ? 1 : depth, out, n, &cap, err);
}

/* The parents of path, made when `parents` (each owned by uid:gid when given), or required to
 * exist; the last one opened. */
static int parent_dir(int root, const char *path, bool parents, uid_t uid, gid_t gid, char *leaf,
		      size_t len, struct aj_err *err)
{
	char dir[4096], *p, *slash;
	_cleanup_close_ int at = -1;

	if (!parents)
		return split(root, path, leaf, len, err);
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "path \"%s\"", path);
	for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
		dir[n - 1] = '\0';
	slash = strrchr(dir, '/');
	if (strlen(slash ? slash + 1 : dir) >= len)
		return aj_err_set(err, AJ_LAYER_USAGE, ENAMETOOLONG, "path \"%s\"", path);
	snprintf(leaf, len, "%s", slash ? slash + 1 : dir);
	if (!leaf[0] || !strcmp(leaf, ".") || !strcmp(leaf, ".."))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "path \"%s\": names no entry", path);
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
	at = dup(root);
	for (p = strtok(dir, "/"); p; p = strtok(NULL, "/")) {
		int next;
		if (!strcmp(p, ".") || !strcmp(p, ".."))
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "path \"%s\": no . or ..", path);
		if (mkdirat(at, p, 0755) == 0 && (uid != (uid_t)-1 || geteuid() == 0))
			fchownat(at, p, uid != (uid_t)-1 ? uid : AJ_VOLUME_ROOT_UID,
				 gid != (gid_t)-1 ? gid : AJ_VOLUME_ROOT_UID, AT_SYMLINK_NOFOLLOW);
		next = openat(at, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\": \"%s\"", path, p);
		close(at);
		at = next;
	}
	return aj_steal_fd(&at);
}

/* On an open descriptor of the entry itself (never by name: a sandbox may swap a link in
 * between). fd may be O_PATH: chmod then goes through its /proc/self/fd link, which names the
 * inode, not a path. */
static int set_attrs(int fd, const char *what, uid_t uid, gid_t gid, int mode,
		     struct aj_err *err)
{
	char proc[64];

	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "chown \"%s\"", what);
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (mode >= 0 && fchmodat(AT_FDCWD, proc, (mode_t)mode & 01777, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "chmod \"%s\"", what);
	return 0;
}

/* A new entry's owner when none is asked for: the sandbox user, as root. */
static void default_owner(const struct aj_volume_attrs *a, uid_t *uid, gid_t *gid)
{
	*uid = a->uid;
	*gid = a->gid;
	if (geteuid() == 0 && a->uid == (uid_t)-1)
		*uid = AJ_VOLUME_ROOT_UID;
	if (geteuid() == 0 && a->gid == (gid_t)-1)
		*gid = AJ_VOLUME_ROOT_UID;
}

int aj_volume_mkdir(const struct aj_volume *v, const char *path, const struct aj_volume_attrs *a,
		    bool parents, struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1, fd = -1;
	char leaf[256];
	uid_t uid;
	gid_t gid;

	if (root < 0 ||
	    (dir = parent_dir(root, path, parents, a->uid, a->gid, leaf, sizeof leaf, err)) < 0)
		return -1;
	if (!leaf[0])
		return aj_err_set(err, AJ_LAYER_USAGE, EEXIST, "path \"%s\": the volume's root",
				  path);
	if (mkdirat(dir, leaf, 0755) < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "mkdir \"%s\"", path);
		return errno == EEXIST ? aj_err_class(err, AJ_ERRC_EXISTS) : -1;
	}
	fd = openat(dir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "open \"%s\"", path);
	default_owner(a, &uid, &gid);
	return set_attrs(fd, path, uid, gid, a->mode, err);
}

int aj_volume_write(const struct aj_volume *v, const char *path, const void *data, size_t len,
		    const struct aj_volume_attrs *a, bool parents, struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1, fd = -1;
	char leaf[256];
	struct stat st;
	bool created;
	uid_t uid;
	gid_t gid;
	int flags;

	if (root < 0 ||
	    (dir = parent_dir(root, path, parents, a->uid, a->gid, leaf, sizeof leaf, err)) < 0)
		return -1;
	if (!leaf[0])
		return aj_err_set(err, AJ_LAYER_USAGE, EISDIR, "path \"%s\": the volume's root", path);
	/* O_NONBLOCK: a FIFO a sandbox put there must not hold the caller; anything but a
	 * regular file is refused before it is truncated. */
	flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	fd = openat(dir, leaf, flags | O_CREAT | O_EXCL, 0644);
	created = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = openat(dir, leaf, flags);
	if (fd < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "write \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return aj_err_set(err, AJ_LAYER_USAGE, EISDIR, "write \"%s\": not a regular file",
				  path);
	if (fcntl(fd, F_SETFL, O_WRONLY) < 0 || ftruncate(fd, 0) < 0 ||
	    aj_write_all(fd, data, len) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
	if (created)
		default_owner(a, &uid, &gid);
	else
		uid = a->uid, gid = a->gid;
	return set_attrs(fd, path, uid, gid, a->mode, err);
}

int aj_volume_open_file(const struct aj_volume *v, const char *path, int *fd_out,
			uint64_t *size, struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1, fd = -1;
	char leaf[256];
	struct stat st;

	if (root < 0 || (dir = split(root, path, leaf, sizeof leaf, err)) < 0)
		return -1;
	fd = leaf[0] ? openat(dir, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
		     : -1;
	if (fd < 0 || fstat(fd, &st) < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "read \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	if (!S_ISREG(st.st_mode))
		return aj_err_set(err, AJ_LAYER_USAGE, EISDIR, "read \"%s\": not a regular file",
				  path);
	*size = (uint64_t)st.st_size;
	*fd_out = aj_steal_fd(&fd);
	return 0;
}

int aj_volume_chattr(const struct aj_volume *v, const char *path, const struct aj_volume_attrs *a,
		     struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1, fd = -1;
	char leaf[256];
	struct stat st;

	if (root < 0 || (dir = split(root, path, leaf, sizeof leaf, err)) < 0)
		return -1;
	if (!leaf[0])
		return aj_err_set(err, AJ_LAYER_USAGE, EPERM, "path \"%s\": the volume's root", path);
	fd = openat(dir, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	if (S_ISLNK(st.st_mode) && a->mode >= 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "path \"%s\": a link has no mode",
				  path);
	return set_attrs(fd, path, a->uid, a->gid, S_ISLNK(st.st_mode) ? -1 : a->mode, err);
}

int aj_volume_remove_path(const struct aj_volume *v, const char *path, struct aj_err *err)
{
	_cleanup_close_ int root = open_root(v, err), dir = -1;
	char leaf[256];
	struct stat st;

	if (root < 0 || (dir = split(root, path, leaf, sizeof leaf, err)) < 0)
		return -1;
	if (!leaf[0])
		return aj_err_set(err, AJ_LAYER_USAGE, EPERM, "path \"%s\": the volume's root", path);
	if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		aj_err_sys(err, AJ_LAYER_USAGE, "path \"%s\"", path);
		return errno == ENOENT ? aj_err_class(err, AJ_ERRC_NOT_FOUND) : -1;
	}
	return aj_tree_remove_at(dir, leaf, err);
}
