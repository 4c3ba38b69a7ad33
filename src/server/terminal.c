/* A terminal's WebSocket (api_terminal.c made the command and took the connection from
 * evhttp): frames from the client are read by ws.c; binary messages are the terminal's input,
 * text messages JSON ({"type": "resize", "rows", "cols"}); the command's output goes back as
 * binary messages, its start and exit as text ones. The daemon pings every --keepalive and
 * gives up on a client silent for three of them.
 *
 * Back-pressure, both ways, so that what the daemon holds for one terminal stays bounded
 * whatever its client does:
 * - Towards the client: while more than AJ_SRV_STREAM_HIGH waits to be sent to it, neither
 *   the supervisor's connection (the command's output: the supervisor then holds the command
 *   back, as for any slow follower) nor the client is read (its pings and bad messages are
 *   answered into that same queue). A ping is answered when its turn comes, and only the
 *   latest of those read together (RFC 6455, 5.5.3). Past OUT_HARD_MAX the client is closed
 *   (1008): a bound even if a path forgets to check.
 * - Towards the supervisor: the client's input waits in `inq` and goes in chunks, one request
 *   at a time: sent when the socket takes it (EV_WRITE), the next one once the supervisor
 *   answered, the same chunk again a little later when the command's stdin buffer is full.
 *   The client is not read while a chunk's worth of input waits, so a paste arrives whole
 *   and in order, at the pace the command reads it, and never ends the terminal.
 *
 * The command's life is its connection's: the supervisor kills it when the daemon's
 * connection closes (the spawn's kill_on_close), whatever happens to the daemon. At the end
 * the daemon also sends the kill itself (queued like input when the socket is full) and keeps
 * the connection until the supervisor answers, so the end is ordered when all goes well.
 *
 * Lifetime: a struct term is made by aj_srv_terminal_start and freed in one place, term_free,
 * run from its `reaper` event once the client is done (the close frame written and the
 * connection lingered on until the client closed it, or the client gone) and the supervisor's
 * connection is closed (the kill answered, or the command ended first), or five seconds after
 * the end began. Everything here runs on the loop thread.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>

#include "common/base64.h"
#include "common/util.h"
#include "control/proto.h"
#include "server/procs_internal.h"
#include "server/ws.h"

#define MAX_MESSAGE (1u << 20)  /* the largest message a client may send */
#define INPUT_CHUNK (48u << 10) /* input per request to the supervisor */
#define END_GRACE_S 5
#define OUT_HARD_MAX (4u * AJ_SRV_STREAM_HIGH)
#define RETRY_MS 10             /* input again after the supervisor's stdin buffer was full, */
#define RETRY_MAX_MS 640        /* twice as late each time, up to this */
#define LINGER_MAX (1u << 20)   /* what is read and dropped after the close frame */

/* Why the client is not read (struct term's `paused`). */
enum { P_BEHIND = 1, P_INPUT = 2 };

/* The request to the supervisor waiting for its answer, besides the kill. */
enum sent { S_NONE, S_INPUT, S_RESIZE };

struct term {
	struct aj_srv *srv;
	struct bufferevent *bev; /* the client */
	int ctl;                 /* the supervisor; -1 once closed */
	uint64_t exec;
	char owner[AJ_SRV_OWNER_MAX];
	struct event *ctl_ev, *ctl_wev, *retry, *ping, *reaper;
	struct event *gone_ev; /* the client's close, looked for while it is not read */
	struct aj_ws_reader rd;
	uint64_t last_rx_ms;
	size_t ping_out;   /* what waited for the client at the last ping */
	unsigned paused;   /* P_*: the client is not read */
	bool reading;      /* in read_messages */
	/* to the supervisor */
	struct evbuffer *inq; /* input it has not taken yet, oldest first */
	size_t in_flight;     /* the first bytes of inq, sent, answer awaited */
	enum sent sent;
	unsigned answers_due; /* requests sent, not answered (answers come in order) */
	bool retrying;        /* `retry` is armed */
	unsigned retry_ms;    /* its delay: RETRY_MS, doubled while the stdin buffer stays full */
	bool resize_due;
	int rows, cols;
	/* to the client */
	unsigned char pong[125];
	size_t pong_len;
	bool pong_due;
	/* the end */
	bool exited;      /* the command ended */
	bool ending;      /* the end began: nothing more is read or relayed */
	bool kill_due;    /* the kill waits for room on the supervisor's socket */
	bool kill_sent;   /* the kill is out; ctl stays open until the supervisor answers it */
	bool client_done; /* the close frame is out and the client closed, or it is gone */
	bool lingering;   /* the close frame is out: the client's last bytes are dropped */
	size_t lingered;
	bool ctl_paused;  /* the client is behind */
	bool flushing;    /* counted in the daemon's flushing: a shutdown waits for the close */
	struct term *next, **pprev;
};

