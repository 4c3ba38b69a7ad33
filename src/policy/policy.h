/* The policy: the one permission profile of a sandbox (docs/policy.md documents every field).
 *
 * Life cycle: aj_policy_init() sets the built-in defaults; aj_policy_apply_preset() and
 * aj_policy_apply_json() layer a preset and a policy file on top; the CLI applies its flags;
 * aj_policy_validate() checks the result as a whole and resolves the workspace. A validated
 * policy is turned into a plan (src/policy/plan.h). The policy owns all its strings;
 * aj_policy_free() releases them.
 */
#ifndef AJ_POLICY_POLICY_H
#define AJ_POLICY_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"

enum aj_ws_mode { AJ_WS_RW = 0, AJ_WS_RO };
/* none: loopback only. host: the host's network, shared and uncontrolled (an explicit opt-out
 * of network isolation, shown as such in every report). proxy: loopback only, plus the
 * supervisor's egress proxy reachable on a loopback port (src/egress/). */
enum aj_net_mode { AJ_NET_NONE = 0, AJ_NET_HOST, AJ_NET_PROXY };
enum aj_output_action { AJ_OUTPUT_TRUNCATE = 0, AJ_OUTPUT_KILL };
/* How the boundary is built. namespaces: the full sandbox (user, mount, pid, ipc, uts, net and
 * cgroup namespaces under Landlock and seccomp). landlock: no namespace at all, for hosts that
 * refuse unprivileged user namespaces; Landlock, seccomp, rlimits and the supervisor hold what
 * they can, and the plan says layer by layer what is lost (docs/threat-model.md). gvisor: the
 * namespaces tier's root, network namespace and cgroup around gVisor's runsc, whose Sentry (a
 * kernel in user space) serves the sandbox's system calls (docs/gvisor.md). */
enum aj_tier { AJ_TIER_NAMESPACES = 0, AJ_TIER_LANDLOCK, AJ_TIER_GVISOR };
/* network.preview: who may open the sandbox's ports through the daemon's preview URLs. */
enum aj_preview_access { AJ_PREVIEW_TOKEN = 0, AJ_PREVIEW_PUBLIC };

/* 0 means "no limit" for every field but open_files and tmpfs_size, which always have one. */
#define AJ_DISK_MIN (16ULL << 20) /* the smallest limits.disk: below it a filesystem's own
				    * reservations decide */
/* limits.disk "default" (the policy default): AJ_DISK_PERSISTENT for a persistent sandbox where
 * the state directory can enforce it (the manager decides at create), none otherwise and for
 * one-shot runs (aj_policy_validate). Never reaches a plan. */
#define AJ_DISK_DEFAULT UINT64_MAX
#define AJ_DISK_PERSISTENT (10ULL << 30)
struct aj_limits {
	uint64_t memory;       /* bytes */
	uint64_t pids;         /* tasks (processes and threads) */
	uint64_t cpu_milli;    /* thousandths of a CPU */
	uint64_t timeout_ms;   /* wall clock */
	uint64_t file_size;    /* bytes, largest file the sandbox may write */
	uint64_t open_files;   /* descriptors per process */
	uint64_t output_bytes; /* stdout + stderr together */
	uint64_t tmpfs_size;   /* bytes, each writable tmpfs (/tmp, home, /dev/shm) */
	uint64_t disk;         /* bytes the sandbox may write to disk (storage/quota.h) */
	enum aj_output_action output_action;
};

/* A secret the egress proxy adds to requests for the hosts it is bound to; the sandbox only
 * ever holds a placeholder for it (docs/policy.md, "credentials"). */
struct aj_credential {
	char *name;           /* the variable inside the sandbox that holds the placeholder */
	char *from_env;       /* host environment variable holding the secret, or NULL */
	char *from_file;      /* host file holding the secret, or NULL */
	char *from_secret;    /* a secret of the store (src/state/secrets.h), or NULL */
	struct aj_strv hosts; /* egress rules (src/rules/egress.h); no port means 443 */
	char *header;         /* added when a request lacks it; NULL: placeholders only */
	char *format;         /* the header's value, "{}" standing for the secret */
	bool replace;         /* the header replaces one the request has (E2B's transforms) */
};

/* TCP ports, each 1-65535, in the order given, without repeats. */
#define AJ_PORTS_MAX 64
struct aj_ports {
	size_t n;
	uint16_t v[AJ_PORTS_MAX];
};

