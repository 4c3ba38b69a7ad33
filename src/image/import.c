#include "image/import.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/jfields.h"
#include "common/util.h"
#include "image/pull.h"
#include "image/ref.h"
#include "image/tarwrite.h"

#define DOC_MAX (4u << 20)
#define REF_NAME "org.opencontainers.image.ref.name"

/* ---- the documents of a layout and of docker save -------------------------------------- */

/* docker save's manifest.json: one entry per image. */
struct docker_entry {
	char *config;
	struct aj_strv tags, layers;
};

#define DE(m) offsetof(struct docker_entry, m)
static const struct aj_jf_field docker_rows[] = {
	{.name = "Config",
	 .type = AJ_JF_STRING,
	 .flags = AJ_JF_REQUIRED,
	 .off = DE(config),
	 .min = 1,
	 .max = 4096},
	{.name = "RepoTags", .type = AJ_JF_ARRAY, .off = DE(tags), .max = 1024},
	{.name = "Layers",
	 .type = AJ_JF_ARRAY,
	 .flags = AJ_JF_REQUIRED,
	 .off = DE(layers),
	 .max = 127},
	{0},
};
#undef DE

static const struct aj_jf_opts lenient = {AJ_LAYER_IMAGE, AJ_JF_IGNORE_UNKNOWN | AJ_JF_NULL_ABSENT,
					  NULL, NULL};

static int read_docker(const char *text, size_t len, struct docker_entry *d, struct aj_err *err)
{
	_cleanup_json_ json_t *root = json_loadb(text, len, 0, NULL);
	struct aj_jf_error e;
	struct aj_jf_opts o = lenient;

	memset(d, 0, sizeof *d);
	if (!json_is_array(root) || json_array_size(root) < 1)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "manifest.json: expected an array of images");
	if (json_array_size(root) > 1)
		return aj_err_set(err, AJ_LAYER_IMAGE, ENOTSUP,
				  "manifest.json holds %zu images: import takes one",
				  json_array_size(root)),
		       aj_err_hint(err, "save one image per archive");
	o.prefix = "manifest.json[0]";
	if (aj_jf_read(docker_rows, json_array_get(root, 0), d, &o, &e) < 0) {
		*err = e.err;
		return -1;
	}
	return 0;
}

static void docker_free(struct docker_entry *d)
{
	free(d->config);
	aj_strv_free(&d->tags);
	aj_strv_free(&d->layers);
}

/* The name an index entry carries (org.opencontainers.image.ref.name), if it is a whole
 * reference rather than a bare tag. */
static char *layout_name(const char *index, size_t len, size_t at)
{
	_cleanup_json_ json_t *root = json_loadb(index, len, 0, NULL);
	json_t *m = json_array_get(json_object_get(root, "manifests"), at);
	const char *n =
		json_string_value(json_object_get(json_object_get(m, "annotations"), REF_NAME));

	return n && (strchr(n, '/') || strchr(n, ':')) ? aj_xstrdup(n) : NULL;
}

/* ---- copying blobs in -------------------------------------------------------------------- */

/* Copies what fd holds (to its end) into the store: checked against expect when given (and
 * its size when size >= 0); its digest into out. */
static int copy_in(struct aj_images *im, int fd, const char *expect, int64_t size,
		   char out[AJ_DIGEST_SIZE], struct aj_err *err)
{
	_cleanup_blob_writer_ struct aj_blob_writer w = {.fd = -1};
	char buf[64 * 1024];
	ssize_t n;

	if (expect && aj_blobs_has(&im->blobs, expect)) {
		snprintf(out, AJ_DIGEST_SIZE, "%s", expect);
		return 0;
	}
	if ((expect ? aj_blob_resume(&im->blobs, expect, &w, err)
		    : aj_blob_begin(&im->blobs, &w, err)) < 0)
		return -1;
	if (w.size && aj_blob_restart(&w, err) < 0)
		return -1;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (aj_blob_write(&w, buf, (size_t)n, err) < 0)
			return -1;
	if (n < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "read");
	return aj_blob_commit(&w, size, out, err);
}

