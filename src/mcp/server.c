/* The MCP session: lifecycle (initialize, then operation), the methods a tools-only server
 * answers, and JSON-RPC errors. Implements protocol revision 2025-11-25 and accepts 2025-06-18
 * (the same messages for what this server does); batches, which 2025-06-18 removed, are
 * refused.
 *
 * One request is handled at a time. While a tool runs, what the client sends is read and kept
 * (aj_mcp_call_poll_input) so that a cancellation of that call, or the client going away, is
 * noticed without waiting for the tool. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mcp/internal.h"

#define LATEST_PROTOCOL "2025-11-25"
static const char *const protocols[] = {LATEST_PROTOCOL, "2025-06-18"};

static volatile sig_atomic_t terminate_sig;

static void on_term(int sig)
{
	terminate_sig = sig;
}

bool aj_mcp_terminating(void)
{
	return terminate_sig != 0;
}

/* What a method handler answers: a result, an error, or nothing (a cancelled call). */
struct answer {
	json_t *result;
	enum aj_rpc_code code;
	char message[1024];
	bool none;
};

static int fail(struct answer *a, enum aj_rpc_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct answer *a, enum aj_rpc_code code, const char *fmt, ...)
{
	va_list ap;

	a->code = code;
	va_start(ap, fmt);
	vsnprintf(a->message, sizeof a->message, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- methods ------------------------------------------------------------------------------ */

static const char *negotiate(const char *requested)
{
	for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
		if (!strcmp(requested, protocols[i]))
			return protocols[i];
	return LATEST_PROTOCOL; /* the client decides whether it can go on with ours */
}

static json_t *instructions(const struct aj_mcp_server *s)
{
	char text[4600];

	snprintf(text, sizeof text,
		 "Every tool acts inside the agentjail sandbox \"%s\": a Linux sandbox with its "
		 "own filesystem view, processes and (unless its policy allows) no network. "
		 "Relative paths start at %s, the sandbox's working directory. Files the shell "
		 "tool makes are visible to the file tools and the other way round. Take a "
		 "snapshot before risky changes; restore puts the workspace back.",
		 s->sb.name, s->sb.cwd);
	return json_string(text);
}

static int do_initialize(struct aj_mcp_server *s, json_t *params, json_t *id, struct answer *a)
{
	json_t *pv = json_object_get(params, "protocolVersion");
	json_t *caps = json_object_get(params, "capabilities");
	json_t *info = json_object_get(params, "clientInfo");

	(void)id;
	if (s->initialized)
		return fail(a, AJ_RPC_INVALID_REQUEST, "the session is already initialized");
	if (!json_is_string(pv))
		return fail(a, AJ_RPC_INVALID_PARAMS,
			    "params.protocolVersion: expected a string such as \"%s\"",
			    LATEST_PROTOCOL);
	if (caps && !json_is_object(caps))
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.capabilities: expected an object");
	if (info && !json_is_object(info))
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.clientInfo: expected an object");
	snprintf(s->protocol, sizeof s->protocol, "%s", negotiate(json_string_value(pv)));
	a->result = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:o}", "protocolVersion",
			      s->protocol, "capabilities", "tools", "listChanged", 0, "serverInfo",
			      "name", "agentjail", "title", "agentjail sandbox", "version",
			      s->version, "instructions", instructions(s));
	if (!a->result)
		return fail(a, AJ_RPC_INTERNAL_ERROR, "could not build the initialize result");
	s->initialized = true;
	fprintf(stderr, "agentjail mcp: %s %s connected (protocol %s), sandbox \"%s\"\n",
		json_string_value(json_object_get(info, "name")) ?: "a client",
		json_string_value(json_object_get(info, "version")) ?: "", s->protocol, s->sb.name);
	return 0;
}

static int do_ping(struct aj_mcp_server *s, json_t *params, json_t *id, struct answer *a)
{
	(void)s;
	(void)params;
	(void)id;
	a->result = json_object();
	return 0;
}

static int do_tools_list(struct aj_mcp_server *s, json_t *params, json_t *id, struct answer *a)
{
	json_t *cursor = json_object_get(params, "cursor");

	(void)s;
	(void)id;
	/* Every tool fits on one page: a cursor can only be one this server never gave. */
	if (cursor && !json_is_string(cursor))
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.cursor: expected a string");
	if (cursor)
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.cursor: unknown cursor \"%.200s\"",
			    json_string_value(cursor));
	a->result = aj_mcp_tools_list();
	return a->result ? 0 : fail(a, AJ_RPC_INTERNAL_ERROR, "could not build the tool list");
}