static struct term *terms;
static unsigned n_terms;

bool aj_srv_terminals_full(void)
{
	return n_terms >= AJ_SRV_TERMS_MAX;
}

unsigned aj_srv_terminals_of(const char *owner)
{
	unsigned n = 0;

	for (const struct term *t = terms; t; t = t->next)
		n += !strcmp(t->owner, owner);
	return n;
}

static void term_free(struct term *t)
{
	struct event *evs[] = {t->ctl_ev, t->ctl_wev, t->retry, t->ping, t->reaper, t->gone_ev};

	for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
		if (evs[i])
			event_free(evs[i]);
	if ((*t->pprev = t->next))
		t->next->pprev = t->pprev;
	n_terms--;
	if (t->flushing)
		t->srv->flushing--;
	aj_close_fd(&t->ctl);
	if (t->bev)
		bufferevent_free(t->bev);
	if (t->inq)
		evbuffer_free(t->inq);
	aj_ws_reader_free(&t->rd);
	free(t);
}

static void on_reaper(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	term_free(arg);
}

static void term_end(struct term *t, unsigned code, const char *reason);

static size_t out_len(const struct term *t)
{
	return evbuffer_get_length(bufferevent_get_output(t->bev));
}

static bool client_behind(const struct term *t)
{
	return out_len(t) > AJ_SRV_STREAM_HIGH;
}

static void send_frame(struct term *t, enum aj_ws_op op, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(t->bev);
	unsigned char hdr[10];

	evbuffer_add(out, hdr, aj_ws_header(hdr, op, len));
	if (len)
		evbuffer_add(out, data, len);
	if (out_len(t) > OUT_HARD_MAX && !t->ending)
		term_end(t, AJ_WS_CLOSE_POLICY, "the client does not read what it is sent");
}

/* A JSON text message (consumed). */
static void send_json(struct term *t, json_t *j)
{
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (text)
		send_frame(t, AJ_WS_TEXT, text, strlen(text));
}

/* An error message; dropped while the client is behind (it would only add to the queue). */
static void send_error(struct term *t, json_t *message)
{
	if (client_behind(t))
		json_decref(message);
	else
		send_json(t, json_pack("{s:s, s:o}", "type", "error", "message", message));
}

/* ---- the end --------------------------------------------------------------------------------- */

static void maybe_free(struct term *t)
{
	if (t->client_done && t->ctl < 0)
		event_active(t->reaper, EV_TIMEOUT, 0);
}

static void ctl_done(struct term *t)
{
	event_del(t->ctl_ev);
	event_del(t->ctl_wev);
	aj_close_fd(&t->ctl);
	t->kill_due = false;
	maybe_free(t);
}

/* The kill, once the socket takes it. Closing the connection kills the command too (the
 * spawn's kill_on_close), so a kill that cannot be sent at all only ends the wait. */
static void send_kill(struct term *t)
{
	json_t *k = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec", (json_int_t)t->exec,
			      "signal", SIGKILL);
	int r = aj_ctl_send(t->ctl, k, NULL, 0);

	json_decref(k);
	if (r == 0) {
		t->kill_due = false;
		t->kill_sent = true;
		t->answers_due++;
	} else if (errno == EAGAIN || errno == ENOBUFS) {
		event_add(t->ctl_wev, NULL);
	} else {
		ctl_done(t);
	}
}

