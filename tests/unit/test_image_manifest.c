/* OCI and Docker image documents (src/image/manifest.c): indexes and the platform picked,
 * manifests and their layers' media types, configs' process defaults and diff_ids; every
 * refusal names the document and the field. */
#include <stdio.h>
#include <string.h>

#include "image/manifest.h"
#include "unit.h"

#define H1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define H3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static const char *index_doc =
	"{\"schemaVersion\": 2, \"mediaType\": \"" AJ_MT_OCI_INDEX "\", \"manifests\": ["
	"{\"mediaType\": \"" AJ_MT_OCI_MANIFEST "\", \"digest\": \"" H1 "\", \"size\": 10,"
	" \"platform\": {\"os\": \"linux\", \"architecture\": \"arm64\"}},"
	"{\"mediaType\": \"" AJ_MT_OCI_MANIFEST "\", \"digest\": \"" H2 "\", \"size\": 11,"
	" \"platform\": {\"os\": \"linux\", \"architecture\": \"amd64\"}, \"annotations\": {}}]}";

static void indexes(void)
{
	struct aj_index x;
	struct aj_err err;
	size_t at = 99;

	CHECK(aj_doc_kind(index_doc, strlen(index_doc), NULL) == AJ_DOC_INDEX, "an index");
	CHECK(aj_index_parse(index_doc, strlen(index_doc), "index", &x, &err) == 0 &&
		      x.manifests.n == 2,
	      "it parses, unknown fields ignored (%s)", err.msg);
	CHECK(aj_index_pick(&x, "linux", "amd64", "", "index", &at, &err) == 0 && at == 1,
	      "linux/amd64 is the second");
	CHECK_STR(x.manifests.v[at].digest, H2, "its digest");
	CHECK(aj_index_pick(&x, "linux", "s390x", "", "index", &at, &err) < 0,
	      "no linux/s390x: refused");
	CHECK_CONTAINS(err.msg, "(it has: linux/arm64, linux/amd64)", "listing what it has");
	CHECK_CONTAINS(err.hint, "--platform", "and how to choose");
	aj_index_free(&x);
	const char *bad = "{\"manifests\": [{\"mediaType\": \"x\", \"digest\": \"sha256:12\", "
			  "\"size\": 1}]}";
	CHECK(aj_index_parse(bad, strlen(bad), "index", &x, &err) < 0, "a bad digest: refused");
	CHECK_CONTAINS(err.msg, "index: manifests[0].digest: \"sha256:12\" is not a sha256 digest",
		       "naming the document and the path (%s)", err.msg);
	const char *neg = "{\"manifests\": [{\"mediaType\": \"x\", \"digest\": \"" H1 "\", "
			  "\"size\": -1}]}";
	CHECK(aj_index_parse(neg, strlen(neg), "index", &x, &err) < 0, "a negative size: refused");
	CHECK_CONTAINS(err.msg, "manifests[0].size", "naming it (%s)", err.msg);
}

static void manifests(void)
{
	struct aj_manifest m;
	struct aj_err err;
	const char *doc =
		"{\"schemaVersion\": 2, \"mediaType\": \"" AJ_MT_DOCKER_MANIFEST "\", "
		"\"config\": {\"mediaType\": \"" AJ_MT_DOCKER_CONFIG "\", \"digest\": \"" H1
		"\", \"size\": 100},"
		"\"layers\": [{\"mediaType\": \"" AJ_MT_DOCKER_LAYER "\", \"digest\": \"" H2
		"\", \"size\": 200}, {\"mediaType\": \"" AJ_MT_OCI_LAYER_ZSTD
		"\", \"digest\": \"" H3 "\", \"size\": 300}]}";
	const char *foreign =
		"{\"config\": {\"mediaType\": \"c\", \"digest\": \"" H1 "\", \"size\": 1},"
		"\"layers\": [{\"mediaType\": "
		"\"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\", \"digest\": \"" H2
		"\", \"size\": 2}]}";
	const char *nolayers =
		"{\"config\": {\"mediaType\": \"c\", \"digest\": \"" H1 "\", \"size\": 1}}";

	CHECK(aj_doc_kind(doc, strlen(doc), NULL) == AJ_DOC_MANIFEST, "a manifest");
	CHECK(aj_manifest_parse(doc, strlen(doc), "manifest", &m, &err) == 0 && m.layers.n == 2,
	      "it parses (%s)", err.msg);
	CHECK(!strcmp(m.config.digest, H1) && m.config.size == 100, "its config");
	CHECK(!strcmp(m.layers.v[1].digest, H3) && m.layers.v[1].size == 300,
	      "its layers, in order");
	aj_manifest_free(&m);
	CHECK(aj_manifest_parse(foreign, strlen(foreign), "manifest", &m, &err) < 0,
	      "a foreign layer: refused");
	CHECK_CONTAINS(err.msg, "layers[0]: the media type", "naming the layer (%s)", err.msg);
	CHECK(aj_manifest_parse(nolayers, strlen(nolayers), "manifest", &m, &err) < 0,
	      "no layers: refused");
	CHECK_CONTAINS(err.msg, "layers", "naming the field (%s)", err.msg);
	CHECK(aj_manifest_parse("[1]", 3, "manifest", &m, &err) < 0, "not an object: refused");
	CHECK(aj_manifest_parse("{", 1, "manifest", &m, &err) < 0, "not JSON: refused");
	CHECK_CONTAINS(err.msg, "manifest: line 1", "saying where (%s)", err.msg);
}

static void configs(void)
{
	struct aj_image_config c;
	struct aj_err err;
	const char *doc =
		"{\"architecture\": \"amd64\", \"os\": \"linux\", \"config\": {"
		"\"Env\": [\"PATH=/usr/bin\", \"LANG=C.UTF-8\"], \"Entrypoint\": null, "
		"\"Cmd\": [\"/bin/sh\"], \"WorkingDir\": \"/srv\", \"User\": \"1000:1000\", "
		"\"ExposedPorts\": {\"80/tcp\": {}}},"
		"\"rootfs\": {\"type\": \"layers\", \"diff_ids\": [\"" H1 "\", \"" H2 "\"]},"
		"\"history\": [{\"created_by\": \"x\"}]}";
	const char *bad = "{\"rootfs\": {\"diff_ids\": [\"nope\"]}}";

	CHECK(aj_config_parse(doc, strlen(doc), "config", &c, &err) == 0, "a config parses (%s)",
	      err.msg);
	CHECK(c.env.n == 2 && !strcmp(c.env.v[1], "LANG=C.UTF-8"), "its Env");
	CHECK(c.entrypoint.n == 0 && c.cmd.n == 1, "Entrypoint null, Cmd one word");
	CHECK(!strcmp(c.workdir, "/srv") && !strcmp(c.user, "1000:1000"), "WorkingDir and User");
	CHECK(c.diff_ids.n == 2 && !strcmp(c.diff_ids.v[1], H2), "the diff_ids, in order");
	aj_config_free(&c);
	CHECK(aj_config_parse(bad, strlen(bad), "config", &c, &err) < 0, "a bad diff_id: refused");
	CHECK_CONTAINS(err.msg, "rootfs.diff_ids[0]", "naming it (%s)", err.msg);
}

int main(void)
{
	indexes();
	manifests();
	configs();
	UNIT_EXIT();
}
