/* The landlock tier's plan (docs/threat-model.md, "The landlock tier"): the same policy on a
 * host that refuses unprivileged user namespaces, held without any namespace at all.
 *
 * Grants become Landlock rules on the host paths themselves instead of mounts, so a grant
 * names the same path with the same rights in both tiers. What Landlock cannot express is
 * refused, or marked degraded where the policy accepts it: its rights only add up down a
 * tree, so nothing below a grant can be taken away again (a mask, a read-only path or .git's
 * hooks inside a writable tree). Every namespace layer is "absent", and its detail says what
 * holds that boundary instead and what is lost. The tier's table of operations
 * (aj_plan_landlock_tier, plan_internal.h) is at the end. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "rules/landlock.h"
#include "rules/seccomp.h"

#define ADD aj_plan_add_op

static const struct aj_tier_row rows[] = {
	{AJ_PL_USERNS, "the sandbox user is mapped to an unprivileged host uid",
	 "absent: runs as the caller's uid and groups; the caller's other processes are guarded "
	 "by Landlock (signals, ptrace, /proc/PID/mem), not by a uid boundary"},
	{AJ_PL_MOUNTNS, "a private tmpfs root: only what is mounted in exists",
	 "absent: the host's filesystem, reachable only through Landlock rules on the same "
	 "paths; masks and read-only paths inside a granted tree cannot be carved out (refused); "
	 "chmod, chown and utimes of the caller's own files are not covered"},
	{AJ_PL_ROOTFS, "generated /etc, private /tmp, home, /dev/shm and devpts, fresh /proc",
	 "the host's /etc entries and /proc read-only; /tmp and HOME in a per-run scratch "
	 "directory; no /dev/shm, no pseudo-terminals; /proc masks not applied"},
	{AJ_PL_PIDNS, "host processes invisible; every sandbox process dies with its init",
	 "absent: host processes visible (command lines, not environments or memory); the tree "
	 "is killed by the supervisor through a cgroup, or a subreaper and a /proc walk"},
	{AJ_PL_IPCNS, "private System V IPC and POSIX message queues",
	 "absent: seccomp refuses System V IPC and POSIX message queues (host-ipc group)"},
	{AJ_PL_UTSNS, "its own hostname",
	 "absent: the host's hostname; a hostname in the policy is refused"},
	{AJ_PL_NETNS, "loopback only: no route to the host or the internet",
	 "absent: the host's network; Landlock refuses TCP connect and bind, seccomp refuses "
	 "UDP and other protocols, listen(), TCP Fast Open and unix sockets (Landlock up to ABI 7 "
	 "does not check connect() to socket files)"},
	{AJ_PL_CGROUPNS, "its own cgroup as the root", "absent: /sys is not granted"},
	{AJ_PL_CAPS, "all dropped, bounding set emptied, securebits locked",
	 "none held (refused as root); the bounding set stays the caller's, no_new_privs keeps "
	 "file capabilities from using it"},
	{AJ_PL_LANDLOCK_NET, "not used: the network namespace is the boundary",
	 "the TCP boundary itself (ABI 4 needed)"},
	{AJ_PL_LANDLOCK_SCOPE, "a second lock behind the pid and network namespaces",
	 "the boundary for signals and abstract unix sockets (ABI 6 needed)"},
	{AJ_PL_MEMORY, "cgroup", "cgroup if usable; else refused, or RLIMIT_AS per process "
				 "with --allow-degraded memory (weaker)"},
	{AJ_PL_PIDS, "cgroup, or RLIMIT_NPROC counted in the sandbox's user namespace",
	 "cgroup if usable; else refused, or RLIMIT_NPROC counted over all of the caller's "
	 "processes with --allow-degraded pids"},
};

const struct aj_tier_row *aj_plan_tier_rows(size_t *n)
{
	*n = AJ_ARRAY_SIZE(rows);
	return rows;
}

const char *aj_plan_tier_name(int tier)
{
	return aj_plan_tier_of(tier)->name;
}

bool aj_plan_tier_usable(const struct aj_features *f, int tier, char *detail, size_t len)
{
	return aj_plan_tier_of(tier)->usable(f, detail, len);
}

static bool usable(const struct aj_features *f, char *detail, size_t len)
{
	int abi = f->landlock_abi;

	if (f->uid == 0)
		snprintf(detail, len, "not as root: the sandbox would be host root");
	else if (abi < 1)
		snprintf(detail, len, "no Landlock: %s", f->landlock_why);
	else if (!f->seccomp)
		snprintf(detail, len, "no seccomp: %s", f->seccomp_why);
	else if (abi < 6)
		snprintf(detail, len, "Landlock ABI %d: only with --allow-degraded %s", abi,
			 abi < 4 ? "landlock-net --allow-degraded landlock-scope" : "landlock-scope");
	else
		snprintf(detail, len, "Landlock ABI %d: filesystem, TCP, signal and abstract socket "
				      "scoping",
			 abi);
	return f->uid != 0 && abi >= 6 && f->seccomp;
}

/* ---- identity and namespaces ----------------------------------------------------------- */

