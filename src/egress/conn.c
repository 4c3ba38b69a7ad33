/* One connection from the sandbox through the proxy: its life cycle, its events, relaying
 * with back-pressure, and the dispatch of its bufferevents' callbacks by state. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "egress/internal.h"

#define FLUSH_POLL_MS 20
#define FLUSH_GIVE_UP_MS 10000

static void cli_read_cb(struct bufferevent *b, void *arg);
static void cli_write_cb(struct bufferevent *b, void *arg);
static void cli_event_cb(struct bufferevent *b, short what, void *arg);

void pc_hold(struct pconn *pc)
{
	pc->refs++;
}

static void pc_free(struct pconn *pc)
{
	free(pc->out_head);
	free(pc->used);
	free(pc);
}

void pc_release(struct pconn *pc)
{
	if (--pc->refs == 0 && pc->closed)
		pc_free(pc);
}

static void set_timeout(struct bufferevent *b, int seconds)
{
	struct timeval tv = {seconds, 0};

	if (b)
		bufferevent_set_timeouts(b, &tv, NULL);
}

struct pconn *pc_new(struct aj_egress *eg, evutil_socket_t fd)
{
	_cleanup_close_ int sock = fd; /* ours until the bufferevent takes it */
	struct bufferevent *cli = bufferevent_socket_new(eg->base, fd, BEV_OPT_CLOSE_ON_FREE);
	struct pconn *pc;

	if (!cli)
		return NULL;
	aj_steal_fd(&sock);
	pc = aj_xcalloc(1, sizeof *pc);
	pc->used = aj_xcalloc(eg->n_creds ? eg->n_creds : 1, sizeof *pc->used);
	pc->cli = cli;
	pc->eg = eg;
	pc->t0_us = aj_now_monotonic_us();
	aj_egress_nodelay(fd);
	pc_set_client_callbacks(pc);
	set_timeout(pc->cli, EG_HEAD_TIMEOUT_S);
	bufferevent_enable(pc->cli, EV_READ | EV_WRITE);
	pc->next = eg->conns;
	if (eg->conns)
		eg->conns->prev = pc;
	eg->conns = pc;
	eg->n_conns++;
	return pc;
}

static const char *proto_name(const struct pconn *pc)
{
	if (pc->intercepted)
		return "https";
	switch (pc->kind) {
	case PK_HTTP: return "http";
	case PK_CONNECT: return "connect";
	case PK_SOCKS: return "socks";
	case PK_NONE: break;
	}
	return "unknown";
}

static json_t *used_creds(struct pconn *pc)
{
	json_t *a = json_array();

	for (size_t i = 0; i < pc->eg->n_creds; i++)
		if (pc->used[i]) {
			json_array_append_new(a, json_string(pc->eg->creds[i].name));
			pc->used[i] = false;
		}
	return a;
}

void pc_event(struct pconn *pc, const char *outcome, const char *reason, int status)
{
	struct aj_egress *eg = pc->eg;
	uint64_t ms = (aj_now_monotonic_us() - pc->t0_us) / 1000;
	bool allowed = strcmp(outcome, "denied") != 0;
	json_t *f = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:I}", "proto",
			      proto_name(pc), "host", pc->host[0] ? pc->host : "?", "port", pc->port,
			      "rule", pc->rule, "decision", allowed ? "allowed" : "denied",
			      "bytes_up", (json_int_t)pc->bytes_up, "bytes_down",
			      (json_int_t)pc->bytes_down, "duration_ms", (json_int_t)ms);

	if (pc->addr[0])
		json_object_set_new(f, "address", json_string(pc->addr));
	if (pc->method[0] && (pc->kind == PK_HTTP || pc->intercepted))
		json_object_set_new(f, "method", json_string(pc->method));
	if (pc->path[0] && (pc->kind == PK_HTTP || pc->intercepted))
		json_object_set_new(f, "path", json_string(pc->path));
	if (status)
		json_object_set_new(f, "status", json_integer(status));
	if (reason)
		json_object_set_new(f, allowed ? "error" : "reason", json_string(reason));
	if (pc->used_any) {
		json_object_set_new(f, "credentials", used_creds(pc));
		eg->stats.credentials++;
	}
	if (!allowed)
		eg->stats.denied++;
	else if (strcmp(outcome, "failed") == 0)
		eg->stats.failed++;
	else
		eg->stats.allowed++;
	eg_emit(eg, "egress", f);
	pc->decided = false;
	pc->used_any = false;
	pc->bytes_up = pc->bytes_down = 0;
	pc->t0_us = aj_now_monotonic_us();
}