/* The end: the command killed (unless it ended), a close frame for the client (code 0: the
 * client is gone, nothing is sent), and the term freed once both sides are done. */
static void term_end(struct term *t, unsigned code, const char *reason)
{
	struct timeval grace = {END_GRACE_S, 0};

	if (t->ending)
		return;
	t->ending = true;
	/* At a shutdown the daemon's drain waits (a little) for the close frame to go out. */
	if (t->srv->stopping && code) {
		t->flushing = true;
		t->srv->flushing++;
	}
	event_add(t->reaper, &grace);
	event_del(t->ping);
	event_del(t->retry);
	event_del(t->gone_ev);
	bufferevent_disable(t->bev, EV_READ);
	evbuffer_drain(t->inq, evbuffer_get_length(t->inq));
	if (code) {
		/* A control frame's payload is at most 125 bytes: the code, then the reason (ours
		 * are ASCII, so cutting one cuts no character). */
		unsigned char p[2 + 123 + 1];
		size_t n = strnlen(reason, 123);
		p[0] = (unsigned char)(code >> 8);
		p[1] = (unsigned char)code;
		snprintf((char *)p + 2, sizeof p - 2, "%.*s", (int)n, reason);
		send_frame(t, AJ_WS_CLOSE, p, 2 + n);
	}
	t->client_done = !code;
	if (t->exited || t->ctl < 0) {
		ctl_done(t);
		return;
	}
	event_add(t->ctl_ev, NULL); /* the kill's answer is read even if the client is behind */
	t->kill_due = true;
	send_kill(t);
}

/* The close frame is out: the daemon stops writing, and reads (and drops) what the client
 * still sends until it closes, so that the client gets the close frame rather than a reset
 * for bytes left unread (a bounded amount, for at most the reaper's grace period). */
static void on_linger_read(struct bufferevent *bev, void *arg)
{
	struct term *t = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	t->lingered += evbuffer_get_length(in);
	evbuffer_drain(in, evbuffer_get_length(in));
	if (t->lingered > LINGER_MAX) {
		t->client_done = true;
		maybe_free(t);
	}
}

static void on_client_event(struct bufferevent *bev, short what, void *arg);

static void linger(struct term *t)
{
	t->lingering = true;
	if (t->flushing) { /* written: a shutdown need not wait for the client's goodbye */
		t->flushing = false;
		t->srv->flushing--;
	}
	shutdown(bufferevent_getfd(t->bev), SHUT_WR);
	bufferevent_setcb(t->bev, on_linger_read, NULL, on_client_event, t);
	bufferevent_enable(t->bev, EV_READ);
	on_linger_read(t->bev, t);
}

/* ---- to the supervisor ----------------------------------------------------------------------- */

static void client_resume(struct term *t, unsigned why);

/* The next request, if none waits for its answer: a resize, or the next chunk of input. */
static void ctl_pump(struct term *t)
{
	size_t n = evbuffer_get_length(t->inq);
	enum sent what = t->resize_due ? S_RESIZE : n ? S_INPUT : S_NONE;
	json_t *req;
	int r;

	if (t->ending || t->sent != S_NONE || t->retrying || what == S_NONE)
		return;
	if (what == S_RESIZE) {
		req = json_pack("{s:s, s:I, s:i, s:i}", "op", "resize", "exec", (json_int_t)t->exec,
				"rows", t->rows, "cols", t->cols);
	} else {
		_cleanup_free_ char *b64 = NULL;
		n = n < INPUT_CHUNK ? n : INPUT_CHUNK;
		b64 = aj_xmalloc(aj_base64_len(n) + 1);
		aj_base64_encode(evbuffer_pullup(t->inq, (ev_ssize_t)n), n, b64);
		req = json_pack("{s:s, s:I, s:s}", "op", "input", "exec", (json_int_t)t->exec, "data",
				b64);
	}
	r = aj_ctl_send(t->ctl, req, NULL, 0);
	json_decref(req);
	if (r < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		event_add(t->ctl_wev, NULL); /* on_ctl_writable pumps again */
		return;
	}
	if (r < 0) {
		term_end(t, AJ_WS_CLOSE_INTERNAL, "the sandbox's supervisor does not take input");
		return;
	}
	t->sent = what;
	t->answers_due++;
	if (what == S_RESIZE)
		t->resize_due = false;
	else
		t->in_flight = n;
}

