/* Policy-changing flags shared by `run`, `create` and `mcp --create` (policy_flags.c). They
 * are rows of type AJ_TO_POLICY: the engine records each one with its value while parsing,
 * and aj_pflags_load() applies them in command-line order after the policy file and preset,
 * so that flags override the file.
 *
 * A verb whose table has policy rows starts its context with a struct aj_pflags: the engine
 * finds the record there. */
#ifndef AJ_CLI_POLICY_FLAGS_H
#define AJ_CLI_POLICY_FLAGS_H

#include "cli/args.h"
#include "policy/policy.h"

struct aj_pflags {
	const char *policy_file;
	const char *preset;
	struct {
		const struct aj_option *row;
		const char *value;
	} pending[256];
	size_t n_pending;
};

/* Records a policy row and its value (called by the engine). */
int aj_pflags_defer(void *pf, const struct aj_option *o, const char *value, struct aj_err *err);
/* Defaults, preset, policy file, then the recorded flags in order. Not validated. */
int aj_pflags_load(const struct aj_pflags *pf, struct aj_policy *pol, struct aj_err *err);

/* The rows, in --help order: --policy and --preset (into struct aj_pflags), the rest into the
 * policy. `run` adds -w/--workspace before them. */
#define AJ_PF(field) .to = AJ_TO_POLICY, .off = offsetof(struct aj_policy, field)
#define AJ_WORKSPACE_OPTION                                                                   \
	{AJ_OPT("workspace", 'w', AJ_OPT_FUNC), AJ_PF(workspace), .metavar = "DIR",               \
	 .parse = aj_pflags_workspace, .complete = AJ_COMP_DIR,                                    \
	 .help = "the workspace (default: the current directory)"}
/* In groups, for verbs that take some (build: the file, limits, network and layers; its -t is
 * the image's name, as docker's). */
#define AJ_PF_FILE_ROWS                                                                       \
	{AJ_OPT("policy", 0, AJ_OPT_STRING), .off = offsetof(struct aj_pflags, policy_file),       \
	 .metavar = "FILE", .help = "policy file (docs/policy.md)"},                               \
	{AJ_OPT("preset", 0, AJ_OPT_STRING), .off = offsetof(struct aj_pflags, preset),            \
	 .metavar = "NAME", .help = "workspace-write (default) or read-only",                      \
	 .complete = AJ_COMP_CHOICES, .choices = aj_pflags_presets}

#define AJ_PF_ROOT_ROWS                                                                       \
	{AJ_OPT("image", 0, AJ_OPT_STRDUP), AJ_PF(rootfs_image), .metavar = "REF",                  \
	 .complete = AJ_COMP_IMAGE,                                                                 \
	 .help = "the root filesystem: an image of the store (docs/images.md)"},                    \
	{AJ_OPT("user", 'u', AJ_OPT_FUNC), AJ_PF(process_user), .metavar = "USER",                  \
	 .parse = aj_pflags_user,                                                                   \
	 .help = "run as root, an image's user name or UID[:GID] (root: the sandbox's own)"},       \
	{AJ_OPT("cwd", 0, AJ_OPT_STRDUP), AJ_PF(cwd), .metavar = "PATH",                            \
	 .help = "working directory inside (default: the image's, else the workspace)"}

#define AJ_PF_LIMIT_ROWS                                                                      \
	{AJ_OPT("memory", 'm', AJ_OPT_SIZE), AJ_PF(limits.memory), .metavar = "SIZE",              \
	 .flags = AJ_OPTF_NONE_OK, .help = "memory limit, e.g. 512MiB, or none"},                  \
	{AJ_OPT("pids", 0, AJ_OPT_COUNT), AJ_PF(limits.pids), .metavar = "N",                       \
	 .flags = AJ_OPTF_NONE_OK, .help = "limit on tasks (processes and threads), or none"},     \
	{AJ_OPT("cpus", 0, AJ_OPT_CPUS), AJ_PF(limits.cpu_milli), .metavar = "N",                   \
	 .flags = AJ_OPTF_NONE_OK, .help = "CPU quota in CPUs, e.g. 0.5, or none"},                \
	{AJ_OPT("disk", 0, AJ_OPT_SIZE), AJ_PF(limits.disk), .metavar = "SIZE",                    \
	 .flags = AJ_OPTF_NONE_OK,                                                                  \
	 .help = "disk quota on the writable layers, e.g. 1GiB, or none (persistent: 10GiB where enforceable)"},                  \
	{AJ_OPT("file-size", 0, AJ_OPT_SIZE), AJ_PF(limits.file_size), .metavar = "SIZE",          \
	 .flags = AJ_OPTF_NONE_OK, .help = "largest file the sandbox may write, or none"},         \
	{AJ_OPT("open-files", 0, AJ_OPT_COUNT), AJ_PF(limits.open_files), .metavar = "N",          \
	 .help = "open descriptors per process"},                                                   \
	{AJ_OPT("output-limit", 0, AJ_OPT_SIZE), AJ_PF(limits.output_bytes), .metavar = "SIZE",    \
	 .flags = AJ_OPTF_NONE_OK, .help = "stdout+stderr bytes passed on, or none"},              \
	{AJ_OPT("output-action", 0, AJ_OPT_CHOICE), AJ_PF(limits.output_action),                   \
	 .metavar = "ACTION", .choices = aj_pflags_output_actions,                                 \
	 .help = "past the output limit: truncate or kill"},                                        \
	{AJ_OPT("tmpfs-size", 0, AJ_OPT_SIZE), AJ_PF(limits.tmpfs_size), .metavar = "SIZE",        \
	 .help = "size of /tmp, /dev/shm and the home"}