void pc_close(struct pconn *pc)
{
	struct aj_egress *eg = pc->eg;

	if (pc->closed)
		return;
	pc->closed = true;
	if (pc->decided && pc->state == PS_UPSTREAM)
		pc_event(pc, "failed", "the connection ended before the host was reached", 0);
	else if (pc->decided)
		pc_event(pc, "allowed", NULL, pc->status);
	if (pc->cli)
		bufferevent_free(pc->cli);
	up_close(pc);
	up_cancel(pc);
	sp_free(pc->sp);
	pc->sp = NULL;
	pc->cli = NULL;
	if (pc->prev)
		pc->prev->next = pc->next;
	else
		eg->conns = pc->next;
	if (pc->next)
		pc->next->prev = pc->prev;
	eg->n_conns--;
	if (pc->flush_ev) {
		event_free(pc->flush_ev);
		pc->flush_ev = NULL;
		pc->refs--; /* the flush timer's */
	}
	if (pc->refs == 0)
		pc_free(pc);
}

/* ---- closing once the last bytes are out ------------------------------------------------ */

static size_t pending_out(struct bufferevent *b)
{
	size_t n = 0;

	for (; b; b = bufferevent_get_underlying(b))
		n += evbuffer_get_length(bufferevent_get_output(b));
	return n;
}

static void flush_check(evutil_socket_t fd, short what, void *arg);

/* A TLS filter's write callback does not tell when the socket under it drained, so the
 * wait polls: closing is rare and short. The timer holds a reference, dropped by
 * pc_close(). */
static void close_after_flush(struct pconn *pc)
{
	struct timeval tv = {0, FLUSH_POLL_MS * 1000};

	if (pc->closed || pc->flush_ev)
		return;
	pc->state = PS_CLOSING;
	if (pc->cli)
		bufferevent_disable(pc->cli, EV_READ);
	if (pc->up)
		bufferevent_disable(pc->up, EV_READ);
	if (!pending_out(pc->cli) && !pending_out(pc->up)) {
		pc_close(pc);
		return;
	}
	pc->flush_ev = evtimer_new(pc->eg->base, flush_check, pc);
	if (!pc->flush_ev) {
		pc_close(pc);
		return;
	}
	pc->flush_deadline_us = aj_now_monotonic_us() + FLUSH_GIVE_UP_MS * 1000u;
	pc_hold(pc);
	evtimer_add(pc->flush_ev, &tv);
}

static void flush_check(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *pc = arg;
	struct timeval tv = {0, FLUSH_POLL_MS * 1000};

	(void)fd;
	(void)what;
	pc_hold(pc);
	if (!pc->closed && (pending_out(pc->cli) || pending_out(pc->up)) &&
	    aj_now_monotonic_us() < pc->flush_deadline_us)
		evtimer_add(pc->flush_ev, &tv);
	else
		pc_close(pc);
	pc_release(pc);
}

void pc_http_error(struct pconn *pc, int status, const char *why)
{
	const char *text = status == 403   ? "Forbidden"
			   : status == 400 ? "Bad Request"
			   : status == 429 ? "Too Many Requests"
			   : status == 431 ? "Request Header Fields Too Large"
			   : status == 504 ? "Gateway Timeout"
					   : "Bad Gateway";
	char body[700];
	int n = snprintf(body, sizeof body, "agentjail egress proxy: %s\n", why);

	if (n < 0 || (size_t)n >= sizeof body)
		n = (int)strlen(body);
	if (pc->cli)
		evbuffer_add_printf(bufferevent_get_output(pc->cli),
				    "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
				    "Content-Length: %d\r\nConnection: close\r\n"
				    "X-Agentjail-Egress: %s\r\n\r\n%s",
				    status, text, n, status == 403 || status == 429 ? "denied" : "error",
				    body);
	up_close(pc);
	close_after_flush(pc);
}

