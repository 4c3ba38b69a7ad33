/* `agentjail build`: an image from a Dockerfile and a build context (docs/build.md).
 *
 * Each stage starts FROM an image of the store (pulled when the store lacks it), `scratch`,
 * or an earlier stage. Instructions that change only the config (ENV, ARG, WORKDIR, USER,
 * LABEL, EXPOSE, CMD, ENTRYPOINT, SHELL, VOLUME, STOPSIGNAL) change the config; RUN, COPY and
 * ADD each make a layer:
 *
 * - RUN runs in a sandbox like any other (build/step.c): the image so far as its root, the
 *   step's own system layer on top, no workspace and no host path, the build policy (network
 *   none unless hosts are allowed, the usual limits), as the stage's USER (root of the
 *   sandbox's own user namespace by default); what it wrote in the system layer becomes the
 *   layer (build/layer.h);
 * - COPY and ADD write the files they take, from the context (beneath it: a path or symlink
 *   that leaves it is refused; .dockerignore applies) or from another stage, owned by 0:0 or
 *   --chown's ids (resolved in the image's passwd and group), with --chmod's mode; ADD
 *   unpacks a local tar archive, and downloads an http(s) URL with the host's curl in a
 *   sandbox of the build policy's network (the proxy, to allowed hosts only).
 *
 * The cache: each step's key is a hash of the previous key (the base image's digest first),
 * the instruction with its variables expanded (and the ARG values in force), and for COPY
 * and ADD the content of what they take (names, modes, owners, data: not times). A layer
 * step's key names its layer blob (STATE/images/build-cache/<key>); a key whose blob or layer
 * the store no longer has is a miss. --no-cache ignores it.
 *
 * The steps, what they decided and the RUN sandboxes' own events go to o->events_path.
 *
 * The image is registered when the last step is done, named by -t; a failed step leaves the
 * store as it was but for layers and cache entries of the steps before it, which later
 * builds reuse and `image prune` removes when no image has them.
 */
#ifndef AJ_BUILD_BUILDER_H
#define AJ_BUILD_BUILDER_H

#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "build/dockerfile.h"
#include "common/strv.h"
#include "image/pull.h"
#include "image/store.h"
#include "policy/policy.h"

struct aj_build_opts {
	const char *context;          /* a directory */
	const char *file;             /* the Dockerfile; NULL: CONTEXT/Dockerfile */
	const char *tag;              /* NAME[:TAG]; NULL: unnamed */
	const char *target;           /* the stage to build; NULL: the last */
	const struct aj_strv *build_args; /* "NAME=VALUE" */
	bool no_cache;
	struct aj_policy *policy;     /* for RUN steps: loaded, not validated; changed per step in
				       * the step's own process only */
	const struct aj_pull_opts *pull; /* for FROM images the store lacks */
	FILE *out;                    /* steps and their timings */
	bool tty;                     /* out is a terminal: each RUN's output in a window that
				       * redraws (build/display.h), kept only when it fails */
	/* JSON lines appended (supervisor/events.h): build.start, a build.step and a
	 * build.step.end (or build.step.failed) per instruction, build.end, and each RUN's own
	 * sandbox events (start, egress decisions, limits, end); NULL: none. */
	const char *events_path;
	/* Whose names FROM resolves (then the local owner's) and whose name the image gets;
	 * NULL or "": the local owner. */
	const char *owner;
	/* Instructions made by the caller instead of a Dockerfile (borrowed; build/template.h
	 * makes them): `file` then only names them in messages, and the context has no
	 * Dockerfile to read. */
	const struct aj_dockerfile *dockerfile;
	/* "KEY=VALUE" labels the image gets over its Dockerfile's (the cache does not see
	 * them); NULL: none. */
	const struct aj_strv *labels;
	/* Called as each instruction starts, with its index in the Dockerfile; NULL: none. */
	void (*on_step)(void *arg, size_t index);
	void *on_step_arg;
};

/* Builds into the store; the image's record into out. */
int aj_build(struct aj_images *im, const struct aj_build_opts *o, struct aj_image_rec *out,
	     struct aj_err *err);

#endif
