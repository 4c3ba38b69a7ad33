/* Upload bodies of the E2B front end (src/e2b/multipart.c), through e2b/internal.h, their
 * only way in: multipart/form-data as the SDK's undici writes it (RFC 7578), its filename
 * escapes, what a body that is not quite multipart turns into, and gzip bodies with the
 * upload limit. The bodies are built here byte by byte; none is NUL-terminated where it ends,
 * as an HTTP body is not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "e2b/internal.h"
#include "unit.h"

#define CT "multipart/form-data; boundary=XyZ"

struct parts {
	int n, stop_at;
	char name[4][64], filename[4][256];
	char data[4][64];
	size_t len[4];
};

static int on_part(void *arg, const struct e2b_part *p)
{
	struct parts *ps = arg;

	if (ps->n < 4) {
		snprintf(ps->name[ps->n], sizeof ps->name[0], "%s", p->name);
		snprintf(ps->filename[ps->n], sizeof ps->filename[0], "%s", p->filename);
		ps->len[ps->n] = p->len;
		memcpy(ps->data[ps->n], p->data, p->len < 63 ? p->len : 63);
	}
	ps->n++;
	return ps->stop_at && ps->n == ps->stop_at ? 5 : 0;
}

/* The body in a buffer of exactly its length (ASan sees a read past the end). */
static int parse(const char *body, size_t len, const char *ctype, struct parts *ps, char *why)
{
	char *copy = malloc(len ? len : 1);
	int r;

	memcpy(copy, body, len);
	memset(ps->name, 0, sizeof ps->name);
	ps->n = 0;
	why[0] = '\0';
	r = e2b_multipart(copy, len, ctype, on_part, ps, why, 128);
	free(copy);
	return r;
}

static int parse_str(const char *body, const char *ctype, struct parts *ps, char *why)
{
	return parse(body, strlen(body), ctype, ps, why);
}

static void valid(void)
{
	static const char body[] =
		"preamble\r\n"
		"--XyZ\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
		"Content-Type: application/octet-stream\r\n"
		"\r\n"
		"hello\r\nworld\r\n"
		"--XyZ\r\n"
		"content-disposition: form-data; name=file; filename=\"b%0Ac%0Dd%22e%20f\"\r\n"
		"\r\n"
		"\0\1\2\r\n"
		"--XyZ\r\n"
		"Content-Disposition: form-data; name=\"empty\"\r\n"
		"\r\n"
		"\r\n"
		"--XyZ--\r\n"
		"epilogue";
	struct parts ps = {0};
	char why[128];

	CHECK(parse(body, sizeof body - 1, CT, &ps, why) == 0 && ps.n == 3,
	      "three parts (%s)", why);
	CHECK_STR(ps.name[0], "file", "a quoted name");
	CHECK_STR(ps.filename[0], "/home/user/a.txt", "a quoted filename");
	CHECK(ps.len[0] == 12 && !memcmp(ps.data[0], "hello\r\nworld", 12),
	      "the data, CRLF inside it kept, the one before the delimiter not");
	CHECK_STR(ps.name[1], "file", "an unquoted name, header name in lower case");
	CHECK_STR(ps.filename[1], "b\nc\rd\"e%20f",
		  "undici's %%0A %%0D %%22 undone, any other %%-sequence kept");
	CHECK(ps.len[1] == 3 && !memcmp(ps.data[1], "\0\1\2", 3), "binary data with a NUL");
	CHECK(ps.len[2] == 0 && ps.filename[2][0] == '\0', "an empty part without a filename");

	ps.stop_at = 2;
	CHECK(parse(body, sizeof body - 1, CT, &ps, why) == 5 && ps.n == 2,
	      "a callback's non-zero return stops the walk and is returned");
	ps.stop_at = 0;

	CHECK(parse_str("--q\"b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--q\"b--",
			"multipart/form-data; boundary=\"q\\\"b\"", &ps, why) < 0,
	      "a quoted boundary ends at the first quote");
	CHECK(parse_str("--a b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--a b--",
			"multipart/form-data; boundary=\"a b\"", &ps, why) == 0 && ps.n == 1,
	      "a quoted boundary may hold a space");
	CHECK(parse_str("--XyZ\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--XyZ--",
			"multipart/form-data; charset=utf-8; BOUNDARY=XyZ; x=y", &ps, why) == 0 &&
		      ps.n == 1,
	      "the boundary parameter anywhere, in any case");
	CHECK(parse_str("--XyZ--", CT, &ps, why) == 0 && ps.n == 0,
	      "a body with no part is valid and empty");
}

static void refused(const char *body, size_t len, const char *ctype, const char *why_has,
		    const char *what)
{
	struct parts ps = {0};
	char why[128];

	CHECK(parse(body, len, ctype, &ps, why) == -1, "%s is refused", what);
	CHECK_CONTAINS(why, why_has, "  saying why");
}

#define REFUSED(body, ctype, why, what) refused(body, sizeof body - 1, ctype, why, what)

