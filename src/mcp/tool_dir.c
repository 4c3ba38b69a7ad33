/* list_dir: a directory's entries inside the sandbox, through control/fsops.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "control/fsops.h"
#include "mcp/internal.h"

#define MAX_ENTRIES 2000

static const struct aj_jf_field params[] = {
	AJ_MCP_STRING("path", 0,
	 "Directory to list: absolute, or relative to the sandbox's working directory "
	 "(default: the working directory)."),
	AJ_MCP_PARAMS_END,
};

struct listing {
	json_t *entries; /* {name, type, size[, target]} */
	size_t total;
};

static int add_entry(void *arg, const struct aj_fs_entry *e)
{
	struct listing *l = arg;
	json_t *j;

	if (l->total++ >= MAX_ENTRIES)
		return 0; /* counted, not shown */
	j = json_pack("{s:o, s:s, s:I}", "name", aj_mcp_text(e->name, strlen(e->name)), "type",
		      aj_fs_type_name(e->st.st_mode), "size", (json_int_t)e->st.st_size);
	if (e->link)
		json_object_set_new(j, "target", aj_mcp_text(e->link, strlen(e->link)));
	json_array_append_new(l->entries, j);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

static void sort_entries(json_t *entries)
{
	size_t n = json_array_size(entries);
	_cleanup_free_ json_t **v = NULL;

	if (!n)
		return;
	v = aj_xmalloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(entries, i));
	qsort(v, n, sizeof *v, by_name);
	json_array_clear(entries);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(entries, v[i]);
}

/* One line per entry: type, size (files), name, a directory's slash, a link's target. */
static char *render(const char *path, const struct listing *l)
{
	size_t n = json_array_size(l->entries), cap = 256 + n * 64, len = 0;
	char *t = aj_xmalloc(cap);

	len += (size_t)snprintf(t, cap, "%s: %zu entr%s\n", path, l->total, l->total == 1 ? "y" : "ies");
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(l->entries, i);
		const char *type = json_string_value(json_object_get(e, "type"));
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *target = json_string_value(json_object_get(e, "target"));
		size_t need = strlen(name) + (target ? strlen(target) : 0) + 256;
		if (len + need >= cap) {
			cap = (len + need) * 2;
			t = aj_xrealloc(t, cap);
		}
		len += (size_t)snprintf(t + len, cap - len, "%-7s %10lld  %s%s%s%s\n", type,
					(long long)json_integer_value(json_object_get(e, "size")), name,
					!strcmp(type, "dir") ? "/" : "", target ? " -> " : "",
					target ? target : "");
	}
	if (l->total > n)
		snprintf(t + len, cap - len, "[%zu more entries not shown; the shell tool can filter "
					     "(ls | grep, find)]\n", l->total - n);
	return t;
}

static json_t *run_list(struct aj_mcp_call *c, json_t *args)
{
	const char *arg = aj_mcp_arg_str(args, "path");
	_cleanup_json_ json_t *entries = json_array();
	struct listing l = {.entries = entries};
	char path[4200], why[600];
	_cleanup_free_ char *text = NULL;
	struct aj_err err;
	int ctl;

	if (aj_mcp_path(&c->srv->sb, arg ? arg : ".", "path", path, sizeof path, why, sizeof why) < 0)
		return aj_mcp_result_error("%s", why);
	if ((ctl = aj_mcp_ctl(&c->srv->sb, &err)) < 0)
		return aj_mcp_result_err(&err, "list_dir: the sandbox is not available");
	aj_err_clear(&err);
	if (aj_fs_list(ctl, path, add_entry, &l, &err) != 0) {
		if (err.errnum == ENOENT)
			return aj_mcp_result_error("list_dir %s: no such directory", path);
		if (err.errnum == ENOTDIR)
			return aj_mcp_result_error("list_dir %s: not a directory (read_file reads files)",
						   path);
		return aj_mcp_result_err(&err, "list_dir");
	}
	sort_entries(entries);
	text = render(path, &l);
	return aj_mcp_result_text(text, json_pack("{s:s, s:O, s:I, s:b}", "path", path, "entries",
						  entries, "total", (json_int_t)l.total, "truncated",
						  l.total > MAX_ENTRIES));
}

const struct aj_mcp_tool aj_mcp_tool_list_dir = {
	.name = "list_dir",
	.title = "List a directory in the sandbox",
	.description = "Lists a directory's entries sorted by name: type (file, dir, symlink, ...), "
		       "size in bytes and name; a symlink shows its target. At most 2000 entries.",
	.params = params,
	.read_only = true,
	.idempotent = true,
	.run = run_list,
};
