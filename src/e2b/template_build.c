/* E2B's template build API (docs/e2b.md "Building templates", docs/e2b-protocol.md 4.8), what
 * the SDK's Template.build() calls: a build requested (POST /v3/templates), the files its
 * COPY steps take uploaded by their hash (GET .../files/{hash} says whether and where, a
 * signed PUT brings them), the build started (POST /v2/templates/{id}/builds/{build}) and
 * watched (GET .../status with its log), and the names: aliases, tags, delete.
 *
 * A template is an image of the key's owner's in the store: the template "web" with tag "v1"
 * is the owner's image named web:v1, and templateID is the name without the tag. Builds are
 * build/job.h's, each a process of its own running the builder (build/template.h says what
 * each step becomes), so every RUN is a sandbox under the "base" template's policy. Another
 * owner's templates, builds and uploads are "not found", as its sandboxes are. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build/job.h"
#include "build/template.h"
#include "common/alloc.h"
#include "common/util.h"
#include "e2b/internal.h"
#include "image/manifest.h"
#include "image/store.h"

#define UPLOAD_URL_TTL_S 3600
#define LOG_PAGE 500

/* ---- names ------------------------------------------------------------------------------------ */

/* A template name as E2B takes them: NAME or NAME:TAG, NAME 1-64 of [a-z0-9._-] beginning and
 * ending with a letter or digit, no "..", not "tags" or "aliases" (paths of their own; no
 * '/': it is the templateID in paths), TAG 1-128 of [A-Za-z0-9._-] not beginning with . or
 * -: what image references allow. */
static bool name_ok(const char *s, bool tag_ok)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n == 0 || n > 64 || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") != n ||
	    !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]) ||
	    !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[n - 1]) || strstr(s, "..") ||
	    (n == 4 && !strncmp(s, "tags", 4)) || (n == 7 && !strncmp(s, "aliases", 7)))
		return false;
	if (!colon)
		return true;
	return tag_ok && colon[1] && strlen(colon + 1) <= 128 &&
	       strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", colon[1]) &&
	       strspn(colon + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		       strlen(colon + 1);
}

static bool tag_ok(const char *t)
{
	char probe[200];

	snprintf(probe, sizeof probe, "x:%s", t);
	return strlen(t) <= 128 && name_ok(probe, true);
}

/* "docker.io/library/NAME:" — what every canonical name of the template begins with. */
static int repo_prefix(const char *id, char *out, size_t len, struct aj_err *err)
{
	char *colon;

	if (aj_images_canonical(id, out, len, err) < 0)
		return -1;
	colon = strrchr(out, ':');
	if (colon)
		colon[1] = '\0';
	return 0;
}

static int open_images(struct aj_srv_req *r, struct aj_mgr *m, struct aj_images *im)
{
	struct aj_err err;

	*im = (struct aj_images){.layers_dir = -1, .lock_fd = -1, .blobs = {.dir = -1}};
	if (aj_images_open(m->state, m->store, im, &err) == 0)
		return 0;
	return e2b_fail(r, 500, "the image store: %s", err.msg);
}

/* A tag of the template id the owner has: its image's digest, name and config's build. */
struct tag_row {
	char tag[160];
	char digest[AJ_DIGEST_SIZE];
	char build[AJ_JOB_ID_LEN + 1];
	int64_t created_ms;
};

/* The owner's tags of template id (*n of them, the array malloc'd); -1 with the request
 * failed. */
