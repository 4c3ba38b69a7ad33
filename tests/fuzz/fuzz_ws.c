/* libFuzzer: the terminal's WebSocket protocol (src/server/ws.c), everything a client sends.
 * The input is split at the first NUL: a header value, given to each handshake check
 * (Upgrade and Connection tokens, Sec-WebSocket-Key, Sec-WebSocket-Protocol with its ticket,
 * Origin against a Host), then bytes of frames, fed to one reader as a stream arrives: in
 * pieces whose sizes the first byte chooses, with what a piece leaves kept for the next, and
 * every message it returns checked against the rules (whole UTF-8 text, bounded size). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void headers(const char *v)
{
	char accept[AJ_WS_ACCEPT_LEN + 1], ticket[65];

	(void)aj_ws_has_token(v, "websocket");
	(void)aj_ws_has_token(v, "upgrade");
	if (aj_ws_key_valid(v))
		aj_ws_accept_key(v, accept);
	if (aj_ws_protocols(v, "agentjail.terminal.v1", ticket, sizeof ticket) &&
	    strspn(ticket, "0123456789abcdef") != strlen(ticket))
		abort();
	(void)aj_ws_origin_matches(v, "127.0.0.1:8080");
}

static void stream(const uint8_t *data, size_t size)
{
	struct aj_ws_reader rd;
	unsigned char *buf = malloc(size + 1);
	size_t have = 0, fed = 0, step = size ? (size_t)data[0] % 7 + 1 : 1;

	aj_ws_reader_init(&rd, 4096);
	while (buf && fed < size) {
		size_t n = size - fed < step ? size - fed : step, used;
		struct aj_ws_msg m;
		int rc = 0;

		memcpy(buf + have, data + fed, n);
		have += n;
		fed += n;
		while (have && (rc = aj_ws_read(&rd, buf, have, &used, &m)) >= 0 && used) {
			if (rc == 1 && m.op == AJ_WS_TEXT && !aj_ws_utf8_valid(m.data, m.len))
				abort();
			if (rc == 1 && m.op <= AJ_WS_BINARY && m.len > rd.max)
				abort();
			memmove(buf, buf + used, have - used);
			have -= used;
		}
		if (rc < 0)
			break;
	}
	aj_ws_reader_free(&rd);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t hlen = nul ? (size_t)(nul - data) : size;
	char *h = malloc(hlen + 1);

	if (!h)
		return 0;
	memcpy(h, data, hlen);
	h[hlen] = '\0';
	headers(h);
	free(h);
	if (nul)
		stream(nul + 1, size - hlen - 1);
	return 0;
}
