/* WebSocket framing and handshake checks (ws.h). Every rule of RFC 6455 a server must hold a
 * client to is enforced here, so that the terminal sees only whole, well-formed messages:
 * client frames are masked, reserved bits are clear (no extension is ever agreed), control
 * frames are final and at most 125 bytes, continuations follow a start and a new message does
 * not interrupt one, text is UTF-8, close codes are ones a peer may send, and no message is
 * larger than the reader's maximum (checked before anything is buffered). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/alloc.h"
#include "common/base64.h"
#include "server/ws.h"

#define GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define TICKET_PREFIX "ticket."

/* ---- the handshake ------------------------------------------------------------------------- */

/* Calls fn on each trimmed element of a comma-separated list until it returns false. */
static bool each_element(const char *list, bool (*fn)(const char *el, size_t n, void *arg),
			 void *arg)
{
	const char *p = list;

	while (p && *p) {
		size_t n = strcspn(p, ",");
		const char *e = p, *end = p + n;
		while (e < end && (*e == ' ' || *e == '\t'))
			e++;
		while (end > e && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end > e && !fn(e, (size_t)(end - e), arg))
			return false;
		p += n + (p[n] == ',');
	}
	return true;
}

struct token_find {
	const char *token;
	bool found;
};

static bool token_is(const char *el, size_t n, void *arg)
{
	struct token_find *f = arg;

	if (n == strlen(f->token) && !strncasecmp(el, f->token, n))
		f->found = true;
	return !f->found;
}

bool aj_ws_has_token(const char *list, const char *token)
{
	struct token_find f = {token, false};

	each_element(list, token_is, &f);
	return f.found;
}

bool aj_ws_key_valid(const char *key)
{
	unsigned char raw[20];

	if (!key || strlen(key) != 24 || strcmp(key + 22, "=="))
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", key[i]))
			return false;
	return aj_base64_decode(key, 24, raw) == 16;
}

void aj_ws_accept_key(const char *key, char out[AJ_WS_ACCEPT_LEN + 1])
{
	char in[24 + sizeof GUID];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;

	snprintf(in, sizeof in, "%.24s%s", key, GUID);
	if (EVP_Digest(in, strlen(in), md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20) {
		out[0] = '\0';
		return;
	}
	aj_base64_encode(md, 20, out);
}

struct proto_find {
	const char *proto;
	char *ticket;
	size_t ticket_len;
	bool found, bad;
};

static bool proto_element(const char *el, size_t n, void *arg)
{
	struct proto_find *f = arg;
	size_t plen = sizeof TICKET_PREFIX - 1;

	if (n == strlen(f->proto) && !strncmp(el, f->proto, n)) {
		f->found = true;
		return true;
	}
	if (n <= plen || strncmp(el, TICKET_PREFIX, plen))
		return true; /* another protocol: not ours to judge */
	if (f->ticket[0] || n - plen >= f->ticket_len || strspn(el + plen, "0123456789abcdef") < n - plen) {
		f->bad = true;
		return false;
	}
	memcpy(f->ticket, el + plen, n - plen);
	f->ticket[n - plen] = '\0';
	return true;
}

bool aj_ws_protocols(const char *list, const char *proto, char *ticket, size_t ticket_len)
{
	struct proto_find f = {proto, ticket, ticket_len, false, false};

	if (!ticket_len)
		return false;
	ticket[0] = '\0';
	each_element(list, proto_element, &f);
	if (f.bad)
		ticket[0] = '\0';
	return f.found && !f.bad;
}

bool aj_ws_origin_matches(const char *origin, const char *host)
{
	const char *rest;

	if (!origin || !host || !host[0])
		return false;
	if (!strncasecmp(origin, "http://", 7))
		rest = origin + 7;
	else if (!strncasecmp(origin, "https://", 8))
		rest = origin + 8;
	else
		return false;
	return rest[0] && !strpbrk(rest, "/?#@ ") && !strcasecmp(rest, host);
}

/* ---- frames --------------------------------------------------------------------------------- */

bool aj_ws_utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i], need, cp;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			need = 1, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			need = 2, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			need = 3, cp = c & 0x07;
		else
			return false;
		if (n - i <= need)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += need + 1;
	}
	return true;
}

void aj_ws_reader_init(struct aj_ws_reader *rd, size_t max_message)
{
	memset(rd, 0, sizeof *rd);
	rd->max = max_message;
	rd->frag = AJ_WS_CONT;
}

void aj_ws_reader_free(struct aj_ws_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->len = rd->cap = 0;
}

static int fail(struct aj_ws_reader *rd, unsigned code, const char *why)
{
	rd->error = code;
	rd->why = why;
	return -1;
}

/* Close codes a peer may send (7.4.1, 7.4.2): not 1004-1006, 1015, nor unassigned ones. */
static bool close_code_ok(unsigned c)
{
	return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}

