/* Blind tunnels (CONNECT and SOCKS to hosts without a credential, upgraded connections)
 * relayed inside the kernel with splice(2): no copy through the proxy's memory, and no
 * event-loop round trip per chunk. With bufferevents, every 16-256 KiB cost a read, a write
 * and two epoll_ctl calls (libevent re-arms the write event each time an output buffer fills
 * and drains): throughput through the proxy was a seventh of loopback's.
 *
 * One pipe serves every tunnel of the proxy (struct aj_egress.spipe): a wake-up splices what
 * a socket holds into it and at once out of it into the other socket. Only what the other
 * socket cannot take now is read out of the pipe into that direction's buffer, so the pipe is
 * empty between wake-ups and a tunnel costs two descriptors, not six (thousands of tunnels
 * must fit under RLIMIT_NOFILE). A direction with buffered bytes reads no more until they are
 * out: its memory is bounded by one pipe's worth.
 *
 * A tunnel switches over once the proxy has written its last reply: whatever is still
 * buffered in either bufferevent (the "200 Connection established", bytes the client sent
 * early) goes out first, then the sockets are taken from the bufferevents (duplicated: the
 * bufferevents close theirs) and watched with plain events. EOF on one side is passed on as a
 * shutdown of the other side's write half; the tunnel closes when both directions ended.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "egress/internal.h"

#define SPLICE_PIPE (1024 * 1024)
/* Bytes one direction may move per wake-up before the loop serves other connections. */
#define SPLICE_BUDGET (8u << 20)

struct sp_dir {
	int from, to;         /* indexes into sp->fd */
	struct evbuffer *pre; /* bytes the other side could not take yet, written first */
	bool eof, shut;
};

struct eg_splice {
	struct pconn *pc;
	int fd[2];          /* 0: the sandbox's connection, 1: the upstream */
	struct event *ev[2];
	short want[2];
	struct sp_dir d[2]; /* 0: sandbox -> upstream, 1: upstream -> sandbox */
};

