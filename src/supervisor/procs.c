/* Spawned commands (see procs.h): their stdio held here, their output kept in a bounded
 * buffer and forwarded to the connections that follow them. */
#include "supervisor/procs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/fdpass.h"
#include "common/util.h"
#include "control/proto.h"

#define RETAIN_BYTES (1u << 20)    /* output kept per command for late readers */
#define STDIN_MAX (1u << 20)       /* input waiting for the command to read it */
#define FOLLOW_HIGH (1u << 20)     /* a follower this far behind pauses the command */
#define MAX_FOLLOWERS 16
#define KEEP_DONE 64               /* ended commands kept ... */
#define KEEP_DONE_MS (10 * 60000u) /* ... for this long */
#define READ_CHUNK 32768
#define TTY_END_MS 100

enum { S_STDOUT, S_STDERR, S_PTY };
static const char *const stream_names[] = {"stdout", "stderr", "pty"};

struct chunk {
	uint64_t offset;
	uint64_t time_ms; /* when it was read: `agentjail logs` orders and filters by it */
	int stream;
	size_t len;
	struct chunk *next;
	char data[];
};

struct proc_io {
	struct persist *p;
	struct exec_rec *e;
	bool tty;
	bool relay;              /* the gvisor tier's terminal: out[0] is a socket to init's relay */
	int out[2];              /* stdout, stderr read ends; a terminal's master in out[0] */
	struct event *out_ev[2];
	int in;                  /* stdin's write end (a dup of the master for a terminal) */
	struct event *in_ev;
	char *inq;               /* input not written yet */
	size_t inq_len;
	bool in_eof;             /* close stdin once inq is written */
	struct chunk *head, *tail; /* retained output, oldest first */
	size_t retained;
	uint64_t total;          /* bytes the command wrote, both streams */
	uint64_t cap;            /* output limit of the policy, 0 = none */
	bool truncated, throttled;
	struct conn *followers[MAX_FOLLOWERS];
	size_t n_followers;
	struct conn *end_with;   /* kill_on_close: the connection whose closing kills it */
	json_t *exit_ev;         /* once ended */
	uint64_t ended_ms;
	json_t *argv;
	json_t *meta;            /* the client's own data about the command, returned by procs */
	char tag[128];
	uint64_t started_ms;
};

/* ---- lifetime ------------------------------------------------------------------------- */

static struct proc_io *io_new(struct persist *p, json_t *req)
{
	struct proc_io *io = aj_xcalloc(1, sizeof *io);

	io->p = p;
	io->out[0] = io->out[1] = io->in = -1;
	io->cap = p->pol.limits.output_bytes;
	io->argv = json_incref(json_object_get(req, "argv"));
	io->meta = json_incref(json_object_get(req, "meta"));
	snprintf(io->tag, sizeof io->tag, "%s", json_string_value(json_object_get(req, "tag")) ?: "");
	io->started_ms = aj_now_realtime_ms();
	return io;
}

static void unwatch_out(struct proc_io *io, int i)
{
	if (io->out_ev[i])
		event_free(io->out_ev[i]);
	io->out_ev[i] = NULL;
}

static void close_out(struct proc_io *io, int i)
{
	unwatch_out(io, i);
	aj_close_fd(&io->out[i]);
}

static void close_in(struct proc_io *io)
{
	if (io->in_ev)
		event_free(io->in_ev);
	io->in_ev = NULL;
	aj_close_fd(&io->in);
	free(io->inq);
	io->inq = NULL;
	io->inq_len = 0;
}

void aj_procs_io_free(struct proc_io *io)
{
	if (!io)
		return;
	close_out(io, 0);
	close_out(io, 1);
	close_in(io);
	while (io->head) {
		struct chunk *c = io->head;
		io->head = c->next;
		free(c);
	}
	json_decref(io->exit_ev);
	json_decref(io->argv);
	json_decref(io->meta);
	free(io);
}

static void free_exec(struct exec_rec *e)
{
	aj_procs_io_free(e->io);
	if (e->timer)
		event_free(e->timer);
	free(e);
}

/* ---- finding --------------------------------------------------------------------------- */

