/* POST /v1/sandboxes/{ref}/exec without a worker: the loop thread sends the spawn request to
 * the sandbox's supervisor itself when it already knows the supervisor's control socket.
 *
 * Why: a warm exec is a chain of hand-overs (client, loop, worker, supervisor, init, the
 * command, and back); the worker's part (a thread woken, the store read, the loop woken
 * again) was two of them plus the lookup. Each exec a worker made successfully leaves its
 * (owner, reference) -> socket in a small table of the loop thread; the next exec of that
 * owner with that reference connects to the socket from the loop and goes on as the worker
 * would have.
 *
 * Why it is safe to skip the store: the socket's path is the sandbox's id, which is never
 * reused, and the table is keyed by the owner the lookup was made for (a sandbox's owner
 * never changes; the warm pool's, which a claim changes, are reachable by no owner). A
 * sandbox that stopped, was removed or whose supervisor died has no listening socket there:
 * the connection fails, the entry is forgotten and a worker looks the reference up as
 * before (so a name given to a new sandbox is found). A sandbox that is paused or stopping
 * answers the spawn itself, as it does on the worker's way. A connection that breaks before
 * the answer is handed to a worker too.
 *
 * An entry also keeps one connection whose last exec ended (aj_srv_socks_park()): the next
 * exec sends its spawn on it instead of connecting, which costs both processes a connection's
 * set-up and tear-down (about 40 us of a 0.8 ms exec, measured with bench/exec-loop.c). It is
 * parked only by a stream that read its command's exit (nothing of it can still come, no
 * request of ours is unanswered) and only in the entry of the same owner, reference and
 * socket it was made for. A parked connection that its supervisor closed fails the send:
 * closed, and the exec connects as before.
 *
 * Loop thread only; the table belongs to the process (one daemon per process).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"
#include "control/proto.h"
#include "server/procs_internal.h"

#define SLOTS 256 /* direct-mapped: a collision only costs the next exec a lookup */

struct sock_entry {
	char owner[AJ_SRV_OWNER_MAX];
	char ref[sizeof ((struct aj_srv_req *)0)->ref];
	char socket[sizeof ((struct aj_srv_pdata *)0)->socket];
	bool any_owner;
	int idle; /* a connection to socket with nothing pending, or 0: none (fds 0-2 are taken) */
};

static struct sock_entry table[SLOTS];

static struct sock_entry *slot_of(const struct aj_srv_sockkey *k)
{
	uint32_t h = 2166136261u; /* FNV-1a over owner, a separator, reference */

