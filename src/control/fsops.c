/* File operations inside a sandbox through its init (see fsops.h). */
#include "control/fsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/fsstream.h"
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

/* ---- opening ---------------------------------------------------------------------------- */

static int stream_fail(struct aj_fs_file *f, int e, const char *what, struct aj_err *err)
{
	return aj_err_set(err, AJ_LAYER_IO, e, "sandbox path \"%s\": %s", f->path, what);
}

/* The next packet of a stream, checked (common/fsstream.h), into f->pkt. */
static int next_packet(struct aj_fs_file *f, struct aj_fss_packet *pk, struct aj_err *err)
{
	struct pollfd p = {.fd = f->fd, .events = POLLIN};
	ssize_t n;
	int r;

	if (!f->pkt)
		f->pkt = aj_xmalloc(AJ_FSS_MAX_PACKET);
	f->len = f->off = 0;
	do
		r = poll(&p, 1, AJ_FS_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return stream_fail(f, ETIMEDOUT, "the sandbox sent nothing for 30 s (paused?)", err);
	do
		n = recv(f->fd, f->pkt, AJ_FSS_MAX_PACKET, MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "sandbox path \"%s\": receive", f->path);
	if (n == 0)
		return stream_fail(f, EPROTO, "the sandbox's init ended the stream early", err);
	if ((size_t)n > AJ_FSS_MAX_PACKET || aj_fss_parse(f->pkt, (size_t)n, pk) < 0)
		return stream_fail(f, EPROTO, "a malformed packet from the sandbox's init", err);
	if (pk->type == AJ_FSS_END) {
		f->ended = true;
		f->end_err = pk->err;
	}
	return 0;
}

/* The status a stream begins with. */
static int stream_start(struct aj_fs_file *f, struct aj_err *err)
{
	struct aj_fss_packet pk;

	if (next_packet(f, &pk, err) < 0)
		return -1;
	if (pk.type != AJ_FSS_STAT)
		return stream_fail(f, EPROTO, "the sandbox's init sent no status", err);
	f->st = pk.st;
	f->has_link = pk.has_link;
	snprintf(f->link, sizeof f->link, "%s", pk.link);
	return 0;
}

int aj_fs_file_open(int ctl, const char *path, enum aj_fs_mode mode, int perm,
		    struct aj_fs_file *f, struct aj_err *err)
{
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0};
	_cleanup_json_ json_t *reply = NULL;
	ssize_t n;

	memset(f, 0, sizeof *f);
	f->fd = -1;
	snprintf(f->path, sizeof f->path, "%s", path);
	f->writes = mode == AJ_FS_WRITE || mode == AJ_FS_CREATE || mode == AJ_FS_APPEND;
	if (aj_ctl_call(ctl,
			json_pack("{s:s, s:s, s:s, s:i}", "op", "open", "path", path, "mode",
				  aj_fs_mode_name(mode), "perm", perm),
			NULL, 0, &reply, fds.v, &fds.n, AJ_FS_TIMEOUT_MS, err) < 0)
		return aj_err_prefix(err, "sandbox path \"%s\"", path);
	if (fds.n == 0)
		return aj_err_set(err, AJ_LAYER_IO, EPROTO, "no descriptor came for \"%s\"", path);
	f->fd = aj_steal_fd(&fds.v[0]);
	f->stream = json_is_true(json_object_get(reply, "stream"));
	if (f->stream)
		return stream_start(f, err);
	if (fstat(f->fd, &f->st) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "stat \"%s\"", path);
	/* A symlink's own text, through init's O_PATH descriptor: nothing is followed. */
	if (S_ISLNK(f->st.st_mode) && (n = readlinkat(f->fd, "", f->link, sizeof f->link - 1)) >= 0) {
		f->link[n] = '\0';
		f->has_link = true;
	}
	return 0;
}

/* ---- reading and writing ------------------------------------------------------------------ */

