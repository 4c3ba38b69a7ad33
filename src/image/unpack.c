#include "image/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/openssl.h"
#include "common/tree.h"
#include "common/util.h"
#include "sandbox/confine.h"

#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define MAX_ID 65535

/* A directory the layer names: its metadata is applied at the end, since
 * creating entries inside it changes its times and its mode may not let us
 * write. */
struct dirmeta {
	char *path;
	mode_t mode;
	int64_t uid, gid;
	struct timespec mtime;
};

struct unpack {
	const struct aj_unpack_opts *o;
	struct aj_unpack_result *res;
	int root;
	struct archive *outer, *inner;
	struct aj_hasher *hash;
	char buf[64 * 1024];
	struct dirmeta *dirs;
	size_t n_dirs, cap_dirs;
	const char *entry; /* the entry at work, for messages */
	struct aj_err *err;
};

static int fail(struct unpack *u, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct unpack *u, int errnum, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (u->entry)
		return aj_err_set(u->err, AJ_LAYER_IMAGE, errnum, "%s: entry \"%s\": %s",
				  u->o->what ? u->o->what : "layer", u->entry, msg);
	return aj_err_set(u->err, AJ_LAYER_IMAGE, errnum, "%s: %s",
			  u->o->what ? u->o->what : "layer", msg);
}

/* The entry's path relative to the layer, into out: a leading "/" and "./"
 * dropped, empty and
 * "." components dropped; -1 for a ".." component. "" is the layer's root. */
static int clean_path(const char *in, char *out, size_t cap)
{
	size_t n = 0;

	while (*in) {
		const char *end = strchr(in, '/');
		size_t len = end ? (size_t)(end - in) : strlen(in);
		if (len == 2 && in[0] == '.' && in[1] == '.')
			return -1;
		if (len && !(len == 1 && in[0] == '.')) {
			if (n + len + 2 > cap)
				return -1;
			if (n)
				out[n++] = '/';
			memcpy(out + n, in, len);
			n += len;
		}
		in += len + (end ? 1 : 0);
	}
	out[n] = '\0';
	return 0;
}

/* Opens the directory `path` (clean, relative) beneath the root, one component
 * at a time and never through a symlink; with create, missing directories are
 * made (0755, owned by us). */
static int open_dir(struct unpack *u, const char *path, bool create)
{
	_cleanup_close_ int cur = fcntl(u->root, F_DUPFD_CLOEXEC, 0);
	char comp[256];

	while (cur >= 0 && *path) {
		const char *end = strchr(path, '/');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		struct stat st;
		int next;

		if (len >= sizeof comp)
			return fail(u, ENAMETOOLONG, "a path component is too long");
		memcpy(comp, path, len);
		comp[len] = '\0';
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
				return fail(u, errno, "make the directory \"%.*s\"", (int)len,
					    comp);
			next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				return fail(u, ELOOP,
					    "a path through the symlink \"%s\" the layer made "
					    "is refused: it would write where the link points",
					    comp);
			return fail(u, errno, "open the directory \"%s\"", comp);
		}
		close(cur);
		cur = next;
		path += len + (end ? 1 : 0);
	}
	return aj_steal_fd(&cur);
}

/* Splits a clean path into its directory (opened, made if missing) and its last
 * component. */
static int open_parent(struct unpack *u, char *path, bool create, const char **base)
{
	char *slash = strrchr(path, '/');
	int fd;

	if (!slash) {
		*base = path;
		return open_dir(u, "", false);
	}
	*slash = '\0';
	fd = open_dir(u, path, create);
	*slash = '/';
	*base = slash + 1;
	return fd;
}

/* Makes room for a new entry at base: whatever the layer had there goes, but a
 * directory stays for a directory (tar lists a directory's parents and may list
 * it again). */
static int clear(struct unpack *u, int pfd, const char *base, bool keep_dir)
{
	struct stat st;

	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(u, errno, "stat");
	if (S_ISDIR(st.st_mode) && keep_dir)
		return 1;
	if (S_ISDIR(st.st_mode))
		return aj_tree_remove_at(pfd, base, u->err);
	if (unlinkat(pfd, base, 0) < 0)
		return fail(u, errno, "replace the earlier entry");
	return 0;
}

