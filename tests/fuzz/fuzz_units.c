/* libFuzzer: the size, duration, CPU and count parsers shared by flags and the policy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[256];
	uint64_t v;

	if (size >= sizeof s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)aj_parse_size(s, &v);
	(void)aj_parse_duration_ms(s, &v);
	(void)aj_parse_cpus_milli(s, &v);
	(void)aj_parse_u64(s, &v);
	return 0;
}