static int do_tools_call(struct aj_mcp_server *s, json_t *params, json_t *id, struct answer *a)
{
	json_t *name = json_object_get(params, "name"), *args = json_object_get(params, "arguments");
	json_t *meta = json_object_get(params, "_meta"), *empty = NULL;
	struct aj_mcp_call c = {.srv = s, .id = id};
	const struct aj_mcp_tool *t;
	char why[600];

	if (!json_is_string(name))
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.name: expected the tool's name (a "
						      "string)");
	if (args && !json_is_object(args))
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.arguments: expected an object");
	t = aj_mcp_tool_find(json_string_value(name));
	if (!t)
		return fail(a, AJ_RPC_INVALID_PARAMS, "params.name: unknown tool \"%.200s\" (tools/list "
						      "names the tools)", json_string_value(name));
	c.progress_token = json_object_get(meta, "progressToken");
	if (!json_is_string(c.progress_token) && !json_is_integer(c.progress_token))
		c.progress_token = NULL;
	/* Bad arguments are the model's to fix: a tool error it sees, not a protocol error
	 * (revision 2025-11-25, SEP-1303). */
	if (!args)
		args = empty = json_object(); /* no "arguments": the same as {} */
	if (aj_mcp_check_args(t, args, why, sizeof why) < 0)
		a->result = aj_mcp_result_error("%s", why);
	else
		a->result = t->run(&c, args);
	json_decref(empty);
	if (c.cancelled) {
		json_decref(a->result);
		a->result = NULL;
		a->none = true;
		return 0;
	}
	return a->result ? 0 : fail(a, AJ_RPC_INTERNAL_ERROR, "%s: the tool failed unexpectedly",
				    t->name);
}

struct method {
	const char *name;
	bool before_init; /* allowed before initialize */
	int (*fn)(struct aj_mcp_server *s, json_t *params, json_t *id, struct answer *a);
};

static const struct method methods[] = {
	{"initialize", true, do_initialize},
	{"ping", true, do_ping},
	{"tools/list", false, do_tools_list},
	{"tools/call", false, do_tools_call},
};

/* ---- messages ----------------------------------------------------------------------------- */