	for (const char *p = k->owner; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	h = (h ^ 0xffu) * 16777619u;
	for (const char *p = k->ref; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return &table[h % SLOTS];
}

static struct sock_entry *find_key(const struct aj_srv_sockkey *k)
{
	struct sock_entry *e = slot_of(k);

	return e->socket[0] && e->any_owner == k->any_owner && !strcmp(e->ref, k->ref) &&
			       !strcmp(e->owner, k->owner)
		       ? e
		       : NULL;
}

static void key_of(const struct aj_srv_req *r, struct aj_srv_sockkey *k)
{
	snprintf(k->owner, sizeof k->owner, "%s", r->job.owner);
	snprintf(k->ref, sizeof k->ref, "%s", r->ref);
	k->any_owner = r->job.any_owner;
}

static struct sock_entry *find(const struct aj_srv_req *r)
{
	struct aj_srv_sockkey k = {.any_owner = false};

	key_of(r, &k);
	return find_key(&k);
}

static void drop_idle(struct sock_entry *e)
{
	if (e->idle > 0)
		close(e->idle);
	e->idle = 0;
}

void aj_srv_socks_put(const struct aj_srv_req *r, const char *socket)
{
	struct aj_srv_sockkey k = {.any_owner = false};
	struct sock_entry *e, *known;

	key_of(r, &k);
	e = slot_of(&k);
	known = find_key(&k); /* e or NULL */
	if (strlen(socket) >= sizeof e->socket)
		return;
	if (known && !strcmp(known->socket, socket))
		return; /* known already: its parked connection stays */
	drop_idle(e);
	snprintf(e->owner, sizeof e->owner, "%s", k.owner);
	snprintf(e->ref, sizeof e->ref, "%s", k.ref);
	snprintf(e->socket, sizeof e->socket, "%s", socket);
	e->any_owner = k.any_owner;
}

void aj_srv_socks_key(const struct aj_srv_req *r, struct aj_srv_sockkey *k)
{
	key_of(r, k);
}

void aj_srv_socks_park(const struct aj_srv_sockkey *k, const char *socket, int fd)
{
	struct sock_entry *e = find_key(k);

	if (!e || e->idle > 0 || strcmp(e->socket, socket) != 0 || fd <= 2) {
		close(fd);
		return;
	}
	e->idle = fd;
}

static void forget(const struct aj_srv_req *r)
{
	struct sock_entry *e = find(r);

	if (e) {
		drop_idle(e);
		e->socket[0] = '\0';
	}
}

/* The way closed after the request was sent: the supervisor went away. A worker looks the
 * sandbox up again (and reports what it finds: stopped, removed...). */
static void to_worker(struct aj_srv_req *r, struct aj_srv_pdata *d)
{
	forget(r);
	event_free(d->ev);
	d->ev = NULL;
	aj_close_fd(&d->ctl);
	aj_srv_pool_submit(r->srv, &r->job);
}

static void answered(struct aj_srv_req *r, struct aj_srv_pdata *d, json_t *msg)
{
	struct aj_err err;

	event_free(d->ev);
	d->ev = NULL;
	if (!json_is_true(json_object_get(msg, "ok"))) {
		aj_ctl_take_error(msg, &err);
		aj_srv_proc_fail(r, d, &err);
		if (d->start_failed) /* said in the stream as the command's end */
			r->failed = false;
	} else {
		d->exec = (uint64_t)json_integer_value(json_object_get(msg, "exec"));
		d->pid = (int)json_integer_value(json_object_get(msg, "pid"));
	}
	aj_srv_exec_started(r);
}

static void on_answer(evutil_socket_t fd, short what, void *arg)
{
	struct aj_srv_req *r = arg;
	struct aj_srv_pdata *d = r->data;
	struct timeval tv = {AJ_SRV_CALL_MS / 1000, 0};
	_cleanup_json_ json_t *msg = NULL;

	if (what & EV_TIMEOUT) {
		event_free(d->ev);
		d->ev = NULL;
		aj_srv_fail(r, 504, "timeout", NULL, "the sandbox's supervisor did not answer within "
						    "%d s",
			    AJ_SRV_CALL_MS / 1000);
		aj_srv_exec_started(r);
		return;
	}
	/* No descriptors wanted: any that come are closed. */
	if (aj_ctl_recv((int)fd, &msg, NULL, NULL, 0) < 0) {
		int e = errno;

		if (e == EAGAIN || e == ETIMEDOUT) {
			event_add(d->ev, &tv);
		} else if (e == EPIPE || e == ECONNRESET) {
			to_worker(r, d); /* closed unanswered: the supervisor went away */
		} else {
			/* It answered, but not in a way we can read: the command may have started,
			 * and a worker's second spawn would start it twice. Failed as a worker's
			 * call that read this answer fails. */
			struct aj_err err;

			event_free(d->ev);
			d->ev = NULL;
			aj_err_set(&err, AJ_LAYER_PROCESS, e, "the answer of the sandbox's supervisor");
			aj_srv_proc_fail(r, d, &err);
			aj_srv_exec_started(r);
		}
		return;
	}
	if (json_object_get(msg, "event")) { /* not the answer: none can precede it */
		event_add(d->ev, &tv);
		return;
	}
	answered(r, d, msg);
}

/* The parked connection, if it takes the spawn; else 0. One with anything to read (an end of
 * file, a message nobody expects) is not used: its next answer could be taken for ours. */
static int send_parked(struct sock_entry *e, json_t *spawn)
{
	int fd = e->idle;
	char b;

	e->idle = 0;
	if (fd > 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN &&
	    aj_ctl_send(fd, spawn, NULL, 0) == 0)
		return fd;
	if (fd > 0)
		close(fd);
	return 0;
}

int aj_srv_exec_direct(struct aj_srv_req *r, struct aj_srv_pdata *d)
{
	struct sock_entry *e = find(r);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {AJ_SRV_CALL_MS / 1000, 0};
	_cleanup_close_ int fd = -1;

	if (!e)
		return -1;
	snprintf(d->socket, sizeof d->socket, "%s", e->socket);
	fd = send_parked(e, d->spawn);
	if (fd > 0)
		goto sent;
	fd = -1;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", e->socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    aj_ctl_send(fd, d->spawn, NULL, 0) < 0) {
		d->socket[0] = '\0';
		forget(r);
		return -1;
	}
sent:
	d->ev = event_new(r->srv->base, fd, EV_READ, on_answer, r);
	if (!d->ev || event_add(d->ev, &tv) < 0) {
		/* Sent already: a worker's second spawn would start the command twice. */
		aj_srv_fail(r, 500, "internal", NULL, "out of memory");
		aj_srv_req_finish(r);
		return 0;
	}
	d->ctl = aj_steal_fd(&fd);
	return 0;
}