static void hostile(void)
{
	char longb[300], ctype[400];

	REFUSED("--XyZ\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--XyZ--",
		"text/plain", "no boundary", "a Content-Type without a boundary");
	REFUSED("--XyZ--", "multipart/form-data; boundary=", "no boundary", "an empty boundary");
	REFUSED("--XyZ--", "multipart/form-data; boundary=\"\"", "no boundary",
		"an empty quoted boundary");
	memset(longb, 'b', 201);
	longb[201] = '\0';
	snprintf(ctype, sizeof ctype, "multipart/form-data; boundary=%s", longb);
	REFUSED("--XyZ--", ctype, "no boundary", "a boundary longer than RFC 2046's 70 (200)");
	REFUSED("", CT, "not multipart", "an empty body");
	REFUSED("no delimiter at all", CT, "not multipart", "a body without the delimiter");
	REFUSED("--XyZ\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nno end", CT,
		"not multipart", "a part without a closing delimiter");
	REFUSED("--XyZ\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1--XyZ--", CT,
		"not multipart", "a delimiter not after CRLF");
	REFUSED("--XyZ\r\nContent-Disposition: form-data; name=\"x\"\r\n", CT,
		"Content-Disposition", "headers that never end");
	REFUSED("--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n--XyZ--", CT, "Content-Disposition",
		"a part without Content-Disposition");
	REFUSED("--XyZ\r\nContent-Disposition: form-data\r\n\r\n1\r\n--XyZ--", CT,
		"Content-Disposition", "a disposition without a name");
	REFUSED("--XyZ\r\nContent-Disposition: form-data; name=\"x\r\n\r\n1\r\n--XyZ--", CT,
		"Content-Disposition", "an unterminated quoted name");
	REFUSED("--XyZ\r\nContent-Disposition: form-data; filename=\"f\"\r\n\r\n1\r\n--XyZ--", CT,
		"Content-Disposition", "a filename is no name");
	REFUSED("--XyZ", CT, "not multipart", "a delimiter at the very end");
	REFUSED("--XyZ-", CT, "not multipart", "half a closing delimiter");
	REFUSED("--XyZ\r", CT, "not multipart", "a delimiter and half a CRLF");
	{
		char body[512];
		int n = snprintf(body, sizeof body,
				 "--XyZ\r\nContent-Disposition: form-data; name=\"%0100d\"\r\n\r\n1"
				 "\r\n--XyZ--",
				 0);
		refused(body, (size_t)n, CT, "Content-Disposition", "a name longer than 63 bytes");
	}
	{
		size_t len = E2B_PATH_MAX + 200;
		char *body = malloc(len);
		int n = snprintf(body, len,
				 "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; "
				 "filename=\"");
		struct parts ps = {0};
		char why[128];

		memset(body + n, 'p', E2B_PATH_MAX + 10);
		n += E2B_PATH_MAX + 10;
		n += snprintf(body + n, len - (size_t)n, "\"\r\n\r\n1\r\n--XyZ--");
		CHECK(parse(body, (size_t)n, CT, &ps, why) < 0 || ps.filename[0][0] == '\0',
		      "a filename longer than a path is never taken cut");
		free(body);
	}
}

static size_t gzip(const char *in, size_t n, char *out, size_t cap)
{
	z_stream zs;
	size_t len;

	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = (Bytef *)out;
	zs.avail_out = (uInt)cap;
	len = deflate(&zs, Z_FINISH) == Z_STREAM_END ? zs.total_out : 0;
	deflateEnd(&zs);
	return len;
}

static void gunzip(void)
{
	static char plain[1 << 20], packed[1 << 16];
	char *out = NULL, why[128];
	size_t n, out_len = 0;

	for (size_t i = 0; i < sizeof plain; i++)
		plain[i] = (char)('a' + i % 7);
	n = gzip("hello", 5, packed, sizeof packed);
	CHECK(n > 0 && e2b_gunzip(packed, n, 100, &out, &out_len, why, sizeof why) == 0 &&
		      out_len == 5 && !memcmp(out, "hello", 5),
	      "a gzip body inflates");
	free(out);
	out = NULL;
	n = gzip(plain, sizeof plain, packed, sizeof packed);
	CHECK(n > 0 && n < sizeof plain / 100 &&
		      e2b_gunzip(packed, n, sizeof plain, &out, &out_len, why, sizeof why) == 0 &&
		      out_len == sizeof plain && !memcmp(out, plain, sizeof plain),
	      "one that inflates a thousandfold, up to the limit exactly (%s)", why);
	free(out);
	out = NULL;
	CHECK(e2b_gunzip(packed, n, sizeof plain - 1, &out, &out_len, why, sizeof why) < 0 &&
		      out == NULL,
	      "one byte over the limit is refused");
	CHECK_CONTAINS(why, "more than the upload limit", "saying so");
	CHECK(e2b_gunzip(packed, n / 2, sizeof plain, &out, &out_len, why, sizeof why) < 0 &&
		      out == NULL,
	      "a truncated stream is refused");
	CHECK_CONTAINS(why, "not a complete gzip stream", "saying so");
	CHECK(e2b_gunzip("not gzip at all", 15, 100, &out, &out_len, why, sizeof why) < 0 &&
		      out == NULL,
	      "bytes that are not gzip are refused");
	CHECK(e2b_gunzip("", 0, 100, &out, &out_len, why, sizeof why) < 0 && out == NULL,
	      "an empty body is no gzip stream");
	n = gzip("", 0, packed, sizeof packed);
	CHECK(n > 0 && e2b_gunzip(packed, n, 100, &out, &out_len, why, sizeof why) == 0 &&
		      out_len == 0,
	      "a gzip of nothing inflates to nothing");
	free(out);
}

int main(void)
{
	valid();
	hostile();
	gunzip();
	UNIT_EXIT();
}