static struct exec_rec *find_spawned(struct persist *p, json_t *req, bool *running)
{
	uint64_t id = (uint64_t)json_integer_value(json_object_get(req, "exec"));

	for (struct exec_rec *e = p->execs; e; e = e->next)
		if (e->id == id && e->io) {
			*running = true;
			return e;
		}
	for (struct exec_rec *e = p->done; e; e = e->next)
		if (e->id == id) {
			*running = false;
			return e;
		}
	return NULL;
}

/* ---- followers ------------------------------------------------------------------------- */

static bool following(const struct proc_io *io, const struct conn *c)
{
	for (size_t i = 0; i < io->n_followers; i++)
		if (io->followers[i] == c)
			return true;
	return false;
}

static void unfollow(struct proc_io *io, const struct conn *c)
{
	for (size_t i = 0; i < io->n_followers; i++)
		if (io->followers[i] == c) {
			io->followers[i] = io->followers[--io->n_followers];
			return;
		}
}

static json_t *output_event(const struct proc_io *io, const struct chunk *ch, size_t skip)
{
	size_t n = ch->len - skip;
	_cleanup_free_ char *b64 = aj_xmalloc(aj_base64_len(n) + 1);

	aj_base64_encode(ch->data + skip, n, b64);
	return json_pack("{s:s, s:I, s:s, s:I, s:I, s:s, s:I}", "event", "output", "exec",
			 (json_int_t)io->e->id, "stream", stream_names[ch->stream], "offset",
			 (json_int_t)(ch->offset + skip), "size", (json_int_t)n, "data", b64,
			 "time_ms", (json_int_t)ch->time_ms);
}

static void send_to(struct conn *c, json_t *ev)
{
	if (ev)
		aj_conn_send(c, ev, NULL, 0);
}

static bool followers_behind(const struct proc_io *io)
{
	for (size_t i = 0; i < io->n_followers; i++)
		if (io->followers[i]->qbytes > FOLLOW_HIGH)
			return true;
	return false;
}

/* ---- output ------------------------------------------------------------------------------ */

static void retain(struct proc_io *io, struct chunk *ch)
{
	if (io->tail)
		io->tail->next = ch;
	else
		io->head = ch;
	io->tail = ch;
	io->retained += ch->len;
	while (io->retained > RETAIN_BYTES && io->head != io->tail) {
		struct chunk *old = io->head;
		io->head = old->next;
		io->retained -= old->len;
		free(old);
	}
}

static void over_cap(struct proc_io *io)
{
	struct persist *p = io->p;

	io->truncated = true;
	if (p->pol.limits.output_action == AJ_OUTPUT_KILL && io->e) {
		aj_persist_event(p, "limit", json_pack("{s:s, s:I}", "limit", "output", "exec",
						       (json_int_t)io->e->id));
		aj_persist_signal_exec(p, io->e->id, SIGKILL);
	}
}

static void take_output(struct proc_io *io, int stream, const char *buf, size_t n)
{
	struct chunk *ch;

	if (io->cap && io->total + n > io->cap) {
		size_t room = io->total < io->cap ? (size_t)(io->cap - io->total) : 0;
		if (!io->truncated)
			over_cap(io);
		io->total += n;
		if (!room)
			return;
		n = room;
		io->total -= n; /* counted below */
	}
	ch = aj_xmalloc(sizeof *ch + n);
	ch->offset = io->total;
	ch->time_ms = aj_now_realtime_ms();
	ch->stream = stream;
	ch->len = n;
	ch->next = NULL;
	memcpy(ch->data, buf, n);
	io->total += n;
	for (size_t i = 0; i < io->n_followers; i++)
		send_to(io->followers[i], output_event(io, ch, 0));
	retain(io, ch);
}

static void set_throttle(struct proc_io *io, bool on)
{
	io->throttled = on;
	for (int i = 0; i < 2; i++)
		if (io->out_ev[i]) {
			if (on)
				event_del(io->out_ev[i]);
			else
				event_add(io->out_ev[i], NULL);
		}
}

/* Reads what is there now; false once the stream has ended. */
static bool drain(struct proc_io *io, int i)
{
	char buf[READ_CHUNK];

	for (int rounds = 0; rounds < 8; rounds++) {
		ssize_t n = read(io->out[i], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0) /* EOF, or EIO from a terminal whose other side is closed */
			return false;
		take_output(io, io->tty ? S_PTY : i, buf, (size_t)n);
	}
	return true;
}

