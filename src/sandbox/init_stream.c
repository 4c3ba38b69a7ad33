/* init's by-value operations in the gvisor tier (initproto.h AJ_IEXEC_RELAY, AJ_IOP_STREAM,
 * AJ_IOP_WATCH_STREAM). init runs inside gVisor's Sentry there, which cannot hand a descriptor
 * of its own to the host: in place of a terminal's master, an opened file or an inotify
 * instance, init keeps the object and serves it over a socket the supervisor handed in. Each
 * such object is a job of init's poll loop, non-blocking on the socket, so that a slow or
 * vanished reader stalls its own job only (its command's writes to the terminal, its file's
 * read) and never init:
 *
 *   J_TTY    a pty pair of the Sentry's devpts: the command runs on the peer; the master's
 *            output goes to a SOCK_STREAM socket, what comes from it goes to the master.
 *            The command's EXITED waits until the output it wrote is on the socket.
 *   J_READ   a regular file's bytes as AJ_FSS_DATA packets, then AJ_FSS_END
 *   J_DIR    a directory's entries as AJ_FSS_ENTRY packets, then AJ_FSS_END
 *   J_WRITE  AJ_FSS_DATA packets from the socket written to the file; AJ_FSS_END from the
 *            client closes it and is answered with the result
 *   J_WATCH  an inotify instance: each read of it one packet (raw inotify records)
 *
 * Every file job's stream begins with the opened object's AJ_FSS_STAT (common/fsstream.h).
 * At most MAX_JOBS at once; beyond, the request is refused (EMFILE).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fsstream.h"
#include "common/util.h"
#include "sandbox/init_internal.h"
#include "sandbox/initproto.h"

#define MAX_JOBS 64
#define TTY_BUF 16384     /* terminal output held for a slow reader */
#define TTY_IN_BUF 4096   /* input held for a command that is not reading */
#define BATCH 8           /* packets a job sends per wake-up, so that others get their turn */

enum job_kind { J_FREE, J_TTY, J_READ, J_DIR, J_WRITE, J_WATCH };

struct job {
	enum job_kind kind;
	uint64_t id;    /* J_TTY: the exec; J_WATCH: the instance */
	pid_t pid;      /* J_TTY: the command (its process group) */
	int sock;       /* the supervisor's socket, the client's end of the stream beyond it */
	int fd;         /* the master, the file, the inotify instance; -1 for J_DIR */
	DIR *dir;
	char *buf;      /* a packet (terminal output) not sent yet: buf[off..len) */
	size_t len, off;
	char *in;       /* J_TTY: input not written to the master yet */
	size_t in_len, in_off;
	bool fd_eof;    /* J_TTY: no process holds the terminal any more */
	bool ending;    /* J_READ, J_DIR: AJ_FSS_END is in buf; the job ends once it is sent */
	bool exit_pending; /* J_TTY: the command ended; its EXITED waits for its output */
	struct aj_init_hdr exit_msg;
};

static struct job jobs[MAX_JOBS];
static uint64_t next_instance = 1;

/* Which job and which of its descriptors each pollfd of aj_init_streams_poll() is. */
static struct {
	struct job *j;
	bool is_sock;
} polled[AJ_INIT_STREAM_POLLFDS];

static struct job *job_new(enum job_kind kind, int sock)
{
	for (size_t i = 0; i < MAX_JOBS; i++)
		if (jobs[i].kind == J_FREE) {
			struct job *j = &jobs[i];
			memset(j, 0, sizeof *j);
			j->kind = kind;
			j->sock = sock;
			j->fd = -1;
			aj_fd_set_nonblock(sock, true);
			return j;
		}
	return NULL;
}

static bool room(void)
{
	for (size_t i = 0; i < MAX_JOBS; i++)
		if (jobs[i].kind == J_FREE)
			return true;
	return false;
}

static void send_init(int ctl, const struct aj_init_hdr *h)
{
	if (aj_init_send(ctl, h, NULL, NULL, 0) < 0 && errno == EPIPE)
		_exit(1); /* the supervisor is gone: the sandbox ends with it */
}

