/* GET /v2/sandboxes: the owner's E2B sandboxes, filtered and paged as E2B's API does
 * (docs/e2b-protocol.md 4.4).
 *
 * metadata arrives encoded three times (the SDK's encodeURIComponent, URLSearchParams and the
 * query serializer); after the query's own decoding the string is unescaped once more, split
 * on '&' and the first '=', and key and value unescaped again, which is what E2B's handler
 * does. The page cursor (X-Next-Token, nextToken) is the sort key of a page's last sandbox,
 * "<startedAt ms>-<id>", so that a sandbox removed between two pages moves no other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2b/internal.h"

#define PAGE_MAX 100

struct filter {
	json_t *meta; /* key -> value, all must match */
	bool running, paused;
	int64_t started_after;
	const char *tmpl;
	bool asc;
	int64_t limit;
	bool have_cursor;
	int64_t cur_started;
	char cur_id[33];
};

static void filter_free(void *p)
{
	struct filter *f = p;

	json_decref(f->meta);
	free(f);
}

static int bad(struct aj_srv_req *r, const char *what)
{
	return e2b_fail(r, 400, "invalid query: %s", what);
}

static char *unescape(const char *s)
{
	return evhttp_uridecode(s, 1, NULL);
}

static int parse_metadata(struct aj_srv_req *r, struct filter *f, const char *q)
{
	_cleanup_free_ char *all = unescape(q);
	char *save = NULL, *pair;

	f->meta = json_object();
	if (!all)
		return bad(r, "metadata");
	for (pair = strtok_r(all, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(pair, '=');
		_cleanup_free_ char *k = NULL, *v = NULL;

		if (!eq)
			return e2b_fail(r, 400, "invalid key value pair in query");
		*eq = '\0';
		k = unescape(pair);
		v = unescape(eq + 1);
		if (!k || !v)
			return bad(r, "metadata");
		json_object_set_new(f->meta, k, json_string(v));
	}
	return 0;
}

static int parse_states(struct aj_srv_req *r, struct filter *f, const char *q)
{
	char buf[128], *save = NULL, *s;

	if (!q) {
		f->running = f->paused = true;
		return 0;
	}
	snprintf(buf, sizeof buf, "%s", q);
	for (s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (!strcmp(s, "running"))
			f->running = true;
		else if (!strcmp(s, "paused"))
			f->paused = true;
		else
			return bad(r, "state: expected running and/or paused");
	}
	return 0;
}

/* RFC 3339 as Date.toISOString() writes it: 2026-11-29T11:23:13.984Z. */
static int parse_time(const char *s, int64_t *ms)
{
	struct tm tm;
	const char *rest;
	int frac = 0, digits = 0;

	memset(&tm, 0, sizeof tm);
	rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -1;
	if (*rest == '.')
		for (rest++; *rest >= '0' && *rest <= '9'; rest++, digits++)
			if (digits < 3)
				frac = frac * 10 + (*rest - '0');
	while (digits > 0 && digits < 3)
		frac *= 10, digits++;
	if (strcmp(rest, "Z"))
		return -1;
	*ms = (int64_t)timegm(&tm) * 1000 + frac;
	return 0;
}

static int parse_cursor(struct filter *f, const char *t)
{
	char id[33];
	long long started;
	int end = 0;

	if (sscanf(t, "%lld-%32[0-9a-f]%n", &started, id, &end) != 2 || t[end] || !e2b_id_ok(id))
		return -1;
	f->have_cursor = true;
	f->cur_started = started;
	snprintf(f->cur_id, sizeof f->cur_id, "%s", id);
	return 0;
}

static int list_prepare_(struct aj_srv_req *r, struct filter *f)
{
	const char *order = aj_srv_query(r, "order"), *after = aj_srv_query(r, "startedAfter");
	const char *tok = aj_srv_query(r, "nextToken"), *meta = aj_srv_query(r, "metadata");
	int64_t limit = PAGE_MAX;

	if (aj_srv_query_int(r, "limit", 1, PAGE_MAX, &limit) < 0)
		return e2b_fail(r, 400, "limit must be between 1 and %d", PAGE_MAX);
	f->limit = limit;
	if (order && strcmp(order, "asc") && strcmp(order, "desc"))
		return bad(r, "order: expected asc or desc");
	f->asc = order && !strcmp(order, "asc");
	if (after && parse_time(after, &f->started_after) < 0)
		return bad(r, "startedAfter: expected an RFC 3339 time");
	if (tok && tok[0] && parse_cursor(f, tok) < 0)
		return bad(r, "nextToken");
	f->tmpl = aj_srv_query(r, "template");
	if (meta && parse_metadata(r, f, meta) < 0)
		return -1;
	return parse_states(r, f, aj_srv_query(r, "state"));
}

static struct filter *list_prepare(struct aj_srv_req *r)
{
	struct filter *f = aj_xcalloc(1, sizeof *f);

	e2b_of(r)->x = f;
	e2b_of(r)->x_free = filter_free;
	return list_prepare_(r, f) < 0 ? NULL : f;
}

/* ---- matching and order --------------------------------------------------------------------- */

static bool matches(const struct filter *f, const struct aj_sandbox_rec *rec)
{
	bool paused = rec->state == AJ_ST_PAUSED;
	json_t *meta, *v;
	const char *k;
	bool ok = true;

	if (!(paused ? f->paused : f->running) || rec->started_ms < f->started_after)
		return false;
	if (f->tmpl && strcmp(f->tmpl, e2b_label(rec, E2B_LABEL_TEMPLATE)))
		return false;
	if (!f->meta || json_object_size(f->meta) == 0)
		return true;
	meta = e2b_metadata_json(rec);
	json_object_foreach(f->meta, k, v) ok = ok && json_equal(json_object_get(meta, k), v);
	json_decref(meta);
	return ok;
}

static int cmp_key(int64_t sa, const char *ia, int64_t sb, const char *ib)
{
	return sa != sb ? (sa < sb ? -1 : 1) : strcmp(ia, ib);
}

/* qsort takes no argument: the order of the worker thread's current sort. */
static __thread bool t_asc;

static int cmp_recs(const void *a, const void *b)
{
	const struct aj_sandbox_rec *x = *(const struct aj_sandbox_rec *const *)a;
	const struct aj_sandbox_rec *y = *(const struct aj_sandbox_rec *const *)b;
	int c = cmp_key(x->started_ms, x->id, y->started_ms, y->id);

	return t_asc ? c : -c;
}

/* ---- the work ------------------------------------------------------------------------------- */

/* The matching live sandboxes, in order; stopped E2B ones are removed on the way. */
static size_t collect(struct aj_mgr *m, const struct filter *f, struct aj_sandbox_rec *v,
		      size_t n, const struct aj_sandbox_rec **out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!e2b_is_ours(&v[i]))
			continue;
		if (v[i].state == AJ_ST_STOPPED)
			aj_mgr_remove(m, v[i].id, true, NULL);
		else if ((v[i].state == AJ_ST_RUNNING || v[i].state == AJ_ST_PAUSED) &&
			 matches(f, &v[i]))
			out[k++] = &v[i];
	}
	t_asc = f->asc;
	qsort(out, k, sizeof *out, cmp_recs);
	return k;
}

