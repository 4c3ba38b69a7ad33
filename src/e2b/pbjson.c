/* Protobuf JSON of envd's messages (docs/e2b-protocol.md 6.3, 8.1): EntryInfo with int64 as
 * a string, enums by name, RFC 3339 timestamps; the strings envd takes from Go (file modes,
 * process states), which E2B clients may show or compare; and the reading of requests'
 * messages and JSON bodies by the field-table engine, in E2B's words. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/cleanup.h"
#include "e2b/internal.h"

/* Go's os.FileMode.String(): type letters in Go's order, then rwx triples. */
void e2b_permissions(mode_t mode, char *out)
{
	static const char rwx[] = "rwxrwxrwx";
	size_t o = 0;

	if (S_ISDIR(mode))
		out[o++] = 'd';
	if (S_ISLNK(mode))
		out[o++] = 'L';
	if (S_ISBLK(mode) || S_ISCHR(mode))
		out[o++] = 'D';
	if (S_ISFIFO(mode))
		out[o++] = 'p';
	if (S_ISSOCK(mode))
		out[o++] = 'S';
	if (mode & S_ISUID)
		out[o++] = 'u';
	if (mode & S_ISGID)
		out[o++] = 'g';
	if (S_ISCHR(mode))
		out[o++] = 'c';
	if (mode & S_ISVTX)
		out[o++] = 't';
	if (o == 0)
		out[o++] = '-';
	for (int i = 0; i < 9; i++)
		out[o++] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[o] = '\0';
}

static const char *type_name(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return "FILE_TYPE_FILE";
	if (S_ISDIR(st->st_mode))
		return "FILE_TYPE_DIRECTORY";
	if (S_ISLNK(st->st_mode))
		return "FILE_TYPE_SYMLINK";
	return "FILE_TYPE_UNSPECIFIED";
}

/* The sandbox's /etc/passwd and /etc/group know root, the sandbox user and nobody. */
static json_t *id_name(unsigned id, const struct e2b_user *u, bool group)
{
	char buf[16];

	if (id == 0)
		return json_string("root");
	if (id == (group ? u->gid : u->uid))
		return json_string(u->name);
	if (id == 65534)
		return json_string(group ? "nogroup" : "nobody");
	snprintf(buf, sizeof buf, "%u", id);
	return json_string(buf);
}

static json_t *mtime_json(const struct stat *st)
{
	char buf[64];
	struct tm tm;
	time_t t = st->st_mtim.tv_sec;

	gmtime_r(&t, &tm);
	snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 st->st_mtim.tv_nsec / 1000);
	return json_string(buf);
}

json_t *e2b_entry_json(const char *path, const struct stat *st, const char *target,
		       const struct stat *tst, const struct e2b_user *u)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash && slash[1] ? slash + 1 : path;
	/* envd reports a symlink by what it points to, and where. */
	const struct stat *shown = S_ISLNK(st->st_mode) && tst ? tst : st;
	char perm[16], size[24];
	json_t *j;

	e2b_permissions(st->st_mode, perm);
	snprintf(size, sizeof size, "%lld", (long long)shown->st_size);
	j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:o, s:o, s:o}", "name", name, "type",
		      type_name(shown), "path", path, "size", size, "mode",
		      (int)(st->st_mode & 0777), "permissions", perm, "owner",
		      id_name(st->st_uid, u, false), "group", id_name(st->st_gid, u, true),
		      "modifiedTime", mtime_json(st));
	if (j && S_ISLNK(st->st_mode) && target)
		json_object_set_new(j, "symlinkTarget", json_string(target));
	return j;
}

