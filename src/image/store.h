/* The image store under a state directory: blobs (image/blobs.h), unpacked layers, and the
 * records of the state store (images, their layers, owners' names for them).
 *
 * Layout:
 *   images/blobs/...             blobs (image/blobs.h)
 *   images/layers/<hex>/         a layer unpacked once, named by its diff_id, shared by every
 *                                image that stacks it and every sandbox on those
 *   images/layers/.tmp-<random>/ a layer being unpacked; renamed into place once complete and
 *                                its diff_id checked, so a crash leaves a .tmp directory
 *   images/lock                  flocked, exclusively, by whoever adds or removes anything
 *   images/idmap                 rootless: how the layers were unpacked, "subids UID GID SUBUID
 *                                SUBGID" (owners kept, host/subids.h) or "single" (every file
 *                                the caller's); chosen while the store has no layer
 *   images/layers/.flat-<hex>    "single" store: the layer had files of other owners
 * An image is recorded only after its blobs and layers are in place: a killed pull or import
 * leaves nothing half-registered, only unreferenced files that aj_images_gc() removes.
 *
 * struct aj_images borrows the state store it is given and owns its descriptors;
 * aj_images_close() releases them and the lock.
 */
#ifndef AJ_IMAGE_STORE_H
#define AJ_IMAGE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "host/subids.h"
#include "image/blobs.h"
#include "image/manifest.h"
#include "state/store.h"

struct aj_images {
	char state_dir[4096];
	struct aj_store *db;
	struct aj_blobs blobs;
	int layers_dir;
	int lock_fd;
	bool set_owners; /* layers keep the image's ids (root); else every file is the caller's */
	/* Rootless: the caller's subordinate ids; `subid_layers` when the store's layers are
	 * unpacked with them (images/idmap), and then `subids.on` says whether they still can
	 * be mapped as they were (else subids.why). */
	struct aj_subids subids;
	bool subid_layers;
};

int aj_images_open(const char *state_dir, struct aj_store *db, struct aj_images *im,
		   struct aj_err *err);
void aj_images_close(struct aj_images *im);
/* The store's lock (exclusive); released by aj_images_close() or aj_images_unlock(). */
int aj_images_lock(struct aj_images *im, struct aj_err *err);
void aj_images_unlock(struct aj_images *im);

/* images/layers/<hex> of a diff_id into buf. */
void aj_images_layer_path(const struct aj_images *im, const char *diff_id, char *buf, size_t len);
bool aj_images_has_layer(const struct aj_images *im, const char *diff_id);
/* A "single" store's layer whose files had owners other than root (.flat-<hex>). */
bool aj_images_layer_flattened(const struct aj_images *im, const char *diff_id);
/* Subid store: an error unless this caller can map the layers' owners as they were. */
int aj_images_check_subids(const struct aj_images *im, struct aj_err *err);
/* Unpacks the blob into the layer diff_id unless it is there; checks the diff_id. With
 * diff_id NULL (a root filesystem tarball) the layer is named by what it turns out to be,
 * given in learned. `what` names the layer in errors ("layer 2/5"). Holds the lock. */
int aj_images_layer_add(struct aj_images *im, const char *blob, const char *diff_id,
			const char *what, char learned[AJ_DIGEST_SIZE], struct aj_err *err);

/* Records an image whose config and layers are in place and gives it `name` for owner (""
 * the local one; name NULL: none). Holds the lock. */
int aj_images_register(struct aj_images *im, const char *manifest_digest,
		       const struct aj_manifest *m, const struct aj_image_config *c,
		       const char *source, const char *owner, const char *name, uint64_t size,
		       struct aj_image_rec *out, struct aj_err *err);

/* The image `ref` names for owner (a name, short or canonical, or a digest) with its config. */
int aj_images_find(struct aj_images *im, const char *owner, const char *ref,
		   struct aj_image_rec *rec, struct aj_image_config *config, struct aj_err *err);

/* Gives the image digest the name `name` for owner (moved from another image that had it),
 * or takes the name away (ENOENT, class not found, when owner has no such name). */
int aj_images_tag(struct aj_images *im, const char *owner, const char *name, const char *digest,
		  struct aj_err *err);
int aj_images_untag(struct aj_images *im, const char *owner, const char *name,
		    struct aj_err *err);
/* The canonical form of an image name ("busybox" -> "docker.io/library/busybox:latest"). */
int aj_images_canonical(const char *name, char *out, size_t len, struct aj_err *err);

/* gc: .tmp files and directories; with `unused`, also layers no image stacks and blobs no
 * image refers to. Holds the lock. Counts what went into *removed. */
int aj_images_gc(struct aj_images *im, bool unused, unsigned *removed, uint64_t *bytes,
		 struct aj_err *err);

#endif
