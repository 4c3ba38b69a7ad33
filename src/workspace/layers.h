/* Layer storage for layered workspaces on the host (docs/sandboxes.md): immutable lower
 * layers plus one writable upper directory per sandbox, stacked by overlayfs inside the
 * sandbox. This header makes, publishes, locks, squashes and removes them; what a sandbox
 * changed in them is workspace/diff.h's. The state store (state/store.h) records which layers
 * exist and which stacks use them; these functions only handle the directories, and callers
 * hold the locks below around each change.
 *
 * Layout under the state directory:
 *   layers/<id>/                an immutable layer
 *   layers/.tmp-<id>/           a layer being written; renamed into place when complete, so a
 *                               crash leaves at most a .tmp directory that gc removes
 *   layers/.lock-<id>           flocked by whoever makes, settles or removes layer <id>
 *   sandboxes/<id>/upper/       the sandbox's writable layer
 *   sandboxes/<id>/work/        overlayfs' work directory
 *   sandboxes/<id>/lock         flocked by whoever makes or changes the sandbox
 * Files inside layers keep the ids the sandbox sees (0..65535), whatever host id range the
 * sandbox runs under; agentjail maps them with idmapped mounts at start.
 *
 * Ownership: every function takes paths (the state directory, ids) the caller keeps, and
 * leaves no descriptor open but the lock descriptors it returns, which the caller gives back
 * with aj_ws_layer_unlock() or close(). Errors are in the state layer and name the path.
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

/* Creates the missing sandboxes/<id>; disk > 0: a quota directory bounded at that many bytes
 * where the filesystem can (storage/quota.h; the plan checks that it is). Before anything is
 * put in it: its lock file (the manager's) is the first. */
int aj_ws_sandbox_dir(const char *state, const char *id, uint64_t disk, struct aj_err *err);
/* Creates sandboxes/<id>/{upper,work}; upper owned by uid:gid (as raw ids on disk). */
int aj_ws_sandbox_create(const char *state, const char *id, uid_t uid, gid_t gid,
			 struct aj_err *err);
int aj_ws_sandbox_remove(const char *state, const char *id, struct aj_err *err);
/* What sandboxes/<id> holds and may hold; -1 if it is not a quota directory. */
struct aj_quota_use;
int aj_ws_sandbox_usage(const char *state, const char *id, struct aj_quota_use *u);
/* The disk limit of sandboxes/<id>, 0 if none. */
uint64_t aj_ws_sandbox_disk(const char *state, const char *id);

/* Turns a sandbox's upper directory into the new layer `layer_id`. move: the sandbox is not
 * running, so the upper is renamed into the layer (constant time) and a fresh empty upper
 * takes its place; otherwise the upper is copied (cost grows with the changed data). */
int aj_ws_layer_from_upper(const char *state, const char *sandbox_id, const char *layer_id,
			   bool move, uid_t uid, gid_t gid, uint64_t *bytes, struct aj_err *err);
/* An in-place restore's files (manager/snapshot.c). set_aside renames the sandbox's upper to
 * upper.old, the step that commits a restore on disk, and puts a fresh empty upper with the
 * same owner in its place; run again after a crash it completes what is missing. */
int aj_ws_upper_set_aside(const char *state, const char *sandbox_id, struct aj_err *err);
bool aj_ws_upper_aside_exists(const char *state, const char *sandbox_id);
int aj_ws_upper_drop_aside(const char *state, const char *sandbox_id, struct aj_err *err);
/* Creates a sandbox's upper (owner and mode of `like_dir`, the layer its old upper became)
 * and work directories where they are missing: the end of a snapshot or fork of a stopped
 * sandbox that a crash interrupted after the upper was moved (manager/snapshot.c). */
int aj_ws_sandbox_repair(const char *state, const char *id, const char *like_dir,
			 struct aj_err *err);
bool aj_ws_sandbox_has_upper(const char *state, const char *id);

/* flock on the file at `path` (created if missing, with its directory if make_parent),
 * released by the kernel if the holder dies; the descriptor, or -1 (errnum EWOULDBLOCK when
 * !wait and someone holds it). A holder may unlink the file before closing it. */
int aj_ws_lock_path(const char *path, bool make_parent, bool wait, struct aj_err *err);
/* The lock on layers/.lock-<id>, held by the layer's creator from before its store record
 * exists until it is ready or undone, and by whoever settles or removes it later (crash
 * recovery, gc): a layer whose lock is free has nobody at work on it. unlock unlinks the file
 * and closes fd (nothing if fd < 0). */
int aj_ws_layer_lock(const char *state, const char *layer_id, bool wait, struct aj_err *err);
void aj_ws_layer_unlock(const char *state, const char *layer_id, int fd);
/* Ids named by the entries of <state>/<kind> ("layers": <id>, .tmp-<id>, .lock-<id>;
 * "sandboxes": <id>), each once. */
int aj_ws_dir_ids(const char *state, const char *kind, struct aj_strv *ids, struct aj_err *err);
/* Removes layers/<id> and layers/.tmp-<id>. */
int aj_ws_layer_discard(const char *state, const char *layer_id, struct aj_err *err);

/* Merges `layers` (bottom first) into one new layer. */
int aj_ws_layer_squash(const char *state, const struct aj_strv *layers, const char *layer_id,
		       struct aj_err *err);
int aj_ws_layer_remove(const char *state, const char *layer_id, struct aj_err *err);
/* Removes layers/.tmp-* left by an interrupted snapshot or fork. */
int aj_ws_layers_clean_tmp(const char *state, struct aj_err *err);

#endif
