/* The gvisor tier's launch (docs/gvisor.md): the namespaces tier's child up to its network
 * (user, mount, pid, IPC, UTS, network and cgroup namespaces, the root filesystem built from
 * the plan, loopback, the proxy's socket), then, in place of the sandbox user and the
 * command, gVisor's runsc with an OCI bundle made of the plan. The child becomes init as in
 * the namespaces tier; the command it starts is runsc, which runs the plan's command on its
 * Sentry. runsc runs as root of the sandbox's user namespace (an unprivileged host id range)
 * under agentjail's seccomp filter for it, and is handed only pipes the supervisor made.
 *
 * runsc's own root (the root of this process once built, never the sandbox's): a tmpfs with
 *   /root     the sandbox's root as the plan built it (a recursive clone of it)
 *   /bundle   config.json (plan->gv_spec)
 *   /state    runsc's state directory (--root)
 *   /runsc    the runsc binary, bound from the host
 *   /proc, /dev  the sandbox's (this pid namespace's procfs, the minimal /dev), for runsc
 *   /tmp      runsc's scratch
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/lazylib.h"
#include "common/proctitle.h"
#include "common/trace.h"
#include "common/util.h"
#include "host/features.h"
#include "sandbox/init_internal.h"
#include "sandbox/launch_internal.h"
#include "sandbox/mount.h"
#include "sandbox/steps.h"
#include "sandbox/userns.h"

#define GV_OLD "/.old"

/* Directories the runsc root may be mounted on: the first the sandbox's root has. */
static const char *const gv_bases[] = {"/tmp", "/mnt", "/run", "/etc"};

static int clone_tree(const char *path, bool recursive, int *out, struct aj_err *err)
{
	*out = (int)syscall(SYS_open_tree, AT_FDCWD, path,
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
	return *out < 0 ? aj_err_sys(err, AJ_LAYER_GVISOR, "clone the mount tree \"%s\"", path) : 0;
}

static int attach_tree(int tree, const char *dst, struct aj_err *err)
{
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "attach \"%s\" in runsc's root", dst);
	return 0;
}

static int make_file(const char *path, const char *content, mode_t mode, struct aj_err *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	if (fd < 0 || (content && aj_write_all(fd, content, strlen(content)) < 0))
		return aj_err_sys(err, AJ_LAYER_GVISOR, "write \"%s\" in runsc's root", path);
	return 0;
}

/* The directories and files of runsc's root, in the current directory (its tmpfs). */
static int populate(const struct aj_plan *plan, struct aj_err *err)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {{"root", 0755}, {"proc", 0555}, {"dev", 0755}, {"bundle", 0700},
		    {"state", 0700}, {"tmp", 01777}, {&GV_OLD[1], 0700}};

	for (size_t i = 0; i < AJ_ARRAY_SIZE(dirs); i++)
		if (mkdir(dirs[i].path, dirs[i].mode) < 0)
			return aj_err_sys(err, AJ_LAYER_GVISOR, "mkdir \"%s\" in runsc's root",
					  dirs[i].path);
	if (make_file("runsc", NULL, 0755, err) < 0 ||
	    make_file("bundle/config.json", plan->gv_spec, 0600, err) < 0)
		return -1;
	return 0;
}

/* Called with the sandbox's root built as "/" and runsc's binary cloned from the host
 * (runsc_tree): makes runsc's root and pivots into it, the sandbox's root beneath at /root. */
static int runsc_root(const struct aj_plan *plan, int runsc_tree, struct aj_err *err)
{
	_cleanup_close_ int root = -1, proc = -1, dev = -1;
	const char *base = NULL;
	struct stat st;

	/* Clones taken before the tmpfs covers base, so that they do not hold it. */
	if (clone_tree("/", true, &root, err) < 0 || clone_tree("/proc", true, &proc, err) < 0 ||
	    clone_tree("/dev", true, &dev, err) < 0)
		return -1;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(gv_bases) && !base; i++)
		if (stat(gv_bases[i], &st) == 0 && S_ISDIR(st.st_mode))
			base = gv_bases[i];
	if (!base)
		return aj_err_set(err, AJ_LAYER_GVISOR, ENOENT,
				  "the sandbox's root has no /tmp, /mnt, /run or /etc to build "
				  "runsc's root on");
	if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "mount runsc's root tmpfs on \"%s\"", base);
	if (chdir(base) < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "chdir \"%s\"", base);
	if (populate(plan, err) < 0)
		return -1;
	if (attach_tree(root, "root", err) < 0 || attach_tree(proc, "proc", err) < 0 ||
	    attach_tree(dev, "dev", err) < 0 || attach_tree(runsc_tree, "runsc", err) < 0)
		return -1;
	if (syscall(SYS_pivot_root, ".", &GV_OLD[1]) < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "pivot_root into runsc's root");
	if (chdir("/") < 0 || umount2(GV_OLD, MNT_DETACH) < 0 || rmdir(GV_OLD) < 0)
		return aj_err_sys(err, AJ_LAYER_GVISOR, "detach the sandbox's root from runsc's");
	return 0;
}

