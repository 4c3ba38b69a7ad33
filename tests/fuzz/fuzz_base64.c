/* libFuzzer: base64 decoding of untrusted text (control messages, API bodies) stays within
 * its documented output size, and encode/decode round-trips. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *out = malloc((size / 4 + 1) * 3);
	char *enc = malloc(aj_base64_len(size) + 1);
	unsigned char *back = malloc(size + 3);
	long n;

	if (!out || !enc || !back)
		abort();
	(void)aj_base64_decode((const char *)data, size, out);
	aj_base64_encode(data, size, enc);
	n = aj_base64_decode(enc, strlen(enc), back);
	if (n != (long)size || memcmp(back, data, size) != 0)
		abort();
	free(out);
	free(enc);
	free(back);
	return 0;
}
