/* The image store's blobs: manifests, configs and compressed layers, each stored once under
 * its content address and verified on the way in.
 *
 * Layout under the state directory:
 *   images/blobs/sha256/<hex>         a verified blob
 *   images/blobs/.partial-<hex>       a blob being fetched, kept across an interrupted pull so
 *                                     that the next one resumes it (a digest names it: what
 *                                     it will be once complete and checked)
 *   images/blobs/.tmp-<random>        a blob being written whose digest is not known yet
 * A blob appears under its address only complete and verified (rename after fsync): a crash
 * leaves at most a .partial or .tmp file, which gc removes (a .partial only when no pull holds
 * the store's lock).
 *
 * struct aj_blobs holds a descriptor of images/blobs; aj_blobs_close() releases it. A writer
 * owns its file until commit or abort.
 */
#ifndef AJ_IMAGE_BLOBS_H
#define AJ_IMAGE_BLOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "image/digest.h"

struct aj_blobs {
	int dir; /* images/blobs */
};

int aj_blobs_open(const char *state_dir, struct aj_blobs *b, struct aj_err *err);
void aj_blobs_close(struct aj_blobs *b);

bool aj_blobs_has(const struct aj_blobs *b, const char *digest);
/* A verified blob, opened for reading; -1 with err (cls not found) when absent. */
int aj_blobs_open_blob(const struct aj_blobs *b, const char *digest, struct aj_err *err);
/* Its size, or -1. */
int64_t aj_blobs_size(const struct aj_blobs *b, const char *digest);
/* Reads a small blob whole (a manifest, a config: at most max bytes), verified again against
 * its digest. NUL-terminated, caller frees. */
char *aj_blobs_read(const struct aj_blobs *b, const char *digest, size_t max, size_t *len,
		    struct aj_err *err);
/* Stores data (a manifest or config) and gives its digest. */
int aj_blobs_put(const struct aj_blobs *b, const void *data, size_t len,
		 char digest[AJ_DIGEST_SIZE], struct aj_err *err);
int aj_blobs_remove(const struct aj_blobs *b, const char *digest, struct aj_err *err);

struct aj_blob_writer {
	const struct aj_blobs *b;
	int fd;
	char name[96];               /* its file in images/blobs */
	char expect[AJ_DIGEST_SIZE]; /* "" when unknown */
	struct aj_hasher *hash;
	uint64_t size;
};

/* A writer for a blob whose digest is expected: resumes images/blobs/.partial-<hex> when one
 * is there (w->size says how much it holds, already hashed), or starts it. */
int aj_blob_resume(const struct aj_blobs *b, const char *expect, struct aj_blob_writer *w,
		   struct aj_err *err);
/* A writer for a blob whose digest is learnt at the end (an import). */
int aj_blob_begin(const struct aj_blobs *b, struct aj_blob_writer *w, struct aj_err *err);
int aj_blob_write(struct aj_blob_writer *w, const void *data, size_t len, struct aj_err *err);
/* Throws away what a resumed writer holds, to start over (a server that ignored the range). */
int aj_blob_restart(struct aj_blob_writer *w, struct aj_err *err);
/* Checks size (when size >= 0) and digest, and publishes the blob; its digest into out. The
 * writer is done either way: on a mismatch the partial file is removed. */
int aj_blob_commit(struct aj_blob_writer *w, int64_t size, char out[AJ_DIGEST_SIZE],
		   struct aj_err *err);
/* Keeps a resumable writer's file for the next pull (an interrupted download), or removes an
 * unresumable one. */
void aj_blob_abort(struct aj_blob_writer *w, bool keep);
/* A writer in a cleanup variable (initialized {.fd = -1}) is aborted, its file removed, unless
 * it was committed (or aborted) first. */
static inline void aj_blob_writer_dropp(struct aj_blob_writer *w)
{
	aj_blob_abort(w, false);
}
#define _cleanup_blob_writer_ __attribute__((cleanup(aj_blob_writer_dropp)))

/* gc: removes .tmp files, and .partial files when `partials` (no pull at work). */
int aj_blobs_sweep(const struct aj_blobs *b, bool partials, unsigned *removed, struct aj_err *err);

#endif