static void on_ctl_writable(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;

	(void)fd;
	(void)what;
	if (t->kill_due)
		send_kill(t);
	else
		ctl_pump(t);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;

	(void)fd;
	(void)what;
	t->retrying = false;
	ctl_pump(t);
}

/* The supervisor's answer to the request that waited: input taken (the next chunk goes),
 * refused for a full stdin buffer (the same chunk again in a moment), or refused otherwise
 * (the client is told, and the input dropped: the command takes none). */
static void answered(struct term *t, json_t *m)
{
	json_t *e = json_object_get(m, "error");
	enum sent was = t->sent;
	struct timeval again;

	t->sent = S_NONE;
	if (t->answers_due)
		t->answers_due--;
	if (was == S_INPUT && e && json_integer_value(json_object_get(e, "errno")) == EAGAIN) {
		t->retry_ms = t->retry_ms ? t->retry_ms * 2 : RETRY_MS;
		if (t->retry_ms > RETRY_MAX_MS)
			t->retry_ms = RETRY_MAX_MS;
		again = (struct timeval){0, (suseconds_t)t->retry_ms * 1000};
		t->in_flight = 0;
		t->retrying = true;
		event_add(t->retry, &again);
		return;
	}
	if (was == S_INPUT) {
		evbuffer_drain(t->inq, e ? evbuffer_get_length(t->inq) : t->in_flight);
		t->retry_ms = 0;
	}
	t->in_flight = 0;
	if (e)
		send_error(t, json_incref(json_is_object(e) && json_object_get(e, "message")
						  ? json_object_get(e, "message")
						  : e));
	ctl_pump(t);
	if (evbuffer_get_length(t->inq) < INPUT_CHUNK)
		client_resume(t, P_INPUT);
}

/* ---- from the client --------------------------------------------------------------------- */

/* Not reading the client would hide its going away (a closed tab, a lost network) until a
 * ping fails to be written, a keepalive or two later; its close is looked for meanwhile
 * (GONE_CHECK_MS), so the command is killed at once even when it reads nothing and prints
 * nothing. */
#define GONE_CHECK_MS 200
static const struct timeval gone_check = {0, GONE_CHECK_MS * 1000};

static void client_pause(struct term *t, unsigned why)
{
	t->paused |= why;
	bufferevent_disable(t->bev, EV_READ);
	if (!t->ending)
		event_add(t->gone_ev, &gone_check);
}

static void read_messages(struct term *t);

static void client_resume(struct term *t, unsigned why)
{
	if (!(t->paused & why))
		return;
	t->paused &= ~why;
	if (t->paused || t->ending)
		return;
	event_del(t->gone_ev);
	bufferevent_enable(t->bev, EV_READ);
	read_messages(t); /* what was read before the pause */
}

/* Input waits in inq; a chunk's worth of it stops the reading of the client until the
 * supervisor took enough (smaller bits, keys typed meanwhile, go together in the next one). */
static void input(struct term *t, const unsigned char *data, size_t len)
{
	evbuffer_add(t->inq, data, len);
	if (evbuffer_get_length(t->inq) >= INPUT_CHUNK)
		client_pause(t, P_INPUT);
	ctl_pump(t);
}