/* The same from the current entry of a tar. */
static int copy_entry(struct aj_images *im, struct archive *a, const char *expect, int64_t size,
		      char out[AJ_DIGEST_SIZE], struct aj_err *err)
{
	_cleanup_blob_writer_ struct aj_blob_writer w = {.fd = -1};
	char buf[64 * 1024];
	la_ssize_t n;

	if ((expect ? aj_blob_resume(&im->blobs, expect, &w, err)
		    : aj_blob_begin(&im->blobs, &w, err)) < 0)
		return -1;
	if (w.size && aj_blob_restart(&w, err) < 0)
		return -1;
	while ((n = archive_read_data(a, buf, sizeof buf)) > 0)
		if (aj_blob_write(&w, buf, (size_t)n, err) < 0)
			return -1;
	if (n < 0)
		return aj_err_set(err, AJ_LAYER_IMAGE, EIO, "read: %s", archive_error_string(a));
	return aj_blob_commit(&w, size, out, err);
}

/* ---- the common end: a manifest in the store, its config and layers --------------------- */

static int finish_ex(struct aj_images *im, const char *manifest_digest, const char *source,
		     const char *name, bool unnamed, const struct aj_import_opts *o,
		     struct aj_image_rec *out, struct aj_err *err)
{
	_cleanup_free_ char *text = NULL, *ctext = NULL;
	_cleanup_manifest_ struct aj_manifest m = {0};
	_cleanup_image_config_ struct aj_image_config c = {0};
	char what[100];
	size_t len, clen;
	uint64_t size = 0;

	snprintf(what, sizeof what, "manifest %s", manifest_digest);
	text = aj_blobs_read(&im->blobs, manifest_digest, DOC_MAX, &len, err);
	if (!text || aj_manifest_parse(text, len, what, &m, err) < 0)
		return -1;
	snprintf(what, sizeof what, "config %s", m.config.digest);
	ctext = aj_blobs_read(&im->blobs, m.config.digest, DOC_MAX, &clen, err);
	if (!ctext || aj_config_parse(ctext, clen, what, &c, err) < 0)
		return -1;
	if (c.diff_ids.n != m.layers.n)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s: %zu diff_ids for %zu layers",
				  what, c.diff_ids.n, m.layers.n);
	for (size_t i = 0; i < m.layers.n; i++) {
		snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m.layers.n);
		if (!aj_blobs_has(&im->blobs, m.layers.v[i].digest))
			return aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "%s: the blob %s is missing",
					  what, m.layers.v[i].digest);
		if (aj_images_layer_add(im, m.layers.v[i].digest, c.diff_ids.v[i], what, NULL,
					err) < 0)
			return -1;
		size += (uint64_t)m.layers.v[i].size;
	}
	if (!name && !unnamed)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "the image has no name of its own"),
		       aj_err_hint(err, "name it with --name");
	return aj_images_register(im, manifest_digest, &m, &c, source, o->owner ? o->owner : "",
				  name, size, out, err);
}

static int finish(struct aj_images *im, const char *manifest_digest, const char *source,
		  const char *name, const struct aj_import_opts *o, struct aj_image_rec *out,
		  struct aj_err *err)
{
	return finish_ex(im, manifest_digest, source, name, false, o, out, err);
}

/* A manifest for a config and layers the store holds (docker save, a rootfs tarball). */
static int synthesize(struct aj_images *im, const char *config, const char *const *layers,
		      const char *const *types, size_t n, char out[AJ_DIGEST_SIZE],
		      struct aj_err *err)
{
	_cleanup_json_ json_t *doc = NULL;
	json_t *ls = json_array();
	_cleanup_free_ char *text = NULL;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(
			ls, json_pack("{s:s, s:s, s:I}", "mediaType", types[i], "digest", layers[i],
				      "size", (json_int_t)aj_blobs_size(&im->blobs, layers[i])));
	doc = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:o}", "schemaVersion", 2, "mediaType",
			AJ_MT_OCI_MANIFEST, "config", "mediaType", AJ_MT_OCI_CONFIG, "digest",
			config, "size", (json_int_t)aj_blobs_size(&im->blobs, config), "layers",
			ls);
	text = json_dumps(doc, JSON_COMPACT);
	return aj_blobs_put(&im->blobs, text, strlen(text), out, err);
}

