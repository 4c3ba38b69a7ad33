/* File operations inside a sandbox through its init (see fsops.h). */
#include "control/fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"

static int call(int ctl, json_t *req, int *fds, size_t *nfds, const char *path,
		struct aj_err *err)
{
	if (aj_ctl_call(ctl, req, NULL, 0, NULL, fds, nfds, AJ_FS_TIMEOUT_MS, err) < 0)
		return aj_err_prefix(err, "sandbox path \"%s\"", path);
	return 0;
}

static const char *const mode_names[] = {
	[AJ_FS_READ] = "r",    [AJ_FS_WRITE] = "w",   [AJ_FS_CREATE] = "wx",
	[AJ_FS_APPEND] = "a",  [AJ_FS_DIR] = "dir",   [AJ_FS_PATH] = "path",
	[AJ_FS_FOLLOW] = "follow",
};

const char *aj_fs_mode_name(enum aj_fs_mode mode)
{
	return (size_t)mode < AJ_ARRAY_SIZE(mode_names) ? mode_names[mode] : "?";
}

int aj_fs_mode_parse(const char *name, enum aj_fs_mode *mode)
{
	for (size_t i = 0; i < AJ_ARRAY_SIZE(mode_names); i++)
		if (strcmp(name, mode_names[i]) == 0) {
			*mode = (enum aj_fs_mode)i;
			return 0;
		}
	return -1;
}

int aj_fs_open(int ctl, const char *path, enum aj_fs_mode mode, int perm, struct aj_err *err)
{
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0};

	if (call(ctl,
		 json_pack("{s:s, s:s, s:s, s:i}", "op", "open", "path", path, "mode",
			   aj_fs_mode_name(mode), "perm", perm),
		 fds.v, &fds.n, path, err) < 0)
		return -1;
	if (fds.n == 0)
		return aj_err_set(err, AJ_LAYER_IO, EPROTO, "no descriptor came for \"%s\"", path);
	return aj_steal_fd(&fds.v[0]);
}

int aj_fs_stat(int ctl, const char *path, bool follow, struct stat *st, struct aj_err *err)
{
	_cleanup_close_ int fd = aj_fs_open(ctl, path, follow ? AJ_FS_FOLLOW : AJ_FS_PATH, 0, err);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "stat \"%s\"", path);
	return 0;
}

int aj_fs_read(int ctl, const char *path, size_t max, char **data, size_t *len,
	       struct aj_err *err)
{
	_cleanup_close_ int fd = aj_fs_open(ctl, path, AJ_FS_READ, 0, err);
	struct stat st;
	size_t cap, n = 0;
	_cleanup_free_ char *buf = NULL;

	*data = NULL;
	*len = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "stat \"%s\"", path);
	if (!S_ISREG(st.st_mode))
		return aj_err_set(err, AJ_LAYER_IO, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
				  "\"%s\" is not a regular file", path);
	if ((uint64_t)st.st_size > max)
		return aj_err_set(err, AJ_LAYER_IO, EFBIG, "\"%s\" is larger than %zu bytes", path,
				  max);
	/* The size may change under us: read to EOF, still bounded by max. */
	cap = (size_t)st.st_size + 1;
	buf = aj_xmalloc(cap);
	for (;;) {
		ssize_t r;
		if (n + 1 >= cap) {
			if (cap > max + 1)
				return aj_err_set(err, AJ_LAYER_IO, EFBIG,
						  "\"%s\" is larger than %zu bytes", path, max);
			cap *= 2;
			buf = aj_xrealloc(buf, cap);
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "read \"%s\"", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max)
		return aj_err_set(err, AJ_LAYER_IO, EFBIG, "\"%s\" is larger than %zu bytes", path,
				  max);
	buf[n] = '\0';
	*data = aj_steal_ptr(&buf);
	*len = n;
	return 0;
}

