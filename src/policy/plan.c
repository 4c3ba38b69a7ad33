/* Policy -> plan. Each section below turns one part of the policy into operations and decides,
 * against the probed features, whether the layers it needs can be enforced here. */
#include "policy/plan.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "rules/landlock.h"
#include "rules/seccomp.h"

static const char *const layer_names[AJ_PL__COUNT] = {
	[AJ_PL_USERNS] = "user-namespace",     [AJ_PL_MOUNTNS] = "mount-namespace",
	[AJ_PL_PIDNS] = "pid-namespace",       [AJ_PL_IPCNS] = "ipc-namespace",
	[AJ_PL_UTSNS] = "uts-namespace",       [AJ_PL_NETNS] = "network-namespace",
	[AJ_PL_CGROUPNS] = "cgroup-namespace", [AJ_PL_ROOTFS] = "root-filesystem",
	[AJ_PL_LANDLOCK_FS] = "landlock",      [AJ_PL_LANDLOCK_NET] = "landlock-net",
	[AJ_PL_LANDLOCK_SCOPE] = "landlock-scope", [AJ_PL_SECCOMP] = "seccomp",
	[AJ_PL_CAPS] = "capabilities",         [AJ_PL_NNP] = "no-new-privileges",
	[AJ_PL_SESSION] = "session",           [AJ_PL_ENV] = "environment",
	[AJ_PL_RLIMITS] = "rlimits",           [AJ_PL_MEMORY] = "memory",
	[AJ_PL_PIDS] = "pids",                 [AJ_PL_CPU] = "cpu",
	[AJ_PL_TIMEOUT] = "timeout",           [AJ_PL_OUTPUT] = "output",
	[AJ_PL_EGRESS] = "egress-proxy",
};

const char *aj_plan_layer_name(int layer)
{
	return layer >= 0 && layer < AJ_PL__COUNT ? layer_names[layer] : "?";
}

const char *aj_plan_layer_state_name(int state)
{
	switch (state) {
	case AJ_LS_ENFORCED: return "enforced";
	case AJ_LS_OFF: return "off";
	case AJ_LS_DEGRADED: return "degraded";
	case AJ_LS_SUPPLEMENTAL: return "unavailable";
	case AJ_LS_ABSENT: return "absent";
	default: return "?";
	}
}

void aj_plan_set_layer(struct aj_plan *p, int layer, int state, const char *fmt, ...)
{
	va_list ap;

	p->layers[layer].state = state;
	va_start(ap, fmt);
	vsnprintf(p->layers[layer].detail, sizeof p->layers[layer].detail, fmt, ap);
	va_end(ap);
}

static bool degraded_allowed(const struct aj_plan *p, const char *name, const char *group)
{
	const struct aj_strv *a = &p->policy->allow_degraded;
	return aj_strv_contains(a, name) || (group && aj_strv_contains(a, group));
}

int aj_plan_need(struct aj_plan *p, int layer, const char *name, const char *group,
		 enum aj_layer err_layer, const char *probe, const char *remedy, struct aj_err *err)
{
	if (degraded_allowed(p, name, group)) {
		const char *by = aj_strv_contains(&p->policy->allow_degraded, name) ? name : group;
		aj_plan_set_layer(p, layer, AJ_LS_DEGRADED, "NOT ENFORCED (accepted by "
							    "allow_degraded \"%s\"): %s",
				  by, probe);
		return 0;
	}
	aj_err_set(err, err_layer, 0, "the %s layer is needed but cannot be enforced: %s", name,
		   probe);
	return aj_err_hint(err, "%s; or accept running without it: --allow-degraded %s", remedy,
			   name);
}

struct aj_op *aj_plan_add_op(struct aj_plan *p, int kind, const char *dst, const char *src,
			     unsigned flags, uint64_t landlock, const char *why)
{
	struct aj_op *op;

	if (p->n_ops == p->cap_ops) {
		size_t cap = p->cap_ops ? p->cap_ops * 2 : 64;
		struct aj_op *ops = realloc(p->ops, cap * sizeof *ops);
		if (!ops)
			return NULL;
		p->ops = ops;
		p->cap_ops = cap;
	}
	op = &p->ops[p->n_ops];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->flags = flags;
	op->landlock = landlock;
	op->why = why;
	op->tree_fd = -1;
	op->dst = strdup(dst);
	op->src = src ? strdup(src) : NULL;
	if (!op->dst || (src && !op->src)) {
		free(op->dst);
		free(op->src);
		return NULL;
	}
	p->n_ops++;
	return op;
}

