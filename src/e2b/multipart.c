/* Upload bodies: multipart/form-data as the SDK's undici writes it (RFC 7578), and gzip.
 *
 * A part's filename is the target path when the URL has no ?path (several files in one
 * request). undici escapes exactly three characters in it, LF, CR and '"' as %0A, %0D and
 * %22 (the WHATWG rule), so only those are undone: a literal "%20" in a path stays "%20". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include "e2b/internal.h"

#define BOUNDARY_MAX 200

static int boundary_of(const char *ctype, char *out, size_t len)
{
	const char *b = strcasestr(ctype, "boundary=");
	size_t n;

	if (!b)
		return -1;
	b += 9;
	if (*b == '"') {
		b++;
		n = strcspn(b, "\"");
	} else {
		n = strcspn(b, "; \t");
	}
	if (n == 0 || n > BOUNDARY_MAX || n + 3 > len)
		return -1;
	snprintf(out, len, "--%.*s", (int)n, b);
	return 0;
}

/* A parameter of Content-Disposition ("name", "filename"), quoted or not. */
static bool disposition_param(const char *h, size_t hlen, const char *key, char *out,
			      size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = h; p + kl + 1 < h + hlen; p++) {
		const char *v, *end;
		if ((p != h && p[-1] != ';' && p[-1] != ' ') || strncasecmp(p, key, kl) ||
		    p[kl] != '=')
			continue;
		v = p + kl + 1;
		if (*v == '"') {
			end = memchr(v + 1, '"', (size_t)(h + hlen - v - 1));
			v++;
		} else {
			end = v + strcspn(v, ";\r\n");
		}
		if (!end || end > h + hlen || (size_t)(end - v) >= len)
			return false;
		snprintf(out, len, "%.*s", (int)(end - v), v);
		return true;
	}
	return false;
}

static void unescape_undici(char *s)
{
	static const struct {
		const char *esc;
		char c;
	} map[] = {{"%0A", '\n'}, {"%0D", '\r'}, {"%22", '"'}};
	char *o = s;

	for (char *p = s; *p;) {
		size_t k = 0;
		while (k < 3 && strncmp(p, map[k].esc, 3))
			k++;
		if (k < 3) {
			*o++ = map[k].c;
			p += 3;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
}

/* The headers of one part, [h, h + hlen): its name and filename. */
static int part_headers(const char *h, size_t hlen, struct e2b_part *p)
{
	const char *cd = NULL;

	for (const char *l = h; l < h + hlen;) {
		const char *eol = memmem(l, (size_t)(h + hlen - l), "\r\n", 2);
		size_t n = eol ? (size_t)(eol - l) : (size_t)(h + hlen - l);
		if (n > 20 && !strncasecmp(l, "Content-Disposition:", 20))
			cd = l;
		if (cd == l) {
			if (!disposition_param(l, n, "name", p->name, sizeof p->name))
				return -1;
			if (disposition_param(l, n, "filename", p->filename, sizeof p->filename))
				unescape_undici(p->filename);
		}
		l += n + 2;
	}
	return cd ? 0 : -1;
}

int e2b_multipart(const char *body, size_t len, const char *ctype,
		  int (*fn)(void *arg, const struct e2b_part *p), void *arg, char *why,
		  size_t why_len)
{
	char delim[BOUNDARY_MAX + 8];
	const char *p, *end = body + len;
	size_t dl;

	if (boundary_of(ctype, delim, sizeof delim) < 0)
		return snprintf(why, why_len, "no boundary in Content-Type"), -1;
	dl = strlen(delim);
	p = memmem(body, len, delim, dl);
	while (p) {
		struct e2b_part part;
		const char *hend, *next;
		int rc;

		p += dl;
		if (end - p >= 2 && !memcmp(p, "--", 2))
			return 0; /* the closing delimiter */
		if (end - p < 2 || memcmp(p, "\r\n", 2))
			break;
		p += 2;
		hend = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		memset(&part, 0, sizeof part);
		if (!hend || part_headers(p, (size_t)(hend - p), &part) < 0) {
			snprintf(why, why_len, "a part without a valid Content-Disposition");
			return -1;
		}
		part.data = hend + 4;
		next = memmem(part.data, (size_t)(end - part.data), delim, dl);
		if (!next || next - part.data < 2 || memcmp(next - 2, "\r\n", 2))
			break;
		part.len = (size_t)(next - 2 - part.data);
		if ((rc = fn(arg, &part)) != 0)
			return rc;
		p = next;
	}
	snprintf(why, why_len, "the body is not multipart/form-data with that boundary");
	return -1;
}

/* inflateEnd is safe on a stream inflateInit2 never set up (its state is NULL). */
static void inflate_endp(z_stream *zs)
{
	inflateEnd(zs);
}

int e2b_gunzip(const char *in, size_t n, size_t max, char **out, size_t *out_len, char *why,
	       size_t why_len)
{
	__attribute__((cleanup(inflate_endp))) z_stream zs;
	size_t cap = n * 4 + 64;
	_cleanup_free_ char *buf = NULL;
	int r = Z_OK;

	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return snprintf(why, why_len, "zlib: out of memory"), -1;
	buf = aj_xmalloc(cap);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	while (r == Z_OK) {
		if (zs.total_out == cap) {
			if (cap >= max + 1)
				break; /* past the limit: refused below */
			buf = aj_xrealloc(buf, cap * 2);
			cap *= 2;
		}
		zs.next_out = (Bytef *)buf + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		r = inflate(&zs, Z_NO_FLUSH);
		if (r == Z_BUF_ERROR && zs.avail_in == 0)
			break; /* truncated input */
		if (r == Z_BUF_ERROR)
			r = Z_OK; /* out of room: grow */
	}
	*out_len = zs.total_out;
	if (r != Z_STREAM_END || *out_len > max) {
		snprintf(why, why_len, "%s", *out_len >= max ? "inflates to more than the upload limit"
							     : "not a complete gzip stream");
		return -1;
	}
	*out = aj_steal_ptr(&buf);
	return 0;
}
