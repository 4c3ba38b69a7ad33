/* libFuzzer: the seccomp rules format. Parsing arbitrary text must fail cleanly; what parses
 * must compile or fail with a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/seccomp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aj_sc_profile prof;
	struct aj_err err;
	struct sock_filter *insns = NULL;
	size_t n = 0, skipped = 0;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&prof, 0, sizeof prof);
	aj_err_clear(&err);
	if (aj_seccomp_parse(text, &prof, &err) == 0) {
		if (aj_seccomp_compile(&prof, NULL, &insns, &n, &skipped, &err) < 0 && !err.msg[0])
			abort();
		free(insns);
	} else if (!err.msg[0]) {
		abort();
	}
	aj_seccomp_profile_free(&prof);
	free(text);
	return 0;
}
