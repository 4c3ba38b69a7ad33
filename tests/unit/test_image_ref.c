/* Image references (src/image/ref.c) as docker and skopeo read them, and the blob store
 * (src/image/blobs.c): content addresses checked on the way in, partial blobs resumed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tree.h"
#include "image/auth.h"
#include "image/blobs.h"
#include "image/ref.h"
#include "unit.h"

#define D1                                                                                         \
	"sha256:"                                                                                  \
	"0000000000000000000000000000000000000000000000000000000000000001"

static void parses(const char *s, const char *reg, const char *repo, const char *tag,
		   const char *digest)
{
	struct aj_image_ref r;
	char why[256] = "";

	CHECK(aj_image_ref_parse(s, &r, why, sizeof why) == 0, "\"%s\" parses (%s)", s, why);
	CHECK_STR(r.registry, reg, "\"%s\": registry", s);
	CHECK_STR(r.repo, repo, "\"%s\": repository", s);
	CHECK_STR(r.tag, tag, "\"%s\": tag", s);
	CHECK_STR(r.digest, digest, "\"%s\": digest", s);
}

static void refused(const char *s, const char *needle)
{
	struct aj_image_ref r;
	char why[256] = "";

	CHECK(aj_image_ref_parse(s, &r, why, sizeof why) < 0, "\"%s\" is refused", s);
	CHECK_CONTAINS(why, needle, "\"%s\": %s", s, why);
}

static void refs(void)
{
	struct aj_image_ref r;
	char buf[600], why[128];

	parses("busybox", "docker.io", "library/busybox", "latest", "");
	parses("busybox:1.36", "docker.io", "library/busybox", "1.36", "");
	parses("team/app", "docker.io", "team/app", "latest", "");
	parses("127.0.0.1:5000/test/busybox:v1", "127.0.0.1:5000", "test/busybox", "v1", "");
	parses("localhost/x", "localhost", "x", "latest", "");
	parses("registry.example/a/b/c@" D1, "registry.example", "a/b/c", "", D1);
	parses("registry.example:443/a:t@" D1, "registry.example:443", "a", "t", D1);
	parses("[::1]:5000/a", "[::1]:5000", "a", "latest", "");
	parses("a__b-c--d/e.f_g", "docker.io", "a__b-c--d/e.f_g", "latest", "");
	refused("", "empty");
	refused("Busybox", "\"Busybox\" is not a repository name component");
	refused("busybox:", "is not a tag");
	refused("busybox:-x", "is not a tag");
	refused("busybox@sha256:123", "is not a sha256 digest");
	refused("a//b", "is not a repository name component");
	refused("a-/b", "is not a repository name component");
	refused("bad_host.:99999/x", "is not a registry");
	aj_image_ref_parse("busybox", &r, why, sizeof why);
	aj_image_ref_format(&r, buf, sizeof buf);
	CHECK_STR(buf, "docker.io/library/busybox:latest", "the canonical name");
	aj_image_ref_short(&r, buf, sizeof buf);
	CHECK_STR(buf, "busybox:latest", "the short name");
	aj_image_ref_parse("team/app:v1", &r, why, sizeof why);
	aj_image_ref_short(&r, buf, sizeof buf);
	CHECK_STR(buf, "team/app:v1", "docker.io's short name drops the registry");
}

static void blobs(const char *state)
{
	struct aj_blobs b;
	struct aj_blob_writer w;
	struct aj_err err;
	char d[AJ_DIGEST_SIZE], want[AJ_DIGEST_SIZE], *data;
	size_t len;
	unsigned removed = 0;

	CHECK(aj_blobs_open(state, &b, &err) == 0, "the blob store opens (%s)", err.msg);
	CHECK(aj_blobs_put(&b, "{\"a\":1}", 7, d, &err) == 0 && aj_blobs_has(&b, d),
	      "a blob is stored under its digest");
	data = aj_blobs_read(&b, d, 1024, &len, &err);
	CHECK(data && len == 7 && !memcmp(data, "{\"a\":1}", 7), "and read back");
	free(data);

	aj_digest_of("hello world", 11, want);
	CHECK(aj_blob_resume(&b, want, &w, &err) == 0 && w.size == 0, "a fetch starts");
	aj_blob_write(&w, "hello ", 6, &err);
	aj_blob_abort(&w, true);
	CHECK(!aj_blobs_has(&b, want), "an interrupted fetch publishes nothing");
	CHECK(aj_blob_resume(&b, want, &w, &err) == 0 && w.size == 6,
	      "the next fetch resumes after the 6 bytes it has");
	aj_blob_write(&w, "world", 5, &err);
	CHECK(aj_blob_commit(&w, 11, d, &err) == 0 && !strcmp(d, want) && aj_blobs_has(&b, want),
	      "and completes it, verified (%s)", err.msg);

	aj_digest_of("expected", 8, want);
	aj_blob_resume(&b, want, &w, &err);
	aj_blob_write(&w, "tampered", 8, &err);
	CHECK(aj_blob_commit(&w, 8, d, &err) < 0 && !aj_blobs_has(&b, want),
	      "content with another digest is refused");
	CHECK_CONTAINS(err.msg, "the content has the digest", "saying so (%s)", err.msg);
	aj_blob_resume(&b, want, &w, &err);
	CHECK(w.size == 0, "and its partial file is gone");
	aj_blob_write(&w, "expected", 8, &err);
	CHECK(aj_blob_commit(&w, 9, d, &err) < 0, "a size other than the manifest's is refused");
	CHECK_CONTAINS(err.msg, "8 bytes, not the 9 expected", "saying so");

	aj_blob_begin(&b, &w, &err);
	aj_blob_write(&w, "x", 1, &err);
	close(w.fd); /* a crash: the .tmp file stays (and this process forgets the writer) */
	aj_hasher_free(w.hash);
	aj_blob_resume(&b, want, &w, &err);
	aj_blob_write(&w, "exp", 3, &err);
	aj_blob_abort(&w, true);
	CHECK(aj_blobs_sweep(&b, false, &removed, &err) == 0 && removed == 1,
	      "gc removes a crashed write's .tmp file, not a resumable partial one");
	CHECK(aj_blobs_sweep(&b, true, &removed, &err) == 0 && removed == 2,
	      "and the partial one when no pull is at work (%u)", removed);
	CHECK(aj_blobs_open_blob(&b, D1, &err) < 0 && err.cls == AJ_ERRC_NOT_FOUND,
	      "an absent blob: not found");
	aj_blobs_close(&b);
}

