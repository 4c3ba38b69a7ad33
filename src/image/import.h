/* Images from files, and back: `agentjail image import` and `image export`.
 *
 * Sources (told apart by what they hold):
 *   an OCI layout directory, or a tar of one (oci-layout, index.json, blobs/sha256/...), as
 *     skopeo, podman, buildah and docker 25+ write them: every blob checked against its name;
 *   a `docker save` archive (manifest.json naming a config and uncompressed layer tars);
 *   a root filesystem tarball (plain, gzip or zstd): one layer, a config with no defaults
 *     but PATH.
 * The image is named by --name, else by the name the source carries (the layout's
 * org.opencontainers.image.ref.name, docker's RepoTags); a rootfs tarball needs --name.
 *
 * Export writes an OCI layout as a tar (one image, named by its ref.name annotation) that
 * skopeo, podman and this import read.
 */
#ifndef AJ_IMAGE_IMPORT_H
#define AJ_IMAGE_IMPORT_H

#include "common/err.h"
#include "image/store.h"

struct aj_import_opts {
	const char *name;     /* NULL: the source's own */
	const char *platform; /* an index's entry: NULL, this host's */
	const char *owner;
};

int aj_image_import(struct aj_images *im, const char *path, const struct aj_import_opts *o,
		    struct aj_image_rec *out, struct aj_err *err);
/* An image made here (agentjail build): its config (JSON text) over layer blobs the store
 * holds (bottom first), recorded with a manifest and named `name` for owner (NULL: unnamed,
 * which `image prune` removes when nothing uses it). */
int aj_image_commit(struct aj_images *im, const char *config, const struct aj_strv *layers,
		    const char *source, const char *owner, const char *name,
		    struct aj_image_rec *out, struct aj_err *err);
/* Writes the image `ref` names (for owner) to `path` as an OCI layout tar; "-": stdout. */
int aj_image_export(struct aj_images *im, const char *owner, const char *ref, const char *path,
		    struct aj_err *err);

#endif