static int identity(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_features *f = p->features;

	if (p->tier == AJ_TIER_LANDLOCK)
		return aj_plan_tier_identity(p, err);
	if (f->root_incapable)
		return aj_err_set(err, AJ_LAYER_USERNS, EPERM,
				  "agentjail runs as uid 0 without CAP_SYS_ADMIN, CAP_SETUID and "
				  "CAP_SETGID, so it can neither map the sandbox to an unprivileged "
				  "host uid nor keep it from being host root"),
		       aj_err_hint(err, "run agentjail as an unprivileged user (rootless mode) or "
					"as root with full capabilities");
	p->privileged = f->privileged;
	p->uid = (uint32_t)p->policy->uid;
	p->gid = (uint32_t)p->policy->gid;
	if (p->privileged) {
		p->id_count = 65536; /* id_base is allocated by the launcher */
	} else {
		p->id_base = f->uid;
		p->host_gid_base = f->gid;
		p->id_count = 1;
	}
	aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ENFORCED,
			  p->privileged ? "sandbox uid %u maps to an unprivileged host uid range "
					  "allocated per sandbox"
					: "sandbox uid %u maps to the caller's uid; nothing else is "
					  "mapped",
			  p->uid);
	return 0;
}

static void namespaces(struct aj_plan *p)
{
	p->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
			 CLONE_NEWUTS;
	if (p->policy->net_mode != AJ_NET_HOST)
		p->clone_flags |= CLONE_NEWNET;
	aj_plan_set_layer(p, AJ_PL_MOUNTNS, AJ_LS_ENFORCED, "private mount tree, pivot_root");
	aj_plan_set_layer(p, AJ_PL_PIDNS, AJ_LS_ENFORCED,
			  "host processes invisible; all sandbox processes die with its init");
	aj_plan_set_layer(p, AJ_PL_IPCNS, AJ_LS_ENFORCED, "private System V IPC and POSIX queues");
	aj_plan_set_layer(p, AJ_PL_UTSNS, AJ_LS_ENFORCED, "hostname %s", p->policy->hostname);
	if (p->policy->net_mode == AJ_NET_HOST)
		aj_plan_set_layer(p, AJ_PL_NETNS, AJ_LS_OFF,
				  "HOST NETWORK SHARED by policy (network.mode=host): no egress "
				  "control, host services on loopback are reachable");
	else if (p->policy->net_mode == AJ_NET_PROXY)
		aj_plan_set_layer(p, AJ_PL_NETNS, AJ_LS_ENFORCED,
				  "no interface but loopback: no route out; egress only through "
				  "the supervisor's proxy (egress-proxy)");
	else
		aj_plan_set_layer(p, AJ_PL_NETNS, AJ_LS_ENFORCED,
				  "no interface but loopback: no route to the host or the "
				  "internet");
	aj_plan_set_layer(p, AJ_PL_CGROUPNS, AJ_LS_ENFORCED,
			  "the sandbox sees its own cgroup as the root");
}

static bool env_allowed(const struct aj_strv *allow, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);

	for (size_t i = 0; i < allow->n; i++) {
		const char *pat = allow->v[i];
		size_t pl = strlen(pat);
		if (pl && pat[pl - 1] == '*') {
			if (n >= pl - 1 && strncmp(entry, pat, pl - 1) == 0)
				return true;
		} else if (pl == n && strncmp(entry, pat, n) == 0) {
			return true;
		}
	}
	return false;
}

static int environment(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	extern char **environ;
	int r = 0;

	r |= aj_strv_setenv(&p->env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
					     "/sbin:/bin");
	r |= aj_strv_setenv(&p->env, "HOME", pol->home);
	r |= aj_strv_setenv(&p->env, "USER", pol->user_name);
	r |= aj_strv_setenv(&p->env, "LOGNAME", pol->user_name);
	r |= aj_strv_setenv(&p->env, "SHELL", pol->shell);
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		size_t n = eq ? (size_t)(eq - *e) : 0;
		if (!eq || n >= sizeof name || !env_allowed(&pol->env_allow, *e))
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		r |= aj_strv_setenv(&p->env, name, eq + 1);
	}
	for (size_t i = 0; i < pol->env_set.n; i++) {
		const char *kv = pol->env_set.v[i], *eq = strchr(kv, '=');
		char name[256];
		size_t n = (size_t)(eq - kv);
		if (n >= sizeof name)
			continue;
		memcpy(name, kv, n);
		name[n] = '\0';
		r |= aj_strv_setenv(&p->env, name, eq + 1);
	}
	if (r)
		return aj_err_sys(err, AJ_LAYER_POLICY, "build the environment");
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED,
			  "host environment dropped; %zu variables set from the allowlist and "
			  "policy",
			  p->env.n);
	return 0;
}