static void control(struct term *t, const unsigned char *data, size_t len)
{
	_cleanup_json_ json_t *j = json_loadb((const char *)data, len, 0, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));
	json_int_t rows = json_integer_value(json_object_get(j, "rows"));
	json_int_t cols = json_integer_value(json_object_get(j, "cols"));

	if (!type || strcmp(type, "resize")) {
		send_error(t, json_string("unknown message: text messages are JSON {\"type\": "
					  "\"resize\", \"rows\", \"cols\"}"));
		return;
	}
	if (rows < 1 || rows > 1000 || cols < 1 || cols > 1000) {
		send_error(t, json_string("resize: rows and cols are 1 to 1000"));
		return;
	}
	/* Only the latest size matters: one waiting is replaced. */
	t->rows = (int)rows;
	t->cols = (int)cols;
	t->resize_due = true;
	ctl_pump(t);
}

static void message(struct term *t, const struct aj_ws_msg *m)
{
	switch (m->op) {
	case AJ_WS_BINARY:
		input(t, m->data, m->len);
		break;
	case AJ_WS_TEXT:
		control(t, m->data, m->len);
		break;
	case AJ_WS_PING: /* answered after this round of messages: the latest only */
		if (m->len)
			memcpy(t->pong, m->data, m->len);
		t->pong_len = m->len;
		t->pong_due = true;
		break;
	case AJ_WS_CLOSE:
		term_end(t, m->code == AJ_WS_CLOSE_NO_CODE ? AJ_WS_CLOSE_NORMAL : m->code, "");
		break;
	case AJ_WS_PONG:
	case AJ_WS_CONT:
		break;
	}
}

static void flush_pong(struct term *t)
{
	if (t->pong_due && !t->ending && !client_behind(t)) {
		t->pong_due = false;
		send_frame(t, AJ_WS_PONG, t->pong, t->pong_len);
	}
}

/* The client's messages read so far, until it is paused (behind, or its input waiting). */
static void read_messages(struct term *t)
{
	struct evbuffer *in = bufferevent_get_input(t->bev);

	if (t->reading)
		return; /* resumed from within: the loop below goes on */
	t->reading = true;
	while (!t->ending && !t->paused && evbuffer_get_length(in)) {
		size_t n = evbuffer_get_length(in), used = 0;
		unsigned char *p;
		struct aj_ws_msg m;
		int rc;

		if (client_behind(t)) {
			client_pause(t, P_BEHIND); /* on_client_write resumes */
			break;
		}
		p = evbuffer_pullup(in, -1);
		rc = p ? aj_ws_read(&t->rd, p, n, &used, &m) : -1;
		if (rc < 0) {
			term_end(t, p ? t->rd.error : AJ_WS_CLOSE_INTERNAL,
				 p ? t->rd.why : "out of memory");
			break;
		}
		if (rc == 1)
			message(t, &m); /* m points into `in`: before the drain */
		if (!used)
			break;
		evbuffer_drain(in, used);
	}
	t->reading = false;
	flush_pong(t);
}

static void on_client_read(struct bufferevent *bev, void *arg)
{
	struct term *t = arg;

	(void)bev;
	t->last_rx_ms = aj_now_monotonic_us() / 1000;
	read_messages(t);
}

/* ---- from the supervisor ------------------------------------------------------------------ */

static void output(struct term *t, json_t *ev)
{
	const char *b64 = json_string_value(json_object_get(ev, "data"));
	size_t n = b64 ? strlen(b64) : 0;
	_cleanup_free_ unsigned char *buf = aj_xmalloc(n / 4 * 3 + 4);
	long got = aj_base64_decode(b64 ? b64 : "", n, buf);

	if (got > 0)
		send_frame(t, AJ_WS_BINARY, buf, (size_t)got);
}

/* One message of the supervisor's: this command's output or exit, or an answer. */
static void take(struct term *t, json_t *m)
{
	const char *ev = json_string_value(json_object_get(m, "event"));

	if (!ev) {
		answered(t, m);
		return;
	}
	if ((uint64_t)json_integer_value(json_object_get(m, "exec")) != t->exec)
		return;
	if (!strcmp(ev, "output")) {
		output(t, m);
	} else if (!strcmp(ev, "exit")) {
		t->exited = true;
		send_json(t, aj_srv_exit_line(m));
		term_end(t, AJ_WS_CLOSE_NORMAL, "the command ended");
	}
}

