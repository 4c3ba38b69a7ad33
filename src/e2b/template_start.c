/* A template's start and ready commands (docs/e2b.md "Building templates"): when an E2B
 * sandbox is created on an image whose config has them (image/manifest.h's AJ_LABEL_START,
 * AJ_LABEL_READY: what a template's setStartCmd() built), the start command runs in the
 * background, as the image's USER in its WORKDIR, for the sandbox's life, and the ready
 * command runs again and again until it exits 0; only then is the sandbox handed to the
 * client, as E2B hands out a template's sandboxes with their server up. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "control/client.h"
#include "control/exec.h"
#include "e2b/internal.h"
#include "image/manifest.h"
#include "image/store.h"

#define READY_TIMEOUT_MS 50000 /* within the SDK's own 60 s for the create */
#define READY_TRY_MS 10000
#define READY_PAUSE_US 200000

/* The image's config, as create resolved the name: the owner's, else the host's. */
static int image_config(struct aj_mgr *m, const char *owner, const char *ref,
			struct aj_image_config *cfg)
{
	struct aj_images im = {.layers_dir = -1, .lock_fd = -1, .blobs = {.dir = -1}};
	const char *owners[] = {owner, ""};
	struct aj_err err;
	int r = -1;

	if (aj_images_open(m->state, m->store, &im, &err) < 0)
		return -1;
	for (size_t i = 0; i < (owner[0] ? 2 : 1) && r < 0; i++) {
		struct aj_image_rec rec = {.layers = AJ_STRV_INIT, .names = AJ_STRV_INIT};
		r = aj_images_find(&im, owners[i], ref, &rec, cfg, &err);
		if (r == 0 && !rec.names.n) {
			aj_config_free(cfg);
			r = -1;
		}
		aj_image_rec_free(&rec);
	}
	aj_images_close(&im);
	return r;
}

static void discard(void *arg, int stream, const char *buf, size_t n)
{
	(void)arg, (void)stream, (void)buf, (void)n;
}

static int start_command(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
			 const struct aj_image_config *c)
{
	struct aj_sandbox_rec rec;
	struct aj_err err;
	json_t *req, *reply = NULL;
	_cleanup_close_ int fd = aj_mgr_connect(m, id, &rec, &err);
	int rc;

	if (fd < 0)
		return e2b_fail(r, 500, "the template's start command: %s", err.msg);
	aj_sandbox_rec_free(&rec);
	req = json_pack("{s:s, s:[s, s, s], s:b, s:I}", "op", "spawn", "argv", "/bin/sh", "-c",
			c->start_cmd, "attach", 0, "timeout_ms", (json_int_t)0);
	if (c->user && c->user[0])
		json_object_set_new(req, "user", json_string(c->user));
	if (c->workdir && c->workdir[0])
		json_object_set_new(req, "cwd", json_string(c->workdir));
	rc = aj_ctl_call(fd, req, NULL, 0, &reply, NULL, NULL, 10000, &err);
	json_decref(reply);
	if (rc < 0)
		return e2b_fail(r, 500, "the template's start command did not start: %s", err.msg);
	return 0;
}

static int wait_ready(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
		      const struct aj_image_config *c)
{
	const char *argv[] = {"/bin/sh", "-c", c->ready_cmd, NULL};
	struct aj_exec_opts o = {.argv = argv, .user = c->user && c->user[0] ? c->user : NULL,
				 .cwd = c->workdir && c->workdir[0] ? c->workdir : NULL,
				 .timeout_ms = READY_TRY_MS};
	struct aj_exec_hooks h = {.output = discard, .watch_fd = -1};
	uint64_t end = aj_now_monotonic_us() + READY_TIMEOUT_MS * 1000ull;
	int last = -1;

	do {
		struct aj_sandbox_rec rec;
		struct aj_err err;
		struct aj_exec x;
		_cleanup_close_ int fd = aj_mgr_connect(m, id, &rec, &err);

		if (fd < 0)
			return e2b_fail(r, 500, "the template's ready command: %s", err.msg);
		aj_sandbox_rec_free(&rec);
		if (aj_exec_start(&x, fd, &o, &err) < 0)
			return e2b_fail(r, 500, "the template's ready command did not start: %s",
					err.msg);
		aj_exec_wait(&x, &h);
		last = x.res.exit_code;
		aj_exec_close(&x);
		if (last == 0)
			return 0;
		usleep(READY_PAUSE_US);
	} while (aj_now_monotonic_us() < end);
	return e2b_fail(r, 500, "the template's ready command (%.200s) did not succeed within %d s "
				"(its last exit code %d); the sandbox is removed",
			c->ready_cmd, READY_TIMEOUT_MS / 1000, last);
}

int e2b_template_start(struct aj_srv_req *r, struct aj_mgr *m, const char *id,
		       const char *image)
{
	struct aj_image_config c;
	int rc = 0;

	if (image_config(m, r->job.owner, image, &c) < 0)
		return 0; /* not an image: no commands */
	if (c.start_cmd)
		rc = start_command(r, m, id, &c);
	if (rc == 0 && c.ready_cmd)
		rc = wait_ready(r, m, id, &c);
	aj_config_free(&c);
	return rc;
}
