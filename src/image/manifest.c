#include "image/manifest.h"

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/jfields.h"

/* ---- rows ------------------------------------------------------------------------------- */

static int parse_digest(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	(void)o;
	if (!aj_digest_valid(json_string_value(v)))
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "%s: \"%s\" is not a sha256 digest (sha256: and 64 hex digits)",
				  path, json_string_value(v));
	snprintf(dst, AJ_DIGEST_SIZE, "%s", json_string_value(v));
	return 0;
}

#define D(m) offsetof(struct aj_descriptor, m)
static const struct aj_jf_field platform_rows[] = {
	{.name = "os", .type = AJ_JF_STRING, .off = D(os), .max = 64},
	{.name = "architecture", .type = AJ_JF_STRING, .off = D(arch), .max = 64},
	{.name = "variant", .type = AJ_JF_STRING, .off = D(variant), .max = 64},
	{0},
};
static const struct aj_jf_field desc_rows[] = {
	{.name = "mediaType",
	 .type = AJ_JF_STRING,
	 .flags = AJ_JF_REQUIRED,
	 .off = D(media_type),
	 .min = 1,
	 .max = 255},
	{.name = "digest",
	 .type = AJ_JF_STRING,
	 .flags = AJ_JF_REQUIRED,
	 .off = D(digest),
	 .parse = parse_digest},
	{.name = "size",
	 .type = AJ_JF_INT,
	 .flags = AJ_JF_REQUIRED,
	 .off = D(size),
	 .min = 0,
	 .max = INT64_MAX},
	{.name = "platform", .type = AJ_JF_OBJECT, .sub = platform_rows},
	{0},
};
#undef D

static void desc_free(struct aj_descriptor *d)
{
	free(d->media_type);
	free(d->os);
	free(d->arch);
	free(d->variant);
	memset(d, 0, sizeof *d);
}

static void descs_free(struct aj_descs *v)
{
	for (size_t i = 0; i < v->n; i++)
		desc_free(&v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

/* One element of a descriptors array, read into a new entry of the struct aj_descs at dst. */
static int parse_desc_el(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_descs *ds = dst;
	struct aj_descriptor *d;
	int r;

	(void)f;
	ds->v = aj_xrealloc(ds->v, (ds->n + 1) * sizeof *ds->v);
	d = &ds->v[ds->n++];
	memset(d, 0, sizeof *d);
	r = aj_jf_read(desc_rows, v, d, &(struct aj_jf_opts){o->layer, o->flags, path, o->arg}, e);
	return r;
}

static const struct aj_jf_field desc_el = {.name = "",
					   .type = AJ_JF_OBJECT,
					   .parse = parse_desc_el};

static const struct aj_jf_field index_rows[] = {
	{.name = "mediaType", .type = AJ_JF_STRING, .off = offsetof(struct aj_index, media_type)},
	{.name = "manifests",
	 .type = AJ_JF_ARRAY,
	 .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct aj_index, manifests),
	 .sub = &desc_el,
	 .max = 4096},
	{0},
};

static int parse_config_desc(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	(void)f;
	return aj_jf_read(desc_rows, v, dst, &(struct aj_jf_opts){o->layer, o->flags, path, o->arg},
			  e);
}

static const struct aj_jf_field manifest_rows[] = {
	{.name = "mediaType",
	 .type = AJ_JF_STRING,
	 .off = offsetof(struct aj_manifest, media_type)},
	{.name = "config",
	 .type = AJ_JF_OBJECT,
	 .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct aj_manifest, config),
	 .parse = parse_config_desc},
	{.name = "layers",
	 .type = AJ_JF_ARRAY,
	 .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct aj_manifest, layers),
	 .sub = &desc_el,
	 .max = 127},
	{0},
};

