/* Shared by the server's files; not for other modules (a front end uses server/frontend.h,
 * whose threads and ownership rules hold here too).
 */
#ifndef AJ_SERVER_INTERNAL_H
#define AJ_SERVER_INTERNAL_H

#include <sys/queue.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "server/frontend.h"
#include "state/store.h"

struct aj_srv_pool;
struct aj_srv_quota;

struct aj_srv {
	const struct aj_srv_config *cfg;
	struct event_base *base;
	struct evhttp *http_local, *http_remote;
	struct evhttp *http_front;      /* the front end's listeners (--e2b-listen) */
	struct evhttp *http_preview;    /* --preview-listen */
	struct evhttp *http_console;    /* --console-listen */
	void *front;                    /* the front end's state (cfg->frontend) */
	struct aj_srv_tokens *tokens;
	struct aj_srv_pool *pool;
	struct aj_srv_quota *quota;
	json_t *features;       /* probed once at start: probing forks, which workers must not */
	char socket_path[108];
	bool socket_bound;
	bool stopping;
	unsigned inflight;      /* requests accepted whose reply is not yet handed to libevent */
	unsigned flushing;      /* replies handed to libevent, not yet written out */
	struct aj_srv_stream *streams; /* stream.c: open streamed responses */
	struct aj_srv_gc *gc;           /* gc.c */
	struct aj_srv_warm *warm;       /* warm.c: --warm-pool, NULL without */
};

/* ---- worker pool (jobs.c) ------------------------------------------------------------- */

int aj_srv_pool_start(struct aj_srv *s, struct aj_err *err);
/* Jobs submitted whose done callback has not run yet. */
unsigned aj_srv_pool_busy(const struct aj_srv *s);
/* Joins the workers; jobs still queued are dropped without their done callback. */
void aj_srv_pool_stop(struct aj_srv *s);

/* ---- periodic gc (gc.c) ---------------------------------------------------------------- */

struct aj_srv_gc;
int aj_srv_gc_start(struct aj_srv *s, struct aj_err *err);
void aj_srv_gc_stop(struct aj_srv *s);

/* ---- warm pools (warm.c) ------------------------------------------------------------------ */

struct aj_srv_warm;
/* The pools of cfg->warm_pools (refused at start when a spec is bad): the last run's
 * leftovers removed, then filled in the background. */
int aj_srv_warm_start(struct aj_srv *s, struct aj_err *err);
/* After the worker pool has stopped: removes the pools' sandboxes, frees everything. */
void aj_srv_warm_stop(struct aj_srv *s);

/* ---- requests and routes (router.c) --------------------------------------------------- */

/* Route tables, each ended by an entry with a NULL pattern; router.c lists them. */
extern const struct aj_srv_route aj_api_meta_routes[];
extern const struct aj_srv_route aj_api_sandbox_routes[];
extern const struct aj_srv_route aj_api_snapshot_routes[];
extern const struct aj_srv_route aj_api_secret_routes[];
extern const struct aj_srv_route aj_api_volume_routes[];
extern const struct aj_srv_route aj_api_file_routes[];
extern const struct aj_srv_route aj_api_event_routes[];
extern const struct aj_srv_route aj_api_preview_routes[];
extern const struct aj_srv_route aj_api_exec_routes[];
extern const struct aj_srv_route aj_api_proc_routes[];

/* Who a listener's clients are: the unix socket's (the local owner), --listen's (bearer
 * tokens of --token-file, their owners' restrictions), --console-listen's (the local owner,
 * with the console's token, loopback Hosts only). */
enum aj_srv_listener { AJ_SRV_LOCAL, AJ_SRV_REMOTE, AJ_SRV_CONSOLE };

int aj_srv_router_install(struct aj_srv *s, struct evhttp *http, enum aj_srv_listener kind);
/* The request's owner from its listener and Authorization header; -1 with r's error set. */
int aj_srv_authenticate(struct aj_srv_req *r);

/* ---- the web console (console.c) ------------------------------------------------------- */

