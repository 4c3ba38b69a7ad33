/* The daemon as a base for HTTP front ends: what a front end other than the API's own routes
 * (the E2B-compatible API, src/e2b/) builds on. Requests, routes, replies, the worker pool,
 * owners' tokens and quotas, and streamed responses; the daemon itself (struct aj_srv) is
 * opaque behind a few accessors.
 *
 * Threads: the loop thread owns everything of libevent's (requests, connections, timers) and
 * the daemon. Worker threads (jobs.c) only run a job's work function with their own manager.
 *
 * Ownership: a router makes one struct aj_srv_req per request it accepts; it is freed in
 * exactly one place, aj_srv_req_finish() (which hands the reply to libevent), or by the
 * stream that took the request over (aj_srv_stream_end). Between aj_srv_pool_submit() and
 * the job's done callback the request belongs to a worker: the loop thread does not touch it,
 * and the worker touches nothing of libevent's. Bodies travel as (pointer, length).
 *
 * Memory: allocations abort when memory runs out (common/alloc.h), so nothing here answers
 * "out of memory"; a function's resources are released by their cleanup attributes
 * (common/cleanup.h, and _cleanup_event_ and _cleanup_evbuffer_ below).
 */
#ifndef AJ_SERVER_FRONTEND_H
#define AJ_SERVER_FRONTEND_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/jfields.h"
#include "manager/manager.h"
#include "server/server.h"

/* Scope-bound cleanup (common/cleanup.h) of the libevent objects the front ends hold: an
 * event and a buffer. Requests, connections and bufferevents are libevent's own. */
static inline void aj_event_freep(struct event **ev)
{
	if (*ev)
		event_free(*ev);
}

static inline void aj_evbuffer_freep(struct evbuffer **b)
{
	if (*b)
		evbuffer_free(*b);
}

#define _cleanup_event_ __attribute__((cleanup(aj_event_freep)))
#define _cleanup_evbuffer_ __attribute__((cleanup(aj_evbuffer_freep)))

#define AJ_SRV_OWNER_MAX 129
/* A stream stops producing while more than this is queued for a slow client. */
#define AJ_SRV_STREAM_HIGH (256 * 1024)

struct aj_srv;
struct aj_srv_stream;
struct aj_srv_tokens;

/* ---- the daemon ------------------------------------------------------------------------- */

const struct aj_srv_config *aj_srv_cfg(const struct aj_srv *s);
struct event_base *aj_srv_base(const struct aj_srv *s);
/* True once a shutdown began: new work is refused, replies close their connection. */
bool aj_srv_stopping(const struct aj_srv *s);
/* `agentjail features --json` as probed when the daemon started (borrowed). */
const json_t *aj_srv_features(const struct aj_srv *s);

/* A front end of the daemon on listeners of its own (--e2b-listen), chosen by the caller of
 * aj_srv_run() (src/cli/cmd_serve.c): made before the listeners, installed as their request
 * handler, freed after the worker pool has stopped and before the event base goes. */
struct aj_srv_frontend {
	const char *name; /* in messages: "E2B API" */
	int (*create)(struct aj_srv *s, void **state, struct aj_err *err);
	void (*install)(void *state, struct evhttp *http);
	void (*destroy)(void *state);
	/* The policy a plain create of `name` (a template) gets from this front end, for
	 * `serve --warm-pool FRONT:NAME=N` (warm.c); NULL if it has no templates. */
	int (*warm_policy)(void *state, const char *name, struct aj_policy *pol,
			   struct aj_err *err);
};

/* ---- worker pool (jobs.c) ------------------------------------------------------------- */

struct aj_srv_job {
	/* On a worker thread, with m acting for `owner` only. */
	void (*work)(struct aj_srv_job *j, struct aj_mgr *m);
	/* Back on the loop thread. */
	void (*done)(struct aj_srv_job *j);
	char owner[AJ_SRV_OWNER_MAX];
	bool any_owner; /* the daemon's own jobs (gc): every owner's sandboxes */
	struct aj_srv_job *next;
};

void aj_srv_pool_submit(struct aj_srv *s, struct aj_srv_job *j);
/* Closes fd on a worker, for a descriptor whose last close blocks: an inotify instance's waits
 * for an SRCU grace period (10-20 ms), which on the loop thread would hold up every request.
 * At once once the pool has stopped (at exit). Loop thread only. */
void aj_srv_close_later(struct aj_srv *s, int fd);

/* A create, on a worker: from a warm pool (warm.c) when one holds a sandbox with the policy
 * o would store and o asks for nothing a pool's sandbox cannot give (a snapshot, no start),
 * else aj_mgr_create(). Same results as aj_mgr_create(); the caller has reserved the owner's
 * quotas either way. */