static int identity(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_features *f = p->features;

	/* Without a user namespace nothing maps root away: the sandbox would be host root,
	 * whose files Landlock guards but whose uid owns the system. Root has namespaces. */
	if (f->uid == 0)
		return aj_err_set(err, AJ_LAYER_USERNS, 0,
				  "the landlock tier runs the sandbox as the caller's uid, and the "
				  "caller is root: the sandbox would be host root"),
		       aj_err_hint(err, "run agentjail as an unprivileged user for this tier, or use "
					"the namespaces tier, which root can always use");
	p->privileged = false;
	p->uid = p->id_base = (uint32_t)f->uid;
	p->gid = p->host_gid_base = (uint32_t)f->gid;
	p->id_count = 1;
	aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ABSENT,
			  "no user namespace: the sandbox runs as the caller's uid %u and gid %u "
			  "(and groups), unmapped; the caller's other processes are guarded by "
			  "Landlock, not by a uid boundary",
			  p->uid, p->gid);
	return 0;
}

static int hostname_layer(struct aj_plan *p, struct aj_err *err)
{
	char probe[160];

	/* The default name is not a request: only a policy that names a hostname needs one. */
	if (strcmp(p->policy->hostname, "agentjail") == 0) {
		aj_plan_set_layer(p, AJ_PL_UTSNS, AJ_LS_ABSENT,
				  "no UTS namespace: the host's hostname is visible");
		return 0;
	}
	snprintf(probe, sizeof probe,
		 "hostname \"%s\" needs a UTS namespace, which the landlock tier does not have",
		 p->policy->hostname);
	return aj_plan_need(p, AJ_PL_UTSNS, "uts-namespace", NULL, AJ_LAYER_NS, probe,
			    "drop the hostname from the policy, or use the namespaces tier", err);
}

static int namespace_layers(struct aj_plan *p, struct aj_err *err)
{
	aj_plan_set_layer(p, AJ_PL_MOUNTNS, AJ_LS_ABSENT,
			  "no mount namespace: the host's filesystem as it is; what may be opened "
			  "is limited by the Landlock rules listed as the root filesystem");
	aj_plan_set_layer(p, AJ_PL_PIDNS, AJ_LS_ABSENT,
			  "no pid namespace: host processes are visible in /proc (command lines, "
			  "not environments or memory); signals to them are refused by Landlock "
			  "scoping; the supervisor kills the sandbox's whole tree at the end");
	aj_plan_set_layer(p, AJ_PL_IPCNS, AJ_LS_ABSENT,
			  "no IPC namespace: System V IPC and POSIX message queues are refused by "
			  "seccomp (group host-ipc)");
	if (p->policy->net_mode == AJ_NET_HOST)
		aj_plan_set_layer(p, AJ_PL_NETNS, AJ_LS_OFF,
				  "HOST NETWORK SHARED by policy (network.mode=host): no egress "
				  "control, host services on loopback are reachable");
	else
		aj_plan_set_layer(p, AJ_PL_NETNS, AJ_LS_ABSENT,
				  "no network namespace: the host's network stack; Landlock refuses "
				  "TCP connect and bind, seccomp refuses every other protocol, "
				  "listen(), TCP Fast Open and unix sockets");
	aj_plan_set_layer(p, AJ_PL_CGROUPNS, AJ_LS_ABSENT,
			  "no cgroup namespace: /sys is not granted, so no cgroup is visible");
	return hostname_layer(p, err);
}

