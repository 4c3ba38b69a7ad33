/* Whole-policy checks that no single field can make, and resolution of host paths to their
 * canonical form, so that what the plan mounts is exactly what was checked. */
#include "policy/policy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/util.h"
#include "policy/plan.h"
#include "rules/publish.h"
#include "storage/volumes.h"

/* Paths a sandbox may never be given write access to, nor use as its workspace: granting any
 * of them (or a parent of them) hands over the host's system or its kernel interfaces. The
 * shared top-level directories count too: all of /tmp or /home is many people's data and
 * sockets, not a project. */
static const char *const host_system_paths[] = {
	"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/root", "/run", "/sbin", "/sys", "/usr", "/var", "/tmp", "/var/tmp", "/home",
	"/mnt", "/media", "/srv", "/opt", "/var/lib",
};

/* Trees nothing inside of which may be made writable: the system, its configuration, its
 * runtime sockets (/run holds container runtimes' sockets: host root). */
static const char *const system_trees[] = {
	"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
	"/sbin", "/sys", "/usr", "/var/run", "/var/lock", "/var/spool",
};

/* Kernel interface trees: nothing below them may be bound into a sandbox. */
static const char *const kernel_trees[] = {"/proc", "/sys", "/dev"};

/* pids and the namespaces only ever need it in the landlock tier (see plan_tier.c); in the
 * namespaces tier naming them changes nothing. */
static const char *const degradable_layers[] = {
	"landlock", "landlock-net", "landlock-scope", "seccomp", "cgroup", "memory", "cpu",
	"pids", "disk", "uts-namespace", "mount-namespace", "network-namespace", "subids",
};

static bool is_system_path_or_parent(const char *path)
{
	for (size_t i = 0; i < sizeof host_system_paths / sizeof host_system_paths[0]; i++)
		if (aj_path_within(host_system_paths[i], path))
			return true;
	return false;
}

static bool in_system_tree(const char *path)
{
	for (size_t i = 0; i < sizeof system_trees / sizeof system_trees[0]; i++)
		if (aj_path_within(path, system_trees[i]))
			return true;
	return false;
}

bool aj_policy_path_may_be_writable(const char *path)
{
	return !is_system_path_or_parent(path) && !in_system_tree(path);
}

static bool in_kernel_tree(const char *path)
{
	for (size_t i = 0; i < sizeof kernel_trees / sizeof kernel_trees[0]; i++)
		if (aj_path_within(path, kernel_trees[i]))
			return true;
	return false;
}

/* Replaces *path with its canonical form. Missing paths are an error unless allow_missing.
 * exact: the path must already be canonical. A grant named through a symlink would follow
 * wherever the link points at launch, and links inside a workspace are the sandbox's to
 * plant between runs. */
static int canonicalize(const char *field, char **path, bool allow_missing, bool exact,
			struct aj_err *err)
{
	char *real = realpath(*path, NULL);

	if (!real) {
		if (errno == ENOENT && allow_missing)
			return 0;
		return aj_err_sys(err, AJ_LAYER_POLICY, "%s: cannot resolve \"%s\"", field, *path);
	}
	if (exact && strcmp(real, *path) != 0) {
		aj_err_set(err, AJ_LAYER_POLICY, 0,
			   "%s: \"%s\" resolves through a symlink to \"%s\"; name the real path",
			   field, *path, real);
		free(real);
		return -1;
	}
	free(*path);
	*path = real;
	return 0;
}

