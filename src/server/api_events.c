/* GET /v1/sandboxes/{ref}/events: the sandbox's stored events as JSON, or with ?follow=true
 * as a stream of JSON lines that goes on as supervisors and verbs store new ones, with a
 * keepalive line now and then so that idle proxies and clients see the stream alive.
 *
 * The store is the one source (supervisors write events there, not to the daemon): a follower
 * polls it through the worker pool, one poll at a time, and only while the client keeps up
 * (stream backpressure). The stream ends after the sandbox's "remove" event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "server/internal.h"

#define POLL_MS 250
#define BATCH 1000

struct follow {
	struct aj_srv_job job; /* first: one poll of the store */
	struct aj_srv *srv;
	struct aj_srv_stream *st;
	char id[33];
	int64_t last;          /* seq of the last event sent */
	json_t *batch;         /* events a poll found */
	bool more;             /* the poll stopped at BATCH */
	bool polling, closing;
	struct event *poll_ev, *keepalive_ev;
};

struct collect {
	json_t *events;
	int64_t last;
	bool removed;
};

static int collect_event(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
			 const char *type, const char *data)
{
	struct collect *c = arg;
	json_t *d = json_loads(data ? data : "null", JSON_DECODE_ANY, NULL);

	json_array_append_new(c->events,
			      json_pack("{s:I, s:o, s:s, s:s, s:o}", "seq", (json_int_t)seq, "time",
					aj_srv_time_json(time_ms), "sandbox", sandbox, "event", type,
					"data", d ? d : json_null()));
	c->last = seq;
	c->removed = c->removed || !strcmp(type, "remove");
	return json_array_size(c->events) >= BATCH;
}

/* ---- the stream ------------------------------------------------------------------------- */

static void follow_free(struct follow *f)
{
	event_free(f->poll_ev);
	event_free(f->keepalive_ev);
	aj_srv_stream_end(f->st);
	json_decref(f->batch);
	free(f);
}

/* Writes what the last read found; true when the stream is over. */
static bool flush_batch(struct follow *f)
{
	size_t i;
	json_t *e;
	bool removed = false;

	json_array_foreach(f->batch, i, e) {
		removed = removed || !strcmp(json_string_value(json_object_get(e, "event")), "remove");
		aj_srv_stream_line(f->st, json_incref(e));
	}
	json_decref(f->batch);
	f->batch = NULL;
	return removed || aj_srv_stream_gone(f->st);
}

static void poll_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	struct follow *f = (struct follow *)j;
	struct collect c = {json_array(), f->last, false};

	if (aj_store_events(m->store, f->id, f->last, collect_event, &c, NULL) < 0) {
		json_decref(c.events); /* the next poll tries again */
		return;
	}
	f->batch = c.events;
	f->more = json_array_size(c.events) >= BATCH;
	f->last = c.last;
}

static void poll_done(struct aj_srv_job *j)
{
	struct follow *f = (struct follow *)j;

	f->polling = false;
	if (f->closing || flush_batch(f)) {
		follow_free(f);
		return;
	}
	if (f->more && aj_srv_stream_writable(f->st))
		event_active(f->poll_ev, EV_TIMEOUT, 0);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
	struct follow *f = arg;

	(void)fd;
	(void)what;
	if (f->polling)
		return;
	if (f->closing) {
		follow_free(f);
		return;
	}
	if (!aj_srv_stream_writable(f->st))
		return; /* on_drain polls again */
	f->polling = true;
	aj_srv_pool_submit(f->srv, &f->job);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	struct follow *f = arg;

	(void)fd;
	(void)what;
	if (!f->closing && aj_srv_stream_writable(f->st))
		aj_srv_stream_line(f->st, json_pack("{s:b, s:o}", "keepalive", 1, "time",
						    aj_srv_time_json((int64_t)aj_now_realtime_ms())));
}

static void on_drain(void *arg)
{
	struct follow *f = arg;

	if (f->more)
		event_active(f->poll_ev, EV_TIMEOUT, 0);
}