/* ---- filesystem: Landlock rules on host paths -------------------------------------------- */

/* A rule on a host path that exists; missing ones are skipped, as the mounts skip them. */
static void allow(struct aj_plan *p, const char *path, uint64_t rights, const char *why)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		ADD(p, AJ_OP_ALLOW, path, NULL, 0, rights, why);
}

/* The same host paths the namespaces tier binds in (data/rootfs.rules), with the same
 * rights, plus the /etc files that tier generates: here they are the host's. */
static void system_paths(struct aj_plan *p)
{
	static const char *const etc_files[] = {"/etc/passwd", "/etc/group", "/etc/hosts",
						"/etc/hostname", "/etc/nsswitch.conf",
						"/etc/resolv.conf"};
	char path[600];

	aj_plan_load_rules(p);
	for (char *line = p->rootfs_text; *line; line += strlen(line) + 1) {
		char *sp = strchr(line, ' '), *dash = strstr(line, " -- ");
		if (!sp || !dash || dash < sp)
			continue;
		if (strncmp(line, "system ", 7) == 0) {
			snprintf(path, sizeof path, "%.*s", (int)(dash - sp - 1), sp + 1);
			allow(p, path, AJ_LL_RX, dash + 4);
		} else if (strncmp(line, "etc ", 4) == 0) {
			snprintf(path, sizeof path, "/etc/%.*s", (int)(dash - sp - 1), sp + 1);
			allow(p, path, AJ_LL_RO, dash + 4);
		}
	}
	for (size_t i = 0; i < AJ_ARRAY_SIZE(etc_files); i++)
		allow(p, etc_files[i], AJ_LL_RO,
		      "the host's, read-only (the namespaces tier generates its own)");
}

static void devices_and_proc(struct aj_plan *p)
{
	static const char *const nodes[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
					    "/dev/urandom"};

	for (size_t i = 0; i < AJ_ARRAY_SIZE(nodes); i++)
		allow(p, nodes[i], AJ_LL_DEV, "harmless device");
	/* Not /dev/pts: the host's devpts holds the caller's other terminals. */
	allow(p, "/dev/tty", AJ_LL_TTY, "the controlling terminal (the sandbox has none)");
	allow(p, "/proc", AJ_LL_RO,
	      "the host's procfs, read-only: its own entries, and host processes' command "
	      "lines (no pid namespace); their memory and environment stay out (Landlock)");
}

/* HOME and TMPDIR: the namespaces tier's private tmpfs areas become one directory made for
 * this run (by the launcher) and removed after it. */
static void scratch(struct aj_plan *p)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !aj_path_is_clean_abs(tmp) || strcmp(tmp, "/") == 0)
		tmp = "/tmp";
	p->scratch = aj_xasprintf("%s/agentjail-%s", tmp, p->id);
	ADD(p, AJ_OP_ALLOW, p->scratch, NULL, 0, AJ_LL_RW,
	    "HOME and TMPDIR of this run, removed after it (private /tmp and home in the "
	    "namespaces tier)");
}

