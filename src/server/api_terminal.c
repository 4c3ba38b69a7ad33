/* A terminal in a running sandbox over a WebSocket (docs/api.md "Terminal"): a shell (or the
 * command asked for) on a terminal made inside the sandbox by its supervisor, as a spawned
 * command with stdin, relayed by terminal.c until either side ends; the command dies with
 * the connection.
 *
 *   POST /v1/sandboxes/{ref}/terminal/tickets  {argv|command?, cwd?, env?, user?}
 *        -> {"ticket": HEX, "expires_in": 30, "sandbox": ID}
 *   GET  /v1/sandboxes/{ref}/terminal?rows=R&cols=C   Upgrade: websocket,
 *        Sec-WebSocket-Protocol: agentjail.terminal.v1[, ticket.HEX]
 *
 * Authentication: a browser cannot set a WebSocket's headers, so a page first asks for a
 * ticket with its bearer token (an ordinary API call) and offers it as the subprotocol
 * "ticket.HEX": it opens one terminal of that one sandbox, once, within 30 seconds, on the
 * kind of listener that made it, as the owner that asked. Other clients may instead send
 * Authorization as on any route (or nothing on the unix socket). An upgrade whose Origin is
 * not the Host it was sent to is refused: a page of another site can neither read a ticket
 * (it would need the token) nor use one.
 *
 * Tickets live in a table of the loop thread; the spawn runs on a worker. Limits, so that no
 * owner can use up what the others need: AJ_SRV_TICKETS_PER_OWNER tickets waiting per owner
 * (a new one takes the place of the owner's oldest), AJ_SRV_TERMS_PER_OWNER terminals per
 * owner (open, or starting: 429), and the daemon's tables (TICKETS_MAX tickets,
 * AJ_SRV_TERMS_MAX terminals: 503).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/util.h"
#include "control/proto.h"
#include "server/procs_internal.h"
#include "server/ws.h"

#define PROTOCOL "agentjail.terminal.v1"
#define TICKET_BYTES 32
#define TICKET_TTL_MS 30000
#define TICKETS_MAX 1024

struct ticket {
	char value[2 * TICKET_BYTES + 1]; /* "" when the slot is free */
	char owner[AJ_SRV_OWNER_MAX];
	char sandbox[33];
	bool remote, console;
	uint64_t expires_ms;
	json_t *spawn;
};

static struct ticket tickets[TICKETS_MAX]; /* the loop thread's */

/* What a terminal request carries from its checks to its worker and back. */
struct tdata {
	struct aj_srv_pdata *d;
	char sandbox[33]; /* a ticket's sandbox ("" without a ticket) */
	char key[32];     /* Sec-WebSocket-Key */
	char owner[AJ_SRV_OWNER_MAX]; /* an upgrade's, once it counts among `starting` */
	struct tdata *next, **pprev;
};

/* Upgrades whose command is starting (the loop thread's): they count for their owner. */
static struct tdata *starting;

static void tdata_free(void *p)
{
	struct tdata *t = p;

	if (t->pprev && (*t->pprev = t->next))
		t->next->pprev = t->pprev;
	if (t->d)
		aj_srv_pdata_free(t->d);
	free(t);
}

static unsigned starting_of(const char *owner)
{
	unsigned n = 0;

	for (const struct tdata *t = starting; t; t = t->next)
		n += !strcmp(t->owner, owner);
	return n;
}

static void count_starting(struct tdata *t, const char *owner)
{
	snprintf(t->owner, sizeof t->owner, "%s", owner);
	if ((t->next = starting))
		starting->pprev = &t->next;
	starting = t;
	t->pprev = &starting;
}

static struct tdata *tdata_new(struct aj_srv_req *r)
{
	struct tdata *t = aj_xcalloc(1, sizeof *t);

	t->d = aj_xcalloc(1, sizeof *t->d);
	t->d->ctl = -1;
	r->data = t;
	r->data_free = tdata_free;
	return t;
}

