/* The namespaces tier's plan: the sandbox in its own user, mount, pid, IPC, UTS, network and
 * cgroup namespaces, its root a tmpfs assembled from the plan's operations (plan_rootfs.c),
 * Landlock and seccomp on top as second locks. Its table of operations
 * (aj_plan_namespaces_tier) is at the end; the landlock tier's is in plan_tier.c. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "common/cleanup.h"
#include "policy/plan_internal.h"
#include "rules/landlock.h"
#include "rules/seccomp.h"

static bool usable(const struct aj_features *f, char *detail, size_t len)
{
	if (f->root_incapable)
		snprintf(detail, len, "root without CAP_SYS_ADMIN, CAP_SETUID and CAP_SETGID");
	else if (!f->mount_api)
		snprintf(detail, len, "no mount API (Linux 5.12 or later needed)");
	else if (!f->privileged && f->userns != 1)
		snprintf(detail, len, "%s", f->userns_why);
	else
		snprintf(detail, len, "%s", f->privileged ? "as root" : "user namespaces available");
	return !f->root_incapable && f->mount_api && (f->privileged || f->userns == 1);
}

/* ---- identity and namespaces ----------------------------------------------------------- */

static int identity(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_features *f = p->features;

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
		/* An image unpacked with subordinate ids is mapped as it was unpacked. */
		p->subids = p->image && p->image->subids;
		if (p->subids)
			p->id_count = 65536;
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

/* The namespaces, and the sandbox's root: a tmpfs assembled with the new mount API. */
static int setup(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	if (!p->features->mount_api) {
		aj_err_set(err, AJ_LAYER_MOUNT, ENOSYS,
			   "the kernel lacks the mount API agentjail builds the sandbox root with "
			   "(open_tree, move_mount, mount_setattr)");
		return aj_err_hint(err, "use Linux 5.12 or later");
	}
	namespaces(p);
	if (p->image)
		return aj_plan_image_user(p, err) < 0 ? -1 : aj_plan_image_rootfs(p, err);
	return aj_plan_rootfs(p, err);
}

/* ---- process ---------------------------------------------------------------------------- */

/* The environment and process layers every tier has are all this tier needs. */
static int process(struct aj_plan *p, struct aj_err *err)
{
	return 0;
}

/* ---- Landlock and seccomp ------------------------------------------------------------------ */

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

/* An image root is the sandbox's own: package managers set setuid and setgid bits on what
 * they install there (its layers live in agentjail's private state directory, mounted
 * nosuid, and no_new_privs holds), so the "setid" group is lifted for it, unless the sandbox
 * also writes into a host directory (aj_plan_writes_host()): the filter cannot tell one
 * path from another, and a set-ID file made there would hold on the host. */
static int seccomp(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_strv *asked = &p->policy->syscalls_allow;
	_cleanup_strv_ struct aj_strv allow = AJ_STRV_INIT;
	struct aj_sc_profile prof;
	bool lift = p->image && !aj_plan_writes_host(p);
	size_t skipped = 0;
	int r;

	if (!p->features->seccomp)
		return aj_plan_need(p, AJ_PL_SECCOMP, "seccomp", NULL, AJ_LAYER_SECCOMP,
				    p->features->seccomp_why,
				    "use a kernel with CONFIG_SECCOMP_FILTER", err);
	if (asked->n == 0 && !lift) {
		p->sc_insns = aj_seccomp_default_bpf;
		p->sc_len = aj_seccomp_default_len;
		p->sc_rules = aj_seccomp_default_rules_count;
		aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "default profile, %zu deny rules (precompiled); 32-bit and x32 "
				  "syscall ABIs refused",
				  p->sc_rules);
		return 0;
	}
	for (size_t i = 0; i < asked->n; i++)
		aj_strv_push(&allow, asked->v[i]);
	if (lift && !aj_strv_contains(&allow, "setid"))
		aj_strv_push(&allow, "setid");
	if (aj_seccomp_parse(aj_seccomp_default_rules, &prof, err) < 0)
		return -1;
	r = check_relaxations(&prof, asked, err);
	if (r == 0)
		r = aj_seccomp_compile(&prof, &allow, &p->sc_owned, &p->sc_len, &skipped, err);
	if (r == 0) {
		size_t kept = 0;
		for (size_t i = 0; i < prof.n; i++)
			kept += !aj_strv_contains(&allow, prof.rules[i].group);
		p->sc_insns = p->sc_owned;
		p->sc_rules = kept - skipped;
		aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "default profile minus %zu relaxed group(s)%s, %zu deny rules; "
				  "32-bit and x32 syscall ABIs refused",
				  allow.n, lift ? " (setid: an image root)" : "", p->sc_rules);
	}
	aj_seccomp_profile_free(&prof);
	return r;
}

/* ---- resources without a cgroup ---------------------------------------------------------- */

/* Nothing stands in for a memory cgroup: the limit is not enforced. */
static void memory_degraded(struct aj_plan *p)
{
}

/* Since Linux 5.14 RLIMIT_NPROC is counted per user namespace, so in the sandbox's fresh
 * namespace it bounds exactly the sandbox's own tasks. */
static int pids_without_cgroup(struct aj_plan *p, struct aj_err *err)
{
	const struct aj_cgroup_env *cg = p->features->cgroup;

	aj_plan_add_rlimit(p, RLIMIT_NPROC, p->policy->limits.pids);
	aj_plan_set_layer(p, AJ_PL_PIDS, AJ_LS_ENFORCED,
			  "%lu tasks via RLIMIT_NPROC in the sandbox's user namespace (no "
			  "pids cgroup: %s); hits are not observable",
			  (unsigned long)p->policy->limits.pids, cg->why[AJ_CG_PIDS]);
	return 0;
}

/* ---- description ---------------------------------------------------------------------------- */

static const char *seccomp_profile(const struct aj_plan *p)
{
	return p->sc_owned ? "default-relaxed" : "default";
}

static void print_header(const struct aj_plan *p, FILE *f)
{
	fprintf(f, "agentjail: sandbox %s, %s mode, sandbox user %s (uid %u)\n", p->id,
		p->privileged ? "privileged" : "rootless",
		p->user_name && p->user_name[0] ? p->user_name : "-", p->uid);
}

const struct aj_plan_tier aj_plan_namespaces_tier = {
	.name = "namespaces",
	.usable = usable,
	.identity = identity,
	.setup = setup,
	.process = process,
	.landlock = landlock,
	.seccomp = seccomp,
	.memory_remedy = "run as root, or in a delegated cgroup (systemd-run --user --scope -p "
			 "Delegate=yes), or set limits.memory to null",
	.memory_degraded = memory_degraded,
	.pids_without_cgroup = pids_without_cgroup,
	.seccomp_profile = seccomp_profile,
	.print_header = print_header,
};