static void user_grants(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;
	bool ro = pol->workspace_mode == AJ_WS_RO;

	ADD(p, AJ_OP_ALLOW, pol->workspace, NULL, 0, ro ? AJ_LL_RX : AJ_LL_RW,
	    ro ? "the workspace, read-only" : "the workspace");
	for (size_t i = 0; i < pol->read_only.n; i++)
		ADD(p, AJ_OP_ALLOW, pol->read_only.v[i], NULL, 0, AJ_LL_RX,
		    "granted read-only by the policy");
	for (size_t i = 0; i < pol->read_write.n; i++)
		ADD(p, AJ_OP_ALLOW, pol->read_write.v[i], NULL, 0, AJ_LL_RW,
		    "granted read-write by the policy");
}

static bool writable(uint64_t rights)
{
	return (rights & AJ_LL_RW) == AJ_LL_RW;
}

/* A read-only grant inside a writable one stays writable: Landlock adds the rights of every
 * rule above a path. The namespaces tier mounts it read-only on top. */
static int readonly_grant(struct aj_plan *p, const struct aj_op *ro, struct aj_err *err)
{
	char probe[sizeof p->layers[0].detail];

	for (size_t j = 0; j < p->n_ops; j++) {
		const struct aj_op *w = &p->ops[j];
		if (w->kind != AJ_OP_ALLOW || !writable(w->landlock) || !aj_path_within(ro->dst, w->dst))
			continue;
		snprintf(probe, sizeof probe,
			 "\"%s\" is granted read-only inside the writable \"%s\", where Landlock "
			 "cannot take write access away (no mount namespace)",
			 ro->dst, w->dst);
		return aj_plan_need(p, AJ_PL_MOUNTNS, "mount-namespace", NULL, AJ_LAYER_LANDLOCK,
				    probe,
				    "grant it outside the writable tree or drop the read-only grant, "
				    "or use the namespaces tier",
				    err);
	}
	return 0;
}

static int readonly_inside_writable(struct aj_plan *p, struct aj_err *err)
{
	for (size_t i = 0; i < p->n_ops; i++)
		if (p->ops[i].kind == AJ_OP_ALLOW && !writable(p->ops[i].landlock) &&
		    readonly_grant(p, &p->ops[i], err) < 0)
			return -1;
	return 0;
}

/* .git's hooks and config run code on the host; the namespaces tier binds them read-only
 * inside the writable workspace, which Landlock cannot do. */
static int git_protection(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	char git[4200];
	struct stat st;

	snprintf(git, sizeof git, "%s/.git", pol->workspace);
	if (!pol->protect_git || pol->workspace_mode == AJ_WS_RO || lstat(git, &st) < 0)
		return 0;
	return aj_plan_need(p, AJ_PL_MOUNTNS, "mount-namespace", NULL, AJ_LAYER_LANDLOCK,
			    "the workspace is a git repository: .git/hooks and .git/config, which "
			    "run code on the host, cannot be kept read-only inside the writable "
			    "workspace without a mount namespace",
			    "set filesystem.protect_git to false, make the workspace read-only "
			    "(--preset read-only), or use the namespaces tier",
			    err);
}

/* A mask is a path with no rule, which Landlock denies. It cannot lie inside a granted tree,
 * nor contain one: the grant's rule would reach it, or part of it. Not degradable: a mask
 * hides a secret, and the sandbox would read it. */
static int masks(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_strv *m = &p->policy->mask;

	for (size_t i = 0; i < m->n; i++) {
		for (size_t j = 0; j < p->n_ops; j++) {
			const struct aj_op *g = &p->ops[j];
			bool below = aj_path_within(m->v[i], g->dst);
			if (g->kind != AJ_OP_ALLOW || (!below && !aj_path_within(g->dst, m->v[i])))
				continue;
			aj_err_set(err, AJ_LAYER_POLICY, 0,
				   "filesystem.mask[%zu]: \"%s\" %s the granted \"%s\"; Landlock "
				   "cannot take access away below a grant, so in the landlock tier "
				   "the masked path would stay reachable",
				   i, m->v[i], below ? "lies inside" : "contains", g->dst);
			return aj_err_hint(err, "move what the mask hides out of granted trees, "
						"drop the mask, or use the namespaces tier");
		}
		ADD(p, AJ_OP_DENY, m->v[i], NULL, 0, 0,
		    "masked by the policy: outside every granted tree, so Landlock denies it");
	}
	return 0;
}

