#include "mcp/jsonrpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

#define READ_CHUNK 65536

void aj_rpc_reader_init(struct aj_rpc_reader *r, int fd, size_t max_line)
{
	memset(r, 0, sizeof *r);
	r->fd = fd;
	r->max_line = max_line;
}

void aj_rpc_reader_free(struct aj_rpc_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->start = r->len = r->cap = r->scanned = 0;
}

/* Room for one more chunk after the unconsumed bytes, moved to the front. The buffer never
 * holds more than max_line bytes of one line: aj_rpc_reader_next drops longer ones. */
static void make_room(struct aj_rpc_reader *r)
{
	size_t want;

	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->start = 0;
	}
	if (r->cap - r->len >= READ_CHUNK)
		return;
	want = r->cap ? r->cap * 2 : 4 * READ_CHUNK;
	while (want - r->len < READ_CHUNK)
		want *= 2;
	r->buf = aj_xrealloc(r->buf, want + 1);
	r->cap = want;
}

int aj_rpc_reader_fill(struct aj_rpc_reader *r)
{
	ssize_t n;

	if (r->eof)
		return 0;
	make_room(r);
	do
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0)
		r->eof = true;
	r->len += (size_t)n;
	return 0;
}

static char *take_line(struct aj_rpc_reader *r, char *nl, size_t *len)
{
	char *line = r->buf + r->start;

	*nl = '\0';
	*len = (size_t)(nl - line);
	if (*len && line[*len - 1] == '\r')
		line[--*len] = '\0';
	r->start = (size_t)(nl - r->buf) + 1;
	r->scanned = 0;
	return line;
}

enum aj_rpc_next aj_rpc_reader_next(struct aj_rpc_reader *r, char **line, size_t *len)
{
	if (!r->buf) /* nothing read yet */
		return AJ_RPC_NONE;
	for (;;) {
		size_t avail = r->len - r->start;
		char *nl = memchr(r->buf + r->start + r->scanned, '\n', avail - r->scanned);

		if (nl && r->skipping) { /* the end of a line already reported too long */
			r->start = (size_t)(nl - r->buf) + 1;
			r->scanned = 0;
			r->skipping = false;
			continue;
		}
		if (nl && (size_t)(nl - (r->buf + r->start)) > r->max_line) {
			/* Too long, though it arrived whole within one read. */
			r->start = (size_t)(nl - r->buf) + 1;
			r->scanned = 0;
			return AJ_RPC_TOO_LONG;
		}
		if (nl) {
			*line = take_line(r, nl, len);
			return AJ_RPC_LINE;
		}
		if (r->skipping || avail > r->max_line) {
			bool first = !r->skipping;
			r->start = r->len = r->scanned = 0;
			r->skipping = !r->eof;
			if (first)
				return AJ_RPC_TOO_LONG;
			return AJ_RPC_NONE;
		}
		r->scanned = avail;
		if (r->eof && avail) { /* an unterminated last line */
			r->buf[r->len] = '\0';
			*line = take_line(r, r->buf + r->len, len);
			r->len = r->start = 0;
			return AJ_RPC_LINE;
		}
		return AJ_RPC_NONE;
	}
}

void aj_rpc_reader_peek(struct aj_rpc_reader *r,
			void (*fn)(void *arg, const char *line, size_t len), void *arg)
{
	const char *p = r->buf ? r->buf + r->start : NULL, *end = r->buf ? r->buf + r->len : NULL;
	const char *nl;

	if (r->skipping)
		return; /* the bytes buffered are the tail of a dropped line */
	while (p && p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		fn(arg, p, (size_t)(nl - p));
		p = nl + 1;
	}
}

/* ---- messages ---------------------------------------------------------------------------- */

static bool id_ok(json_t *id)
{
	/* MCP narrows JSON-RPC: a request id is a string or a number, never null. */
	return json_is_string(id) || json_is_integer(id) || json_is_real(id);
}

static int bad(enum aj_rpc_code *code, enum aj_rpc_code c, char *why, size_t why_len,
	       const char *text)
{
	*code = c;
	snprintf(why, why_len, "%s", text);
	return -1;
}

int aj_rpc_classify(json_t *m, struct aj_rpc_msg *out, enum aj_rpc_code *code, char *why,
		    size_t why_len, json_t **id)
{
	json_t *v = json_object_get(m, "jsonrpc"), *method;

	memset(out, 0, sizeof *out);
	*id = NULL;
	if (json_is_array(m))
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len,
			   "batches are not supported: MCP removed JSON-RPC batching in revision "
			   "2025-06-18; send one message per line");
	if (!json_is_object(m))
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len,
			   "a message must be a JSON object");
	out->id = json_object_get(m, "id");
	*id = id_ok(out->id) ? out->id : NULL;
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len,
			   "\"jsonrpc\" must be \"2.0\"");
	method = json_object_get(m, "method");
	if (!method) {
		if (json_object_get(m, "result") || json_object_get(m, "error")) {
			out->kind = AJ_RPC_RESPONSE;
			return 0;
		}
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len,
			   "missing \"method\" (a request needs a method name)");
	}
	if (!json_is_string(method))
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len, "\"method\" must be a string");
	out->method = json_string_value(method);
	out->params = json_object_get(m, "params");
	out->kind = out->id ? AJ_RPC_REQUEST : AJ_RPC_NOTIFICATION;
	if (out->id && !id_ok(out->id))
		return bad(code, AJ_RPC_INVALID_REQUEST, why, why_len,
			   "\"id\" must be a string or a number (not null)");
	if (out->kind == AJ_RPC_REQUEST && out->params && !json_is_object(out->params))
		return bad(code, json_is_array(out->params) ? AJ_RPC_INVALID_PARAMS
							     : AJ_RPC_INVALID_REQUEST,
			   why, why_len, "\"params\" must be an object");
	return 0;
}

json_t *aj_rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
			 result ? result : json_object());
}

json_t *aj_rpc_error(json_t *id, enum aj_rpc_code code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);

	if (e && data)
		json_object_set_new(e, "data", data);
	else
		json_decref(data);
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
			 e ? e : json_object());
}

int aj_rpc_send(int fd, json_t *msg)
{
	/* Compact output has no raw newlines (they are escaped inside strings): one line. */
	_cleanup_free_ char *text =
		msg ? json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	size_t n;

	json_decref(msg);
	if (!text) { /* a message that could not be made */
		errno = ENOMEM;
		return -1;
	}
	n = strlen(text);
	text[n] = '\n'; /* overwrites the NUL; the length is known */
	return aj_write_all(fd, text, n + 1);
}
