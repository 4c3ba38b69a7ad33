/* HTTP through the proxy: CONNECT, absolute-URI requests (keep-alive, chunked bodies,
 * upgrades), and requests inside a TLS session the proxy terminated to inject a credential.
 * Requests are rewritten (origin-form target, Host from the checked authority, hop-by-hop
 * and proxy headers dropped, placeholders replaced); responses pass through untouched,
 * framed only to know where they end. */
#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "egress/internal.h"

/* ---- bodies ------------------------------------------------------------------------------- */

/* How many buffered bytes belong to the body being relayed; -1 if its chunked framing is
 * broken. */
static ssize_t body_take(struct evbuffer *in, struct aj_http_body *b)
{
	size_t len = evbuffer_get_length(in), total = 0;
	_cleanup_free_ struct evbuffer_iovec *v = NULL;
	int nv;

	if (!len || b->done)
		return 0;
	if (b->kind != AJ_BODY_CHUNKED)
		return aj_http_body_scan(b, NULL, len);
	nv = evbuffer_peek(in, -1, NULL, NULL, 0);
	v = aj_xcalloc((size_t)(nv > 0 ? nv : 1), sizeof *v);
	nv = evbuffer_peek(in, -1, NULL, v, nv);
	for (int i = 0; i < nv && !b->done; i++) {
		ssize_t n = aj_http_body_scan(b, v[i].iov_base, v[i].iov_len);
		if (n < 0)
			return -1;
		total += (size_t)n;
	}
	return (ssize_t)total;
}

/* ---- the exchange ------------------------------------------------------------------------- */

static void exchange_done(struct pconn *pc)
{
	struct evbuffer *in;

	pc->exchanges++;
	pc_event(pc, "allowed", NULL, pc->status);
	if (!pc->up_keep)
		up_close(pc);
	else
		pc->up_reusable = true;
	if (!pc->cli_keep || !pc->req_done) {
		pc_finish(pc);
		return;
	}
	pc->state = PS_HEAD;
	bufferevent_enable(pc->cli, EV_READ);
	in = bufferevent_get_input(pc->cli);
	if (evbuffer_get_length(in))
		fwd_on_client(pc);
}

static void request_body(struct pconn *pc)
{
	ssize_t n;

	if (!pc->req_done) {
		n = body_take(bufferevent_get_input(pc->cli), &pc->reqb);
		if (n < 0) {
			pc_event(pc, "failed", "malformed chunked request body", 0);
			pc_finish(pc);
			return;
		}
		pc_relay(pc, true, (size_t)n);
		if (pc->closed || pc->state != PS_EXCHANGE)
			return;
		pc->req_done = pc->reqb.done;
	}
	/* A following (pipelined) request waits in the buffer until this exchange ends. */
	if (pc->req_done) {
		bufferevent_disable(pc->cli, EV_READ);
		if (pc->resp_done)
			exchange_done(pc);
	}
}

void fwd_send_request(struct pconn *pc)
{
	evbuffer_add(bufferevent_get_output(pc->up), pc->out_head, pc->out_head_len);
	pc->bytes_up += pc->out_head_len;
	free(pc->out_head);
	pc->out_head = NULL;
	if (!eg_count(pc->eg, pc->out_head_len, 0)) {
		pc_finish(pc);
		return;
	}
	pc->state = PS_EXCHANGE;
	pc->req_done = pc->reqb.done;
	pc->resp_head = pc->resp_done = false;
	pc->status = 0;
	pc->up_keep = true;
	pc->up_reusable = false;
	bufferevent_enable(pc->up, EV_READ | EV_WRITE);
	bufferevent_enable(pc->cli, EV_READ);
	request_body(pc);
}

/* A response head (1xx ones included): forwarded as received. 1 if the final head was
 * read, 2 after an interim (1xx) one, 0 if more bytes are needed, -1 if the exchange ended
 * or changed state. */