static int template_tags(struct aj_srv_req *r, struct aj_mgr *m, struct aj_images *im,
			 const char *id, struct tag_row **out, size_t *n)
{
	struct aj_image_rec *v = NULL;
	size_t nv = 0;
	char prefix[700];
	struct aj_err err;

	*out = NULL;
	*n = 0;
	if (!name_ok(id, false) || repo_prefix(id, prefix, sizeof prefix, &err) < 0)
		return 0;
	if (aj_store_image_list(m->store, r->job.owner, &v, &nv, &err) < 0)
		return e2b_fail(r, 500, "the image store: %s", err.msg);
	for (size_t i = 0; i < nv; i++)
		for (size_t k = 0; k < v[i].names.n; k++) {
			struct aj_image_rec rec;
			struct aj_image_config cfg;
			struct tag_row *t;

			if (strncmp(v[i].names.v[k], prefix, strlen(prefix)))
				continue;
			*out = aj_xrealloc(*out, (*n + 1) * sizeof **out);
			t = &(*out)[(*n)++];
			memset(t, 0, sizeof *t);
			snprintf(t->tag, sizeof t->tag, "%s", v[i].names.v[k] + strlen(prefix));
			snprintf(t->digest, sizeof t->digest, "%s", v[i].digest);
			t->created_ms = v[i].created_ms;
			if (aj_images_find(im, r->job.owner, v[i].digest, &rec, &cfg, &err) == 0) {
				snprintf(t->build, sizeof t->build, "%s", cfg.build_id ? cfg.build_id : "");
				aj_config_free(&cfg);
				aj_image_rec_free(&rec);
			}
		}
	aj_image_recs_free(v, nv);
	return 0;
}

/* ---- POST /v3/templates ------------------------------------------------------------------------ */

struct request_doc {
	const char *name, *alias;
	json_t *tags;
	int64_t cpus, memory_mb, disk_mb;
};

static int read_tags(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	size_t i;
	json_t *t;

	if (!json_is_array(v) || json_array_size(v) > 64)
		return aj_jf_fail(e, AJ_JF_TYPE, f, path, v, "tags: expected at most 64 tags");
	json_array_foreach(v, i, t) if (!json_is_string(t) || !tag_ok(json_string_value(t)))
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "tags[%zu]: a tag is 1-128 of A-Za-z0-9._-", i);
	*(json_t **)dst = v;
	return 0;
}

#define RQ(m) offsetof(struct request_doc, m)
static const struct aj_jf_field request_fields[] = {
	{.name = "name", .type = AJ_JF_STRING, .off = RQ(name), .parse = e2b_keep_string,
	 .refusal = "expected the template's name"},
	{.name = "alias", .type = AJ_JF_STRING, .off = RQ(alias), .parse = e2b_keep_string,
	 .refusal = "expected the template's name"},
	{.name = "tags", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .off = RQ(tags),
	 .parse = read_tags},
	{.name = "cpuCount", .type = AJ_JF_INT, .off = RQ(cpus), .min = 1, .max = 256,
	 .refusal = "expected 1 to 256"},
	{.name = "memoryMB", .type = AJ_JF_INT, .off = RQ(memory_mb), .min = 128,
	 .max = 1 << 20, .refusal = "expected 128 or more (MiB)"},
	{.name = "minFreeDiskMb", .type = AJ_JF_INT, .off = RQ(disk_mb), .min = 0,
	 .max = 1 << 24, .refusal = "expected a size in MiB"},
	{.name = NULL},
};
#undef RQ

