/* Streamed responses: chunked application/x-ndjson, one JSON value per line.
 *
 * Backpressure: what a slow client has not taken yet stays in the connection's output buffer;
 * producers ask aj_srv_stream_writable() before writing and otherwise wait for on_drain, which
 * libevent's write-complete callback triggers once the buffer is empty. A client that goes
 * away shows as the connection's close callback: libevent has then detached the request (it
 * is still ours to end), and the producer is told with on_close. */
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>

#include "server/internal.h"

struct aj_srv_stream {
	struct aj_srv_req *r;
	struct evhttp_connection *evcon;
	struct aj_srv_stream_cbs cbs;
	bool gone;
	struct aj_srv_stream *next; /* srv->streams */
};

static void on_close(struct evhttp_connection *evcon, void *arg)
{
	struct aj_srv_stream *st = arg;

	(void)evcon;
	st->gone = true;
	st->evcon = NULL;
	if (st->cbs.on_close)
		st->cbs.on_close(st->cbs.arg);
}

static void on_written(struct evhttp_connection *evcon, void *arg)
{
	struct aj_srv_stream *st = arg;

	(void)evcon;
	if (!st->gone && st->cbs.on_drain)
		st->cbs.on_drain(st->cbs.arg);
}

struct aj_srv_stream *aj_srv_stream_start(struct aj_srv_req *r, int status,
					  const struct aj_srv_stream_cbs *cbs)
{
	return aj_srv_stream_start_as(r, status, "application/x-ndjson", cbs);
}

struct aj_srv_stream *aj_srv_stream_start_as(struct aj_srv_req *r, int status, const char *ctype,
					     const struct aj_srv_stream_cbs *cbs)
{
	struct aj_srv_stream *st = aj_xcalloc(1, sizeof *st);
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);

	st->r = r;
	st->cbs = *cbs;
	st->next = r->srv->streams;
	r->srv->streams = st;
	st->evcon = evhttp_request_get_connection(r->req);
	if (!st->evcon) { /* the client left while the request was being prepared */
		st->gone = true;
		return st;
	}
	evhttp_connection_set_closecb(st->evcon, on_close, st);
	evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply_start(r->req, status, NULL);
	return st;
}

static size_t queued(const struct aj_srv_stream *st)
{
	struct bufferevent *bev;

	if (st->gone || !st->evcon)
		return 0;
	bev = evhttp_connection_get_bufferevent(st->evcon);
	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

bool aj_srv_stream_writable(const struct aj_srv_stream *st)
{
	return !st->gone && queued(st) < AJ_SRV_STREAM_HIGH;
}

bool aj_srv_stream_gone(const struct aj_srv_stream *st)
{
	return st->gone;
}

int aj_srv_stream_line(struct aj_srv_stream *st, json_t *j)
{
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10)) : NULL;
	_cleanup_evbuffer_ struct evbuffer *buf = NULL;

	json_decref(j);
	if (!text || st->gone || !(buf = evbuffer_new()) ||
	    evbuffer_add_printf(buf, "%s\n", text) < 0)
		return -1;
	evhttp_send_reply_chunk_with_cb(st->r->req, buf, on_written, st);
	return 0;
}

int aj_srv_stream_write(struct aj_srv_stream *st, const void *data, size_t len)
{
	_cleanup_evbuffer_ struct evbuffer *buf = NULL;

	if (st->gone || !(buf = evbuffer_new()) || evbuffer_add(buf, data, len) < 0)
		return -1;
	evhttp_send_reply_chunk_with_cb(st->r->req, buf, on_written, st);
	return 0;
}

void aj_srv_streams_shutdown(struct aj_srv *s)
{
	for (struct aj_srv_stream *st = s->streams; st; st = st->next)
		if (st->cbs.on_close)
			st->cbs.on_close(st->cbs.arg);
}

void aj_srv_stream_end(struct aj_srv_stream *st)
{
	struct aj_srv_req *r = st->r;

	for (struct aj_srv_stream **pp = &r->srv->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	if (st->evcon)
		evhttp_connection_set_closecb(st->evcon, NULL, NULL);
	/* With the client gone, libevent frees the detached request here. */
	evhttp_send_reply_end(r->req);
	r->req = NULL;
	aj_srv_req_free(r);
	free(st);
}