static int filesystem(struct aj_plan *p, struct aj_err *err)
{
	system_paths(p);
	devices_and_proc(p);
	scratch(p);
	user_grants(p);
	if (readonly_inside_writable(p, err) < 0 || git_protection(p, err) < 0 ||
	    masks(p, err) < 0)
		return -1;
	aj_plan_set_layer(p, AJ_PL_ROOTFS, AJ_LS_ABSENT,
			  "no private root: %zu Landlock rules on host paths; workspace %s; /tmp "
			  "and HOME in %s; no /dev/shm or pseudo-terminals; the host's /proc "
			  "without the default masks",
			  p->n_ops, p->policy->workspace_mode == AJ_WS_RO ? "read-only" : "writable",
			  p->scratch);
	return 0;
}

static int setup(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	p->egress.bundle_op = p->egress.ca_op = SIZE_MAX;
	if ((ws && (ws->persistent || ws->lowers)) || p->policy->managed)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "tier \"landlock\": persistent sandboxes and --overlay are built "
				  "with mounts; this tier runs one-shot commands on a host directory"),
		       aj_err_hint(err, "use the namespaces tier for them");
	return namespace_layers(p, err) < 0 ? -1 : filesystem(p, err);
}

/* ---- process --------------------------------------------------------------------------- */

static int process(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	_cleanup_free_ char *home = NULL, *tmp = NULL;
	bool home_in_ws = aj_path_within(pol->home, pol->workspace);

	home = aj_xasprintf("%s/home", p->scratch);
	tmp = aj_xasprintf("%s/tmp", p->scratch);
	aj_strv_setenv(&p->env, "HOME", home_in_ws ? pol->home : home);
	aj_strv_setenv(&p->env, "TMPDIR", tmp);
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED,
			  "host environment dropped; %zu variables set from the allowlist and "
			  "policy; HOME%s and TMPDIR in the run's scratch directory",
			  p->env.n, home_in_ws ? " in the workspace," : "");
	aj_plan_set_layer(p, AJ_PL_CAPS, AJ_LS_ENFORCED,
			  "none held (this tier refuses root); ambient and permitted sets cleared; "
			  "the bounding set stays the caller's (dropping it needs CAP_SETPCAP), "
			  "no_new_privs keeps file capabilities from using it");
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED,
			  "new session without a controlling terminal (no TIOCSTI into the "
			  "caller's terminal); caller's descriptors other than stdio closed; "
			  "agentjail's own command line hidden from the sandbox");
	return 0;
}

/* ---- Landlock ---------------------------------------------------------------------------- */

/* The proxy listens on the host's loopback (there is no namespace to put it in), and a port
 * rule lets the sandbox reach that port on every address. */
static int proxy_port(struct aj_plan *p, struct aj_err *err)
{
	char probe[sizeof p->layers[0].detail];

	if (p->policy->n_creds)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "credentials: the egress CA they need is installed in the "
				  "sandbox's private /etc, which the landlock tier does not have"),
		       aj_err_hint(err, "drop the credentials, or use the namespaces tier");
	snprintf(probe, sizeof probe,
		 "the proxy listens on the host's loopback port %u, and Landlock rules name "
		 "ports, not addresses: port %u of every host is reachable directly",
		 p->egress.port, p->egress.port);
	if (aj_plan_need(p, AJ_PL_NETNS, "network-namespace", NULL, AJ_LAYER_NET, probe,
			 "use the namespaces tier for egress rules, or network.mode none", err) < 0)
		return -1;
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_ENFORCED,
			  "TCP bind denied; connect denied but to port %u (the egress proxy), on "
			  "any address",
			  p->egress.port);
	return 0;
}

/* "ports 8000, 8080" for network.listen, or "" when it names none. */
static void listen_text(const struct aj_ports *ports, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ports->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%u",
					i ? ", " : ports->n > 1 ? "ports " : "port ", ports->v[i]);
}

