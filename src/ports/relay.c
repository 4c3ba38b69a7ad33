#include "ports/relay.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"

#define RELAY_PIPE (1024 * 1024)
/* Bytes one direction may move per wake-up before the loop serves other connections. */
#define RELAY_BUDGET (8u << 20)
/* At most this much is taken from a socket at a time: what the other side cannot take is
 * held in the relay's memory (the supervisor's, not the sandbox's), so a sender that floods
 * a reader that does not read holds at most this much per direction. */
#define RELAY_CHUNK (64 * 1024)
/* A connection with no byte either way this long is closed; once one side has ended, the
 * other has this long to end too (a server inside that never closes, a client gone). */
#define RELAY_IDLE_S (15 * 60)
#define RELAY_HALF_CLOSED_S 30

struct rdir {
	int from, to;         /* indexes into r->fd */
	struct evbuffer *pre; /* bytes the other side could not take yet, written first */
	uint64_t bytes;
	bool eof, shut;
};

struct aj_relay {
	struct event_base *base;
	struct aj_relay_pipe *pipe;
	int fd[2];
	struct event *ev[2];
	short want[2];
	struct rdir d[2]; /* 0: a -> b, 1: b -> a */
	enum aj_relay_gate gate;
	size_t seen; /* AJ_RELAY_UPGRADE: bytes of b's answer read so far */
	aj_relay_done_fn done;
	void *arg;
};

int aj_relay_pipe_open(struct aj_relay_pipe *p)
{
	int size;

	if (pipe2(p->fd, O_NONBLOCK | O_CLOEXEC) < 0) {
		p->fd[0] = p->fd[1] = -1;
		return -1;
	}
	/* A larger pipe moves more per splice; the kernel may refuse (pipe-max-size, the
	 * user's pipe quota), which only costs speed. */
	fcntl(p->fd[1], F_SETPIPE_SZ, RELAY_PIPE);
	size = fcntl(p->fd[1], F_GETPIPE_SZ);
	p->size = size > 0 ? (size_t)size : 65536;
	return 0;
}

void aj_relay_pipe_close(struct aj_relay_pipe *p)
{
	for (int i = 0; i < 2; i++)
		aj_close_fd(&p->fd[i]);
}

void aj_relay_free(struct aj_relay *r)
{
	if (!r)
		return;
	for (int i = 0; i < 2; i++) {
		if (r->ev[i])
			event_free(r->ev[i]);
		aj_close_fd(&r->fd[i]);
		if (r->d[i].pre)
			evbuffer_free(r->d[i].pre);
	}
	free(r);
}

/* Empties the shared pipe of n bytes into buf (NULL: discards them). */
static int unpipe(struct aj_relay_pipe *p, struct evbuffer *buf, size_t n)
{
	char scratch[16384];

	while (n > 0) {
		int got = buf ? evbuffer_read(buf, p->fd[0], (int)n)
			      : (int)read(p->fd[0], scratch, n < sizeof scratch ? n : sizeof scratch);
		if (got <= 0) {
			/* Cannot happen with the bytes in the pipe; if it did, the pipe is no
			 * longer known to be empty: no relay may use it again. */
			aj_relay_pipe_close(p);
			return -1;
		}
		n -= (size_t)got;
	}
	return 0;
}

/* The start of b's answer to an upgrade, read into the buffer it goes out of: "HTTP/1.x 101"
 * opens a's way, anything else closes it. 0 while undecided. */
#define STATUS_LEN 12
static int read_status(struct aj_relay *r, struct rdir *d)
{
	unsigned char *head;
	int got = evbuffer_read(d->pre, r->fd[d->from], (int)(STATUS_LEN - r->seen));

	if (got < 0)
		return errno == EAGAIN ? 0 : -1;
	if (got == 0) {
		d->eof = true;
		r->gate = AJ_RELAY_ONE;
		return 0;
	}
	r->seen += (size_t)got;
	d->bytes += (uint64_t)got;
	if (r->seen < STATUS_LEN)
		return 0;
	head = evbuffer_pullup(d->pre, STATUS_LEN);
	r->gate = head && (!memcmp(head, "HTTP/1.1 101", STATUS_LEN) ||
			   !memcmp(head, "HTTP/1.0 101", STATUS_LEN))
			  ? AJ_RELAY_OPEN
			  : AJ_RELAY_ONE;
	return 0;
}

/* a, closed after its request: a byte more ends the relay, end of file is passed on. */
static int watch_closed(struct aj_relay *r, struct rdir *d)
{
	char c;
	ssize_t n = recv(r->fd[d->from], &c, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n > 0)
		return -1;
	if (n == 0)
		d->eof = true;
	return n < 0 && errno != EAGAIN ? -1 : 0;
}

