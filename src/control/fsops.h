/* File operations inside a running sandbox, for clients of its supervisor (cp, the HTTP API,
 * the MCP server). Every path is resolved by the sandbox's init, as the sandbox user, under
 * the sandbox's mount tree and Landlock rules, so a symlink made inside can never lead to a
 * host path; what init opens is then read or written here. Paths are absolute paths inside
 * the sandbox.
 *
 * What init opens reaches the client in one of two forms, behind one interface (struct
 * aj_fs_file): init's own descriptor (the namespaces and landlock tiers), or, in the gvisor
 * tier, whose init runs inside gVisor's Sentry and cannot hand a descriptor out, a stream init
 * serves the object over (common/fsstream.h): its status first, then its bytes or entries.
 * The supervisor decides which; the answers, limits and errors are the same.
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
#include <sys/types.h>

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

/* A file (directory, path) inside, opened by init for this client. Owned: released by
 * aj_fs_file_close() (checked: a write's end) or aj_fs_file_release() (cleanup). */
struct aj_fs_file {
	int fd;          /* init's descriptor of the file, or the stream's socket; -1: none */
	bool stream;     /* by value (the gvisor tier) */
	bool writes;     /* opened to be written */
	struct stat st;  /* the object as opened (lstat for AJ_FS_PATH) */
	bool has_link;   /* a symlink opened with AJ_FS_PATH: link holds its text */
	char link[4096];
	char path[256];  /* for messages, cut */
	/* a stream's state */
	char *pkt;       /* the last packet received; DATA bytes pkt[off..len) not read yet */
	size_t len, off;
	bool ended;      /* its AJ_FSS_END came (end_err: its errno) */
	int end_err;
};
#define AJ_FS_FILE_INIT {.fd = -1}

/* Opens path; perm applies when a file is created. 0 with *f filled, or -1. */
int aj_fs_file_open(int ctl, const char *path, enum aj_fs_mode mode, int perm,
		    struct aj_fs_file *f, struct aj_err *err);
/* Up to n bytes of a file opened AJ_FS_READ; 0 at its end, -1 on an error (EISDIR for a
 * directory, the errno of a read that failed inside). */
ssize_t aj_fs_file_read(struct aj_fs_file *f, void *buf, size_t n, struct aj_err *err);
/* Writes all n bytes (a write mode). */
int aj_fs_file_write(struct aj_fs_file *f, const void *buf, size_t n, struct aj_err *err);
/* Closes the file; for one written, 0 only once every byte reached it and it was closed
 * (close() reports a write the file system deferred; a stream waits for init's answer). */
int aj_fs_file_close(struct aj_fs_file *f, struct aj_err *err);
/* Closes without checking (errors already reported, or nothing written). Safe twice. */
void aj_fs_file_release(struct aj_fs_file *f);
#define _cleanup_fs_file_ __attribute__((cleanup(aj_fs_file_release)))
/* A descriptor holding the content of a regular file opened AJ_FS_READ, for sendfile (HTTP
 * downloads), and *len, its length: init's descriptor (taken from f; st.st_size bytes), or an
 * anonymous file (memfd) filled from the stream with at most st.st_size bytes. -1 on error. */
int aj_fs_file_take_sendable(struct aj_fs_file *f, uint64_t *len, struct aj_err *err);

/* lstat (follow=false) or stat of a path inside. */
int aj_fs_stat(int ctl, const char *path, bool follow, struct stat *st, struct aj_err *err);
/* The same, with a symlink's text in link (size bytes, "" for other files; follow=false). */
int aj_fs_stat_link(int ctl, const char *path, bool follow, struct stat *st, char *link,
		    size_t size, struct aj_err *err);

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
 * otherwise the watch joins instance ifd and 0 is returned. *wd gets the watch descriptor.
 * In the gvisor tier the descriptor is a socket whose packets are each one read of the
 * instance inside (whole inotify records), and which ends (EOF) if init drops the instance. */
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