static const char *layer_type_of(int fd);

int aj_image_commit(struct aj_images *im, const char *config, const struct aj_strv *layers,
		    const char *source, const char *owner, const char *name,
		    struct aj_image_rec *out, struct aj_err *err)
{
	char cdigest[AJ_DIGEST_SIZE], manifest[AJ_DIGEST_SIZE];
	const char **types = aj_xcalloc(layers->n + 1, sizeof *types);
	struct aj_import_opts o = {.owner = owner};
	int r;

	for (size_t i = 0; i < layers->n; i++) {
		_cleanup_close_ int fd = aj_blobs_open_blob(&im->blobs, layers->v[i], NULL);

		types[i] = fd >= 0 ? layer_type_of(fd) : AJ_MT_OCI_LAYER_GZIP;
	}
	r = aj_blobs_put(&im->blobs, config, strlen(config), cdigest, err);
	if (r == 0)
		r = synthesize(im, cdigest, (const char *const *)layers->v, types, layers->n,
			       manifest, err);
	free(types);
	if (r < 0)
		return -1;
	return finish_ex(im, manifest, source, name, true, &o, out, err);
}

/* ---- OCI layouts -------------------------------------------------------------------------- */

/* The manifest an index (index.json or a nested one) names for the import: the one named
 * o->name, the only one, or the platform's entry of a nested index. */
static int pick_entry(struct aj_images *im, const char *text, size_t len, const char *what,
		      const struct aj_import_opts *o, char digest[AJ_DIGEST_SIZE], char **name,
		      struct aj_err *err)
{
	_cleanup_index_ struct aj_index x = {0};
	char platform[96], os[32], arch[32], variant[32] = "";
	size_t at = 0;

	if (aj_index_parse(text, len, what, &x, err) < 0)
		return -1;
	if (x.manifests.n == 0)
		return aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "%s names no image", what);
	if (x.manifests.n > 1 && x.manifests.v[0].os) {
		if (o->platform)
			snprintf(platform, sizeof platform, "%s", o->platform);
		else
			aj_image_host_platform(platform, sizeof platform);
		sscanf(platform, "%31[^/]/%31[^/]/%31s", os, arch, variant);
		if (aj_index_pick(&x, os, arch, variant, what, &at, err) < 0)
			return -1;
	} else if (x.manifests.n > 1) {
		return aj_err_set(err, AJ_LAYER_IMAGE, ENOTSUP,
				  "%s names %zu images: import takes one", what, x.manifests.n);
	}
	snprintf(digest, AJ_DIGEST_SIZE, "%s", x.manifests.v[at].digest);
	if (name && !*name)
		*name = layout_name(text, len, at);
	if (!strcmp(x.manifests.v[at].media_type, AJ_MT_OCI_INDEX) ||
	    !strcmp(x.manifests.v[at].media_type, AJ_MT_DOCKER_LIST)) {
		_cleanup_free_ char *inner = NULL;
		char iw[100];
		size_t ilen;
		snprintf(iw, sizeof iw, "index %s", digest);
		inner = aj_blobs_read(&im->blobs, digest, DOC_MAX, &ilen, err);
		return inner ? pick_entry(im, inner, ilen, iw, o, digest, NULL, err) : -1;
	}
	return 0;
}

/* Copies the blob `digest` of the layout directory into the store. */
static int layout_blob(struct aj_images *im, int dir, const char *digest, struct aj_err *err)
{
	char path[96], got[AJ_DIGEST_SIZE];
	_cleanup_close_ int fd = -1;

	if (aj_blobs_has(&im->blobs, digest))
		return 0;
	snprintf(path, sizeof path, "blobs/sha256/%s", aj_digest_hex(digest));
	fd = openat(dir, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "the layout's blob %s", digest);
	return copy_in(im, fd, digest, -1, got, err);
}