static int response_head(struct pconn *pc)
{
	struct evbuffer *in = bufferevent_get_input(pc->up);
	struct evbuffer_ptr at = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	struct aj_http_head h;
	char why[200] = "", msg[300];
	_cleanup_free_ char *raw = NULL;
	size_t len;

	if (at.pos < 0) {
		if (evbuffer_get_length(in) <= AJ_HTTP_HEAD_MAX)
			return 0;
		pc_upstream_failed(pc, EF_BAD, "the host's response head is too large");
		return -1;
	}
	len = (size_t)at.pos + 4;
	raw = aj_xmalloc(len);
	if (evbuffer_copyout(in, raw, len) != (ev_ssize_t)len ||
	    aj_http_head_parse(raw, len, false, &h, why, sizeof why) < 0) {
		snprintf(msg, sizeof msg, "malformed response from %s: %s", pc->host, why);
		up_close(pc);
		pc_upstream_failed(pc, EF_TLS, msg);
		return -1;
	}
	pc->status = atoi(h.start[1]);
	if (pc->status < 100 || pc->status > 599 ||
	    aj_http_response_body(&h, pc->method, pc->status, &pc->respb, why, sizeof why) < 0) {
		aj_http_head_free(&h);
		up_close(pc);
		pc_upstream_failed(pc, EF_TLS, "the host sent a response the proxy cannot frame");
		return -1;
	}
	pc->up_keep = aj_http_keep_alive(&h, false) && pc->respb.kind != AJ_BODY_CLOSE;
	aj_http_head_free(&h);
	pc_relay(pc, false, len);
	if (pc->closed || pc->state != PS_EXCHANGE)
		return -1;
	if (pc->status == 101) {
		if (!pc->upgrade) {
			pc_finish(pc);
			return -1;
		}
		pc->up_keep = false;
		pc_start_tunnel(pc); /* the event comes when the tunnel closes */
		return -1;
	}
	if (pc->status < 200)
		return 2; /* an interim response (100 Continue): the real one follows */
	pc->resp_head = true;
	return 1;
}

void fwd_on_upstream(struct pconn *pc)
{
	while (!pc->closed && pc->state == PS_EXCHANGE && !pc->paused_up) {
		struct evbuffer *in = bufferevent_get_input(pc->up);
		ssize_t n;

		if (!pc->resp_head) {
			int r = response_head(pc);
			if (r <= 0)
				return;
			if (r == 2 || !pc->respb.done)
				continue;
		} else {
			if (!evbuffer_get_length(in))
				return;
			n = body_take(in, &pc->respb);
			if (n < 0) {
				pc_event(pc, "failed", "malformed chunked response body", pc->status);
				pc_finish(pc);
				return;
			}
			pc_relay(pc, false, (size_t)n);
			if (pc->closed || pc->state != PS_EXCHANGE)
				return;
		}
		if (pc->respb.done) {
			pc->resp_done = true;
			if (pc->req_done)
				exchange_done(pc);
			else
				pc_finish(pc); /* answered before the request ended: no reuse */
			return;
		}
	}
}

void fwd_on_upstream_eof(struct pconn *pc)
{
	fwd_on_upstream(pc);
	if (pc->closed || pc->state != PS_EXCHANGE)
		return;
	pc->up_keep = false;
	if (pc->resp_head && pc->respb.kind == AJ_BODY_CLOSE) {
		/* The end of a close-delimited body: the client learns it the same way. */
		pc->resp_done = true;
		pc->cli_keep = false;
		up_close(pc);
		exchange_done(pc);
		return;
	}
	up_close(pc);
	if (!pc->resp_head && pc->bytes_down == 0) {
		char why[320];
		snprintf(why, sizeof why, "%s closed the connection without answering", pc->host);
		pc_upstream_failed(pc, EF_REFUSED, why);
		return;
	}
	pc_event(pc, "failed", "the host closed the connection in the middle of the response",
		 pc->status);
	pc_finish(pc);
}

/* ---- rewriting a request ------------------------------------------------------------------ */

static const char *const hop_by_hop[] = {
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "TE", "Upgrade",
};

/* Headers for this hop only: the fixed list, plus every header Connection names. */
static void strip_hop_by_hop(struct aj_http_head *h, bool keep_upgrade)
{
	_cleanup_strv_ struct aj_strv named = AJ_STRV_INIT;

	for (size_t i = 0; i < h->n; i++) {
		_cleanup_free_ char *copy = NULL;
		char *save = NULL;
		if (strcasecmp(h->f[i].name, "Connection") != 0)
			continue;
		copy = aj_xstrdup(h->f[i].value);
		for (char *t = strtok_r(copy, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save))
			aj_strv_push(&named, t);
	}
	for (size_t i = 0; i < named.n; i++)
		if (!(keep_upgrade && strcasecmp(named.v[i], "upgrade") == 0))
			aj_http_head_del(h, named.v[i]);
	for (size_t i = 0; i < sizeof hop_by_hop / sizeof hop_by_hop[0]; i++)
		if (!(keep_upgrade && strcmp(hop_by_hop[i], "Upgrade") == 0))
			aj_http_head_del(h, hop_by_hop[i]);
}

/* The target in origin form: the path and query, never a fragment. */
static char *origin_form(const char *path)
{
	size_t n = strcspn(path, "#");
	char *out = aj_xmalloc(n + 2);

	if (path[0] == '/')
		snprintf(out, n + 2, "%.*s", (int)n, path);
	else
		snprintf(out, n + 2, "/%.*s", (int)n, path);
	return out;
}