static void request_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct request_doc d = {0};
	char id[AJ_JOB_ID_LEN + 1], tid[160];
	const char *name, *colon;
	json_t *req, *tags;
	struct aj_err err;

	if (e2b_read_msg(r, request_fields, &d) < 0)
		return;
	name = d.name ? d.name : d.alias;
	if (!name || !name_ok(name, true)) {
		e2b_fail(r, 400, "name: \"%.64s\" is not a template name (NAME or NAME:TAG; NAME of "
				 "a-z0-9._-, TAG of A-Za-z0-9._-)",
			 name ? name : "");
		return;
	}
	{
		char canon[700];
		if (aj_images_canonical(name, canon, sizeof canon, &err) < 0) {
			e2b_fail(r, 400, "name: %s", err.msg);
			return;
		}
	}
	colon = strchr(name, ':');
	snprintf(tid, sizeof tid, "%.*s", colon ? (int)(colon - name) : (int)strlen(name), name);
	tags = json_array();
	json_array_append_new(tags, json_string(colon ? colon + 1 : "latest"));
	if (d.tags)
		json_array_extend(tags, d.tags);
	req = json_pack("{s:s, s:s, s:o, s:O, s:I, s:I}", "template", tid, "name", name, "tags",
			d.tags ? json_incref(d.tags) : json_array(), "policy",
			e2b_template(e2b_of(r)->e2b, "base"), "cpus", (json_int_t)d.cpus,
			"memory_mb", (json_int_t)d.memory_mb);
	if (aj_job_new(m->state, r->job.owner, req, id, &err) < 0)
		e2b_fail(r, 500, "%s", err.msg);
	else
		aj_srv_ok(r, 202, json_pack("{s:s, s:s, s:[s], s:[s], s:o, s:b}", "templateID", tid,
					    "buildID", id, "names", tid, "aliases", tid, "tags",
					    json_incref(tags), "public", 0));
	json_decref(req);
	json_decref(tags);
}

/* ---- uploads ------------------------------------------------------------------------------------ */

/* A request's build and its template: the owner's, and of that template; -1 with 404. */
static int owned_build(struct aj_srv_req *r, struct aj_mgr *m, const char *build, json_t **req)
{
	struct aj_err err;

	if (aj_job_request(m->state, build, r->job.owner, req, &err) == 0 &&
	    !strcmp(json_string_value(json_object_get(*req, "template")) ?: "", e2b_of(r)->id))
		return 0;
	json_decref(*req);
	*req = NULL;
	return e2b_fail(r, 404, "build \"%.40s\" of template \"%.64s\" not found", build,
			e2b_of(r)->id);
}

static void files_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	const char *host = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Host");
	char expires[24], sig[65];
	char *owner_q, *url;

	if (!name_ok(x->id, false)) {
		e2b_fail(r, 404, "template \"%.64s\" not found", x->id);
		return;
	}
	if (!aj_template_hash_ok(x->arg)) {
		e2b_fail(r, 400, "hash: expected the 64 hex digits of the files' hash");
		return;
	}
	if (aj_job_file_present(m->state, r->job.owner, x->arg)) {
		aj_srv_ok(r, 200, json_pack("{s:b}", "present", 1));
		return;
	}
	if (!host || strpbrk(host, "/?#@ \t\r\n")) {
		e2b_fail(r, 400, "Host: the upload URL is made from the Host header, which is "
				 "missing or not HOST[:PORT]");
		return;
	}
	snprintf(expires, sizeof expires, "%" PRIu64,
		 aj_now_realtime_ms() / 1000 + UPLOAD_URL_TTL_S);
	e2b_upload_signature(x->e2b, r->job.owner, x->arg, expires, sig);
	owner_q = evhttp_encode_uri(r->job.owner);
	url = aj_xasprintf("http://%s/templates/%s/files/%s?owner=%s&expires=%s&signature=%s",
			   host, x->id, x->arg, owner_q ? owner_q : "", expires, sig);
	aj_srv_ok(r, 201, json_pack("{s:b, s:s}", "present", 0, "url", url));
	free(owner_q);
	free(url);
}

/* The signed PUT: the owner is the URL's, if its signature holds and it has not expired. */
static int upload_prepare(struct aj_srv_req *r)
{
	struct e2b_req *x = e2b_of(r);
	const char *owner = aj_srv_query(r, "owner"), *exp = aj_srv_query(r, "expires");
	const char *sig = aj_srv_query(r, "signature");
	char want[65];

	if (!owner || !exp || !sig || strlen(owner) >= AJ_SRV_OWNER_MAX || !aj_template_hash_ok(x->arg) ||
	    strspn(exp, "0123456789") != strlen(exp) || strlen(exp) > 12)
		return e2b_fail(r, 403, "the upload URL is not one this server signed");
	e2b_upload_signature(x->e2b, owner, x->arg, exp, want);
	if (!e2b_str_eq_ct(sig, want))
		return e2b_fail(r, 403, "the upload URL is not one this server signed");
	if ((uint64_t)strtoull(exp, NULL, 10) < aj_now_realtime_ms() / 1000)
		return e2b_fail(r, 403, "the upload URL has expired; ask for another");
	snprintf(r->job.owner, AJ_SRV_OWNER_MAX, "%s", owner);
	return 0;
}