/* The blobs a manifest needs, from the layout into the store. */
static int layout_manifest(struct aj_images *im, int dir, const char *digest, struct aj_err *err)
{
	_cleanup_free_ char *text = NULL;
	struct aj_manifest m;
	char what[100];
	size_t len;
	int r = 0;

	if (layout_blob(im, dir, digest, err) < 0)
		return -1;
	snprintf(what, sizeof what, "manifest %s", digest);
	text = aj_blobs_read(&im->blobs, digest, DOC_MAX, &len, err);
	if (!text || aj_manifest_parse(text, len, what, &m, err) < 0)
		return -1;
	r = layout_blob(im, dir, m.config.digest, err);
	for (size_t i = 0; r == 0 && i < m.layers.n; i++)
		r = layout_blob(im, dir, m.layers.v[i].digest, err);
	aj_manifest_free(&m);
	return r;
}

static int import_layout_dir(struct aj_images *im, const char *path, const struct aj_import_opts *o,
			     struct aj_image_rec *out, struct aj_err *err)
{
	_cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *index = NULL, *name = o->name ? aj_xstrdup(o->name) : NULL;
	char digest[AJ_DIGEST_SIZE];
	size_t len;

	if (dir < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", path);
	if (faccessat(dir, "oci-layout", F_OK, 0) < 0)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "\"%s\" is not an OCI layout (no oci-layout file)", path);
	index = aj_read_file_at(dir, "index.json", DOC_MAX, &len);
	if (!index)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "read \"%s/index.json\"", path);
	/* A nested index is a blob: it is copied in first, then picked from. */
	if (pick_entry(im, index, len, "index.json", o, digest, &name, err) < 0 &&
	    (err->errnum != ENOENT || layout_blob(im, dir, digest, err) < 0 ||
	     pick_entry(im, index, len, "index.json", o, digest, &name, err) < 0))
		return -1;
	if (layout_manifest(im, dir, digest, err) < 0)
		return -1;
	return finish(im, digest, path, name, o, out, err);
}

/* ---- tars: OCI layouts, docker save, root filesystems ------------------------------------ */

enum tar_kind { TAR_ROOTFS = 0, TAR_LAYOUT, TAR_DOCKER };

static struct archive *open_tar(const char *path, int *fd, struct aj_err *err)
{
	struct archive *a = archive_read_new();

	if (!a)
		aj_oom(0);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 || archive_read_open_fd(a, *fd, 64 * 1024) != ARCHIVE_OK) {
		aj_err_set(err, AJ_LAYER_IMAGE, *fd < 0 ? errno : EINVAL,
			   "\"%s\" is not a directory or a tar (%s)", path,
			   *fd < 0 ? strerror(errno) : archive_error_string(a));
		archive_read_free(a);
		if (*fd >= 0)
			close(*fd);
		return NULL;
	}
	return a;
}

static const char *entry_name(struct archive_entry *e)
{
	const char *n = archive_entry_pathname(e);

	while (n && n[0] == '.' && n[1] == '/')
		n += 2;
	return n ? n : "";
}

static int tar_kind(const char *path, enum tar_kind *kind, struct aj_err *err)
{
	int fd;
	struct archive *a = open_tar(path, &fd, err);
	struct archive_entry *e;
	int r;

	if (!a)
		return -1;
	*kind = TAR_ROOTFS;
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *n = entry_name(e);
		if (!strcmp(n, "oci-layout") || !strcmp(n, "index.json"))
			*kind = TAR_LAYOUT;
		else if (!strcmp(n, "manifest.json") && *kind == TAR_ROOTFS)
			*kind = TAR_DOCKER;
	}
	if (r != ARCHIVE_EOF)
		aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "\"%s\": not a valid tar: %s", path,
			   archive_error_string(a));
	archive_read_free(a);
	close(fd);
	return r == ARCHIVE_EOF ? 0 : -1;
}

/* What one pass over a layout or docker tar keeps: the documents, and every file's blob. */
struct scanned {
	char *index, *manifest;
	size_t index_len, manifest_len;
	struct aj_strv paths, digests; /* docker save: each stored file's path and digest */
};

