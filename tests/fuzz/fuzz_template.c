/* libFuzzer: the body of an E2B template build (POST /v2/templates/{id}/builds/{build}, a
 * client's) as build/template.c reads it. Whatever parses is a FROM first, instructions
 * with their text and step, COPY sources beneath their upload's directory (no ".."), and
 * file hashes of 64 hex digits; a refusal says why. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = json_loadb((const char *)data, size, 0, NULL);
	struct aj_template t;
	struct aj_err err;

	if (!body)
		return 0;
	aj_err_clear(&err);
	if (aj_template_parse(body, &t, &err) < 0) {
		if (!err.msg[0])
			abort();
		json_decref(body);
		return 0;
	}
	if (t.df.n == 0 || t.df.v[0].kind != AJ_DF_FROM)
		abort();
	for (size_t i = 0; i < t.df.n; i++) {
		const struct aj_df_insn *in = &t.df.v[i];

		if (!in->text || t.step_of[i] > AJ_TEMPLATE_MAX_STEPS)
			abort();
		if (in->kind == AJ_DF_COPY &&
		    (in->args.n != 2 || strstr(in->args.v[0], "/../") || in->args.v[0][64] != '/'))
			abort();
	}
	for (size_t i = 0; i < t.files.n; i++)
		if (!aj_template_hash_ok(t.files.v[i]))
			abort();
	aj_template_free(&t);
	json_decref(body);
	return 0;
}