/* The sequence, numbered as the namespaces tier's (launch.c) where the steps are the same. */
static int enter_sandbox(const struct aj_plan *plan, const struct aj_stdio *io, int sync_fd,
			 struct aj_err *err)
{
	const int keep[] = {io->in, io->out, io->err, sync_fd};
	_cleanup_close_ int runsc = -1;

	/* 1-3. */
	if (aj_step_wait_go(sync_fd, "supervisor", err) < 0)
		return -1;
	aj_step_undumpable();
	aj_proctitle_wipe_environment();
	if (aj_step_become_ns_root("sandbox's", err) < 0 || aj_step_cgroup_ns(err) < 0)
		return -1;
	/* runsc's binary, while the host's tree is this process's root; as root of the user
	 * namespace, so that it is opened with the sandbox's host ids. */
	if (clone_tree(plan->gv_runsc, false, &runsc, err) < 0)
		return -1;
	/* 4-5c. */
	if (aj_mount_build_root(plan, err) < 0)
		return -1;
	aj_trace("child: root filesystem built");
	if (aj_step_network(plan, plan->policy->hostname, err) < 0 ||
	    aj_step_pass_listener(plan, sync_fd, err) < 0 ||
	    aj_step_pass_host_ports(plan, sync_fd, err) < 0 ||
	    aj_step_pass_netsock(plan, sync_fd, err) < 0)
		return -1;
	/* runsc's root, with the sandbox's beneath it: the mounts need CAP_SYS_ADMIN. */
	if (runsc_root(plan, runsc, err) < 0)
		return -1;
	aj_trace("child: runsc root built");
	/* 6, 8. No rlimits on runsc: the plan's are the Sentry's (config.json), and runsc
	 * needs descriptors and threads of its own. */
	if (aj_step_place_fds(keep, (int)AJ_ARRAY_SIZE(keep), 0, AJ_STEP_CTL_FD, err) < 0 ||
	    aj_step_new_session(err) < 0)
		return -1;
	/* 10. becoming namespace root cleared the parent-death signal. */
	if (aj_step_die_with_parent(err) < 0 || aj_step_supervisor_alive(AJ_STEP_CTL_FD, err) < 0)
		return -1;
	/* 11, 13: inherited by runsc, which keeps the capabilities of the namespace's root. */
	if (aj_step_no_new_privs(err) < 0)
		return -1;
	return aj_step_seccomp(plan->sc_insns, plan->sc_len, err);
}

/* runsc's command line and environment, in fixed storage (nothing allocated after the fork). */
static char *gv_argv[16];
static char *gv_envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR=/tmp", NULL};

static void runsc_command(const struct aj_plan *plan, struct aj_plan *run)
{
	static char id[sizeof plan->id + 8];
	size_t n = 0;

	snprintf(id, sizeof id, "aj-%s", plan->id);
	gv_argv[n++] = "/runsc";
	gv_argv[n++] = "--root=/state";
	gv_argv[n++] = "--platform=" AJ_RUNSC_PLATFORM;
	/* The Sentry's sockets are the host's, in the network namespace agentjail made. */
	gv_argv[n++] = "--network=host";
	gv_argv[n++] = "--ignore-cgroups"; /* runsc runs in the sandbox's cgroup already */
	gv_argv[n++] = "--host-uds=none";
	gv_argv[n++] = "run";
	gv_argv[n++] = "--bundle=/bundle";
	gv_argv[n++] = id;
	gv_argv[n] = NULL;
	*run = *plan;
	run->argv.v = gv_argv;
	run->argv.n = n;
	run->env.v = gv_envp;
	run->env.n = AJ_ARRAY_SIZE(gv_envp) - 1;
	run->cwd = "/";
	run->init_root = false;
}

/* A persistent sandbox: runsc gets the control socket as its stdin, and the init inside the
 * Sentry (`agentjail __gvinit`, aj_gvisor_guest_init()) serves the supervisor over it: READY,
 * then exec and file requests, the client's descriptors received as the Sentry's imports of
 * them. This process only waits for runsc; runsc's own output (its errors) goes to a pipe of
 * ours, never to the caller's descriptors. If runsc ends with an error, the supervisor is
 * told (it may still be waiting for READY). */
static void __attribute__((noreturn)) serve_persistent(const struct aj_plan *plan)
{
	struct aj_plan run;
	struct aj_err err;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char out[512];
	size_t len = 0;
	ssize_t n;
	int fds[2], status = 0;
	pid_t pid;

	aj_err_clear(&err);
	runsc_command(plan, &run);
	if (pipe2(fds, O_CLOEXEC) < 0)
		aj_step_fail(&err, AJ_STEP_CTL_FD);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, AJ_STEP_CTL_FD, 0);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	if (posix_spawn(&pid, run.argv.v[0], &fa, &attr, run.argv.v, run.env.v) != 0) {
		aj_err_sys(&err, AJ_LAYER_GVISOR, "start runsc");
		aj_step_fail(&err, AJ_STEP_CTL_FD);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + len, sizeof out - 1 - len)) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && (len += (size_t)n) == sizeof out - 1)
			len = 0; /* keep the end of a long output */
	out[len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		aj_err_set(&err, AJ_LAYER_GVISOR, EIO, "runsc ended (status %d): %.400s", status,
			   len ? out : "no output");
		aj_step_fail(&err, AJ_STEP_CTL_FD);
	}
	_exit(0);
}