/* A terminal's last output can still be on its way from the command's side when its exit is
 * known, or even when the terminal already answered EIO (its other side closed): the kernel
 * moves it over in deferred work. So EIO before the exit only stops watching the terminal,
 * and at the exit it is read on until EIO, with poll (which flushes that work) in between,
 * waiting at most TTY_END_MS for a side that a child left behind holds. */
static void drain_tty_end(struct proc_io *io, int i)
{
	uint64_t end = aj_now_monotonic_us() + TTY_END_MS * 1000, now;

	while (drain(io, i) && (now = aj_now_monotonic_us()) < end) {
		struct pollfd pf = {.fd = io->out[i], .events = POLLIN};
		if (poll(&pf, 1, (int)((end - now + 999) / 1000)) <= 0)
			return;
	}
}

static void on_output(evutil_socket_t fd, short what, void *arg)
{
	struct proc_io *io = arg;
	int i = fd == io->out[0] ? 0 : 1;

	(void)what;
	if (drain(io, i)) {
		if (followers_behind(io))
			set_throttle(io, true);
	} else if (io->tty) {
		unwatch_out(io, i); /* read again at the exit: see drain_tty_end */
	} else {
		close_out(io, i);
	}
}

void aj_procs_on_drained(struct persist *p)
{
	for (struct exec_rec *e = p->execs; e; e = e->next)
		if (e->io && e->io->throttled && !followers_behind(e->io))
			set_throttle(e->io, false);
}

/* ---- input -------------------------------------------------------------------------------- */

static void pump_input(struct proc_io *io)
{
	while (io->in >= 0 && io->inq_len) {
		ssize_t n = write(io->in, io->inq, io->inq_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			event_add(io->in_ev, NULL);
			return;
		}
		if (n < 0) { /* the command closed its stdin: nothing more will be read */
			close_in(io);
			return;
		}
		memmove(io->inq, io->inq + n, io->inq_len - (size_t)n);
		io->inq_len -= (size_t)n;
	}
	if (io->in >= 0 && io->in_eof) {
		if (io->tty) /* a terminal has no end-of-file of its own: send its EOF character */
			(void)!write(io->in, "\x04", 1);
		close_in(io);
	}
}

static void on_stdin_writable(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump_input(arg);
}

static int queue_input(struct proc_io *io, const char *b64, bool eof, struct aj_err *err)
{
	size_t len = b64 ? strlen(b64) : 0;
	long n;
	char *q;

	if (io->in < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EPIPE, "the command's stdin is closed");
	if (io->inq_len + len / 4 * 3 + 3 > STDIN_MAX)
		return aj_err_set(err, AJ_LAYER_STATE, EAGAIN,
				  "the command has not read its earlier input yet; retry");
	q = io->inq = aj_xrealloc(io->inq, io->inq_len + len / 4 * 3 + 4);
	n = len ? aj_base64_decode(b64, len, (unsigned char *)q + io->inq_len) : 0;
	if (n < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "input: \"data\" must be base64");
	io->inq_len += (size_t)n;
	io->in_eof = io->in_eof || eof;
	pump_input(io);
	return 0;
}

/* ---- start and end ------------------------------------------------------------------------ */

static int watch(struct persist *p, struct proc_io *io)
{
	for (int i = 0; i < 2; i++) {
		if (io->out[i] < 0)
			continue;
		aj_fd_set_nonblock(io->out[i], true);
		io->out_ev[i] = event_new(p->base, io->out[i], EV_READ | EV_PERSIST, on_output, io);
		if (!io->out_ev[i] || event_add(io->out_ev[i], NULL) < 0)
			return -1;
	}
	if (io->in >= 0) {
		aj_fd_set_nonblock(io->in, true);
		io->in_ev = event_new(p->base, io->in, EV_WRITE, on_stdin_writable, io);
		if (!io->in_ev)
			return -1;
	}
	return 0;
}

