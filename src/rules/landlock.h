/* Landlock's vocabulary: the access rights and scopes of each ABI version, and the sets
 * agentjail grants. Pure: the plan (src/policy/) chooses rights with it, the sandbox
 * (src/sandbox/landlock.c) applies them. The kernel header on older build hosts lacks the
 * newer ABI, so the constants live here.
 */
#ifndef AJ_RULES_LANDLOCK_H
#define AJ_RULES_LANDLOCK_H

#include <stdint.h>

/* Filesystem rights (ABI version that introduced them). */
#define AJ_LL_FS_EXECUTE (1ULL << 0)
#define AJ_LL_FS_WRITE_FILE (1ULL << 1)
#define AJ_LL_FS_READ_FILE (1ULL << 2)
#define AJ_LL_FS_READ_DIR (1ULL << 3)
#define AJ_LL_FS_REMOVE_DIR (1ULL << 4)
#define AJ_LL_FS_REMOVE_FILE (1ULL << 5)
#define AJ_LL_FS_MAKE_CHAR (1ULL << 6)
#define AJ_LL_FS_MAKE_DIR (1ULL << 7)
#define AJ_LL_FS_MAKE_REG (1ULL << 8)
#define AJ_LL_FS_MAKE_SOCK (1ULL << 9)
#define AJ_LL_FS_MAKE_FIFO (1ULL << 10)
#define AJ_LL_FS_MAKE_BLOCK (1ULL << 11)
#define AJ_LL_FS_MAKE_SYM (1ULL << 12)
#define AJ_LL_FS_REFER (1ULL << 13)     /* ABI 2 */
#define AJ_LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define AJ_LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
/* TCP rights (ABI 4) and scopes (ABI 6). */
#define AJ_LL_NET_BIND_TCP (1ULL << 0)
#define AJ_LL_NET_CONNECT_TCP (1ULL << 1)
#define AJ_LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define AJ_LL_SCOPE_SIGNAL (1ULL << 1)

/* Rights a rule may carry on a regular file (directory-only rights make the rule invalid). */
#define AJ_LL_FS_FILE_RIGHTS \
	(AJ_LL_FS_EXECUTE | AJ_LL_FS_WRITE_FILE | AJ_LL_FS_READ_FILE | AJ_LL_FS_TRUNCATE | \
	 AJ_LL_FS_IOCTL_DEV)

/* The sets agentjail grants. */
#define AJ_LL_RO (AJ_LL_FS_READ_FILE | AJ_LL_FS_READ_DIR)
#define AJ_LL_RX (AJ_LL_RO | AJ_LL_FS_EXECUTE)
#define AJ_LL_RW                                                                              \
	(AJ_LL_RX | AJ_LL_FS_WRITE_FILE | AJ_LL_FS_REMOVE_DIR | AJ_LL_FS_REMOVE_FILE |         \
	 AJ_LL_FS_MAKE_DIR | AJ_LL_FS_MAKE_REG | AJ_LL_FS_MAKE_SOCK | AJ_LL_FS_MAKE_FIFO |     \
	 AJ_LL_FS_MAKE_SYM | AJ_LL_FS_REFER | AJ_LL_FS_TRUNCATE)
#define AJ_LL_DEV (AJ_LL_FS_READ_FILE | AJ_LL_FS_WRITE_FILE | AJ_LL_FS_TRUNCATE)
#define AJ_LL_TTY (AJ_LL_DEV | AJ_LL_FS_IOCTL_DEV)

/* Every filesystem right the given ABI knows. */
uint64_t aj_landlock_fs_rights(int abi);

#endif