static void __attribute__((noreturn))
gvisor_child(const struct aj_plan *plan, const struct aj_stdio *io,
	     const struct aj_cgroup_join *join, int sync_fd)
{
	struct aj_plan run;
	struct aj_err err;

	aj_err_clear(&err);
	aj_proctitle_set("agentjail-init");
	aj_lazylib_forbid(); /* a root the sandbox controls is never searched for a library */
	aj_step_die_with_parent(NULL);
	if (aj_step_join_cgroup(join, &err) < 0 || enter_sandbox(plan, io, sync_fd, &err) < 0)
		aj_step_fail(&err, sync_fd);
	if (plan->argv.n == 0)
		serve_persistent(plan);
	runsc_command(plan, &run);
	aj_init_main(&run, AJ_STEP_CTL_FD);
}

/* ---- init inside the Sentry ----------------------------------------------------------------- */

/* "UID:GID[:G1,G2...]" into the plan's user. */
static int parse_user(const char *s, struct aj_plan *p)
{
	char *end;
	unsigned long v[2 + AJ_ARRAY_SIZE(p->groups)];
	size_t n = 0;

	while (n < AJ_ARRAY_SIZE(v)) {
		errno = 0;
		v[n++] = strtoul(s, &end, 10);
		if (errno || end == s || v[n - 1] > 0xfffffffeUL)
			return -1;
		if (!*end)
			break;
		if (*end != (n <= 2 ? ':' : ','))
			return -1;
		s = end + 1;
	}
	if (n < 2 || *end)
		return -1;
	p->uid = (uint32_t)v[0];
	p->gid = (uint32_t)v[1];
	p->n_groups = n - 2;
	for (size_t i = 2; i < n; i++)
		p->groups[i - 2] = (gid_t)v[i];
	return 0;
}

int aj_gvisor_guest_init(const char *user)
{
	static struct aj_plan plan;
	static char cwd[4096];
	sigset_t mask;
	int ctl = fcntl(0, F_DUPFD_CLOEXEC, 3), sfd;

	aj_lazylib_forbid(); /* exec'd in the Sentry, on the sandbox's root */
	/* stdin is the control socket (init's own stdio goes to /dev/null below). */
	if (ctl < 0 || !getcwd(cwd, sizeof cwd))
		_exit(125);
	/* Started as the sandbox user, which every command and file operation runs as; or as
	 * an image's uid 0 (runsc maps the sandbox's whole id range), told the sandbox user. */
	plan.tier = AJ_TIER_GVISOR;
	plan.privileged = true;
	plan.uid = (uint32_t)getuid();
	plan.gid = (uint32_t)getgid();
	if (user && (getuid() != 0 || parse_user(user, &plan) < 0)) {
		fprintf(stderr, "agentjail: __gvinit: bad user \"%s\"\n", user);
		return 125;
	}
	plan.init_root = user != NULL;
	plan.cwd = cwd;
	/* The sandbox's processes run as the same user: they may not trace or read init. */
	prctl(PR_SET_DUMPABLE, 0);
	/* A stream's reader that leaves must not end init (its sends say EPIPE instead); the
	 * commands start with every disposition at its default (aj_init_spawn). */
	signal(SIGPIPE, SIG_IGN);
	sfd = aj_init_setup_signals(&mask);
	aj_init_serve(&plan, ctl, sfd);
}

/* ---- supervisor side -------------------------------------------------------------------- */

static int gvisor_prepare(const struct aj_plan *plan, struct aj_err *err)
{
	if (!plan->gv_spec || !plan->gv_runsc || !plan->privileged)
		return aj_err_set(err, AJ_LAYER_GVISOR, EINVAL,
				  "a gvisor plan without runsc's bundle");
	return 0;
}

static int gvisor_fork_failed(int errnum, struct aj_err *err)
{
	return aj_userns_fail(err, errnum, "clone into new namespaces");
}

static int gvisor_explain(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	return -1;
}

static int gvisor_before_go(const struct aj_plan *plan, pid_t pid, struct aj_err *err)
{
	return aj_userns_write_maps(pid, plan, err);
}

/* runsc, its gofer and its Sentry are in the pid namespace of init and die with it. */
static void gvisor_kill_tree(pid_t spare, const struct aj_warn *warn)
{
}

static void gvisor_cleanup(const struct aj_plan *plan, const struct aj_warn *warn)
{
}

const struct aj_launch_ops aj_tier_gvisor_launch = {
	.prepare = gvisor_prepare,
	.child = gvisor_child,
	.fork_failed = gvisor_fork_failed,
	.before_go = gvisor_before_go,
	.explain = gvisor_explain,
	.kill_tree = gvisor_kill_tree,
	.cleanup = gvisor_cleanup,
};