/* Moves what can move now in one direction. -1: the connection is broken. */
static int pump(struct aj_relay *r, struct rdir *d)
{
	struct aj_relay_pipe *p = r->pipe;
	int to = r->fd[d->to], from = r->fd[d->from];
	size_t moved = 0;

	while (moved < RELAY_BUDGET) {
		ssize_t n, m;
		if (evbuffer_get_length(d->pre)) {
			if (evbuffer_write(d->pre, to) < 0)
				return errno == EAGAIN ? 0 : -1;
			continue;
		}
		if (d == &r->d[1] && r->gate == AJ_RELAY_UPGRADE && !d->eof) {
			if (read_status(r, d) < 0)
				return -1;
			if (r->gate == AJ_RELAY_UPGRADE)
				return 0;
			continue;
		}
		if (d == &r->d[0] && r->gate != AJ_RELAY_OPEN && !d->eof) {
			if (r->gate == AJ_RELAY_UPGRADE || watch_closed(r, d) < 0)
				return r->gate == AJ_RELAY_UPGRADE ? 0 : -1;
			if (!d->eof)
				return 0;
			continue;
		}
		if (d->eof) {
			if (!d->shut)
				shutdown(to, SHUT_WR);
			d->shut = true;
			return 0;
		}
		if (p->fd[0] < 0)
			return -1;
		n = splice(from, NULL, p->fd[1], NULL, p->size < RELAY_CHUNK ? p->size : RELAY_CHUNK,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n <= 0) {
			d->eof = n == 0;
			if (n < 0)
				return errno == EAGAIN ? 0 : -1;
			continue;
		}
		moved += (size_t)n;
		d->bytes += (uint64_t)n;
		m = splice(p->fd[0], NULL, to, NULL, (size_t)n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (m < 0 && errno != EAGAIN) {
			unpipe(p, NULL, (size_t)n);
			return -1;
		}
		m = m < 0 ? 0 : m;
		if (m < n && unpipe(p, d->pre, (size_t)(n - m)) < 0)
			return -1;
	}
	return 0; /* budget spent: the socket stays readable, the loop comes back */
}

static void on_ready(evutil_socket_t fd, short what, void *arg);

/* Read interest while a direction can take more, write interest while it holds bytes; the
 * idle timeout on every event (re-armed when anything moves). */
static int rearm(struct aj_relay *r, bool moved)
{
	short want[2] = {0, 0};
	struct timeval idle = {r->d[0].eof || r->d[1].eof ? RELAY_HALF_CLOSED_S : RELAY_IDLE_S, 0};

	for (int i = 0; i < 2; i++) {
		struct rdir *d = &r->d[i];
		/* An upgrade's client waits for the answer before it may say more. */
		bool gated = i == 0 && r->gate == AJ_RELAY_UPGRADE;
		if (!d->eof && !evbuffer_get_length(d->pre) && !gated)
			want[d->from] |= EV_READ;
		if (evbuffer_get_length(d->pre))
			want[d->to] |= EV_WRITE;
	}
	for (int i = 0; i < 2; i++) {
		if (want[i] == r->want[i] && r->ev[i]) {
			if (moved && event_add(r->ev[i], &idle) < 0)
				return -1;
			continue;
		}
		if (r->ev[i])
			event_free(r->ev[i]);
		r->ev[i] = NULL;
		r->want[i] = want[i];
		if (!want[i])
			continue;
		r->ev[i] = event_new(r->base, r->fd[i], want[i] | EV_PERSIST, on_ready, r);
		if (!r->ev[i] || event_add(r->ev[i], &idle) < 0)
			return -1;
	}
	return 0;
}

static void finish(struct aj_relay *r)
{
	aj_relay_done_fn done = r->done;
	void *arg = r->arg;
	uint64_t ab = r->d[0].bytes, ba = r->d[1].bytes;

	aj_relay_free(r);
	if (done)
		done(arg, ab, ba);
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct aj_relay *r = arg;
	uint64_t before = r->d[0].bytes + r->d[1].bytes;
	bool ended = r->d[0].eof || r->d[1].eof;

	(void)fd;
	if ((what & EV_TIMEOUT) || pump(r, &r->d[0]) < 0 || pump(r, &r->d[1]) < 0 ||
	    (r->d[0].shut && r->d[1].shut) ||
	    rearm(r, r->d[0].bytes + r->d[1].bytes != before ||
			     ended != (r->d[0].eof || r->d[1].eof)) < 0)
		finish(r);
}

struct aj_relay *aj_relay_start(struct event_base *base, struct aj_relay_pipe *pipe, int a,
				int b, struct evbuffer *first, enum aj_relay_gate gate,
				aj_relay_done_fn done, void *arg)
{
	struct aj_relay *r = aj_xcalloc(1, sizeof *r);

	r->base = base;
	r->pipe = pipe;
	r->fd[0] = a;
	r->fd[1] = b;
	r->gate = gate;
	/* Bytes go on as they come: the endpoints' own writes decide the segments, as on a
	 * direct connection (Nagle's delay here would add to every request-reply turn). */
	for (int i = 0; i < 2; i++)
		setsockopt(r->fd[i], IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	for (int i = 0; i < 2; i++) {
		r->d[i].from = i;
		r->d[i].to = 1 - i;
		r->d[i].pre = evbuffer_new();
		if (!r->d[i].pre) {
			aj_relay_free(r);
			return NULL;
		}
	}
	if ((first && evbuffer_add_buffer(r->d[0].pre, first) < 0) || rearm(r, false) < 0) {
		aj_relay_free(r);
		return NULL;
	}
	r->done = done;
	r->arg = arg;
	return r;
}