int aj_srv_warm_create(struct aj_srv *s, struct aj_mgr *m, const struct aj_create_opts *o,
		       struct aj_sandbox_rec *out, struct aj_err *err);

/* ---- requests and routes (router.c, reply.c) ------------------------------------------ */

enum aj_srv_body { AJ_SRV_BODY_NONE, AJ_SRV_BODY_JSON, AJ_SRV_BODY_RAW };

struct aj_srv_req;

/* A route: one row of a front end's table. Both HTTP front ends use it: the API's router
 * (router.c) reads the body as `body` says and checks the query against `query`. A front end
 * with data of its own per route makes its rows a struct of its own whose first member is
 * this one (E2B's struct e2b_route adds how errors are answered), and names the row's size
 * in its tables (struct aj_srv_table); a matched route is then the first member of the front
 * end's row. */
struct aj_srv_route {
	enum evhttp_cmd_type method;
	const char *pattern;             /* "/v1/sandboxes/{ref}/start": {NAME} captures a segment */
	enum aj_srv_body body;
	const char *const *query;        /* allowed query parameters, NULL-terminated, or NULL */
	/* Loop thread: checks the input. 0 goes on to work (or replies if there is none), -1
	 * replies with the error set, 1 means the handler replied or took the request over. */
	int (*prepare)(struct aj_srv_req *r);
	void (*work)(struct aj_srv_req *r, struct aj_mgr *m); /* worker thread */
	void (*done)(struct aj_srv_req *r);                    /* NULL: the front end's finish */
};

#define AJ_SRV_ROUTE(m, p, b, q, pre, wk, dn)                                                  \
	{.method = (m), .pattern = (p), .body = (b), .query = (q), .prepare = (pre), .work = (wk), \
	 .done = (dn)}
#define AJ_SRV_ROUTES_END {.pattern = NULL}

/* ---- matching (route.c) ---------------------------------------------------------------- */

/* A table of routes: its first row and the size of its rows (a struct aj_srv_route, or a
 * front end's row that begins with one), ended by a row with a NULL pattern. */
struct aj_srv_table {
	const struct aj_srv_route *rows;
	size_t row_size;
};

#define AJ_SRV_TABLE(rows) {(rows), sizeof *(rows)}
#define AJ_SRV_TABLES_END {NULL, 0}

#define AJ_SRV_CAPTURES 2

struct aj_srv_match {
	const struct aj_srv_route *route; /* the route of the path and method */
	unsigned methods;                 /* no route: the methods other routes of the path take */
	char allow[64];                   /* those methods for an Allow header: "GET, DELETE" */
	size_t n;                         /* captures */
	struct {
		char name[16];   /* "ref" for {ref} */
		char value[256]; /* decoded; never empty, never holding '/' or NUL */
	} cap[AJ_SRV_CAPTURES];
};

/* Matches method and path against tables (the list ended by AJ_SRV_TABLES_END). A capture
 * must be shorter than cap_max bytes (0: 256). 0 with m->route set (a row of one of the
 * tables); -1 when there is none: m->methods 0 is a 404, anything else a 405 (m->allow).
 * Paths with empty segments (a double or trailing slash) match nothing. */
int aj_srv_route_match(const struct aj_srv_table *tables, enum evhttp_cmd_type method,
		       const char *path, size_t cap_max, struct aj_srv_match *m);
/* The value {name} captured, or NULL. */
const char *aj_srv_match_capture(const struct aj_srv_match *m, const char *name);
const char *aj_srv_method_name(enum evhttp_cmd_type method);
/* The first query parameter rt does not take, or (*repeated) that is given twice though not
 * listed in repeatable; NULL if every one is fine. */
const struct evkeyval *aj_srv_query_bad(const struct aj_srv_route *rt,
					const struct evkeyvalq *q, const char *const *repeatable,
					bool *repeated);

struct aj_srv_error {
	int status;
	char code[32];
	char field[192];  /* "" when the error is about no one field */
	char message[1200];
};