static int process(struct aj_plan *p, char *const *argv, struct aj_err *err)
{
	for (size_t i = 0; argv && argv[i]; i++)
		if (aj_strv_push(&p->argv, argv[i]) < 0)
			return aj_err_sys(err, AJ_LAYER_POLICY, "copy the command");
	p->cwd = strdup(p->policy->cwd ? p->policy->cwd : p->policy->workspace);
	if (!p->cwd)
		return aj_err_sys(err, AJ_LAYER_POLICY, "cwd");
	aj_plan_set_layer(p, AJ_PL_CAPS, AJ_LS_ENFORCED,
			  "every capability dropped (bounding, ambient, effective, permitted, "
			  "inheritable); securebits locked");
	aj_plan_set_layer(p, AJ_PL_NNP, AJ_LS_ENFORCED,
			  "set: setuid and file capabilities cannot raise privileges");
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED,
			  "new session without a controlling terminal (no TIOCSTI into the "
			  "caller's terminal); caller's descriptors other than stdio closed");
	return environment(p, err);
}

void aj_plan_add_rlimit(struct aj_plan *p, int resource, uint64_t value)
{
	struct rlimit cur;

	/* Raising a hard limit needs CAP_SYS_RESOURCE on the host, which the sandbox never
	 * has: a lower host limit wins, which is stricter, never weaker. */
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
	    value > cur.rlim_max)
		value = cur.rlim_max;
	p->rlimits[p->n_rlimits].resource = resource;
	p->rlimits[p->n_rlimits].value = value;
	p->n_rlimits++;
}

static void rlimits(struct aj_plan *p)
{
	const struct aj_limits *l = &p->policy->limits;

	aj_plan_add_rlimit(p, RLIMIT_NOFILE, l->open_files);
	aj_plan_add_rlimit(p, RLIMIT_CORE, 0);
	if (l->file_size)
		aj_plan_add_rlimit(p, RLIMIT_FSIZE, l->file_size);
	aj_plan_set_layer(p, AJ_PL_RLIMITS, AJ_LS_ENFORCED,
			  "open files %lu, core dumps off%s", (unsigned long)p->rlimits[0].value,
			  l->file_size ? ", file size limited" : "");
}

/* Landlock's TCP rules in this tier: none. The network namespace is the boundary: it has no
 * interface but loopback, so nothing a process binds or connects to there is anything but the
 * sandbox's own (and, in proxy mode, the proxy's port, which the supervisor holds). Rules on
 * top would only keep servers from listening on the sandbox's own loopback (test suites,
 * dev servers, Jupyter kernels); they add no boundary (docs/threat-model.md). */
static void landlock_net(struct aj_plan *p)
{
	if (p->policy->net_mode == AJ_NET_HOST)
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_OFF,
				  "network.mode=host: TCP is not restricted");
	else
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_OFF,
				  "not needed: the network namespace holds only the sandbox's own "
				  "loopback%s, where servers bind and connect on any port",
				  p->policy->net_mode == AJ_NET_PROXY ? " and the proxy's port" : "");
}