int aj_egress_spipe_open(struct aj_egress *eg)
{
	int size;

	if (pipe2(eg->spipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		eg->spipe[0] = eg->spipe[1] = -1;
		return -1;
	}
	/* A larger pipe moves more per splice; the kernel may refuse (pipe-max-size, the
	 * user's pipe quota), which only costs speed. */
	fcntl(eg->spipe[1], F_SETPIPE_SZ, SPLICE_PIPE);
	size = fcntl(eg->spipe[1], F_GETPIPE_SZ);
	eg->spipe_size = size > 0 ? (size_t)size : 65536;
	return 0;
}

void aj_egress_spipe_close(struct aj_egress *eg)
{
	for (int i = 0; i < 2; i++)
		aj_close_fd(&eg->spipe[i]);
}

void sp_free(struct eg_splice *sp)
{
	if (!sp)
		return;
	for (int i = 0; i < 2; i++) {
		if (sp->ev[i])
			event_free(sp->ev[i]);
		aj_close_fd(&sp->fd[i]);
		if (sp->d[i].pre)
			evbuffer_free(sp->d[i].pre);
	}
	free(sp);
}

static void sp_freep(struct eg_splice **sp)
{
	sp_free(*sp);
}

/* Empties the shared pipe of n bytes into buf (NULL: discards them). The pipe is empty
 * between wake-ups, whatever happened to this tunnel. */
static int unpipe(struct aj_egress *eg, struct evbuffer *buf, size_t n)
{
	char scratch[16384];

	while (n > 0) {
		int got = buf ? evbuffer_read(buf, eg->spipe[0], (int)n)
			      : (int)read(eg->spipe[0], scratch, n < sizeof scratch ? n : sizeof scratch);
		if (got <= 0) {
			/* Cannot happen with the bytes in the pipe; if it did, the pipe is no
			 * longer known to be empty: stop splicing. */
			aj_egress_spipe_close(eg);
			return -1;
		}
		n -= (size_t)got;
	}
	return 0;
}

/* Moves what can move now in one direction. -1: the connection is broken. */
static int pump(struct eg_splice *sp, struct sp_dir *d, bool upward)
{
	struct pconn *pc = sp->pc;
	struct aj_egress *eg = pc->eg;
	int to = sp->fd[d->to], from = sp->fd[d->from];
	size_t moved = 0;

	while (moved < SPLICE_BUDGET) {
		ssize_t n, m;
		if (evbuffer_get_length(d->pre)) {
			if (evbuffer_write(d->pre, to) < 0)
				return errno == EAGAIN ? 0 : -1;
			continue;
		}
		if (d->eof) {
			if (!d->shut)
				shutdown(to, SHUT_WR);
			d->shut = true;
			return 0;
		}
		if (eg->spipe[0] < 0)
			return -1;
		n = splice(from, NULL, eg->spipe[1], NULL, eg->spipe_size,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n <= 0) {
			d->eof = n == 0;
			if (n < 0)
				return errno == EAGAIN ? 0 : -1;
			continue;
		}
		/* Counted as it leaves its socket: what the other side cannot take yet is
		 * buffered and sent later. */
		moved += (size_t)n;
		*(upward ? &pc->bytes_up : &pc->bytes_down) += (uint64_t)n;
		m = splice(eg->spipe[0], NULL, to, NULL, (size_t)n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (m < 0 && errno != EAGAIN) {
			unpipe(eg, NULL, (size_t)n);
			return -1;
		}
		m = m < 0 ? 0 : m;
		if (m < n && unpipe(eg, d->pre, (size_t)(n - m)) < 0)
			return -1;
		if (!eg_count(eg, upward ? (uint64_t)n : 0, upward ? 0 : (uint64_t)n))
			return -1;
	}
	return 0; /* budget spent: the socket stays readable, the loop comes back */
}

static void on_ready(evutil_socket_t fd, short what, void *arg);

/* Read interest while a direction can take more, write interest while it holds bytes. */
static int rearm(struct eg_splice *sp)
{
	struct timeval idle = {EG_IDLE_TIMEOUT_S, 0};
	short want[2] = {0, 0};

	for (int i = 0; i < 2; i++) {
		struct sp_dir *d = &sp->d[i];
		if (!d->eof && !evbuffer_get_length(d->pre))
			want[d->from] |= EV_READ;
		if (evbuffer_get_length(d->pre))
			want[d->to] |= EV_WRITE;
	}
	for (int i = 0; i < 2; i++) {
		if (want[i] == sp->want[i] && sp->ev[i])
			continue;
		if (sp->ev[i])
			event_free(sp->ev[i]);
		sp->ev[i] = NULL;
		sp->want[i] = want[i];
		if (!want[i])
			continue;
		sp->ev[i] = event_new(sp->pc->eg->base, sp->fd[i], want[i] | EV_PERSIST, on_ready,
				      sp);
		if (!sp->ev[i] || event_add(sp->ev[i], &idle) < 0)
			return -1;
	}
	return 0;
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct eg_splice *sp = arg;
	struct pconn *pc = sp->pc;

	(void)fd;
	pc_hold(pc);
	if ((what & EV_TIMEOUT) || pump(sp, &sp->d[0], true) < 0 ||
	    pump(sp, &sp->d[1], false) < 0 || (sp->d[0].shut && sp->d[1].shut) || rearm(sp) < 0)
		pc_close(pc);
	pc_release(pc);
}

/* Takes a bufferevent's socket (a duplicate) and what it still holds: its unread input goes
 * to `in`, its unsent output to `out`. */
static int take(struct bufferevent *b, int *fd, struct evbuffer *in, struct evbuffer *out)
{
	struct evbuffer *o = bufferevent_get_output(b);

	*fd = fcntl(bufferevent_getfd(b), F_DUPFD_CLOEXEC, 0);
	if (*fd < 0)
		return -1;
	/* A bufferevent's output may only be drained by the bufferevent itself (its start is
	 * frozen): it is about to be freed, so the freeze goes. */
	evbuffer_unfreeze(o, 1);
	if (evbuffer_add_buffer(in, bufferevent_get_input(b)) < 0 || evbuffer_add_buffer(out, o) < 0)
		return -1;
	return 0;
}

static struct eg_splice *sp_new(struct pconn *pc)
{
	__attribute__((cleanup(sp_freep))) struct eg_splice *sp = aj_xcalloc(1, sizeof *sp);

	sp->pc = pc;
	sp->fd[0] = sp->fd[1] = -1;
	for (int i = 0; i < 2; i++) {
		sp->d[i].from = i;
		sp->d[i].to = 1 - i;
		sp->d[i].pre = evbuffer_new();
		if (!sp->d[i].pre)
			return NULL;
	}
	return aj_steal_ptr(&sp);
}

int sp_start(struct pconn *pc)
{
	__attribute__((cleanup(sp_freep))) struct eg_splice *sp = NULL;
	_cleanup_evbuffer_ struct evbuffer *from_up_early = NULL;
	size_t queued;

	/* TLS filters hold plaintext the kernel never sees: those stay with bufferevents. */
	if (pc->eg->spipe[0] < 0 || bufferevent_get_underlying(pc->cli) ||
	    bufferevent_get_underlying(pc->up))
		return -1;
	sp = sp_new(pc);
	from_up_early = evbuffer_new();
	if (!sp || !from_up_early)
		return -1;
	/* Order on each wire: what the proxy already queued for it, then what the other side
	 * sent early. */
	if (take(pc->up, &sp->fd[1], from_up_early, sp->d[0].pre) < 0)
		return -1;
	queued = evbuffer_get_length(sp->d[0].pre);
	if (take(pc->cli, &sp->fd[0], sp->d[0].pre, sp->d[1].pre) < 0)
		return -1;
	pc->bytes_up += evbuffer_get_length(sp->d[0].pre) - queued;
	/* Early bytes of either side are payload; the proxy's own replies are not. */
	pc->bytes_down += evbuffer_get_length(from_up_early);
	evbuffer_add_buffer(sp->d[1].pre, from_up_early);
	bufferevent_free(pc->cli);
	bufferevent_free(pc->up);
	pc->cli = pc->up = NULL;
	pc->sp = aj_steal_ptr(&sp);
	pc->state = PS_TUNNEL;
	on_ready(-1, 0, pc->sp);
	return 0;
}
