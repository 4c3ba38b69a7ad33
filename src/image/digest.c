#include "image/digest.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

struct aj_hasher {
	EVP_MD_CTX *ctx;
};

bool aj_digest_valid(const char *s)
{
	if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 71)
		return false;
	for (const char *c = s + 7; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

const char *aj_digest_hex(const char *s)
{
	return s + 7;
}

struct aj_hasher *aj_hasher_new(void)
{
	struct aj_hasher *h = aj_xcalloc(1, sizeof *h);

	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
		aj_oom(sizeof *h);
	return h;
}

void aj_hasher_update(struct aj_hasher *h, const void *data, size_t len)
{
	if (len)
		EVP_DigestUpdate(h->ctx, data, len);
}

void aj_hasher_final(struct aj_hasher *h, char out[AJ_DIGEST_SIZE])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(h->ctx, md, &n);
	snprintf(out, 8, "sha256:");
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

void aj_hasher_free(struct aj_hasher *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void aj_digest_of(const void *data, size_t len, char out[AJ_DIGEST_SIZE])
{
	struct aj_hasher *h = aj_hasher_new();

	aj_hasher_update(h, data, len);
	aj_hasher_final(h, out);
	aj_hasher_free(h);
}