/* After the end began: the supervisor's messages are dropped until it answered everything
 * sent, the kill last, or the command's exit comes; then the connection goes. */
static void ending_ctl(struct term *t)
{
	for (int i = 0; i < 64 && t->ctl >= 0; i++) {
		_cleanup_json_ json_t *m = NULL;
		const char *ev;
		if (aj_ctl_recv(t->ctl, &m, NULL, NULL, 0) < 0) {
			if (errno != EAGAIN && errno != ETIMEDOUT && errno != EPROTO)
				ctl_done(t);
			return;
		}
		ev = json_string_value(json_object_get(m, "event"));
		if (!ev && t->answers_due)
			t->answers_due--;
		if ((!ev && t->kill_sent && !t->answers_due) ||
		    (ev && !strcmp(ev, "exit") &&
		     (uint64_t)json_integer_value(json_object_get(m, "exec")) == t->exec))
			ctl_done(t);
	}
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;

	(void)fd;
	(void)what;
	if (t->ending) {
		ending_ctl(t);
		return;
	}
	for (int i = 0; i < 64 && !t->ending; i++) {
		json_t *m = NULL;
		if (client_behind(t)) {
			t->ctl_paused = true;
			event_del(t->ctl_ev); /* on_client_write reads on */
			client_pause(t, P_BEHIND);
			return;
		}
		if (aj_ctl_recv(t->ctl, &m, NULL, NULL, 0) < 0) {
			if (errno == EAGAIN || errno == ETIMEDOUT || errno == EPROTO)
				return;
			send_json(t, json_pack("{s:s, s:s}", "type", "error", "message",
					       "the connection to the sandbox's supervisor was lost "
					       "(the sandbox stopped?)"));
			term_end(t, AJ_WS_CLOSE_GOING_AWAY, "the sandbox's supervisor went away");
			return;
		}
		take(t, m);
		json_decref(m);
	}
	if (!t->ending)
		event_active(t->ctl_ev, EV_READ, 0); /* more may be waiting: after others' turn */
}

/* ---- the client's connection -------------------------------------------------------------- */

/* Everything queued for the client is written. */
static void on_client_write(struct bufferevent *bev, void *arg)
{
	struct term *t = arg;

	(void)bev;
	if (t->ending) {
		if (!t->client_done && !t->lingering)
			linger(t);
		return;
	}
	flush_pong(t);
	client_resume(t, P_BEHIND); /* first what it sent meanwhile (a ^C), then more output */
	if (t->ctl_paused && !t->ending) {
		t->ctl_paused = false;
		event_add(t->ctl_ev, NULL);
		event_active(t->ctl_ev, EV_READ, 0);
	}
}

static void on_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct term *t = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (!t->ending)
			term_end(t, 0, "");
		t->client_done = true;
		bufferevent_disable(t->bev, EV_READ | EV_WRITE);
		maybe_free(t);
	}
}

/* While the client is not read: has it closed (or reset) its connection? Then it is gone,
 * as at an end of file read (what it sent last, unread, is no longer anyone's). A poll of
 * the socket, not an EV_CLOSED event: with input left unread, a reset shows as a hangup
 * and an error, which libevent reports as readable and writable, never as EV_CLOSED. */
static void on_client_gone(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;
	struct pollfd p = {.fd = bufferevent_getfd(t->bev), .events = POLLRDHUP};

	(void)fd;
	(void)what;
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		on_client_event(NULL, BEV_EVENT_EOF, t);
}

/* Every --keepalive: a ping, or the end for a client silent for three. Silence while the
 * daemon does not read the client is not the client's: while its input waits for the
 * command, or while it is behind but reading on. */
