#include "egress/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "rules/egress.h"

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

void aj_http_head_free(struct aj_http_head *h)
{
	for (int i = 0; i < 3; i++)
		free(h->start[i]);
	for (size_t i = 0; i < h->n; i++) {
		free(h->f[i].name);
		free(h->f[i].value);
	}
	free(h->f);
	memset(h, 0, sizeof *h);
}

void aj_http_head_add(struct aj_http_head *h, const char *name, const char *value)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 16;
		h->f = aj_xrealloc(h->f, h->cap * sizeof *h->f);
	}
	h->f[h->n].name = aj_xstrdup(name);
	h->f[h->n].value = aj_xstrdup(value);
	h->n++;
}

const char *aj_http_head_get(const struct aj_http_head *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->f[i].name, name) == 0)
			return h->f[i].value;
	return NULL;
}

size_t aj_http_head_count(const struct aj_http_head *h, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < h->n; i++)
		n += strcasecmp(h->f[i].name, name) == 0;
	return n;
}

void aj_http_head_del(struct aj_http_head *h, const char *name)
{
	size_t w = 0;

	for (size_t i = 0; i < h->n; i++) {
		if (strcasecmp(h->f[i].name, name) == 0) {
			free(h->f[i].name);
			free(h->f[i].value);
			continue;
		}
		h->f[w++] = h->f[i];
	}
	h->n = w;
}

void aj_http_head_set(struct aj_http_head *h, const char *name, const char *value)
{
	aj_http_head_del(h, name);
	aj_http_head_add(h, name, value);
}

bool aj_http_head_has_token(const struct aj_http_head *h, const char *name, const char *token)
{
	size_t tl = strlen(token);

	for (size_t i = 0; i < h->n; i++) {
		if (strcasecmp(h->f[i].name, name) != 0)
			continue;
		for (const char *p = h->f[i].value; *p;) {
			p += strspn(p, " \t,");
			size_t n = strcspn(p, ",");
			size_t m = n;
			while (m && (p[m - 1] == ' ' || p[m - 1] == '\t'))
				m--;
			if (m == tl && strncasecmp(p, token, tl) == 0)
				return true;
			p += n;
		}
	}
	return false;
}

/* One line of the head, without its line end; NULL at the empty line or on error. */
static const char *next_line(const char **cur, const char *end, size_t *n, bool *bad)
{
	const char *p = *cur, *nl = memchr(p, '\n', (size_t)(end - p));

	*bad = false;
	if (!nl) {
		*bad = true;
		return NULL;
	}
	*n = (size_t)(nl - p);
	if (*n && p[*n - 1] == '\r')
		(*n)--;
	*cur = nl + 1;
	if (memchr(p, '\r', *n) || memchr(p, '\0', *n)) {
		*bad = true;
		return NULL;
	}
	return *n ? p : NULL;
}

static int malformed_start(bool request, char *why, size_t why_len)
{
	snprintf(why, why_len, "malformed %s line", request ? "request" : "status");
	return -1;
}

static int parse_start(const char *line, size_t n, bool request, struct aj_http_head *h,
		       char *why, size_t why_len)
{
	const char *sp1 = memchr(line, ' ', n), *sp2, *version;

	if (!sp1)
		return malformed_start(request, why, why_len);
	sp2 = memchr(sp1 + 1, ' ', (size_t)(line + n - sp1 - 1));
	if (!sp2 && request)
		return malformed_start(request, why, why_len);
	if (!sp2)
		sp2 = line + n; /* a status line may lack the reason */
	h->start[0] = aj_xstrndup(line, (size_t)(sp1 - line));
	h->start[1] = aj_xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	h->start[2] = aj_xstrndup(sp2 < line + n ? sp2 + 1 : sp2,
				  (size_t)(line + n - sp2) - (sp2 < line + n ? 1 : 0));
	version = request ? h->start[2] : h->start[0];
	if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0) {
		snprintf(why, why_len, "unsupported protocol version (HTTP/1.0 and 1.1 only)");
		return -1;
	}
	if (!h->start[0][0] || !h->start[1][0])
		return malformed_start(request, why, why_len);
	for (const char *c = h->start[0]; request && *c; c++)
		if (!tchar(*c))
			return malformed_start(request, why, why_len);
	return 0;
}

