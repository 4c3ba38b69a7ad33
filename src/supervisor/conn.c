/* Client connections on the control socket: accepting, reading requests, and sending in order.
 *
 * A client may fall behind (a daemon relaying a process's output to a slow HTTP client).
 * Messages it cannot take yet wait in its queue, in order; the queue's size is what process
 * output checks before reading more (procs.c), so a slow client slows the process down, as
 * a terminal would, instead of growing the supervisor without bound. A connection whose
 * peer is gone is only marked dead when sending fails: it is freed from its read event, so
 * that no caller is left holding a freed connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "control/proto.h"
#include "supervisor/persist.h"
#include "supervisor/procs.h"

struct outmsg {
	json_t *msg;
	int fds[AJ_CTL_MAX_FDS];
	size_t nfds;
	size_t bytes;
	struct outmsg *next;
};

static void free_msg(struct outmsg *m)
{
	aj_fds_close(m->fds, m->nfds);
	json_decref(m->msg);
	free(m);
}

static void drop_queue(struct conn *c)
{
	while (c->qhead) {
		struct outmsg *m = c->qhead;
		c->qhead = m->next;
		free_msg(m);
	}
	c->qtail = NULL;
	c->qbytes = 0;
}

static void mark_dead(struct conn *c)
{
	c->dead = true;
	drop_queue(c);
	if (c->wev)
		event_del(c->wev);
}

/* Sends what the queue holds; false on a hard error. */
static bool flush(struct conn *c)
{
	while (c->qhead) {
		struct outmsg *m = c->qhead;
		if (aj_ctl_send(c->fd, m->msg, m->fds, m->nfds) < 0)
			return errno == EAGAIN || errno == ENOBUFS;
		c->qhead = m->next;
		if (!c->qhead)
			c->qtail = NULL;
		c->qbytes -= m->bytes;
		free_msg(m);
	}
	return true;
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (!flush(c)) {
		mark_dead(c);
		return;
	}
	if (c->qhead)
		event_add(c->wev, NULL);
	else
		aj_procs_on_drained(c->p);
}

static int enqueue(struct conn *c, json_t *msg, const int *fds, size_t nfds)
{
	struct outmsg *m = aj_xcalloc(1, sizeof *m);

	m->msg = msg;
	for (size_t i = 0; i < nfds; i++) {
		m->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (m->fds[i] < 0) {
			m->nfds = i;
			m->msg = NULL;
			free_msg(m);
			return -1;
		}
		m->nfds = i + 1;
	}
	/* Queue accounting only needs an estimate; output events dominate and are sized. */
	m->bytes = 256 + (size_t)json_integer_value(json_object_get(msg, "size"));
	if (c->qtail)
		c->qtail->next = m;
	else
		c->qhead = m;
	c->qtail = m;
	c->qbytes += m->bytes;
	return event_add(c->wev, NULL);
}

void aj_conn_send(struct conn *c, json_t *msg, const int *fds, size_t nfds)
{
	if (c->dead) {
		json_decref(msg);
		return;
	}
	if (!c->qhead) {
		if (aj_ctl_send(c->fd, msg, fds, nfds) == 0) {
			json_decref(msg);
			return;
		}
		if (errno != EAGAIN && errno != ENOBUFS) {
			json_decref(msg);
			mark_dead(c);
			return;
		}
	}
	if (enqueue(c, msg, fds, nfds) < 0) {
		json_decref(msg);
		mark_dead(c);
	}
}

void aj_persist_conn_close(struct persist *p, struct conn *c)
{
	for (struct conn **pc = &p->conns; *pc; pc = &(*pc)->next)
		if (*pc == c) {
			*pc = c->next;
			break;
		}
	/* Commands it started run on; answers still pending for it go nowhere. */
	for (struct exec_rec *e = p->execs; e; e = e->next)
		if (e->owner == c)
			e->owner = NULL;
	for (struct pending *q = p->pendings; q; q = q->next)
		if (q->owner == c)
			q->owner = NULL;
	aj_procs_forget_conn(p, c);
	if (p->pause_lease == c) {
		p->pause_lease = NULL;
		if (p->paused && !p->stopping)
			aj_persist_set_paused(p, false, NULL);
	}
	drop_queue(c);
	if (c->wev)
		event_free(c->wev);
	event_free(c->ev);
	aj_close_fd(&c->fd);
	free(c);
}

/* Best effort before the supervisor exits: what is queued, without waiting. */
void aj_persist_conn_flush_all(struct persist *p)
{
	for (struct conn *c = p->conns; c; c = c->next)
		if (!c->dead)
			flush(c);
}

static void on_conn(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	_cleanup_json_ json_t *req = NULL;
	/* Lent to the request's handler, which passes on copies; closed here. */
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0};

	(void)fd;
	(void)what;
	if (c->dead) {
		aj_persist_conn_close(c->p, c);
		return;
	}
	if (aj_ctl_recv(c->fd, &req, fds.v, &fds.n, 0) < 0) {
		if (errno == EPROTO) {
			struct aj_err err;
			aj_err_set(&err, AJ_LAYER_USAGE, EPROTO, "a request must be a JSON object");
			aj_conn_send(c, aj_ctl_error(&err), NULL, 0);
			return;
		}
		if (errno != EAGAIN && errno != ETIMEDOUT)
			aj_persist_conn_close(c->p, c);
		return;
	}
	aj_persist_dispatch(c->p, c, req, fds.v, fds.n);
}

static struct conn *new_conn(struct persist *p, int cfd)
{
	struct conn *c = aj_xcalloc(1, sizeof *c);

	c->p = p;
	c->fd = cfd;
	c->ev = event_new(p->base, cfd, EV_READ | EV_PERSIST, on_conn, c);
	c->wev = event_new(p->base, cfd, EV_WRITE, on_writable, c);
	if (!c->ev || !c->wev || event_add(c->ev, NULL) < 0) {
		if (c->ev)
			event_free(c->ev);
		if (c->wev)
			event_free(c->wev);
		free(c);
		return NULL;
	}
	return c;
}

void aj_persist_on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;

	(void)fd;
	(void)what;
	for (;;) {
		_cleanup_close_ int cfd =
			accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c;

		if (cfd < 0)
			return;
		if (!(c = new_conn(p, cfd)))
			continue;
		aj_steal_fd(&cfd); /* c->fd */
		c->next = p->conns;
		p->conns = c;
	}
}