static int validate_workspace(struct aj_policy *p, struct aj_err *err)
{
	struct stat st;

	if (p->managed) {
		/* The workspace is agentjail's own layered directory, not a host path. */
		if (!p->workspace_mount)
			p->workspace_mount = aj_xstrdup(p->rootfs_image ? "/workspace" : p->home);
		if (strcmp(p->workspace_mount, "/") == 0 || in_kernel_tree(p->workspace_mount) ||
		    is_system_path_or_parent(p->workspace_mount))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "filesystem.mount: \"%s\" cannot hold the workspace",
					  p->workspace_mount);
		free(p->workspace);
		p->workspace = aj_xstrdup(p->workspace_mount);
		return 0;
	}

	if (!p->workspace) {
		p->workspace = getcwd(NULL, 0);
		if (!p->workspace)
			return aj_err_sys(err, AJ_LAYER_POLICY,
					  "filesystem.workspace: cannot determine the current directory");
	} else if (p->workspace[0] != '/') {
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "filesystem.workspace: expected an absolute path, got \"%s\"",
				  p->workspace);
	}
	if (canonicalize("filesystem.workspace", &p->workspace, false, false, err) < 0)
		return -1;
	if (stat(p->workspace, &st) < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "filesystem.workspace: \"%s\"", p->workspace);
	if (!S_ISDIR(st.st_mode))
		return aj_err_set(err, AJ_LAYER_POLICY, ENOTDIR, "filesystem.workspace: \"%s\"",
				  p->workspace);
	if (is_system_path_or_parent(p->workspace) || in_kernel_tree(p->workspace) ||
	    (p->workspace_mode == AJ_WS_RW && in_system_tree(p->workspace)))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "filesystem.workspace: \"%s\" is a system directory or contains "
				  "one; a workspace must be a project directory",
				  p->workspace);
	return 0;
}

static int validate_paths(const char *field, struct aj_strv *sv, bool writable,
			  bool allow_missing, struct aj_err *err)
{
	char name[64];

	for (size_t i = 0; i < sv->n; i++) {
		snprintf(name, sizeof name, "%s[%zu]", field, i);
		if (!aj_path_is_clean_abs(sv->v[i]))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: expected a clean absolute path, got \"%s\"", name,
					  sv->v[i]);
		if (canonicalize(name, &sv->v[i], allow_missing, true, err) < 0)
			return -1;
		if (!allow_missing && strcmp(sv->v[i], "/") == 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"/\" would expose the whole host", name);
		if (!allow_missing && in_kernel_tree(sv->v[i]))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is a kernel interface; it cannot be bound in",
					  name, sv->v[i]);
		if (writable && !aj_policy_path_may_be_writable(sv->v[i]))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is (or is inside, or contains) a host system "
					  "directory and cannot be made writable",
					  name, sv->v[i]);
	}
	return 0;
}

/* filesystem.volumes: targets that may hold a mount, host directories that pass the checks of
 * read_only and read_write grants (canonical, no system directory writable), no target twice. */
static int validate_volumes(struct aj_policy *p, struct aj_err *err)
{
	struct aj_volume_entry e, f;
	char why[200], name[64];

	for (size_t i = 0; i < p->volumes.n; i++) {
		snprintf(name, sizeof name, "filesystem.volumes[%zu]", i);
		if (aj_volume_entry_parse(p->volumes.v[i], &e, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\" %s", name,
					  p->volumes.v[i], why);
		if (!strcmp(e.target, "/") || in_kernel_tree(e.target) ||
		    is_system_path_or_parent(e.target) || in_system_tree(e.target))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is (or is inside, or contains) a system "
					  "directory; mount volumes elsewhere",
					  name, e.target);
		if (p->workspace && !strcmp(e.target, p->workspace))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "%s: \"%s\" is the workspace", name, e.target);
		for (size_t j = 0; j < i; j++)
			if (aj_volume_entry_parse(p->volumes.v[j], &f, why, sizeof why) == 0 &&
			    !strcmp(e.target, f.target))
				return aj_err_set(err, AJ_LAYER_POLICY, 0,
						  "%s: \"%s\" is the target of filesystem.volumes[%zu] "
						  "too",
						  name, e.target, j);
		if (e.host) {
			struct aj_strv one = AJ_STRV_INIT;
			int r;
			aj_strv_push(&one, e.source);
			r = validate_paths(name, &one, !e.ro, false, err);
			if (r == 0 && strcmp(one.v[0], e.source))
				r = aj_err_set(err, AJ_LAYER_POLICY, 0, "%s: \"%s\" resolves to \"%s\"",
					       name, e.source, one.v[0]);
			aj_strv_free(&one);
			if (r < 0)
				return -1;
		}
	}
	return 0;
}

