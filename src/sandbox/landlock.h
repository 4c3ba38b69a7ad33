/* Landlock: filesystem access rules, TCP bind/connect rules and IPC scoping, applied by the
 * sandbox to itself (and inherited by every descendant). The kernel header on older build
 * hosts lacks the newer ABI, so the constants live here.
 */
#ifndef AJ_SANDBOX_LANDLOCK_H
#define AJ_SANDBOX_LANDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

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

struct aj_landlock_rule {
	const char *path;
	uint64_t access;
};

struct aj_landlock_spec {
	int abi;
	uint64_t handled_fs;  /* 0: no filesystem rules */
	uint64_t handled_net; /* 0: no TCP rules */
	uint64_t scoped;
	const struct aj_landlock_rule *rules;
	size_t n_rules;
	const uint16_t *connect_ports; /* TCP ports that may be connected to */
	size_t n_connect_ports;
	const uint16_t *bind_ports; /* TCP ports that may be bound */
	size_t n_bind_ports;
};

/* The ABI version this kernel offers, 0 if Landlock is unavailable (why in buf). */
int aj_landlock_abi(char *why, size_t why_len);
/* Every filesystem right the given ABI knows. */
uint64_t aj_landlock_fs_rights(int abi);
/* Creates the ruleset, adds the rules and restricts the calling process. Needs
 * no_new_privs (or CAP_SYS_ADMIN). */
int aj_landlock_apply(const struct aj_landlock_spec *spec, struct aj_err *err);

#endif
