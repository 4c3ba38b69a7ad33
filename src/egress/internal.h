/* Shared by the files of the egress proxy; not for other modules.
 *
 * Ownership: the proxy (struct aj_egress) owns every connection in its list; a connection
 * (struct pconn) owns its two bufferevents, its parsed request, its resolver results and its
 * event fields. A connection is freed in exactly one place, pc_release(), once it is closed
 * (pc_close()) and no callback or resolver request still holds it (pc_hold()). Every libevent
 * callback holds the connection for its duration, so code may close it anywhere and only has
 * to return afterwards.
 */
#ifndef AJ_EGRESS_INTERNAL_H
#define AJ_EGRESS_INTERNAL_H

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/listener.h>
#include <stdbool.h>

#include "egress/creds.h"
#include "egress/egress.h"
#include "egress/http.h"
#include "egress/tls.h"
#include "rules/addr.h"
#include "rules/egress.h"

/* Cleanup attributes for the libevent objects held in local variables before a connection
 * or the proxy takes them over (common/cleanup.h's convention). Events are never local: each
 * is a field of the connection or the proxy that made it, freed by its teardown. */
static inline void eg_bufferevent_freep(struct bufferevent **b)
{
	if (*b)
		bufferevent_free(*b);
}

static inline void eg_evbuffer_freep(struct evbuffer **b)
{
	if (*b)
		evbuffer_free(*b);
}

#define _cleanup_bufferevent_ __attribute__((cleanup(eg_bufferevent_freep)))
#define _cleanup_evbuffer_ __attribute__((cleanup(eg_evbuffer_freep)))

/* Past this many bytes waiting to be written to one side, the other side is not read. */
#define EG_HIGH_WATER (1024u * 1024u)
#define EG_IO_CHUNK (256u * 1024u) /* bytes per read or write system call, at most */
#define EG_HEAD_TIMEOUT_S 60   /* to send a request head or a SOCKS request */
#define EG_CONNECT_TIMEOUT_S 15
#define EG_IDLE_TIMEOUT_S 900  /* nothing either way on an established connection */

struct aj_egress {
	struct aj_plan *plan;
	struct event_base *base;
	struct evdns_base *dns;
	struct evconnlistener *listener;
	struct event *resume; /* re-enables the listener after EMFILE */
	int spipe[2];         /* the pipe every spliced tunnel passes through (splice.c) */
	size_t spipe_size;
	int listen_fd; /* until the listener owns it */
	struct aj_egress_rules rules;
	struct aj_cidr *private_ok;
	size_t n_private_ok;
	struct aj_egress_cred *creds;
	size_t n_creds;
	struct aj_egress_tls *tls; /* NULL without credentials or https:// HTTP rules */
	struct aj_strv intercept;  /* the names the CA is constrained to */
	aj_egress_emit_fn emit;
	void *emit_arg;
	struct pconn *conns;
	size_t n_conns;   /* open connections from the sandbox */
	size_t n_pending; /* closed, waiting for a resolver callback */
	struct aj_egress_stats stats;
	bool bytes_exhausted;
	bool conn_limit_told;
	bool stopping;
};

enum pc_kind { PK_NONE = 0, PK_HTTP, PK_CONNECT, PK_SOCKS };

enum pc_state {
	PS_SNIFF = 0,   /* nothing read yet */
	PS_SOCKS_HELLO, /* SOCKS5 method negotiation */
	PS_SOCKS_REQ,   /* SOCKS5 request */
	PS_HEAD,        /* reading an HTTP request head (plain, or inside intercepted TLS) */
	PS_UPSTREAM,    /* resolving, connecting, TLS towards the target */
	PS_EXCHANGE,    /* one HTTP request and its response in flight */
	PS_TUNNEL,      /* bytes relayed both ways untouched */
	PS_CLOSING,     /* a last reply is flushed to the client */
};

/* What to do once the upstream connection is up. */
enum pc_next { PN_REQUEST = 0, PN_CONNECT_REPLY, PN_SOCKS_REPLY };

struct pconn {
	struct aj_egress *eg;
	struct pconn *prev, *next;
	int refs;
	bool closed;
	struct bufferevent *cli, *up;
	enum pc_kind kind;
	enum pc_state state;
	enum pc_next next_step;
	bool intercepted; /* the client's TLS ends here (credential host) */
	bool intercept_up; /* the upstream being opened gets TLS */
	bool over_limit;  /* accepted past network.max_connections */
	/* the current target and the decision about it */
	char host[AJ_EGRESS_HOST_MAX + 1];
	uint16_t port;
	char rule[320];
	char addr[INET6_ADDRSTRLEN];
	bool decided; /* an allowed decision whose event is still to be emitted */
	/* what `up` is connected to, for keep-alive reuse */
	char up_host[AJ_EGRESS_HOST_MAX + 1];
	uint16_t up_port;
	bool up_reusable;
	/* name resolution */
	struct evdns_getaddrinfo_request *dns;
	bool dns_pending;
	struct evutil_addrinfo *ai, *ai_next;
	/* the HTTP exchange in flight */
	char method[24];
	char path[256];   /* the request's path (no query), for the event */
	bool inspect;     /* HTTP rules name the host: its requests must be seen */
	bool inspect_tls; /* and one of them is https:// */
	char *out_head; /* the request head to send upstream */
	size_t out_head_len;
	struct aj_http_body reqb, respb;
	bool req_done, resp_head, resp_done;
	bool cli_keep, up_keep, upgrade;
	int status;
	bool *used; /* per credential: went out in this exchange */
	bool used_any;
	/* accounting of the current decision */
	uint64_t t0_us, bytes_up, bytes_down;
	unsigned exchanges;
	bool paused_cli, paused_up; /* not read: the other side's output is full */
	struct event *flush_ev; /* closing once the output is out (conn.c) */
	struct eg_splice *sp;   /* a blind tunnel relayed in the kernel (splice.c) */
	uint64_t flush_deadline_us;
};

