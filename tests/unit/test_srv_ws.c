/* The WebSocket protocol of the terminal (src/server/ws.c): the handshake's checks and accept
 * key (RFC 6455's own example), frames as RFC 6455 section 5.7 gives them, fragments with a
 * control frame between them, and each rule a client can break answered with its close code. */
#include <stdlib.h>
#include <string.h>

#include "server/ws.h"
#include "unit.h"

/* A masked client frame of op with payload p[0..n) into out; its length. */
static size_t client_frame(unsigned char *out, int fin, int op, const void *p, size_t n)
{
	static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
	size_t h = 2;

	out[0] = (unsigned char)((fin ? 0x80 : 0) | op);
	if (n < 126) {
		out[1] = (unsigned char)(0x80 | n);
	} else if (n <= 0xFFFF) {
		out[1] = 0x80 | 126;
		out[2] = (unsigned char)(n >> 8);
		out[3] = (unsigned char)n;
		h = 4;
	} else {
		out[1] = 0x80 | 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
		h = 10;
	}
	memcpy(out + h, mask, 4);
	for (size_t i = 0; i < n; i++)
		out[h + 4 + i] = ((const unsigned char *)p)[i] ^ mask[i & 3];
	return h + 4 + n;
}

static void handshake(void)
{
	char accept[AJ_WS_ACCEPT_LEN + 1], ticket[65];

	aj_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", accept);
	CHECK_STR(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "the accept key of RFC 6455's example");
	CHECK(aj_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=="), "a key of 16 bytes is valid");
	CHECK(!aj_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ"), "a key without padding is not");
	CHECK(!aj_ws_key_valid("dGhlIHNhbXBsZSBub25j*Q=="), "a key with a non-base64 byte is not");
	CHECK(!aj_ws_key_valid(NULL), "no key is not valid");
	CHECK(aj_ws_has_token("keep-alive, Upgrade", "upgrade"), "Connection lists upgrade");
	CHECK(!aj_ws_has_token("keep-alive, upgraded", "upgrade"), "upgraded is not upgrade");
	CHECK(!aj_ws_has_token(NULL, "upgrade"), "no header has no token");
	CHECK(aj_ws_protocols("agentjail.terminal.v1, ticket.00ff", "agentjail.terminal.v1", ticket,
			      sizeof ticket) && !strcmp(ticket, "00ff"),
	      "the protocol offered with a ticket");
	CHECK(aj_ws_protocols("agentjail.terminal.v1", "agentjail.terminal.v1", ticket,
			      sizeof ticket) && !ticket[0],
	      "the protocol offered without a ticket");
	CHECK(!aj_ws_protocols("ticket.00ff", "agentjail.terminal.v1", ticket, sizeof ticket),
	      "a ticket without the protocol is refused");
	CHECK(!aj_ws_protocols("agentjail.terminal.v1,ticket.00,ticket.11", "agentjail.terminal.v1",
			       ticket, sizeof ticket) && !ticket[0],
	      "two tickets are refused");
	CHECK(!aj_ws_protocols("agentjail.terminal.v1,ticket.ZZ", "agentjail.terminal.v1", ticket,
			       sizeof ticket),
	      "a ticket that is not hex is refused");
	CHECK(aj_ws_origin_matches("http://127.0.0.1:8080", "127.0.0.1:8080"), "the same origin");
	CHECK(aj_ws_origin_matches("https://Console.example", "console.example"),
	      "the same origin over https, case-insensitive");
	CHECK(!aj_ws_origin_matches("http://evil.example", "127.0.0.1:8080"), "another host");
	CHECK(!aj_ws_origin_matches("http://127.0.0.1:8081", "127.0.0.1:8080"), "another port");
	CHECK(!aj_ws_origin_matches("null", "127.0.0.1:8080"), "an opaque origin");
	CHECK(!aj_ws_origin_matches("http://127.0.0.1:8080/x", "127.0.0.1:8080"), "a path");
	CHECK(!aj_ws_origin_matches("http://a@127.0.0.1:8080", "127.0.0.1:8080"), "user info");
}

static void frames(void)
{
	/* RFC 6455 5.7: a single-frame masked text message "Hello". */
	unsigned char hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
	unsigned char buf[300], big[70000];
	struct aj_ws_reader rd;
	struct aj_ws_msg m;
	size_t used, n, off;
	int rc;

	aj_ws_reader_init(&rd, 1 << 20);
	CHECK(aj_ws_read(&rd, hello, 5, &used, &m) == 0 && used == 0, "a partial frame waits");
	rc = aj_ws_read(&rd, hello, sizeof hello, &used, &m);
	CHECK(rc == 1 && m.op == AJ_WS_TEXT && m.len == 5 && !memcmp(m.data, "Hello", 5) &&
		      used == sizeof hello,
	      "RFC 6455's masked \"Hello\"");

	/* Fragments "Hel" + "lo" with a ping between them. */
	n = client_frame(buf, 0, AJ_WS_TEXT, "Hel", 3);
	n += client_frame(buf + n, 1, AJ_WS_PING, "p", 1);
	n += client_frame(buf + n, 1, AJ_WS_CONT, "lo", 2);
	off = 0;
	rc = aj_ws_read(&rd, buf, n, &used, &m);
	CHECK(rc == 0 && used > 0, "a first fragment is held");
	off += used;
	rc = aj_ws_read(&rd, buf + off, n - off, &used, &m);
	CHECK(rc == 1 && m.op == AJ_WS_PING && m.len == 1, "a ping between fragments");
	off += used;
	rc = aj_ws_read(&rd, buf + off, n - off, &used, &m);
	CHECK(rc == 1 && m.op == AJ_WS_TEXT && m.len == 5 && !memcmp(m.data, "Hello", 5),
	      "the fragments make the message");

	/* 16- and 64-bit lengths. */
	memset(big, 'x', 300);
	n = client_frame(buf, 1, AJ_WS_BINARY, big, 200);
	CHECK(aj_ws_read(&rd, buf, n, &used, &m) == 1 && m.len == 200 && used == n,
	      "a 16-bit length");
	{
		unsigned char *f = malloc(70016);
		memset(big, 'y', sizeof big);
		n = client_frame(f, 1, AJ_WS_BINARY, big, sizeof big);
		CHECK(aj_ws_read(&rd, f, n, &used, &m) == 1 && m.len == sizeof big &&
			      m.data[69999] == 'y',
		      "a 64-bit length");
		free(f);
	}
	n = client_frame(buf, 1, AJ_WS_CLOSE, "\x03\xe8" "bye", 5);
	CHECK(aj_ws_read(&rd, buf, n, &used, &m) == 1 && m.op == AJ_WS_CLOSE && m.code == 1000 &&
		      m.len == 3,
	      "a close frame with a code and a reason");
	n = client_frame(buf, 1, AJ_WS_CLOSE, "", 0);
	CHECK(aj_ws_read(&rd, buf, n, &used, &m) == 1 && m.code == AJ_WS_CLOSE_NO_CODE,
	      "a close frame without a code");
	aj_ws_reader_free(&rd);
}

/* One frame that must be refused with code. */
static void refused(const char *what, const unsigned char *f, size_t n, unsigned code,
		    size_t max)
{
	struct aj_ws_reader rd;
	struct aj_ws_msg m;
	unsigned char copy[300];
	size_t used, off = 0;
	int rc = 0;

	aj_ws_reader_init(&rd, max);
	memcpy(copy, f, n);
	while (off < n && (rc = aj_ws_read(&rd, copy + off, n - off, &used, &m)) >= 0 && used)
		off += used;
	CHECK(rc == -1 && rd.error == code, "%s: refused with %u", what, code);
	aj_ws_reader_free(&rd);
}

static void violations(void)
{
	unsigned char f[300], g[300];
	size_t n, k;
	unsigned char unmasked[] = {0x81, 0x02, 'h', 'i'};
	unsigned char rsv[] = {0xC1, 0x80, 0, 0, 0, 0};
	unsigned char opcode[] = {0x83, 0x80, 0, 0, 0, 0};
	unsigned char top_bit[] = {0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0};

	refused("an unmasked frame", unmasked, sizeof unmasked, AJ_WS_CLOSE_PROTOCOL, 1024);
	refused("a reserved bit", rsv, sizeof rsv, AJ_WS_CLOSE_PROTOCOL, 1024);
	refused("a reserved opcode", opcode, sizeof opcode, AJ_WS_CLOSE_PROTOCOL, 1024);
	refused("a length with its top bit", top_bit, sizeof top_bit, AJ_WS_CLOSE_PROTOCOL, 1024);
	n = client_frame(f, 0, AJ_WS_PING, "x", 1);
	refused("a fragmented ping", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	memset(g, 'p', 126);
	n = client_frame(f, 1, AJ_WS_PING, g, 126);
	refused("a ping of 126 bytes", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	n = client_frame(f, 1, AJ_WS_CONT, "x", 1);
	refused("a continuation without a start", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	n = client_frame(f, 0, AJ_WS_TEXT, "a", 1);
	n += client_frame(f + n, 1, AJ_WS_TEXT, "b", 1);
	refused("a message interrupting another", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	n = client_frame(f, 1, AJ_WS_TEXT, "\xc3\x28", 2);
	refused("text that is not UTF-8", f, n, AJ_WS_CLOSE_BAD_DATA, 1024);
	n = client_frame(f, 1, AJ_WS_TEXT, "\xed\xa0\x80", 3);
	refused("a UTF-16 surrogate in text", f, n, AJ_WS_CLOSE_BAD_DATA, 1024);
	n = client_frame(f, 0, AJ_WS_TEXT, "\xe2\x82", 2);
	n += client_frame(f + n, 1, AJ_WS_CONT, "", 0);
	refused("a sequence cut at the end of the message", f, n, AJ_WS_CLOSE_BAD_DATA, 1024);
	n = client_frame(f, 1, AJ_WS_CLOSE, "\x03\xed", 2);
	refused("close code 1005 sent", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	n = client_frame(f, 1, AJ_WS_CLOSE, "\x03", 1);
	refused("a close frame of one byte", f, n, AJ_WS_CLOSE_PROTOCOL, 1024);
	memset(g, 'b', 200);
	n = client_frame(f, 1, AJ_WS_BINARY, g, 200);
	refused("a message over the maximum", f, n, AJ_WS_CLOSE_TOO_BIG, 100);
	k = client_frame(f, 0, AJ_WS_BINARY, g, 80);
	k += client_frame(f + k, 1, AJ_WS_CONT, g, 80);
	refused("fragments adding up past the maximum", f, k, AJ_WS_CLOSE_TOO_BIG, 100);
	/* The length is judged from the header alone: nothing of a huge frame is awaited. */
	{
		unsigned char huge[] = {0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0};
		refused("a 4 GiB frame announced", huge, sizeof huge, AJ_WS_CLOSE_TOO_BIG, 1 << 20);
	}
}

static void server_headers(void)
{
	unsigned char h[10];

	CHECK(aj_ws_header(h, AJ_WS_BINARY, 5) == 2 && h[0] == 0x82 && h[1] == 5,
	      "a short server frame: no mask");
	CHECK(aj_ws_header(h, AJ_WS_TEXT, 300) == 4 && h[1] == 126 && h[2] == 1 && h[3] == 44,
	      "a 16-bit length");
	CHECK(aj_ws_header(h, AJ_WS_BINARY, 70000) == 10 && h[1] == 127 && h[7] == 1 &&
		      h[8] == 0x11 && h[9] == 0x70,
	      "a 64-bit length");
}

int main(void)
{
	handshake();
	frames();
	violations();
	server_headers();
	UNIT_EXIT();
}