static void job_end(int ctl, struct job *j)
{
	if (j->kind == J_WATCH) {
		struct aj_init_hdr h;
		memset(&h, 0, sizeof h);
		h.op = AJ_IOP_UNWATCHED;
		h.pid = (int32_t)j->id;
		send_init(ctl, &h);
	}
	if (j->exit_pending)
		send_init(ctl, &j->exit_msg);
	if (j->dir)
		closedir(j->dir);
	aj_close_fd(&j->fd);
	aj_close_fd(&j->sock);
	free(j->buf);
	free(j->in);
	memset(j, 0, sizeof *j);
	j->kind = J_FREE;
	j->fd = j->sock = -1;
}

/* Sends what buf holds: a whole packet (SOCK_SEQPACKET), or as much terminal output as the
 * socket takes. 1 when buf is empty now, 0 when the socket is full, -1 when its reader left. */
static int flush(struct job *j)
{
	while (j->off < j->len) {
		ssize_t n = send(j->sock, j->buf + j->off, j->len - j->off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		j->off += (size_t)n;
	}
	j->off = j->len = 0;
	return 1;
}

/* Queues one packet (buf was empty) and tries to send it. */
static int put(struct job *j, size_t len)
{
	j->len = len;
	j->off = 0;
	return flush(j);
}

static int put_end(struct job *j, int err)
{
	j->ending = true;
	return put(j, aj_fss_header(j->buf, AJ_FSS_END, err));
}

/* ---- terminals ------------------------------------------------------------------------- */

int aj_init_tty_open(int32_t winsize, int *master, int *slave)
{
	struct winsize ws = {.ws_row = (unsigned short)((uint32_t)winsize >> 16),
			     .ws_col = (unsigned short)(winsize & 0xffff)};
	_cleanup_close_ int m = -1;
	char path[64];
	int unlock = 0, n = 0;

	if (!room())
		return EMFILE;
	m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	/* No TIOCGPTPEER in the Sentry: the peer is opened by its number. */
	if (m < 0 || ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCGPTN, &n) < 0)
		return errno;
	snprintf(path, sizeof path, "/dev/pts/%d", n);
	if ((*slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0)
		return errno;
	if (ws.ws_row && ws.ws_col)
		ioctl(m, TIOCSWINSZ, &ws);
	*master = aj_steal_fd(&m);
	return 0;
}

int aj_init_tty_relay(uint64_t id, pid_t pid, int master, int sock)
{
	int own = fcntl(sock, F_DUPFD_CLOEXEC, 3); /* the caller closes its own copy */
	struct job *j;

	/* aj_init_tty_open() checked for room, and nothing made a job since. */
	if (own < 0 || !(j = job_new(J_TTY, own))) {
		int e = errno ? errno : EMFILE;
		close(master);
		if (own >= 0)
			close(own);
		return e;
	}
	j->id = id;
	j->pid = pid;
	j->fd = master;
	aj_fd_set_nonblock(master, true);
	j->buf = aj_xmalloc(TTY_BUF);
	j->in = aj_xmalloc(TTY_IN_BUF);
	return 0;
}

static struct job *find(enum job_kind kind, uint64_t id)
{
	for (size_t i = 0; i < MAX_JOBS; i++)
		if (jobs[i].kind == kind && jobs[i].id == id)
			return &jobs[i];
	return NULL;
}

/* A size change reaches the terminal's foreground process group as SIGWINCH, as the host
 * kernel does it: the Sentry of Debian 12's runsc sets the size without telling anyone. */
int aj_init_tty_resize(uint64_t id, int32_t winsize)
{
	struct job *j = find(J_TTY, id);
	struct winsize ws = {.ws_row = (unsigned short)((uint32_t)winsize >> 16),
			     .ws_col = (unsigned short)(winsize & 0xffff)}, old;
	pid_t fg;

	if (!j)
		return ESRCH;
	if (ioctl(j->fd, TIOCGWINSZ, &old) == 0 && old.ws_row == ws.ws_row &&
	    old.ws_col == ws.ws_col)
		return 0;
	if (ioctl(j->fd, TIOCSWINSZ, &ws) < 0)
		return errno;
	fg = tcgetpgrp(j->fd);
	kill(fg > 0 ? -fg : -j->pid, SIGWINCH);
	return 0;
}

bool aj_init_tty_exited(const struct aj_init_hdr *exited)
{
	struct job *j = find(J_TTY, exited->id);

	if (!j)
		return false;
	j->exit_msg = *exited;
	j->exit_pending = true;
	return true;
}

/* Master -> buf: what the terminal has now. */
static void tty_pull(struct job *j)
{
	while (!j->fd_eof && j->len < TTY_BUF) {
		ssize_t n = read(j->fd, j->buf + j->len, TTY_BUF - j->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) { /* EIO: every process that held the terminal closed it */
			j->fd_eof = true;
			return;
		}
		j->len += (size_t)n;
	}
}

/* Socket -> master: the client's keystrokes. false once the client is gone. */
static bool tty_push(struct job *j)
{
	for (;;) {
		ssize_t n;
		if (j->in_off < j->in_len) {
			n = write(j->fd, j->in + j->in_off, j->in_len - j->in_off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return true;
			if (n < 0) /* the terminal is gone: input has nowhere to go */
				j->in_off = j->in_len;
			else
				j->in_off += (size_t)n;
			continue;
		}
		j->in_off = j->in_len = 0;
		n = recv(j->sock, j->in, TTY_IN_BUF, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		if (n == 0)
			return false;
		j->in_len = (size_t)n;
	}
}

/* fd_ev, sock_ev: what poll said of the master and of the socket. */
static void tty_run(int ctl, struct job *j, short fd_ev, short sock_ev)
{
	int r;

	/* Input is looked at only when some came or the master takes more: each call here is
	 * a round trip through the Sentry. */
	if (((sock_ev & (POLLIN | POLLHUP | POLLERR)) || (fd_ev & POLLOUT)) && !tty_push(j)) {
		/* the client left: the terminal hangs up */
		j->fd_eof = true;
		j->len = 0;
		job_end(ctl, j);
		return;
	}
	/* Output is moved while the socket takes it (bounded by TTY_BUF per round). */
	for (int i = 0; i < BATCH; i++) {
		tty_pull(j);
		if ((r = flush(j)) < 0) {
			job_end(ctl, j);
			return;
		}
		if (r == 0 || j->fd_eof)
			break;
	}
	/* Everything the command wrote is on its way: its end may be told now. */
	if (j->exit_pending && j->len == 0) {
		send_init(ctl, &j->exit_msg);
		j->exit_pending = false;
	}
	if (j->fd_eof && j->len == 0)
		job_end(ctl, j);
}

/* ---- files ----------------------------------------------------------------------------- */

/* The first packet of every file stream: the opened object's status (and a symlink's text,
 * for an O_PATH descriptor of one). A new socket always has room for it. */
static int send_stat(int sock, int fd, char *buf)
{
	struct stat st;
	char link[AJ_FSS_LINK_MAX + 1];
	ssize_t n = -1;

	if (fstat(fd, &st) < 0)
		return errno;
	if (S_ISLNK(st.st_mode) && (n = readlinkat(fd, "", link, sizeof link - 1)) >= 0)
		link[n] = '\0';
	n = (ssize_t)aj_fss_stat_packet(buf, AJ_FSS_STAT, &st, NULL, n >= 0 ? link : NULL);
	return send(sock, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n ? 0 : errno;
}

static int send_end(int sock, char *buf, int err)
{
	size_t n = aj_fss_header(buf, AJ_FSS_END, err);

	return send(sock, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n ? 0 : errno;
}

int aj_init_stream_open(const char *path, int flags, mode_t mode, int sock)
{
	_cleanup_close_ int fd = -1, own = -1;
	_cleanup_free_ char *buf = NULL;
	enum job_kind kind;
	struct stat st;
	struct job *j;
	DIR *dir = NULL;
	int e;

	if (!room())
		return EMFILE;
	if ((e = aj_init_open_for_client(path, flags, mode, &fd)) != 0)
		return e;
	buf = aj_xmalloc(AJ_FSS_MAX_PACKET);
	if ((e = send_stat(sock, fd, buf)) != 0)
		return e;
	if (fstat(fd, &st) < 0)
		return errno;
	if (flags & O_PATH) /* a status is all a path's stream carries */
		return send_end(sock, buf, 0);
	kind = (flags & O_ACCMODE) != O_RDONLY ? J_WRITE : S_ISDIR(st.st_mode) ? J_DIR : J_READ;
	/* A directory opened as a file: its status says what it is, and read() would say EISDIR. */
	if (kind == J_DIR && !(flags & O_DIRECTORY))
		return send_end(sock, buf, EISDIR);
	if ((own = fcntl(sock, F_DUPFD_CLOEXEC, 3)) < 0) /* the caller closes its own copy */
		return errno;
	if (kind == J_DIR) {
		if (!(dir = fdopendir(fd)))
			return errno;
		fd = -1; /* the stream's now */
	}
	j = job_new(kind, aj_steal_fd(&own)); /* room() said there is a free slot */
	j->fd = aj_steal_fd(&fd);
	j->dir = dir;
	j->buf = aj_steal_ptr(&buf);
	return 0;
}

/* The next entry of a directory as an ENTRY packet in buf; 0 at the end, -1 on an error. */
static int next_entry(struct job *j)
{
	struct dirent *de;
	struct stat st;
	char link[AJ_FSS_LINK_MAX + 1];
	ssize_t n;

	for (;;) {
		errno = 0;
		if (!(de = readdir(j->dir)))
			return errno ? -1 : 0;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* Looked at through the directory, never followed: lstat and the link's text. */
		if (fstatat(dirfd(j->dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* removed meanwhile */
		n = S_ISLNK(st.st_mode) ? readlinkat(dirfd(j->dir), de->d_name, link, sizeof link - 1)
					: -1;
		if (n >= 0)
			link[n] = '\0';
		j->len = aj_fss_stat_packet(j->buf, AJ_FSS_ENTRY, &st, de->d_name, n >= 0 ? link : NULL);
		j->off = 0;
		return 1;
	}
}

/* J_READ and J_DIR: packets while the socket takes them. */
static void send_run(int ctl, struct job *j)
{
	int r = flush(j);

	for (int i = 0; r > 0 && i < BATCH; i++) {
		if (j->ending) {
			job_end(ctl, j);
			return;
		}
		if (j->kind == J_DIR) {
			int e = next_entry(j);
			r = e > 0 ? flush(j) : put_end(j, e < 0 ? errno : 0);
		} else {
			char *p = j->buf + sizeof(struct aj_fss_hdr);
			ssize_t n = read(j->fd, p, AJ_FSS_MAX_DATA);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				r = put_end(j, n < 0 ? errno : 0);
			else
				r = put(j, aj_fss_header(j->buf, AJ_FSS_DATA, 0) + (size_t)n);
		}
	}
	if (r < 0 || (r > 0 && j->ending)) /* the reader left, or the end is sent */
		job_end(ctl, j);
}

/* J_WRITE: the client's packets. The end of the writes, or the first failure, is answered
 * with AJ_FSS_END; a client that leaves without AJ_FSS_END gets nothing, its file is closed. */
static void write_run(int ctl, struct job *j)
{
	struct aj_fss_packet pk;

	for (int i = 0; i < BATCH; i++) {
		ssize_t n = recv(j->sock, j->buf, AJ_FSS_MAX_PACKET, MSG_DONTWAIT);
		int e = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			job_end(ctl, j);
			return;
		}
		if (aj_fss_parse(j->buf, (size_t)n, &pk) < 0 ||
		    (pk.type != AJ_FSS_DATA && pk.type != AJ_FSS_END))
			e = EPROTO;
		else if (pk.type == AJ_FSS_DATA && aj_write_all(j->fd, pk.data, pk.len) < 0)
			e = errno;
		else if (pk.type == AJ_FSS_DATA)
			continue;
		/* The end: the file is closed first, since close reports a deferred write error. */
		if (close(aj_steal_fd(&j->fd)) < 0 && e == 0)
			e = errno;
		put(j, aj_fss_header(j->buf, AJ_FSS_END, e));
		job_end(ctl, j);
		return;
	}
}

/* ---- watches --------------------------------------------------------------------------- */

int aj_init_watch_stream(const char *path, uint32_t mask, int sock, uint64_t instance, int *wd,
			 uint64_t *out)
{
	_cleanup_close_ int ifd = -1, own = -1;
	struct job *j;

	if (instance) {
		if (!(j = find(J_WATCH, instance)))
			return ESRCH;
		*wd = inotify_add_watch(j->fd, path, mask | IN_ONLYDIR);
		*out = instance;
		return *wd < 0 ? errno : 0;
	}
	if (sock < 0)
		return EPROTO;
	if (!room())
		return EMFILE;
	if ((ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0)
		return errno;
	if ((*wd = inotify_add_watch(ifd, path, mask | IN_ONLYDIR)) < 0)
		return errno;
	if ((own = fcntl(sock, F_DUPFD_CLOEXEC, 3)) < 0) /* the caller closes its own copy */
		return errno;
	j = job_new(J_WATCH, aj_steal_fd(&own));
	j->fd = aj_steal_fd(&ifd);
	j->id = next_instance++;
	j->buf = aj_xmalloc(AJ_FSS_MAX_DATA);
	*out = j->id;
	return 0;
}

static void watch_run(int ctl, struct job *j, short sock_events)
{
	char b[64];
	int r = flush(j);

	/* Nothing is ever read from the socket: readable means its reader is gone. */
	if (r < 0 || ((sock_events & (POLLIN | POLLHUP | POLLERR)) &&
		      recv(j->sock, b, sizeof b, MSG_DONTWAIT) == 0)) {
		job_end(ctl, j);
		return;
	}
	for (int i = 0; r > 0 && i < BATCH; i++) {
		ssize_t n = read(j->fd, j->buf, AJ_FSS_MAX_DATA);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* EAGAIN; a full socket leaves the events to the instance's queue */
		r = put(j, (size_t)n);
	}
	if (r < 0)
		job_end(ctl, j);
}

/* ---- the poll loop ----------------------------------------------------------------------- */

static size_t add(struct pollfd *p, size_t n, struct job *j, int fd, short events, bool sock)
{
	if (fd < 0 || n >= AJ_INIT_STREAM_POLLFDS)
		return n;
	p[n] = (struct pollfd){.fd = fd, .events = events};
	polled[n].j = j;
	polled[n].is_sock = sock;
	return n + 1;
}

size_t aj_init_streams_poll(struct pollfd *p, int *timeout_ms)
{
	size_t n = 0;

	*timeout_ms = -1;
	for (size_t i = 0; i < MAX_JOBS; i++) {
		struct job *j = &jobs[i];
		switch (j->kind) {
		case J_TTY:
			n = add(p, n, j, j->fd,
				(short)((!j->fd_eof && j->len < TTY_BUF ? POLLIN : 0) |
					(j->in_off < j->in_len ? POLLOUT : 0)),
				false);
			n = add(p, n, j, j->sock,
				(short)((j->in_off >= j->in_len ? POLLIN : 0) | (j->len ? POLLOUT : 0)),
				true);
			if (j->exit_pending && j->len == 0)
				*timeout_ms = 0;
			break;
		case J_READ:
		case J_DIR:
			n = add(p, n, j, j->sock, POLLOUT, true);
			break;
		case J_WRITE:
			n = add(p, n, j, j->sock, POLLIN, true);
			break;
		case J_WATCH:
			n = add(p, n, j, j->fd, j->len ? 0 : POLLIN, false);
			n = add(p, n, j, j->sock, (short)(POLLIN | (j->len ? POLLOUT : 0)), true);
			break;
		case J_FREE:
			break;
		}
	}
	return n;
}

void aj_init_streams_run(int ctl, const struct pollfd *p, size_t n)
{
	/* Each job runs once per wake-up, if any of its descriptors is ready (a terminal whose
	 * command ended also without: its end waits for nothing else). */
	for (size_t i = 0; i < MAX_JOBS; i++) {
		struct job *j = &jobs[i];
		short sock_ev = 0, fd_ev = 0;
		bool ready = j->kind == J_TTY && j->exit_pending;

		for (size_t k = 0; k < n; k++)
			if (polled[k].j == j && p[k].revents) {
				ready = true;
				if (polled[k].is_sock)
					sock_ev = p[k].revents;
				else
					fd_ev = p[k].revents;
			}
		if (!ready)
			continue;
		switch (j->kind) {
		case J_TTY: tty_run(ctl, j, fd_ev, sock_ev); break;
		case J_READ:
		case J_DIR: send_run(ctl, j); break;
		case J_WRITE: write_run(ctl, j); break;
		case J_WATCH: watch_run(ctl, j, sock_ev); break;
		case J_FREE: break;
		}
	}
}
