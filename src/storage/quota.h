/* Disk quotas: directories under the state directory whose contents the filesystem itself
 * bounds (limits.disk, docs/storage.md). A quota directory is where a sandbox's writable
 * layers live (sandboxes/<id>, changes/<id>, runs/<id>); whatever the sandbox writes there
 * counts against it, and a write past the limit fails with EDQUOT inside the sandbox. Two
 * mechanisms, probed per filesystem:
 *   project  ext4 or XFS mounted with project quotas (prjquota): the directory gets a project
 *            id of its own that its files inherit, and a byte and inode limit on it;
 *   btrfs    btrfs with quota groups enabled: the directory is a subvolume, and its qgroup's
 *            referenced bytes are limited (files count by the metadata they take).
 * Setting a limit needs CAP_SYS_ADMIN on the host: rootless, nothing is enforceable, and a
 * requested limit is refused unless the caller accepts it degraded (policy/plan.c).
 *
 * Ownership: functions take paths the caller keeps and leave no descriptor open. Errors are
 * in the state layer and name the path.
 */
#ifndef AJ_STORAGE_QUOTA_H
#define AJ_STORAGE_QUOTA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

enum aj_quota_kind { AJ_QUOTA_NONE = 0, AJ_QUOTA_PROJECT, AJ_QUOTA_BTRFS };

struct aj_quota_probe {
	enum aj_quota_kind kind;
	char fs[16];    /* "ext4", "xfs", "btrfs", ... */
	char why[320];  /* kind NONE: why not, with the remedy */
};

const char *aj_quota_kind_name(enum aj_quota_kind kind);

/* Whether the kernel has project quotas at all (why not into why). */
bool aj_quota_project_supported(char *why, size_t len);

/* Whether quota directories can be made under `dir` (an existing directory) by this process. */
void aj_quota_probe(const char *dir, struct aj_quota_probe *q);

/* Makes the missing directory `path` (its parent exists) with `mode`. bytes > 0: a quota
 * directory bounded at `bytes` (and bytes / AJ_DISK_BYTES_PER_INODE files with project
 * quotas); if quotas are not possible under its parent, a plain directory, *limited false.
 * bytes 0: a plain directory. */
#define AJ_DISK_BYTES_PER_INODE 2048
int aj_quota_mkdir(const char *path, mode_t mode, uint64_t bytes, bool *limited,
		   struct aj_err *err);

struct aj_quota_use {
	enum aj_quota_kind kind;
	uint64_t bytes, limit;   /* limit 0: none */
	uint64_t files, file_limit; /* project quotas only; 0 otherwise */
};

/* What the quota directory `path` holds and may hold; -1 if it is not one (errno ENODATA) or
 * cannot be read. sync: flush the filesystem first, so that the figures are final. */
int aj_quota_usage(const char *path, bool sync, struct aj_quota_use *u);

/* Whether a sandbox has reached its limit: within 1/32 of it (at least 256 KiB), where the
 * filesystem's reservations already refuse writes. */
bool aj_quota_reached(const struct aj_quota_use *u);

/* Changes the limit of the quota directory `path`. */
int aj_quota_set_limit(const char *path, uint64_t bytes, struct aj_err *err);

/* A full quota directory cannot be mounted as an overlay's upper (overlayfs makes its work
 * directory at each mount, and mounts read-only when it cannot): when `path` has reached its
 * limit, raises it by AJ_QUOTA_HEADROOM (and its files by 1024) and returns 1, for the caller
 * to set the limit again once mounted; 0 otherwise. */
#define AJ_QUOTA_HEADROOM (8ULL << 20)
int aj_quota_headroom(const char *path);

/* Marks `dir` (layers/) as outside every project: on ext4 and XFS a rename of a project's
 * files into it then fails with EXDEV, so that moving a sandbox's upper out becomes a copy
 * and its files stop counting against the sandbox. Nothing on other filesystems. */
int aj_quota_mark_shared(const char *dir);

/* Removes the tree at `path` (rm -rf, never following links) and releases its quota. */
int aj_quota_remove(const char *path, struct aj_err *err);
/* The same for `name` in the directory parent (ENOENT is success). */
int aj_quota_remove_at(int parent, const char *name, struct aj_err *err);

#endif