static void ticket_clear(struct ticket *t)
{
	explicit_bzero(t->value, sizeof t->value);
	json_decref(t->spawn);
	memset(t, 0, sizeof *t);
}

/* ---- the spawn request -------------------------------------------------------------------- */

static const struct aj_jf_field ticket_fields[] = {
	AJ_SRV_STRINGS("argv", 0),
	AJ_SRV_STRING("command", 0),
	AJ_SRV_STRING("cwd", 0),
	AJ_SRV_LABELS("env", 0),
	AJ_SRV_STRING("user", 0),
	AJ_SRV_FIELDS_END,
};

/* The sandbox user's login shell: bash where there is one, else sh. */
static json_t *default_argv(void)
{
	return json_pack("[s, s, s]", "/bin/sh", "-c",
			 "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l");
}

/* The supervisor's spawn request for a terminal: the body's command (or a login shell), a
 * terminal, stdin kept open, TERM for xterm.js unless the body sets it. */
static int terminal_spawn(struct aj_srv_req *r, struct aj_srv_pdata *d)
{
	json_t *env;

	if (r->body && (json_object_get(r->body, "argv") || json_object_get(r->body, "command"))) {
		if (aj_srv_build_spawn(r, d, true) < 0)
			return -1;
	} else {
		const char *cwd = r->body ? aj_srv_str(r, "cwd") : NULL;
		json_t *v;
		if (cwd && cwd[0] != '/')
			return aj_srv_fail(r, 400, "invalid_value", "cwd",
					   "cwd: must be an absolute path inside the sandbox");
		d->spawn = json_pack("{s:s, s:o, s:b, s:b}", "op", "spawn", "argv", default_argv(),
				     "attach", 1, "kill_on_close", 1);
		for (const char *const *k = (const char *const[]){"cwd", "env", "user", NULL}; *k; k++)
			if (r->body && (v = json_object_get(r->body, *k)))
				json_object_set(d->spawn, *k, v);
	}
	env = json_object_get(d->spawn, "env");
	if (!env)
		json_object_set_new(d->spawn, "env", env = json_object());
	if (!json_object_get(env, "TERM"))
		json_object_set_new(env, "TERM", json_string("xterm-256color"));
	json_object_set_new(d->spawn, "tty", json_true());
	json_object_set_new(d->spawn, "stdin", json_true());
	json_object_set_new(d->spawn, "tag", json_string("terminal"));
	return 0;
}

/* ---- POST /v1/sandboxes/{ref}/terminal/tickets ------------------------------------------- */

static int ticket_prepare(struct aj_srv_req *r)
{
	struct tdata *t = tdata_new(r);

	if (r->body && aj_srv_check_fields(r, ticket_fields) < 0)
		return -1;
	return terminal_spawn(r, t->d);
}

/* The sandbox must be the owner's and running: a ticket that cannot work is not given. */
static void ticket_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct tdata *t = r->data;
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = {0};
	struct aj_err err;

	if (aj_mgr_get(m, r->ref, &rec, &err) < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	if (rec.state != AJ_ST_RUNNING) {
		aj_srv_fail(r, 409, "wrong_state", NULL, "sandbox \"%s\" is %s; it must be running",
			    rec.name, aj_sandbox_state_name(rec.state));
		return;
	}
	snprintf(t->sandbox, sizeof t->sandbox, "%s", rec.id);
}

/* A free slot for owner's new ticket: expired ones are cleared on the way, and an owner
 * with AJ_SRV_TICKETS_PER_OWNER waiting loses its oldest. */
static struct ticket *free_slot(const char *owner, uint64_t now)
{
	struct ticket *slot = NULL, *oldest = NULL;
	unsigned mine = 0;

