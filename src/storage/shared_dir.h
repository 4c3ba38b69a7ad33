/* Directories written once, named by a key of their content, and read by many holders at once
 * (the shared /etc of persistent sandboxes, supervisor/etc_share.h, under STATE/etc).
 *
 * A directory is written under a temporary name (.tmp-<pid>-<key>), synced, and renamed to
 * its key: no holder ever sees one half written, and a crash leaves only a temporary name. A
 * holder keeps a shared flock on the directory for as long as it uses it. A directory nobody
 * holds may go: renamed under an exclusive lock first, so that a holder who opened it
 * meanwhile finds its name gone once it has its lock, and writes it again.
 *
 * Errors are in the state layer.
 */
#ifndef AJ_STORAGE_SHARED_DIR_H
#define AJ_STORAGE_SHARED_DIR_H

#include <stddef.h>

#include "common/err.h"

/* STATE/<this>: the shared /etc directories. */
#define AJ_SHARED_ETC_DIR "etc"

/* Writes a new directory's content into dir_fd (mode 0755 already); 0, or -1 with errno set
 * and what failed named in err. */
typedef int (*aj_shared_dir_fill)(int dir_fd, void *arg, struct aj_err *err);

/* The directory parent/key, made if missing (parent too), locked shared: the descriptor
 * returned holds the lock. Its path goes into path. Writing a new one also runs
 * aj_shared_dir_prune(parent, key). */
int aj_shared_dir_open(const char *parent, const char *key, aj_shared_dir_fill fill, void *arg,
		       char *path, size_t len, struct aj_err *err);

/* Removes the directories under parent that nobody holds, keep (NULL: none) excepted, and
 * temporary ones a crashed writer left; returns how many went. Best effort: what cannot go now
 * goes another time. */
unsigned aj_shared_dir_prune(const char *parent, const char *keep);

#endif
