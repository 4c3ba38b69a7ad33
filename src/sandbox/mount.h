/* Building the sandbox's root filesystem, in the sandbox's own mount namespace. */
#ifndef AJ_SANDBOX_MOUNT_H
#define AJ_SANDBOX_MOUNT_H

#include <stdbool.h>

#include "common/err.h"
#include "policy/plan.h"

/* Runs in the child, as root of the sandbox's user namespace: makes the mount tree private,
 * pivots into an empty tmpfs (the old root stays reachable at /.oldroot while building),
 * executes the plan's operations, detaches the old root and makes "/" read-only. Consumes
 * (closes) the tree_fd of every op. */
int aj_mount_build_root(const struct aj_plan *plan, struct aj_err *err);
/* The same with the root taken from a directory (OCI bundles): ops[0] is a bind of it at "/"
 * whose tree_fd the parent made; the other operations run inside it. The root mount is made
 * read-only last when `readonly`. Consumes the tree_fd of every op. */
int aj_mount_build_tree_root(const struct aj_plan *plan, bool readonly, struct aj_err *err);

#endif