/* proxy.c */
void eg_emit(struct aj_egress *eg, const char *event, json_t *fields);
/* Adds n payload bytes to the totals; false once network.max_bytes is exceeded. */
bool eg_count(struct aj_egress *eg, uint64_t up, uint64_t down);

/* conn.c */
struct pconn *pc_new(struct aj_egress *eg, evutil_socket_t fd);
void pc_hold(struct pconn *pc);
void pc_release(struct pconn *pc);
void pc_close(struct pconn *pc);
/* One event for the current decision: outcome "allowed" (with its traffic), "denied" or
 * "failed"; reason may be NULL. Resets the per-decision counters. */
void pc_event(struct pconn *pc, const char *outcome, const char *reason, int status);
/* Closes once what is queued for both sides is out. */
void pc_finish(struct pconn *pc);
/* Sends an HTTP error reply whose body says why, then closes. */
void pc_http_error(struct pconn *pc, int status, const char *why);
/* Moves what the source holds to the other side (as far as its framing allows) and applies
 * back-pressure. */
void pc_relay(struct pconn *pc, bool upward, size_t max);
void pc_start_tunnel(struct pconn *pc);
/* Callbacks of the client and upstream bufferevents (conn.c dispatches by state). */
void pc_set_client_callbacks(struct pconn *pc);
void pc_set_upstream_callbacks(struct pconn *pc);
/* Terminates the client's TLS with a leaf for pc->host. */
int pc_intercept(struct pconn *pc);

/* upstream.c: resolve pc->host, check every address, connect to a checked one (TLS on
 * top when tls), then continue with pc->next_step; failures end in pc_upstream_failed(). */
void up_open(struct pconn *pc, bool tls);
void aj_egress_nodelay(int fd);
void up_close(struct pconn *pc);
void up_cancel(struct pconn *pc);

/* fwd.c: HTTP */
void fwd_on_client(struct pconn *pc);
void fwd_on_upstream(struct pconn *pc);
void fwd_on_upstream_eof(struct pconn *pc);
void fwd_send_request(struct pconn *pc);
void fwd_connect_reply(struct pconn *pc);
/* Why a target was not reached; decides the HTTP status and the SOCKS reply code. */
enum pc_fail {
	EF_DENIED = 0, /* a rule or the address guard: 403, SOCKS 0x02 */
	EF_LIMIT,      /* a connection or byte limit: 429, SOCKS 0x02 */
	EF_DNS,        /* the name did not resolve: 502, SOCKS 0x04 */
	EF_REFUSED,    /* 502, SOCKS 0x05 */
	EF_UNREACH,    /* no route: 502, SOCKS 0x03 */
	EF_TIMEOUT,    /* 504, SOCKS 0x04 */
	EF_TLS,        /* 502, SOCKS 0x01 */
	EF_BAD,        /* the client's request is malformed: 400, SOCKS 0x01 */
};
/* The target could not be reached or was refused: one event, and a reply to the client in
 * its protocol saying why; then the connection closes. */
void pc_upstream_failed(struct pconn *pc, enum pc_fail fail, const char *why);
void pc_upstream_ready(struct pconn *pc);

/* splice.c: switches a tunnel between two plain sockets to splice(2); -1 if it cannot (TLS
 * filters), the bufferevents then keep relaying. */
struct eg_splice;
int sp_start(struct pconn *pc);
void sp_free(struct eg_splice *sp);
/* The shared pipe; without it (-1) tunnels stay with bufferevents. */
int aj_egress_spipe_open(struct aj_egress *eg);
void aj_egress_spipe_close(struct aj_egress *eg);

/* socks.c */
void socks_on_client(struct pconn *pc);
void socks_reply(struct pconn *pc, unsigned char code);

/* Decides pc->host:pc->port by the rules; on denial answers the client and returns false. */
bool pc_decide(struct pconn *pc);
/* pc_decide, then the request (method, path) by the HTTP rules: plain HTTP, or inside TLS the
 * proxy terminated. */
bool pc_decide_request(struct pconn *pc, const char *path);
/* Whether TLS to host can be terminated here (the CA's names cover it). */
bool eg_can_intercept(const struct aj_egress *eg, const char *host);
/* A connection only HTTP rules allow, to be intercepted if it can be: true if it may go on
 * (intercept set), false after the denial was answered. */
bool pc_by_request_ok(struct pconn *pc, bool *intercept);

#endif
