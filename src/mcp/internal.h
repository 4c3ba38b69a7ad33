/* Shared by the MCP server's files; not for other modules.
 *
 * Ownership: the server (server.c) owns the binding and the reader for the whole session. A
 * tool's run function gets the call (borrowed) and its validated arguments (borrowed) and
 * returns a new CallToolResult, or NULL for an internal failure (answered with -32603) or
 * for a call the client cancelled (call->cancelled, not answered at all).
 */
#ifndef AJ_MCP_INTERNAL_H
#define AJ_MCP_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/err.h"
#include "common/jfields.h"
#include "manager/manager.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

/* ---- binding.c: the sandbox this server acts in ------------------------------------------ */

struct aj_mcp_binding {
	struct aj_mgr mgr;
	bool mgr_open;
	char id[33];
	char name[129];
	int ctl;              /* control connection to the supervisor; -1: none yet */
	char cwd[4096];       /* the sandbox's working directory: relative paths start here */
	uint64_t policy_timeout_ms; /* per command, 0: none */
	uint64_t policy_output_cap; /* stdout+stderr, 0: none */
	bool created;         /* by this server */
	bool remove_on_exit;
};

int aj_mcp_bind(struct aj_mcp_binding *b, const struct aj_mcp_opts *o, struct aj_err *err);
/* Deletes the sandbox if it was made with --rm, closes everything. */
void aj_mcp_unbind(struct aj_mcp_binding *b);
/* A live control connection for the next operation: the sandbox is resumed if paused,
 * started if stopped, and reconnected if its supervisor changed or went away. */
int aj_mcp_ctl(struct aj_mcp_binding *b, struct aj_err *err);
void aj_mcp_disconnect(struct aj_mcp_binding *b);
/* path made absolute inside the sandbox (relative to the working directory). -1 with a message
 * naming `what` in why when it is empty or too long. */
int aj_mcp_path(const struct aj_mcp_binding *b, const char *path, const char *what, char *out,
		size_t out_len, char *why, size_t why_len);

/* ---- server.c: the session ---------------------------------------------------------------- */

struct aj_mcp_server {
	struct aj_mcp_binding sb;
	struct aj_rpc_reader in;
	int out_fd;
	bool initialized;        /* initialize was answered */
	bool client_ready;       /* notifications/initialized came */
	char protocol[16];
	const char *version;
};

struct aj_mcp_call {
	struct aj_mcp_server *srv;
	json_t *id;             /* the request's id */
	json_t *progress_token; /* params._meta.progressToken, NULL if none */
	bool cancelled;         /* the client cancelled the request: no answer */
	bool input_closed;      /* the client closed its end while the tool ran */
};

/* Set by SIGTERM, SIGINT, SIGHUP: finish the current call quickly and end the session. */
bool aj_mcp_terminating(void);
/* While a tool waits: reads what the client sent meanwhile (kept for later) and notes a
 * cancellation of this call or the end of input. -1 when nothing more should be read now. */
int aj_mcp_call_poll_input(struct aj_mcp_call *c);
/* Sends notifications/progress for this call if the client asked for progress. */
void aj_mcp_call_progress(struct aj_mcp_call *c, double progress, const char *message);

/* ---- tools.c: the tool table ---------------------------------------------------------------- */

/* A tool's parameters are a table of common/jfields.h rows: the engine checks the arguments
 * and makes the inputSchema from the same rows. */
#define AJ_MCP_STRING(n, fl, text) {.name = (n), .type = AJ_JF_STRING, .flags = (fl), .doc = (text)}
#define AJ_MCP_BOOL(n, fl, text) {.name = (n), .type = AJ_JF_BOOL, .flags = (fl), .doc = (text)}
/* JSON Schema's integer: 30.0 is one, 1.5 is not. */
#define AJ_MCP_INT(n, fl, lo, hi, d, text)                                                      \
	{.name = (n), .type = AJ_JF_INT, .flags = (fl) | AJ_JF_INTEGRAL, .min = (lo), .max = (hi), \
	 .dflt = (d), .doc = (text)}
#define AJ_MCP_PARAMS_END {.name = NULL}

struct aj_mcp_tool {
	const char *name, *title, *description;
	const struct aj_jf_field *params; /* ends with a NULL name */
	const char *output_schema;         /* JSON text, NULL: none */
	bool read_only, destructive, idempotent;
	json_t *(*run)(struct aj_mcp_call *c, json_t *args);
};

extern const struct aj_mcp_tool aj_mcp_tool_shell, aj_mcp_tool_read_file,
	aj_mcp_tool_write_file, aj_mcp_tool_edit_file, aj_mcp_tool_list_dir,
	aj_mcp_tool_snapshot, aj_mcp_tool_restore;

const struct aj_mcp_tool *aj_mcp_tool_find(const char *name);
/* The tools/list result (new reference). */
json_t *aj_mcp_tools_list(void);
/* Checks args against the tool's parameters: 0, or -1 with a message naming the argument. */
int aj_mcp_check_args(const struct aj_mcp_tool *t, json_t *args, char *why, size_t why_len);

/* Validated arguments; absent ones give the default. */
const char *aj_mcp_arg_str(json_t *args, const char *name);
long long aj_mcp_arg_int(const struct aj_mcp_tool *t, json_t *args, const char *name);
bool aj_mcp_arg_bool(json_t *args, const char *name);

/* Results. */
json_t *aj_mcp_result_text(const char *text, json_t *structured);
json_t *aj_mcp_result_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error result from err, with context in front ("read_file /x: ..."). */
json_t *aj_mcp_result_err(const struct aj_err *err, const char *context);
/* A JSON string of arbitrary bytes: invalid UTF-8 becomes U+FFFD (new reference). */
json_t *aj_mcp_text(const char *s, size_t n);

#endif