static int landlock(struct aj_plan *p, struct aj_err *err)
{
	int abi = p->features->landlock_abi;

	if (p->tier == AJ_TIER_LANDLOCK)
		return aj_plan_tier_landlock(p, err);
	p->landlock_abi = abi;
	landlock_net(p);
	if (abi < 1) {
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_SUPPLEMENTAL, "no Landlock");
		return aj_plan_need(p, AJ_PL_LANDLOCK_FS, "landlock", NULL, AJ_LAYER_LANDLOCK,
				    p->features->landlock_why,
				    "boot a kernel with Landlock enabled (5.13+, lsm=...,landlock)",
				    err);
	}
	p->ll_fs = aj_landlock_fs_rights(abi);
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_FS, AJ_LS_ENFORCED,
			  "ABI %d: only the paths mounted in are reachable, with the rights "
			  "listed in the root filesystem",
			  abi);
	/* In this tier the pid namespace and the network namespace hold the same boundaries;
	 * Landlock's scopes are a second lock on the same door when the kernel has them. */
	if (abi >= 6) {
		p->ll_scope = AJ_LL_SCOPE_ABSTRACT_UNIX | AJ_LL_SCOPE_SIGNAL;
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_ENFORCED,
				  "abstract unix sockets and signals scoped to the sandbox");
	} else if (p->policy->net_mode == AJ_NET_HOST) {
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_SUPPLEMENTAL,
				  "kernel Landlock ABI %d < 6: with the host network, the host's "
				  "abstract unix sockets are reachable; signals are confined by the "
				  "pid namespace",
				  abi);
	} else {
		aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_SUPPLEMENTAL,
				  "kernel Landlock ABI %d < 6; the network and pid namespaces "
				  "confine abstract sockets and signals",
				  abi);
	}
	return 0;
}

static int check_relaxations(const struct aj_sc_profile *prof, const struct aj_strv *allow,
			     struct aj_err *err)
{
	for (size_t i = 0; i < allow->n; i++) {
		int relaxable = 0;
		if (!aj_seccomp_group_known(prof, allow->v[i], &relaxable))
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "syscalls.allow[%zu]: \"%s\" is not a group of the default "
					  "seccomp profile",
					  i, allow->v[i]);
		if (!relaxable)
			return aj_err_set(err, AJ_LAYER_POLICY, 0,
					  "syscalls.allow[%zu]: the \"%s\" group is part of the "
					  "sandbox boundary and cannot be relaxed",
					  i, allow->v[i]);
	}
	return 0;
}

static int seccomp(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_strv *allow = &p->policy->syscalls_allow;
	struct aj_sc_profile prof;
	size_t skipped = 0;
	int r;

	if (p->tier == AJ_TIER_LANDLOCK)
		return aj_plan_tier_seccomp(p, err);
	if (!p->features->seccomp)
		return aj_plan_need(p, AJ_PL_SECCOMP, "seccomp", NULL, AJ_LAYER_SECCOMP,
				    p->features->seccomp_why,
				    "use a kernel with CONFIG_SECCOMP_FILTER", err);
	if (allow->n == 0) {
		p->sc_insns = aj_seccomp_default_bpf;
		p->sc_len = aj_seccomp_default_len;
		p->sc_rules = aj_seccomp_default_rules_count;
		aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "default profile, %zu deny rules (precompiled); 32-bit and x32 "
				  "syscall ABIs refused",
				  p->sc_rules);
		return 0;
	}
	if (aj_seccomp_parse(aj_seccomp_default_rules, &prof, err) < 0)
		return -1;
	r = check_relaxations(&prof, allow, err);
	if (r == 0)
		r = aj_seccomp_compile(&prof, allow, &p->sc_owned, &p->sc_len, &skipped, err);
	if (r == 0) {
		size_t kept = 0;
		for (size_t i = 0; i < prof.n; i++)
			kept += !aj_strv_contains(allow, prof.rules[i].group);
		p->sc_insns = p->sc_owned;
		p->sc_rules = kept - skipped;
		aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "default profile minus %zu relaxed group(s), %zu deny rules; "
				  "32-bit and x32 syscall ABIs refused",
				  allow->n, p->sc_rules);
	}
	aj_seccomp_profile_free(&prof);
	return r;
}