static int control_frame(struct aj_ws_reader *rd, enum aj_ws_op op, unsigned char *p,
			 size_t len, struct aj_ws_msg *m)
{
	m->op = op;
	m->data = p;
	m->len = len;
	m->code = 0;
	if (op != AJ_WS_CLOSE)
		return 1;
	if (len == 1)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a close frame of one byte");
	m->code = len ? (unsigned)p[0] << 8 | p[1] : AJ_WS_CLOSE_NO_CODE;
	if (len && !close_code_ok(m->code))
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a close code a peer may not send");
	m->data = len ? p + 2 : p;
	m->len = len ? len - 2 : 0;
	if (!aj_ws_utf8_valid(m->data, m->len))
		return fail(rd, AJ_WS_CLOSE_BAD_DATA, "a close reason that is not UTF-8");
	return 1;
}

/* A data frame's payload: a whole message, or a fragment kept until the final one. */
static int data_frame(struct aj_ws_reader *rd, enum aj_ws_op op, bool fin, unsigned char *p,
		      size_t len, struct aj_ws_msg *m)
{
	if (op == AJ_WS_CONT && rd->frag == AJ_WS_CONT)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a continuation frame without a message");
	if (op != AJ_WS_CONT && rd->frag != AJ_WS_CONT)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a new message before the last one ended");
	if (op != AJ_WS_CONT && fin) {
		if (op == AJ_WS_TEXT && !aj_ws_utf8_valid(p, len))
			return fail(rd, AJ_WS_CLOSE_BAD_DATA, "a text message that is not UTF-8");
		*m = (struct aj_ws_msg){.op = op, .data = p, .len = len};
		return 1;
	}
	if (op != AJ_WS_CONT) {
		rd->frag = op;
		rd->len = 0;
	}
	if (rd->len + len > rd->cap) {
		rd->cap = rd->len + len > 2 * rd->cap ? rd->len + len : 2 * rd->cap;
		rd->buf = aj_xrealloc(rd->buf, rd->cap ? rd->cap : 1);
	}
	if (len)
		memcpy(rd->buf + rd->len, p, len);
	rd->len += len;
	if (!fin)
		return 0;
	op = rd->frag;
	rd->frag = AJ_WS_CONT;
	if (op == AJ_WS_TEXT && !aj_ws_utf8_valid(rd->buf, rd->len))
		return fail(rd, AJ_WS_CLOSE_BAD_DATA, "a text message that is not UTF-8");
	*m = (struct aj_ws_msg){.op = op, .data = rd->buf, .len = rd->len};
	return 1;
}

int aj_ws_read(struct aj_ws_reader *rd, unsigned char *in, size_t n, size_t *used,
	       struct aj_ws_msg *m)
{
	size_t hdr = 2;
	uint64_t len;
	enum aj_ws_op op;
	bool fin;
	unsigned char *mask, *p;

	*used = 0;
	if (n < 2)
		return 0;
	fin = in[0] & 0x80;
	op = (enum aj_ws_op)(in[0] & 0x0F);
	if (in[0] & 0x70)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "reserved bits set (no extension was agreed)");
	if (!(in[1] & 0x80))
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "an unmasked frame from the client");
	if (op > AJ_WS_BINARY && op < AJ_WS_CLOSE)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "an unknown opcode");
	if (op > AJ_WS_PONG)
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "an unknown opcode");
	len = in[1] & 0x7F;
	if (len == 126) {
		if (n < 4)
			return 0;
		len = (uint64_t)in[2] << 8 | in[3];
		hdr = 4;
	} else if (len == 127) {
		if (n < 10)
			return 0;
		len = 0;
		for (int i = 2; i < 10; i++)
			len = len << 8 | in[i];
		if (len >> 63)
			return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a payload length with its top bit set");
		hdr = 10;
	}
	if (op >= AJ_WS_CLOSE && (!fin || len > 125))
		return fail(rd, AJ_WS_CLOSE_PROTOCOL, "a fragmented or long control frame");
	if (op < AJ_WS_CLOSE && len > rd->max - (op == AJ_WS_CONT ? rd->len : 0))
		return fail(rd, AJ_WS_CLOSE_TOO_BIG, "a message larger than this server takes");
	if (n - hdr < 4 || n - hdr - 4 < len)
		return 0;
	mask = in + hdr;
	p = mask + 4;
	for (uint64_t i = 0; i < len; i++)
		p[i] ^= mask[i & 3];
	*used = hdr + 4 + (size_t)len;
	if (op >= AJ_WS_CLOSE)
		return control_frame(rd, op, p, (size_t)len, m);
	return data_frame(rd, op, fin, p, (size_t)len, m);
}

size_t aj_ws_header(unsigned char out[10], enum aj_ws_op op, uint64_t len)
{
	out[0] = (unsigned char)(0x80 | op);
	if (len < 126) {
		out[1] = (unsigned char)len;
		return 2;
	}
	if (len <= 0xFFFF) {
		out[1] = 126;
		out[2] = (unsigned char)(len >> 8);
		out[3] = (unsigned char)len;
		return 4;
	}
	out[1] = 127;
	for (int i = 0; i < 8; i++)
		out[2 + i] = (unsigned char)(len >> (56 - 8 * i));
	return 10;
}
