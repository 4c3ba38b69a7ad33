/* The MCP server (`agentjail mcp`): Model Context Protocol over stdio, bound to one persistent
 * sandbox, offering a shell and file tools that act inside it (docs/mcp.md).
 *
 * Files: jsonrpc.c reads and writes newline-delimited JSON-RPC and checks message shape;
 * server.c runs the session (lifecycle, method dispatch); tools.c holds the tool table and
 * argument checks; tool_shell.c, tool_files.c and tool_snapshot.c implement the tools;
 * binding.c keeps the connection to the sandbox's supervisor alive.
 *
 * Everything the server prints on its output descriptor is a protocol message; diagnostics go
 * to stderr.
 */
#ifndef AJ_MCP_MCP_H
#define AJ_MCP_MCP_H

#include <stdbool.h>

#include "common/err.h"
#include "manager/manager.h"

struct aj_mcp_opts {
	const char *state_dir;          /* NULL: the default */
	const char *ref;                /* the sandbox to bind to (name or id); NULL with create */
	const struct aj_create_opts *create; /* non-NULL: create the sandbox first */
	bool remove_on_exit;            /* --rm: delete it at exit (only one this server made) */
	const char *version;            /* serverInfo.version */
};

/* Binds to the sandbox and serves requests from in_fd, answers to out_fd, until in_fd ends or
 * SIGTERM/SIGINT/SIGHUP. Returns 0, or -1 with err when the sandbox could not be bound (then
 * nothing was read). */
int aj_mcp_serve(const struct aj_mcp_opts *o, int in_fd, int out_fd, struct aj_err *err);

#endif
