/* Policy -> plan. Each section below turns one part of the policy into operations and decides,
 * against the probed features, whether the layers it needs can be enforced here. The
 * sections the tiers build differently are behind the tier's table (struct aj_plan_tier:
 * plan_namespaces.c, plan_tier.c), chosen once per plan. */
#include "policy/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"
#include "policy/plan_internal.h"
#include "storage/quota.h"
#include "storage/volumes.h"

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
	[AJ_PL_DISK] = "disk",                 [AJ_PL_EGRESS] = "egress-proxy",
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

struct aj_op *aj_plan_add_op(struct aj_plan *p, enum aj_op_kind kind, const char *dst,
			     const char *src, unsigned flags, uint64_t landlock, const char *why)
{
	struct aj_op *op;

	if (p->n_ops == p->cap_ops) {
		p->cap_ops = p->cap_ops ? p->cap_ops * 2 : 64;
		p->ops = aj_xrealloc(p->ops, p->cap_ops * sizeof *p->ops);
	}
	op = &p->ops[p->n_ops];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->flags = flags;
	op->landlock = landlock;
	op->why = why;
	op->tree_fd = -1;
	op->dst = aj_xstrdup(dst);
	op->src = src ? aj_xstrdup(src) : NULL;
	p->n_ops++;
	return op;
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

static void environment(struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;
	extern char **environ;

	if (p->image) {
		aj_plan_image_env(p);
	} else {
		aj_strv_setenv(&p->env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
						"/usr/bin:/sbin:/bin");
		aj_strv_setenv(&p->env, "HOME", p->home);
		aj_strv_setenv(&p->env, "USER", p->user_name);
		aj_strv_setenv(&p->env, "LOGNAME", p->user_name);
		aj_strv_setenv(&p->env, "SHELL", p->shell);
	}
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];
		size_t n = eq ? (size_t)(eq - *e) : 0;
		if (!eq || n >= sizeof name || !env_allowed(&pol->env_allow, *e))
			continue;
		/* An image's own variables are its process defaults: the host's do not
		 * override them (PATH above all). */
		if (p->image && aj_strv_find_env(&p->env, *e, n) >= 0)
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		aj_strv_setenv(&p->env, name, eq + 1);
	}
	for (size_t i = 0; i < pol->env_set.n; i++) {
		const char *kv = pol->env_set.v[i], *eq = strchr(kv, '=');
		char name[256];
		size_t n = (size_t)(eq - kv);
		if (n >= sizeof name)
			continue;
		memcpy(name, kv, n);
		name[n] = '\0';
		aj_strv_setenv(&p->env, name, eq + 1);
	}
	aj_plan_set_layer(p, AJ_PL_ENV, AJ_LS_ENFORCED,
			  "host environment dropped; %zu variables set from the %sallowlist and "
			  "policy",
			  p->env.n, p->image ? "image's config, the " : "");
}

/* What uid 0 of an image root keeps, in its own user namespace only: the set container
 * runtimes give by default, less MKNOD (Landlock refuses device nodes, and they would be
 * nodev) and NET_RAW (seccomp refuses raw sockets). */
static const int root_caps[] = {
	CAP_CHOWN,	CAP_DAC_OVERRIDE, CAP_FOWNER,	CAP_FSETID,	      CAP_KILL,
	CAP_SETGID,	CAP_SETUID,	  CAP_SETPCAP,	CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT,
	CAP_SETFCAP,	CAP_AUDIT_WRITE,
};

bool aj_plan_writes_host(const struct aj_plan *p)
{
	const struct aj_policy *pol = p->policy;

	return pol->read_write.n > 0 || (!pol->managed && pol->workspace_mode == AJ_WS_RW);
}

/* An image root's init is its uid 0 (when that id is mapped: always as root, rootless only
 * when the user is root), so that it can start commands as any of the image's users; a
 * command as root keeps the set, one as another user none. Where the sandbox writes into a
 * host directory (aj_plan_writes_host()), SETFCAP and FSETID go too: a file capability or a
 * set-ID bit made there would hold on the host, for the host owner the sandbox's root
 * writes as. */
static void capabilities(struct aj_plan *p)
{
	p->caps_keep = 0;
	p->init_root = p->image && (aj_plan_maps_range(p) || p->uid == 0);
	if (!p->init_root) {
		aj_plan_set_layer(p, AJ_PL_CAPS, AJ_LS_ENFORCED,
				  "every capability dropped (bounding, ambient, effective, "
				  "permitted, inheritable); securebits locked");
		return;
	}
	for (size_t i = 0; i < AJ_ARRAY_SIZE(root_caps); i++)
		p->caps_keep |= 1ULL << root_caps[i];
	if (aj_plan_writes_host(p))
		p->caps_keep &= ~((1ULL << CAP_SETFCAP) | (1ULL << CAP_FSETID));
	aj_plan_set_layer(p, AJ_PL_CAPS, AJ_LS_ENFORCED,
			  "uid 0 of the image keeps %d capabilities over the sandbox's own user "
			  "namespace (chown, dac_override, fowner, %skill, setuid, setgid, setpcap, "
			  "net_bind_service, sys_chroot, %saudit_write), the rest dropped from "
			  "every set; commands as uid %u hold %s; securebits locked",
			  __builtin_popcountll(p->caps_keep),
			  aj_plan_writes_host(p) ? "" : "fsetid, ",
			  aj_plan_writes_host(p) ? "" : "setfcap, ", p->uid,
			  p->uid == 0 ? "that set" : "none");
}

