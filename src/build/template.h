/* An E2B template build (the body of POST /v2/templates/{id}/builds/{buildID}, which the
 * SDK's Template builder sends: docs/e2b.md "Building templates") as instructions of the
 * builder (build/builder.h), so that it is built as a Dockerfile is, every RUN in a sandbox.
 *
 * The body is outside input: every refusal names the member ("steps[2].args[0]: ...").
 * What it becomes:
 * - fromImage NAME or fromTemplate NAME: FROM NAME (an image or an earlier template of the
 *   owner, or of the host's administrator). On an image, E2B's own provisioning first: a user
 *   "user" (home /home/user) made when the image has none, then USER user and WORKDIR
 *   /home/user, the defaults of every E2B template. fromImageRegistry is refused (the store
 *   pulls with the daemon's registry settings).
 * - RUN [cmd, user?]: the command by the stage's shell, as `user` when given (root for the
 *   SDK's aptInstall and the like), else as the template's USER;
 * - COPY [src, dest, user?, mode?] with filesHash: the files the SDK uploaded under that hash
 *   (a tar of paths relative to its context), unpacked by the caller into CONTEXT/<hash>/, so
 *   src becomes "<hash>/src"; `user` is --chown, `mode` --chmod;
 * - ENV [k, v, k, v, ...], WORKDIR [path], USER [name]: the instructions of those names;
 * - force (the body's or any step's): the build ignores the cache;
 * - startCmd and readyCmd: labels of the image (image/manifest.h's AJ_LABEL_START and
 *   AJ_LABEL_READY), run when an E2B sandbox starts on it.
 *
 * E2B numbers the steps for its errors: "base" for the FROM and the provisioning, then 1..N
 * for steps[0..N-1]; each instruction records its step in step_of.
 */
#ifndef AJ_BUILD_TEMPLATE_H
#define AJ_BUILD_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "build/dockerfile.h"
#include "common/err.h"
#include "common/strv.h"

#define AJ_TEMPLATE_MAX_STEPS 1024

struct aj_template {
	struct aj_dockerfile df;
	size_t *step_of;        /* per instruction of df: 0 the base, else the step's number */
	struct aj_strv files;   /* each COPY's filesHash (64 hex digits), once each */
	struct aj_strv labels;  /* "KEY=VALUE": the start and ready commands */
	bool force;
};

int aj_template_parse(json_t *body, struct aj_template *t, struct aj_err *err);
void aj_template_free(struct aj_template *t);

/* A filesHash as the SDK makes them: 64 lowercase hex digits. */
bool aj_template_hash_ok(const char *s);

#endif
