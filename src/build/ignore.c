#include "build/ignore.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* One pattern token at p (p < end) against c: a class "[...]", '?', an escaped or a plain
 * character. Its length into *len. A class without its closing ']' is a literal '['. */
static bool token_match(const char *p, const char *end, char c, size_t *len)
{
	if (*p == '?') {
		*len = 1;
		return c != '/';
	}
	if (*p == '\\' && p + 1 < end) {
		*len = 2;
		return p[1] == c;
	}
	if (*p == '[') {
		const char *s = p + 1;
		bool neg = false, hit = false;

		if (s < end && (*s == '!' || *s == '^')) {
			neg = true;
			s++;
		}
		for (bool first = true; s < end && (first || *s != ']'); first = false) {
			char lo = *s, hi;

			if (lo == '\\' && s + 1 < end)
				lo = *++s;
			hi = lo;
			if (s + 2 < end && s[1] == '-' && s[2] != ']') {
				hi = s[2] == '\\' && s + 3 < end ? s[3] : s[2];
				s += s[2] == '\\' && s + 3 < end ? 3 : 2;
			}
			hit = hit || (c >= lo && c <= hi);
			s++;
		}
		if (s < end) {
			*len = (size_t)(s + 1 - p);
			return hit != neg;
		}
	}
	*len = 1;
	return *p == c;
}

/* One path element against one pattern element: '*' any run, without backtracking further
 * than the last '*' (linear in practice, never exponential). */
static bool element_match(const char *p, size_t plen, const char *s, size_t slen)
{
	size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0, len;

	while (si < slen) {
		if (pi < plen && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < plen && token_match(p + pi, p + plen, s[si], &len)) {
			pi += len;
			si++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			si = ++mark;
		} else {
			return false;
		}
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}

#define MAX_ELEMENTS 256

struct elements {
	const char *v[MAX_ELEMENTS];
	size_t len[MAX_ELEMENTS];
	size_t n;
};

static bool split(const char *s, struct elements *e)
{
	e->n = 0;
	for (;;) {
		const char *slash = strchr(s, '/');

		if (e->n == MAX_ELEMENTS)
			return false;
		e->v[e->n] = s;
		e->len[e->n++] = slash ? (size_t)(slash - s) : strlen(s);
		if (!slash)
			return true;
		s = slash + 1;
	}
}

bool aj_glob_match(const char *pattern, const char *path)
{
	struct elements p, s;
	unsigned char *ok;
	bool r;

	if (!split(pattern, &p) || !split(path, &s))
		return false;
	/* ok[i * (s.n + 1) + j]: pattern elements i.. match path elements j.. */
	ok = aj_xcalloc((p.n + 1) * (s.n + 1), 1);
	ok[p.n * (s.n + 1) + s.n] = 1;
	for (size_t i = p.n; i-- > 0;) {
		bool any = p.len[i] == 2 && p.v[i][0] == '*' && p.v[i][1] == '*';

		for (size_t j = s.n + 1; j-- > 0;) {
			bool m;

			if (any) /* "**": nothing, or one more element */
				m = ok[(i + 1) * (s.n + 1) + j] || (j < s.n && ok[i * (s.n + 1) + j + 1]);
			else
				m = j < s.n && ok[(i + 1) * (s.n + 1) + j + 1] &&
				    element_match(p.v[i], p.len[i], s.v[j], s.len[j]);
			ok[i * (s.n + 1) + j] = m;
		}
	}
	r = ok[0];
	free(ok);
	return r;
}

void aj_ignore_parse(struct aj_ignore *ig, const char *text)
{
	ig->patterns = (struct aj_strv)AJ_STRV_INIT;
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n'), *s = line, *e;
		bool neg = false;

		e = end ? end : line + strlen(line);
		line = end ? end + 1 : NULL;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (s == e || *s == '#')
			continue;
		if (*s == '!') {
			neg = true;
			s++;
		}
		while (s < e && (*s == '/' || (s[0] == '.' && s + 1 < e && s[1] == '/')))
			s += *s == '/' ? 1 : 2;
		while (e > s && e[-1] == '/')
			e--;
		if (s == e)
			continue;
		aj_strv_pushf(&ig->patterns, "%s%.*s", neg ? "!" : "", (int)(e - s), s);
	}
}

/* Whether pattern matches path or a directory above it. */
static bool covers(const char *pattern, const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n >= sizeof buf)
		return false;
	memcpy(buf, path, n + 1);
	for (;;) {
		char *slash;

		if (aj_glob_match(pattern, buf))
			return true;
		slash = strrchr(buf, '/');
		if (!slash)
			return false;
		*slash = '\0';
	}
}

bool aj_ignore_match(const struct aj_ignore *ig, const char *path)
{
	bool out = false;

	for (size_t i = 0; i < ig->patterns.n; i++) {
		const char *p = ig->patterns.v[i];
		bool neg = *p == '!';

		if (covers(neg ? p + 1 : p, path))
			out = !neg;
	}
	return out;
}

void aj_ignore_free(struct aj_ignore *ig)
{
	aj_strv_free(&ig->patterns);
}