static int check_ids(struct unpack *u, struct archive_entry *e)
{
	int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);

	if (uid < 0 || uid > MAX_ID || gid < 0 || gid > MAX_ID)
		return fail(u, ERANGE, "owner %lld:%lld: a sandbox maps the ids 0-%d",
			    (long long)uid, (long long)gid, MAX_ID);
	if (uid != 0 || gid != 0)
		u->res->other_owners++;
	return 0;
}

static bool xattr_kept(const char *name)
{
	return strncmp(name, "user.", 5) == 0 && strncmp(name, "user.overlay.", 13) != 0;
}

/* Owner, mode (after the owner: chown clears setuid), user.* attributes and
 * times of an open file or directory. */
static int set_meta(struct unpack *u, int fd, struct archive_entry *e)
{
	const char *name;
	const void *val;
	size_t size;
	struct timespec ts[2];

	if (u->o->set_owners &&
	    fchown(fd, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e)) < 0)
		return fail(u, errno, "set the owner");
	if (fchmod(fd, archive_entry_perm(e) & 07777) < 0)
		return fail(u, errno, "set the mode");
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &val, &size) == ARCHIVE_OK) {
		if (!xattr_kept(name)) {
			u->res->dropped_xattrs++;
			continue;
		}
		if (fsetxattr(fd, name, val, size, 0) < 0)
			return fail(u, errno, "set the attribute \"%s\"", name);
	}
	ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
	ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_nsec(e);
	if (futimens(fd, ts) < 0)
		return fail(u, errno, "set the times");
	return 0;
}