static int resources(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_limits *l = &p->policy->limits;
	const struct aj_cgroup_env *cg = p->features->cgroup;
	char buf[32];

	p->cg_limits.memory = l->memory;
	p->cg_limits.pids = l->pids;
	p->cg_limits.cpu_milli = l->cpu_milli;
	/* Pausing needs a freezer; without one (rootless, no delegation) the sandbox runs and
	 * `pause` says why it cannot. */
	p->cg_limits.freezable = p->persistent && (cg->mode == AJ_CGROUP_V2 ||
						   cg->usable[AJ_CG_FREEZER]);
	if (!l->memory)
		aj_plan_set_layer(p, AJ_PL_MEMORY, AJ_LS_OFF, "no limit");
	else if (cg->usable[AJ_CG_MEMORY]) {
		aj_format_size(l->memory, buf, sizeof buf);
		aj_plan_set_layer(p, AJ_PL_MEMORY, AJ_LS_ENFORCED, "%s (cgroup %s)%s", buf,
				  aj_cgroup_mode_name(cg->mode),
				  cg->swap_limited ? ", no swap beyond it"
						   : "; swap is not bounded (no swap accounting)");
	} else {
		p->cg_limits.memory = 0;
		if (aj_plan_need(p, AJ_PL_MEMORY, "memory", "cgroup", AJ_LAYER_CGROUP,
				 cg->why[AJ_CG_MEMORY],
				 p->tier == AJ_TIER_LANDLOCK
					 ? "run in a delegated cgroup (systemd-run --user --scope -p "
					   "Delegate=yes), or set limits.memory to null (in this tier, "
					   "--allow-degraded memory puts a per-process RLIMIT_AS in its "
					   "place)"
					 : "run as root, or in a delegated cgroup (systemd-run --user "
					   "--scope -p Delegate=yes), or set limits.memory to null",
				 err) < 0)
			return -1;
		if (p->tier == AJ_TIER_LANDLOCK)
			aj_plan_tier_memory(p);
	}
	if (!l->cpu_milli)
		aj_plan_set_layer(p, AJ_PL_CPU, AJ_LS_OFF, "no quota");
	else if (cg->usable[AJ_CG_CPU])
		aj_plan_set_layer(p, AJ_PL_CPU, AJ_LS_ENFORCED, "%.2f CPUs (cgroup %s quota)",
				  (double)l->cpu_milli / 1000.0, aj_cgroup_mode_name(cg->mode));
	else {
		p->cg_limits.cpu_milli = 0;
		if (aj_plan_need(p, AJ_PL_CPU, "cpu", "cgroup", AJ_LAYER_CGROUP, cg->why[AJ_CG_CPU],
				 "run as root, or in a delegated cgroup, or set limits.cpus to null",
				 err) < 0)
			return -1;
	}
	if (!l->pids)
		aj_plan_set_layer(p, AJ_PL_PIDS, AJ_LS_OFF, "no limit");
	else if (cg->usable[AJ_CG_PIDS])
		aj_plan_set_layer(p, AJ_PL_PIDS, AJ_LS_ENFORCED, "%lu tasks (cgroup %s)",
				  (unsigned long)l->pids, aj_cgroup_mode_name(cg->mode));
	else if (p->tier == AJ_TIER_LANDLOCK) {
		p->cg_limits.pids = 0;
		if (aj_plan_tier_pids(p, err) < 0)
			return -1;
	} else {
		/* Since Linux 5.14 RLIMIT_NPROC is counted per user namespace, so in the sandbox's
		 * fresh namespace it bounds exactly the sandbox's own tasks. */
		p->cg_limits.pids = 0;
		aj_plan_add_rlimit(p, RLIMIT_NPROC, l->pids);
		aj_plan_set_layer(p, AJ_PL_PIDS, AJ_LS_ENFORCED,
				  "%lu tasks via RLIMIT_NPROC in the sandbox's user namespace (no "
				  "pids cgroup: %s); hits are not observable",
				  (unsigned long)l->pids, cg->why[AJ_CG_PIDS]);
	}
	p->use_cgroup = cg->mode != AJ_CGROUP_NONE &&
			(aj_cgroup_needed(&p->cg_limits) || cg->usable[AJ_CG_MEMORY] ||
			 p->persistent);
	if (l->timeout_ms) {
		aj_format_duration_ms(l->timeout_ms, buf, sizeof buf);
		aj_plan_set_layer(p, AJ_PL_TIMEOUT, AJ_LS_ENFORCED,
				  "%s wall clock, then every process is killed", buf);
	} else {
		aj_plan_set_layer(p, AJ_PL_TIMEOUT, AJ_LS_OFF, "no timeout");
	}
	if (l->output_bytes) {
		aj_format_size(l->output_bytes, buf, sizeof buf);
		aj_plan_set_layer(p, AJ_PL_OUTPUT, AJ_LS_ENFORCED, "%s of stdout+stderr, then %s",
				  buf, l->output_action == AJ_OUTPUT_KILL ? "the sandbox is killed"
									 : "the rest is discarded");
	} else {
		aj_plan_set_layer(p, AJ_PL_OUTPUT, AJ_LS_OFF, "no output cap");
	}
	return 0;
}