static void on_ping(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;
	uint64_t now = aj_now_monotonic_us() / 1000;
	size_t out = out_len(t);

	(void)fd;
	(void)what;
	if ((t->paused & P_INPUT) || ((t->paused & P_BEHIND) && out < t->ping_out))
		t->last_rx_ms = now;
	t->ping_out = out;
	if (now - t->last_rx_ms > 3000ull * (uint64_t)t->srv->cfg->keepalive_s)
		term_end(t, AJ_WS_CLOSE_GOING_AWAY, "no answer to pings");
	else
		send_frame(t, AJ_WS_PING, NULL, 0);
}

static void upgraded(struct term *t, const char *key, int pid)
{
	char accept[AJ_WS_ACCEPT_LEN + 1];

	aj_ws_accept_key(key, accept);
	evbuffer_add_printf(bufferevent_get_output(t->bev),
			    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
			    "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
			    "Sec-WebSocket-Protocol: agentjail.terminal.v1\r\n\r\n",
			    accept);
	send_json(t, json_pack("{s:s, s:I, s:i}", "type", "start", "process", (json_int_t)t->exec,
			       "pid", pid));
}

static struct term *term_new(struct aj_srv *s, int client, int ctl, uint64_t exec,
			     const char *owner)
{
	struct term *t = aj_xcalloc(1, sizeof *t);

	t->srv = s;
	t->ctl = ctl;
	t->exec = exec;
	snprintf(t->owner, sizeof t->owner, "%s", owner);
	t->last_rx_ms = aj_now_monotonic_us() / 1000;
	aj_ws_reader_init(&t->rd, MAX_MESSAGE);
	if ((t->next = terms))
		terms->pprev = &t->next;
	terms = t;
	t->pprev = &terms;
	n_terms++;
	t->bev = bufferevent_socket_new(s->base, client, BEV_OPT_CLOSE_ON_FREE);
	t->inq = evbuffer_new();
	t->ctl_ev = event_new(s->base, ctl, EV_READ | EV_PERSIST, on_ctl, t);
	t->ctl_wev = event_new(s->base, ctl, EV_WRITE, on_ctl_writable, t);
	t->retry = event_new(s->base, -1, 0, on_retry, t);
	t->ping = event_new(s->base, -1, EV_PERSIST, on_ping, t);
	t->reaper = event_new(s->base, -1, 0, on_reaper, t);
	t->gone_ev = event_new(s->base, -1, EV_PERSIST, on_client_gone, t);
	return t;
}

void aj_srv_terminal_start(struct aj_srv *s, int client, struct evbuffer *rest, int ctl,
			   uint64_t exec, int pid, const char *key, const char *owner)
{
	struct timeval every = {s->cfg->keepalive_s, 0};
	struct term *t = term_new(s, client, ctl, exec, owner);

	if (!t->bev || !t->inq || !t->ctl_ev || !t->ctl_wev || !t->retry || !t->ping ||
	    !t->reaper || !t->gone_ev) {
		if (!t->bev)
			close(client);
		term_free(t); /* closing ctl kills the command (kill_on_close) */
		return;
	}
	/* A frame is read whole: the input may hold the largest one. */
	bufferevent_setwatermark(t->bev, EV_READ, 0, MAX_MESSAGE + 64 * 1024);
	bufferevent_setcb(t->bev, on_client_read, on_client_write, on_client_event, t);
	upgraded(t, key, pid);
	evbuffer_add_buffer(bufferevent_get_input(t->bev), rest);
	bufferevent_enable(t->bev, EV_READ | EV_WRITE);
	event_add(t->ctl_ev, NULL);
	event_add(t->ping, &every);
	if (evbuffer_get_length(bufferevent_get_input(t->bev)))
		on_client_read(t->bev, t);
	if (s->stopping)
		term_end(t, AJ_WS_CLOSE_GOING_AWAY, "the daemon is shutting down");
}

void aj_srv_terminals_shutdown(struct aj_srv *s)
{
	(void)s;
	for (struct term *t = terms; t; t = t->next)
		term_end(t, AJ_WS_CLOSE_GOING_AWAY, "the daemon is shutting down");
}
