/* An image as a sandbox's root (docs/images.md, "Image roots"): the image a reference names,
 * its layer directories bottom first and its config, in the form the plan takes
 * (struct aj_root_spec), and the system layer the sandbox writes to.
 *
 * A one-shot run's system layer is STATE/images/runs/<random>/ (upper/, work/), removed when
 * the run ends; its `lock` file, held for the run and naming the image, keeps `image rm` and
 * `image prune` from taking the image away under it. A persistent sandbox's system layer is
 * its own directory, kept with it; its stored policy names the image by digest.
 *
 * struct aj_image_root owns what the spec points to; aj_image_root_close() releases it and
 * removes a one-shot system layer.
 */
#ifndef AJ_IMAGE_ROOT_H
#define AJ_IMAGE_ROOT_H

#include <stdbool.h>

#include "common/err.h"
#include "common/strv.h"
#include "image/store.h"
#include "policy/plan.h"

struct aj_image_root {
	struct aj_root_spec spec;
	struct aj_image_rec rec;
	struct aj_image_config config;
	struct aj_strv lowers;
	struct aj_subids subids; /* the store's, when its layers are unpacked with them */
	char ids_why[300];  /* rootless without subordinate ids: why not */
	char name[700];     /* as the caller named it */
	char rw_dir[4200];  /* the system layer */
	char run_dir[4200]; /* a one-shot run's directory, removed by close; "" otherwise */
	int lock_fd;
};

/* The image `ref` names for owner ("" the local one), with its layers checked present. */
int aj_image_root_open(struct aj_images *im, const char *owner, const char *ref,
		       struct aj_image_root *r, struct aj_err *err);
/* A system layer for one run, under the store (see above). */
/* disk > 0: runs/<id> is a quota directory of that many bytes where the filesystem can. */
int aj_image_root_run_layer(struct aj_image_root *r, struct aj_images *im, uint64_t disk,
			    struct aj_err *err);
/* The system layer at dir (upper/ and work/ made if missing): a persistent sandbox's. */
int aj_image_root_layer_at(struct aj_image_root *r, const char *dir, struct aj_err *err);
void aj_image_root_close(struct aj_image_root *r);

/* Whether a one-shot run uses image `digest` now (digest NULL: none is asked about); stale
 * run directories (their run died with agentjail) are removed on the way. Under the store's
 * lock. */
int aj_image_runs_using(struct aj_images *im, const char *digest, bool *used, struct aj_err *err);

/* Who uses image `digest` (a one-shot run, or a sandbox, stopped or not, whose policy names
 * it) into who ("" when nobody). Under the store's lock. */
int aj_images_used_by(struct aj_images *im, const char *digest, char *who, size_t len,
		      struct aj_err *err);
/* Removes the records of images without a name that nothing uses (kept by image rm while a
 * sandbox used them). Takes the store's lock. */
int aj_images_drop_unnamed(struct aj_images *im, unsigned *removed, struct aj_err *err);

#endif
