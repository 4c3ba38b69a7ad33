/* read_file, write_file, edit_file: files inside the sandbox through control/fsops.h. The
 * sandbox's init opens every path, as the sandbox user, under its mount tree and Landlock
 * rules, so these tools reach exactly what the shell tool reaches: a symlink made inside to a
 * host path resolves to the sandbox's own view of that path. (list_dir is tool_dir.c.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "control/fsops.h"
#include "mcp/internal.h"

#define READ_OUTPUT_CAP (256 * 1024) /* bytes of text one read_file call returns */
#define READ_SCAN_MAX (256ull << 20) /* bytes read to find the requested lines */
#define EDIT_MAX (32u << 20)         /* largest file edit_file rewrites */
#define BINARY_PROBE 8192

/* Resolves the "path" argument and connects. On failure *res is the error result, NULL if
 * even that could not be built: a NULL result must not read as success, or the tool would
 * go on with an unset path and descriptor. */
static int prepare(struct aj_mcp_call *c, json_t *args, const char *tool, char *path, size_t len,
		   int *ctl, json_t **res)
{
	struct aj_err err;
	char why[600];

	if (aj_mcp_path(&c->srv->sb, aj_mcp_arg_str(args, "path"), "path", path, len, why,
			sizeof why) < 0) {
		*res = aj_mcp_result_error("%s", why);
		return -1;
	}
	*ctl = aj_mcp_ctl(&c->srv->sb, &err);
	if (*ctl < 0) {
		char ctx[64];
		snprintf(ctx, sizeof ctx, "%s: the sandbox is not available", tool);
		*res = aj_mcp_result_err(&err, ctx);
		return -1;
	}
	return 0;
}

static json_t *fs_error(const struct aj_err *err, const char *tool, const char *path)
{
	const char *what = err->errnum == ENOENT   ? "no such file or directory"
			 : err->errnum == EACCES   ? "permission denied inside the sandbox"
			 : err->errnum == EISDIR   ? "is a directory (list_dir shows its entries)"
			 : err->errnum == ENOTDIR  ? "a component of the path is not a directory"
			 : err->errnum == ELOOP    ? "too many levels of symbolic links"
			 : err->errnum == EAGAIN   ? "the sandbox is paused"
			 : err->errnum == EFBIG    ? "the file is too large for this tool"
			 : err->errnum == EROFS    ? "read-only file system"
			 : err->errnum == ENOSPC   ? "no space left"
			 : err->errnum == EDQUOT   ? "disk quota exceeded"
			 : NULL;
	char ctx[4300];

	if (what)
		return aj_mcp_result_error("%s %s: %s", tool, path, what);
	snprintf(ctx, sizeof ctx, "%s %s", tool, path);
	return aj_mcp_result_err(err, ctx);
}

/* ---- read_file ---------------------------------------------------------------------------- */

static const struct aj_jf_field read_params[] = {
	AJ_MCP_STRING("path", AJ_JF_REQUIRED,
	 "File to read: absolute, or relative to the sandbox's working directory."),
	AJ_MCP_INT("offset", 0, 1, 1000000000, 1,
	 "Line number to start at (1 is the first line)."),
	AJ_MCP_INT("limit", 0, 1, 100000, 2000, "Largest number of lines to return."),
	AJ_MCP_PARAMS_END,
};

struct reader {
	struct aj_fs_file f;
	long long first, last; /* the wanted lines, 1-based, inclusive */
	long long line;        /* the line the next byte belongs to */
	char *out;
	size_t len;
	uint64_t scanned;
	bool cut, more, binary, too_far;
};

/* The reader's descriptor and buffer, at the end of the read's scope. */
static void reader_release(struct reader *r)
{
	aj_fs_file_release(&r->f);
	free(r->out);
}

/* Keeps the bytes of the wanted lines from one chunk; stops at the line after the last. */
static void take_chunk(struct reader *r, const char *buf, size_t n)
{
	for (size_t i = 0; i < n && !r->more; i++) {
		if (r->line > r->last) {
			r->more = true;
			break;
		}
		if (r->line >= r->first) {
			if (r->len >= READ_OUTPUT_CAP) {
				r->cut = r->more = true;
				break;
			}
			r->out[r->len++] = buf[i];
		}
		if (buf[i] == '\n')
			r->line++;
	}
}

static int read_lines(struct reader *r, struct aj_err *err)
{
	char buf[65536];

	r->out = aj_xmalloc(READ_OUTPUT_CAP + 1);
	while (!r->more) {
		ssize_t n = aj_fs_file_read(&r->f, buf, sizeof buf, err);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		/* A NUL byte early on: not text a model can read or edit back. */
		if (r->scanned < BINARY_PROBE &&
		    memchr(buf, '\0', (size_t)n < BINARY_PROBE - r->scanned ? (size_t)n
									       : BINARY_PROBE - r->scanned)) {
			r->binary = true;
			return 0;
		}
		r->scanned += (uint64_t)n;
		take_chunk(r, buf, (size_t)n);
		if (!r->more && r->scanned >= READ_SCAN_MAX) {
			r->too_far = true;
			return 0;
		}
	}
	r->out[r->len] = '\0';
	return 0;
}

