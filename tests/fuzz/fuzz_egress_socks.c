/* libFuzzer: SOCKS5 negotiation and CONNECT requests as the sandbox sends them, read with
 * every length the proxy may have received so far. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/socks_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_socks_target t;
	bool noauth;
	long n;

	for (size_t have = 0; have <= size; have++) {
		size_t h = aj_socks_hello_parse(data, have, &noauth);
		if (h > have)
			abort();
		n = aj_socks_request_parse(data, have, &t);
		if (n > (long)have)
			abort();
		if (n > 0 && t.valid && (!t.port || memchr(t.host, '\0', sizeof t.host) == NULL))
			abort();
	}
	return 0;
}
