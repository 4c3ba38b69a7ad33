/* Policy-changing flags shared by `run` and `create` (policy_flags.c). */
#ifndef AJ_CLI_POLICY_FLAGS_H
#define AJ_CLI_POLICY_FLAGS_H

#include "cli/args.h"
#include "policy/policy.h"

struct aj_pflags {
	const char *policy_file;
	const char *preset;
	struct {
		const char *name;
		const char *value;
	} pending[256];
	size_t n_pending;
};

/* Option callback: records the flag (ctx starts with a struct aj_cli whose pf is set). */
int aj_pflags_defer(void *ctx, const char *name, const char *value, struct aj_err *err);
/* Defaults, preset, policy file, then the recorded flags in order. Not validated. */
int aj_pflags_load(const struct aj_pflags *pf, struct aj_policy *pol, struct aj_err *err);

#define AJ_POLICY_FLAG_OPTIONS                                                                 \
	{"policy", 0, "FILE", aj_pflags_defer, "policy file (docs/policy.md)"},                    \
	{"preset", 0, "NAME", aj_pflags_defer, "workspace-write (default) or read-only"},          \
	{"cwd", 0, "PATH", aj_pflags_defer, "working directory inside (default: the workspace)"},  \
	{"memory", 'm', "SIZE", aj_pflags_defer, "memory limit, e.g. 512MiB, or none"},            \
	{"pids", 0, "N", aj_pflags_defer, "limit on tasks (processes and threads), or none"},      \
	{"cpus", 0, "N", aj_pflags_defer, "CPU quota in CPUs, e.g. 0.5, or none"},                 \
	{"timeout", 't', "DURATION", aj_pflags_defer, "wall-clock limit per command, or none"},    \
	{"file-size", 0, "SIZE", aj_pflags_defer, "largest file the sandbox may write, or none"},  \
	{"open-files", 0, "N", aj_pflags_defer, "open descriptors per process"},                   \
	{"output-limit", 0, "SIZE", aj_pflags_defer, "stdout+stderr bytes passed on, or none"},    \
	{"output-action", 0, "ACTION", aj_pflags_defer, "past the output limit: truncate or kill"}, \
	{"tmpfs-size", 0, "SIZE", aj_pflags_defer, "size of /tmp, /dev/shm and the home"},         \
	{"ro", 0, "PATH", aj_pflags_defer, "make a host path visible read-only (repeatable)"},     \
	{"rw", 0, "PATH", aj_pflags_defer, "make a host path visible read-write (repeatable)"},    \
	{"mask", 0, "PATH", aj_pflags_defer, "hide a path inside the sandbox (repeatable)"},       \
	{"env", 'e', "NAME", aj_pflags_defer, "pass a host environment variable in (repeatable)"}, \
	{"setenv", 0, "NAME=VALUE", aj_pflags_defer, "set a variable inside (repeatable)"},        \
	{"hostname", 0, "NAME", aj_pflags_defer, "hostname inside"},                               \
	{"network", 0, "MODE", aj_pflags_defer,                                                    \
	 "none (default: loopback only), proxy (egress rules) or host (shared, uncontrolled)"},   \
	{"allow-host", 0, "HOST[:PORT]", aj_pflags_defer,                                          \
	 "allow egress to HOST (*.SUFFIX too) through the proxy; implies --network proxy"},       \
	{"allow-degraded", 0, "LAYER", aj_pflags_defer, "accept running without LAYER (repeatable)"}, \
	{"tier", 0, "TIER", aj_pflags_defer,                                                       \
	 "namespaces (default) or landlock (no namespaces, for hosts without user namespaces)"},  \
	{"allow-syscalls", 0, "GROUP", aj_pflags_defer, "lift a relaxable seccomp group, e.g. ptrace"}

#endif
