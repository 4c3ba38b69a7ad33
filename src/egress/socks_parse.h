/* SOCKS5 (RFC 1928) messages as bytes: what the proxy reads from the sandbox, apart from the
 * connection that carries them, so that a fuzzer can reach every branch. */
#ifndef AJ_EGRESS_SOCKS_PARSE_H
#define AJ_EGRESS_SOCKS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules/egress.h"

enum {
	AJ_SOCKS_VERSION = 5,
	AJ_SOCKS_M_NOAUTH = 0,
	AJ_SOCKS_M_NONE = 0xff,
	AJ_SOCKS_R_OK = 0,
	AJ_SOCKS_R_FAIL = 1,
	AJ_SOCKS_R_CMD = 7,
	AJ_SOCKS_R_ATYP = 8,
};

/* The method negotiation in buf[0, have): its length once complete (0: more is needed);
 * *noauth tells whether "no authentication", the only method offered, is among the client's. */
size_t aj_socks_hello_parse(const unsigned char *buf, size_t have, bool *noauth);

struct aj_socks_target {
	char host[AJ_EGRESS_HOST_MAX + 1]; /* normalized name, or an address literal */
	uint16_t port;
	bool valid; /* false: a bad name or port 0, refused by policy like a bad HTTP target */
};

/* A CONNECT request in buf[0, have): its length once complete, with *t filled; 0 if more is
 * needed; or -code for a request to refuse at once with that reply code (another version,
 * another command, an unknown address type). */
long aj_socks_request_parse(const unsigned char *buf, size_t have, struct aj_socks_target *t);

#endif