/* ---- relaying ---------------------------------------------------------------------------- */

static void close_all_for_bytes(struct aj_egress *eg)
{
	for (struct pconn *c = eg->conns, *next; c; c = next) {
		next = c->next;
		if (c->state == PS_TUNNEL || c->state == PS_EXCHANGE)
			close_after_flush(c);
	}
}

void pc_relay(struct pconn *pc, bool upward, size_t max)
{
	struct bufferevent *src = upward ? pc->cli : pc->up, *dst = upward ? pc->up : pc->cli;
	struct evbuffer *in, *out;
	size_t n;

	if (!src || !dst)
		return;
	in = bufferevent_get_input(src);
	out = bufferevent_get_output(dst);
	n = evbuffer_get_length(in);
	if (n > max)
		n = max;
	if (!n)
		return;
	evbuffer_remove_buffer(in, out, n);
	if (upward)
		pc->bytes_up += n;
	else
		pc->bytes_down += n;
	if (!eg_count(pc->eg, upward ? n : 0, upward ? 0 : n)) {
		close_all_for_bytes(pc->eg);
		return;
	}
	/* The receiving side is slower than the sending one: stop reading until it drains. */
	if (evbuffer_get_length(out) >= EG_HIGH_WATER) {
		bufferevent_disable(src, EV_READ);
		if (upward)
			pc->paused_cli = true;
		else
			pc->paused_up = true;
	}
}

void pc_start_tunnel(struct pconn *pc)
{
	if (sp_start(pc) == 0)
		return;
	pc->state = PS_TUNNEL;
	set_timeout(pc->cli, EG_IDLE_TIMEOUT_S);
	set_timeout(pc->up, EG_IDLE_TIMEOUT_S);
	bufferevent_enable(pc->cli, EV_READ | EV_WRITE);
	bufferevent_enable(pc->up, EV_READ | EV_WRITE);
	pc_relay(pc, true, SIZE_MAX);
	if (!pc->closed && pc->state == PS_TUNNEL)
		pc_relay(pc, false, SIZE_MAX);
}

int pc_intercept(struct pconn *pc)
{
	struct aj_err err;
	struct bufferevent *tls;
	_cleanup_ssl_ SSL *ssl = aj_egress_tls_server(pc->eg->tls, pc->host, &err);

	if (!ssl)
		return -1;
	tls = bufferevent_openssl_filter_new(pc->eg->base, pc->cli, ssl,
					     BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!tls)
		return -1;
	aj_steal_ptr(&ssl); /* the filter frees it */
	bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
	pc->cli = tls;
	pc->intercepted = true;
	pc->eg->stats.intercepted++;
	pc->state = PS_HEAD;
	pc_set_client_callbacks(pc);
	set_timeout(pc->cli, EG_IDLE_TIMEOUT_S);
	bufferevent_enable(pc->cli, EV_READ | EV_WRITE);
	return 0;
}

/* ---- callbacks ---------------------------------------------------------------------------- */

static void on_client_data(struct pconn *pc)
{
	unsigned char first;

	switch (pc->state) {
	case PS_SNIFF:
		if (evbuffer_copyout(bufferevent_get_input(pc->cli), &first, 1) != 1)
			return;
		/* SOCKS5 opens with its version byte; an HTTP request with a method name. */
		pc->state = first == 5 ? PS_SOCKS_HELLO : PS_HEAD;
		on_client_data(pc);
		return;
	case PS_SOCKS_HELLO:
	case PS_SOCKS_REQ:
		socks_on_client(pc);
		return;
	case PS_HEAD:
	case PS_EXCHANGE:
		fwd_on_client(pc);
		return;
	case PS_TUNNEL:
		pc_relay(pc, true, SIZE_MAX);
		return;
	case PS_UPSTREAM:
	case PS_CLOSING:
		bufferevent_disable(pc->cli, EV_READ);
		return;
	default:
		return;
	}
}

