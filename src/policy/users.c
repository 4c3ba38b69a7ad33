#include "policy/users.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"

/* Splits line (NUL-terminated, modified) at ':' into at most n fields. */
static size_t fields(char *line, char **f, size_t n)
{
	size_t k = 0;

	f[k++] = line;
	for (char *c = line; *c && k < n; c++)
		if (*c == ':') {
			*c = '\0';
			f[k++] = c + 1;
		}
	return k;
}

static bool parse_id(const char *s, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0';
}

/* Calls fn on each line of text split into up to n fields, until it returns true. */
static bool each_line(const char *text, size_t n, bool (*fn)(char **f, size_t k, void *arg),
		      void *arg)
{
	_cleanup_free_ char *copy = text ? aj_xstrdup(text) : NULL;
	char *save = NULL, *f[8];

	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#' && fn(f, fields(line, f, n), arg))
			return true;
	return false;
}

struct pw_query {
	const char *name;
	uint32_t uid;
	struct aj_user *u;
};

static bool pw_match(char **f, size_t k, void *arg)
{
	struct pw_query *q = arg;
	unsigned long uid, gid;

	if (k < 7 || !parse_id(f[2], &uid) || !parse_id(f[3], &gid) || uid > UINT32_MAX ||
	    gid > UINT32_MAX || (q->name ? strcmp(f[0], q->name) != 0 : uid != q->uid))
		return false;
	snprintf(q->u->name, sizeof q->u->name, "%s", f[0]);
	snprintf(q->u->home, sizeof q->u->home, "%s", f[5]);
	snprintf(q->u->shell, sizeof q->u->shell, "%s", f[6]);
	q->u->uid = (uint32_t)uid;
	q->u->gid = (uint32_t)gid;
	q->u->found = true;
	return true;
}

bool aj_passwd_find(const char *passwd, const char *name, uint32_t uid, struct aj_user *u)
{
	struct pw_query q = {name, uid, u};

	return each_line(passwd, 7, pw_match, &q);
}

struct gr_query {
	const char *name;
	uint32_t gid;
	unsigned long found;
};

static bool gr_match(char **f, size_t k, void *arg)
{
	struct gr_query *q = arg;
	unsigned long gid;

	if (k < 3 || !parse_id(f[2], &gid))
		return false;
	q->found = gid;
	return q->name ? strcmp(f[0], q->name) == 0 : gid == q->gid;
}

bool aj_group_has_gid(const char *group, uint32_t gid)
{
	struct gr_query q = {NULL, gid, 0};

	return each_line(group, 4, gr_match, &q);
}

static bool member_match(char **f, size_t k, void *arg)
{
	struct aj_user *u = arg;
	unsigned long gid;
	char *save = NULL;

	if (k < 4 || !parse_id(f[2], &gid) || gid > 65535 || gid == u->gid)
		return false;
	for (char *m = strtok_r(f[3], ",", &save); m; m = strtok_r(NULL, ",", &save))
		if (strcmp(m, u->name) == 0 && u->n_groups < AJ_USER_MAX_GROUPS) {
			u->groups[u->n_groups++] = (uint32_t)gid;
			break;
		}
	return false;
}

enum aj_user_result aj_user_resolve(const char *passwd, const char *group, const char *spec,
				    struct aj_user *u)
{
	_cleanup_free_ char *copy = aj_xstrdup(spec);
	char *colon = strchr(copy, ':');
	unsigned long uid = 0, gid = 0;

	memset(u, 0, sizeof *u);
	if (colon)
		*colon++ = '\0';
	if (parse_id(copy, &uid)) {
		if (uid > 65535)
			return AJ_USER_RANGE;
		if (!aj_passwd_find(passwd, NULL, (uint32_t)uid, u)) {
			u->uid = u->gid = (uint32_t)uid;
		}
	} else if (!aj_passwd_find(passwd, copy, 0, u)) {
		if (strcmp(copy, "root") != 0) {
			snprintf(u->name, sizeof u->name, "%s", copy);
			return AJ_USER_NO_USER;
		}
		snprintf(u->name, sizeof u->name, "root");
		snprintf(u->home, sizeof u->home, "/root");
		u->found = true;
	}
	if (colon) {
		struct gr_query q = {colon, 0, 0};
		if (parse_id(colon, &gid))
			u->gid = (uint32_t)(gid > 65535 ? 65536 : gid);
		else if (each_line(group, 4, gr_match, &q))
			u->gid = (uint32_t)(q.found > 65535 ? 65536 : q.found);
		else
			return AJ_USER_NO_GROUP;
	}
	if (u->uid > 65535 || u->gid > 65535)
		return AJ_USER_RANGE;
	if (u->found && u->name[0])
		each_line(group, 4, member_match, u);
	return AJ_USER_OK;
}

/* One side of a user spec: an id (0-65535) or a name as useradd allows it. */
static bool id_or_name(const char *v, size_t n)
{
	unsigned long id = 0;
	bool digits = n > 0, ok = n > 0 && n <= 32;

	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		digits = digits && c >= '0' && c <= '9';
		ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.');
		if (digits)
			id = id * 10 + (unsigned long)(c - '0');
	}
	return ok && (!digits || (n <= 5 && id <= 65535));
}

bool aj_user_spec_ok(const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t un = colon ? (size_t)(colon - spec) : strlen(spec);

	return id_or_name(spec, un) && (!colon || id_or_name(colon + 1, strlen(colon + 1)));
}
