/* SOCKS5 (RFC 1928), CONNECT only, without authentication: for tools that speak SOCKS
 * rather than HTTP (ALL_PROXY=socks5h://...). Names are resolved by the proxy (ATYP 3), so
 * the same rules and address guard apply as for HTTP; IPv4 and IPv6 literals are decided as
 * hosts named by those literals. */
#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>

#include "egress/internal.h"
#include "egress/socks_parse.h"

void socks_reply(struct pconn *pc, unsigned char code)
{
	/* The bound address is of no use to a client behind a proxy: 0.0.0.0:0. */
	unsigned char r[10] = {AJ_SOCKS_VERSION, code, 0, 1 /* IPv4 */, 0, 0, 0, 0, 0, 0};

	bufferevent_write(pc->cli, r, sizeof r);
	if (code != AJ_SOCKS_R_OK) {
		pc_finish(pc);
		return;
	}
	if (!pc->intercept_up) {
		pc_start_tunnel(pc);
		return;
	}
	if (pc_intercept(pc) < 0) {
		pc_event(pc, "failed", "cannot start TLS towards the sandbox", 0);
		pc_close(pc);
	}
}

static void hello(struct pconn *pc, struct evbuffer *in)
{
	unsigned char h[2 + 255], reply[2] = {AJ_SOCKS_VERSION, AJ_SOCKS_M_NONE};
	size_t have = evbuffer_get_length(in), len;
	bool noauth;

	evbuffer_copyout(in, h, have < sizeof h ? have : sizeof h);
	len = aj_socks_hello_parse(h, have < sizeof h ? have : sizeof h, &noauth);
	if (!len)
		return;
	evbuffer_drain(in, len);
	if (noauth)
		reply[1] = AJ_SOCKS_M_NOAUTH;
	bufferevent_write(pc->cli, reply, sizeof reply);
	if (!noauth) {
		pc_finish(pc); /* only "no authentication" is offered */
		return;
	}
	pc->state = PS_SOCKS_REQ;
	if (evbuffer_get_length(in))
		socks_on_client(pc);
}

static void request(struct pconn *pc, struct evbuffer *in)
{
	unsigned char r[4 + 1 + 255 + 2];
	size_t have = evbuffer_get_length(in);
	struct aj_socks_target t;
	long n;

	have = have < sizeof r ? have : sizeof r;
	evbuffer_copyout(in, r, have);
	n = aj_socks_request_parse(r, have, &t);
	if (n < 0) {
		pc->intercept_up = false;
		socks_reply(pc, (unsigned char)-n);
		return;
	}
	if (n == 0)
		return;
	evbuffer_drain(in, (size_t)n);
	pc->kind = PK_SOCKS;
	if (!t.valid) {
		snprintf(pc->rule, sizeof pc->rule, "socks request");
		pc_upstream_failed(pc, EF_BAD, "invalid host name or port in the SOCKS request");
		return;
	}
	snprintf(pc->host, sizeof pc->host, "%s", t.host);
	pc->port = t.port;
	bool intercept;

	if (!pc_decide(pc))
		return;
	intercept = pc->eg->tls &&
		    aj_egress_creds_bound(pc->eg->creds, pc->eg->n_creds, pc->host, pc->port);
	if (!pc_by_request_ok(pc, &intercept))
		return;
	pc->next_step = PN_SOCKS_REPLY;
	up_open(pc, intercept);
}

void socks_on_client(struct pconn *pc)
{
	struct evbuffer *in = bufferevent_get_input(pc->cli);

	if (pc->state == PS_SOCKS_HELLO)
		hello(pc, in);
	else if (pc->state == PS_SOCKS_REQ)
		request(pc, in);
}
