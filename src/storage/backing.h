/* The state directory's own filesystem (`agentjail storage init`, docs/storage.md): where the
 * host's filesystem has no quotas agentjail can use, an image file next to the state directory
 * holds a quota-capable one (btrfs with quota groups, or ext4 or XFS with project quotas),
 * loop-mounted on the state directory.
 *
 * Files: STATE.img (the image, 0600) and STATE.img.fs (its filesystem's name, which also marks
 * the image as agentjail's). aj_backing_attach() mounts it again where it is not mounted, as
 * each command opens the state directory, so that a reboot needs nothing more; a systemd
 * mount unit does the same earlier (docs/storage.md).
 *
 * The mkfs and mount programs of the host do the formatting and the loop device (e2fsprogs,
 * xfsprogs, btrfs-progs, util-linux). Root only. Errors name the step and the program's
 * message. */
#ifndef AJ_STORAGE_BACKING_H
#define AJ_STORAGE_BACKING_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define AJ_BACKING_MIN (512ULL << 20) /* mkfs.xfs refuses less than 300 MB */
#define AJ_BACKING_DEFAULT (20ULL << 30) /* sparse: the host's disk holds what is written */

/* Makes STATE.img of `size` bytes with filesystem `fs` ("btrfs", "ext4" or "xfs"), mounts it on
 * `state` (missing or empty) and checks that disk limits are enforceable there; on any failure
 * nothing it made is left. */
int aj_backing_init(const char *state, uint64_t size, const char *fs, struct aj_err *err);

/* Mounts STATE.img on `state` when agentjail made one and it is not mounted; *attached says
 * whether it mounted it now. Nothing (0) when there is no image or the caller is not root. */
int aj_backing_attach(const char *state, bool *attached, struct aj_err *err);

#endif
