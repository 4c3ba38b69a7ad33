/* The route matcher both HTTP front ends share (server/frontend.h): a method and a path
 * against route tables, with named captures ({ref}, {name}, {id}), 404 against 405 with the
 * methods for Allow, and the check of a request's query parameters against a route's list.
 * Pure apart from libevent's URI decoding and query parsing: unit-tested in
 * tests/unit/test_srv_router.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/cleanup.h"
#include "server/frontend.h"

#define MAX_SEGS 8

struct path {
	char *seg[MAX_SEGS];
	size_t n;
	char buf[2048];
};

/* Splits "/v1/sandboxes/x" into segments; empty segments (a double or trailing slash) make
 * the path match nothing. */
static bool split_path(const char *p, struct path *out)
{
	char *save = NULL, *tok;
	size_t len = p ? strlen(p) : 0;

	out->n = 0;
	if (!p || p[0] != '/' || len >= sizeof out->buf || strstr(p, "//") ||
	    (len > 1 && p[len - 1] == '/'))
		return false;
	snprintf(out->buf, sizeof out->buf, "%s", p + 1);
	for (tok = strtok_r(out->buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (out->n == MAX_SEGS)
			return false;
		out->seg[out->n++] = tok;
	}
	return true;
}

/* One pattern segment (plen bytes of pat) against one (still encoded) path segment; a
 * capture is decoded. */
static bool match_seg(const char *pat, size_t plen, const char *seg, size_t cap_max,
		      struct aj_srv_match *m)
{
	size_t len = 0;
	_cleanup_free_ char *dec = NULL;

	if (plen < 2 || pat[0] != '{' || pat[plen - 1] != '}')
		return strlen(seg) == plen && memcmp(pat, seg, plen) == 0;
	if (m->n == AJ_SRV_CAPTURES || plen - 2 >= sizeof m->cap[0].name)
		return false;
	dec = evhttp_uridecode(seg, 0, &len);
	/* A NUL or slash smuggled in with %00/%2F, or an overlong value, names nothing. */
	if (!dec || len != strlen(dec) || len == 0 || len >= cap_max || strchr(dec, '/'))
		return false;
	snprintf(m->cap[m->n].name, sizeof m->cap[0].name, "%.*s", (int)(plen - 2), pat + 1);
	memcpy(m->cap[m->n].value, dec, len + 1);
	m->n++;
	return true;
}

/* Walks the pattern in place: every request is matched against every route until one fits,
 * so no copy of the pattern per route (that was a fifth of the daemon's instructions for a
 * warm exec). */
static bool match_route(const struct aj_srv_route *rt, const struct path *p, size_t cap_max,
			struct aj_srv_match *m)
{
	const char *pat = rt->pattern + 1;
	size_t i = 0;

	m->n = 0;
	while (*pat) {
		const char *end = strchrnul(pat, '/');
		if (end > pat) { /* an empty pattern segment is skipped, as strtok did */
			if (i >= p->n || !match_seg(pat, (size_t)(end - pat), p->seg[i], cap_max, m))
				return false;
			i++;
		}
		pat = *end ? end + 1 : end;
	}
	return i == p->n;
}

const char *aj_srv_method_name(enum evhttp_cmd_type method)
{
	switch (method) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "?";
}

/* The methods some route of this path takes, in a fixed order, for the Allow header. */
static void format_allow(struct aj_srv_match *m)
{
	static const enum evhttp_cmd_type order[] = {EVHTTP_REQ_GET, EVHTTP_REQ_POST,
						      EVHTTP_REQ_PUT, EVHTTP_REQ_PATCH,
						      EVHTTP_REQ_DELETE};

	m->allow[0] = '\0';
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		if (m->methods & (unsigned)order[i])
			snprintf(m->allow + strlen(m->allow), sizeof m->allow - strlen(m->allow),
				 "%s%s", m->allow[0] ? ", " : "", aj_srv_method_name(order[i]));
}

int aj_srv_route_match(const struct aj_srv_table *tables, enum evhttp_cmd_type method,
		       const char *path, size_t cap_max, struct aj_srv_match *m)
{
	struct path p;

	memset(m, 0, sizeof *m);
	if (!cap_max || cap_max > sizeof m->cap[0].value)
		cap_max = sizeof m->cap[0].value;
	if (!split_path(path, &p))
		return -1;
	for (const struct aj_srv_table *t = tables; t->rows; t++)
		for (const char *row = (const char *)t->rows;; row += t->row_size) {
			/* Each row begins with its struct aj_srv_route (frontend.h). */
			const struct aj_srv_route *rt = (const struct aj_srv_route *)row;

			if (!rt->pattern)
				break;
			if (!match_route(rt, &p, cap_max, m))
				continue;
			if (rt->method == method) {
				m->route = rt;
				return 0;
			}
			m->methods |= (unsigned)rt->method;
		}
	m->n = 0;
	format_allow(m);
	return -1;
}

const char *aj_srv_match_capture(const struct aj_srv_match *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->cap[i].name, name))
			return m->cap[i].value;
	return NULL;
}

static bool listed(const char *const *names, const char *key)
{
	for (const char *const *q = names; q && *q; q++)
		if (!strcmp(*q, key))
			return true;
	return false;
}

const struct evkeyval *aj_srv_query_bad(const struct aj_srv_route *rt,
					const struct evkeyvalq *q, const char *const *repeatable,
					bool *repeated)
{
	const struct evkeyval *kv;

	*repeated = false;
	TAILQ_FOREACH(kv, q, next) {
		if (!listed(rt->query, kv->key))
			return kv;
		if (!listed(repeatable, kv->key) &&
		    evhttp_find_header(q, kv->key) != kv->value) {
			*repeated = true;
			return kv;
		}
	}
	return NULL;
}
