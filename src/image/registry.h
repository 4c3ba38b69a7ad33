/* A client of the OCI distribution protocol (registries: docker-registry, Docker Hub, GHCR,
 * Harbor, ...), over libcurl (image/curl.h): manifests by tag or digest, blobs into the blob
 * store. What it gets is checked before it is used: a manifest asked for by digest must have
 * it, every blob the digest and size its manifest gives (image/blobs.h).
 *
 * Authentication follows the registry's challenge (image/auth.h): anonymous first, then a
 * bearer token from the challenge's realm (with the auth file's credentials, if it has any
 * for the registry), or basic credentials. Plain HTTP only for a registry the caller names
 * insecure; HTTPS verifies the certificate against the system's CAs or `ca_file`.
 *
 * Blobs: several at a time (parallel), each resumed from what an interrupted pull left
 * (a Range request), each retried a few times on a transient failure (a refused or reset
 * connection, 5xx, 429), with progress lines (a bar per blob on a terminal).
 *
 * A struct aj_registry owns its libcurl handles and token; aj_registry_close() frees it.
 */
#ifndef AJ_IMAGE_REGISTRY_H
#define AJ_IMAGE_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "image/blobs.h"
#include "image/ref.h"

struct aj_registry_opts {
	const char *authfile; /* NULL: the usual places (image/auth.h) */
	bool anonymous;       /* no credentials at all (pulls an API client asked for) */
	bool insecure;        /* http:// (and no certificate check) for this registry */
	const char *ca_file;  /* extra CA bundle for HTTPS; NULL: the system's */
	const char *mirror;   /* host[:port] to ask instead of docker.io; NULL: none */
	unsigned parallel;    /* blobs at once; 0: 3 */
	unsigned retries;     /* per request; 0: 3 */
	FILE *progress;       /* NULL: quiet */
	bool progress_tty;    /* bars that redraw, rather than lines */
};

struct aj_registry;

int aj_registry_open(const struct aj_image_ref *ref, const struct aj_registry_opts *o,
		     struct aj_registry **out, struct aj_err *err);
void aj_registry_close(struct aj_registry *r);

/* The manifest (or index) for `reference` (a tag or a digest): its bytes (caller frees),
 * media type and digest (computed; a digest asked for must match). At most 4 MiB. */
int aj_registry_manifest(struct aj_registry *r, const char *reference, char **body, size_t *len,
			 char media_type[128], char digest[AJ_DIGEST_SIZE], struct aj_err *err);

struct aj_blob_want {
	char digest[AJ_DIGEST_SIZE];
	int64_t size;      /* as the manifest says; -1: unknown */
	const char *label; /* progress: "layer 2/5" */
	bool have;         /* set when it is in the store (before or after) */
};

/* Fetches every wanted blob not in the store yet, `parallel` at a time. */
int aj_registry_blobs(struct aj_registry *r, struct aj_blobs *store, struct aj_blob_want *w,
		      size_t n, struct aj_err *err);

#endif
