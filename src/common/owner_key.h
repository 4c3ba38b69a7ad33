/* An owner's directory name: any owner string (a token's owner, "" the local one) as one plain
 * path component, 32 hex digits of its SHA-256. Per-owner stores (state/secrets.h,
 * storage/volumes.h) keep each owner's entries under it. */
#ifndef AJ_COMMON_OWNER_KEY_H
#define AJ_COMMON_OWNER_KEY_H

#define AJ_OWNER_KEY_LEN 32

/* key: AJ_OWNER_KEY_LEN + 1 bytes. 0, or -1 if the digest failed. */
int aj_owner_key(const char *owner, char *key);

#endif
