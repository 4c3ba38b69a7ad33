/* Building the sandbox's root filesystem, in the sandbox's own mount namespace. */
#ifndef AJ_SANDBOX_MOUNT_H
#define AJ_SANDBOX_MOUNT_H

#include "common/err.h"
#include "policy/plan.h"

/* Runs in the child, as root of the sandbox's user namespace: makes the mount tree private,
 * pivots into an empty tmpfs (the old root stays reachable at /.oldroot while building),
 * executes the plan's operations, detaches the old root and makes "/" read-only. Consumes
 * (closes) the tree_fd of every op. */
int aj_mount_build_root(const struct aj_plan *plan, struct aj_err *err);

#endif