static void cli_read_cb(struct bufferevent *b, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	on_client_data(pc);
	pc_release(pc);
}

/* Output drained below the high-water mark: resume reading what feeds it. */
static void resume(struct pconn *pc, bool reader_is_up)
{
	struct bufferevent *src = reader_is_up ? pc->up : pc->cli;
	bool *paused = reader_is_up ? &pc->paused_up : &pc->paused_cli;

	if (!*paused || !src || pc->state == PS_CLOSING)
		return;
	*paused = false;
	bufferevent_enable(src, EV_READ);
	if (reader_is_up) {
		if (pc->state == PS_TUNNEL)
			pc_relay(pc, false, SIZE_MAX);
		else if (pc->state == PS_EXCHANGE)
			fwd_on_upstream(pc);
	} else {
		on_client_data(pc);
	}
}

static void cli_write_cb(struct bufferevent *b, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	resume(pc, true);
	pc_release(pc);
}

static void cli_event_cb(struct bufferevent *b, short what, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		/* The sandbox side ended: what it sent still goes out. */
		if (pc->state == PS_TUNNEL && (what & BEV_EVENT_EOF)) {
			pc_relay(pc, true, SIZE_MAX);
			close_after_flush(pc);
		} else {
			pc_close(pc);
		}
	}
	pc_release(pc);
}

static void up_read_cb(struct bufferevent *b, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	if (pc->state == PS_TUNNEL)
		pc_relay(pc, false, SIZE_MAX);
	else if (pc->state == PS_EXCHANGE)
		fwd_on_upstream(pc);
	pc_release(pc);
}

static void up_write_cb(struct bufferevent *b, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	resume(pc, false);
	pc_release(pc);
}

static void up_event_cb(struct bufferevent *b, short what, void *arg)
{
	struct pconn *pc = arg;

	(void)b;
	pc_hold(pc);
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		if (pc->state == PS_TUNNEL) {
			pc_relay(pc, false, SIZE_MAX);
			close_after_flush(pc);
		} else if (pc->state == PS_EXCHANGE) {
			fwd_on_upstream_eof(pc);
		} else {
			up_close(pc); /* an idle keep-alive connection the server ended */
		}
	}
	/* The hold above keeps pc allocated through pc_close(); the analyzer loses the count
	 * across the calls into upstream.c and splice.c that pc_close() makes. */
	pc_release(pc); /* NOLINT(clang-analyzer-unix.Malloc) */
}

/* libevent reads and writes at most 16 KiB per call by default: a bulk transfer would cost
 * a callback per 16 KiB. */
static void io_sizes(struct bufferevent *b)
{
	bufferevent_set_max_single_read(b, EG_IO_CHUNK);
	bufferevent_set_max_single_write(b, EG_IO_CHUNK);
}

void pc_set_client_callbacks(struct pconn *pc)
{
	bufferevent_setcb(pc->cli, cli_read_cb, cli_write_cb, cli_event_cb, pc);
	bufferevent_setwatermark(pc->cli, EV_WRITE, EG_HIGH_WATER / 2, 0);
	io_sizes(pc->cli);
}

void pc_set_upstream_callbacks(struct pconn *pc)
{
	bufferevent_setcb(pc->up, up_read_cb, up_write_cb, up_event_cb, pc);
	bufferevent_setwatermark(pc->up, EV_WRITE, EG_HIGH_WATER / 2, 0);
	io_sizes(pc->up);
	set_timeout(pc->up, EG_IDLE_TIMEOUT_S);
}

void pc_finish(struct pconn *pc)
{
	close_after_flush(pc);
}