static void auth(void)
{
	struct aj_challenge c;
	struct aj_creds cr;
	struct aj_err err;
	/* "alice:s3cret" */
	const char *file = "{\"auths\": {\"127.0.0.1:5000\": {\"auth\": \"YWxpY2U6czNjcmV0\"}, "
			   "\"https://index.docker.io/v1/\": {\"auth\": \"Ym9iOnB3\"}, "
			   "\"bad.example\": {\"auth\": \"!!\"}}}";

	CHECK(aj_challenge_parse("Bearer realm=\"https://auth.example/token\",service=\"reg\","
				 "scope=\"repository:a/b:pull\"",
				 &c) == 0 &&
		      c.scheme == AJ_AUTH_BEARER,
	      "a Bearer challenge");
	CHECK_STR(c.realm, "https://auth.example/token", "its realm");
	CHECK_STR(c.service, "reg", "its service");
	CHECK_STR(c.scope, "repository:a/b:pull", "its scope");
	CHECK(aj_challenge_parse("Basic realm=\"Registry\"", &c) == 0 && c.scheme == AJ_AUTH_BASIC,
	      "a Basic challenge");
	CHECK(aj_challenge_parse("Negotiate, Bearer realm=\"r\\\"q\"", &c) == 0 &&
		      !strcmp(c.realm, "r\"q"),
	      "the first known scheme; escapes in quoted strings (%s)", c.realm);
	CHECK(aj_challenge_parse("Bearer service=\"x\"", &c) < 0, "Bearer without a realm: refused");
	CHECK(aj_challenge_parse("Bearer realm=\"unterminated", &c) < 0, "an unterminated string");
	CHECK(aj_challenge_parse("", &c) < 0, "nothing");
	CHECK(aj_creds_from_text(file, "auth.json", "127.0.0.1:5000", &cr, &err) == 0 && cr.have,
	      "credentials for a registry");
	CHECK(!strcmp(cr.user, "alice") && !strcmp(cr.password, "s3cret"), "user and password");
	CHECK(aj_creds_from_text(file, "auth.json", "docker.io", &cr, &err) == 0 &&
		      !strcmp(cr.user, "bob"),
	      "docker.io under docker's own key");
	CHECK(aj_creds_from_text(file, "auth.json", "other.example", &cr, &err) == 0 && !cr.have,
	      "no entry: no credentials, no error");
	CHECK(aj_creds_from_text(file, "auth.json", "bad.example", &cr, &err) < 0,
	      "a malformed entry is an error");
	CHECK_CONTAINS(err.msg, "auth.json: auths.\"bad.example\".auth: expected base64",
		       "naming the file and the field");
	aj_creds_wipe(&cr);
}

int main(void)
{
	char dir[] = "/tmp/ajunit-image.XXXXXX";
	struct aj_err err;
	int d;

	refs();
	auth();
	if (!mkdtemp(dir))
		return 1;
	blobs(dir);
	d = open("/tmp", O_RDONLY | O_DIRECTORY);
	aj_tree_remove_at(d, dir + 5, &err);
	close(d);
	UNIT_EXIT();
}