/* The client went away (called from inside libevent's connection teardown), or the daemon
 * is stopping: the follower is freed later, from its own timer. */
static void on_close(void *arg)
{
	struct follow *f = arg;

	f->closing = true;
	event_active(f->poll_ev, EV_TIMEOUT, 0);
}

/* ---- the request ----------------------------------------------------------------------------- */

struct events_data {
	int64_t after, limit;
	bool follow;
	char id[33];
	struct collect c;
};

static void events_data_free(void *p)
{
	struct events_data *d = p;

	json_decref(d->c.events);
	free(d);
}

static int events_prepare(struct aj_srv_req *r)
{
	struct events_data *d = aj_xcalloc(1, sizeof *d);

	r->data = d;
	r->data_free = events_data_free;
	d->limit = BATCH;
	return aj_srv_query_int(r, "after", 0, INT64_MAX, &d->after) < 0 ||
			       aj_srv_query_int(r, "limit", 1, 10000, &d->limit) < 0 ||
			       aj_srv_query_bool(r, "follow", &d->follow) < 0
		       ? -1
		       : 0;
}

static int collect_limited(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
			   const char *type, const char *data)
{
	struct events_data *d = arg;

	collect_event(&d->c, seq, time_ms, sandbox, type, data);
	return (int64_t)json_array_size(d->c.events) >= d->limit;
}

static void events_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct events_data *d = r->data;
	struct aj_sandbox_rec rec;
	struct aj_err err;

	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	snprintf(d->id, sizeof d->id, "%s", rec.id);
	aj_sandbox_rec_free(&rec);
	d->c.events = json_array();
	d->c.last = d->after;
	if (aj_store_events(m->store, d->id, d->after, collect_limited, d, &err) < 0)
		aj_srv_fail_err(r, &err, NULL);
	else if (!d->follow)
		aj_srv_ok(r, 200, json_pack("{s:O}", "events", d->c.events));
}

static void follow_start(struct aj_srv_req *r, struct events_data *d)
{
	_cleanup_free_ struct follow *nf = aj_xcalloc(1, sizeof *nf);
	_cleanup_event_ struct event *poll_ev = event_new(r->srv->base, -1, EV_PERSIST, on_poll, nf);
	_cleanup_event_ struct event *ka_ev = event_new(r->srv->base, -1, EV_PERSIST, on_keepalive,
							nf);
	struct aj_srv_stream_cbs cbs = {on_drain, on_close, nf};
	struct timeval poll = {0, POLL_MS * 1000}, ka = {r->srv->cfg->keepalive_s, 0};
	struct follow *f;

	if (!poll_ev || !ka_ev) {
		aj_srv_fail(r, 500, "internal", NULL, "cannot make the stream's timers");
		aj_srv_req_finish(r);
		return;
	}
	f = aj_steal_ptr(&nf); /* freed by follow_free, once the stream ends */
	f->poll_ev = aj_steal_ptr(&poll_ev);
	f->keepalive_ev = aj_steal_ptr(&ka_ev);
	f->st = aj_srv_stream_start(r, 200, &cbs);
	f->srv = r->srv;
	f->job.work = poll_work;
	f->job.done = poll_done;
	snprintf(f->job.owner, sizeof f->job.owner, "%s", r->job.owner);
	snprintf(f->id, sizeof f->id, "%s", d->id);
	f->last = d->c.last;
	f->batch = json_incref(d->c.events);
	event_add(f->poll_ev, &poll);
	event_add(f->keepalive_ev, &ka);
	if (flush_batch(f) || r->srv->stopping)
		on_close(f);
}

static void events_done(struct aj_srv_req *r)
{
	struct events_data *d = r->data;

	if (!d->follow)
		aj_srv_req_finish(r);
	else
		follow_start(r, d);
}

static const char *const events_query[] = {"after", "limit", "follow", NULL};

const struct aj_srv_route aj_api_event_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/events", AJ_SRV_BODY_NONE, events_query,
	 events_prepare, events_work, events_done),
	AJ_SRV_ROUTES_END,
};
