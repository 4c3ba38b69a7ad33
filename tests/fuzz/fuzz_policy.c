/* libFuzzer: policy JSON through parse and validate's pure checks. Any input must end in a
 * policy or an error naming a field, never a crash or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_policy p;
	struct aj_err err;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	aj_policy_init(&p);
	aj_err_clear(&err);
	if (aj_policy_load_text(&p, text, &err) < 0 && !err.msg[0])
		abort(); /* an error must say what was wrong */
	aj_policy_free(&p);
	free(text);
	return 0;
}
