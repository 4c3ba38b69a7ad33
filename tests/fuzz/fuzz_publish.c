/* libFuzzer: a -p / network.publish spec (anyone's text: the CLI, a policy file, the API).
 * Whatever parses must format to a spec that parses to the same ports. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/publish.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), why[160], text[80];
	struct aj_publish a, b;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (aj_publish_parse(s, &a, why, sizeof why) == 0) {
		aj_publish_format(&a, text, sizeof text);
		if (aj_publish_parse(text, &b, why, sizeof why) < 0 || a.port != b.port ||
		    a.host_port != b.host_port || strcmp(a.host_ip, b.host_ip) || a.port == 0)
			abort();
	}
	free(s);
	return 0;
}