static json_t *read_result(const struct reader *r, const char *path, const struct stat *st)
{
	long long shown_last = r->line - (r->len && r->out[r->len - 1] == '\n' ? 1 : 0);
	json_t *res = aj_mcp_result_text("", NULL), *content = json_object_get(res, "content");
	char note[512];

	json_object_set_new(json_array_get(content, 0), "text", aj_mcp_text(r->out, r->len));
	if (r->cut)
		snprintf(note, sizeof note, "[%s: output cut at %d KiB inside line %lld; read on with "
					    "offset=%lld, or use the shell tool (head -c, cut)]",
			 path, READ_OUTPUT_CAP / 1024, r->line, r->line);
	else if (r->more)
		snprintf(note, sizeof note, "[%s: lines %lld-%lld shown; more follow: read on with "
					    "offset=%lld]",
			 path, r->first, shown_last, shown_last + 1);
	else if (r->first > 1 && r->len == 0)
		snprintf(note, sizeof note, "[%s: the file has fewer than %lld lines (%lld bytes)]",
			 path, r->first, (long long)st->st_size);
	else if (r->len == 0)
		snprintf(note, sizeof note, "[%s: the file is empty]", path);
	else
		note[0] = '\0';
	if (note[0])
		json_array_append_new(content, json_pack("{s:s, s:o}", "type", "text", "text",
							 aj_mcp_text(note, strlen(note))));
	return res;
}

static json_t *run_read(struct aj_mcp_call *c, json_t *args)
{
	char path[4200];
	struct aj_err err;
	const struct stat *st;
	__attribute__((cleanup(reader_release))) struct reader r = {.f = AJ_FS_FILE_INIT, .line = 1};
	json_t *res;
	int ctl;

	if (prepare(c, args, "read_file", path, sizeof path, &ctl, &res) < 0)
		return res;
	r.first = aj_mcp_arg_int(&aj_mcp_tool_read_file, args, "offset");
	r.last = r.first + aj_mcp_arg_int(&aj_mcp_tool_read_file, args, "limit") - 1;
	if (aj_fs_file_open(ctl, path, AJ_FS_READ, 0, &r.f, &err) < 0)
		return fs_error(&err, "read_file", path);
	st = &r.f.st;
	if (S_ISDIR(st->st_mode)) {
		res = aj_mcp_result_error("read_file %s: is a directory (list_dir shows its entries)",
					  path);
	} else if (!S_ISREG(st->st_mode)) {
		res = aj_mcp_result_error("read_file %s: not a regular file", path);
	} else if (read_lines(&r, &err) < 0) {
		res = fs_error(&err, "read_file", path);
	} else if (r.binary) {
		res = aj_mcp_result_error("read_file %s: a binary file (%lld bytes); the shell tool "
					  "can inspect it (file, od -c, xxd)",
					  path, (long long)st->st_size);
	} else if (r.too_far) {
		res = aj_mcp_result_error("read_file %s: line %lld is beyond the first %llu MiB; use "
					  "the shell tool (sed -n, grep -n, tail)",
					  path, r.first, READ_SCAN_MAX >> 20);
	} else {
		res = read_result(&r, path, st);
	}
	return res;
}

const struct aj_mcp_tool aj_mcp_tool_read_file = {
	.name = "read_file",
	.title = "Read a text file in the sandbox",
	.description =
		"Returns a text file's content exactly (the first 2000 lines unless offset/limit "
		"say otherwise; at most 256 KiB per call). A note after the content says when more "
		"lines follow. Binary files are refused: use the shell tool for them.",
	.params = read_params,
	.read_only = true,
	.idempotent = true,
	.run = run_read,
};

/* ---- write_file ---------------------------------------------------------------------------- */

static const struct aj_jf_field write_params[] = {
	AJ_MCP_STRING("path", AJ_JF_REQUIRED,
	 "File to write: absolute, or relative to the sandbox's working directory. Missing "
	 "parent directories are created."),
	AJ_MCP_STRING("content", AJ_JF_REQUIRED,
	 "The file's whole new content (an existing file is replaced)."),
	AJ_MCP_PARAMS_END,
};

static json_t *run_write(struct aj_mcp_call *c, json_t *args)
{
	json_t *content = json_object_get(args, "content"), *res;
	size_t len = json_string_length(content);
	char path[4200], msg[4400];
	struct aj_err err;
	int ctl;

	if (prepare(c, args, "write_file", path, sizeof path, &ctl, &res) < 0)
		return res;
	if (aj_fs_write(ctl, path, json_string_value(content), len, AJ_FS_WRITE, 0644, true,
			&err) < 0)
		return fs_error(&err, "write_file", path);
	snprintf(msg, sizeof msg, "Wrote %zu bytes to %s", len, path);
	return aj_mcp_result_text(msg, NULL);
}