static int scan_entry(struct aj_images *im, struct archive *a, struct archive_entry *e,
		      enum tar_kind kind, struct scanned *s, struct aj_err *err)
{
	const char *n = entry_name(e);
	char got[AJ_DIGEST_SIZE], expect[AJ_DIGEST_SIZE];
	int64_t size = archive_entry_size(e);

	if (archive_entry_filetype(e) != AE_IFREG)
		return 0;
	if (!strcmp(n, kind == TAR_LAYOUT ? "index.json" : "manifest.json")) {
		char **dst = kind == TAR_LAYOUT ? &s->index : &s->manifest;
		size_t *dlen = kind == TAR_LAYOUT ? &s->index_len : &s->manifest_len;
		if (size < 0 || size > (int64_t)DOC_MAX)
			return aj_err_set(err, AJ_LAYER_IMAGE, EFBIG, "%s is too large", n);
		free(*dst);
		*dst = aj_xmalloc((size_t)size + 1);
		if (archive_read_data(a, *dst, (size_t)size) != size)
			return aj_err_set(err, AJ_LAYER_IMAGE, EIO, "read %s", n);
		(*dst)[size] = '\0';
		*dlen = (size_t)size;
		return 0;
	}
	if (kind == TAR_LAYOUT) {
		if (strncmp(n, "blobs/sha256/", 13) != 0)
			return 0;
		snprintf(expect, sizeof expect, "sha256:%s", n + 13);
		if (!aj_digest_valid(expect))
			return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
					  "the layout's blob \"%s\" is not named by a digest", n);
		return aj_blobs_has(&im->blobs, expect) ? 0
							: copy_entry(im, a, expect, size, got, err);
	}
	if (copy_entry(im, a, NULL, size, got, err) < 0)
		return -1;
	aj_strv_push(&s->paths, n);
	aj_strv_push(&s->digests, got);
	return 0;
}

static int scan_tar(struct aj_images *im, const char *path, enum tar_kind kind, struct scanned *s,
		    struct aj_err *err)
{
	int fd, r;
	struct archive *a = open_tar(path, &fd, err);
	struct archive_entry *e;

	if (!a)
		return -1;
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK)
		if (scan_entry(im, a, e, kind, s, err) < 0)
			break;
	archive_read_free(a);
	close(fd);
	if (r == ARCHIVE_OK)
		return -1;
	return 0;
}

static const char *scanned_digest(const struct scanned *s, const char *path)
{
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	for (size_t i = 0; i < s->paths.n; i++)
		if (!strcmp(s->paths.v[i], path))
			return s->digests.v[i];
	return NULL;
}

static int import_docker(struct aj_images *im, const struct scanned *s, const char *path,
			 const struct aj_import_opts *o, struct aj_image_rec *out,
			 struct aj_err *err)
{
	__attribute__((cleanup(docker_free))) struct docker_entry d = {0};
	const char *config;
	_cleanup_free_ const char **layers = NULL, **types = NULL;
	char manifest[AJ_DIGEST_SIZE];

	if (!s->manifest)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "\"%s\" has no manifest.json", path);
	if (read_docker(s->manifest, s->manifest_len, &d, err) < 0)
		return -1;
	if (!(config = scanned_digest(s, d.config)))
		return aj_err_set(err, AJ_LAYER_IMAGE, ENOENT,
				  "manifest.json names the config \"%s\", "
				  "which the archive does not hold",
				  d.config);
	layers = aj_xcalloc(d.layers.n + 1, sizeof *layers);
	types = aj_xcalloc(d.layers.n + 1, sizeof *types);
	for (size_t i = 0; i < d.layers.n; i++) {
		if (!(layers[i] = scanned_digest(s, d.layers.v[i])))
			return aj_err_set(err, AJ_LAYER_IMAGE, ENOENT,
					  "manifest.json[0].Layers[%zu]: \"%s\" "
					  "is not in the archive",
					  i, d.layers.v[i]);
		types[i] = AJ_MT_OCI_LAYER;
	}
	if (synthesize(im, config, layers, types, d.layers.n, manifest, err) < 0)
		return -1;
	return finish(im, manifest, path,
		      o->name    ? o->name
		      : d.tags.n ? d.tags.v[0]
				 : NULL,
		      o, out, err);
}