struct aj_srv_req {
	struct aj_srv_job job; /* first: a request is a job; job.owner is the request's owner */
	struct aj_srv *srv;
	struct evhttp_request *req;
	const struct aj_srv_route *route;
	bool remote;           /* came over TCP with a token */
	bool console;          /* came over --console-listen: the local owner, with its token */
	char ref[256];         /* {ref} of the path: a sandbox id or name */
	char name[256];        /* {name}: a snapshot */
	struct evkeyvalq query;
	json_t *body;          /* AJ_SRV_BODY_JSON, NULL when the request had none */
	const char *raw;       /* AJ_SRV_BODY_RAW: the request's input buffer, made contiguous */
	size_t raw_len;
	/* The outcome, set by prepare or work. */
	int status;
	json_t *result;        /* NULL: no body (204) */
	char location[512];    /* Location header of a 201 */
	char allow[64];        /* Allow header of a 405 */
	bool failed;
	struct aj_srv_error error;
	int file_fd;           /* a download: sent with sendfile, closed by libevent */
	uint64_t file_len;
	void *data;            /* route data, released with data_free */
	void (*data_free)(void *data);
};

/* Hands the outcome to libevent and frees r. */
void aj_srv_req_finish(struct aj_srv_req *r);
/* A request object for req, counted in flight; its job runs r->route's work and done unless
 * the caller sets job.work and job.done itself (the E2B router does). */
__attribute__((returns_nonnull)) struct aj_srv_req *aj_srv_req_new(struct aj_srv *s,
								   struct evhttp_request *req,
								   bool remote);
void aj_srv_req_free(struct aj_srv_req *r);
/* Replies to a request the router did not take (503 while stopping, say). */
void aj_srv_reply_early(struct aj_srv *s, struct evhttp_request *req, const struct aj_srv_error *e);
/* Sends a reply: status, Content-Type (NULL: none) and body (NULL: none; not consumed), with
 * the daemon's headers, counted until libevent has written it so that a shutdown waits for
 * it. */
void aj_srv_send(struct aj_srv *s, struct evhttp_request *req, int status, const char *ctype,
		 struct evbuffer *body);

/* ---- HTTP to a port inside a sandbox (portproxy.c) ------------------------------------- */

/* On the worker, with the sandbox's record: -1 (r's error set) refuses the request. */
typedef int (*aj_srv_proxy_check_fn)(struct aj_srv_req *r, const struct aj_sandbox_rec *rec,
				     void *arg);

struct aj_srv_proxy_opts {
	bool strip_auth;          /* Authorization was the daemon's: not passed inside */
	const char *strip_cookie; /* the name of a cookie of the daemon's, or NULL */
	aj_srv_proxy_check_fn check;
	void *check_arg;          /* taken: freed with check_arg_free when r goes */
	void (*check_arg_free)(void *arg);
};

/* Proxies the request r->req to `port` of the sandbox r->ref of r's owner, as `target`
 * ("/path?query") inside: 0 with the job submitted (r is the proxy's from then on), -1 with
 * r's error set (the caller finishes r). */
int aj_srv_proxy_start(struct aj_srv_req *r, unsigned port, const char *target,
		       const struct aj_srv_proxy_opts *o);
/* From a check: answer with a 302 to location that sets the cookie, instead of proxying. */
void aj_srv_proxy_redirect(struct aj_srv_req *r, const char *location, const char *cookie_name,
			   const char *cookie_value);
/* "/v1/sandboxes/REF/ports/PORT[/REST]": REF, PORT and REST ("/" when empty). */
bool aj_srv_port_path(const char *path, char ref[256], unsigned *port, const char **rest);

/* ---- preview URLs (preview.c) ---------------------------------------------------------- */

#define AJ_PREVIEW_KEY_LEN 32
#define AJ_PREVIEW_TOKEN_LEN 32

/* The daemon's preview key, <state_dir>/preview.key, made (0600) when missing. */
int aj_srv_preview_key(const char *state_dir, unsigned char key[AJ_PREVIEW_KEY_LEN],
		       struct aj_err *err);
/* The preview token of one port of one sandbox: hex, AJ_PREVIEW_TOKEN_LEN digits. */
void aj_srv_preview_token(const unsigned char key[AJ_PREVIEW_KEY_LEN], const char *sandbox_id,
			  unsigned port, char out[AJ_PREVIEW_TOKEN_LEN + 1]);
/* "PORT-REF.DOMAIN[:LISTENPORT]" -> port and ref; false when the host is not one of the
 * preview domain's (or there is no preview listener). */
bool aj_srv_preview_host_parse(const char *host, unsigned *port, char ref[256]);
/* Proxies r (r->ref set) to port with the preview listener's access rules (owner: a bearer
 * token's owner, or NULL); 0, or -1 with r's error set (the caller finishes r). */
