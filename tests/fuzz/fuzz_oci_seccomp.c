/* libFuzzer harness for the reader of a bundle's seccomp profile (src/oci/seccomp.c):
 * arbitrary bytes as linux.seccomp through aj_oci_seccomp_compile(). Any input must end in a
 * program or in an error that names a field of config.json, never a crash or a leak. The
 * program is built, never loaded. Built by `make fuzz`. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/seccomp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *sc = json_loadb((const char *)data, size, 0, NULL);
	struct sock_filter *insns = NULL;
	size_t n = 0, unknown = 0;
	struct aj_err err;

	if (!json_is_object(sc)) {
		json_decref(sc);
		return 0;
	}
	aj_err_clear(&err);
	if (aj_oci_seccomp_compile(sc, &insns, &n, &unknown, &err) == 0) {
		if (!insns || n == 0)
			abort(); /* a profile that compiles is a program */
	} else if (err.layer == AJ_LAYER_POLICY &&
		   strncmp(err.msg, "config.json: linux.seccomp.", 27) != 0) {
		abort(); /* a refused profile names its field */
	}
	free(insns);
	json_decref(sc);
	return 0;
}
