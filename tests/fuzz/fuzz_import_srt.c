/* libFuzzer: srt settings documents through `agentjail policy import-srt`'s conversion. Any
 * input must end in a policy the policy parser accepts, or in an error that says what was
 * wrong; never a crash, a leak or a policy agentjail itself would refuse to read. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/import_srt.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* No resolve hook: paths are taken as written, so the run touches no filesystem. */
	static const struct aj_srt_ctx ctx = {"/home/fuzz", "/home/fuzz/proj", NULL, NULL, NULL};
	struct aj_policy p;
	struct aj_err err;
	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL), *out;

	if (!in)
		return 0;
	out = aj_policy_import_srt(in, &ctx, &err);
	json_decref(in);
	if (!out) {
		if (!err.msg[0])
			abort(); /* an error must say what was wrong */
		return 0;
	}
	aj_policy_init(&p);
	if (aj_policy_apply_json(&p, out, &err) < 0)
		abort(); /* the importer produced a policy agentjail refuses */
	aj_policy_free(&p);
	json_decref(out);
	return 0;
}