/* Host is what the rules checked: a request cannot name an allowed host in its URL and
 * another in its Host header (domain fronting on a shared front end). */
static void set_host(struct pconn *pc, struct aj_http_head *h)
{
	char host[AJ_EGRESS_HOST_MAX + 12];
	bool v6 = strchr(pc->host, ':') != NULL;
	uint16_t dflt = pc->intercepted ? 443 : 80;

	if (pc->port == dflt)
		snprintf(host, sizeof host, "%s%s%s", v6 ? "[" : "", pc->host, v6 ? "]" : "");
	else
		snprintf(host, sizeof host, "%s%s%s:%u", v6 ? "[" : "", pc->host, v6 ? "]" : "",
			 pc->port);
	aj_http_head_set(h, "Host", host);
}

static int prepare(struct pconn *pc, struct aj_http_head *h, const char *path)
{
	char why[200], *target;
	int used;

	if (aj_http_request_body(h, &pc->reqb, why, sizeof why) < 0) {
		pc_http_error(pc, 400, why);
		return -1;
	}
	pc->cli_keep = aj_http_keep_alive(h, true);
	pc->upgrade = aj_http_head_has_token(h, "Connection", "upgrade") &&
		      aj_http_head_get(h, "Upgrade");
	if (pc->inspect) {
		/* HTTP rules decide each request: nothing may carry others past them (HTTP/2
		 * over an upgrade) or name another method or path than the one decided. */
		static const char *const overrides[] = {
			"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override",
			"X-Original-URL", "X-Rewrite-URL",
		};
		if (pc->upgrade && aj_http_head_has_token(h, "Upgrade", "h2c")) {
			pc_upstream_failed(pc, EF_DENIED,
					   "an upgrade to HTTP/2 (h2c) is refused where HTTP rules "
					   "name the host: its requests could not be checked");
			return -1;
		}
		for (size_t i = 0; i < sizeof overrides / sizeof overrides[0]; i++)
			aj_http_head_del(h, overrides[i]);
	}
	strip_hop_by_hop(h, pc->upgrade);
	target = origin_form(path); /* before the old target goes: path points into it */
	set_host(pc, h);
	if (pc->upgrade)
		aj_http_head_set(h, "Connection", "Upgrade");
	else if (!pc->cli_keep)
		aj_http_head_set(h, "Connection", "close");
	free(h->start[1]);
	h->start[1] = target;
	/* Secrets go out only inside TLS the proxy verified, to the hosts they are bound to. */
	if (pc->intercepted) {
		used = aj_egress_creds_apply(pc->eg->creds, pc->eg->n_creds, pc->host, pc->port, h,
					     pc->used);
		if (used < 0) {
			pc_http_error(pc, 502, "a credential's header format is broken");
			return -1;
		}
		pc->used_any = used > 0;
	}
	free(pc->out_head);
	pc->out_head = aj_http_head_format(h, &pc->out_head_len);
	return 0;
}

/* ---- requests ----------------------------------------------------------------------------- */

static void connect_request(struct pconn *pc, struct aj_http_head *h)
{
	char why[200];
	bool intercept;

	pc->kind = PK_CONNECT;
	if (aj_http_split_authority(h->start[1], pc->host, sizeof pc->host, &pc->port, why,
				    sizeof why) < 0) {
		pc_http_error(pc, 400, why);
		return;
	}
	if (!pc_decide(pc))
		return;
	intercept = pc->eg->tls &&
		    aj_egress_creds_bound(pc->eg->creds, pc->eg->n_creds, pc->host, pc->port);
	if (!pc_by_request_ok(pc, &intercept))
		return;
	pc->next_step = PN_CONNECT_REPLY;
	up_open(pc, intercept);
}

void fwd_connect_reply(struct pconn *pc)
{
	evbuffer_add_printf(bufferevent_get_output(pc->cli),
			    "HTTP/1.1 200 Connection established\r\n\r\n");
	if (!pc->intercept_up) {
		pc_start_tunnel(pc);
		return;
	}
	if (pc_intercept(pc) < 0) {
		pc_event(pc, "failed", "cannot start TLS towards the sandbox", 0);
		pc_close(pc);
	}
}

static bool same_upstream(const struct pconn *pc)
{
	return pc->up && pc->up_reusable && pc->up_port == pc->port &&
	       strcmp(pc->up_host, pc->host) == 0;
}