const struct aj_mcp_tool aj_mcp_tool_write_file = {
	.name = "write_file",
	.title = "Write a file in the sandbox",
	.description = "Creates a file, or replaces an existing file's whole content, with the "
		       "given text. Creates missing parent directories. To change part of a "
		       "file, edit_file is safer.",
	.params = write_params,
	.destructive = true,
	.idempotent = true,
	.run = run_write,
};

/* ---- edit_file ----------------------------------------------------------------------------- */

static const struct aj_jf_field edit_params[] = {
	AJ_MCP_STRING("path", AJ_JF_REQUIRED,
	 "File to change: absolute, or relative to the sandbox's working directory."),
	AJ_MCP_STRING("old_string", AJ_JF_REQUIRED,
	 "Exact text to replace, including whitespace and indentation. It must occur exactly once "
	 "unless replace_all is true: include enough surrounding lines to make it unique."),
	AJ_MCP_STRING("new_string", AJ_JF_REQUIRED, "The text to put in its place."),
	AJ_MCP_BOOL("replace_all", 0, "Replace every occurrence of old_string."),
	AJ_MCP_PARAMS_END,
};

static size_t count_occurrences(const char *data, size_t len, const char *pat, size_t plen)
{
	size_t n = 0;

	for (const char *p = data; (p = memmem(p, len - (size_t)(p - data), pat, plen)); p += plen)
		n++;
	return n;
}

static char *replace(const char *data, size_t len, const char *old, size_t olen,
		     const char *new, size_t nlen, bool all, size_t *out_len)
{
	size_t n = all ? count_occurrences(data, len, old, olen) : 1, o = 0;
	char *out = aj_xmalloc(len - n * olen + n * nlen + 1);
	const char *p = data, *hit;

	while ((hit = memmem(p, len - (size_t)(p - data), old, olen)) && n--) {
		memcpy(out + o, p, (size_t)(hit - p));
		o += (size_t)(hit - p);
		memcpy(out + o, new, nlen);
		o += nlen;
		p = hit + olen;
	}
	memcpy(out + o, p, len - (size_t)(p - data));
	o += len - (size_t)(p - data);
	out[o] = '\0';
	*out_len = o;
	return out;
}

static json_t *edit_checks(const char *path, const char *data, size_t len, json_t *old,
			   json_t *new, bool all, size_t *count)
{
	size_t olen = json_string_length(old);

	if (memchr(data, '\0', len))
		return aj_mcp_result_error("edit_file %s: a binary file; not edited", path);
	if (olen == 0)
		return aj_mcp_result_error("edit_file %s: old_string is empty; write_file creates or "
					   "replaces a whole file", path);
	if (json_equal(old, new))
		return aj_mcp_result_error("edit_file %s: old_string and new_string are the same; "
					   "nothing to change", path);
	*count = count_occurrences(data, len, json_string_value(old), olen);
	if (*count == 0)
		return aj_mcp_result_error("edit_file %s: old_string was not found. It must match the "
					   "file exactly, including whitespace and indentation; "
					   "read_file shows the current content.", path);
	if (*count > 1 && !all)
		return aj_mcp_result_error("edit_file %s: old_string occurs %zu times; include more "
					   "surrounding text to make it unique, or set replace_all "
					   "to replace every occurrence.", path, *count);
	return NULL;
}

static json_t *run_edit(struct aj_mcp_call *c, json_t *args)
{
	json_t *old = json_object_get(args, "old_string"), *new = json_object_get(args, "new_string");
	bool all = aj_mcp_arg_bool(args, "replace_all");
	_cleanup_free_ char *data = NULL, *out = NULL;
	char path[4200], msg[4400];
	size_t len = 0, count = 0, out_len = 0;
	struct aj_err err;
	json_t *res;
	int ctl;

	if (prepare(c, args, "edit_file", path, sizeof path, &ctl, &res) < 0)
		return res;
	if (aj_fs_read(ctl, path, EDIT_MAX, &data, &len, &err) < 0)
		return fs_error(&err, "edit_file", path);
	if ((res = edit_checks(path, data, len, old, new, all, &count)))
		return res;
	out = replace(data, len, json_string_value(old), json_string_length(old),
		      json_string_value(new), json_string_length(new), all, &out_len);
	if (aj_fs_write(ctl, path, out, out_len, AJ_FS_WRITE, 0644, false, &err) < 0)
		return fs_error(&err, "edit_file", path);
	snprintf(msg, sizeof msg, "Replaced %zu occurrence%s in %s", count, count == 1 ? "" : "s",
		 path);
	return aj_mcp_result_text(msg, NULL);
}

const struct aj_mcp_tool aj_mcp_tool_edit_file = {
	.name = "edit_file",
	.title = "Edit a file in the sandbox by exact string replacement",
	.description =
		"Replaces old_string with new_string in a text file. old_string must match the "
		"file's text exactly and occur exactly once, unless replace_all is true; otherwise "
		"nothing is changed and the result says why. Read the file first so the match is "
		"exact.",
	.params = edit_params,
	.destructive = true,
	.idempotent = false,
	.run = run_edit,
};
