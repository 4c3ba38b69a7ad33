/* libFuzzer: what the egress proxy parses from the sandbox and from the hosts it reaches:
 * request and response heads, their framing, chunked bodies fed in arbitrary splits, and the
 * URL / CONNECT target splitters. The first byte picks the split size. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/http.h"
#include "rules/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void heads(const char *text, size_t len)
{
	struct aj_http_head h;
	struct aj_http_body b;
	char why[200], *out;
	size_t n;

	for (int request = 0; request < 2; request++) {
		if (aj_http_head_parse(text, len, request, &h, why, sizeof why) < 0)
			continue;
		if (request)
			(void)aj_http_request_body(&h, &b, why, sizeof why);
		else
			(void)aj_http_response_body(&h, "GET", atoi(h.start[1]), &b, why, sizeof why);
		(void)aj_http_keep_alive(&h, request);
		(void)aj_http_head_has_token(&h, "Connection", "close");
		out = aj_http_head_format(&h, &n);
		free(out);
		aj_http_head_free(&h);
	}
}

static void chunked(const uint8_t *data, size_t size, size_t step)
{
	struct aj_http_body b = {.kind = AJ_BODY_CHUNKED};

	for (size_t off = 0; off < size && !b.done;) {
		size_t n = size - off < step ? size - off : step;
		ssize_t t = aj_http_body_scan(&b, data + off, n);
		if (t < 0)
			return;
		if ((size_t)t > n)
			abort(); /* never claims more than it was given */
		off += (size_t)t;
		if ((size_t)t < n && !b.done)
			abort(); /* stops early only at the end of the body */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[AJ_EGRESS_HOST_MAX + 1], why[200], *s;
	const char *path;
	uint16_t port;

	if (size < 1 || size > 70000)
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	heads(s, size - 1);
	chunked(data + 1, size - 1, (size_t)data[0] + 1);
	(void)aj_http_split_url(s, host, sizeof host, &port, &path, why, sizeof why);
	(void)aj_http_split_authority(s, host, sizeof host, &port, why, sizeof why);
	free(s);
	return 0;
}