static int write_data(struct unpack *u, int fd, struct archive_entry *e)
{
	int64_t size = archive_entry_size(e);
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	if (size < 0 || (uint64_t)size > u->o->max_bytes - u->res->bytes)
		return fail(u, EFBIG,
			    "%lld bytes: the layer's files would pass the limit of %llu "
			    "bytes",
			    (long long)size, (unsigned long long)u->o->max_bytes);
	u->res->bytes += (uint64_t)size;
	while ((r = archive_read_data_block(u->inner, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off + len > (uint64_t)size)
			return fail(u, EINVAL, "data beyond the entry's size");
		for (size_t done = 0; done < len;) {
			ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
					   (off_t)(off + (int64_t)done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return fail(u, errno, "write");
			done += (size_t)n;
		}
	}
	if (r != ARCHIVE_EOF)
		return fail(u, EIO, "read: %s", archive_error_string(u->inner));
	/* A sparse file's last hole has no block to write. */
	if (ftruncate(fd, (off_t)size) < 0)
		return fail(u, errno, "set the size");
	return 0;
}

static int do_file(struct unpack *u, int pfd, const char *base, struct archive_entry *e)
{
	_cleanup_close_ int fd = -1;

	if (clear(u, pfd, base, false) < 0)
		return -1;
	fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(u, errno, "create the file");
	if (write_data(u, fd, e) < 0)
		return -1;
	return set_meta(u, fd, e);
}

static int do_dir(struct unpack *u, int pfd, const char *base, const char *path,
		  struct archive_entry *e)
{
	struct dirmeta *d;
	int r = clear(u, pfd, base, true);

	if (r < 0)
		return -1;
	if (r == 0 && mkdirat(pfd, base, 0755) < 0)
		return fail(u, errno, "make the directory");
	if (u->n_dirs == u->cap_dirs) {
		u->cap_dirs = u->cap_dirs ? 2 * u->cap_dirs : 256;
		u->dirs = aj_xrealloc(u->dirs, u->cap_dirs * sizeof *u->dirs);
	}
	d = &u->dirs[u->n_dirs++];
	d->path = aj_xstrdup(path);
	d->mode = archive_entry_perm(e) & 07777;
	d->uid = archive_entry_uid(e);
	d->gid = archive_entry_gid(e);
	d->mtime.tv_sec = archive_entry_mtime(e);
	d->mtime.tv_nsec = archive_entry_mtime_nsec(e);
	/* Its attributes now: they do not change with what is made inside. */
	{
		_cleanup_close_ int fd =
			openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		const char *name;
		const void *val;
		size_t size;

		if (fd < 0)
			return fail(u, errno, "open the directory");
		archive_entry_xattr_reset(e);
		while (archive_entry_xattr_next(e, &name, &val, &size) == ARCHIVE_OK) {
			if (!xattr_kept(name))
				u->res->dropped_xattrs++;
			else if (fsetxattr(fd, name, val, size, 0) < 0)
				return fail(u, errno, "set the attribute \"%s\"", name);
		}
	}
	return 0;
}

static int link_meta(struct unpack *u, int pfd, const char *base, struct archive_entry *e)
{
	struct timespec ts[2];

	if (u->o->set_owners && fchownat(pfd, base, (uid_t)archive_entry_uid(e),
					 (gid_t)archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0)
		return fail(u, errno, "set the owner");
	ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
	ts[0].tv_nsec = ts[1].tv_nsec = archive_entry_mtime_nsec(e);
	if (utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(u, errno, "set the times");
	u->res->dropped_xattrs += (uint64_t)archive_entry_xattr_count(e);
	return 0;
}

static int do_symlink(struct unpack *u, int pfd, const char *base, struct archive_entry *e)
{
	const char *target = archive_entry_symlink(e);

	if (!target || !*target)
		return fail(u, EINVAL, "a symlink without a target");
	if (clear(u, pfd, base, false) < 0)
		return -1;
	if (symlinkat(target, pfd, base) < 0)
		return fail(u, errno, "make the symlink");
	return link_meta(u, pfd, base, e);
}

/* A hard link names an earlier entry of this layer, found like any path: never
 * through a symlink, never outside. */
static int do_hardlink(struct unpack *u, int pfd, const char *base, const char *target)
{
	char tpath[4096];
	const char *tbase;
	_cleanup_close_ int tpfd = -1;
	struct stat st;

	if (clean_path(target, tpath, sizeof tpath) < 0 || !tpath[0])
		return fail(u, EINVAL, "a hard link to \"%s\": outside the layer", target);
	tpfd = open_parent(u, tpath, false, &tbase);
	if (tpfd < 0)
		return fail(u, errno, "a hard link to \"%s\", which the layer does not have",
			    target);
	if (fstatat(tpfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
		return fail(u, errno ? errno : EISDIR,
			    "a hard link to \"%s\", which is not an earlier file of the layer",
			    target);
	if (clear(u, pfd, base, false) < 0)
		return -1;
	if (linkat(tpfd, tbase, pfd, base, 0) < 0)
		return fail(u, errno, "link to \"%s\"", target);
	return 0;
}

/* ".wh.NAME" hides NAME of the layers below; ".wh..wh..opq" hides all of its
 * directory's. */
static int do_whiteout(struct unpack *u, int pfd, const char *base)
{
	const char *name = base + strlen(WH_PREFIX);

	u->res->whiteouts++;
	if (strcmp(base, WH_OPAQUE) == 0) {
		_cleanup_close_ int fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsetxattr(fd, AJ_OVL_OPAQUE_XATTR, "y", 1, 0) < 0)
			return fail(u, errno, "mark the directory opaque");
		return 0;
	}
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || !strncmp(name, WH_PREFIX, 4))
		return fail(u, EINVAL, "a whiteout of no valid name");
	if (clear(u, pfd, name, false) < 0)
		return -1;
	if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) < 0)
		return fail(u, errno, "make the whiteout of \"%s\"", name);
	return 0;
}

static int do_entry(struct unpack *u, struct archive_entry *e)
{
	char path[4096];
	const char *base, *hard = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	_cleanup_close_ int pfd = -1;

	if (clean_path(archive_entry_pathname(e), path, sizeof path) < 0)
		return fail(u, EINVAL, "a \"..\" component, or a path too long: refused");
	if (!path[0])
		return type == AE_IFDIR ? 0
					: fail(u, EINVAL, "the layer's root is not a directory");
	if (check_ids(u, e) < 0)
		return -1;
	pfd = open_parent(u, path, true, &base);
	if (pfd < 0)
		return -1;
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)) == 0)
		return do_whiteout(u, pfd, base);
	if (hard)
		return do_hardlink(u, pfd, base, hard);
	switch (type) {
	case AE_IFREG: return do_file(u, pfd, base, e);
	case AE_IFDIR: return do_dir(u, pfd, base, path, e);
	case AE_IFLNK: return do_symlink(u, pfd, base, e);
	case AE_IFIFO:
		if (clear(u, pfd, base, false) < 0)
			return -1;
		if (mkfifoat(pfd, base, archive_entry_perm(e) & 0777) < 0)
			return fail(u, errno, "make the FIFO");
		return link_meta(u, pfd, base, e);
	case AE_IFCHR:
		/* A 0/0 device is the overlay's own whiteout (tars made from an upper dir).
     */
		if (archive_entry_rdevmajor(e) == 0 && archive_entry_rdevminor(e) == 0) {
			u->res->whiteouts++;
			if (clear(u, pfd, base, false) < 0)
				return -1;
			if (mknodat(pfd, base, S_IFCHR | 0, makedev(0, 0)) < 0)
				return fail(u, errno, "make the whiteout");
			return 0;
		}
		u->res->skipped_devices++;
		return 0;
	case AE_IFBLK:
	case AE_IFSOCK: u->res->skipped_devices++; return 0;
	default: return fail(u, EINVAL, "an entry of unknown type 0%o", (unsigned)type);
	}
}

