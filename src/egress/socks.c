/* SOCKS5 (RFC 1928), CONNECT only, without authentication: for tools that speak SOCKS
 * rather than HTTP (ALL_PROXY=socks5h://...). Names are resolved by the proxy (ATYP 3), so
 * the same rules and address guard apply as for HTTP; IPv4 and IPv6 literals are decided as
 * hosts named by those literals. */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <string.h>

#include "egress/internal.h"

enum {
	SOCKS_VERSION = 5,
	M_NOAUTH = 0,
	M_NONE = 0xff,
	CMD_CONNECT = 1,
	A_IPV4 = 1,
	A_NAME = 3,
	A_IPV6 = 4,
	R_OK = 0,
	R_FAIL = 1,
	R_CMD = 7,
	R_ATYP = 8,
};

void socks_reply(struct pconn *pc, unsigned char code)
{
	/* The bound address is of no use to a client behind a proxy: 0.0.0.0:0. */
	unsigned char r[10] = {SOCKS_VERSION, code, 0, A_IPV4, 0, 0, 0, 0, 0, 0};

	bufferevent_write(pc->cli, r, sizeof r);
	if (code != R_OK) {
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
	unsigned char h[2 + 255], reply[2] = {SOCKS_VERSION, M_NONE};
	size_t len = evbuffer_get_length(in);

	if (len < 2 || evbuffer_copyout(in, h, 2) != 2 || len < 2u + h[1])
		return;
	evbuffer_copyout(in, h, 2u + h[1]);
	evbuffer_drain(in, 2u + h[1]);
	for (unsigned i = 0; i < h[1]; i++)
		if (h[2 + i] == M_NOAUTH)
			reply[1] = M_NOAUTH;
	bufferevent_write(pc->cli, reply, sizeof reply);
	if (reply[1] == M_NONE) {
		pc_finish(pc); /* only "no authentication" is offered */
		return;
	}
	pc->state = PS_SOCKS_REQ;
	if (evbuffer_get_length(in))
		socks_on_client(pc);
}

/* Length of the whole request once its header is in, 0 if more is needed, -1 if the
 * address type is unknown. */
static ssize_t request_len(const unsigned char *h, size_t have)
{
	if (have < 5)
		return 0;
	switch (h[3]) {
	case A_IPV4: return 4 + 4 + 2;
	case A_IPV6: return 4 + 16 + 2;
	case A_NAME: return 4 + 1 + h[4] + 2;
	default: return -1;
	}
}

static bool read_target(struct pconn *pc, const unsigned char *r)
{
	char name[256];
	const unsigned char *port;

	switch (r[3]) {
	case A_IPV4:
		inet_ntop(AF_INET, r + 4, pc->host, sizeof pc->host);
		port = r + 8;
		break;
	case A_IPV6:
		inet_ntop(AF_INET6, r + 4, pc->host, sizeof pc->host);
		port = r + 20;
		break;
	default:
		memcpy(name, r + 5, r[4]);
		name[r[4]] = '\0';
		port = r + 5 + r[4];
		if (strlen(name) != r[4] ||
		    !aj_egress_host_normalize(name, pc->host, sizeof pc->host))
			return false;
	}
	pc->port = (uint16_t)(port[0] << 8 | port[1]);
	return pc->port != 0;
}

static void request(struct pconn *pc, struct evbuffer *in)
{
	unsigned char r[4 + 1 + 255 + 2];
	size_t have = evbuffer_get_length(in);
	ssize_t need;

	evbuffer_copyout(in, r, have < sizeof r ? have : sizeof r);
	need = request_len(r, have);
	if (need < 0 || (have >= 4 && (r[0] != SOCKS_VERSION || r[1] != CMD_CONNECT))) {
		pc->intercept_up = false;
		socks_reply(pc, need < 0 ? R_ATYP : r[0] != SOCKS_VERSION ? R_FAIL : R_CMD);
		return;
	}
	if (need == 0 || have < (size_t)need)
		return;
	evbuffer_drain(in, (size_t)need);
	pc->kind = PK_SOCKS;
	if (!read_target(pc, r)) {
		snprintf(pc->rule, sizeof pc->rule, "socks request");
		pc_upstream_failed(pc, EF_BAD, "invalid host name or port in the SOCKS request");
		return;
	}
	if (!pc_decide(pc))
		return;
	pc->next_step = PN_SOCKS_REPLY;
	up_open(pc, pc->eg->tls && aj_egress_creds_bound(pc->eg->creds, pc->eg->n_creds,
							 pc->host, pc->port));
}

void socks_on_client(struct pconn *pc)
{
	struct evbuffer *in = bufferevent_get_input(pc->cli);

	if (pc->state == PS_SOCKS_HELLO)
		hello(pc, in);
	else if (pc->state == PS_SOCKS_REQ)
		request(pc, in);
}