#define AJ_PF_TIMEOUT_ROW                                                                     \
	{AJ_OPT("timeout", 't', AJ_OPT_DURATION), AJ_PF(limits.timeout_ms), .metavar = "DURATION", \
	 .flags = AJ_OPTF_NONE_OK, .help = "wall-clock limit per command, or none"}

#define AJ_PF_PATH_ROWS                                                                       \
	{AJ_OPT("ro", 0, AJ_OPT_FUNC), AJ_PF(read_only), .metavar = "PATH",                         \
	 .parse = aj_pflags_push_path, .complete = AJ_COMP_FILE,                                    \
	 .help = "make a host path visible read-only (repeatable)"},                               \
	{AJ_OPT("rw", 0, AJ_OPT_FUNC), AJ_PF(read_write), .metavar = "PATH",                        \
	 .parse = aj_pflags_push_path, .complete = AJ_COMP_FILE,                                    \
	 .help = "make a host path visible read-write (repeatable)"},                              \
	{AJ_OPT("mask", 0, AJ_OPT_FUNC), AJ_PF(mask), .metavar = "PATH",                            \
	 .parse = aj_pflags_push_path, .help = "hide a path inside the sandbox (repeatable)"},     \
	{AJ_OPT("volume", 0, AJ_OPT_FUNC), AJ_PF(volumes), .metavar = "SRC:PATH[:ro]",              \
	 .parse = aj_pflags_volume,                                                                 \
	 .help = "mount a volume (by name) or a host directory at PATH (repeatable)"}

#define AJ_PF_ENV_ROWS                                                                        \
	{AJ_OPT("env", 'e', AJ_OPT_FUNC), AJ_PF(env_allow), .metavar = "NAME",                      \
	 .parse = aj_pflags_env, .help = "pass a host environment variable in (repeatable)"},      \
	{AJ_OPT("setenv", 0, AJ_OPT_FUNC), AJ_PF(env_set), .metavar = "NAME=VALUE",                 \
	 .parse = aj_pflags_setenv, .help = "set a variable inside (repeatable)"},                  \
	{AJ_OPT("hostname", 0, AJ_OPT_STRDUP), AJ_PF(hostname), .metavar = "NAME",                  \
	 .help = "hostname inside"}

#define AJ_PF_NET_ROWS                                                                        \
	{AJ_OPT("network", 0, AJ_OPT_CHOICE), AJ_PF(net_mode), .metavar = "MODE",                   \
	 .choices = aj_pflags_networks,                                                             \
	 .help = "none (default: loopback only), proxy (egress rules) or host (shared, "           \
		 "uncontrolled)"},                                                                  \
	{AJ_OPT("allow-host", 0, AJ_OPT_FUNC), AJ_PF(net_allow), .metavar = "HOST[:PORT]",         \
	 .parse = aj_pflags_allow_host,                                                             \
	 .help = "allow egress to HOST (*.SUFFIX too) through the proxy; implies --network "      \
		 "proxy"}

#define AJ_PF_PORT_ROWS                                                                       \
	{AJ_OPT("publish", 'p', AJ_OPT_FUNC), AJ_PF(net_publish),                                  \
	 .metavar = "[HOSTIP:][HOSTPORT:]PORT", .parse = aj_pflags_publish,                         \
	 .help = "relay a host port (127.0.0.1 and an ephemeral port unless given) to PORT on "   \
		 "the sandbox's loopback (repeatable)"},                                            \
	{AJ_OPT("public-port", 0, AJ_OPT_FUNC), AJ_PF(net_public_ports), .metavar = "PORT",        \
	 .parse = aj_pflags_port,                                                                   \
	 .help = "the daemon's preview URL of PORT needs no token (repeatable)"},                   \
	{AJ_OPT("host-port", 0, AJ_OPT_FUNC), AJ_PF(net_host_ports), .metavar = "PORT",            \
	 .parse = aj_pflags_port,                                                                   \
	 .help = "relay the sandbox's 127.0.0.1:PORT to the host's 127.0.0.1:PORT (repeatable)"}

#define AJ_PF_LAYER_ROWS                                                                      \
	{AJ_OPT("allow-degraded", 0, AJ_OPT_LIST), AJ_PF(allow_degraded), .metavar = "LAYER",      \
	 .help = "accept running without LAYER (repeatable)"},                                      \
	{AJ_OPT("tier", 0, AJ_OPT_CHOICE), AJ_PF(tier), .metavar = "TIER",                          \
	 .choices = aj_pflags_tiers,                                                                \
	 .help = "namespaces (default), landlock (no namespaces, for hosts without user "          \
		 "namespaces) or gvisor (gVisor's runsc)"},                                         \
	{AJ_OPT("allow-syscalls", 0, AJ_OPT_LIST), AJ_PF(syscalls_allow), .metavar = "GROUP",      \
	 .help = "lift a relaxable seccomp group, e.g. ptrace"}
#define AJ_POLICY_FLAG_OPTIONS \
	AJ_PF_FILE_ROWS, AJ_PF_ROOT_ROWS, AJ_PF_LIMIT_ROWS, AJ_PF_TIMEOUT_ROW, AJ_PF_PATH_ROWS, \
		AJ_PF_ENV_ROWS, AJ_PF_NET_ROWS, AJ_PF_PORT_ROWS, AJ_PF_LAYER_ROWS

extern const struct aj_opt_choice aj_pflags_presets[], aj_pflags_output_actions[],
	aj_pflags_networks[], aj_pflags_tiers[];
int aj_pflags_push_path(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_volume(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_env(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_setenv(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_allow_host(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_publish(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_port(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_workspace(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);
int aj_pflags_user(void *pol, const struct aj_option *o, const char *v, struct aj_err *e);

#endif
