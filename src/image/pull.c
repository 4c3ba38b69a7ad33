#include "image/pull.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "image/ref.h"

void aj_image_host_platform(char *buf, size_t len)
{
	struct utsname u;
	const char *arch = "amd64";

	if (uname(&u) == 0) {
		if (!strcmp(u.machine, "aarch64"))
			arch = "arm64";
		else if (!strcmp(u.machine, "x86_64"))
			arch = "amd64";
		else
			arch = u.machine;
	}
	snprintf(buf, len, "linux/%s", arch);
}

static int split_platform(const char *p, char os[32], char arch[32], char variant[32],
			  struct aj_err *err)
{
	int n;

	os[0] = arch[0] = variant[0] = '\0';
	n = sscanf(p, "%31[^/]/%31[^/]/%31s", os, arch, variant);
	if (n < 2)
		return aj_err_set(
			err, AJ_LAYER_USAGE, EINVAL,
			"--platform: expected OS/ARCH[/VARIANT] (linux/amd64), got \"%s\"", p);
	return 0;
}

/* The manifest to pull: `reference` itself, or the platform's entry of the index it is. */
static int resolve_manifest(struct aj_registry *r, struct aj_images *im, const char *reference,
			    const char *platform, char **body, size_t *len, char digest[],
			    struct aj_err *err)
{
	char mt[128], what[300], os[32], arch[32], variant[32];
	struct aj_index x;
	size_t at;
	char dg[AJ_DIGEST_SIZE];

	if (aj_registry_manifest(r, reference, body, len, mt, digest, err) < 0)
		return -1;
	if (aj_doc_kind(*body, *len, mt) != AJ_DOC_INDEX)
		return aj_blobs_put(&im->blobs, *body, *len, dg, err);
	snprintf(what, sizeof what, "index %s", digest);
	if (split_platform(platform, os, arch, variant, err) < 0 ||
	    aj_index_parse(*body, *len, what, &x, err) < 0)
		return -1;
	if (aj_index_pick(&x, os, arch, variant, what, &at, err) < 0) {
		aj_index_free(&x);
		return -1;
	}
	snprintf(dg, sizeof dg, "%s", x.manifests.v[at].digest);
	aj_index_free(&x);
	free(*body);
	*body = NULL;
	if (aj_registry_manifest(r, dg, body, len, mt, digest, err) < 0)
		return -1;
	if (aj_doc_kind(*body, *len, mt) != AJ_DOC_MANIFEST)
		return aj_err_set(err, AJ_LAYER_IMAGE, EPROTO,
				  "%s: the entry for %s is not an image manifest", what, platform);
	return aj_blobs_put(&im->blobs, *body, *len, dg, err);
}

static int fetch_all(struct aj_registry *r, struct aj_images *im, const struct aj_manifest *m,
		     struct aj_err *err)
{
	size_t n = m->layers.n + 1;
	_cleanup_free_ struct aj_blob_want *w = aj_xcalloc(n, sizeof *w);
	_cleanup_free_ char *labels = aj_xcalloc(n, 32);

	snprintf(w[0].digest, sizeof w[0].digest, "%s", m->config.digest);
	w[0].size = m->config.size;
	w[0].label = "config";
	for (size_t i = 0; i < m->layers.n; i++) {
		snprintf(w[i + 1].digest, sizeof w[i + 1].digest, "%s", m->layers.v[i].digest);
		w[i + 1].size = m->layers.v[i].size;
		snprintf(labels + 32 * (i + 1), 32, "layer %zu/%zu", i + 1, m->layers.n);
		w[i + 1].label = labels + 32 * (i + 1);
	}
	return aj_registry_blobs(r, &im->blobs, w, n, err);
}

static int unpack_all(struct aj_images *im, const struct aj_manifest *m,
		      const struct aj_image_config *c, FILE *progress, struct aj_err *err)
{
	char what[64];

	for (size_t i = 0; i < m->layers.n; i++) {
		snprintf(what, sizeof what, "layer %zu/%zu", i + 1, m->layers.n);
		if (progress && !aj_images_has_layer(im, c->diff_ids.v[i]))
			fprintf(progress, "%-12s unpacking %.19s\n", what, c->diff_ids.v[i]);
		if (aj_images_layer_add(im, m->layers.v[i].digest, c->diff_ids.v[i], what, NULL,
					err) < 0)
			return -1;
	}
	return 0;
}

static void registry_closep(struct aj_registry **r)
{
	aj_registry_close(*r);
}

/* The pull itself, with the store locked (the caller unlocks it). */
static int pull_locked(struct aj_images *im, const char *ref, const struct aj_image_ref *r,
		       const struct aj_pull_opts *o, struct aj_image_rec *out, struct aj_err *err)
{
	__attribute__((cleanup(registry_closep))) struct aj_registry *reg = NULL;
	_cleanup_manifest_ struct aj_manifest m = {0};
	_cleanup_image_config_ struct aj_image_config c = {0};
	char digest[AJ_DIGEST_SIZE], platform[96], canon[700], what[100];
	_cleanup_free_ char *body = NULL, *config = NULL;
	size_t len = 0, clen = 0;
	uint64_t bytes = 0;

	if (o->platform)
		snprintf(platform, sizeof platform, "%s", o->platform);
	else
		aj_image_host_platform(platform, sizeof platform);
	aj_image_ref_format(r, canon, sizeof canon);
	if (aj_registry_open(r, &o->registry, &reg, err) < 0 ||
	    resolve_manifest(reg, im, r->digest[0] ? r->digest : r->tag, platform, &body, &len,
			     digest, err) < 0)
		return -1;
	snprintf(what, sizeof what, "manifest %s", digest);
	if (aj_manifest_parse(body, len, what, &m, err) < 0 || fetch_all(reg, im, &m, err) < 0)
		return -1;
	snprintf(what, sizeof what, "config %s", m.config.digest);
	config = aj_blobs_read(&im->blobs, m.config.digest, 8u << 20, &clen, err);
	if (!config || aj_config_parse(config, clen, what, &c, err) < 0)
		return -1;
	if (c.diff_ids.n != m.layers.n)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s: %zu diff_ids for %zu layers",
				  what, c.diff_ids.n, m.layers.n);
	if (unpack_all(im, &m, &c, o->registry.progress, err) < 0)
		return -1;
	/* The image's size: its layers as the registry sends them. */
	bytes = m.config.size > 0 ? (uint64_t)m.config.size : 0;
	for (size_t i = 0; i < m.layers.n; i++)
		bytes += (uint64_t)m.layers.v[i].size;
	return aj_images_register(im, digest, &m, &c, canon, o->owner ? o->owner : "", ref, bytes,
				  out, err);
}

int aj_image_pull(struct aj_images *im, const char *ref, const struct aj_pull_opts *o,
		  struct aj_image_rec *out, struct aj_err *err)
{
	struct aj_image_ref r;
	char why[256];
	int ret;

	if (aj_image_ref_parse(ref, &r, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "image \"%s\": %s", ref, why);
	ret = aj_images_lock(im, err) < 0 ? -1 : pull_locked(im, ref, &r, o, out, err);
	if (ret < 0)
		aj_err_prefix(err, "pull %s", ref);
	aj_images_unlock(im);
	return ret;
}
