/* A terminal's WebSocket (api_terminal.c made the command and took the connection from
 * evhttp): frames from the client are read by ws.c; binary messages are the terminal's input,
 * text messages JSON ({"type": "resize", "rows", "cols"}); the command's output goes back as
 * binary messages, its start and exit as text ones. The daemon pings every --keepalive and
 * gives up on a client silent for three of them.
 *
 * Back-pressure: while more than AJ_SRV_STREAM_HIGH is queued for the client, the supervisor's
 * connection is not read, so the supervisor holds the command back as for any slow follower.
 *
 * Lifetime: a struct term is made by aj_srv_terminal_start and freed in one place, term_free,
 * run from its `reaper` event once the close frame is written (or the client is gone) and the
 * supervisor has answered the kill sent when the end began (unless the command ended first),
 * or five seconds after the end began. Everything here runs on the loop thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>

#include "common/base64.h"
#include "common/util.h"
#include "control/proto.h"
#include "server/procs_internal.h"
#include "server/ws.h"

#define MAX_MESSAGE (1u << 20)  /* the largest message a client may send */
#define INPUT_CHUNK (48u << 10) /* input per message to the supervisor */
#define TERMS_MAX 1024
#define END_GRACE_S 5

struct term {
	struct aj_srv *srv;
	struct bufferevent *bev; /* the client */
	int ctl;                 /* the supervisor; -1 once closed */
	uint64_t exec;
	struct event *ctl_ev, *ping, *reaper;
	struct aj_ws_reader rd;
	uint64_t last_rx_ms;
	bool exited;     /* the command ended */
	bool ending;     /* the end began: nothing more is read or relayed */
	bool kill_sent;  /* the kill is out; ctl stays open until the supervisor answers it */
	bool client_done; /* the close frame is written, or the client is gone */
	bool ctl_paused; /* the client is behind */
	bool flushing;   /* counted in the daemon's flushing: a shutdown waits for the close */
	struct term *next, **pprev;
};

static struct term *terms;
static unsigned n_terms;

bool aj_srv_terminals_full(void)
{
	return n_terms >= TERMS_MAX;
}

static void term_free(struct term *t)
{
	if ((*t->pprev = t->next))
		t->next->pprev = t->pprev;
	n_terms--;
	if (t->flushing)
		t->srv->flushing--;
	if (t->ctl_ev)
		event_free(t->ctl_ev);
	if (t->ping)
		event_free(t->ping);
	if (t->reaper)
		event_free(t->reaper);
	aj_close_fd(&t->ctl);
	if (t->bev)
		bufferevent_free(t->bev);
	aj_ws_reader_free(&t->rd);
	free(t);
}

static void on_reaper(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	term_free(arg);
}

static void send_frame(struct term *t, enum aj_ws_op op, const void *data, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(t->bev);
	unsigned char hdr[10];

	evbuffer_add(out, hdr, aj_ws_header(hdr, op, len));
	if (len)
		evbuffer_add(out, data, len);
}

/* A JSON text message (consumed). */
static void send_json(struct term *t, json_t *j)
{
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (text)
		send_frame(t, AJ_WS_TEXT, text, strlen(text));
}

/* The command dies with its terminal (as exec's with its request). The connection stays open
 * until the supervisor answers: closed at once, with the command's output still flowing to
 * it, the supervisor could find it broken and drop the request unread. */
static void kill_command(struct term *t)
{
	json_t *k;

	if (t->exited || t->ctl < 0)
		return;
	k = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec", (json_int_t)t->exec, "signal",
		      SIGKILL);
	t->kill_sent = aj_ctl_send(t->ctl, k, NULL, 0) == 0;
	json_decref(k);
}

/* Freed once the client is done and the supervisor has answered the kill (or the grace
 * period of the reaper's timer ran out). */
static void maybe_free(struct term *t)
{
	if (t->client_done && (!t->kill_sent || t->ctl < 0))
		event_active(t->reaper, EV_TIMEOUT, 0);
}

static void ctl_done(struct term *t)
{
	event_del(t->ctl_ev);
	aj_close_fd(&t->ctl);
	maybe_free(t);
}

/* The end: the command killed (unless it ended), the supervisor let go, a close frame for the
 * client (code 0: the client is gone, nothing is sent), and the term freed once it is out. */
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
	if (t->ctl_paused) /* the kill's answer must be read */
		event_add(t->ctl_ev, NULL);
	bufferevent_disable(t->bev, EV_READ);
	kill_command(t);
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
	t->client_done = !code || evbuffer_get_length(bufferevent_get_output(t->bev)) == 0;
	if (!t->kill_sent)
		ctl_done(t);
	else
		maybe_free(t);
}

static int ctl_send(struct term *t, json_t *req)
{
	int r = aj_ctl_send(t->ctl, req, NULL, 0);

	json_decref(req);
	if (r < 0)
		term_end(t, AJ_WS_CLOSE_INTERNAL, "the sandbox's supervisor does not take input");
	return r;
}

/* ---- from the client ---------------------------------------------------------------------- */

static void input(struct term *t, const unsigned char *data, size_t len)
{
	for (size_t off = 0; off < len && !t->ending; off += INPUT_CHUNK) {
		size_t n = len - off < INPUT_CHUNK ? len - off : INPUT_CHUNK;
		_cleanup_free_ char *b64 = aj_xmalloc(aj_base64_len(n) + 1);
		aj_base64_encode(data + off, n, b64);
		ctl_send(t, json_pack("{s:s, s:I, s:s}", "op", "input", "exec", (json_int_t)t->exec,
				      "data", b64));
	}
}