static const char *layer_type_of(int fd)
{
	unsigned char m[4] = {0};
	ssize_t n = pread(fd, m, sizeof m, 0);

	if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
		return AJ_MT_OCI_LAYER_GZIP;
	if (n == 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
		return AJ_MT_OCI_LAYER_ZSTD;
	return AJ_MT_OCI_LAYER;
}

/* A root filesystem tarball: one layer, and a config with PATH for its only default. */
static int import_rootfs(struct aj_images *im, const char *path, const struct aj_import_opts *o,
			 struct aj_image_rec *out, struct aj_err *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char blob[AJ_DIGEST_SIZE], diff_id[AJ_DIGEST_SIZE], config[AJ_DIGEST_SIZE];
	char manifest[AJ_DIGEST_SIZE], platform[96];
	const char *layers[1] = {blob}, *types[1];
	_cleanup_json_ json_t *doc = NULL;
	_cleanup_free_ char *text = NULL;

	if (!o->name)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "\"%s\" is a root filesystem tarball, which carries no name",
				  path),
		       aj_err_hint(err, "name it with --name");
	if (fd < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "open \"%s\"", path);
	types[0] = layer_type_of(fd);
	if (copy_in(im, fd, NULL, -1, blob, err) < 0 ||
	    aj_images_layer_add(im, blob, NULL, "the root filesystem", diff_id, err) < 0)
		return -1;
	aj_image_host_platform(platform, sizeof platform);
	/* A history entry for the layer: builders on top (buildah's too) check that the
	 * non-empty entries are as many as the layers. */
	doc = json_pack("{s:s, s:s, s:{s:[s]}, s:{s:s, s:[s]}, s:[{s:s}]}", "architecture",
			strchr(platform, '/') + 1, "os", "linux", "config", "Env",
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"rootfs", "type", "layers", "diff_ids", diff_id, "history", "created_by",
			"agentjail image import (a root filesystem tarball)");
	text = json_dumps(doc, JSON_COMPACT);
	if (aj_blobs_put(&im->blobs, text, strlen(text), config, err) < 0 ||
	    synthesize(im, config, layers, types, 1, manifest, err) < 0)
		return -1;
	return finish(im, manifest, path, o->name, o, out, err);
}

static void scanned_free(struct scanned *s)
{
	free(s->index);
	free(s->manifest);
	aj_strv_free(&s->paths);
	aj_strv_free(&s->digests);
}

static int import_tar(struct aj_images *im, const char *path, const struct aj_import_opts *o,
		      struct aj_image_rec *out, struct aj_err *err)
{
	__attribute__((cleanup(scanned_free))) struct scanned s = {0};
	enum tar_kind kind;
	_cleanup_free_ char *name = o->name ? aj_xstrdup(o->name) : NULL;
	char digest[AJ_DIGEST_SIZE];

	if (tar_kind(path, &kind, err) < 0)
		return -1;
	if (kind == TAR_ROOTFS)
		return import_rootfs(im, path, o, out, err);
	if (scan_tar(im, path, kind, &s, err) < 0)
		return -1;
	if (kind == TAR_DOCKER)
		return import_docker(im, &s, path, o, out, err);
	if (!s.index)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL,
				  "\"%s\": an OCI layout without index.json", path);
	if (pick_entry(im, s.index, s.index_len, "index.json", o, digest, &name, err) < 0)
		return -1;
	return finish(im, digest, path, name, o, out, err);
}

int aj_image_import(struct aj_images *im, const char *path, const struct aj_import_opts *o,
		    struct aj_image_rec *out, struct aj_err *err)
{
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_IMAGE, "import \"%s\"", path);
	if (aj_images_lock(im, err) < 0)
		return -1;
	r = S_ISDIR(st.st_mode) ? import_layout_dir(im, path, o, out, err)
				: import_tar(im, path, o, out, err);
	aj_images_unlock(im);
	if (r < 0)
		aj_err_prefix(err, "import \"%s\"", path);
	return r;
}