static int tcp_rules(struct aj_plan *p, int abi, struct aj_err *err)
{
	char probe[160], ports[96];

	if (p->policy->net_mode == AJ_NET_HOST) {
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_OFF,
				  "network.mode=host: TCP is not restricted");
		return 0;
	}
	if (abi < 4) {
		snprintf(probe, sizeof probe,
			 "kernel Landlock ABI %d < 4 cannot restrict TCP, and this tier has no "
			 "network namespace: the host and the internet are reachable",
			 abi);
		return aj_plan_need(p, AJ_PL_LANDLOCK_NET, "landlock-net", NULL, AJ_LAYER_LANDLOCK,
				    probe, "use Linux 6.7 or later", err);
	}
	p->ll_net = AJ_LL_NET_BIND_TCP | AJ_LL_NET_CONNECT_TCP;
	if (p->egress.on && proxy_port(p, err) < 0)
		return -1;
	if (!p->policy->net_listen.n) {
		if (!p->egress.on)
			aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_ENFORCED,
					  "TCP bind and connect denied on every port, on every "
					  "address");
		return 0;
	}
	/* A listener here is on the host's network, on every address it binds: the policy
	 * names its ports. listen() must then be allowed, and listen() on an unbound socket
	 * takes a kernel-chosen port without Landlock's bind check (docs/threat-model.md). */
	listen_text(&p->policy->net_listen, ports, sizeof ports);
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_ENFORCED,
			  "TCP bind denied but on %s (network.listen, on the host's network); "
			  "connect denied %s",
			  ports, p->egress.on ? "but to the egress proxy's port" : "on every port");
	return 0;
}

static int scopes(struct aj_plan *p, int abi, struct aj_err *err)
{
	char probe[200];

	if (abi >= 6) {
		p->ll_scope = AJ_LL_SCOPE_ABSTRACT_UNIX | AJ_LL_SCOPE_SIGNAL;
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_ENFORCED,
				  "signals and abstract unix sockets confined to the sandbox: the "
				  "caller's other processes cannot be signalled or connected to");
		return 0;
	}
	snprintf(probe, sizeof probe,
		 "kernel Landlock ABI %d < 6 cannot refuse signals to the caller's other "
		 "processes (kill -1 would reach them all) nor abstract unix sockets",
		 abi);
	return aj_plan_need(p, AJ_PL_LANDLOCK_SCOPE, "landlock-scope", NULL, AJ_LAYER_LANDLOCK,
			    probe, "use Linux 6.12 or later", err);
}

static int landlock(struct aj_plan *p, struct aj_err *err)
{
	int abi = p->features->landlock_abi;
	size_t n = 0;

	p->landlock_abi = abi;
	if (abi < 1)
		return aj_err_set(err, AJ_LAYER_LANDLOCK, 0,
				  "the landlock tier is built on Landlock, which this kernel does "
				  "not offer: %s",
				  p->features->landlock_why),
		       aj_err_hint(err, "boot a kernel with Landlock enabled (5.13+, "
					"lsm=...,landlock); it cannot be run without");
	p->ll_fs = aj_landlock_fs_rights(abi);
	for (size_t i = 0; i < p->n_ops; i++)
		n += p->ops[i].kind == AJ_OP_ALLOW;
	/* Landlock (up to ABI 7) governs opening, creating, removing, renaming and executing;
	 * changing metadata is left to ownership, and the sandbox owns what the caller owns. */
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_FS, AJ_LS_ENFORCED,
			  "ABI %d: the filesystem boundary; only the %zu granted host paths are "
			  "reachable, each with its rights; NOT covered: chmod, chown and utimes "
			  "of the caller's own files anywhere",
			  abi, n);
	return tcp_rules(p, abi, err) < 0 ? -1 : scopes(p, abi, err);
}

/* ---- seccomp ------------------------------------------------------------------------------ */

