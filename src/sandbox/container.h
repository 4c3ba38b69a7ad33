/* Containers: the same enforcement layers as every agentjail sandbox, in the process shape
 * containerd's runc shim expects. src/oci/ reads an OCI bundle into these structs; this
 * module knows nothing of the bundle's format.
 *
 * create: the caller (`agentjail create`, run by the shim) clones the container's init into
 *   new namespaces and the container's cgroup, and returns once init has built the root,
 *   dropped privileges, applied Landlock and agentjail's seccomp filter and is waiting on
 *   the start fifo. The caller then exits: init, its child, is re-parented to the shim (a
 *   child subreaper), which reaps it and reads the container's exit status from it. There
 *   is no monitor process: init is PID 1 of the container, starts the bundle's process when
 *   `start` writes to the fifo, forwards signals to it, reaps orphans, and exits with the
 *   process's status (128+N for a signal N, as containerd reports a signalled process).
 * exec: the caller joins the container's pid namespace, forks, and the child joins the other
 *   namespaces of init (one setns through init's pidfd), the cgroup, then applies the same
 *   layers and execs. The caller writes the pid file and exits; the child, too, is left to
 *   the shim.
 *
 * Descriptors in these structs are borrowed; nothing here frees them.
 */
#ifndef AJ_SANDBOX_CONTAINER_H
#define AJ_SANDBOX_CONTAINER_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/oci.h"
#include "common/err.h"
#include "common/strv.h"
#include "policy/plan.h"
#include "rules/caps.h"

#define AJ_CONTAINER_MAX_GROUPS 32
#define AJ_CONTAINER_MAX_RLIMITS 16
#define AJ_CONTAINER_MAX_NS 8

struct aj_container_rlimit {
	int resource;
	uint64_t soft, hard;
};

/* One process: the container's or an exec's (the bundle's "process", or `exec --process`). Its
 * strings are owned by whoever filled it (src/oci/spec.c frees them). */
struct aj_container_process {
	bool terminal;
	unsigned rows, cols; /* consoleSize, 0 if absent */
	uint32_t uid, gid;
	gid_t groups[AJ_CONTAINER_MAX_GROUPS];
	size_t n_groups;
	struct aj_strv args, env;
	char *cwd;
	uint64_t caps[AJ_CAPSET__COUNT]; /* the sets as given (1 << CAP_x) */
	bool no_new_privs;
	struct aj_container_rlimit rlimits[AJ_CONTAINER_MAX_RLIMITS];
	size_t n_rlimits;
	bool have_oom_score;
	int oom_score_adj;
};

struct aj_container_launch {
	struct aj_plan *plan;              /* ops[0] is the rootfs; Landlock; agentjail's seccomp */
	const struct aj_container_process *proc; /* args, env, cwd, user, rlimits, terminal */
	const struct sock_filter *filter;  /* the bundle's seccomp program, NULL if none */
	size_t filter_len;
	bool root_readonly;
	const char *hostname;  /* NULL: keep the (new) UTS namespace's */
	int join_fd[AJ_CONTAINER_MAX_NS]; /* namespaces to join (opened by the caller) */
	int join_type[AJ_CONTAINER_MAX_NS];
	const char *join_path[AJ_CONTAINER_MAX_NS]; /* for messages */
	size_t n_join;
	int joined; /* the CLONE_NEW* bits of join_type */
	const struct aj_strv *outside_sysctl; /* "/proc/sys/PATH=value", written once joined */
	const char *outside_hostname;         /* set in the joined uts namespace */
	struct aj_strv undo_sysctl; /* create: "PATH=value" as found before outside_sysctl */
	char undo_hostname[72];     /* create: the joined uts namespace's name, if changed */
	struct aj_strv *notes; /* create: what a joined namespace could not give (the report's) */
	int own_pidns;         /* create: our pid namespace while a joined one is our children's;
				* -1 (set by the caller) when none is */
	bool new_cgroupns;
	int console_fd; /* connected --console-socket, or -1 */
	int fifo_fd;    /* create: read end of the start fifo */
	struct aj_cgroup_oci *cg;
	const char *id_key;  /* create: share the host id range of this key (a pod's), or NULL */
	const char *scratch; /* create: a directory to make (and remove) for rootfs layers */
	/* exec */
	pid_t init_pid;
	uint64_t init_start;
	bool detach;
};

/* create: *pid is init's host pid. */
int aj_container_create(struct aj_container_launch *l, pid_t *pid, struct aj_err *err);
/* exec: *pid is the process's host pid; without detach, waits and sets *status (an exit code
 * in the shell's convention). */
int aj_container_exec(struct aj_container_launch *l, pid_t *pid, int *status, struct aj_err *err);

/* In the creating process, before the clone (container_join.c): joins the namespaces, writes
 * the sysctls and the hostname that belong to them, and makes the mounts of the bundle that
 * belong to them (mqueue, sysfs, proc) as detached trees of those namespaces. */
int aj_container_join(struct aj_container_launch *l, struct aj_err *err);
/* A create that failed: the joined namespaces' sysctls and hostname as join found them. */
void aj_container_join_undo(struct aj_container_launch *l);
/* After the clone: back to our own pid namespace for any later child. */
int aj_container_unjoin(struct aj_container_launch *l, struct aj_err *err);

/* In the creating process, before the clone: when the rootfs (ops[0]) is an overlayfs, sets
 * ops[0].tree_fd to the same overlay rebuilt over idmapped layers (container_rootfs.c); this
 * process moves to a private mount namespace for it. */
int aj_container_rootfs_tree(struct aj_plan *plan, const char *scratch, struct aj_err *err);

/* Shared by create and exec (container_proc.c). */
int aj_container_console(const struct aj_container_process *p, int console_fd, int *tty, struct aj_err *err);
int aj_container_rlimits(const struct aj_container_process *p, struct aj_err *err);
int aj_container_oom_score(pid_t pid, int adj, struct aj_err *err);
/* The bounding set, user and groups, the capabilities the setup needs (and `extra`, kept
 * beyond them), no_new_privs as the process asks, Landlock, agentjail's filter. */
int aj_container_confine(const struct aj_plan *plan, const struct aj_container_process *p,
			 uint64_t extra, struct aj_err *err);
/* init, once it started the process: every capability dropped but CAP_KILL over the
 * container's own user namespace (to pass signals on to the process and its children, and
 * to end what is left of the container in a joined pid namespace). */
int aj_container_init_caps(struct aj_err *err);
/* In the process that is about to exec: session, terminal, cwd, the bundle's filter and the
 * process's own capability sets (in the order no_new_privs requires), execve.
 * Returns only on failure, with an exit code for it. */
int aj_container_exec_process(const struct aj_container_process *p, int tty, const struct sock_filter *filter,
			size_t filter_len, struct aj_err *err);

#endif
