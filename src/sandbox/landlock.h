/* Landlock: filesystem access rules, TCP bind/connect rules and IPC scoping, applied by the
 * sandbox to itself (and inherited by every descendant). The rights are rules/landlock.h's.
 */
#ifndef AJ_SANDBOX_LANDLOCK_H
#define AJ_SANDBOX_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "rules/landlock.h"

/* At most this many path rules per ruleset. */
#define AJ_LANDLOCK_MAX_RULES 128

struct aj_landlock_rule {
	const char *path;
	uint64_t access;
	bool optional; /* a path this host may lack: skipped if it cannot be opened */
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

/* Creates the ruleset, adds the rules and restricts the calling process. Needs
 * no_new_privs (or CAP_SYS_ADMIN). A rule whose rights a rule added before it grants on one of
 * its ancestors (or on the same path) is left out: the rights beneath a path are the union of
 * the rules on the way to the root, across mounts, so it would grant nothing more. */
int aj_landlock_apply(const struct aj_landlock_spec *spec, struct aj_err *err);

#endif