static int check_relaxations(const struct aj_sc_profile *prof, const struct aj_strv *allow,
			     struct aj_err *err)
{
	int relaxable = 0;

	for (size_t i = 0; i < allow->n; i++) {
		if (!aj_seccomp_group_known(prof, allow->v[i], &relaxable) || !relaxable)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "syscalls.allow[%zu]: \"%s\" is not a relaxable group of "
					  "the landlock tier's seccomp profile",
					  i, allow->v[i]);
		/* io_uring makes sockets and connections without the syscalls the tier's rules
		 * look at, and those rules stand in for the network namespace. */
		if (strcmp(allow->v[i], "io_uring") == 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "syscalls.allow[%zu]: io_uring cannot be relaxed in the "
					  "landlock tier: it would open sockets past the seccomp rules "
					  "that stand in for the network namespace",
					  i),
			       aj_err_hint(err, "use the namespaces tier to relax io_uring");
	}
	return 0;
}

static void seccomp_layer(struct aj_plan *p)
{
	const struct aj_strv *allow = &p->policy->syscalls_allow;

	if (aj_strv_contains(allow, "host-ipc"))
		aj_plan_set_layer(p, AJ_PL_IPCNS, AJ_LS_ABSENT,
				  "no IPC namespace, and host-ipc relaxed by the policy: the host's "
				  "System V IPC and POSIX queues of the caller are reachable");
	aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
			  "default profile + landlock tier rules, %zu deny rules (%zu relaxed "
			  "group(s)): %s%s%s32-bit and x32 syscall ABIs refused",
			  p->sc_rules, allow->n,
			  aj_strv_contains(allow, "unix-sockets") ? "" : "unix sockets, ",
			  p->policy->net_mode == AJ_NET_HOST ? ""
			  : p->policy->net_listen.n	      ? "non-TCP sockets, TCP Fast Open, "
							      : "non-TCP sockets, listen(), TCP Fast "
								"Open, ",
			  aj_strv_contains(allow, "host-ipc") ? "" : "host IPC, ");
}

static int compile(struct aj_plan *p, struct aj_sc_profile *prof, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv relax = AJ_STRV_INIT;
	size_t skipped = 0, kept = 0;
	int r;

	aj_strv_copy(&relax, &p->policy->syscalls_allow);
	/* The host's network by choice: the rules that stand in for its namespace go too. */
	if (p->policy->net_mode == AJ_NET_HOST)
		aj_strv_push(&relax, "network");
	/* Ports to listen on by choice: listen() goes, the rest of the network rules stay. */
	if (p->policy->net_mode == AJ_NET_HOST || p->policy->net_listen.n)
		aj_strv_push(&relax, "listen");
	r = aj_seccomp_compile(prof, &relax, &p->sc_owned, &p->sc_len, &skipped, err);
	for (size_t i = 0; r == 0 && i < prof->n; i++)
		kept += !aj_strv_contains(&relax, prof->rules[i].group);
	p->sc_insns = p->sc_owned;
	p->sc_rules = kept - skipped;
	return r;
}

static int seccomp(struct aj_plan *p, struct aj_err *err)
{
	_cleanup_free_ char *text = NULL;
	struct aj_sc_profile prof;
	int r;

	if (!p->features->seccomp)
		return aj_plan_need(p, AJ_PL_SECCOMP, "seccomp", NULL, AJ_LAYER_SECCOMP,
				    p->features->seccomp_why,
				    "use a kernel with CONFIG_SECCOMP_FILTER (in this tier seccomp also "
				    "stands in for the network and IPC namespaces)",
				    err);
	text = aj_xasprintf("%s\n%s", aj_seccomp_default_rules, aj_seccomp_tier_rules);
	if (aj_seccomp_parse(text, &prof, err) < 0)
		return -1;
	r = check_relaxations(&prof, &p->policy->syscalls_allow, err);
	if (r == 0)
		r = compile(p, &prof, err);
	aj_seccomp_profile_free(&prof);
	if (r == 0)
		seccomp_layer(p);
	return r;
}