void e2b_exit_status(bool signaled, int n, char *out, size_t len)
{
	/* Go's names of the signals (syscall's table), which envd's status strings use. */
	static const char *const names[] = {
		NULL,		 "hangup",	     "interrupt",
		"quit",		 "illegal instruction", "trace/breakpoint trap",
		"aborted",	 "bus error",	     "floating point exception",
		"killed",	 "user defined signal 1", "segmentation fault",
		"user defined signal 2", "broken pipe", "alarm clock",
		"terminated",
	};

	if (!signaled)
		snprintf(out, len, "exit status %d", n);
	else if (n > 0 && n < (int)(sizeof names / sizeof names[0]))
		snprintf(out, len, "signal: %s", names[n]);
	else
		snprintf(out, len, "signal: signal %d", n);
}

bool e2b_pb_uint(json_t *v, uint64_t max, uint64_t *out)
{
	const char *s = json_string_value(v);
	unsigned long long n;
	char *end;

	*out = 0;
	if (!v || json_is_null(v))
		return true;
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
			return false;
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (!s || !s[0] || strspn(s, "0123456789") != strlen(s))
		return false;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || n > max)
		return false;
	*out = n;
	return true;
}

int e2b_pb_uint_parse(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	uint64_t n;

	if (!e2b_pb_uint(v, (uint64_t)f->max, &n))
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "%s: %s", path,
				  f->refusal ? f->refusal : "expected an unsigned integer");
	if (dst)
		*(uint64_t *)dst = n;
	return 0;
}

struct pty_size {
	uint64_t rows, cols;
};

static const struct aj_jf_field pty_size_rows[] = {
	{.name = "rows", .type = AJ_JF_ANY, .off = offsetof(struct pty_size, rows), .max = 65535,
	 .parse = e2b_pb_uint_parse},
	{.name = "cols", .type = AJ_JF_ANY, .off = offsetof(struct pty_size, cols), .max = 65535,
	 .parse = e2b_pb_uint_parse},
	{.name = NULL},
};

bool e2b_pty_size(json_t *size, unsigned *rows, unsigned *cols)
{
	struct aj_jf_opts o = {AJ_LAYER_API, AJ_JF_IGNORE_UNKNOWN, NULL, NULL};
	struct pty_size sz = {0, 0};
	struct aj_jf_error e;

	*rows = *cols = 0;
	if (!size || json_is_null(size))
		return true;
	if (!json_is_object(size) || aj_jf_read(pty_size_rows, size, &sz, &o, &e) < 0)
		return false;
	*rows = (unsigned)sz.rows;
	*cols = (unsigned)sz.cols;
	return true;
}

/* ---- reading messages --------------------------------------------------------------------- */

int e2b_read_msg(struct aj_srv_req *r, const struct aj_jf_field *rows, void *base)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_jf_opts o = {AJ_LAYER_API, AJ_JF_IGNORE_UNKNOWN | AJ_JF_TABLE_ORDER, NULL, r};
	_cleanup_json_ json_t *none = x->msg ? NULL : json_object();
	struct aj_jf_error e;

	if (aj_jf_read(rows, x->msg ? x->msg : none, base, &o, &e) == 0)
		return 0;
	if (x->style == E2B_API)
		return e2b_fail(r, 400, "%s", e.err.msg);
	return e2b_rpc_fail(r, "invalid_argument", "%s", e.err.msg);
}

int e2b_keep_string(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	*(const char **)dst = json_string_value(v);
	return 0;
}

/* dst: the selector (both rows at offset 0). */
static int keep_pid(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct e2b_selector *sel = dst;

	if (json_is_integer(v)) {
		sel->have_pid = true;
		sel->pid = json_integer_value(v);
	}
	return 0;
}

static int keep_tag(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct e2b_selector *sel = dst;

	sel->tag = json_string_value(v);
	return 0;
}

static const struct aj_jf_field selector_rows[] = {
	{.name = "pid", .type = AJ_JF_ANY, .off = 0, .parse = keep_pid},
	{.name = "tag", .type = AJ_JF_ANY, .off = 0, .parse = keep_tag},
	{.name = NULL},
};

int e2b_read_selector(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_object(v))
		return 0;
	return aj_jf_read(selector_rows, v, dst, &(struct aj_jf_opts){o->layer, o->flags, path,
								      o->arg},
			  e);
}
