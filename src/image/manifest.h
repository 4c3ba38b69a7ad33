/* OCI image documents, as registries and layouts hand them over (image-spec 1.1; Docker's
 * schema 2 alike): indexes (manifest lists) naming one manifest per platform, manifests
 * naming a config and layers, configs holding the process defaults and the layers' diff_ids.
 * Each is read with the field-table engine (common/jfields.h): unknown fields are ignored, as
 * the spec asks, and every error names the document and the field path.
 *
 * Each struct owns its arrays and strings; its _free() releases them.
 */
#ifndef AJ_IMAGE_MANIFEST_H
#define AJ_IMAGE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"
#include "image/digest.h"

#define AJ_MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define AJ_MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define AJ_MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define AJ_MT_OCI_LAYER "application/vnd.oci.image.layer.v1.tar"
#define AJ_MT_OCI_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define AJ_MT_OCI_LAYER_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"
#define AJ_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define AJ_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define AJ_MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define AJ_MT_DOCKER_LAYER "application/vnd.docker.image.rootfs.diff.tar.gzip"

enum aj_doc_kind { AJ_DOC_UNKNOWN = 0, AJ_DOC_INDEX, AJ_DOC_MANIFEST };

struct aj_descriptor {
	char *media_type;
	char digest[AJ_DIGEST_SIZE];
	int64_t size;
	/* indexes: the manifest's platform ("" when it names none) */
	char *os, *arch, *variant;
};

struct aj_descs {
	struct aj_descriptor *v;
	size_t n;
};

struct aj_index {
	char *media_type;
	struct aj_descs manifests;
};

struct aj_manifest {
	char *media_type;
	struct aj_descriptor config;
	struct aj_descs layers;
};

#define AJ_LABEL_START "org.agentjail.template.start"
#define AJ_LABEL_READY "org.agentjail.template.ready"
#define AJ_LABEL_BUILD "org.agentjail.template.build" /* the API's build that made it */

struct aj_image_config {
	char *os, *arch, *variant;
	char *created;
	/* config: the process defaults a sandbox starts with */
	struct aj_strv env, entrypoint, cmd;
	char *user, *workdir, *stop_signal;
	/* Labels AJ_LABEL_START and AJ_LABEL_READY: a template's start command, run in the
	 * background when an E2B sandbox starts on the image, and the command waited on until it
	 * succeeds (docs/e2b.md "Building templates"); NULL: none. */
	char *start_cmd, *ready_cmd;
	char *build_id; /* AJ_LABEL_BUILD; NULL: none */
	struct aj_strv diff_ids; /* rootfs.diff_ids, bottom layer first */
};

/* What a document is: by its mediaType field, else by the media type it came with (an index
 * has "manifests", a manifest "layers"). */
enum aj_doc_kind aj_doc_kind(const char *body, size_t len, const char *media_type);

/* `what` names the document in errors ("manifest sha256:..."). */
int aj_index_parse(const char *body, size_t len, const char *what, struct aj_index *x,
		   struct aj_err *err);
void aj_index_free(struct aj_index *x);
#define _cleanup_index_ __attribute__((cleanup(aj_index_free)))
/* The manifest for os/arch[/variant] (variant "" matches any; arm64's default v8); -1 with
 * the platforms it has when none fits. */
int aj_index_pick(const struct aj_index *x, const char *os, const char *arch, const char *variant,
		  const char *what, size_t *at, struct aj_err *err);

int aj_manifest_parse(const char *body, size_t len, const char *what, struct aj_manifest *m,
		      struct aj_err *err);
void aj_manifest_free(struct aj_manifest *m);
#define _cleanup_manifest_ __attribute__((cleanup(aj_manifest_free)))
/* A layer's media type is one agentjail unpacks (tar, gzip, zstd; not a foreign layer). */
bool aj_layer_type_ok(const char *media_type);

int aj_config_parse(const char *body, size_t len, const char *what, struct aj_image_config *c,
		    struct aj_err *err);
void aj_config_free(struct aj_image_config *c);
#define _cleanup_image_config_ __attribute__((cleanup(aj_config_free)))

#endif