/* ---- export ------------------------------------------------------------------------------ */

static int export_blob(struct aj_images *im, int out, const char *digest, struct aj_err *err)
{
	char name[96];
	_cleanup_close_ int fd = aj_blobs_open_blob(&im->blobs, digest, err);
	int64_t size = aj_blobs_size(&im->blobs, digest);

	if (fd < 0 || size < 0)
		return -1;
	snprintf(name, sizeof name, "blobs/sha256/%s", aj_digest_hex(digest));
	return aj_tar_copy(out, name, fd, (uint64_t)size, err);
}

static int export_doc(int out, const char *name, const char *text, struct aj_err *err)
{
	size_t len = strlen(text);

	return aj_tar_file(out, name, len, err) < 0 || aj_tar_data(out, text, len, err) < 0
		       ? -1
		       : aj_tar_pad(out, len, err);
}

static int write_layout(struct aj_images *im, int out, const struct aj_image_rec *rec,
			const struct aj_manifest *m, const char *name, struct aj_err *err)
{
	_cleanup_json_ json_t *index =
		json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:{s:s}}]}", "schemaVersion", 2,
			  "mediaType", AJ_MT_OCI_INDEX, "manifests", "mediaType",
			  m->media_type ? m->media_type : AJ_MT_OCI_MANIFEST, "digest", rec->digest,
			  "size", (json_int_t)aj_blobs_size(&im->blobs, rec->digest), "annotations",
			  REF_NAME, name);
	_cleanup_free_ char *text = json_dumps(index, JSON_COMPACT);

	if (export_doc(out, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", err) < 0 ||
	    export_doc(out, "index.json", text, err) < 0 ||
	    export_blob(im, out, rec->digest, err) < 0 ||
	    export_blob(im, out, rec->config, err) < 0)
		return -1;
	for (size_t i = 0; i < m->layers.n; i++)
		if (export_blob(im, out, m->layers.v[i].digest, err) < 0)
			return -1;
	return aj_tar_end(out, err);
}

static const char *export_name(const char *ref, const struct aj_image_rec *rec, char *buf,
			       size_t len)
{
	struct aj_image_ref r;
	char why[128];

	if (!aj_digest_valid(ref) && aj_image_ref_parse(ref, &r, why, sizeof why) == 0) {
		r.digest[0] = '\0';
		aj_image_ref_format(&r, buf, len);
		for (size_t i = 0; i < rec->names.n; i++)
			if (!strcmp(rec->names.v[i], buf))
				return buf;
	}
	return rec->names.n ? rec->names.v[0] : rec->digest;
}

int aj_image_export(struct aj_images *im, const char *owner, const char *ref, const char *path,
		    struct aj_err *err)
{
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	_cleanup_manifest_ struct aj_manifest m = {0};
	_cleanup_free_ char *text = NULL, *tmp = NULL;
	char what[100], name[700];
	size_t len;
	int out = 1, r;

	if (aj_images_find(im, owner, ref, &rec, NULL, err) < 0)
		return -1;
	snprintf(what, sizeof what, "manifest %s", rec.digest);
	text = aj_blobs_read(&im->blobs, rec.digest, DOC_MAX, &len, err);
	if (!text || aj_manifest_parse(text, len, what, &m, err) < 0)
		return -1;
	/* A file appears whole or not at all: written beside it, renamed at the end. */
	if (strcmp(path, "-") != 0) {
		tmp = aj_xasprintf("%s.tmp-%d", path, (int)getpid());
		out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (out < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "create \"%s\"", tmp);
	}
	/* Named as asked: the name given, or (given an id) the image's first one. */
	r = write_layout(im, out, &rec, &m, export_name(ref, &rec, name, sizeof name), err);
	if (tmp) {
		if (r == 0 && (fsync(out) < 0 || rename(tmp, path) < 0))
			r = aj_err_sys(err, AJ_LAYER_IO, "write \"%s\"", path);
		close(out);
		if (r < 0)
			unlink(tmp);
	}
	return r;
}