static int make_parents(int ctl, const char *path, struct aj_err *err)
{
	char dir[4200];
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	return aj_fs_mkdir(ctl, dir, true, err);
}

int aj_fs_write(int ctl, const char *path, const void *data, size_t len, enum aj_fs_mode mode,
		int perm, bool parents, struct aj_err *err)
{
	_cleanup_close_ int fd = -1;

	if (parents && make_parents(ctl, path, err) < 0)
		return -1;
	fd = aj_fs_open(ctl, path, mode, perm, err);
	if (fd < 0)
		return -1;
	if (aj_write_all(fd, data, len) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
	/* close() reports a write the file system deferred (NFS, quota): checked. */
	if (close(aj_steal_fd(&fd)) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
	return 0;
}

int aj_fs_mkdir(int ctl, const char *path, bool parents, struct aj_err *err)
{
	return aj_fs_mkdir_mode(ctl, path, parents, 0755, err);
}

int aj_fs_mkdir_mode(int ctl, const char *path, bool parents, int perm, struct aj_err *err)
{
	return call(ctl,
		    json_pack("{s:s, s:s, s:b, s:i}", "op", "mkdir", "path", path, "parents",
			      parents, "perm", perm),
		    NULL, NULL, path, err);
}

int aj_fs_remove(int ctl, const char *path, bool recursive, struct aj_err *err)
{
	return call(ctl,
		    json_pack("{s:s, s:s, s:b}", "op", "remove", "path", path, "recursive",
			      recursive),
		    NULL, NULL, path, err);
}

int aj_fs_rename(int ctl, const char *from, const char *to, struct aj_err *err)
{
	return call(ctl, json_pack("{s:s, s:s, s:s}", "op", "rename", "path", from, "to", to),
		    NULL, NULL, from, err);
}

int aj_fs_watch(int ctl, const char *path, int ifd, uint32_t mask, int *wd, struct aj_err *err)
{
	_cleanup_json_ json_t *reply = NULL;
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0};

	if (aj_ctl_call(ctl, json_pack("{s:s, s:s, s:I}", "op", "watch", "path", path, "mask",
				       (json_int_t)mask),
			ifd >= 0 ? &ifd : NULL, ifd >= 0 ? 1 : 0, &reply, fds.v, &fds.n,
			AJ_FS_TIMEOUT_MS, err) < 0)
		return aj_err_prefix(err, "watch sandbox path \"%s\"", path);
	*wd = (int)json_integer_value(json_object_get(reply, "wd"));
	if (ifd >= 0)
		return 0;
	if (fds.n == 0)
		return aj_err_set(err, AJ_LAYER_IO, EPROTO, "no inotify descriptor came for \"%s\"",
				  path);
	return aj_steal_fd(&fds.v[0]);
}

int aj_fs_list(int ctl, const char *path,
	       int (*fn)(void *arg, const struct aj_fs_entry *e), void *arg,
	       struct aj_err *err)
{
	int dfd = aj_fs_open(ctl, path, AJ_FS_DIR, 0, err);
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int r = 0;

	if (dfd < 0)
		return -1;
	if (!(d = aj_fdopendir(dfd)))
		return aj_err_sys(err, AJ_LAYER_IO, "list \"%s\"", path);
	/* Entries are looked at through init's descriptor without following anything: lstat
	 * and readlink only read the directory's own entries. */
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct aj_fs_entry e = {.name = de->d_name};
		char link[4096];
		ssize_t n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &e.st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		if (S_ISLNK(e.st.st_mode) &&
		    (n = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1)) >= 0) {
			link[n] = '\0';
			e.link = link;
		}
		r = fn(arg, &e);
	}
	if (r == 0 && errno)
		r = aj_err_sys(err, AJ_LAYER_IO, "list \"%s\"", path);
	return r;
}

const char *aj_fs_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "char";
	case S_IFBLK:
		return "block";
	default:
		return "other";
	}
}