/* The layer's directories get their metadata last, deepest first. */
static int finish_dirs(struct unpack *u)
{
	for (size_t i = u->n_dirs; i-- > 0;) {
		struct dirmeta *d = &u->dirs[i];
		_cleanup_close_ int fd = -1;
		struct timespec ts[2] = {d->mtime, d->mtime};

		_cleanup_close_ int pfd = -1;
		const char *base;

		u->entry = d->path;
		pfd = open_parent(u, d->path, false, &base);
		if (pfd < 0)
			return -1;
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return fail(u, errno, "open the directory");
		if (u->o->set_owners && fchown(fd, (uid_t)d->uid, (gid_t)d->gid) < 0)
			return fail(u, errno, "set the owner");
		if (fchmod(fd, d->mode) < 0 || futimens(fd, ts) < 0)
			return fail(u, errno, "set the mode and times");
	}
	u->entry = NULL;
	return 0;
}

/* The tar reader's input: the decompressed stream, hashed on the way (the
 * diff_id). */
static la_ssize_t read_plain(struct archive *a, void *arg, const void **buf)
{
	struct unpack *u = arg;
	la_ssize_t n = archive_read_data(u->outer, u->buf, sizeof u->buf);

	if (n < 0) {
		archive_set_error(a, EIO, "%s", archive_error_string(u->outer));
		return -1;
	}
	aj_hasher_update(u->hash, u->buf, (size_t)n);
	*buf = u->buf;
	return n;
}

static int open_streams(struct unpack *u, int blob_fd)
{
	struct archive_entry *e;

	u->outer = archive_read_new();
	u->inner = archive_read_new();
	if (!u->outer || !u->inner)
		aj_oom(sizeof *u);
	archive_read_support_filter_gzip(u->outer);
	archive_read_support_filter_zstd(u->outer);
	archive_read_support_format_raw(u->outer);
	archive_read_support_format_tar(u->inner);
	if (archive_read_open_fd(u->outer, blob_fd, 64 * 1024) != ARCHIVE_OK ||
	    archive_read_next_header(u->outer, &e) != ARCHIVE_OK)
		return fail(u, EINVAL, "not a layer (tar, gzip or zstd): %s",
			    archive_error_string(u->outer));
	if (archive_read_open(u->inner, u, NULL, read_plain, NULL) != ARCHIVE_OK)
		return fail(u, EINVAL, "not a tar: %s", archive_error_string(u->inner));
	return 0;
}