struct aj_policy {
	char *preset;
	/* filesystem */
	char *workspace; /* host directory, as given; absolute and canonical after validate */
	char *workspace_mount; /* where a managed (layered) workspace appears; NULL: the home */
	bool managed;          /* not from JSON: a persistent sandbox's layered workspace, no
				* host workspace directory */
	enum aj_ws_mode workspace_mode;
	bool protect_git;
	struct aj_strv read_only;
	struct aj_strv read_write;
	struct aj_strv mask;
	struct aj_strv volumes; /* "SOURCE:TARGET[:ro]", SOURCE a volume's name or a host
				 * directory (aj_volume_entry_parse) */
	/* process */
	char *cwd; /* NULL: the workspace */
	uint64_t uid, gid;
	char *user_name;
	char *home;
	char *shell;
	char *hostname;
	/* environment */
	struct aj_strv env_allow; /* names, or prefixes ending in '*' */
	struct aj_strv env_set;   /* "NAME=value" */
	/* network */
	enum aj_net_mode net_mode;
	struct aj_strv net_allow;         /* egress rules, "host-pattern[:port]" */
	struct aj_strv net_deny;          /* egress rules that win over allow */
	struct aj_strv net_allow_private; /* CIDRs the proxy may connect to despite the guard */
	uint64_t net_max_connections;     /* concurrent proxy connections; 0: no limit */
	uint64_t net_max_bytes;           /* bytes through the proxy, both ways; 0: no limit */
	struct aj_ports net_listen;       /* landlock tier: ports that may be bound on the host's
					   * network (the namespaces tier binds any port on the
					   * sandbox's own loopback) */
	struct aj_strv net_publish;       /* "[HOSTIP:][HOSTPORT:]PORT" (rules/publish.h): host
					   * ports the supervisor relays to ports inside */
	struct aj_ports net_public_ports; /* ports the daemon's preview URLs serve to anyone */
	enum aj_preview_access net_preview; /* public: every port's preview URL serves anyone */
	struct aj_ports net_host_ports;   /* the host's 127.0.0.1:PORT, relayed from the same port
					   * on the sandbox's loopback */
	struct aj_credential *creds;
	size_t n_creds;
	struct aj_limits limits;
	struct aj_strv syscalls_allow;  /* relaxable groups of the default seccomp profile */
	struct aj_strv allow_degraded;  /* layers the caller accepts as missing */
	/* rootfs and process (docs/policy.md): the image the root is made of (NULL: the host's
	 * system directories), and whom the command runs as ("root", a name of the image's, or
	 * UID[:GID]; NULL: user.uid, or in an image sandbox the image's User, else root). */
	char *rootfs_image;
	char *process_user;
	enum aj_tier tier;
};

/* Defaults that callers also hold policies to (a token owner of the API cannot go above them). */
#define AJ_DEFAULT_PIDS 4096
#define AJ_DEFAULT_MAX_CONNECTIONS 1024

void aj_policy_init(struct aj_policy *p);
void aj_policy_free(struct aj_policy *p);
#define _cleanup_policy_ __attribute__((cleanup(aj_policy_free)))

/* Known presets: "workspace-write" (the default) and "read-only". */
int aj_policy_apply_preset(struct aj_policy *p, const char *name, struct aj_err *err);
const char *const *aj_policy_preset_names(void);

/* Applies the fields present in a policy JSON object on top of p. Unknown fields and values
 * of the wrong type are errors naming the field path ("limits.memory"). The "preset" field is
 * not applied here: callers read it with aj_policy_json_preset() and apply it first. */
int aj_policy_apply_json(struct aj_policy *p, json_t *root, struct aj_err *err);
/* The preset named by a policy document, NULL if none; error if not a string. */
int aj_policy_json_preset(json_t *root, const char **out, struct aj_err *err);
/* Reads a policy file: defaults, then its preset (or `preset_override` if non-NULL), then
 * its fields. file may be NULL (defaults + preset only). */
int aj_policy_load(struct aj_policy *p, const char *file, const char *preset_override,
		   struct aj_err *err);

/* A policy document held as text (a persistent sandbox's stored policy): defaults, then its
 * preset, then its fields. Not validated. */
int aj_policy_load_text(struct aj_policy *p, const char *text, struct aj_err *err);
/* A stored policy's rootfs.image (new string), NULL when it has none or is not JSON. */
char *aj_policy_text_image(const char *text);

/* Checks the merged policy as a whole and makes the workspace absolute and canonical. */
int aj_policy_validate(struct aj_policy *p, struct aj_err *err);

/* False for a host path no sandbox may write: a host system directory, a parent of one, or
 * anything inside the system trees (the check every filesystem.read_write entry gets). */
bool aj_policy_path_may_be_writable(const char *path);


/* The effective policy as a JSON document in the policy file format (new reference). */
json_t *aj_policy_to_json(const struct aj_policy *p);

/* Value parsers shared by the JSON fields and the CLI flags, so both accept the same syntax.
 * `what` names the field or flag in the error. */
int aj_policy_parse_size(const char *what, const char *s, uint64_t *out, struct aj_err *err);
int aj_policy_parse_duration(const char *what, const char *s, uint64_t *out, struct aj_err *err);
int aj_policy_parse_cpus(const char *what, const char *s, uint64_t *out, struct aj_err *err);
int aj_policy_parse_count(const char *what, const char *s, uint64_t *out, struct aj_err *err);
bool aj_policy_env_name_ok(const char *name);
bool aj_policy_hostname_ok(const char *name);

/* credentials.c: the "credentials" object (NAME -> credential), parsed at `path`. */
int aj_policy_creds_apply_json(struct aj_policy *p, const char *path, json_t *v,
			       struct aj_err *err);
json_t *aj_policy_creds_to_json(const struct aj_policy *p);
void aj_policy_creds_free(struct aj_policy *p);
/* Whether a credential comes from the secret store: only then does a launch need the store's
 * directory (whose name is a digest of the owner, and the digest starts OpenSSL up). */
bool aj_policy_uses_secret_store(const struct aj_policy *p);

#endif