static int process(struct aj_plan *p, char *const *argv, struct aj_err *err)
{
	if (p->image) {
		if (aj_plan_image_command(p, argv, err) < 0)
			return -1;
	} else {
		for (size_t i = 0; argv && argv[i]; i++)
			aj_strv_push(&p->argv, argv[i]);
		p->cwd = aj_xstrdup(p->policy->cwd ? p->policy->cwd : p->policy->workspace);
	}
	capabilities(p);
	aj_plan_set_layer(p, AJ_PL_NNP, AJ_LS_ENFORCED,
			  "set: setuid and file capabilities cannot raise privileges");
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED,
			  "new session without a controlling terminal (no TIOCSTI into the "
			  "caller's terminal); caller's descriptors other than stdio closed");
	environment(p);
	return 0;
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

static int resources(struct aj_plan *p, const struct aj_plan_tier *t, struct aj_err *err)
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
				 cg->why[AJ_CG_MEMORY], t->memory_remedy, err) < 0)
			return -1;
		t->memory_degraded(p);
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
	else {
		p->cg_limits.pids = 0;
		if (t->pids_without_cgroup(p, err) < 0)
			return -1;
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

/* limits.disk: the writable layers' directory must be a quota directory with that limit
 * (made so by whoever made it, storage/quota.h); a sandbox that writes a host directory in
 * place has nothing the limit could bound. */
static int disk(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	const struct aj_policy *pol = p->policy;
	const char *dir = ws && ws->rw_dir ? ws->rw_dir
			  : ws && ws->root ? ws->root->rw_dir
					   : NULL;
	bool in_place = (!ws || !ws->lowers) && !p->no_workspace && !pol->managed &&
			pol->workspace && pol->workspace_mode == AJ_WS_RW;
	bool host_rw = false;
	struct aj_quota_use u;
	struct aj_quota_probe q;
	char buf[32], probe[400];

	if (!pol->limits.disk || pol->limits.disk == AJ_DISK_DEFAULT) {
		aj_plan_set_layer(p, AJ_PL_DISK, AJ_LS_OFF, "no limit");
		return 0;
	}
	aj_format_size(pol->limits.disk, buf, sizeof buf);
	for (size_t i = 0; i < pol->volumes.n; i++) {
		struct aj_volume_entry e;
		char why[200];
		host_rw = host_rw || (aj_volume_entry_parse(pol->volumes.v[i], &e, why, sizeof why) == 0 &&
				      e.host && !e.ro);
	}
	if (in_place || pol->read_write.n || host_rw || p->tier == AJ_TIER_LANDLOCK ||
	    (ws && ws->rw_dir && ws->root && ws->root->rw_dir))
		return aj_plan_need(p, AJ_PL_DISK, "disk", NULL, AJ_LAYER_POLICY,
				    in_place ? "the workspace is a host directory written in place"
				    : pol->read_write.n
					    ? "filesystem.read_write grants write host directories"
				    : host_rw ? "a read-write host directory of filesystem.volumes"
				    : p->tier == AJ_TIER_LANDLOCK
					    ? "the landlock tier writes HOME and TMPDIR in a host "
					      "directory"
					    : "an --image run with --overlay has two writable layers",
				    "bound a run's writes with --overlay, --image or a persistent "
				    "sandbox",
				    err);
	if (!dir) {
		aj_plan_set_layer(p, AJ_PL_DISK, AJ_LS_ENFORCED,
				  "%s: nothing on disk is writable (tmpfs only)", buf);
		return 0;
	}
	if (aj_quota_usage(dir, false, &u) == 0 && u.limit) {
		p->disk_dir = aj_xstrdup(dir);
		aj_plan_set_layer(p, AJ_PL_DISK, AJ_LS_ENFORCED, "%s (%s on %s)", buf,
				  aj_quota_kind_name(u.kind), dir);
		return 0;
	}
	aj_quota_probe(dir, &q);
	snprintf(probe, sizeof probe, "no disk quota on \"%s\": %s", dir,
		 q.kind ? "it was made without one" : q.why);
	return aj_plan_need(p, AJ_PL_DISK, "disk", NULL, AJ_LAYER_STATE, probe,
			    "put the state directory on a quota-capable filesystem "
			    "(`agentjail storage init`)",
			    err);
}

static int workspace(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	p->ovl.rw_fd = p->root.rw_fd = -1;
	for (size_t i = 0; i < AJ_OVL_MAX_LOWERS; i++)
		p->ovl.lower_fds[i] = p->root.lower_fds[i] = -1;
	if (!p->user_name) {
		p->user_name = aj_xstrdup(p->policy->user_name);
		p->home = aj_xstrdup(p->policy->home);
		p->shell = aj_xstrdup(p->policy->shell);
	}
	if (!ws)
		return 0;
	if (ws->volume_dirs)
		aj_strv_copy(&p->volume_dirs, ws->volume_dirs);
	p->persistent = ws->persistent;
	p->image = ws->root;
	p->no_workspace = ws->root && ws->no_workspace;
	if (!ws->lowers)
		return 0;
	if (ws->lowers->n > AJ_OVL_MAX_LOWERS)
		return aj_err_set(err, AJ_LAYER_POLICY, E2BIG, "workspace: %zu layers (at most %d)",
				  ws->lowers->n, AJ_OVL_MAX_LOWERS);
	p->ovl.on = true;
	p->ovl.canonical = ws->canonical;
	p->ovl.rw_dir = aj_xstrdup(ws->rw_dir);
	for (; p->ovl.n_lowers < ws->lowers->n; p->ovl.n_lowers++)
		p->ovl.lowers[p->ovl.n_lowers] = aj_xstrdup(ws->lowers->v[p->ovl.n_lowers]);
	return 0;
}

/* The table of each tier. A tier the table lacks cannot come from the policy parser; it
 * gets the namespaces tier, the stronger one. */
const struct aj_plan_tier *aj_plan_tier_of(enum aj_tier tier)
{
	switch (tier) {
	case AJ_TIER_NAMESPACES: return &aj_plan_namespaces_tier;
	case AJ_TIER_LANDLOCK: return &aj_plan_landlock_tier;
	case AJ_TIER_GVISOR: return &aj_plan_gvisor_tier;
	}
	return &aj_plan_namespaces_tier;
}

int aj_plan_base_layers(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_plan_tier *t;

	if (workspace(p, NULL, err) < 0)
		return -1;
	if (aj_random_hex(p->id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	t = aj_plan_tier_of(p->tier);
	if (t->identity(p, err) < 0 || t->landlock(p, err) < 0 || t->seccomp(p, err) < 0)
		return -1;
	return 0;
}

int aj_plan_build(struct aj_plan *p, struct aj_policy *pol, const struct aj_features *feat,
		  char *const *argv, struct aj_err *err)
{
	return aj_plan_build_ex(p, pol, feat, argv, NULL, err);
}

/* The sections in order; what fails leaves the plan half made, for the caller to free. */
static int build(struct aj_plan *p, const struct aj_plan_tier *t, char *const *argv,
		 const struct aj_workspace_spec *ws, struct aj_err *err)
{
	if (workspace(p, ws, err) < 0)
		return -1;
	if (aj_random_hex(p->id, 8) < 0)
		return aj_err_sys(err, AJ_LAYER_INTERNAL, "getrandom");
	if (t->identity(p, err) < 0 || t->setup(p, ws, err) < 0)
		return -1;
	if (process(p, argv, err) < 0 || t->process(p, err) < 0 || aj_plan_network(p, err) < 0)
		return -1;
	rlimits(p);
	if (t->landlock(p, err) < 0 || t->seccomp(p, err) < 0 || resources(p, t, err) < 0 ||
	    disk(p, ws, err) < 0)
		return -1;
	return t->finish ? t->finish(p, err) : 0;
}

int aj_plan_build_ex(struct aj_plan *p, struct aj_policy *pol, const struct aj_features *feat,
		     char *const *argv, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	memset(p, 0, sizeof *p);
	p->policy = pol;
	p->features = feat;
	p->tier = pol->tier;
	if (build(p, aj_plan_tier_of(pol->tier), argv, ws, err) < 0) {
		aj_plan_free(p);
		return -1;
	}
	return 0;
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
	free(p->disk_dir);
	p->disk_dir = NULL;
	aj_strv_free(&p->volume_dirs);
	free(p->scratch);
	p->scratch = NULL;
	free(p->gv_runsc);
	free(p->gv_spec);
	free(p->gv_loader);
	p->gv_runsc = p->gv_spec = p->gv_loader = NULL;
	for (size_t i = 0; i < p->ovl.n_lowers; i++)
		free(p->ovl.lowers[i]);
	p->ovl.rw_dir = NULL;
	p->ovl.n_lowers = 0;
	for (size_t i = 0; i < p->root.n_lowers; i++)
		free(p->root.lowers[i]);
	free(p->root.rw_dir);
	p->root.rw_dir = NULL;
	p->root.n_lowers = 0;
	free(p->user_name);
	free(p->home);
	free(p->shell);
	free(p->image_passwd);
	free(p->image_group);
	p->user_name = p->home = p->shell = p->image_passwd = p->image_group = NULL;
	aj_strv_free(&p->argv);
	aj_strv_free(&p->env);
	aj_strv_free(&p->egress.placeholders);
	free(p->egress.secret_dir);
	p->ops = NULL;
	p->n_ops = p->cap_ops = 0;
	p->rootfs_text = NULL;
	p->cwd = NULL;
	p->sc_owned = NULL;
}