static int parse_field(const char *line, size_t n, struct aj_http_head *h, char *why,
		       size_t why_len)
{
	const char *colon = memchr(line, ':', n), *v, *e = line + n;
	char name[256];
	_cleanup_free_ char *value = NULL;

	if (line[0] == ' ' || line[0] == '\t') {
		snprintf(why, why_len, "obsolete line folding in a header");
		return -1;
	}
	if (!colon || colon == line || (size_t)(colon - line) >= sizeof name) {
		snprintf(why, why_len, "malformed header line");
		return -1;
	}
	for (const char *c = line; c < colon; c++)
		if (!tchar(*c)) {
			snprintf(why, why_len, "invalid character in a header name");
			return -1;
		}
	memcpy(name, line, (size_t)(colon - line));
	name[colon - line] = '\0';
	for (v = colon + 1; v < e && (*v == ' ' || *v == '\t'); v++)
		;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	value = aj_xstrndup(v, (size_t)(e - v));
	aj_http_head_add(h, name, value);
	return 0;
}

/* The lines of the head into h; what fails leaves h partly filled, for the caller to free. */
static int parse_lines(const char *text, size_t len, bool request, struct aj_http_head *h,
		       char *why, size_t why_len)
{
	const char *cur = text, *end = text + len, *line;
	size_t n;
	bool bad, first = true;

	for (;;) {
		line = next_line(&cur, end, &n, &bad);
		if (bad) {
			snprintf(why, why_len, "malformed line (bare CR, NUL or no line end)");
			return -1;
		}
		if (!line && first) {
			snprintf(why, why_len, "empty %s line", request ? "request" : "status");
			return -1;
		}
		if (!line)
			return 0;
		if (first ? parse_start(line, n, request, h, why, why_len) < 0
			  : parse_field(line, n, h, why, why_len) < 0)
			return -1;
		first = false;
	}
}

int aj_http_head_parse(const char *text, size_t len, bool request, struct aj_http_head *h,
		       char *why, size_t why_len)
{
	memset(h, 0, sizeof *h);
	if (parse_lines(text, len, request, h, why, why_len) < 0) {
		aj_http_head_free(h);
		return -1;
	}
	return 0;
}

char *aj_http_head_format(const struct aj_http_head *h, size_t *len)
{
	size_t cap = strlen(h->start[0]) + strlen(h->start[1]) + strlen(h->start[2]) + 8;
	char *out, *w;

	for (size_t i = 0; i < h->n; i++)
		cap += strlen(h->f[i].name) + strlen(h->f[i].value) + 4;
	out = aj_xmalloc(cap + 1);
	w = out + sprintf(out, "%s %s %s\r\n", h->start[0], h->start[1], h->start[2]);
	for (size_t i = 0; i < h->n; i++)
		w += sprintf(w, "%s: %s\r\n", h->f[i].name, h->f[i].value);
	w += sprintf(w, "\r\n");
	*len = (size_t)(w - out);
	return out;
}

static int content_length(const struct aj_http_head *h, uint64_t *out, char *why,
			  size_t why_len)
{
	const char *v = aj_http_head_get(h, "Content-Length");
	char *end;

	if (aj_http_head_count(h, "Content-Length") > 1) {
		snprintf(why, why_len, "several Content-Length headers");
		return -1;
	}
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (!*v || *end || errno || strspn(v, "0123456789") != strlen(v)) {
		snprintf(why, why_len, "invalid Content-Length");
		return -1;
	}
	return 0;
}

/* Transfer-Encoding must end in "chunked" to be framed; anything else is ambiguous. */
static bool chunked_last(const char *te)
{
	const char *last = strrchr(te, ',');

	last = last ? last + 1 : te;
	last += strspn(last, " \t");
	return strncasecmp(last, "chunked", 7) == 0 && strspn(last + 7, " \t") == strlen(last + 7);
}

