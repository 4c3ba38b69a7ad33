/* The gvisor tier's plan (docs/gvisor.md): the namespaces tier's identity, namespaces and root
 * filesystem, with gVisor's runsc run inside them instead of the command. The command runs on
 * runsc's Sentry, a kernel in user space, from an OCI bundle made of this plan
 * (aj_plan_gvisor_spec(): the root agentjail built, the command, its user, environment,
 * rlimits and hostname). runsc itself runs as root of the sandbox's user namespace (an
 * unprivileged host id range), under a seccomp filter of its own (gvisor-tier.rules); Landlock
 * cannot hold it (see landlock() below). Its table of operations (aj_plan_gvisor_tier) is at
 * the end.
 */
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "policy/plan_internal.h"
#include "rules/seccomp.h"

/* The runsc the probes found, or where it is now: only a plan of this tier looks for it. */
static const struct aj_runsc *runsc_of(const struct aj_features *f, struct aj_runsc *buf)
{
	if (f->runsc.searched)
		return &f->runsc;
	aj_runsc_find(buf);
	return buf;
}

static bool usable(const struct aj_features *f, char *detail, size_t len)
{
	struct aj_runsc buf;
	const struct aj_runsc *r = runsc_of(f, &buf);
	char ns[256];

	if (!aj_plan_namespaces_tier.usable(f, ns, sizeof ns))
		snprintf(detail, len, "%s", ns);
	else if (!f->privileged)
		snprintf(detail, len, "not rootless: runsc needs the sandbox's whole id range "
				      "(its Sentry and gofer switch to uid 65534), which only root "
				      "maps");
	else if (!r->usable)
		snprintf(detail, len, "%s", r->why);
	else
		snprintf(detail, len, "runsc %s at %s (from %s), platform %s",
			 r->version[0] ? r->version : "(version not probed)", r->path, r->from,
			 AJ_RUNSC_PLATFORM);
	return aj_plan_namespaces_tier.usable(f, ns, sizeof ns) && f->privileged && r->usable;
}

/* ---- identity and setup ------------------------------------------------------------------- */

static int identity(struct aj_plan *p, struct aj_err *err)
{
	struct aj_runsc buf;
	const struct aj_runsc *r = runsc_of(p->features, &buf);

	if (!r->usable)
		return aj_err_set(err, AJ_LAYER_GVISOR, ENOENT, "the gvisor tier needs runsc: %s",
				  r->why),
		       aj_err_hint(err, "apt-get install runsc, or use --tier namespaces");
	if (!p->features->privileged && !p->features->root_incapable)
		return aj_err_set(err, AJ_LAYER_GVISOR, EPERM,
				  "the gvisor tier needs root: runsc's Sentry and gofer switch to "
				  "uid 65534 and make namespaces of their own, which needs the "
				  "sandbox's whole id range mapped, and rootless mode maps one id"),
		       aj_err_hint(err, "run agentjail as root, or use --tier namespaces");
	if (aj_plan_namespaces_tier.identity(p, err) < 0)
		return -1;
	p->gv_runsc = aj_xstrdup(r->path);
	p->pipes_only = true;
	aj_plan_set_layer(p, AJ_PL_USERNS, AJ_LS_ENFORCED,
			  "runsc, its gofer and its Sentry run as root of the sandbox's user "
			  "namespace: an unprivileged host uid range allocated per sandbox; the "
			  "sandbox user is uid %u of the Sentry",
			  p->uid);
	return 0;
}

/* The shared objects this process was loaded with (every one agentjail's binary needs), each
 * bound read-only under AJ_GV_LIB_DIR; the dynamic loader is the one loaded at AT_BASE. */
struct libs {
	struct aj_plan *p;
	uintptr_t base;
	size_t n;
};

