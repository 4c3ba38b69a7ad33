/* libFuzzer: what registries and image files hand agentjail before anything is unpacked:
 * references, the WWW-Authenticate challenge, the token service's answer, auth files, and
 * the image documents (indexes, manifests, configs). Each parser must reject or accept
 * without crashing, and what it accepts must hold what the rest relies on. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/auth.h"
#include "image/manifest.h"
#include "image/ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void docs(const char *s, size_t n)
{
	struct aj_index x;
	struct aj_manifest m;
	struct aj_image_config c;
	struct aj_err err;
	size_t at;

	(void)aj_doc_kind(s, n, NULL);
	if (aj_index_parse(s, n, "index", &x, &err) == 0) {
		for (size_t i = 0; i < x.manifests.n; i++)
			if (!aj_digest_valid(x.manifests.v[i].digest) || x.manifests.v[i].size < 0)
				abort();
		(void)aj_index_pick(&x, "linux", "amd64", "", "index", &at, &err);
		aj_index_free(&x);
	}
	if (aj_manifest_parse(s, n, "manifest", &m, &err) == 0) {
		for (size_t i = 0; i < m.layers.n; i++)
			if (!aj_layer_type_ok(m.layers.v[i].media_type))
				abort();
		aj_manifest_free(&m);
	}
	if (aj_config_parse(s, n, "config", &c, &err) == 0) {
		for (size_t i = 0; i < c.diff_ids.n; i++)
			if (!aj_digest_valid(c.diff_ids.v[i]))
				abort();
		aj_config_free(&c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), why[256], buf[700], tok[256];
	struct aj_image_ref r;
	struct aj_challenge ch;
	struct aj_creds cr;
	struct aj_err err;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (aj_image_ref_parse(s, &r, why, sizeof why) == 0) {
		if (!r.registry[0] || !r.repo[0] || (!r.tag[0] && !r.digest[0]))
			abort();
		aj_image_ref_format(&r, buf, sizeof buf);
	}
	if (aj_challenge_parse(s, &ch) == 0 && ch.scheme == AJ_AUTH_BEARER && !ch.realm[0])
		abort();
	(void)aj_creds_from_text(s, "auth.json", "127.0.0.1:5000", &cr, &err);
	if (aj_token_parse(s, size, "realm", tok, sizeof tok, &err) == 0 && strpbrk(tok, "\r\n"))
		abort();
	docs(s, size);
	free(s);
	return 0;
}