#define C(m) offsetof(struct aj_image_config, m)
static int check_digest(const char *path, const char *s, struct aj_err *err)
{
	if (aj_digest_valid(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s: \"%s\" is not a sha256 digest", path,
			  s);
}
/* Labels: only the two agentjail reads; other labels, and values that are not strings, are
 * the image's own business. */
static int parse_labels(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_image_config *c = dst;
	const char *start = json_string_value(json_object_get(v, AJ_LABEL_START));
	const char *ready = json_string_value(json_object_get(v, AJ_LABEL_READY));
	const char *build = json_string_value(json_object_get(v, AJ_LABEL_BUILD));

	(void)f, (void)path, (void)o, (void)e;
	if (!c)
		return 0;
	if (start && strlen(start) <= 65536)
		c->start_cmd = aj_xstrdup(start);
	if (ready && strlen(ready) <= 65536)
		c->ready_cmd = aj_xstrdup(ready);
	if (build && strlen(build) <= 64)
		c->build_id = aj_xstrdup(build);
	return 0;
}

static const struct aj_jf_field process_rows[] = {
	{.name = "Env", .type = AJ_JF_ARRAY, .off = C(env), .max = 4096},
	{.name = "Entrypoint", .type = AJ_JF_ARRAY, .off = C(entrypoint), .max = 4096},
	{.name = "Cmd", .type = AJ_JF_ARRAY, .off = C(cmd), .max = 4096},
	{.name = "User", .type = AJ_JF_STRING, .off = C(user), .max = 256},
	{.name = "WorkingDir", .type = AJ_JF_STRING, .off = C(workdir), .max = 4096},
	{.name = "StopSignal", .type = AJ_JF_STRING, .off = C(stop_signal), .max = 32},
	{.name = "Labels", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = parse_labels},
	{0},
};
static const struct aj_jf_field rootfs_rows[] = {
	{.name = "diff_ids",
	 .type = AJ_JF_ARRAY,
	 .flags = AJ_JF_REQUIRED,
	 .off = C(diff_ids),
	 .max = 127,
	 .check = check_digest},
	{0},
};
static const struct aj_jf_field config_rows[] = {
	{.name = "os", .type = AJ_JF_STRING, .off = C(os), .max = 64},
	{.name = "architecture", .type = AJ_JF_STRING, .off = C(arch), .max = 64},
	{.name = "variant", .type = AJ_JF_STRING, .off = C(variant), .max = 64},
	{.name = "created", .type = AJ_JF_STRING, .off = C(created), .max = 64},
	{.name = "config", .type = AJ_JF_OBJECT, .sub = process_rows},
	{.name = "rootfs", .type = AJ_JF_OBJECT, .flags = AJ_JF_REQUIRED, .sub = rootfs_rows},
	{0},
};
#undef C

/* ---- documents -------------------------------------------------------------------------- */

static int read_doc(const struct aj_jf_field *rows, const char *body, size_t len, const char *what,
		    void *base, struct aj_err *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	struct aj_jf_opts o = {AJ_LAYER_IMAGE, AJ_JF_IGNORE_UNKNOWN | AJ_JF_NULL_ABSENT, NULL,
			       NULL};
	struct aj_jf_error e;
	int r;

	if (!root)
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s: line %d: %s", what, jerr.line,
				  jerr.text);
	if (!json_is_object(root)) {
		json_decref(root);
		return aj_err_set(err, AJ_LAYER_IMAGE, EINVAL, "%s: expected a JSON object", what);
	}
	r = aj_jf_read(rows, root, base, &o, &e);
	json_decref(root);
	if (r < 0) {
		*err = e.err;
		aj_err_prefix(err, "%s", what);
	}
	return r;
}

enum aj_doc_kind aj_doc_kind(const char *body, size_t len, const char *media_type)
{
	json_t *root = json_loadb(body, len, 0, NULL);
	const char *mt = json_string_value(json_object_get(root, "mediaType"));
	enum aj_doc_kind k = AJ_DOC_UNKNOWN;

	if (!mt || !*mt)
		mt = media_type;
	if (mt && (!strcmp(mt, AJ_MT_OCI_INDEX) || !strcmp(mt, AJ_MT_DOCKER_LIST)))
		k = AJ_DOC_INDEX;
	else if (mt && (!strcmp(mt, AJ_MT_OCI_MANIFEST) || !strcmp(mt, AJ_MT_DOCKER_MANIFEST)))
		k = AJ_DOC_MANIFEST;
	else if (json_is_array(json_object_get(root, "manifests")))
		k = AJ_DOC_INDEX;
	else if (json_is_array(json_object_get(root, "layers")))
		k = AJ_DOC_MANIFEST;
	json_decref(root);
	return k;
}