static int framing(const struct aj_http_head *h, bool request, struct aj_http_body *b,
		   char *why, size_t why_len)
{
	const char *te = aj_http_head_get(h, "Transfer-Encoding");
	const char *cl = aj_http_head_get(h, "Content-Length");

	memset(b, 0, sizeof *b);
	if (te && cl) {
		snprintf(why, why_len, "both Transfer-Encoding and Content-Length");
		return -1;
	}
	if (te && request && !strcmp(h->start[2], "HTTP/1.0")) {
		/* HTTP/1.0 has no chunked coding: servers that ignore it would read the body as
		 * the next request. */
		snprintf(why, why_len, "Transfer-Encoding in an HTTP/1.0 request");
		return -1;
	}
	if (te) {
		if (aj_http_head_count(h, "Transfer-Encoding") > 1 || !chunked_last(te)) {
			if (request) {
				snprintf(why, why_len, "a Transfer-Encoding other than chunked");
				return -1;
			}
			b->kind = AJ_BODY_CLOSE;
			return 0;
		}
		b->kind = AJ_BODY_CHUNKED;
		return 0;
	}
	if (cl) {
		if (content_length(h, &b->remaining, why, why_len) < 0)
			return -1;
		b->kind = b->remaining ? AJ_BODY_LENGTH : AJ_BODY_NONE;
		b->done = b->remaining == 0;
		return 0;
	}
	b->kind = request ? AJ_BODY_NONE : AJ_BODY_CLOSE;
	b->done = request;
	return 0;
}

int aj_http_request_body(const struct aj_http_head *h, struct aj_http_body *b, char *why,
			 size_t why_len)
{
	return framing(h, true, b, why, why_len);
}

