/* The Connect protocol as the E2B SDK speaks it (docs/e2b-protocol.md 6): JSON codec, unary
 * calls answered by e2b_finish(), server streams framed here.
 *
 * A stream's request body is one envelope (flags byte, big-endian length, JSON); its response
 * is 200 application/connect+json, a sequence of envelopes, and always an end-stream envelope
 * (flags 0x02) with {} or the error, after which the body ends: the SDK's wait() resolves only
 * then, and without the end-stream it fails with "missing EndStreamResponse". Quiet streams
 * get a keepalive message after Keepalive-Ping-Interval seconds (sooner if the daemon's
 * --read-timeout is shorter), so that the SDK's 300 s body timeout, proxies in between and the
 * daemon itself leave them alone; Connect-Timeout-Ms is the producer's to act on (a Start's
 * command is killed, other streams just end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/internal.h"

#define FLAG_COMPRESSED 0x01
#define FLAG_END 0x02

int e2b_envelope_msg(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	const unsigned char *p = (const unsigned char *)x->raw;
	json_error_t jerr;
	size_t n;

	if (x->raw_len < 5)
		return e2b_rpc_fail(r, "invalid_argument", "the request is not an enveloped message");
	n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
	if (p[0] & FLAG_COMPRESSED)
		return e2b_rpc_fail(r, "unimplemented", "compressed messages are not supported");
	if (p[0] != 0 || n != x->raw_len - 5)
		return e2b_rpc_fail(r, "invalid_argument",
				    "expected exactly one message envelope of %zu bytes, got flags "
				    "0x%02x and length %zu",
				    x->raw_len - 5, p[0], n);
	x->msg = json_loadb(x->raw + 5, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!x->msg || !json_is_object(x->msg))
		return e2b_rpc_fail(r, "invalid_argument", "the request message is not a JSON "
							   "object%s%s",
				    x->msg ? "" : ": ", x->msg ? "" : jerr.text);
	return 0;
}

struct e2b_stream {
	struct aj_srv_stream *st;
	struct e2b_stream_cbs cbs;
	char *keepalive;
	struct event *ka, *deadline;
	bool quiet; /* nothing sent since the last keepalive tick */
};

static int send_envelope(struct e2b_stream *st, unsigned char flags, json_t *msg)
{
	/* A length-prefixed frame, not a string: the JSON goes straight after the header. */
	_cleanup_json_ json_t *m = msg;
	size_t n = m ? json_dumpb(m, NULL, 0, JSON_COMPACT) : 0;
	_cleanup_free_ unsigned char *buf = n ? aj_xmalloc(n + 5) : NULL;

	if (!buf || json_dumpb(m, (char *)buf + 5, n, JSON_COMPACT) != n)
		return -1;
	buf[0] = flags;
	buf[1] = (unsigned char)(n >> 24);
	buf[2] = (unsigned char)(n >> 16);
	buf[3] = (unsigned char)(n >> 8);
	buf[4] = (unsigned char)n;
	return aj_srv_stream_write(st->st, buf, n + 5);
}

int e2b_stream_send(struct e2b_stream *st, json_t *msg)
{
	st->quiet = false;
	return send_envelope(st, 0, msg);
}

bool e2b_stream_writable(const struct e2b_stream *st)
{
	return aj_srv_stream_writable(st->st);
}

bool e2b_stream_gone(const struct e2b_stream *st)
{
	return aj_srv_stream_gone(st->st);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_stream *st = arg;

	(void)fd;
	(void)what;
	if (st->quiet && aj_srv_stream_writable(st->st))
		send_envelope(st, 0, json_loads(st->keepalive, 0, NULL));
	st->quiet = true;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_stream *st = arg;

	(void)fd;
	(void)what;
	if (st->cbs.on_deadline)
		st->cbs.on_deadline(st->cbs.arg);
}

static void on_drain(void *arg)
{
	struct e2b_stream *st = arg;

	if (st->cbs.on_drain)
		st->cbs.on_drain(st->cbs.arg);
}

static void on_close(void *arg)
{
	struct e2b_stream *st = arg;

	if (st->cbs.on_close)
		st->cbs.on_close(st->cbs.arg);
}

static void free_timers(struct e2b_stream *st)
{
	if (st->ka)
		event_free(st->ka);
	if (st->deadline)
		event_free(st->deadline);
	free(st->keepalive);
}

/* A stream that never started: its timers and itself. */
static void stream_freep(struct e2b_stream **st)
{
	if (*st)
		free_timers(*st);
	free(*st);
}

/* The client's keepalive interval, but short enough that the daemon's --read-timeout, which
 * also closes a response that has been silent that long, never ends a quiet stream: the SDK
 * asks for 50 s, the default read timeout is 30 s. A tick sends only after a whole quiet
 * period, so a stream is silent for up to two ticks: a tick is a third of the timeout at most. */
static struct timeval keepalive_tick(struct aj_srv_req *r)
{
	int64_t ms = (int64_t)e2b_of(r)->keepalive_s * 1000;
	int64_t cap = (int64_t)aj_srv_cfg(r->srv)->read_timeout_s * 1000 / 3;

	if (ms > cap)
		ms = cap;
	return (struct timeval){(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
}

static int arm(struct e2b_stream *st, struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	struct timeval ka = keepalive_tick(r);
	struct timeval dl = {(time_t)(x->timeout_ms / 1000), (suseconds_t)(x->timeout_ms % 1000) * 1000};

	st->ka = event_new(aj_srv_base(r->srv), -1, EV_PERSIST, on_keepalive, st);
	if (!st->ka || event_add(st->ka, &ka) < 0)
		return -1;
	if (!x->timeout_ms)
		return 0;
	st->deadline = evtimer_new(aj_srv_base(r->srv), on_deadline, st);
	return st->deadline && evtimer_add(st->deadline, &dl) == 0 ? 0 : -1;
}

struct e2b_stream *e2b_stream_start(struct aj_srv_req *r, const char *keepalive,
				    const struct e2b_stream_cbs *cbs)
{
	__attribute__((cleanup(stream_freep))) struct e2b_stream *st = aj_xcalloc(1, sizeof *st);
	struct aj_srv_stream_cbs scbs = {on_drain, on_close, st};

	st->cbs = *cbs;
	st->keepalive = aj_xstrdup(keepalive);
	if (arm(st, r) < 0) { /* libevent's allocations */
		e2b_rpc_fail(r, "internal", "out of memory");
		e2b_finish(r);
		return NULL;
	}
	st->st = aj_srv_stream_start_as(r, 200, "application/connect+json", &scbs);
	st->quiet = true;
	return aj_steal_ptr(&st);
}

void e2b_stream_finish(struct e2b_stream *st, const char *code, const char *message)
{
	json_t *end = code ? json_pack("{s:{s:s, s:s}}", "error", "code", code, "message",
				       message ? message : code)
			   : json_object();

	if (!aj_srv_stream_gone(st->st))
		send_envelope(st, FLAG_END, end);
	else
		json_decref(end);
	free_timers(st);
	aj_srv_stream_end(st->st);
	free(st);
}