/* /console, /console/..., and / on the console listener: answered (r finished), true. */
bool aj_srv_console_route(struct aj_srv_req *r, const char *path);
/* Console listener: the Host must be a loopback name; -1 with r's error set. */
int aj_srv_console_host_check(struct aj_srv_req *r);
/* Console listener: the Host, and the console's bearer token; the local owner. */
int aj_srv_console_auth(struct aj_srv_req *r);
/* --console-listen must name a loopback address; addr: what to bind (port 0 as no port). */
int aj_srv_console_check_listen(const char *hostport, char *addr, size_t addr_len,
				struct aj_err *err);

/* ---- the console listener's credentials (console_login.c) ------------------------------ */

/* Once the listener is bound to hostport (its real port): a fresh console token and login
 * code, written to <state>/console.json (0600), and the code's renewal timer. */
int aj_srv_console_login_start(struct aj_srv *s, const char *hostport, struct aj_err *err);
/* At the end: console.json removed, every credential forgotten. */
void aj_srv_console_login_stop(void);
/* Whether v[0..n) is the console's token or a live session's. */
bool aj_srv_console_credential_ok(const char *v, size_t n);
/* /v1/console/session on the console listener (POST: a login code for a session; DELETE:
 * the caller's session ends): answered (r finished), true; false for anything else. */
bool aj_srv_console_session_route(struct aj_srv_req *r, const char *path);

/* ---- taking a connection over (portproxy.c) -------------------------------------------- */

/* The client's socket of req, taken from evhttp (which frees req and its connection); bytes
 * it read past the request go to rest. -1 when the client is gone (req is then still evhttp's
 * to answer). */
int aj_srv_take_connection(struct evhttp_request *req, struct evbuffer *rest);

/* ---- the terminal: a shell over a WebSocket (api_terminal.c, terminal.c) --------------- */

extern const struct aj_srv_route aj_api_terminal_routes[];
/* GET /v1/sandboxes/{ref}/terminal: an upgrade to a WebSocket, with its own authentication
 * (a ticket, or the listener's): answered or taken over, true; false for other paths. */
bool aj_srv_terminal_route(struct aj_srv_req *r, const char *path);
/* Terminals the daemon relays at once, and per owner (docs/api.md "Terminal"); terminal
 * tickets waiting to be used, per owner (an owner's oldest goes for a new one). */
#define AJ_SRV_TERMS_MAX 1024
#define AJ_SRV_TERMS_PER_OWNER 32
#define AJ_SRV_TICKETS_PER_OWNER 32
/* Answers the upgrade of Sec-WebSocket-Key `key` with 101 on client (taken; `rest`: bytes
 * already read from it) and relays the WebSocket and command `exec` of the supervisor
 * connection ctl (taken) until either ends; counted as owner's. */
void aj_srv_terminal_start(struct aj_srv *s, int client, struct evbuffer *rest, int ctl,
			   uint64_t exec, int pid, const char *key, const char *owner);
/* Whether the daemon relays AJ_SRV_TERMS_MAX terminals; how many are owner's. */
bool aj_srv_terminals_full(void);
unsigned aj_srv_terminals_of(const char *owner);
/* Shutdown: every terminal's command killed, its client told (1001). */
void aj_srv_terminals_shutdown(struct aj_srv *s);

/* ---- JSON of records (records.c) ------------------------------------------------------ */

json_t *aj_srv_sandbox_json(const struct aj_sandbox_rec *r);
json_t *aj_srv_snapshot_json(const struct aj_snapshot_rec *s);
json_t *aj_srv_time_json(int64_t ms);

/* ---- tokens (auth.c) ------------------------------------------------------------------ */

int aj_srv_tokens_load(const char *path, struct aj_srv_tokens **out, struct aj_err *err);
/* The owner of the bearer token in an Authorization header value; NULL if none matches. */
const char *aj_srv_tokens_owner(const struct aj_srv_tokens *t, const char *authorization);

/* ---- quotas (quota.c) ----------------------------------------------------------------- */

__attribute__((returns_nonnull)) struct aj_srv_quota *aj_srv_quota_new(
	const struct aj_srv_config *c);
void aj_srv_quota_free(struct aj_srv_quota *q);

/* ---- streamed responses (stream.c) ---------------------------------------------------- */

/* Shutdown: tells every open stream's producer to end it (its on_close). */
void aj_srv_streams_shutdown(struct aj_srv *s);

#endif
