/* The diff engines: what a sandbox changed in its layered workspace, computed on the host
 * from the layer directories alone (nothing is mounted). aj_ws_diff() compares one writable
 * upper directory with the lower layers under it (a change set of `run --overlay`,
 * workspace/changes.h); aj_ws_diff_stack() compares a persistent sandbox's merged view with
 * the base stack it was made or restored from (`agentjail diff`, manager/snapshot.c).
 * Whiteouts (0/0 character devices) and opaque directories (AJ_OVL_OPAQUE_XATTR) count as
 * overlayfs counts them.
 *
 * The layers are trees a sandbox wrote: every lookup is relative to a layer's descriptor and
 * never follows a symlink (a symlink is itself an entry, added, changed or deleted).
 *
 * Ownership: both take directory paths the caller keeps and close every descriptor they open
 * before returning. fn gets a path valid only during the call, relative to the workspace's
 * root, in sorted order; a non-zero return from fn stops the walk and is returned.
 */
#ifndef AJ_WORKSPACE_DIFF_H
#define AJ_WORKSPACE_DIFF_H

#include "common/err.h"
#include "common/strv.h"

/* What a sandbox changed relative to its lower layers: calls fn(kind, path) with kind 'A'
 * (added), 'M' (modified) or 'D' (deleted) and paths relative to the workspace root, sorted. */
int aj_ws_diff(const char *upper_dir, const struct aj_strv *lower_dirs_top_first,
	       int (*fn)(void *arg, char kind, const char *path), void *arg, struct aj_err *err);
/* What a persistent sandbox changed since its base: `base_dirs` (bottom first) is the stack it
 * started from, `own_dirs` (bottom first) the layers made on top of it since (snapshots and
 * forks of it while stopped) and `upper_dir` its writable layer. Every path an own layer or
 * the upper has is compared between the merged base and the merged final view: A (only in the
 * final one), D (only in the base; below a directory that is gone, only the directory), M (in
 * both, unless a directory in both); so is every path the layers below have in one of their
 * directories, listed only if deleted (a whiteout or opaque directory hid it). Whiteouts and
 * opaque directories count as overlayfs counts them. Paths relative to the root, sorted. */
int aj_ws_diff_stack(const struct aj_strv *base_dirs, const struct aj_strv *own_dirs,
		     const char *upper_dir, int (*fn)(void *arg, char kind, const char *path),
		     void *arg, struct aj_err *err);

#endif