static int read_entries(struct unpack *u)
{
	struct archive_entry *e;
	int r;

	while ((r = archive_read_next_header(u->inner, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		if (++u->res->entries > u->o->max_entries)
			return fail(u, E2BIG, "more than %llu entries",
				    (unsigned long long)u->o->max_entries);
		u->entry = archive_entry_pathname(e);
		if (!u->entry)
			return fail(u, EINVAL, "an entry without a path");
		if (do_entry(u, e) < 0)
			return -1;
		u->entry = NULL;
	}
	if (r != ARCHIVE_EOF)
		return fail(u, EINVAL, "not a valid tar: %s", archive_error_string(u->inner));
	/* What follows the end marker is part of the stream its diff_id covers. */
	while (read_plain(u->inner, u, &(const void *){NULL}) > 0) {
	}
	return 0;
}

int aj_image_unpack_here(int blob_fd, int dir_fd, const struct aj_unpack_opts *o,
			 struct aj_unpack_result *res, struct aj_err *err)
{
	struct aj_unpack_opts opts = *o;
	struct unpack u = {.o = &opts, .res = res, .root = dir_fd, .err = err};
	int r;

	if (!opts.max_bytes)
		opts.max_bytes = AJ_UNPACK_MAX_BYTES;
	if (!opts.max_entries)
		opts.max_entries = AJ_UNPACK_MAX_ENTRIES;
	memset(res, 0, sizeof *res);
	u.hash = aj_hasher_new();
	r = open_streams(&u, blob_fd);
	if (r == 0)
		r = read_entries(&u);
	if (r == 0)
		r = finish_dirs(&u);
	if (r == 0)
		aj_hasher_final(u.hash, res->diff_id);
	for (size_t i = 0; i < u.n_dirs; i++)
		free(u.dirs[i].path);
	free(u.dirs);
	aj_hasher_free(u.hash);
	if (u.inner)
		archive_read_free(u.inner);
	if (u.outer)
		archive_read_free(u.outer);
	return r;
}

/* What the confined child sends back. */
struct unpack_reply {
	int rc;
	struct aj_unpack_result res;
	struct aj_err err;
};

static void __attribute__((noreturn))
child(int blob_fd, const char *dir, const struct aj_unpack_opts *o, int out)
{
	struct unpack_reply r;
	_cleanup_close_ int dfd = -1;

	memset(&r, 0, sizeof r);
	aj_tree_set_elevate(NULL); /* the unpacker acts for its directory alone */
	/* With subordinate ids, uid 0 of a namespace that maps them sets the owners. */
	r.rc = o->subids ? aj_subids_child_enter(out, &r.err) : 0;
	if (r.rc == 0)
		r.rc = aj_confine_writer(dir, AJ_CONFINE_CAPS_UNPACK, &r.err);
	if (r.rc == 0) {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r.rc = dfd < 0 ? aj_err_sys(&r.err, AJ_LAYER_IMAGE, "open \"%s\"", dir)
			       : aj_image_unpack_here(blob_fd, dfd, o, &r.res, &r.err);
	}
	_exit(aj_write_all(out, &r, sizeof r) < 0 ? 1 : 0);
}

int aj_image_unpack(int blob_fd, const char *dir, const struct aj_unpack_opts *o,
		    struct aj_unpack_result *res, struct aj_err *err)
{
	struct unpack_reply r;
	int p[2], status;
	pid_t pid;
	ssize_t n;

	/* The child hashes the layer after it has confined itself: OpenSSL is loaded first. */
	if (aj_openssl_load(err) < 0)
		return -1;
	/* A socket pair: with subordinate ids the child and the parent talk both ways first. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "socketpair");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return aj_err_sys(err, AJ_LAYER_IMAGE, "fork the unpacker");
	}
	if (pid == 0) {
		close(p[0]);
		child(blob_fd, dir, o, p[1]);
	}
	close(p[1]);
	if (o->subids && (n = aj_subids_parent_map(o->subids, pid, p[0], err)) < 0) {
		if (n == -2 && aj_read_full(p[0], &r, sizeof r) == (ssize_t)sizeof r && r.rc < 0)
			*err = r.err;
		close(p[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
		}
		return -1;
	}
	n = aj_read_full(p[0], &r, sizeof r);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (n != (ssize_t)sizeof r)
		return aj_err_set(err, AJ_LAYER_IMAGE, EIO,
				  "the unpacker of %s ended without a "
				  "result (status 0x%x)",
				  o->what ? o->what : "a layer", status);
	if (r.rc < 0) {
		*err = r.err;
		return -1;
	}
	*res = r.res;
	return 0;
}