	for (size_t i = 0; i < TICKETS_MAX; i++) {
		struct ticket *t = &tickets[i];
		if (t->value[0] && t->expires_ms <= now)
			ticket_clear(t);
		if (t->value[0] && !strcmp(t->owner, owner)) {
			mine++;
			if (!oldest || t->expires_ms < oldest->expires_ms)
				oldest = t;
		}
		if (!slot && !t->value[0])
			slot = t;
	}
	if (mine >= AJ_SRV_TICKETS_PER_OWNER) {
		ticket_clear(oldest);
		return oldest;
	}
	return slot;
}

static void ticket_done(struct aj_srv_req *r)
{
	struct tdata *t = r->data;
	uint64_t now = aj_now_monotonic_us() / 1000;
	struct ticket *slot = r->failed ? NULL : free_slot(r->job.owner, now);

	if (!r->failed && !slot)
		aj_srv_fail(r, 503, "unavailable", NULL,
			    "%d terminal tickets are waiting to be used; try again in a moment",
			    TICKETS_MAX);
	if (slot && aj_random_hex(slot->value, TICKET_BYTES) < 0) {
		slot->value[0] = '\0';
		aj_srv_fail(r, 500, "internal", NULL, "no random bytes for a ticket");
	} else if (slot) {
		snprintf(slot->owner, sizeof slot->owner, "%s", r->job.owner);
		snprintf(slot->sandbox, sizeof slot->sandbox, "%s", t->sandbox);
		slot->remote = r->remote;
		slot->console = r->console;
		slot->expires_ms = now + TICKET_TTL_MS;
		slot->spawn = json_incref(t->d->spawn);
		aj_srv_ok(r, 200, json_pack("{s:s, s:i, s:s}", "ticket", slot->value, "expires_in",
					    TICKET_TTL_MS / 1000, "sandbox", t->sandbox));
	}
	aj_srv_req_finish(r);
}

const struct aj_srv_route aj_api_terminal_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/terminal/tickets", AJ_SRV_BODY_JSON,
		     NULL, ticket_prepare, ticket_work, ticket_done),
	AJ_SRV_ROUTES_END,
};

/* ---- GET /v1/sandboxes/{ref}/terminal ---------------------------------------------------- */

/* Takes the ticket (used or not, it is gone): its owner, sandbox and command become r's. */
static int use_ticket(struct aj_srv_req *r, struct tdata *t, const char *value)
{
	uint64_t now = aj_now_monotonic_us() / 1000;
	struct ticket *found = NULL;

	for (size_t i = 0; i < TICKETS_MAX; i++)
		if (tickets[i].value[0] && strlen(value) == 2 * TICKET_BYTES &&
		    CRYPTO_memcmp(tickets[i].value, value, 2 * TICKET_BYTES) == 0)
			found = &tickets[i];
	if (!found || found->expires_ms <= now || found->remote != r->remote ||
	    found->console != r->console) {
		if (found)
			ticket_clear(found);
		return aj_srv_fail(r, 401, "unauthorized", NULL,
				   "the terminal ticket is not valid (unknown, used, expired, or "
				   "made on another listener)");
	}
	snprintf(r->job.owner, sizeof r->job.owner, "%s", found->owner);
	snprintf(t->sandbox, sizeof t->sandbox, "%s", found->sandbox);
	t->d->spawn = json_incref(found->spawn);
	ticket_clear(found);
	return 0;
}

