/* The tool table: each tool's parameters are data (rows of common/jfields.h), from which both
 * the JSON Schema that tools/list shows and the checks tools/call applies are made by the one
 * engine, so the two cannot disagree. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

static const struct aj_mcp_tool *const tools[] = {
	&aj_mcp_tool_shell,	&aj_mcp_tool_read_file, &aj_mcp_tool_write_file,
	&aj_mcp_tool_edit_file, &aj_mcp_tool_list_dir,	&aj_mcp_tool_snapshot,
	&aj_mcp_tool_restore,
};

const struct aj_mcp_tool *aj_mcp_tool_find(const char *name)
{
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (!strcmp(tools[i]->name, name))
			return tools[i];
	return NULL;
}

static json_t *tool_json(const struct aj_mcp_tool *t)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name", t->name,
			      "title", t->title, "description", t->description, "inputSchema",
			      aj_jf_schema(t->params), "annotations", "title", t->title,
			      "readOnlyHint", t->read_only, "destructiveHint", t->destructive,
			      "idempotentHint", t->idempotent, "openWorldHint", 0);

	if (j && t->output_schema) {
		json_t *o = json_loads(t->output_schema, 0, NULL);
		if (!o) {
			json_decref(j);
			return NULL;
		}
		json_object_set_new(j, "outputSchema", o);
	}
	return j;
}

json_t *aj_mcp_tools_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < sizeof tools / sizeof tools[0]; i++) {
		json_t *t = tool_json(tools[i]);
		if (!t || json_array_append_new(a, t) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a ? json_pack("{s:o}", "tools", a) : NULL;
}

/* The engine's problem in the words MCP clients have always been given. */
int aj_mcp_check_args(const struct aj_mcp_tool *t, json_t *args, char *why, size_t why_len)
{
	static const char prefix[] = "arguments";
	struct aj_jf_opts o = {.layer = AJ_LAYER_USAGE, .prefix = prefix};
	struct aj_jf_error e;
	const struct aj_jf_field *p;

	if (aj_jf_read(t->params, args, NULL, &o, &e) == 0)
		return 0;
	p = e.field;
	switch (e.problem) {
	case AJ_JF_UNKNOWN:
		snprintf(why, why_len, "arguments.%.200s: %s takes no such argument",
			 e.path + sizeof prefix, t->name);
		break;
	case AJ_JF_MISSING:
		snprintf(why, why_len, "%s: missing (%s needs it)", e.path, t->name);
		break;
	case AJ_JF_TYPE:
	case AJ_JF_RANGE:
		if (p && p->type == AJ_JF_INT)
			snprintf(why, why_len, "%s: expected an integer from %lld to %lld", e.path,
				 p->min, p->max);
		else
			snprintf(why, why_len, "%s: expected %s", e.path,
				 p ? aj_jf_expect(p) : "an object");
		break;
	case AJ_JF_VALUE:
	case AJ_JF_NOMEM:
	case AJ_JF_NONE:
		snprintf(why, why_len, "%s", e.err.msg);
		break;
	}
	return -1;
}

const char *aj_mcp_arg_str(json_t *args, const char *name)
{
	return json_string_value(json_object_get(args, name));
}

long long aj_mcp_arg_int(const struct aj_mcp_tool *t, json_t *args, const char *name)
{
	json_t *v = json_object_get(args, name);
	const struct aj_jf_field *p = aj_jf_find(t->params, name);

	if (!v)
		return p ? p->dflt : 0;
	return (long long)json_number_value(v);
}

bool aj_mcp_arg_bool(json_t *args, const char *name)
{
	return json_is_true(json_object_get(args, name));
}

/* ---- results ------------------------------------------------------------------------------- */

json_t *aj_mcp_result_text(const char *text, json_t *structured)
{
	json_t *r = json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
			      aj_mcp_text(text, strlen(text)), "isError", 0);

	if (r && structured)
		json_object_set_new(r, "structuredContent", structured);
	else
		json_decref(structured);
	return r;
}

json_t *aj_mcp_result_error(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
			 aj_mcp_text(msg, strlen(msg)), "isError", 1);
}

json_t *aj_mcp_result_err(const struct aj_err *err, const char *context)
{
	char msg[sizeof err->msg + 128];

	aj_err_format(err, msg, sizeof msg);
	if (err->hint[0])
		return aj_mcp_result_error("%s: %s (%s)", context, msg, err->hint);
	return aj_mcp_result_error("%s: %s", context, msg);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates and code points past U+10FFFF are not text */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

json_t *aj_mcp_text(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out;
	size_t o = 0;
	json_t *j;

	if (n > SIZE_MAX / 3 - 1)
		return NULL;
	out = aj_xmalloc(n * 3 + 1);
	for (size_t i = 0; i < n;) {
		size_t l = utf8_len(u + i, n - i);
		if (l) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			static const unsigned char replacement[] = {0xef, 0xbf, 0xbd}; /* U+FFFD */
			memcpy(out + o, replacement, sizeof replacement); /* for each bad byte */
			o += sizeof replacement;
			i++;
		}
	}
	j = json_stringn(out, o);
	free(out);
	return j;
}
