/* Pulling and importing images into the store (image/store.h): from a registry (the OCI
 * distribution protocol, image/registry.h), from an OCI layout (a directory or a tar, as
 * skopeo, podman and buildah write them), a `docker save` archive, or a root filesystem
 * tarball. Each ends with the image recorded and named, or with nothing recorded.
 */
#ifndef AJ_IMAGE_PULL_H
#define AJ_IMAGE_PULL_H

#include "common/err.h"
#include "image/registry.h"
#include "image/store.h"

struct aj_pull_opts {
	struct aj_registry_opts registry;
	const char *platform; /* "os/arch[/variant]"; NULL: this host's (linux/amd64 here) */
	const char *owner;    /* whose name the image gets; "" the local owner */
};

/* Pulls `ref` and names it so (for the owner). */
int aj_image_pull(struct aj_images *im, const char *ref, const struct aj_pull_opts *o,
		  struct aj_image_rec *out, struct aj_err *err);

/* This host's platform ("linux/amd64") into buf. */
void aj_image_host_platform(char *buf, size_t len);

#endif