ssize_t aj_fs_file_read(struct aj_fs_file *f, void *buf, size_t n, struct aj_err *err)
{
	struct aj_fss_packet pk;
	size_t take;

	if (!f->stream) {
		ssize_t r;
		do
			r = read(f->fd, buf, n);
		while (r < 0 && errno == EINTR);
		return r < 0 ? aj_err_sys(err, AJ_LAYER_IO, "read \"%s\"", f->path) : r;
	}
	while (f->off == f->len) {
		if (f->ended)
			return f->end_err ? aj_err_set(err, AJ_LAYER_IO, f->end_err, "read \"%s\"",
						       f->path)
					  : 0;
		if (next_packet(f, &pk, err) < 0)
			return -1;
		if (pk.type == AJ_FSS_DATA) {
			f->off = (size_t)(pk.data - f->pkt);
			f->len = f->off + pk.len;
		} else if (pk.type != AJ_FSS_END) {
			return stream_fail(f, EPROTO, "an entry in a file's stream", err);
		}
	}
	take = f->len - f->off < n ? f->len - f->off : n;
	memcpy(buf, f->pkt + f->off, take);
	f->off += take;
	return (ssize_t)take;
}

/* Sends one packet on a stream, waiting while the socket is full. */
static int stream_send(struct aj_fs_file *f, const char *pkt, size_t n, struct aj_err *err)
{
	for (;;) {
		struct pollfd p = {.fd = f->fd, .events = POLLOUT};
		int r;

		if (send(f->fd, pkt, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		do
			r = poll(&p, 1, AJ_FS_TIMEOUT_MS);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
}

/* init ended a write early (an error): its AJ_FSS_END, already sent, says which. */
static int stream_write_failed(struct aj_fs_file *f, struct aj_err *err)
{
	struct aj_fss_packet pk;
	int e = errno;

	if (e == EPIPE || e == ECONNRESET) {
		while (!f->ended && next_packet(f, &pk, err) == 0)
			;
		if (f->ended && f->end_err)
			return aj_err_set(err, AJ_LAYER_IO, f->end_err, "write \"%s\"", f->path);
	}
	return aj_err_set(err, AJ_LAYER_IO, e, "write \"%s\"", f->path);
}

int aj_fs_file_write(struct aj_fs_file *f, const void *buf, size_t n, struct aj_err *err)
{
	const char *p = buf;

	if (!f->stream)
		return aj_write_all(f->fd, buf, n) < 0
			       ? aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", f->path)
			       : 0;
	if (!f->pkt)
		f->pkt = aj_xmalloc(AJ_FSS_MAX_PACKET);
	while (n) {
		size_t chunk = n < AJ_FSS_MAX_DATA ? n : AJ_FSS_MAX_DATA;
		size_t h = aj_fss_header(f->pkt, AJ_FSS_DATA, 0);

		memcpy(f->pkt + h, p, chunk);
		if (stream_send(f, f->pkt, h + chunk, err) < 0)
			return stream_write_failed(f, err);
		p += chunk;
		n -= chunk;
	}
	return 0;
}

int aj_fs_file_close(struct aj_fs_file *f, struct aj_err *err)
{
	struct aj_fss_packet pk;
	char end[sizeof(struct aj_fss_hdr)];
	int r = 0;

	if (f->fd < 0)
		return 0;
	if (!f->stream) {
		/* close() reports a write the file system deferred (NFS, quota): checked. */
		if (close(aj_steal_fd(&f->fd)) < 0 && f->writes)
			r = aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", f->path);
	} else if (f->writes) {
		/* The end of the bytes; init answers once the file is closed, or with the error
		 * that stopped it. */
		if (stream_send(f, end, aj_fss_header(end, AJ_FSS_END, 0), err) < 0)
			r = stream_write_failed(f, err);
		while (r == 0 && !f->ended && (r = next_packet(f, &pk, err)) == 0)
			;
		if (r == 0 && f->end_err)
			r = aj_err_set(err, AJ_LAYER_IO, f->end_err, "write \"%s\"", f->path);
	}
	aj_fs_file_release(f);
	return r;
}

void aj_fs_file_release(struct aj_fs_file *f)
{
	aj_close_fd(&f->fd);
	free(f->pkt);
	f->pkt = NULL;
	f->len = f->off = 0;
}

int aj_fs_file_take_sendable(struct aj_fs_file *f, uint64_t *len, struct aj_err *err)
{
	_cleanup_close_ int mfd = -1;
	char buf[65536];
	uint64_t want = (uint64_t)f->st.st_size, got = 0;

	if (!f->stream) {
		*len = want;
		return aj_steal_fd(&f->fd);
	}
	mfd = memfd_create("agentjail-download", MFD_CLOEXEC);
	if (mfd < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "memfd for \"%s\"", f->path);
	/* As sendfile on the file would: its size when opened, or less if it shrank since. */
	while (got < want) {
		ssize_t n = aj_fs_file_read(f, buf, want - got < sizeof buf ? want - got : sizeof buf,
					    err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		if (aj_write_all(mfd, buf, (size_t)n) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "copy \"%s\"", f->path);
		got += (uint64_t)n;
	}
	*len = got;
	aj_fs_file_release(f);
	return aj_steal_fd(&mfd);
}

/* ---- whole-file helpers -------------------------------------------------------------------- */

int aj_fs_stat_link(int ctl, const char *path, bool follow, struct stat *st, char *link,
		    size_t size, struct aj_err *err)
{
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;

	if (aj_fs_file_open(ctl, path, follow ? AJ_FS_FOLLOW : AJ_FS_PATH, 0, &f, err) < 0)
		return -1;
	*st = f.st;
	if (link && size)
		snprintf(link, size, "%s", f.has_link ? f.link : "");
	return 0;
}

int aj_fs_stat(int ctl, const char *path, bool follow, struct stat *st, struct aj_err *err)
{
	return aj_fs_stat_link(ctl, path, follow, st, NULL, 0, err);
}

int aj_fs_read(int ctl, const char *path, size_t max, char **data, size_t *len,
	       struct aj_err *err)
{
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;
	size_t cap, n = 0;
	_cleanup_free_ char *buf = NULL;

	*data = NULL;
	*len = 0;
	if (aj_fs_file_open(ctl, path, AJ_FS_READ, 0, &f, err) < 0)
		return -1;
	if (!S_ISREG(f.st.st_mode))
		return aj_err_set(err, AJ_LAYER_IO, S_ISDIR(f.st.st_mode) ? EISDIR : EINVAL,
				  "\"%s\" is not a regular file", path);
	if ((uint64_t)f.st.st_size > max)
		return aj_err_set(err, AJ_LAYER_IO, EFBIG, "\"%s\" is larger than %zu bytes", path,
				  max);
	/* The size may change under us: read to EOF, still bounded by max. */
	cap = (size_t)f.st.st_size + 1;
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
		r = aj_fs_file_read(&f, buf + n, cap - n - 1, err);
		if (r < 0)
			return -1;
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
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;

	if (parents && make_parents(ctl, path, err) < 0)
		return -1;
	if (aj_fs_file_open(ctl, path, mode, perm, &f, err) < 0 ||
	    aj_fs_file_write(&f, data, len, err) < 0)
		return -1;
	return aj_fs_file_close(&f, err);
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
	/* Non-blocking as init's inotify instance is: the gvisor tier's stream socket too. */
	aj_fd_set_nonblock(fds.v[0], true);
	return aj_steal_fd(&fds.v[0]);
}

/* The entries of a directory's stream (the gvisor tier): lstat, name and link text each. */
static int list_stream(struct aj_fs_file *f, int (*fn)(void *arg, const struct aj_fs_entry *e),
		       void *arg, struct aj_err *err)
{
	struct aj_fss_packet pk;
	int r = 0;

	while (r == 0) {
		struct aj_fs_entry e;
		if (next_packet(f, &pk, err) < 0)
			return -1;
		if (pk.type == AJ_FSS_END)
			return pk.err ? aj_err_set(err, AJ_LAYER_IO, pk.err, "list \"%s\"", f->path)
				      : 0;
		if (pk.type != AJ_FSS_ENTRY)
			return stream_fail(f, EPROTO, "a directory's stream without entries", err);
		e.name = pk.name;
		e.st = pk.st;
		e.link = pk.has_link ? pk.link : NULL;
		r = fn(arg, &e);
	}
	return r; /* the stream's rest is dropped with it: init stops at its closed socket */
}

int aj_fs_list(int ctl, const char *path,
	       int (*fn)(void *arg, const struct aj_fs_entry *e), void *arg,
	       struct aj_err *err)
{
	_cleanup_fs_file_ struct aj_fs_file f = AJ_FS_FILE_INIT;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int r = 0;

	if (aj_fs_file_open(ctl, path, AJ_FS_DIR, 0, &f, err) < 0)
		return -1;
	if (f.stream)
		return list_stream(&f, fn, arg, err);
	if (!(d = aj_fdopendir(aj_steal_fd(&f.fd))))
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
