/* Image references as docker, podman and skopeo write them: [REGISTRY/]REPOSITORY[:TAG]
 * [@DIGEST]. A first component with a '.' or ':', or "localhost", is a registry; otherwise the
 * registry is docker.io and a one-component repository is "library/NAME". No tag and no digest
 * means ":latest". Pure; nothing to free.
 */
#ifndef AJ_IMAGE_REF_H
#define AJ_IMAGE_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "image/digest.h"

#define AJ_REF_DOCKER_HUB "docker.io"

struct aj_image_ref {
	char registry[256];          /* "docker.io", "127.0.0.1:5000", "registry.example:443" */
	char repo[256];              /* "library/busybox", "team/app" */
	char tag[129];               /* "" when only a digest was given */
	char digest[AJ_DIGEST_SIZE]; /* "" when none was given */
};

/* Parses s; on error fills why (naming the part that is wrong) and returns -1. */
int aj_image_ref_parse(const char *s, struct aj_image_ref *r, char *why, size_t why_len);
/* The canonical name: registry/repo:tag, registry/repo@digest or both. */
void aj_image_ref_format(const struct aj_image_ref *r, char *buf, size_t len);
/* The name as docker shows it: docker.io's without the registry, its library images without
 * "library/" ("busybox:latest", "team/app:v1"); others canonical. */
void aj_image_ref_short(const struct aj_image_ref *r, char *buf, size_t len);

#endif