/* The upgrade's headers, its Origin and its subprotocols; the ticket offered into ticket. */
static int check_upgrade(struct aj_srv_req *r, char *ticket, size_t ticket_len)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(r->req);
	const char *origin = evhttp_find_header(h, "Origin");

	if (!aj_ws_has_token(evhttp_find_header(h, "Upgrade"), "websocket") ||
	    !aj_ws_has_token(evhttp_find_header(h, "Connection"), "upgrade"))
		return aj_srv_fail(r, 426, "upgrade_required", NULL,
				   "the terminal is a WebSocket: send Upgrade: websocket");
	if (!evhttp_find_header(h, "Sec-WebSocket-Version") ||
	    strcmp(evhttp_find_header(h, "Sec-WebSocket-Version"), "13")) {
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "Sec-WebSocket-Version",
				  "13");
		return aj_srv_fail(r, 426, "upgrade_required", NULL,
				   "Sec-WebSocket-Version: only 13 (RFC 6455) is spoken");
	}
	if (!aj_ws_key_valid(evhttp_find_header(h, "Sec-WebSocket-Key")))
		return aj_srv_fail(r, 400, "invalid_value", NULL,
				   "Sec-WebSocket-Key: expected base64 of 16 bytes");
	/* Browsers always send Origin with a WebSocket; a page of another origin is refused
	 * whatever else it holds. */
	if (origin && !aj_ws_origin_matches(origin, evhttp_find_header(h, "Host")))
		return aj_srv_fail(r, 403, "forbidden", NULL,
				   "a WebSocket from another origin (%.200s) is refused", origin);
	if (!aj_ws_protocols(evhttp_find_header(h, "Sec-WebSocket-Protocol"), PROTOCOL, ticket,
			     ticket_len))
		return aj_srv_fail(r, 400, "invalid_value", NULL,
				   "Sec-WebSocket-Protocol: offer \"" PROTOCOL
				   "\" (and at most one \"ticket.HEX\")");
	return 0;
}

static int terminal_size(struct aj_srv_req *r, const char *q, json_t *spawn)
{
	static const char *const params[] = {"rows", "cols", NULL};
	const struct aj_srv_route rt = {.query = params};
	int64_t rows = 24, cols = 80;
	bool repeated;
	const struct evkeyval *kv;

	if (q && q[0] && evhttp_parse_query_str(q, &r->query) < 0)
		return aj_srv_fail(r, 400, "invalid_query", NULL,
				   "the query string is not NAME=VALUE pairs joined by &");
	if ((kv = aj_srv_query_bad(&rt, &r->query, NULL, &repeated)))
		return aj_srv_fail(r, 400, repeated ? "invalid_value" : "unknown_parameter", kv->key,
				   "%s: %s", kv->key,
				   repeated ? "given more than once" : "unknown query parameter");
	if (aj_srv_query_int(r, "rows", 1, 1000, &rows) < 0 ||
	    aj_srv_query_int(r, "cols", 1, 1000, &cols) < 0)
		return -1;
	json_object_set_new(spawn, "rows", json_integer(rows));
	json_object_set_new(spawn, "cols", json_integer(cols));
	return 0;
}

static void upgrade_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct tdata *t = r->data;
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = {0};
	json_t *reply = NULL;
	struct aj_err err;

	t->d->ctl = aj_mgr_connect(m, r->ref, &rec, &err);
	if (t->d->ctl < 0) {
		aj_srv_fail_err(r, &err, NULL);
		return;
	}
	/* A ticket opens the sandbox it was made for, under whatever name the path gives. */
	if (t->sandbox[0] && strcmp(t->sandbox, rec.id)) {
		aj_srv_fail(r, 401, "unauthorized", NULL, "the ticket is for another sandbox");
		return;
	}
	if (aj_srv_proc_call(r, t->d, json_incref(t->d->spawn), &reply) < 0)
		return;
	t->d->exec = (uint64_t)json_integer_value(json_object_get(reply, "exec"));
	t->d->pid = (int)json_integer_value(json_object_get(reply, "pid"));
	json_decref(reply);
	aj_fd_set_nonblock(t->d->ctl, true);
}

/* A command whose terminal never opened dies at once: its connection closes with the request,
 * which kills it (the spawn's kill_on_close) even when this kill finds the socket full or the
 * supervisor drops it for output it could not send; the kill is for a supervisor that an older
 * daemon started. */
static void kill_spawned(struct tdata *t)
{
	json_t *k;

	if (t->d->ctl < 0 || !t->d->exec)
		return;
	k = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec", (json_int_t)t->d->exec, "signal",
		      SIGKILL);
	aj_ctl_send(t->d->ctl, k, NULL, 0);
	json_decref(k);
}