static void upload_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	struct aj_err err;

	/* An upload stands for its hash from then on: a second PUT (a leaked URL) cannot
	 * replace what builds take. */
	if (aj_job_file_present(m->state, r->job.owner, x->arg)) {
		e2b_fail(r, 409, "the files of this hash were uploaded already");
		return;
	}
	if (aj_job_file_put(m->state, r->job.owner, x->arg, x->raw, x->raw_len, &err) < 0)
		e2b_fail(r, 500, "%s", err.msg);
	else
		aj_srv_ok(r, 200, NULL);
}

/* ---- POST /v2/templates/{id}/builds/{build} ------------------------------------------------- */

static void trigger_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	_cleanup_json_ json_t *req = NULL;
	struct aj_template t;
	struct aj_err err;

	if (owned_build(r, m, x->arg, &req) < 0)
		return;
	if (aj_template_parse(x->msg, &t, &err) < 0) {
		e2b_fail(r, 400, "%s", err.msg);
		return;
	}
	for (size_t i = 0; i < t.files.n; i++)
		if (!aj_job_file_present(m->state, r->job.owner, t.files.v[i])) {
			e2b_fail(r, 400, "steps: the files of a COPY (hash %s) were not uploaded",
				 t.files.v[i]);
			aj_template_free(&t);
			return;
		}
	aj_template_free(&t);
	/* Each build's RUNs are sandboxes: an owner runs a few at a time. */
	if (aj_job_start(m->state, x->arg, r->job.owner, x->msg, &err) < 0)
		e2b_fail(r, err.cls == AJ_ERRC_EXISTS ? 409 : err.errnum == EAGAIN ? 429 : 500, "%s",
			 err.cls == AJ_ERRC_EXISTS ? "the build was started already" : err.msg);
	else
		aj_srv_ok(r, 202, NULL);
}

/* ---- GET /templates/{id}/builds/{build}/status ------------------------------------------------ */

static void status_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct e2b_req *x = e2b_of(r);
	_cleanup_json_ json_t *req = NULL, *st = NULL;
	json_t *logs, *out;
	int64_t offset = 0;
	const char *s, *msg;

	if (owned_build(r, m, x->arg, &req) < 0 ||
	    aj_srv_query_int(r, "logsOffset", 0, INT32_MAX, &offset) < 0)
		return;
	st = aj_job_status(m->state, x->arg);
	s = json_string_value(json_object_get(st, "status"));
	logs = aj_job_logs(m->state, x->arg, (size_t)offset, LOG_PAGE);
	out = json_pack("{s:s, s:s, s:s, s:o, s:[]}", "templateID", x->id, "buildID", x->arg,
			"status", s ? s : "error", "logEntries", logs, "logs");
	msg = json_string_value(json_object_get(st, "message"));
	if (s && !strcmp(s, "error")) {
		char ts[40];

		aj_format_time_ms(aj_now_realtime_ms(), ts, sizeof ts);
		json_object_set_new(out, "reason",
				    json_pack("{s:s, s:s?, s:[{s:s, s:s, s:s}]}", "message",
					      msg ? msg : "the build failed", "step",
					      json_string_value(json_object_get(st, "step")),
					      "logEntries", "timestamp", ts, "level", "error",
					      "message", msg ? msg : "the build failed"));
	}
	aj_srv_ok(r, 200, out);
}

/* ---- aliases, tags, delete ---------------------------------------------------------------------- */

