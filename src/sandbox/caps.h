/* Capabilities and securebits: the last privileged step before the sandbox user takes over. */
#ifndef AJ_SANDBOX_CAPS_H
#define AJ_SANDBOX_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"

/* Locks the securebits so that uid 0 inside never regains capabilities through exec, and
 * empties the bounding set; with `keep` (1 << CAP_x; an image's root), the bounding set keeps
 * those and uid 0 gets them back through exec as on any system. Needs CAP_SETPCAP; call
 * before switching to the sandbox user. */
int aj_caps_lock_and_bound(uint64_t keep, struct aj_err *err);
/* Switches to uid:gid (supplementary groups cleared when `set_groups`), then clears the
 * effective, permitted, inheritable and ambient sets, or for uid 0 with `keep` sets the
 * effective and permitted ones to it. */
int aj_caps_become_user(uid_t uid, gid_t gid, bool set_groups, uint64_t keep,
			struct aj_err *err);
/* The bounding set reduced to `keep` (CAP_SETPCAP needed). */
int aj_caps_bound(uint64_t keep, struct aj_err *err);
/* Switches to uid:gid with exactly these supplementary groups, keeping the permitted set
 * (the effective one is emptied by the kernel when uid 0 is left). */
int aj_caps_switch_user(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
			struct aj_err *err);
/* The three sets exactly as given (capset(2)'s rules: only ever fewer permitted). */
int aj_caps_set(uint64_t effective, uint64_t permitted, uint64_t inheritable,
		struct aj_err *err);
/* The ambient set exactly `ambient` (each must be permitted and inheritable). */
int aj_caps_ambient(uint64_t ambient, struct aj_err *err);
/* Effective and permitted exactly `keep`; inheritable and ambient empty. */
int aj_caps_keep(uint64_t keep, struct aj_err *err);
/* Clears the effective, permitted, inheritable and ambient sets of the calling process (no
 * privilege needed: only the bounding set and securebits need CAP_SETPCAP). */
int aj_caps_drop_all(struct aj_err *err);

#endif
