/* Capabilities and securebits: the last privileged step before the sandbox user takes over. */
#ifndef AJ_SANDBOX_CAPS_H
#define AJ_SANDBOX_CAPS_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/err.h"

/* Locks the securebits so that uid 0 inside never regains capabilities through exec, and
 * empties the bounding set. Needs CAP_SETPCAP; call before switching to the sandbox user. */
int aj_caps_lock_and_bound(struct aj_err *err);
/* Switches to uid:gid (supplementary groups cleared when `set_groups`), then clears the
 * effective, permitted, inheritable and ambient sets. */
int aj_caps_become_user(uid_t uid, gid_t gid, bool set_groups, struct aj_err *err);
/* Clears the effective, permitted, inheritable and ambient sets of the calling process (no
 * privilege needed: only the bounding set and securebits need CAP_SETPCAP). */
int aj_caps_drop_all(struct aj_err *err);

#endif
