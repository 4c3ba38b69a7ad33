/* The MCP server's pure parts: line framing with its length bound, JSON-RPC message shapes,
 * tool argument checks and the UTF-8 repair of tool output. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "mcp/internal.h"
#include "mcp/jsonrpc.h"
#include "unit.h"

/* A reader over the bytes `data` (in a temporary file: a pipe could not hold them all). */
static void feed(struct aj_rpc_reader *r, const char *data, size_t len, size_t max_line)
{
	FILE *f = tmpfile();
	int fd;

	if (!f || fwrite(data, 1, len, f) != len || fflush(f) != 0)
		abort();
	fd = dup(fileno(f));
	fclose(f);
	if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	aj_rpc_reader_init(r, fd, max_line);
}

/* Reads all input; returns the lines joined by '|', "<TOO_LONG>" for dropped ones. */
static char *all_lines(struct aj_rpc_reader *r)
{
	static char out[4096];
	char *line;
	size_t len, o = 0;
	enum aj_rpc_next k;

	out[0] = '\0';
	for (;;) {
		while ((k = aj_rpc_reader_next(r, &line, &len)) != AJ_RPC_NONE)
			o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", o ? "|" : "",
					      k == AJ_RPC_TOO_LONG ? "<TOO_LONG>" : line);
		if (r->eof || aj_rpc_reader_fill(r) < 0)
			break;
	}
	close(r->fd);
	aj_rpc_reader_free(r);
	return out;
}

static void test_framing(void)
{
	struct aj_rpc_reader r;
	static char big[300000];

	feed(&r, "a\nbb\r\n\nccc", 10, 100);
	CHECK_STR(all_lines(&r), "a|bb||ccc", "lines split at \\n, \\r\\n stripped, last line without \\n kept");
	feed(&r, "0123456789abcdef-too-long\nok\n", 29, 16);
	CHECK_STR(all_lines(&r), "<TOO_LONG>|ok", "a line over the bound is reported once, the next one read");
	memset(big, 'x', sizeof big - 3);
	memcpy(big + sizeof big - 3, "\ny\n", 3);
	feed(&r, big, sizeof big, 1000);
	CHECK_STR(all_lines(&r), "<TOO_LONG>|y", "a long line across many reads is dropped, not buffered");
	CHECK(r.cap == 0, "the reader's buffer is released");
	feed(&r, "", 0, 100);
	CHECK_STR(all_lines(&r), "", "empty input: no lines");
}

static int npeek;

static void count_peek(void *arg, const char *line, size_t len)
{
	(void)arg;
	(void)line;
	npeek += len > 0;
}

static void test_peek(void)
{
	struct aj_rpc_reader r;
	char *line;
	size_t len;

	feed(&r, "one\ntwo\nthr", 11, 100);
	aj_rpc_reader_fill(&r);
	aj_rpc_reader_peek(&r, count_peek, NULL);
	CHECK(npeek == 2, "peek sees the two complete lines");
	CHECK(aj_rpc_reader_next(&r, &line, &len) == AJ_RPC_LINE && !strcmp(line, "one"),
	      "peeking consumed nothing");
	close(r.fd);
	aj_rpc_reader_free(&r);
}

static int classify(const char *text, struct aj_rpc_msg *m, enum aj_rpc_code *code)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL), *id;
	char why[256];
	int rc = aj_rpc_classify(j, m, code, why, sizeof why, &id);

	json_decref(j); /* the borrowed fields are not used after this */
	return rc;
}

static void test_classify(void)
{
	struct aj_rpc_msg m;
	enum aj_rpc_code code = 0;

	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &m, &code) == 0 &&
		      m.kind == AJ_RPC_REQUEST,
	      "a request");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":5}", &m, &code) == 0 &&
		      m.kind == AJ_RPC_NOTIFICATION,
	      "a notification, even with bad params (never answered)");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", &m, &code) == 0 &&
		      m.kind == AJ_RPC_RESPONSE,
	      "a response");
	CHECK(classify("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", &m, &code) < 0 &&
		      code == AJ_RPC_INVALID_REQUEST,
	      "a batch: -32600");
	CHECK(classify("{\"id\":1,\"method\":\"ping\"}", &m, &code) < 0 && code == -32600,
	      "no jsonrpc: -32600");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &m, &code) < 0 &&
		      code == -32600,
	      "id null: -32600");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[]}", &m, &code) < 0 &&
		      code == AJ_RPC_INVALID_PARAMS,
	      "params an array: -32602");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"s\"}", &m, &code) < 0 &&
		      code == AJ_RPC_INVALID_REQUEST,
	      "params a string: -32600");
	CHECK(classify("{\"jsonrpc\":\"2.0\",\"id\":1}", &m, &code) < 0 && code == -32600,
	      "no method: -32600");
	CHECK(classify("7", &m, &code) < 0 && code == -32600, "a number: -32600");
}

static int args_ok(const char *text, char *why, size_t len)
{
	json_t *a = json_loads(text, 0, NULL);
	int rc = aj_mcp_check_args(&aj_mcp_tool_shell, a, why, len);

	json_decref(a);
	return rc;
}

static void test_args(void)
{
	char why[600];

	CHECK(args_ok("{\"command\":\"ls\",\"timeout_seconds\":30.0}", why, sizeof why) == 0,
	      "valid arguments (30.0 is an integer)");
	CHECK(args_ok("{}", why, sizeof why) < 0, "a missing required argument");
	CHECK_CONTAINS(why, "arguments.command", "... is named");
	CHECK(args_ok("{\"command\":1}", why, sizeof why) < 0, "a wrong type");
	CHECK(args_ok("{\"command\":\"ls\",\"timeout_seconds\":1.5}", why, sizeof why) < 0,
	      "1.5 is not an integer");
	CHECK(args_ok("{\"command\":\"ls\",\"timeout_seconds\":1e300}", why, sizeof why) < 0,
	      "1e300 is out of range");
	CHECK_CONTAINS(why, "arguments.timeout_seconds", "... named with its range");
	CHECK(args_ok("{\"command\":\"ls\",\"extra\":true}", why, sizeof why) < 0,
	      "an unknown argument");
	CHECK_CONTAINS(why, "arguments.extra", "... is named");
}

static void test_text(void)
{
	json_t *t = aj_mcp_text("ok \xc3\xa9 \xff \xc0\xaf \xed\xa0\x80 \xf0\x9f\x98\x80", 19);

	CHECK_STR(json_string_value(t),
		  "ok \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
		  "\xf0\x9f\x98\x80",
		  "valid UTF-8 kept; a stray byte, an overlong form and a surrogate become U+FFFD");
	json_decref(t);
	t = aj_mcp_text("a\0b", 3);
	CHECK(json_string_length(t) == 3, "a NUL byte is kept (escaped in JSON)");
	json_decref(t);
}

int main(void)
{
	test_framing();
	test_peek();
	test_classify();
	test_args();
	test_text();
	UNIT_EXIT();
}
