/* libFuzzer: srt settings documents through `agentjail policy import-srt`'s conversion. Any
 * input must end in a policy the policy parser accepts, or in an error that says what was
 * wrong; never a crash, a leak or a policy agentjail itself would refuse to read. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/import_srt.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A made-up host, so that the run touches no filesystem: /home/fuzz/proj/link is a symlink
 * to /home/fuzz, every path exists but those named "missing", and every path whose name
 * holds "sock" is, or holds, a unix socket ("big" ones are too large to look through). */
static char *fake_resolve(const char *path, bool *exists, void *opaque)
{
	static const char link[] = "/home/fuzz/proj/link";
	size_t n = strlen(link);
	char *out;

	(void)opaque;
	*exists = strstr(path, "missing") == NULL;
	if (strncmp(path, link, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return strdup(path);
	out = malloc(strlen(path) + 1);
	if (out)
		sprintf(out, "/home/fuzz%s", path + n);
	return out;
}

static enum aj_srt_sock fake_find_socket(const char *path, char *found, size_t len,
					 void *opaque)
{
	(void)opaque;
	if (strstr(path, "big")) {
		snprintf(found, len, "too many entries");
		return AJ_SRT_SOCK_UNCHECKED;
	}
	if (!strstr(path, "sock"))
		return AJ_SRT_SOCK_NONE;
	snprintf(found, len, "%s/agent.sock", path);
	return AJ_SRT_SOCK_FOUND;
}

static int convert(json_t *in, const struct aj_srt_ctx *ctx)
{
	struct aj_policy p;
	struct aj_err err;
	json_t *out = aj_policy_import_srt(in, ctx, &err);

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Without hooks paths are taken as written; with them, through the made-up host. */
	static const struct aj_srt_ctx plain = {.home = "/home/fuzz",
						.workspace = "/home/fuzz/proj"};
	static const struct aj_srt_ctx host = {.home = "/home/fuzz",
					       .workspace = "/home/fuzz/proj",
					       .resolve = fake_resolve,
					       .find_socket = fake_find_socket};
	json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);

	if (!in)
		return 0;
	convert(in, &plain);
	convert(in, &host);
	json_decref(in);
	return 0;
}
