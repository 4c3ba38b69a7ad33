/* Shared by the workspace module's files; not for other modules. */
#ifndef AJ_WORKSPACE_INTERNAL_H
#define AJ_WORKSPACE_INTERNAL_H

#include "common/err.h"

/* Opens a directory without following a symlink at its last component: a descriptor, or -1
 * with err (if non-NULL) naming the path. */
int ws_open_dir(const char *path, struct aj_err *err);

#endif