static void list(struct aj_srv_req *r, struct aj_mgr *m, struct filter *f, bool paged)
{
	struct aj_sandbox_rec *v = NULL;
	_cleanup_free_ const struct aj_sandbox_rec **sel = NULL;
	struct aj_err err;
	size_t n = 0, k, i = 0;
	json_t *a;

	if (aj_mgr_list(m, NULL, &v, &n, &err) < 0) {
		e2b_fail(r, 500, "%s", err.msg);
		return;
	}
	sel = aj_xcalloc(n + 1, sizeof *sel);
	a = json_array();
	k = collect(m, f, v, n, sel);
	/* Past the cursor: the first sandbox that sorts after the last one of the page before. */
	while (f->have_cursor && i < k &&
	       (f->asc ? 1 : -1) * cmp_key(sel[i]->started_ms, sel[i]->id, f->cur_started,
					   f->cur_id) <= 0)
		i++;
	for (size_t taken = 0; i < k && (!paged || taken < (size_t)f->limit); i++, taken++)
		json_array_append_new(a, e2b_detail_json(e2b_of(r)->e2b, sel[i], false));
	if (paged && i < k && i > 0)
		snprintf(e2b_of(r)->next_token, sizeof e2b_of(r)->next_token, "%lld-%s",
			 (long long)sel[i - 1]->started_ms, sel[i - 1]->id);
	aj_srv_ok(r, 200, a);
	aj_sandbox_recs_free(v, n);
}

void e2b_list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct filter *f = list_prepare(r);

	if (f)
		list(r, m, f, true);
}

void e2b_list_v1_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct filter *f = list_prepare(r);

	if (!f)
		return;
	if (!aj_srv_query(r, "state"))
		f->paused = false; /* v1 lists running sandboxes */
	list(r, m, f, false);
}
