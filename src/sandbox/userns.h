/* User namespace identity: the id maps of a sandbox, the per-sandbox host id ranges used when
 * agentjail runs as root, and idmapped mounts that show granted host paths to the sandbox user
 * as its own. All functions here run in the supervisor (parent), never in the sandbox.
 */
#ifndef AJ_SANDBOX_USERNS_H
#define AJ_SANDBOX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "policy/plan.h"

/* Host ids handed to sandboxes when agentjail runs as root: range i covers
 * [AJ_ID_BASE + i * 65536, AJ_ID_BASE + (i + 1) * 65536). Far above login users and above
 * systemd's container range, below its "foreign" range (docs/threat-model.md). */
#define AJ_ID_BASE 0x70000000u
#define AJ_ID_RANGES 2048u
#define AJ_RUNTIME_DIR "/run/agentjail"

/* Takes a free range for the life of this process (an flock on a slot file, released by the
 * kernel even if we crash). *lock_fd keeps the range; close it to release. */
int aj_idrange_acquire(uint32_t *base, int *lock_fd, struct aj_err *err);

/* The same range for every sandbox that gives the same key (the containers of one pod),
 * held with a shared lock by each (idrange_pod.c). A key is [A-Za-z0-9._-], at most 128. */
int aj_idrange_acquire_shared(const char *key, uint32_t *base, int *lock_fd, struct aj_err *err);
/* Forgets the key's range once its pod is gone (members still holding it keep it). */
void aj_idrange_forget(const char *key);
/* For a sandbox whose processes may outlive the holder of the lock (a container in a pid
 * namespace it joined): records in the slot the cgroup directory that lists them, so that
 * the range is not handed out again while that cgroup has processes. lock_fd is the
 * exclusive lock aj_idrange_acquire() returned. */
int aj_idrange_note_cgroup(int lock_fd, const char *cgroup_dir, struct aj_err *err);
/* Whether the slot (locked by the caller) names such a cgroup that still has processes. */
bool aj_idrange_left_behind(int slot_fd);

/* Writes uid_map/gid_map (and setgroups when rootless) for the freshly cloned sandbox. */
int aj_userns_write_maps(pid_t pid, const struct aj_plan *plan, struct aj_err *err);

/* Privileged: turns every AJ_OPF_FROM_PARENT operation into a detached mount tree (tree_fd),
 * idmapped so that the path's owner appears as the sandbox user. Both modes: creates
 * AJ_OPF_MKSRC sources (owned like their parent directory). */
int aj_userns_prepare_trees(struct aj_plan *plan, struct aj_err *err);
/* Closes the trees not attached and reaps the idmap namespace's holder (plan->idmap_holder):
 * after the sandbox's clone, or when a start fails. */
void aj_userns_close_trees(struct aj_plan *plan);
/* A detached copy of the tree at path (no symlinks followed), nosuid, nodev, idmapped through
 * userns_fd (-1: not idmapped), read-only if asked. */
int aj_userns_idmapped_tree(const char *path, int userns_fd, bool ro, struct aj_err *err);

#endif