static int add_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct libs *l = arg;
	const char *path = info->dlpi_name, *name;
	char dst[256];

	(void)size;
	if (!path || path[0] != '/') /* the program itself (""), the vDSO */
		return 0;
	name = strrchr(path, '/') + 1;
	snprintf(dst, sizeof dst, "%s/%s", AJ_GV_LIB_DIR, name);
	aj_plan_add_op(l->p, AJ_OP_BIND, dst, path, AJ_OPF_RO, 0,
		       "a shared object of agentjail's init (the host's, read-only)");
	if (info->dlpi_addr == l->base && !l->p->gv_loader)
		l->p->gv_loader = aj_xstrdup(dst);
	l->n++;
	return 0;
}

/* A persistent sandbox's init runs inside the Sentry: it is this binary, started as the
 * sandbox user (`agentjail __gvinit`) through the host's dynamic loader with the host's
 * libraries, all bound read-only on a tmpfs of their own at AJ_GV_INIT_DIR: so it runs on any
 * root, an image's whatever libc it has (or none), and nothing is written into the root (an
 * image's init layer has the mount point). */
static int guest_init(struct aj_plan *p, struct aj_err *err)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	struct libs l = {.p = p, .base = (uintptr_t)getauxval(AT_BASE)};

	if (n < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "readlink /proc/self/exe");
	self[n] = '\0';
	aj_plan_add_op(p, AJ_OP_TMPFS, AJ_GV_INIT_DIR, NULL, 0, 0,
		       "the gvisor tier's init inside the Sentry and what it is loaded with")
		->opts = aj_xstrdup("mode=0755,size=64k");
	aj_plan_add_op(p, AJ_OP_BIND, AJ_GV_INIT, self, AJ_OPF_RO, 0,
		       "agentjail's init for the Sentry (this binary, read-only)");
	aj_plan_add_op(p, AJ_OP_DIR, AJ_GV_LIB_DIR, NULL, 0, 0,
		       "the dynamic loader and libraries of agentjail's init");
	dl_iterate_phdr(add_lib, &l);
	if (!p->gv_loader)
		return aj_err_set(err, AJ_LAYER_GVISOR, ENOENT,
				  "agentjail's dynamic loader was not found among its %zu shared "
				  "objects: its init cannot be started inside the Sentry",
				  l.n);
	aj_plan_add_op(p, AJ_OP_SEAL, AJ_GV_INIT_DIR, NULL, AJ_OPF_RO | AJ_OPF_NODEV, 0,
		       "agentjail's init and its libraries: read-only");
	return 0;
}

/* The namespaces tier's namespaces and root; the layers say who holds what in this tier. */
static int setup(struct aj_plan *p, const struct aj_workspace_spec *ws, struct aj_err *err)
{
	if (aj_plan_namespaces_tier.setup(p, ws, err) < 0)
		return -1;
	if (p->persistent && guest_init(p, err) < 0)
		return -1;
	aj_plan_set_layer(p, AJ_PL_PIDNS, AJ_LS_ENFORCED,
			  "the Sentry's own process table (host processes invisible), inside "
			  "agentjail's pid namespace, which holds runsc and dies with its init");
	aj_plan_set_layer(p, AJ_PL_MOUNTNS, AJ_LS_ENFORCED,
			  "the Sentry's own mount table over the root agentjail built in its "
			  "private mount namespace; the gofer serves only that root");
	return 0;
}

static int process(struct aj_plan *p, struct aj_err *err)
{
	aj_plan_set_layer(p, AJ_PL_SESSION, AJ_LS_ENFORCED,
			  "the command's terminal is the Sentry's; runsc is handed only pipes "
			  "agentjail made, never the caller's descriptors");
	return 0;
}

/* ---- Landlock and seccomp ------------------------------------------------------------------ */

/* A Landlock domain forbids mount, umount and pivot_root (whatever the rules), which runsc's
 * gofer and Sentry call to build their own roots: Landlock on runsc would stop it. What it
 * would hold, the gofer holds: it serves files of the root agentjail built only. */
