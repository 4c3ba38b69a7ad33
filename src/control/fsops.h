/* File operations inside a running sandbox, for clients of its supervisor (cp, the HTTP API,
 * the MCP server). Every path is resolved by the sandbox's init, as the sandbox user, under
 * the sandbox's mount tree and Landlock rules, so a symlink made inside can never lead to a
 * host path; the descriptors init opens are then read or written here. Paths are absolute
 * paths inside the sandbox.
 *
 * Each call is one request on a connected control descriptor (aj_mgr_connect), blocking up to
 * AJ_FS_TIMEOUT_MS. Errors name the sandbox path; errnum is the errno inside (ENOENT, EACCES,
 * EISDIR, ENOTDIR, EEXIST, ENOTEMPTY, EFBIG for a size cap, EAGAIN when the sandbox is
 * paused).
 */
#ifndef AJ_CONTROL_FSOPS_H
#define AJ_CONTROL_FSOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "common/err.h"

#define AJ_FS_TIMEOUT_MS 30000

/* How a path is opened. The control protocol carries the mode's name (aj_fs_mode_name):
 * "r", "w", "wx", "a", "dir", "path", "follow". */
enum aj_fs_mode {
	AJ_FS_READ = 0, /* "r" */
	AJ_FS_WRITE,    /* "w": created or truncated */
	AJ_FS_CREATE,   /* "wx": created, must not exist */
	AJ_FS_APPEND,   /* "a": created if missing, written at the end */
	AJ_FS_DIR,      /* "dir": a directory, for reading its entries */
	AJ_FS_PATH,     /* "path": O_PATH, the final symlink not followed */
	AJ_FS_FOLLOW,   /* "follow": O_PATH, followed */
};

const char *aj_fs_mode_name(enum aj_fs_mode mode);
/* 0 with *mode for a mode's name, -1 for any other string. */
int aj_fs_mode_parse(const char *name, enum aj_fs_mode *mode);

/* perm applies when a file is created. Returns the descriptor, or -1. */
int aj_fs_open(int ctl, const char *path, enum aj_fs_mode mode, int perm, struct aj_err *err);

/* lstat (follow=false) or stat of a path inside. */
int aj_fs_stat(int ctl, const char *path, bool follow, struct stat *st, struct aj_err *err);

/* The whole content of a regular file, at most max bytes (EFBIG beyond). *data is malloc'ed and
 * NUL-terminated (not counted in *len). */
int aj_fs_read(int ctl, const char *path, size_t max, char **data, size_t *len,
	       struct aj_err *err);

/* Writes data as the file's content (AJ_FS_WRITE, AJ_FS_CREATE or AJ_FS_APPEND); creates it
 * with perm. With parents, missing parent directories are made first. */
int aj_fs_write(int ctl, const char *path, const void *data, size_t len, enum aj_fs_mode mode,
		int perm, bool parents, struct aj_err *err);

int aj_fs_mkdir(int ctl, const char *path, bool parents, struct aj_err *err);
/* The same with the new directory's mode (parents made on the way get 0755). */
int aj_fs_mkdir_mode(int ctl, const char *path, bool parents, int perm, struct aj_err *err);
int aj_fs_remove(int ctl, const char *path, bool recursive, struct aj_err *err);
int aj_fs_rename(int ctl, const char *from, const char *to, struct aj_err *err);

/* An inotify watch on the directory `path` inside (mask: IN_* events, IN_DONT_FOLLOW), added
 * by init as the sandbox user. ifd -1 makes a new inotify instance, returned (non-blocking);
 * otherwise the watch joins instance ifd and 0 is returned. *wd gets the watch descriptor. */
int aj_fs_watch(int ctl, const char *path, int ifd, uint32_t mask, int *wd, struct aj_err *err);

struct aj_fs_entry {
	const char *name;
	struct stat st;        /* lstat of the entry */
	const char *link;      /* a symlink's target text, else NULL */
};

/* Calls fn for each entry of a directory (not "." and ".."), in directory order; fn returns
 * non-zero to stop (that value is returned). */
int aj_fs_list(int ctl, const char *path,
	       int (*fn)(void *arg, const struct aj_fs_entry *e), void *arg,
	       struct aj_err *err);

/* "file", "dir", "symlink", "fifo", "socket", "char", "block" or "other". */
const char *aj_fs_type_name(mode_t mode);

#endif