void aj_procs_started(struct persist *p, struct exec_rec *e, struct pending *q)
{
	struct proc_io *io = e->io;

	io->e = e;
	if (watch(p, io) < 0) {
		aj_persist_signal_exec(p, e->id, SIGKILL);
		aj_persist_reply_err(q->owner, AJ_LAYER_INTERNAL, ENOMEM, "watch the command");
		return;
	}
	/* The command belongs to no client: it runs on when they go, unless the one that asked
	 * tied it to its connection; a client already gone kills it now. The supervisor sees a
	 * connection close whatever happened to its client, where a kill the client sends last
	 * can be lost (its socket full, or the client killed). */
	e->owner = NULL;
	if (q->owner && json_is_true(json_object_get(q->ctx, "attach")))
		io->followers[io->n_followers++] = q->owner;
	if (json_is_true(json_object_get(q->ctx, "kill_on_close"))) {
		io->end_with = q->owner;
		if (!q->owner)
			aj_persist_signal_exec(p, e->id, SIGKILL);
	}
	aj_persist_reply(q->owner,
			 json_pack("{s:b, s:I, s:i}", "ok", 1, "exec", (json_int_t)e->id, "pid",
				   e->pid),
			 NULL, 0);
	aj_persist_event(p, "spawn", json_pack("{s:I, s:O, s:s}", "exec", (json_int_t)e->id,
					       "argv", io->argv ? io->argv : json_null(), "tag",
					       io->tag));
	/* Input given with the request goes in before anything else can. */
	if (json_is_string(json_object_get(q->ctx, "input")) &&
	    queue_input(io, json_string_value(json_object_get(q->ctx, "input")),
			json_is_true(json_object_get(q->ctx, "input_eof")), NULL) < 0)
		aj_persist_signal_exec(p, e->id, SIGKILL);
}

static void keep_done(struct persist *p, struct exec_rec *e)
{
	size_t n = 0;
	struct exec_rec **pe;

	e->next = p->done;
	p->done = e;
	for (pe = &p->done; *pe; pe = &(*pe)->next)
		if (++n > KEEP_DONE) {
			struct exec_rec *old = *pe;
			*pe = NULL;
			while (old) {
				struct exec_rec *next = old->next;
				free_exec(old);
				old = next;
			}
			break;
		}
}

void aj_procs_exited(struct persist *p, struct exec_rec *e, json_t *exit_ev)
{
	struct proc_io *io = e->io;

	/* What the command wrote before it exited is in the pipes already. Output of children
	 * it left behind holding them is not waited for. */
	for (int i = 0; i < 2; i++)
		if (io->out[i] >= 0) {
			if (io->tty)
				drain_tty_end(io, i);
			else
				drain(io, i);
			close_out(io, i);
		}
	close_in(io);
	json_object_set_new(exit_ev, "output_truncated", json_boolean(io->truncated));
	json_object_set_new(exit_ev, "output_bytes", json_integer((json_int_t)io->total));
	if (io->truncated && p->pol.limits.output_action == AJ_OUTPUT_KILL)
		json_object_set_new(exit_ev, "limit", json_string("output"));
	for (size_t i = 0; i < io->n_followers; i++)
		send_to(io->followers[i], json_deep_copy(exit_ev));
	io->n_followers = 0;
	io->exit_ev = exit_ev;
	io->ended_ms = aj_now_realtime_ms();
	keep_done(p, e);
}

void aj_procs_expire(struct persist *p)
{
	uint64_t now = aj_now_realtime_ms();

	for (struct exec_rec **pe = &p->done; *pe;) {
		struct exec_rec *e = *pe;
		if (now - e->io->ended_ms > KEEP_DONE_MS) {
			*pe = e->next;
			free_exec(e);
		} else {
			pe = &e->next;
		}
	}
}

bool aj_procs_followed(const struct exec_rec *e)
{
	return e->io && e->io->n_followers > 0;
}

void aj_procs_forget_conn(struct persist *p, struct conn *c)
{
	for (struct exec_rec *e = p->execs; e; e = e->next) {
		if (!e->io)
			continue;
		unfollow(e->io, c);
		if (e->io->end_with == c) {
			e->io->end_with = NULL;
			aj_persist_signal_exec(p, e->id, SIGKILL);
		}
	}
	aj_procs_on_drained(p);
}