static int validate_limits(const struct aj_limits *l, struct aj_err *err)
{
	if (l->memory && l->memory < (8ULL << 20))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.memory: at least 8MiB is needed to start a process");
	if (l->pids && l->pids < 4)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.pids: at least 4 (the sandbox's init, the command and a "
				  "child or two)");
	if (l->cpu_milli && (l->cpu_milli < 10 || l->cpu_milli > 1024 * 1000))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.cpus: expected between 0.01 and 1024");
	if (l->open_files < 16 || l->open_files > (1u << 20))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.open_files: expected between 16 and 1048576");
	if (l->disk && l->disk != AJ_DISK_DEFAULT && l->disk < AJ_DISK_MIN)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.disk: at least 16MiB (below it the filesystem's own "
				  "reservations decide)");
	if (l->tmpfs_size < (1ULL << 20))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "limits.tmpfs_size: at least 1MiB (it sizes /tmp and the home)");
	return 0;
}

static int validate_degraded(const struct aj_strv *sv, struct aj_err *err)
{
	char list[256] = "";

	for (size_t j = 0; j < sizeof degradable_layers / sizeof degradable_layers[0]; j++) {
		strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
		strncat(list, degradable_layers[j], sizeof list - strlen(list) - 1);
	}
	for (size_t i = 0; i < sv->n; i++) {
		bool ok = false;
		for (size_t j = 0; j < sizeof degradable_layers / sizeof degradable_layers[0]; j++)
			ok = ok || strcmp(sv->v[i], degradable_layers[j]) == 0;
		if (!ok)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "allow_degraded[%zu]: \"%s\" is not a layer that may be "
					  "degraded (expected one of: %s)",
					  i, sv->v[i], list);
	}
	return 0;
}

/* Rules and credentials only mean something when the proxy runs: a policy that lists them
 * with another mode is almost certainly a mistake that would silently allow nothing (none)
 * or everything (host). */
static int validate_network(const struct aj_policy *p, struct aj_err *err)
{
	const char *field = p->net_allow.n	    ? "network.allow"
			    : p->net_deny.n	    ? "network.deny"
			    : p->net_allow_private.n ? "network.allow_private"
			    : p->n_creds	    ? "credentials"
						    : NULL;

	if (p->net_mode == AJ_NET_PROXY || !field)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: takes effect only with network.mode \"proxy\" (the mode is \"%s\")",
			  field, p->net_mode == AJ_NET_HOST ? "host" : "none"),
	       aj_err_hint(err, "set network.mode to \"proxy\" (--allow-host implies it)");
}

/* Published ports are relayed into the sandbox's own network namespace: without one (the
 * host's network, or the landlock tier) its servers are on the host already, where a port
 * is reachable or refused by other means (network.listen). A host port is published once. */