static int workspace(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	p->ovl.rw_fd = -1;
	for (size_t i = 0; i < AJ_OVL_MAX_LOWERS; i++)
		p->ovl.lower_fds[i] = -1;
	if (!ws)
		return 0;
	p->persistent = ws->persistent;
	if (!ws->lowers)
		return 0;
	if (ws->lowers->n > AJ_OVL_MAX_LOWERS)
		return aj_err_set(err, AJ_LAYER_POLICY, E2BIG, "workspace: %zu layers (at most %d)",
				  ws->lowers->n, AJ_OVL_MAX_LOWERS);
	p->ovl.on = true;
	p->ovl.canonical = ws->canonical;
	p->ovl.rw_dir = strdup(ws->rw_dir);
	if (!p->ovl.rw_dir)
		return aj_err_sys(err, AJ_LAYER_POLICY, "workspace");
	for (; p->ovl.n_lowers < ws->lowers->n; p->ovl.n_lowers++)
		if (!(p->ovl.lowers[p->ovl.n_lowers] = strdup(ws->lowers->v[p->ovl.n_lowers])))
			return aj_err_sys(err, AJ_LAYER_POLICY, "workspace");
	return 0;
}

/* The namespaces tier's sandbox root: a tmpfs assembled with the new mount API. */
static int namespace_setup(struct aj_plan *p, struct aj_err *err)
{
	if (!p->features->mount_api) {
		aj_err_set(err, AJ_LAYER_MOUNT, ENOSYS,
			   "the kernel lacks the mount API agentjail builds the sandbox root with "
			   "(open_tree, move_mount, mount_setattr)");
		return aj_err_hint(err, "use Linux 5.12 or later");
	}
	namespaces(p);
	return aj_plan_rootfs(p, err);
}

int aj_plan_base_layers(struct aj_plan *p, struct aj_err *err)
{
	if (workspace(p, NULL, err) < 0)
		return -1;
	if (aj_random_hex(p->id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	if (identity(p, err) < 0 || landlock(p, err) < 0 || seccomp(p, err) < 0)
		return -1;
	return 0;
}

int aj_plan_build(struct aj_plan *p, struct aj_policy *pol, const struct aj_features *feat,
		  char *const *argv, struct aj_err *err)
{
	return aj_plan_build_ex(p, pol, feat, argv, NULL, err);
}

int aj_plan_build_ex(struct aj_plan *p, struct aj_policy *pol, const struct aj_features *feat,
		     char *const *argv, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	memset(p, 0, sizeof *p);
	p->policy = pol;
	p->features = feat;
	p->tier = pol->tier;
	if (workspace(p, ws, err) < 0)
		goto fail;
	if (aj_random_hex(p->id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	if (identity(p, err) < 0)
		goto fail;
	if (p->tier == AJ_TIER_LANDLOCK ? aj_plan_tier_setup(p, ws, err) < 0
					: namespace_setup(p, err) < 0)
		goto fail;
	if (process(p, argv, err) < 0 ||
	    (p->tier == AJ_TIER_LANDLOCK && aj_plan_tier_process(p, err) < 0) ||
	    aj_plan_network(p, err) < 0)
		goto fail;
	rlimits(p);
	if (landlock(p, err) < 0 || seccomp(p, err) < 0 || resources(p, err) < 0)
		goto fail;
	return 0;
fail:
	aj_plan_free(p);
	return -1;
}

void aj_plan_free(struct aj_plan *p)
{
	for (size_t i = 0; i < p->n_ops; i++) {
		free(p->ops[i].src);
		free(p->ops[i].dst);
		free(p->ops[i].opts);
	}
	free(p->ops);
	free(p->rootfs_text);
	free(p->cwd);
	free(p->sc_owned);
	free(p->ovl.rw_dir);
	free(p->git_dir);
	p->git_dir = NULL;
	free(p->scratch);
	p->scratch = NULL;
	for (size_t i = 0; i < p->ovl.n_lowers; i++)
		free(p->ovl.lowers[i]);
	p->ovl.rw_dir = NULL;
	p->ovl.n_lowers = 0;
	aj_strv_free(&p->argv);
	aj_strv_free(&p->env);
	aj_strv_free(&p->egress.placeholders);
	p->ops = NULL;
	p->n_ops = p->cap_ops = 0;
	p->rootfs_text = NULL;
	p->cwd = NULL;
	p->sc_owned = NULL;
}