/* ---- requests ----------------------------------------------------------------------------- */

static int spawn_pipes(struct proc_io *io, bool want_stdin, int child[3], struct aj_err *err)
{
	int p[2];

	child[0] = child[1] = child[2] = -1;
	if (want_stdin) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "pipe for stdin");
		child[0] = p[0];
		io->in = p[1];
	} else if ((child[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		return aj_err_sys(err, AJ_LAYER_IO, "open /dev/null");
	}
	for (int i = 0; i < 2; i++) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "pipe for output");
		io->out[i] = p[0];
		child[1 + i] = p[1];
	}
	return 0;
}

/* Absent: the policy's timeout (as exec); 0: none. */
static void apply_timeout(struct pending *q, json_t *req)
{
	json_t *t = json_object_get(req, "timeout_ms");

	if (json_is_integer(t) && json_integer_value(t) == 0)
		q->timeout_ms = 0;
}

static void do_spawn(struct persist *p, struct conn *c, json_t *req)
{
	struct aj_err err;
	struct proc_io *io;
	struct pending *q;
	int child[3];

	if (p->paused) {
		aj_persist_reply_err(c, AJ_LAYER_STATE, EAGAIN, "the sandbox is paused; resume it first");
		return;
	}
	if (json_is_true(json_object_get(req, "tty"))) {
		if (aj_persist_start_tty(p, c, req, &err) < 0)
			aj_persist_reply(c, aj_ctl_error(&err), NULL, 0);
		return; /* continues in aj_procs_on_pty */
	}
	io = io_new(p, req);
	if (spawn_pipes(io, json_is_true(json_object_get(req, "stdin")), child, &err) < 0 ||
	    !(q = aj_persist_send_exec(p, c, req, child, 3, -1, &err))) {
		aj_fds_close(child, 3);
		aj_procs_io_free(io);
		aj_persist_reply(c, aj_ctl_error(&err), NULL, 0);
		return;
	}
	aj_fds_close(child, 3); /* copies went to init */
	q->io = io;
	apply_timeout(q, req);
}

void aj_procs_on_pty(struct persist *p, struct conn *owner, json_t *ctx, int master, int slave)
{
	struct aj_err err;
	struct proc_io *io = io_new(p, ctx);
	struct pending *eq;

	io->out[0] = master; /* taken over: freed with io */
	if ((io->in = fcntl(master, F_DUPFD_CLOEXEC, 3)) < 0) {
		aj_persist_reply_err(owner, AJ_LAYER_INTERNAL, errno, "spawn");
		aj_procs_io_free(io);
		return;
	}
	io->tty = true;
	io->relay = p->pol.tier == AJ_TIER_GVISOR;
	eq = aj_persist_send_exec(p, owner, ctx, &slave, 1, -1, &err);
	if (!eq) {
		aj_procs_io_free(io);
		aj_persist_reply(owner, aj_ctl_error(&err), NULL, 0);
		return;
	}
	eq->io = io;
	apply_timeout(eq, ctx);
}

json_t *aj_procs_describe(const struct exec_rec *e)
{
	const struct proc_io *io = e->io;
	json_t *j = json_pack("{s:I, s:i, s:O, s:s, s:b, s:b, s:I, s:I}", "exec", (json_int_t)e->id,
			      "pid", e->pid, "argv", io->argv ? io->argv : json_null(), "tag",
			      io->tag, "tty", io->tty, "running", io->exit_ev == NULL, "started_ms",
			      (json_int_t)io->started_ms, "output_bytes", (json_int_t)io->total);

	if (io->exit_ev)
		json_object_set(j, "exit", io->exit_ev);
	if (io->meta)
		json_object_set(j, "meta", io->meta);
	return j;
}