int aj_index_parse(const char *body, size_t len, const char *what, struct aj_index *x,
		   struct aj_err *err)
{
	memset(x, 0, sizeof *x);
	if (read_doc(index_rows, body, len, what, x, err) < 0) {
		aj_index_free(x);
		return -1;
	}
	return 0;
}

void aj_index_free(struct aj_index *x)
{
	free(x->media_type);
	descs_free(&x->manifests);
	x->media_type = NULL;
}

static bool eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

int aj_index_pick(const struct aj_index *x, const char *os, const char *arch, const char *variant,
		  const char *what, size_t *at, struct aj_err *err)
{
	char have[512] = "";
	size_t n = 0;

	for (size_t i = 0; i < x->manifests.n; i++) {
		const struct aj_descriptor *d = &x->manifests.v[i];
		bool v_ok = !variant || !*variant || eq(d->variant, variant) ||
			    (!d->variant && !strcmp(variant, "v8") && !strcmp(arch, "arm64"));
		if (eq(d->os, os) && eq(d->arch, arch) && v_ok) {
			*at = i;
			return 0;
		}
		if (d->os && n < sizeof have)
			n += (size_t)snprintf(have + n, sizeof have - n, "%s%s/%s%s%s",
					      n ? ", " : "", d->os, d->arch ? d->arch : "?",
					      d->variant ? "/" : "", d->variant ? d->variant : "");
	}
	return aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "%s has no image for %s/%s%s%s (it has: %s)",
			  what, os, arch, variant && *variant ? "/" : "", variant ? variant : "",
			  have[0] ? have : "none"),
	       aj_err_hint(err, "choose one with --platform OS/ARCH[/VARIANT]");
}

bool aj_layer_type_ok(const char *mt)
{
	return !strcmp(mt, AJ_MT_OCI_LAYER) || !strcmp(mt, AJ_MT_OCI_LAYER_GZIP) ||
	       !strcmp(mt, AJ_MT_OCI_LAYER_ZSTD) || !strcmp(mt, AJ_MT_DOCKER_LAYER);
}

int aj_manifest_parse(const char *body, size_t len, const char *what, struct aj_manifest *m,
		      struct aj_err *err)
{
	memset(m, 0, sizeof *m);
	if (read_doc(manifest_rows, body, len, what, m, err) < 0) {
		aj_manifest_free(m);
		return -1;
	}
	for (size_t i = 0; i < m->layers.n; i++)
		if (!aj_layer_type_ok(m->layers.v[i].media_type)) {
			aj_err_set(
				err, AJ_LAYER_IMAGE, ENOTSUP,
				"%s: layers[%zu]: the media type \"%s\" is not one agentjail "
				"unpacks (tar, tar+gzip, tar+zstd; foreign layers are not fetched)",
				what, i, m->layers.v[i].media_type);
			aj_manifest_free(m);
			return -1;
		}
	return 0;
}

void aj_manifest_free(struct aj_manifest *m)
{
	free(m->media_type);
	m->media_type = NULL;
	desc_free(&m->config);
	descs_free(&m->layers);
}

int aj_config_parse(const char *body, size_t len, const char *what, struct aj_image_config *c,
		    struct aj_err *err)
{
	memset(c, 0, sizeof *c);
	if (read_doc(config_rows, body, len, what, c, err) < 0) {
		aj_config_free(c);
		return -1;
	}
	return 0;
}

void aj_config_free(struct aj_image_config *c)
{
	free(c->os);
	free(c->arch);
	free(c->variant);
	free(c->created);
	free(c->user);
	free(c->workdir);
	free(c->stop_signal);
	free(c->start_cmd);
	free(c->ready_cmd);
	free(c->build_id);
	aj_strv_free(&c->env);
	aj_strv_free(&c->entrypoint);
	aj_strv_free(&c->cmd);
	aj_strv_free(&c->diff_ids);
	memset(c, 0, sizeof *c);
}
