/* Host-side operations on directory trees whose contents a sandbox wrote (overlay upper
 * directories, layers). The contents are untrusted: every walk is descriptor-relative, never
 * follows a symlink (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW) and never leaves the tree it was given,
 * so a symlink planted by the sandbox cannot make agentjail read or write a host path.
 */
#ifndef AJ_COMMON_TREE_H
#define AJ_COMMON_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/* Overlay whiteout: a character device 0/0 marks a deleted path; this xattr marks a directory
 * that hides everything below it in lower layers. agentjail always mounts overlays from
 * inside the sandbox's user namespace, hence the "user." (userxattr) names. */
#define AJ_OVL_OPAQUE_XATTR "user.overlay.opaque"

/* Runs fn(arg, err) in a process that can act on every file of a sandbox's trees, and waits
 * for it: rootless with subordinate ids, uid 0 of a user namespace that maps them
 * (host/subids.h's aj_subids_run()), for files of a sandbox's other ids, which the caller
 * cannot reach. Set once at start; NULL (the default) when there is no such process. */
typedef int (*aj_tree_elevate_fn)(int (*fn)(void *arg, struct aj_err *err), void *arg,
				  struct aj_err *err);
void aj_tree_set_elevate(aj_tree_elevate_fn elevate);

/* Each operation below that the caller is denied (EACCES, EPERM) runs again through the
 * elevate function, when one is set. */

/* Copies the tree at src_dir into dst_dir (which must exist and be empty), preserving file
 * types, modes, owners, times, user.* xattrs and overlay whiteouts. Regular files are copied
 * with copy_file_range, which clones blocks where the filesystem can. Adds the bytes copied
 * to *bytes if non-NULL. */
int aj_tree_copy(int src_dir, int dst_dir, uint64_t *bytes, struct aj_err *err);
/* Merges a layer onto dst_dir as overlay would: whiteouts delete, opaque directories replace,
 * everything else is copied over. */
int aj_tree_merge(int layer_dir, int dst_dir, uint64_t *bytes, struct aj_err *err);
/* Removes everything below dir_fd (not dir_fd itself). */
int aj_tree_clear(int dir_fd, struct aj_err *err);
/* rm -rf of `name` in parent_fd; ENOENT is success. */
int aj_tree_remove_at(int parent_fd, const char *name, struct aj_err *err);
/* Total size of regular files below dir_fd. */
int aj_tree_size(int dir_fd, uint64_t *bytes, struct aj_err *err);
bool aj_tree_is_whiteout(int mode, unsigned long long rdev);

#endif