static void alias_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_images im;
	struct tag_row *t = NULL;
	size_t n = 0;

	if (open_images(r, m, &im) < 0)
		return;
	if (template_tags(r, m, &im, e2b_of(r)->arg, &t, &n) == 0) {
		if (n)
			aj_srv_ok(r, 200, json_pack("{s:s, s:b}", "templateID", e2b_of(r)->arg,
						    "public", 0));
		else
			e2b_fail(r, 404, "template '%.64s' not found", e2b_of(r)->arg);
	}
	free(t);
	aj_images_close(&im);
}

static json_t *time_json(int64_t ms)
{
	char ts[40];

	aj_format_time_ms((uint64_t)ms, ts, sizeof ts);
	return json_string(ts);
}

static void tags_list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_images im;
	struct tag_row *t = NULL;
	size_t n = 0;

	if (open_images(r, m, &im) < 0)
		return;
	if (template_tags(r, m, &im, e2b_of(r)->id, &t, &n) == 0) {
		if (!n) {
			e2b_fail(r, 404, "template '%.64s' not found", e2b_of(r)->id);
		} else {
			json_t *a = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(a, json_pack("{s:s, s:s, s:o}", "tag", t[i].tag,
								   "buildID", t[i].build,
								   "createdAt",
								   time_json(t[i].created_ms)));
			aj_srv_ok(r, 200, a);
		}
	}
	free(t);
	aj_images_close(&im);
}

struct tags_doc {
	const char *target, *name;
	json_t *tags;
};

#define TG(m) offsetof(struct tags_doc, m)
static const struct aj_jf_field assign_fields[] = {
	{.name = "target", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = TG(target),
	 .parse = e2b_keep_string, .refusal = "expected the template as NAME:TAG"},
	{.name = "tags", .type = AJ_JF_ANY, .flags = AJ_JF_REQUIRED, .off = TG(tags),
	 .parse = read_tags},
	{.name = NULL},
};
static const struct aj_jf_field remove_fields[] = {
	{.name = "name", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = TG(name),
	 .parse = e2b_keep_string, .refusal = "expected the template's name"},
	{.name = "tags", .type = AJ_JF_ANY, .flags = AJ_JF_REQUIRED, .off = TG(tags),
	 .parse = read_tags},
	{.name = NULL},
};
#undef TG

static void tags_assign_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct tags_doc d = {0};
	struct aj_images im;
	struct aj_image_rec rec = {.layers = AJ_STRV_INIT, .names = AJ_STRV_INIT};
	struct aj_image_config cfg = {0};
	struct aj_err err;
	char tid[160];
	size_t i;
	json_t *t;
	int found;

	if (e2b_read_msg(r, assign_fields, &d) < 0)
		return;
	if (!name_ok(d.target, true)) {
		e2b_fail(r, 400, "target: \"%.64s\" is not a template name (NAME:TAG)", d.target);
		return;
	}
	snprintf(tid, sizeof tid, "%.*s", (int)strcspn(d.target, ":"), d.target);
	if (open_images(r, m, &im) < 0)
		return;
	found = aj_images_find(&im, r->job.owner, d.target, &rec, &cfg, &err);
	if (found < 0 || !rec.names.n) {
		if (found < 0 && err.cls != AJ_ERRC_NOT_FOUND)
			e2b_fail(r, 500, "%s", err.msg);
		else
			e2b_fail(r, 404, "template '%.64s' not found", d.target);
	} else if (aj_images_lock(&im, &err) < 0) {
		e2b_fail(r, 500, "%s", err.msg);
	} else {
		int rc = 0;

		json_array_foreach(d.tags, i, t) {
			char full[300];
			snprintf(full, sizeof full, "%s:%s", tid, json_string_value(t));
			if ((rc = aj_images_tag(&im, r->job.owner, full, rec.digest, &err)) < 0)
				break;
		}
		aj_images_unlock(&im);
		if (rc < 0)
			e2b_fail(r, 500, "%s", err.msg);
		else
			aj_srv_ok(r, 201, json_pack("{s:s, s:O}", "buildID",
						    cfg.build_id ? cfg.build_id : "", "tags", d.tags));
	}
	if (found == 0)
		aj_config_free(&cfg);
	aj_image_rec_free(&rec);
	aj_images_close(&im);
}

