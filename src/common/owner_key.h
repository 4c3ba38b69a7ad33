/* An owner's directory name: any owner string (a token's owner, "" the local one) as one plain
 * path component, 32 hex digits of its SHA-256. Per-owner stores (state/secrets.h,
 * storage/volumes.h) keep each owner's entries under it. */
#ifndef AJ_COMMON_OWNER_KEY_H
#define AJ_COMMON_OWNER_KEY_H

#define AJ_OWNER_KEY_LEN 32

#include <stdbool.h>

#include "common/err.h"

/* key: AJ_OWNER_KEY_LEN + 1 bytes. 0, or -1 if the digest failed. */
int aj_owner_key(const char *owner, char *key);

/* Opens an owner's directory `path` of a per-owner store (made 0700 with its parents if `make`)
 * without following a link, and takes the exclusive lock of its `.lock` file: *dir and *lock,
 * the caller's to close (closing the lock releases it). A missing directory when !make is no
 * error: both -1. */
int aj_owner_dir_open(const char *path, bool make, int *dir, int *lock, struct aj_err *err);

#endif