static void plain_request(struct pconn *pc, struct aj_http_head *h)
{
	char why[200], host[AJ_EGRESS_HOST_MAX + 1];
	const char *path;
	uint16_t port;

	pc->kind = PK_HTTP;
	if (aj_http_split_url(h->start[1], host, sizeof host, &port, &path, why, sizeof why) < 0) {
		pc_http_error(pc, 400, why);
		return;
	}
	snprintf(pc->host, sizeof pc->host, "%s", host);
	pc->port = port;
	if (!pc_decide_request(pc, path) || prepare(pc, h, path) < 0)
		return;
	if (same_upstream(pc)) {
		fwd_send_request(pc);
		return;
	}
	pc->next_step = PN_REQUEST;
	up_open(pc, false);
}

/* Inside an intercepted session the host was decided at CONNECT: requests go there only. */
static void inner_request(struct pconn *pc, struct aj_http_head *h)
{
	const char *path = h->start[1];

	if (strcasecmp(pc->method, "CONNECT") == 0) {
		pc_http_error(pc, 400, "CONNECT inside a TLS session");
		return;
	}
	/* Clients send origin-form inside a tunnel; an absolute URL could name another host
	 * than the one decided. */
	if (path[0] != '/') {
		pc_http_error(pc, 400, "inside a TLS session through the proxy, requests name a "
				       "path (origin form)");
		return;
	}
	/* Every request is decided by the rules in force: they may have changed since the
	 * CONNECT (agentjail update). */
	if (!pc_decide_request(pc, path) || prepare(pc, h, path) < 0)
		return;
	if (pc->up && pc->up_reusable) {
		fwd_send_request(pc);
		return;
	}
	pc->next_step = PN_REQUEST;
	up_open(pc, true);
}

static int take_head(struct pconn *pc, struct aj_http_head *h)
{
	struct evbuffer *in = bufferevent_get_input(pc->cli);
	struct evbuffer_ptr at = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	char why[200];
	_cleanup_free_ char *raw = NULL;
	size_t len;

	if (at.pos < 0) {
		if (evbuffer_get_length(in) <= AJ_HTTP_HEAD_MAX)
			return 0;
		pc_http_error(pc, 431, "the request head is larger than 64 KiB");
		return -1;
	}
	len = (size_t)at.pos + 4;
	raw = aj_xmalloc(len);
	if (evbuffer_remove(in, raw, len) != (int)len) {
		pc_http_error(pc, 502, "the request head could not be read");
		return -1;
	}
	if (aj_http_head_parse(raw, len, true, h, why, sizeof why) < 0) {
		pc_http_error(pc, 400, why);
		return -1;
	}
	return 1;
}

void fwd_on_client(struct pconn *pc)
{
	struct aj_http_head h;

	if (pc->state == PS_EXCHANGE) {
		request_body(pc);
		return;
	}
	if (take_head(pc, &h) <= 0)
		return;
	snprintf(pc->method, sizeof pc->method, "%s", h.start[0]);
	if (pc->intercepted)
		inner_request(pc, &h);
	else if (strcasecmp(h.start[0], "CONNECT") == 0)
		connect_request(pc, &h);
	else
		plain_request(pc, &h);
	aj_http_head_free(&h);
}

static const int http_status[] = {
	[EF_DENIED] = 403, [EF_LIMIT] = 429, [EF_DNS] = 502, [EF_REFUSED] = 502,
	[EF_UNREACH] = 502, [EF_TIMEOUT] = 504, [EF_TLS] = 502, [EF_BAD] = 400,
};

static const unsigned char socks_code[] = {
	[EF_DENIED] = 0x02, [EF_LIMIT] = 0x02, [EF_DNS] = 0x04, [EF_REFUSED] = 0x05,
	[EF_UNREACH] = 0x03, [EF_TIMEOUT] = 0x04, [EF_TLS] = 0x01, [EF_BAD] = 0x01,
};

void pc_upstream_failed(struct pconn *pc, enum pc_fail fail, const char *why)
{
	bool socks = pc->kind == PK_SOCKS && !pc->intercepted;

	pc_event(pc, fail == EF_DENIED || fail == EF_LIMIT ? "denied" : "failed", why,
		 socks ? 0 : http_status[fail]);
	if (socks)
		socks_reply(pc, socks_code[fail]);
	else
		pc_http_error(pc, http_status[fail], why);
}

void pc_upstream_ready(struct pconn *pc)
{
	snprintf(pc->up_host, sizeof pc->up_host, "%s", pc->host);
	pc->up_port = pc->port;
	pc_set_upstream_callbacks(pc);
	bufferevent_enable(pc->up, EV_READ | EV_WRITE);
	switch (pc->next_step) {
	case PN_REQUEST: fwd_send_request(pc); return;
	case PN_CONNECT_REPLY: fwd_connect_reply(pc); return;
	case PN_SOCKS_REPLY: socks_reply(pc, 0); return;
	default: pc_close(pc); return;
	}
}
