/* Layered workspaces on the host (DESIGN section 4): immutable lower layers plus one writable
 * upper directory per sandbox, stacked by overlayfs inside the sandbox.
 *
 * Layout under the state directory:
 *   layers/<id>/                an immutable layer
 *   layers/.tmp-<id>/           a layer being written; renamed into place when complete, so a
 *                               crash leaves at most a .tmp directory that gc removes
 *   sandboxes/<id>/upper/       the sandbox's writable layer
 *   sandboxes/<id>/work/        overlayfs' work directory
 * Files inside layers keep the ids the sandbox sees (0..65535), whatever host id range the
 * sandbox runs under; agentjail maps them with idmapped mounts at start.
 */
#ifndef AJ_WORKSPACE_LAYERS_H
#define AJ_WORKSPACE_LAYERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/strv.h"

/* Overlayfs and its option string handle deep stacks poorly: squash before this many. */
#define AJ_MAX_LAYERS 24

int aj_ws_path(char *buf, size_t len, const char *state, const char *kind, const char *id,
	       const char *sub);

/* Creates sandboxes/<id>/{upper,work}; upper owned by uid:gid (as raw ids on disk). */
int aj_ws_sandbox_create(const char *state, const char *id, uid_t uid, gid_t gid,
			 struct aj_err *err);
int aj_ws_sandbox_remove(const char *state, const char *id, struct aj_err *err);

/* Turns a sandbox's upper directory into the new layer `layer_id`. move: the sandbox is not
 * running, so the upper is renamed into the layer (constant time) and a fresh empty upper
 * takes its place; otherwise the upper is copied (cost grows with the changed data). */
int aj_ws_layer_from_upper(const char *state, const char *sandbox_id, const char *layer_id,
			   bool move, uid_t uid, gid_t gid, uint64_t *bytes, struct aj_err *err);
/* Merges `layers` (bottom first) into one new layer. */
int aj_ws_layer_squash(const char *state, const struct aj_strv *layers, const char *layer_id,
		       struct aj_err *err);
int aj_ws_layer_remove(const char *state, const char *layer_id, struct aj_err *err);
/* Removes layers/.tmp-* left by an interrupted snapshot or fork. */
int aj_ws_layers_clean_tmp(const char *state, struct aj_err *err);

/* What a sandbox changed relative to its lower layers: calls fn(kind, path) with kind 'A'
 * (added), 'M' (modified) or 'D' (deleted) and paths relative to the workspace root, sorted. */
int aj_ws_diff(const char *upper_dir, const struct aj_strv *lower_dirs_top_first,
	       int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err);

#endif
