/* WebSocket (RFC 6455), the server's side, without I/O: the checks of an upgrade request's
 * headers and the accept key, frames read from a client (masked, possibly fragmented, control
 * frames between fragments) and the headers of frames written to it. The terminal
 * (api_terminal.c) feeds it the bytes a client sent. Unit-tested (tests/unit/test_srv_ws.c)
 * and fuzzed (tests/fuzz/fuzz_ws.c): everything here reads outside input.
 *
 * Ownership: a struct aj_ws_reader owns the buffer in which a fragmented message is put
 * together (aj_ws_reader_free); a message aj_ws_read() returns points into the caller's bytes
 * or into that buffer, and is valid until the next call.
 */
#ifndef AJ_SERVER_WS_H
#define AJ_SERVER_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AJ_WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */

enum aj_ws_op {
	AJ_WS_CONT = 0,
	AJ_WS_TEXT = 1,
	AJ_WS_BINARY = 2,
	AJ_WS_CLOSE = 8,
	AJ_WS_PING = 9,
	AJ_WS_PONG = 10,
};

/* Close codes (RFC 6455, 7.4.1). */
enum {
	AJ_WS_CLOSE_NORMAL = 1000,
	AJ_WS_CLOSE_GOING_AWAY = 1001,
	AJ_WS_CLOSE_PROTOCOL = 1002,
	AJ_WS_CLOSE_NO_CODE = 1005, /* received without a code; never sent */
	AJ_WS_CLOSE_BAD_DATA = 1007,
	AJ_WS_CLOSE_POLICY = 1008,
	AJ_WS_CLOSE_TOO_BIG = 1009,
	AJ_WS_CLOSE_INTERNAL = 1011,
};

/* ---- the handshake ------------------------------------------------------------------------ */

/* Whether a comma-separated header value (Connection, Upgrade) holds token, ignoring case and
 * the whitespace around the elements. */
bool aj_ws_has_token(const char *list, const char *token);
/* Sec-WebSocket-Key: base64 of 16 bytes. */
bool aj_ws_key_valid(const char *key);
/* Sec-WebSocket-Accept for a valid key: base64(SHA-1(key + the RFC's GUID)), NUL-terminated. */
void aj_ws_accept_key(const char *key, char out[AJ_WS_ACCEPT_LEN + 1]);
/* Sec-WebSocket-Protocol (comma-separated): whether `proto` is offered. An element
 * "ticket.HEX" (1 to ticket_len - 1 lower-case hex digits) is copied into ticket without
 * its prefix (ticket[0] stays '\0' without one); a second ticket, or one that is not hex,
 * makes the whole offer false. */
bool aj_ws_protocols(const char *list, const char *proto, char *ticket, size_t ticket_len);
/* Whether an Origin header ("http://HOST[:PORT]" or https) names the host of the Host header,
 * as a browser sends it for a page of this origin. "null" and anything with a path never do. */
bool aj_ws_origin_matches(const char *origin, const char *host);

/* ---- frames ------------------------------------------------------------------------------ */

struct aj_ws_msg {
	enum aj_ws_op op;    /* TEXT, BINARY (a whole message), CLOSE, PING or PONG */
	unsigned char *data; /* unmasked; CLOSE: the reason, after the code */
	size_t len;
	unsigned code;       /* CLOSE: the client's code, AJ_WS_CLOSE_NO_CODE without one */
};

struct aj_ws_reader {
	size_t max;             /* the largest message, fragments together */
	enum aj_ws_op frag;     /* the message being put together (TEXT, BINARY), or CONT: none */
	unsigned char *buf;     /* its fragments so far */
	size_t len, cap;
	unsigned error;         /* after -1: the close code to answer with */
	const char *why;        /* after -1: why, for the close frame's reason */
};

void aj_ws_reader_init(struct aj_ws_reader *rd, size_t max_message);
void aj_ws_reader_free(struct aj_ws_reader *rd);
/* Reads at most one frame from in[0..n), unmasking its payload in place; *used is what it
 * took. 1: *m is a message (or a control frame); 0: more bytes are needed, or the frame was a
 * fragment now held by rd (then *used > 0: call again with the rest); -1: the client broke
 * the protocol (rd->error, rd->why) and the connection must end. */
int aj_ws_read(struct aj_ws_reader *rd, unsigned char *in, size_t n, size_t *used,
	       struct aj_ws_msg *m);
/* Whether s[0..n) is UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates). */
bool aj_ws_utf8_valid(const unsigned char *s, size_t n);
/* The header of one unmasked, final frame of len bytes from the server: its length (2, 4 or
 * 10 bytes of out). */
size_t aj_ws_header(unsigned char out[10], enum aj_ws_op op, uint64_t len);

#endif
