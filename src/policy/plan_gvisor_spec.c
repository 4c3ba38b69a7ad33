/* The gvisor tier's plan as data for runsc and for people: the OCI runtime spec (config.json)
 * runsc runs the command from, made of the plan (aj_plan_gvisor_spec(), the tier's `finish`),
 * and the tier's part of the plan's JSON, layer by layer: what gVisor enforces, what agentjail
 * still enforces around it, and what the host kernel still sees (aj_plan_gvisor_json()). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "policy/plan_internal.h"

/* The bundle's paths in the root runsc is given (sandbox/tier_gvisor.c makes them). */
#define GV_ROOTFS "/root"

static const char *rlimit_name(int resource)
{
	switch (resource) {
	case RLIMIT_NOFILE: return "RLIMIT_NOFILE";
	case RLIMIT_CORE: return "RLIMIT_CORE";
	case RLIMIT_FSIZE: return "RLIMIT_FSIZE";
	case RLIMIT_NPROC: return "RLIMIT_NPROC";
	case RLIMIT_AS: return "RLIMIT_AS";
	case RLIMIT_STACK: return "RLIMIT_STACK";
	default: return NULL;
	}
}

static json_t *strv_json(const struct aj_strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; i < v->n; i++)
		json_array_append_new(a, json_string(v->v[i]));
	return a;
}

/* A persistent sandbox runs agentjail's init, which serves the supervisor, started by the
 * host's dynamic loader with the host's libraries (plan_gvisor.c). An image root's init is its
 * uid 0 (plan->init_root) and is told the sandbox user, which it starts commands as (and
 * works with the files as): "UID:GID[:G1,G2...]". */
static json_t *guest_init_args(const struct aj_plan *p)
{
	json_t *args = json_pack("[s, s, s, s, s]", p->gv_loader ? p->gv_loader : "",
				 "--library-path", AJ_GV_LIB_DIR, AJ_GV_INIT, "__gvinit");
	char user[48 + 32 * 12];
	size_t n;

	if (!p->init_root)
		return args;
	n = (size_t)snprintf(user, sizeof user, "%u:%u", p->uid, p->gid);
	for (size_t i = 0; i < p->n_groups && n < sizeof user; i++)
		n += (size_t)snprintf(user + n, sizeof user - n, "%c%u", i ? ',' : ':',
				      (unsigned)p->groups[i]);
	json_array_append_new(args, json_string(user));
	return args;
}

