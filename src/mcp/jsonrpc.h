/* JSON-RPC 2.0 over a byte stream as MCP's stdio transport frames it: one message per line,
 * UTF-8, no embedded newlines. The reader bounds a line's length (a longer one is dropped and
 * reported, never buffered whole); the checks here only look at a message's shape, what the
 * methods mean is server.c's business.
 *
 * Ownership: the reader owns its buffer (aj_rpc_reader_free). Lines it returns point into that
 * buffer and are valid until the next call. Functions taking json_t values say whether they
 * consume them.
 */
#ifndef AJ_MCP_JSONRPC_H
#define AJ_MCP_JSONRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define AJ_RPC_MAX_LINE (16u << 20)

/* JSON-RPC 2.0's error codes. */
enum aj_rpc_code {
	AJ_RPC_PARSE_ERROR = -32700,
	AJ_RPC_INVALID_REQUEST = -32600,
	AJ_RPC_METHOD_NOT_FOUND = -32601,
	AJ_RPC_INVALID_PARAMS = -32602,
	AJ_RPC_INTERNAL_ERROR = -32603,
};

struct aj_rpc_reader {
	int fd;
	char *buf;
	size_t start, len, cap; /* unconsumed bytes are buf[start, len) */
	size_t scanned;         /* of those, how many are known to hold no newline */
	size_t max_line;
	bool skipping;          /* dropping the rest of a line that was too long */
	bool eof;
};

void aj_rpc_reader_init(struct aj_rpc_reader *r, int fd, size_t max_line);
void aj_rpc_reader_free(struct aj_rpc_reader *r);
/* One read(2) of what is available: 0 (r->eof set at the end of input), -1 with errno. */
int aj_rpc_reader_fill(struct aj_rpc_reader *r);

enum aj_rpc_next { AJ_RPC_NONE, AJ_RPC_LINE, AJ_RPC_TOO_LONG };
/* The next complete line, without its line end. AJ_RPC_TOO_LONG once per line longer than
 * max_line (its bytes are dropped as they come). At the end of input an unterminated last line
 * counts as a line. */
enum aj_rpc_next aj_rpc_reader_next(struct aj_rpc_reader *r, char **line, size_t *len);
/* Calls fn for each complete line buffered now, consuming none (to look ahead while busy). */
void aj_rpc_reader_peek(struct aj_rpc_reader *r,
			void (*fn)(void *arg, const char *line, size_t len), void *arg);

enum aj_rpc_kind { AJ_RPC_REQUEST, AJ_RPC_NOTIFICATION, AJ_RPC_RESPONSE };

struct aj_rpc_msg {
	enum aj_rpc_kind kind;
	json_t *id;         /* borrowed; requests (and responses) only */
	const char *method; /* requests and notifications */
	json_t *params;     /* borrowed; NULL when absent */
};

/* Checks that m is a JSON-RPC 2.0 request, notification or response. On failure returns -1
 * with the error to answer: *code, why, and *id (borrowed; NULL answers with a null id). */
int aj_rpc_classify(json_t *m, struct aj_rpc_msg *out, enum aj_rpc_code *code, char *why,
		    size_t why_len, json_t **id);

/* {"jsonrpc":"2.0","id":id,"result":result}; consumes result, not id. */
json_t *aj_rpc_result(json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id or null,"error":{code,message[,data]}}; consumes data. */
json_t *aj_rpc_error(json_t *id, enum aj_rpc_code code, const char *message, json_t *data);
/* Writes msg as one line; consumes it. -1 with errno when the peer is gone. */
int aj_rpc_send(int fd, json_t *msg);

#endif
