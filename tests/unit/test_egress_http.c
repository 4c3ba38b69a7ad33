/* HTTP heads and body framing of the egress proxy (src/egress/http.c): what is parsed, what is
 * refused because it could be framed two ways (request smuggling), chunked scanning fed in
 * any split, and URL/authority splitting. */
#include <stdlib.h>
#include <string.h>

#include "egress/http.h"
#include "unit.h"

static int parse(const char *text, bool request, struct aj_http_head *h, char *why)
{
	return aj_http_head_parse(text, strlen(text), request, h, why, 200);
}

static void heads(void)
{
	struct aj_http_head h;
	char why[200];
	size_t len;
	char *out;

	CHECK(parse("GET http://a.example/x?y HTTP/1.1\r\nHost: a.example\r\nX-A:  v  \r\n\r\n",
		    true, &h, why) == 0,
	      "a request head parses");
	CHECK_STR(h.start[0], "GET", "method");
	CHECK_STR(h.start[1], "http://a.example/x?y", "target");
	CHECK_STR(aj_http_head_get(&h, "x-a"), "v", "values are trimmed, names case-blind");
	aj_http_head_set(&h, "Host", "b.example");
	aj_http_head_del(&h, "X-A");
	out = aj_http_head_format(&h, &len);
	CHECK_STR(out, "GET http://a.example/x?y HTTP/1.1\r\nHost: b.example\r\n\r\n",
		  "formatted back with CRLF");
	CHECK(len == strlen(out), "length");
	free(out);
	aj_http_head_free(&h);

	CHECK(parse("HTTP/1.1 204\r\n\r\n", false, &h, why) == 0, "a status line without reason");
	aj_http_head_free(&h);
	CHECK(parse("GET / HTTP/1.1\nHost: x\n\n", true, &h, why) == 0, "bare LF line ends");
	aj_http_head_free(&h);

	static const char *const bad[] = {
		"GET / HTTP/2.0\r\n\r\n",		     "GET /\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",	     "GET / HTTP/1.1\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",  "GET / HTTP/1.1\r\n: x\r\n\r\n",
		"G@T / HTTP/1.1\r\n\r\n",		     "\r\n\r\n",
		"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = parse(bad[i], true, &h, why);
		CHECK(r < 0, "refused head #%zu (%s)", i, r < 0 ? why : "accepted");
		if (r == 0)
			aj_http_head_free(&h);
	}
}

static int request_framing(const char *head, struct aj_http_body *b, char *why)
{
	struct aj_http_head h;
	int r;

	if (parse(head, true, &h, why) < 0)
		return -2;
	r = aj_http_request_body(&h, b, why, 200);
	aj_http_head_free(&h);
	return r;
}

static void framing(void)
{
	struct aj_http_body b;
	char why[200];

	CHECK(request_framing("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", &b, why) == 0 &&
		      b.kind == AJ_BODY_LENGTH && b.remaining == 5,
	      "Content-Length");
	CHECK(request_framing("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &b,
			      why) == 0 && b.kind == AJ_BODY_CHUNKED,
	      "chunked last");
	CHECK(request_framing("GET / HTTP/1.1\r\n\r\n", &b, why) == 0 && b.done,
	      "no body without framing headers");
	CHECK(request_framing("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
			      "chunked\r\n\r\n",
			      &b, why) == -1,
	      "both Content-Length and Transfer-Encoding: refused");
	CHECK(request_framing("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
			      &b, why) == -1,
	      "two Content-Length headers: refused");
	CHECK(request_framing("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", &b, why) == -1,
	      "a signed Content-Length: refused");
	CHECK(request_framing("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", &b,
			      why) == -1,
	      "chunked not last: refused in a request");
	CHECK(request_framing("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
			      "Transfer-Encoding: chunked\r\n\r\n",
			      &b, why) == -1,
	      "two Transfer-Encoding headers: refused");
	CHECK(request_framing("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", &b, why) ==
		      -1,
	      "Transfer-Encoding in an HTTP/1.0 request: refused (no chunked coding in 1.0)");

	struct aj_http_head h;
	parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, &h, why);
	CHECK(aj_http_response_body(&h, "HEAD", 200, &b, why, sizeof why) == 0 && b.done,
	      "a response to HEAD has no body");
	CHECK(aj_http_response_body(&h, "GET", 304, &b, why, sizeof why) == 0 && b.done,
	      "304 has no body");
	CHECK(aj_http_response_body(&h, "GET", 200, &b, why, sizeof why) == 0 &&
		      b.kind == AJ_BODY_LENGTH,
	      "200 with Content-Length");
	aj_http_head_free(&h);
	parse("HTTP/1.0 200 OK\r\n\r\n", false, &h, why);
	CHECK(aj_http_response_body(&h, "GET", 200, &b, why, sizeof why) == 0 &&
		      b.kind == AJ_BODY_CLOSE && !aj_http_keep_alive(&h, false),
	      "no length: the body ends when the connection closes");
	aj_http_head_free(&h);
	parse("GET http://x/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\n", true, &h, why);
	CHECK(aj_http_keep_alive(&h, true), "HTTP/1.0 keep-alive through Proxy-Connection");
	aj_http_head_free(&h);
	parse("GET http://x/ HTTP/1.1\r\nConnection: foo, Close\r\n\r\n", true, &h, why);
	CHECK(!aj_http_keep_alive(&h, true), "Connection: close among other tokens");
	aj_http_head_free(&h);
}