static int send_msg(struct aj_mcp_server *s, json_t *msg)
{
	if (aj_rpc_send(s->out_fd, msg) < 0) {
		fprintf(stderr, "agentjail mcp: cannot write to the client (%s)\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int answer_request(struct aj_mcp_server *s, const struct aj_rpc_msg *m)
{
	struct answer a = {0};
	const struct method *mt = NULL;

	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(methods[i].name, m->method))
			mt = &methods[i];
	if (!mt)
		fail(&a, AJ_RPC_METHOD_NOT_FOUND, "method not found: \"%.200s\"", m->method);
	else if (!s->initialized && !mt->before_init)
		fail(&a, AJ_RPC_INVALID_REQUEST, "the session is not initialized: send "
						 "\"initialize\" first");
	else
		mt->fn(s, m->params, m->id, &a);
	if (a.none)
		return 0;
	if (a.result)
		return send_msg(s, aj_rpc_result(m->id, a.result));
	return send_msg(s, aj_rpc_error(m->id, a.code, a.message, NULL));
}

static void take_notification(struct aj_mcp_server *s, const struct aj_rpc_msg *m)
{
	/* Never answered. A cancellation arriving here is for a call already answered. */
	if (!strcmp(m->method, "notifications/initialized"))
		s->client_ready = true;
}

static int handle_line(struct aj_mcp_server *s, const char *line, size_t len)
{
	json_error_t je;
	json_t *msg, *id = NULL;
	struct aj_rpc_msg m;
	char why[512];
	enum aj_rpc_code code;
	int rc = 0;

	if (strspn(line, " \t\r") == len)
		return 0;
	msg = json_loadb(line, len, JSON_DECODE_ANY, &je);
	if (!msg) {
		snprintf(why, sizeof why, "parse error: %s (at character %d)", je.text, je.position);
		return send_msg(s, aj_rpc_error(NULL, AJ_RPC_PARSE_ERROR, why, NULL));
	}
	if (aj_rpc_classify(msg, &m, &code, why, sizeof why, &id) < 0)
		rc = send_msg(s, aj_rpc_error(id, code, why, NULL));
	else if (m.kind == AJ_RPC_REQUEST)
		rc = answer_request(s, &m);
	else if (m.kind == AJ_RPC_NOTIFICATION)
		take_notification(s, &m);
	/* Responses: this server sends no requests, so there is nothing they could answer. */
	json_decref(msg);
	return rc;
}

/* Handles every complete line buffered. -1 when the client can no longer be written to. */
static int drain(struct aj_mcp_server *s)
{
	char *line;
	size_t len;
	enum aj_rpc_next k;

	while ((k = aj_rpc_reader_next(&s->in, &line, &len)) != AJ_RPC_NONE) {
		char why[160];
		int rc;
		if (k == AJ_RPC_TOO_LONG) {
			snprintf(why, sizeof why, "parse error: message longer than %u MiB; it was "
						  "dropped unread", AJ_RPC_MAX_LINE >> 20);
			rc = send_msg(s, aj_rpc_error(NULL, AJ_RPC_PARSE_ERROR, why, NULL));
		} else {
			rc = handle_line(s, line, len);
		}
		if (rc < 0)
			return -1;
		if (terminate_sig)
			return 0;
	}
	return 0;
}

static void set_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term; /* no SA_RESTART: a blocking poll returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void loop(struct aj_mcp_server *s)
{
	while (!terminate_sig) {
		struct pollfd p = {.fd = s->in.fd, .events = POLLIN};
		if (drain(s) < 0 || s->in.eof || terminate_sig)
			return;
		if (poll(&p, 1, -1) < 0) {
			if (errno != EINTR)
				return;
			continue;
		}
		if (aj_rpc_reader_fill(&s->in) < 0) {
			fprintf(stderr, "agentjail mcp: read from the client: %s\n", strerror(errno));
			return;
		}
	}
}

int aj_mcp_serve(const struct aj_mcp_opts *o, int in_fd, int out_fd, struct aj_err *err)
{
	static struct aj_mcp_server s;

	memset(&s, 0, sizeof s);
	s.out_fd = out_fd;
	s.version = o->version ? o->version : "0";
	set_signals();
	if (aj_mcp_bind(&s.sb, o, err) < 0) {
		aj_mcp_unbind(&s.sb);
		return -1;
	}
	fprintf(stderr, "agentjail mcp: serving sandbox \"%s\" on stdio\n", s.sb.name);
	aj_rpc_reader_init(&s.in, in_fd, AJ_RPC_MAX_LINE);
	loop(&s);
	if (terminate_sig)
		fprintf(stderr, "agentjail mcp: ending on signal %d\n", (int)terminate_sig);
	aj_rpc_reader_free(&s.in);
	aj_mcp_unbind(&s.sb);
	return 0;
}

/* ---- while a tool runs --------------------------------------------------------------------- */

struct peek_ctx {
	json_t *id;
	bool cancelled;
};

static void peek_cancel(void *arg, const char *line, size_t len)
{
	struct peek_ctx *p = arg;
	json_t *m;

	if (!memmem(line, len, "notifications/cancelled", 23))
		return;
	m = json_loadb(line, len, 0, NULL);
	if (m && !strcmp(json_string_value(json_object_get(m, "method")) ?: "",
			 "notifications/cancelled") &&
	    json_equal(json_object_get(json_object_get(m, "params"), "requestId"), p->id))
		p->cancelled = true;
	json_decref(m);
}

int aj_mcp_call_poll_input(struct aj_mcp_call *c)
{
	struct aj_rpc_reader *r = &c->srv->in;
	struct peek_ctx p = {.id = c->id};

	/* A client that keeps sending while one call runs waits on the pipe, not on our memory. */
	if (r->len - r->start > 2 * (size_t)AJ_RPC_MAX_LINE)
		return -1;
	if (aj_rpc_reader_fill(r) < 0 || r->eof) {
		c->input_closed = true;
		return -1;
	}
	aj_rpc_reader_peek(r, peek_cancel, &p);
	if (p.cancelled)
		c->cancelled = true;
	return 0;
}

void aj_mcp_call_progress(struct aj_mcp_call *c, double progress, const char *message)
{
	if (!c->progress_token)
		return;
	send_msg(c->srv, json_pack("{s:s, s:s, s:{s:O, s:f, s:s}}", "jsonrpc", "2.0", "method",
				   "notifications/progress", "params", "progressToken",
				   c->progress_token, "progress", progress, "message", message));
}
