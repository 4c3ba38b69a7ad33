/* libFuzzer: the token file parser of `agentjail serve --token-file` and the Authorization
 * header lookup against the tokens it loaded. The input is split at the first NUL: a token
 * file, then a header value. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t flen = nul ? (size_t)(nul - data) : size;
	char path[64], header[1024];
	struct aj_srv_tokens *t = NULL;
	struct aj_err err;
	int fd;

	snprintf(path, sizeof path, "/tmp/aj-fuzz-tokens.%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, flen) != (ssize_t)flen) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	if (aj_srv_tokens_load(path, &t, &err) == 0) {
		size_t hlen = nul ? size - flen - 1 : 0;
		if (hlen >= sizeof header)
			hlen = sizeof header - 1;
		memcpy(header, nul ? nul + 1 : (const uint8_t *)"", hlen);
		header[hlen] = '\0';
		(void)aj_srv_tokens_owner(t, header);
		aj_srv_tokens_free(t);
	}
	unlink(path);
	return 0;
}