static void tags_remove_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct tags_doc d = {0};
	struct aj_images im;
	struct aj_err err;
	unsigned removed = 0;
	size_t i;
	json_t *t;

	if (e2b_read_msg(r, remove_fields, &d) < 0)
		return;
	if (!name_ok(d.name, false)) {
		e2b_fail(r, 404, "template '%.64s' not found", d.name);
		return;
	}
	if (open_images(r, m, &im) < 0)
		return;
	if (aj_images_lock(&im, &err) < 0) {
		e2b_fail(r, 500, "%s", err.msg);
		aj_images_close(&im);
		return;
	}
	json_array_foreach(d.tags, i, t) {
		char full[300];
		snprintf(full, sizeof full, "%s:%s", d.name, json_string_value(t));
		removed += aj_images_untag(&im, r->job.owner, full, &err) == 0;
	}
	aj_images_unlock(&im);
	if (removed)
		aj_srv_ok(r, 204, NULL);
	else
		e2b_fail(r, 404, "template '%.64s' has none of those tags", d.name);
	aj_images_close(&im);
}

static void delete_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_images im;
	struct tag_row *t = NULL;
	size_t n = 0;
	struct aj_err err;
	struct aj_snapshot_rec snap = AJ_REC_INIT;

	/* deleteSnapshot() comes here too: an owner's snapshot of that id first */
	if (aj_store_snapshot_get(m->store, e2b_of(r)->id, r->job.owner, &snap, &err) == 0) {
		if (aj_mgr_snapshot_remove(m, snap.id, &err) < 0)
			e2b_fail(r, strstr(err.msg, "in use") ? 409 : 500, "%s", err.msg);
		else
			aj_srv_ok(r, 204, NULL);
		aj_snapshot_rec_free(&snap);
		return;
	}
	if (open_images(r, m, &im) < 0)
		return;
	if (template_tags(r, m, &im, e2b_of(r)->id, &t, &n) == 0) {
		if (!n) {
			e2b_fail(r, 404, "template '%.64s' not found", e2b_of(r)->id);
		} else if (aj_images_lock(&im, &err) < 0) {
			e2b_fail(r, 500, "%s", err.msg);
		} else {
			for (size_t i = 0; i < n; i++) {
				char full[300];
				snprintf(full, sizeof full, "%s:%s", e2b_of(r)->id, t[i].tag);
				aj_images_untag(&im, r->job.owner, full, &err);
			}
			aj_images_unlock(&im);
			aj_srv_ok(r, 204, NULL);
		}
	}
	free(t);
	aj_images_close(&im);
}

/* ---- the routes ---------------------------------------------------------------------------------- */

/* Before the control plane's table: literal paths ahead of {id} ones. */
const struct e2b_route e2b_template_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_POST, "/v3/templates", E2B_API, NULL, request_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/templates/aliases/{arg}", E2B_API, NULL, alias_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/templates/tags", E2B_API, NULL, tags_assign_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/templates/tags", E2B_API, NULL, tags_remove_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/templates/{id}/files/{arg}", E2B_API, NULL, files_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_PUT, "/templates/{id}/files/{arg}", E2B_API, upload_prepare,
		  upload_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/v2/templates/{id}/builds/{arg}", E2B_API, NULL, trigger_work,
		  NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/templates/{id}/builds/{arg}/status", E2B_API, NULL,
		  status_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_GET, "/templates/{id}/tags", E2B_API, NULL, tags_list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_DELETE, "/templates/{id}", E2B_API, NULL, delete_work, NULL),
	E2B_ROUTES_END,
};