/* Feeds `body` (followed by `extra`) to a chunked scanner in pieces of `step` bytes. */
static long scan_chunked(const char *body, const char *extra, size_t step, bool *done)
{
	struct aj_http_body b = {.kind = AJ_BODY_CHUNKED};
	char buf[512];
	size_t len, off = 0, taken = 0;

	snprintf(buf, sizeof buf, "%s%s", body, extra);
	len = strlen(buf);
	while (off < len && !b.done) {
		size_t n = len - off < step ? len - off : step;
		ssize_t t = aj_http_body_scan(&b, (const unsigned char *)buf + off, n);
		if (t < 0)
			return -1;
		taken += (size_t)t;
		off += (size_t)t;
		if ((size_t)t < n)
			break;
	}
	*done = b.done;
	return (long)taken;
}

static void chunked(void)
{
	const char *body = "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nT: v\r\n\r\n";
	bool done;

	for (size_t step = 1; step <= 64; step *= 2) {
		long n = scan_chunked(body, "GET /next HTTP/1.1\r\n", step, &done);
		CHECK(n == (long)strlen(body) && done,
		      "chunked body with extension and trailer, fed %zu bytes at a time", step);
	}
	CHECK(scan_chunked("0\r\n\r\n", "", 3, &done) == 5 && done, "empty chunked body");
	CHECK(scan_chunked("x\r\n", "", 8, &done) == -1, "a size that is not hex");
	CHECK(scan_chunked("5\r\nhelloXX", "", 16, &done) == -1, "data not followed by CRLF");
	CHECK(scan_chunked("ffffffffffffffffff\r\n", "", 64, &done) == -1, "an absurd size");
	CHECK(scan_chunked("5\nhello\r\n", "", 64, &done) == -1, "a bare LF after the size");

	struct aj_http_body l = {.kind = AJ_BODY_LENGTH, .remaining = 4};
	CHECK(aj_http_body_scan(&l, (const unsigned char *)"abcdef", 6) == 4 && l.done,
	      "Content-Length stops at its end");
}

static void urls(void)
{
	char host[260], why[200];
	uint16_t port = 0;
	const char *path;

	CHECK(aj_http_split_url("http://Api.Example:8080/a/b?c#d", host, sizeof host, &port, &path,
				why, sizeof why) == 0 &&
		      strcmp(host, "api.example") == 0 && port == 8080 &&
		      strcmp(path, "/a/b?c#d") == 0,
	      "absolute URL split");
	CHECK(aj_http_split_url("http://[::1]/", host, sizeof host, &port, &path, why,
				sizeof why) == 0 &&
		      strcmp(host, "::1") == 0 && port == 80,
	      "IPv6 authority, default port");
	CHECK(aj_http_split_url("http://user@evil.example/", host, sizeof host, &port, &path, why,
				sizeof why) < 0,
	      "userinfo is refused");
	CHECK(aj_http_split_url("https://a.example/", host, sizeof host, &port, &path, why,
				sizeof why) < 0,
	      "https:// is not a plain request");
	CHECK(aj_http_split_url("/relative", host, sizeof host, &port, &path, why, sizeof why) < 0,
	      "origin form is not a proxy request");
	CHECK(aj_http_split_authority("a.example:443", host, sizeof host, &port, why,
				      sizeof why) == 0 && port == 443,
	      "CONNECT authority");
	CHECK(aj_http_split_authority("a.example", host, sizeof host, &port, why, sizeof why) < 0,
	      "CONNECT needs a port");
	CHECK(aj_http_split_authority("a.example:0", host, sizeof host, &port, why, sizeof why) < 0,
	      "port 0 refused");
	CHECK(aj_http_split_authority("[::ffff:127.0.0.1]:80", host, sizeof host, &port, why,
				      sizeof why) == 0 &&
		      strcmp(host, "::ffff:127.0.0.1") == 0,
	      "bracketed mapped literal");
}

int main(void)
{
	heads();
	framing();
	chunked();
	urls();
	UNIT_EXIT();
}
