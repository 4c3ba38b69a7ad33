/* Content addresses: "sha256:" and 64 lower-case hex digits, as OCI images name
 * blobs, layers and manifests, and a streaming SHA-256 (OpenSSL) to compute
 * them. A hasher owns its OpenSSL context; aj_hasher_free() releases it.
 */
#ifndef AJ_IMAGE_DIGEST_H
#define AJ_IMAGE_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

/* "sha256:" + 64 hex digits + NUL */
#define AJ_DIGEST_SIZE 72

/* True if s is a sha256 digest in canonical form ("sha256:" and 64 lower-case
 * hex digits). */
bool aj_digest_valid(const char *s);
/* The hex part of a valid digest (s + 7). */
const char *aj_digest_hex(const char *s);

struct aj_hasher;
struct aj_hasher *aj_hasher_new(void);
void aj_hasher_update(struct aj_hasher *h, const void *data, size_t len);
/* The digest of everything added, as "sha256:<hex>" into out (AJ_DIGEST_SIZE
 * bytes). */
void aj_hasher_final(struct aj_hasher *h, char out[AJ_DIGEST_SIZE]);
void aj_hasher_free(struct aj_hasher *h);
/* The digest of a buffer. */
void aj_digest_of(const void *data, size_t len, char out[AJ_DIGEST_SIZE]);

#endif