/* ---- resources without a cgroup ---------------------------------------------------------- */

static void memory_degraded(struct aj_plan *p)
{
	char size[32], detail[sizeof p->layers[0].detail];

	if (p->layers[AJ_PL_MEMORY].state != AJ_LS_DEGRADED)
		return;
	aj_format_size(p->policy->limits.memory, size, sizeof size);
	aj_plan_add_rlimit(p, RLIMIT_AS, p->policy->limits.memory);
	snprintf(detail, sizeof detail, "%s", p->layers[AJ_PL_MEMORY].detail);
	aj_plan_set_layer(p, AJ_PL_MEMORY, AJ_LS_DEGRADED,
			  "RLIMIT_AS %s per process stands in (weaker: address space, not memory "
			  "used, and per process, not per sandbox); %s",
			  size, detail);
}

/* Tasks (threads included, as RLIMIT_NPROC counts them) whose real uid is uid. */
static unsigned long tasks_of(uid_t uid)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *e;
	unsigned long n = 0;
	char path[64];

	while (d && (e = readdir(d))) {
		_cleanup_free_ char *st = NULL;
		const char *u, *t;
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
		st = aj_read_file(path, 1 << 16, NULL);
		u = st ? strstr(st, "\nUid:") : NULL;
		t = st ? strstr(st, "\nThreads:") : NULL;
		if (u && t && strtoul(u + 5, NULL, 10) == uid)
			n += strtoul(t + 9, NULL, 10);
	}
	return n;
}

static int pids_without_cgroup(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_cgroup_env *cg = p->features->cgroup;
	uint64_t limit = p->policy->limits.pids;
	unsigned long now;
	char probe[sizeof p->layers[0].detail];

	snprintf(probe, sizeof probe,
		 "no pids cgroup (%s), and without a user namespace RLIMIT_NPROC counts every "
		 "process of uid %u on the host, not the sandbox's",
		 cg->why[AJ_CG_PIDS], p->uid);
	if (aj_plan_need(p, AJ_PL_PIDS, "pids", "cgroup", AJ_LAYER_CGROUP, probe,
			 "run in a delegated cgroup (systemd-run --user --scope -p Delegate=yes), "
			 "or set limits.pids to null (--pids none)",
			 err) < 0)
		return -1;
	/* A brake on fork bombs rather than the sandbox's count: room for the limit on top of
	 * what the caller already runs. */
	now = tasks_of(p->uid);
	aj_plan_add_rlimit(p, RLIMIT_NPROC, now + limit);
	aj_plan_set_layer(p, AJ_PL_PIDS, AJ_LS_DEGRADED,
			  "RLIMIT_NPROC %lu = uid %u's %lu tasks at launch + the limit %lu: "
			  "counts all of the caller's tasks (accepted by allow_degraded)",
			  now + (unsigned long)limit, p->uid, now, (unsigned long)limit);
	return 0;
}

/* ---- description ---------------------------------------------------------------------------- */

static const char *seccomp_profile(const struct aj_plan *p)
{
	return "landlock-tier";
}

static void print_header(const struct aj_plan *p, FILE *f)
{
	fprintf(f, "agentjail: sandbox %s, landlock tier (no namespaces), as the caller's uid %u\n",
		p->id, p->uid);
}

const struct aj_plan_tier aj_plan_landlock_tier = {
	.name = "landlock",
	.usable = usable,
	.identity = identity,
	.setup = setup,
	.process = process,
	.landlock = landlock,
	.seccomp = seccomp,
	.memory_remedy = "run in a delegated cgroup (systemd-run --user --scope -p Delegate=yes), "
			 "or set limits.memory to null (in this tier, --allow-degraded memory "
			 "puts a per-process RLIMIT_AS in its place)",
	.memory_degraded = memory_degraded,
	.pids_without_cgroup = pids_without_cgroup,
	.seccomp_profile = seccomp_profile,
	.print_header = print_header,
};