static void do_attach(struct persist *p, struct conn *c, json_t *req, struct exec_rec *e,
		      bool running)
{
	struct proc_io *io = e->io;
	json_t *from = json_object_get(req, "from");
	uint64_t start = json_is_integer(from) ? (uint64_t)json_integer_value(from) : io->total;

	(void)p;
	if (running && !following(io, c)) {
		if (io->n_followers == MAX_FOLLOWERS) {
			aj_persist_reply_err(c, AJ_LAYER_STATE, EBUSY, "too many followers");
			return;
		}
		io->followers[io->n_followers++] = c;
	}
	aj_persist_reply(c,
			 json_pack("{s:b, s:I, s:b, s:I, s:I}", "ok", 1, "exec", (json_int_t)e->id,
				   "running", running, "offset", (json_int_t)io->total, "retained_from",
				   (json_int_t)(io->head ? io->head->offset : io->total)),
			 NULL, 0);
	for (struct chunk *ch = io->head; ch; ch = ch->next)
		if (ch->offset + ch->len > start)
			send_to(c, output_event(io, ch, start > ch->offset ? start - ch->offset : 0));
	if (!running)
		send_to(c, json_deep_copy(io->exit_ev));
}

static void do_procs(struct persist *p, struct conn *c)
{
	json_t *list = json_array();

	for (struct exec_rec *e = p->execs; e; e = e->next)
		if (e->io)
			json_array_append_new(list, aj_procs_describe(e));
	for (struct exec_rec *e = p->done; e; e = e->next)
		json_array_append_new(list, aj_procs_describe(e));
	aj_persist_reply(c, json_pack("{s:b, s:o}", "ok", 1, "procs", list), NULL, 0);
}

static void do_resize(struct conn *c, json_t *req, struct proc_io *io)
{
	json_int_t rows = json_integer_value(json_object_get(req, "rows"));
	json_int_t cols = json_integer_value(json_object_get(req, "cols"));
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};

	if (!io->tty || io->out[0] < 0)
		aj_persist_reply_err(c, AJ_LAYER_USAGE, ENOTTY, "resize: the command has no terminal");
	else if (rows <= 0 || cols <= 0 || rows > 65535 || cols > 65535)
		aj_persist_reply_err(c, AJ_LAYER_USAGE, EINVAL, "resize: rows and cols must be 1-65535");
	else if (io->relay) {
		aj_persist_resize_exec(io->p, io->e->id, (unsigned)rows, (unsigned)cols);
		aj_persist_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
	} else if (ioctl(io->out[0], TIOCSWINSZ, &ws) < 0)
		aj_persist_reply_err(c, AJ_LAYER_IO, errno, "resize the terminal");
	else
		aj_persist_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

static void do_input(struct conn *c, json_t *req, struct proc_io *io, bool close_only)
{
	struct aj_err err;
	json_t *data = json_object_get(req, "data");

	if (!close_only && data && !json_is_string(data)) {
		aj_persist_reply_err(c, AJ_LAYER_USAGE, EINVAL, "input: \"data\" must be a base64 string");
		return;
	}
	if (queue_input(io, close_only ? NULL : json_string_value(data),
			close_only || json_is_true(json_object_get(req, "eof")), &err) < 0)
		aj_persist_reply(c, aj_ctl_error(&err), NULL, 0);
	else
		aj_persist_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
}

bool aj_procs_request(struct persist *p, struct conn *c, const char *op, json_t *req)
{
	struct exec_rec *e;
	bool running = false;

	if (!strcmp(op, "spawn")) {
		do_spawn(p, c, req);
		return true;
	}
	if (!strcmp(op, "procs")) {
		do_procs(p, c);
		return true;
	}
	if (strcmp(op, "attach") && strcmp(op, "detach") && strcmp(op, "input") &&
	    strcmp(op, "close_stdin") && strcmp(op, "resize"))
		return false;
	e = find_spawned(p, req, &running);
	if (!e) {
		aj_persist_reply_err(c, AJ_LAYER_USAGE, ESRCH, "no such spawned command");
		return true;
	}
	if (!strcmp(op, "attach")) {
		do_attach(p, c, req, e, running);
	} else if (!strcmp(op, "detach")) {
		unfollow(e->io, c);
		aj_persist_reply(c, json_pack("{s:b}", "ok", 1), NULL, 0);
	} else if (!running) {
		aj_persist_reply_err(c, AJ_LAYER_STATE, ESRCH, "the command has ended");
	} else if (!strcmp(op, "resize")) {
		do_resize(c, req, e->io);
	} else {
		do_input(c, req, e->io, !strcmp(op, "close_stdin"));
	}
	return true;
}