static int validate_publish(const struct aj_policy *p, struct aj_err *err)
{
	struct aj_publish a, b;
	char why[160];

	if (p->net_host_ports.n && (p->net_mode == AJ_NET_HOST || p->tier == AJ_TIER_LANDLOCK))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "network.host_ports: %s",
				  p->net_mode == AJ_NET_HOST
					  ? "the sandbox shares the host's network already "
					    "(network.mode \"host\")"
					  : "the landlock tier has no network namespace of its own to "
					    "relay into");
	for (size_t i = 0; i < p->net_host_ports.n; i++)
		if (p->net_mode == AJ_NET_PROXY && p->net_host_ports.v[i] == AJ_EGRESS_PORT)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "network.host_ports: port %u inside is the egress proxy's",
					  (unsigned)AJ_EGRESS_PORT);
	if (!p->net_publish.n)
		return 0;
	if (p->net_mode == AJ_NET_HOST)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "network.publish: the sandbox shares the host's network "
				  "(network.mode \"host\"); its servers listen on the host already"),
		       aj_err_hint(err, "use network.mode \"none\" or \"proxy\" to publish ports");
	if (p->tier == AJ_TIER_LANDLOCK)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "network.publish: the landlock tier has no network namespace of "
				  "its own to publish from"),
		       aj_err_hint(err, "in the landlock tier, network.listen names the host ports "
					"a server inside may bind");
	if (p->net_publish.n > AJ_PUBLISH_MAX)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "network.publish: %zu ports; a sandbox publishes at most %d",
				  p->net_publish.n, AJ_PUBLISH_MAX);
	for (size_t i = 0; i < p->net_publish.n; i++) {
		if (aj_publish_parse(p->net_publish.v[i], &a, why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "network.publish[%zu]: %s", i,
					  why);
		for (size_t k = 0; k < p->net_host_ports.n; k++)
			if (a.port == p->net_host_ports.v[k])
				return aj_err_set(err, AJ_LAYER_POLICY, 0,
						  "network.publish[%zu]: port %u inside is a host "
						  "service's (network.host_ports)",
						  i, (unsigned)a.port);
		/* That port inside is the supervisor's egress proxy, with the credentials it adds:
		 * not the sandbox's to serve. */
		if (p->net_mode == AJ_NET_PROXY && a.port == AJ_EGRESS_PORT)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "network.publish[%zu]: port %u inside is the egress proxy's",
					  i, (unsigned)AJ_EGRESS_PORT);
		for (size_t j = 0; j < i && a.host_port; j++)
			if (aj_publish_parse(p->net_publish.v[j], &b, why, sizeof why) == 0 &&
			    b.host_port == a.host_port && !strcmp(a.host_ip, b.host_ip))
				return aj_err_set(err, AJ_LAYER_POLICY, 0,
						  "network.publish[%zu]: host port %s:%u is "
						  "published twice (also network.publish[%zu])",
						  i, a.host_ip, (unsigned)a.host_port, j);
	}
	return 0;
}

int aj_policy_validate(struct aj_policy *p, struct aj_err *err)
{
	/* The default disk limit is a persistent sandbox's, which the manager sets at create. */
	if (!p->managed && p->limits.disk == AJ_DISK_DEFAULT)
		p->limits.disk = 0;
	if (validate_workspace(p, err) < 0 ||
	    validate_paths("filesystem.read_only", &p->read_only, false, false, err) < 0 ||
	    validate_paths("filesystem.read_write", &p->read_write, true, false, err) < 0 ||
	    validate_paths("filesystem.mask", &p->mask, false, true, err) < 0 ||
	    validate_volumes(p, err) < 0 ||
	    validate_limits(&p->limits, err) < 0 || validate_degraded(&p->allow_degraded, err) < 0 ||
	    validate_network(p, err) < 0 || validate_publish(p, err) < 0)
		return -1;
	if (!aj_policy_hostname_ok(p->hostname))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "hostname: expected 1-64 characters from [A-Za-z0-9.-], got \"%s\"",
				  p->hostname);
	if (p->cwd && !aj_path_is_clean_abs(p->cwd))
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "cwd (--cwd): expected a clean absolute path, got \"%s\"", p->cwd);
	if (!aj_path_is_clean_abs(p->home) || strcmp(p->home, "/") == 0)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "user.home: expected an absolute directory other than \"/\"");
	for (size_t i = 0; i < p->env_set.n; i++)
		if (!strchr(p->env_set.v[i], '='))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "environment.set: \"%s\" is not NAME=value",
					  p->env_set.v[i]);
	if (p->volumes.n && p->tier == AJ_TIER_LANDLOCK)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "filesystem.volumes are mounts, which the landlock tier (no mount "
				  "namespace) cannot make"),
		       aj_err_hint(err, "use the namespaces tier (the default)");
	if (p->rootfs_image && p->tier == AJ_TIER_LANDLOCK)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "rootfs.image needs a root of its own, which the landlock tier "
				  "(no namespaces, the host's root) cannot give"),
		       aj_err_hint(err, "use the namespaces tier (the default) for image sandboxes");
	return 0;
}