int aj_http_response_body(const struct aj_http_head *h, const char *method, int status,
			  struct aj_http_body *b, char *why, size_t why_len)
{
	if (strcmp(method, "HEAD") == 0 || (status >= 100 && status < 200) || status == 204 ||
	    status == 304) {
		memset(b, 0, sizeof *b);
		b->done = true;
		return 0;
	}
	return framing(h, false, b, why, why_len);
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One byte of chunk framing (everything but chunk data). */
static int chunk_step(struct aj_http_body *b, unsigned char c)
{
	switch (b->cstate) {
	case C_SIZE:
		if (hexval(c) >= 0) {
			if (++b->cdigits > 15)
				return -1;
			b->csize = b->csize * 16 + (uint64_t)hexval(c);
			return 0;
		}
		if (!b->cdigits)
			return -1;
		if (c == ';' || c == ' ' || c == '\t')
			b->cstate = C_EXT;
		else if (c == '\r')
			b->cstate = C_SIZE_LF;
		else
			return -1;
		return 0;
	case C_EXT:
		if (c == '\r')
			b->cstate = C_SIZE_LF;
		else if (c == '\n' || c == 0)
			return -1;
		return 0;
	case C_SIZE_LF:
		if (c != '\n')
			return -1;
		b->cstate = b->csize ? C_DATA : C_TRAILER;
		return 0;
	case C_DATA_CR:
		if (c != '\r')
			return -1;
		b->cstate = C_DATA_LF;
		return 0;
	case C_DATA_LF:
		if (c != '\n')
			return -1;
		b->cstate = C_SIZE;
		b->csize = 0;
		b->cdigits = 0;
		return 0;
	case C_TRAILER: /* start of a trailer line: CR ends the message */
		b->cstate = c == '\r' ? C_TRAILER_LF : C_TRAILER_LINE;
		return c == '\n' ? -1 : 0;
	case C_TRAILER_LF:
		if (c != '\n')
			return -1;
		b->done = true;
		return 0;
	case C_TRAILER_LINE:
		if (c == '\r')
			b->cstate = C_TRAILER_LINE_LF;
		else if (c == '\n')
			return -1;
		return 0;
	case C_TRAILER_LINE_LF:
		if (c != '\n')
			return -1;
		b->cstate = C_TRAILER;
		return 0;
	case C_DATA: /* chunked_scan() passes data over without a step per byte */
	default:
		return -1;
	}
}

static ssize_t chunked_scan(struct aj_http_body *b, const unsigned char *buf, size_t len)
{
	size_t i = 0;

	while (i < len && !b->done) {
		if (b->cstate == C_DATA) {
			uint64_t take = len - i < b->csize ? len - i : b->csize;
			i += take;
			b->csize -= take;
			if (!b->csize)
				b->cstate = C_DATA_CR;
			continue;
		}
		if (chunk_step(b, buf[i++]) < 0)
			return -1;
	}
	return (ssize_t)i;
}

ssize_t aj_http_body_scan(struct aj_http_body *b, const unsigned char *buf, size_t len)
{
	switch (b->kind) {
	case AJ_BODY_NONE:
		b->done = true;
		return 0;
	case AJ_BODY_LENGTH: {
		uint64_t take = len < b->remaining ? len : b->remaining;
		b->remaining -= take;
		b->done = b->remaining == 0;
		return (ssize_t)take;
	}
	case AJ_BODY_CHUNKED:
		return chunked_scan(b, buf, len);
	case AJ_BODY_CLOSE:
		return (ssize_t)len;
	default:
		return -1;
	}
}

bool aj_http_keep_alive(const struct aj_http_head *h, bool request)
{
	const char *version = request ? h->start[2] : h->start[0];

	if (aj_http_head_has_token(h, "Connection", "close") ||
	    (request && aj_http_head_has_token(h, "Proxy-Connection", "close")))
		return false;
	if (strcmp(version, "HTTP/1.1") == 0)
		return true;
	return aj_http_head_has_token(h, "Connection", "keep-alive") ||
	       (request && aj_http_head_has_token(h, "Proxy-Connection", "keep-alive"));
}

static int parse_port(const char *s, size_t n, uint16_t *port)
{
	unsigned long v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* "host", "host:port", "[v6]", "[v6]:port"; port stays as given when absent. */
static int split_hostport(const char *a, size_t n, char *host, size_t host_len, uint16_t *port,
			  bool need_port)
{
	char raw[AJ_EGRESS_HOST_MAX + 8];
	const char *colon;
	size_t hl;

	if (n == 0 || n >= sizeof raw)
		return -1;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', n);
		if (!close)
			return -1;
		hl = (size_t)(close - a) + 1;
		colon = hl < n ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		colon = memchr(a, ':', n);
		hl = colon ? (size_t)(colon - a) : n;
	}
	if (colon && parse_port(colon + 1, (size_t)(a + n - colon - 1), port) < 0)
		return -1;
	if (!colon && need_port)
		return -1;
	memcpy(raw, a, hl);
	raw[hl] = '\0';
	/* userinfo ("user@host") is refused: it would let the name checked differ from the
	 * name a careless reader sees. */
	if (strchr(raw, '@'))
		return -1;
	return aj_egress_host_normalize(raw, host, host_len) ? 0 : -1;
}

int aj_http_split_url(const char *target, char *host, size_t host_len, uint16_t *port,
		      const char **path, char *why, size_t why_len)
{
	const char *auth, *slash;

	if (strncasecmp(target, "http://", 7) != 0) {
		snprintf(why, why_len,
			 strncasecmp(target, "https://", 8) == 0
				 ? "https:// URLs go through CONNECT, not as a plain request"
				 : "expected an absolute http:// URL (this is a proxy)");
		return -1;
	}
	auth = target + 7;
	slash = auth + strcspn(auth, "/?#");
	*port = 80;
	if (split_hostport(auth, (size_t)(slash - auth), host, host_len, port, false) < 0) {
		snprintf(why, why_len, "invalid host or port in the URL");
		return -1;
	}
	*path = *slash == '/' ? slash : *slash ? slash : "/";
	return 0;
}

int aj_http_split_authority(const char *target, char *host, size_t host_len, uint16_t *port,
			    char *why, size_t why_len)
{
	if (split_hostport(target, strlen(target), host, host_len, port, true) < 0) {
		snprintf(why, why_len, "expected HOST:PORT as the CONNECT target");
		return -1;
	}
	return 0;
}