static void upgrade_done(struct aj_srv_req *r)
{
	struct tdata *t = r->data;
	_cleanup_evbuffer_ struct evbuffer *rest = evbuffer_new();
	int cli = -1;

	if (!r->failed && rest && evhttp_request_get_connection(r->req))
		cli = aj_srv_take_connection(r->req, rest);
	if (cli < 0) { /* refused, or the client went away while the command started */
		if (!r->failed) {
			kill_spawned(t);
			aj_srv_fail(r, 500, "internal", NULL, "the connection could not be taken over");
		}
		aj_srv_req_finish(r);
		return;
	}
	r->req = NULL; /* freed with its connection */
	aj_srv_terminal_start(r->srv, cli, rest, aj_steal_fd(&t->d->ctl), t->d->exec, t->d->pid,
			      t->key, r->job.owner);
	aj_srv_req_free(r);
}

static void upgrade_job_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	upgrade_work((struct aj_srv_req *)j, m);
}

static void upgrade_job_done(struct aj_srv_job *j)
{
	upgrade_done((struct aj_srv_req *)j);
}

/* Checks, then authentication (the ticket, or the listener's own), then the spawn on a
 * worker; -1 with r's error set. */
static int upgrade_start(struct aj_srv_req *r, const char *query)
{
	struct tdata *t = tdata_new(r);
	char ticket[2 * TICKET_BYTES + 1] = "";

	if ((r->console && aj_srv_console_host_check(r) < 0) ||
	    check_upgrade(r, ticket, sizeof ticket) < 0)
		return -1;
	if (aj_srv_terminals_full())
		return aj_srv_fail(r, 503, "too_many_connections", NULL,
				   "this daemon relays as many terminals as it will; close one first");
	if (ticket[0] ? use_ticket(r, t, ticket) < 0
		      : aj_srv_authenticate(r) < 0 || terminal_spawn(r, t->d) < 0)
		return -1;
	if (terminal_size(r, query, t->d->spawn) < 0)
		return -1;
	if (aj_srv_terminals_of(r->job.owner) + starting_of(r->job.owner) >=
	    AJ_SRV_TERMS_PER_OWNER)
		return aj_srv_fail(r, 429, "too_many_terminals", NULL,
				   "%u terminals are open for this owner, the most there may be; "
				   "close one first",
				   AJ_SRV_TERMS_PER_OWNER);
	count_starting(t, r->job.owner);
	snprintf(t->key, sizeof t->key, "%s",
		 evhttp_find_header(evhttp_request_get_input_headers(r->req), "Sec-WebSocket-Key"));
	r->job.work = upgrade_job_work;
	r->job.done = upgrade_job_done;
	aj_srv_pool_submit(r->srv, &r->job);
	return 0;
}

bool aj_srv_terminal_route(struct aj_srv_req *r, const char *path)
{
	static const struct aj_srv_route rows[] = {
		AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/terminal", AJ_SRV_BODY_NONE, NULL,
			     NULL, NULL, NULL),
		AJ_SRV_ROUTES_END,
	};
	static const struct aj_srv_table table[] = {AJ_SRV_TABLE(rows), AJ_SRV_TABLES_END};
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
	struct aj_srv_match m;

	if (!path || aj_srv_route_match(table, evhttp_request_get_command(r->req), path,
					sizeof r->ref, &m) < 0) {
		if (!path || !m.methods)
			return false;
		snprintf(r->allow, sizeof r->allow, "%s", m.allow);
		aj_srv_fail(r, 405, "method_not_allowed", NULL,
			    "the terminal is a WebSocket: GET with Upgrade: websocket");
		aj_srv_req_finish(r);
		return true;
	}
	snprintf(r->ref, sizeof r->ref, "%s", aj_srv_match_capture(&m, "ref"));
	r->route = m.route;
	if (upgrade_start(r, evhttp_uri_get_query(uri)) < 0)
		aj_srv_req_finish(r);
	return true;
}