int aj_srv_preview_forward(struct aj_srv_req *r, unsigned port, const char *owner);
/* "DOMAIN[:LISTENPORT]" of preview URLs (E2B's sandbox domain), or NULL without a listener. */
const char *aj_srv_preview_domain(void);
/* The token that opens every port of a sandbox (E2B's traffic access token). */
void aj_srv_preview_sandbox_token(const char *sandbox_id, char out[AJ_PREVIEW_TOKEN_LEN + 1]);
/* The preview listener's request handler on http, for Hosts under domain. */
int aj_srv_preview_install(struct aj_srv *s, struct evhttp *http, const char *domain,
			   struct aj_err *err);

/* ---- outcomes (reply.c) --------------------------------------------------------------- */

void aj_srv_ok(struct aj_srv_req *r, int status, json_t *result); /* consumes result */
/* Sets the error; field may be NULL. Returns -1. */
int aj_srv_fail(struct aj_srv_req *r, int status, const char *code, const char *field,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The status, code and field a manager or file error stands for. field_hint names the field
 * the request gave for the object (a file error's "path"). Returns -1. */
int aj_srv_fail_err(struct aj_srv_req *r, const struct aj_err *e, const char *field_hint);
/* A volume of r's owner (storage/volumes.h) under the daemon's per-owner quotas
 * (--max-volumes, --max-volume-bytes, --max-disk; api_volumes.c): 0; -1 refused by a quota
 * (answered); -2 with err set (for the caller's own answer). */
struct aj_volume;
int aj_srv_volume_create(struct aj_srv_req *r, struct aj_mgr *m, const char *name,
			 uint64_t size, struct aj_volume *out, struct aj_err *err);
/* A snapshot of sandbox `id` of r's owner (aj_mgr_snapshot) under the per-owner quotas
 * (--max-snapshots, --max-disk; api_snapshots.c), weighed before it is taken by what the
 * sandbox's writable layers hold: 0; -1 refused by a quota (answered); -2 with err set. */
int aj_srv_snapshot_create(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
			   const char *name, int64_t retention_ms, struct aj_snapshot_rec *out,
			   struct aj_err *err);
/* The memory and disk limits of a stored policy in bytes (records.c); 0 when it has none. */
struct aj_srv_limits {
	uint64_t memory, disk;
};
struct aj_srv_limits aj_srv_policy_limits(const char *policy_json);
json_t *aj_srv_error_json(const struct aj_srv_error *e);

/* ---- request input (json_body.c) ------------------------------------------------------ */

/* A request body's field table is a table of common/jfields.h rows; these make the rows of
 * the API's types (flags: 0 or AJ_JF_REQUIRED). The rows only check: handlers read the
 * values with aj_srv_str() and the like. */
#define AJ_SRV_STRING(n, fl) {.name = (n), .type = AJ_JF_STRING, .flags = (fl)}
#define AJ_SRV_BOOL(n, fl) {.name = (n), .type = AJ_JF_BOOL, .flags = (fl)}
#define AJ_SRV_UINT(n, fl)                                                                     \
	{.name = (n), .type = AJ_JF_INT, .flags = (fl), .min = 0, .max = INT64_MAX,            \
	 .expect = "a non-negative integer"}
#define AJ_SRV_OBJECT(n, fl) {.name = (n), .type = AJ_JF_OBJECT, .flags = (fl)}
/* seconds as a number, or a string such as "30s" (aj_srv_duration_ms reads it) */
#define AJ_SRV_DURATION(n, fl)                                                                 \
	{.name = (n), .type = AJ_JF_ANY, .flags = (fl), .parse = aj_srv_duration_check,        \
	 .expect = "a duration (seconds, or a string such as \"30s\")"}
/* {"key": "value"}: label keys, values of at most 255 bytes */
#define AJ_SRV_LABELS(n, fl)                                                                   \
	{.name = (n), .type = AJ_JF_MAP, .flags = (fl), .check = aj_srv_label_key_check,       \
	 .sub = &aj_srv_label_value, .expect = "an object of string values"}
/* a non-empty array of strings */
#define AJ_SRV_STRINGS(n, fl)                                                                  \
	{.name = (n), .type = AJ_JF_ANY, .flags = (fl), .parse = aj_srv_strings_check,         \
	 .expect = "a non-empty array of strings"}
#define AJ_SRV_FIELDS_END {.name = NULL}

int aj_srv_label_key_check(const char *path, const char *key, struct aj_err *err);
extern const struct aj_jf_field aj_srv_label_value;
int aj_srv_duration_check(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			  const struct aj_jf_opts *o, struct aj_jf_error *e);
int aj_srv_strings_check(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e);

/* Checks r->body against spec: unknown fields, missing required ones, types; an error is
 * answered as the API's {"error": {"code", "message", "field"}}. */
int aj_srv_check_fields(struct aj_srv_req *r, const struct aj_jf_field *spec);
/* Reads the request body as the route declares it (size, Content-Type, JSON syntax). */
int aj_srv_read_body(struct aj_srv_req *r);
const char *aj_srv_str(const struct aj_srv_req *r, const char *field);
int aj_srv_duration_ms(struct aj_srv_req *r, const char *field, int64_t *out);
/* Query parameters. */
const char *aj_srv_query(const struct aj_srv_req *r, const char *name);
int aj_srv_query_bool(struct aj_srv_req *r, const char *name, bool *out);
/* The prepare step of a DELETE that takes ?force=true (a 400 naming it if it is not a boolean),
 * and what it said, for the work step. */
int aj_srv_force_prepare(struct aj_srv_req *r);
bool aj_srv_forced(const struct aj_srv_req *r);
int aj_srv_query_int(struct aj_srv_req *r, const char *name, int64_t min, int64_t max,
		     int64_t *out);

/* ---- tokens and quotas (auth.c, quota.c) ----------------------------------------------- */

/* A token file (auth.c's format), named `what` in errors ("--e2b-keys"). */
int aj_srv_tokens_load_as(const char *what, const char *path, struct aj_srv_tokens **out,
			  struct aj_err *err);
void aj_srv_tokens_free(struct aj_srv_tokens *t);
/* The owner of the token v[0..n) itself (an E2B API key); NULL if none matches. */
const char *aj_srv_tokens_lookup(const struct aj_srv_tokens *t, const char *v, size_t n);
/* What a request would add to its owner's holdings (quota.c): sandboxes and the sums of their
 * memory and disk limits, volumes and the sum of their sizes, snapshots; `disk` counts disk
 * limits, volume sizes and snapshot sizes together (--max-disk). */
struct aj_srv_claim {
	unsigned sandboxes, volumes, snapshots;
	uint64_t memory, volume_bytes, disk;
};
/* `count` sandboxes with these limits each (0: none). */
struct aj_srv_claim aj_srv_claim_sandboxes(unsigned count, uint64_t memory_each,
					   uint64_t disk_each);
/* Checks a claim of the request's owner against what it holds (its records plus claims in
 * progress) and reserves it; fails with 429 naming the quota and the field. Worker thread.
 * Every successful claim is paired with an unclaim, once what it made is in the records (or
 * failed to be made). */
int aj_srv_quota_claim(struct aj_srv_req *r, struct aj_mgr *m, const struct aj_srv_claim *c);
void aj_srv_quota_unclaim(struct aj_srv_req *r, const struct aj_srv_claim *c);

/* ---- streamed responses (stream.c) ---------------------------------------------------- *
 * A chunked response of JSON lines (NDJSON) with backpressure: producers write while
 * aj_srv_stream_writable() and otherwise wait for on_drain; on_close tells them the client
 * went away, after which they end the stream (from a timer or a job's done callback, not from
 * inside on_close). The stream owns the request it took over.
 *
 * A streamed endpoint (events, exec) is a route whose work does the blocking part (find the
 * sandbox, connect to its supervisor) and whose done calls aj_srv_stream_start() and hands
 * the stream to a producer living on the loop thread: an event on a descriptor (exec output
 * pipes) or polls through the pool (api_events.c). At shutdown every producer is told with
 * on_close, and the drain waits until each stream's request is freed. */

struct aj_srv_stream;

struct aj_srv_stream_cbs {
	void (*on_drain)(void *arg); /* the queue emptied */
	void (*on_close)(void *arg); /* the client went away (before end) */
	void *arg;
};

__attribute__((returns_nonnull)) struct aj_srv_stream *
aj_srv_stream_start(struct aj_srv_req *r, int status, const struct aj_srv_stream_cbs *cbs);
/* The same with another media type, for bodies written with aj_srv_stream_write (E2B's
 * Connect envelopes). */
__attribute__((returns_nonnull)) struct aj_srv_stream *
aj_srv_stream_start_as(struct aj_srv_req *r, int status, const char *ctype,
		       const struct aj_srv_stream_cbs *cbs);
/* Writes len bytes as they are. -1 once the client is gone. */
int aj_srv_stream_write(struct aj_srv_stream *st, const void *data, size_t len);
/* Writes one value as a line (consumes j). -1 once the client is gone. */
int aj_srv_stream_line(struct aj_srv_stream *st, json_t *j);
bool aj_srv_stream_writable(const struct aj_srv_stream *st);
bool aj_srv_stream_gone(const struct aj_srv_stream *st);
/* Ends the response (or drops it if the client is gone) and frees the stream and request. */
void aj_srv_stream_end(struct aj_srv_stream *st);

#endif
