/* What the command gets as stdin. A read-only pipe, FIFO or file, or /dev/null, is handed
 * over as it is. Anything else (a terminal, a socket, a descriptor open for writing) is
 * relayed through a pipe: given directly, the sandbox could write to it (past the output
 * cap), reconfigure the caller's terminal, or set O_NONBLOCK on a description the caller
 * shares. */
#include "supervisor/stdin.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

/* Whether the sandbox's users own the file behind fd: then they may change its mode, times,
 * owner and xattrs through the descriptor, even a read-only one (rootless: the caller's own
 * files). */
static bool owned_inside(int fd, const struct stat *st, const struct aj_stdin_ids *ids)
{
	struct statfs sf;

	/* An anonymous pipe has no metadata anyone else sees. */
	if (S_ISFIFO(st->st_mode) && fstatfs(fd, &sf) == 0 && sf.f_type == PIPEFS_MAGIC)
		return false;
	return st->st_uid >= ids->first && st->st_uid - ids->first < ids->count;
}

static bool safe_to_share(int fd, const struct aj_stdin_ids *ids)
{
	struct stat st;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fstat(fd, &st) < 0)
		return false;
	if (S_ISCHR(st.st_mode))
		return st.st_rdev == makedev(1, 3); /* /dev/null */
	return (fl & O_ACCMODE) == O_RDONLY && (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) &&
	       !owned_inside(fd, &st, ids);
}

/* A file or FIFO open for writing too: a read-only description of the same object is as good
 * to the command and cannot be written through. */
static bool reopen_read_only(struct aj_stdin *s, const struct aj_stdin_ids *ids)
{
	struct stat st;
	int fd;

	if (fstat(0, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) ||
	    owned_inside(0, &st, ids))
		return false;
	fd = open("/proc/self/fd/0", O_RDONLY | O_CLOEXEC | O_NOCTTY | (S_ISFIFO(st.st_mode)
									      ? O_NONBLOCK
									      : 0));
	if (fd < 0)
		return false;
	if (S_ISFIFO(st.st_mode))
		aj_fd_set_nonblock(fd, false);
	s->child_fd = fd;
	s->owned = true;
	return true;
}

/* Terminals, sockets and files the sandbox would own are relayed. Terminals, sockets and
 * FIFOs are polled; a regular file is always ready, so it is read whenever the pipe has
 * room. */
static bool relayable(int fd, bool *always_ready)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	*always_ready = S_ISREG(st.st_mode);
	return S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISREG(st.st_mode) ||
	       S_ISFIFO(st.st_mode);
}

/* A relay pipe for a terminal, pipe, FIFO, socket or file; an empty pipe for the rest (none,
 * /dev/null and other devices, a directory): runsc changes the owner of the descriptors it
 * is handed, so it never gets one of the caller's. */
static int pipe_only(struct aj_stdin *s, struct aj_err *err)
{
	struct stat st;
	bool readable = fcntl(0, F_GETFD) == 0 && fstat(0, &st) == 0 &&
			(!S_ISCHR(st.st_mode) || isatty(0)) && relayable(0, &s->src_file);

	if (aj_pipe(&s->child_fd, &s->pipe_w, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "pipe for stdin");
	if (!readable) {
		aj_close_fd(&s->pipe_w);
		s->owned = true;
		return 0;
	}
	aj_fd_set_nonblock(s->pipe_w, true);
	s->relay = true;
	return 0;
}

int aj_stdin_setup(struct aj_stdin *s, const struct aj_stdin_ids *ids, struct aj_err *err)
{
	memset(s, 0, sizeof *s);
	s->src = 0;
	s->pipe_w = -1;
	s->child_fd = -1;
	if (ids->pipes_only)
		return pipe_only(s, err);
	if (fcntl(0, F_GETFD) < 0 || safe_to_share(0, ids)) {
		s->child_fd = 0;
		return 0;
	}
	if (reopen_read_only(s, ids))
		return 0;
	if (!relayable(0, &s->src_file)) {
		/* A directory (a handle into the host's tree) or an odd device: nothing a command
		 * reads as input, so it gets nothing. */
		s->child_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		s->owned = true;
		return s->child_fd < 0 ? aj_err_sys(err, AJ_LAYER_IO, "open /dev/null") : 0;
	}
	if (aj_pipe(&s->child_fd, &s->pipe_w, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "pipe for stdin");
	aj_fd_set_nonblock(s->pipe_w, true);
	s->relay = true;
	return 0;
}

/* Moves what can move from the caller's stdin to the pipe. Returns false when the relay is
 * finished (EOF on stdin, or the sandbox closed its end). */
bool aj_stdin_pump(struct aj_stdin *s)
{
	for (;;) {
		ssize_t n;

		if (s->off < s->len) {
			n = write(s->pipe_w, s->buf + s->off, s->len - s->off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return true; /* wait until the pipe is writable */
			if (n < 0)
				return false;
			s->off += (size_t)n;
			continue;
		}
		if (s->eof)
			return false;
		n = read(s->src, s->buf, sizeof s->buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->eof = true;
			return false;
		}
		s->len = (size_t)n;
		s->off = 0;
		return true; /* one read per wake-up: a terminal only blocks on the next */
	}
}

bool aj_stdin_wants_write(const struct aj_stdin *s)
{
	return s->off < s->len || s->src_file;
}

void aj_stdin_close(struct aj_stdin *s)
{
	aj_close_fd(&s->pipe_w);
	if (s->relay || s->owned)
		aj_close_fd(&s->child_fd);
	s->child_fd = -1;
}
