/* libFuzzer harness for the MCP server's input path: arbitrary bytes through the line reader
 * (with a small bound so that oversized lines are exercised), each line through the JSON
 * decoder and the JSON-RPC shape checks, as server.c does. Built by `make fuzz`. */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"

static void one_line(const char *line, size_t len)
{
	json_t *m = json_loadb(line, len, JSON_DECODE_ANY, NULL), *id;
	struct aj_rpc_msg msg;
	char why[256];
	enum aj_rpc_code code;

	if (m && aj_rpc_classify(m, &msg, &code, why, sizeof why, &id) < 0)
		json_decref(aj_rpc_error(id, code, why, NULL));
	json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	struct aj_rpc_reader r;
	enum aj_rpc_next k;
	char *line;
	size_t len;

	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	aj_rpc_reader_init(&r, fd, 256);
	do {
		if (aj_rpc_reader_fill(&r) < 0)
			break;
		while ((k = aj_rpc_reader_next(&r, &line, &len)) != AJ_RPC_NONE)
			if (k == AJ_RPC_LINE)
				one_line(line, len);
	} while (!r.eof);
	aj_rpc_reader_free(&r);
	close(fd);
	return 0;
}