static int landlock(struct aj_plan *p, struct aj_err *err)
{
	p->landlock_abi = 0;
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_FS, AJ_LS_ABSENT,
			  "not on runsc: a Landlock domain refuses the mount and pivot_root calls "
			  "its gofer and Sentry make; the sandbox's file access goes through the "
			  "gofer, which serves only the root agentjail built");
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_NET, AJ_LS_OFF,
			  "not needed: the network namespace holds only the sandbox's loopback%s",
			  p->policy->net_mode == AJ_NET_PROXY ? " and the proxy's port" : "");
	aj_plan_set_layer(p, AJ_PL_LANDLOCK_SCOPE, AJ_LS_ABSENT,
			  "signals and abstract unix sockets of the sandbox are the Sentry's own");
	return 0;
}

static int seccomp(struct aj_plan *p, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv none = AJ_STRV_INIT;
	struct aj_sc_profile prof;
	size_t skipped = 0;
	int r;

	if (p->policy->syscalls_allow.n)
		return aj_err_set(err, AJ_LAYER_POLICY, 0,
				  "syscalls.allow: in the gvisor tier the sandbox's system calls "
				  "reach gVisor's Sentry, not a host filter; there is nothing to "
				  "relax");
	if (!p->features->seccomp)
		return aj_plan_need(p, AJ_PL_SECCOMP, "seccomp", NULL, AJ_LAYER_SECCOMP,
				    p->features->seccomp_why,
				    "use a kernel with CONFIG_SECCOMP_FILTER", err);
	if (aj_seccomp_parse(aj_seccomp_gvisor_rules, &prof, err) < 0)
		return -1;
	r = aj_seccomp_compile(&prof, &none, &p->sc_owned, &p->sc_len, &skipped, err);
	p->sc_insns = p->sc_owned;
	p->sc_rules = prof.n - skipped;
	aj_seccomp_profile_free(&prof);
	if (r == 0)
		aj_plan_set_layer(p, AJ_PL_SECCOMP, AJ_LS_ENFORCED,
				  "the sandbox's system calls reach the Sentry; runsc, its gofer "
				  "and its Sentry run under %zu deny rules of agentjail's "
				  "(gvisor-tier) below runsc's own filters",
				  p->sc_rules);
	return r;
}

/* ---- resources without a cgroup ---------------------------------------------------------- */

static void memory_degraded(struct aj_plan *p)
{
}

/* RLIMIT_NPROC would count runsc's threads, not the sandbox's processes. */
static int pids_without_cgroup(struct aj_plan *p, struct aj_err *err)
{
	return aj_plan_need(p, AJ_PL_PIDS, "pids", NULL, AJ_LAYER_CGROUP,
			    p->features->cgroup->why[AJ_CG_PIDS],
			    "run where a pids cgroup controller is usable, or set limits.pids to "
			    "null",
			    err);
}

/* ---- description ---------------------------------------------------------------------------- */

static const char *seccomp_profile(const struct aj_plan *p)
{
	return "gvisor-tier";
}

static void print_header(const struct aj_plan *p, FILE *f)
{
	fprintf(f, "agentjail: sandbox %s, gvisor tier (runsc %s, platform %s), sandbox user %s "
		   "(uid %u)\n",
		p->id, p->gv_runsc ? p->gv_runsc : "-", AJ_RUNSC_PLATFORM,
		p->user_name && p->user_name[0] ? p->user_name : "-", p->uid);
}

const struct aj_plan_tier aj_plan_gvisor_tier = {
	.name = "gvisor",
	.usable = usable,
	.identity = identity,
	.setup = setup,
	.process = process,
	.landlock = landlock,
	.seccomp = seccomp,
	.memory_remedy = "run as root with a usable memory cgroup controller, or set "
			 "limits.memory to null",
	.memory_degraded = memory_degraded,
	.pids_without_cgroup = pids_without_cgroup,
	.seccomp_profile = seccomp_profile,
	.print_header = print_header,
	.finish = aj_plan_gvisor_spec,
};