static void control(struct term *t, const unsigned char *data, size_t len)
{
	_cleanup_json_ json_t *j = json_loadb((const char *)data, len, 0, NULL);
	const char *type = json_string_value(json_object_get(j, "type"));
	json_int_t rows = json_integer_value(json_object_get(j, "rows"));
	json_int_t cols = json_integer_value(json_object_get(j, "cols"));

	if (!type || strcmp(type, "resize")) {
		send_json(t, json_pack("{s:s, s:s}", "type", "error", "message",
				       "unknown message: text messages are JSON {\"type\": "
				       "\"resize\", \"rows\", \"cols\"}"));
		return;
	}
	if (rows < 1 || rows > 1000 || cols < 1 || cols > 1000) {
		send_json(t, json_pack("{s:s, s:s}", "type", "error", "message",
				       "resize: rows and cols are 1 to 1000"));
		return;
	}
	ctl_send(t, json_pack("{s:s, s:I, s:I, s:I}", "op", "resize", "exec", (json_int_t)t->exec,
			      "rows", rows, "cols", cols));
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
	case AJ_WS_PING:
		send_frame(t, AJ_WS_PONG, m->data, m->len);
		break;
	case AJ_WS_CLOSE:
		term_end(t, m->code == AJ_WS_CLOSE_NO_CODE ? AJ_WS_CLOSE_NORMAL : m->code, "");
		break;
	case AJ_WS_PONG:
	case AJ_WS_CONT:
		break;
	}
}

static void on_client_read(struct bufferevent *bev, void *arg)
{
	struct term *t = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	t->last_rx_ms = aj_now_monotonic_us() / 1000;
	while (!t->ending && evbuffer_get_length(in)) {
		size_t n = evbuffer_get_length(in), used = 0;
		unsigned char *p = evbuffer_pullup(in, -1);
		struct aj_ws_msg m;
		int rc = p ? aj_ws_read(&t->rd, p, n, &used, &m) : -1;

		if (rc < 0) {
			term_end(t, p ? t->rd.error : AJ_WS_CLOSE_INTERNAL,
				 p ? t->rd.why : "out of memory");
			return;
		}
		if (rc == 1)
			message(t, &m); /* m points into `in`: before the drain */
		if (!used)
			break;
		evbuffer_drain(in, used);
	}
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

/* One message of the supervisor's: this command's output or exit, or an answer to a call
 * (input, resize), which is passed on only when it is an error. */
static void take(struct term *t, json_t *m)
{
	const char *ev = json_string_value(json_object_get(m, "event"));
	json_t *e = json_object_get(m, "error");

	if (!ev) {
		if (e)
			send_json(t, json_pack("{s:s, s:O}", "type", "error", "message",
					       json_is_object(e) && json_object_get(e, "message")
						       ? json_object_get(e, "message")
						       : e));
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

/* After the end began: the supervisor's messages are dropped until it answers the kill (an
 * answer is a message without "event") or the command's exit comes; then the connection goes. */
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
		if (!ev || (!strcmp(ev, "exit") &&
			    (uint64_t)json_integer_value(json_object_get(m, "exec")) == t->exec))
			ctl_done(t);
	}
}

static bool client_behind(const struct term *t)
{
	return evbuffer_get_length(bufferevent_get_output(t->bev)) > AJ_SRV_STREAM_HIGH;
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

static void on_client_write(struct bufferevent *bev, void *arg)
{
	struct term *t = arg;

	(void)bev;
	if (t->ending) {
		t->client_done = true;
		maybe_free(t);
	} else if (t->ctl_paused) {
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
		bufferevent_disable(t->bev, EV_WRITE);
		maybe_free(t);
	}
}

static void on_ping(evutil_socket_t fd, short what, void *arg)
{
	struct term *t = arg;
	uint64_t now = aj_now_monotonic_us() / 1000;

	(void)fd;
	(void)what;
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

void aj_srv_terminal_start(struct aj_srv *s, int client, struct evbuffer *rest, int ctl,
			   uint64_t exec, int pid, const char *key)
{
	struct timeval every = {s->cfg->keepalive_s, 0};
	struct term *t = aj_xcalloc(1, sizeof *t);

	t->srv = s;
	t->ctl = ctl;
	t->exec = exec;
	t->last_rx_ms = aj_now_monotonic_us() / 1000;
	aj_ws_reader_init(&t->rd, MAX_MESSAGE);
	if ((t->next = terms))
		terms->pprev = &t->next;
	terms = t;
	t->pprev = &terms;
	n_terms++;
	t->bev = bufferevent_socket_new(s->base, client, BEV_OPT_CLOSE_ON_FREE);
	t->ctl_ev = event_new(s->base, ctl, EV_READ | EV_PERSIST, on_ctl, t);
	t->ping = event_new(s->base, -1, EV_PERSIST, on_ping, t);
	t->reaper = event_new(s->base, -1, 0, on_reaper, t);
	if (!t->bev || !t->ctl_ev || !t->ping || !t->reaper) {
		if (!t->bev)
			close(client);
		kill_command(t);
		term_free(t);
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