static json_t *process_json(const struct aj_plan *p)
{
	json_t *rl = json_array(), *groups = json_array(), *caps, *args, *env;
	bool root = p->uid == 0 || (p->persistent && p->init_root);

	for (size_t i = 0; i < p->n_rlimits; i++) {
		const char *n = rlimit_name(p->rlimits[i].resource);
		if (n)
			json_array_append_new(rl, json_pack("{s:s, s:I, s:I}", "type", n, "hard",
							    (json_int_t)p->rlimits[i].value, "soft",
							    (json_int_t)p->rlimits[i].value));
	}
	for (size_t i = 0; i < p->n_groups && !(p->persistent && p->init_root); i++)
		json_array_append_new(groups, json_integer(p->groups[i]));
	/* An image's root keeps the plan's set; every other user holds none. */
	caps = aj_plan_caps_json(root ? p->caps_keep : 0);
	args = p->persistent ? guest_init_args(p) : strv_json(&p->argv);
	/* The init's own environment is none of the sandbox's (each command gets its own from
	 * the supervisor): LD_* variables of a policy must not reach the loader that starts it. */
	env = p->persistent ? json_pack("[s]", "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
			    : strv_json(&p->env);
	/* caps goes into three members: two new references, and the one it came with. */
	return json_pack("{s:b, s:{s:I, s:I, s:o}, s:o, s:o, s:s, s:{s:O, s:O, s:o, s:o}, "
			 "s:o, s:b}",
			 "terminal", 0, "user", "uid", (json_int_t)(root ? 0 : p->uid), "gid",
			 (json_int_t)(root ? 0 : p->gid), "additionalGids", groups, "args", args,
			 "env", env, "cwd", p->cwd ? p->cwd : "/", "capabilities",
			 "bounding", caps, "effective", caps, "permitted", caps, "inheritable",
			 json_array(), "rlimits", rl, "noNewPrivileges", 1);
}

/* The Sentry's own kernel file systems (runsc adds its own /sys); the rest of the tree is the
 * root agentjail built, served by the gofer. /dev/shm has the size of the plan's tmpfs. */
static json_t *mounts_json(const struct aj_plan *p)
{
	char shm[48];

	snprintf(shm, sizeof shm, "size=%llu", (unsigned long long)p->policy->limits.tmpfs_size);
	return json_pack(
		"[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s,s,s]}, {s:s, s:s, s:s, s:[s,s,s,s]}, "
		"{s:s, s:s, s:s, s:[s,s,s,s,s]}]",
		"destination", "/proc", "type", "proc", "source", "proc",
		"destination", "/dev", "type", "tmpfs", "source", "tmpfs", "options", "nosuid",
		"mode=755", "size=65536k",
		"destination", "/dev/pts", "type", "devpts", "source", "devpts", "options", "nosuid",
		"noexec", "newinstance", "ptmxmode=0666",
		"destination", "/dev/shm", "type", "tmpfs", "source", "shm", "options", "nosuid",
		"noexec", "nodev", "mode=1777", shm);
}

int aj_plan_gvisor_spec(struct aj_plan *p, struct aj_err *err)
{
	_cleanup_json_ json_t *spec = NULL;

	spec = json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:{s:[{s:s},{s:s},{s:s},{s:s}]}}",
			 "ociVersion", "1.0.2", "process", process_json(p), "root", "path",
			 GV_ROOTFS, "readonly", 0, "hostname", p->policy->hostname, "mounts",
			 mounts_json(p), "linux", "namespaces", "type", "pid", "type", "ipc", "type",
			 "uts", "type", "mount");
	if (!spec)
		return aj_err_set(err, AJ_LAYER_GVISOR, EINVAL,
				  "the command, environment or hostname is not valid UTF-8 for "
				  "runsc's config.json");
	p->gv_spec = json_dumps(spec, JSON_COMPACT);
	return p->gv_spec ? 0 : aj_err_set(err, AJ_LAYER_GVISOR, EINVAL, "config.json");
}

static json_t *lines(const char *const *v)
{
	json_t *a = json_array();

	for (; *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

json_t *aj_plan_gvisor_json(const struct aj_plan *p)
{
	/* One line each (no literal spans two: a missing comma would join them silently). */
	static const char *const gvisor[] = {
		"every system call of the sandbox: served by the Sentry, a kernel in user space",
		"the host kernel's syscall, file, procfs and device code: out of the sandbox's reach",
		"processes, mounts, signals, IPC, terminals and /proc: the Sentry's own",
		"runsc's own seccomp filters on its Sentry and its gofer",
		NULL,
	};
	static const char *const agentjail[] = {
		"the root filesystem: built from the plan, handed to runsc as its bundle's root",
		"the user namespace: runsc runs as root of an unprivileged host id range",
		"the network namespace: loopback and the egress proxy's port only",
		"the cgroup: memory, pids and CPU limits on runsc, its gofer and its Sentry",
		"a pid namespace: runsc and everything it starts die with agentjail's init",
		"seccomp (gvisor-tier rules) and no_new_privs on runsc itself",
		"the supervisor: timeout, output cap, events, egress proxy and credentials",
		NULL,
	};
	static const char *const host[] = {
		"the Sentry's and the gofer's system calls, bounded by runsc's and agentjail's filters",
		"the gofer's file access to the root agentjail built, as the sandbox's host ids",
		"the sandbox's socket calls, on the host's network stack in its network namespace",
		"the ptrace platform's stub processes, one per address space of the sandbox",
		NULL,
	};

	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "runsc", p->gv_runsc ? p->gv_runsc : "",
			 "platform", AJ_RUNSC_PLATFORM, "network",
			 p->policy->net_mode == AJ_NET_HOST ? "host's network (network.mode host)"
							    : "the sandbox's network namespace",
			 "gvisor_enforces", lines(gvisor), "agentjail_enforces", lines(agentjail),
			 "host_kernel_sees", lines(host));
}
