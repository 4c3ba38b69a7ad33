#include "host/subids.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"

static const char *const helper_dirs[] = {"/usr/bin", "/bin", "/usr/sbin", "/sbin"};

/* The setuid helper `name` (owned by root, executable): its path into buf, or false. */
static bool find_helper(const char *name, char *buf, size_t len)
{
	struct stat st;

	for (size_t i = 0; i < sizeof helper_dirs / sizeof helper_dirs[0]; i++) {
		snprintf(buf, len, "%s/%s", helper_dirs[i], name);
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
		    (st.st_mode & S_IXOTH))
			return true;
	}
	return false;
}

int aj_subids_parse(const char *text, const char *name, uint32_t id, uint32_t need,
		    uint32_t *start)
{
	char idstr[16];

	snprintf(idstr, sizeof idstr, "%u", id);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		char buf[512], *owner, *s, *c, *rest;
		uint64_t first, count;

		if (n < sizeof buf) {
			memcpy(buf, line, n);
			buf[n] = '\0';
			owner = strtok_r(buf, ":", &rest);
			s = strtok_r(NULL, ":", &rest);
			c = strtok_r(NULL, ":\r", &rest);
			if (owner && s && c && (strcmp(owner, name ? name : "") == 0 ||
						strcmp(owner, idstr) == 0) &&
			    aj_parse_u64(s, &first) == 0 && aj_parse_u64(c, &count) == 0 &&
			    count >= need && first > 0 && first + count <= UINT32_MAX) {
				*start = (uint32_t)first;
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

static bool range_of(const char *file, const char *name, uint32_t id, uint32_t *start,
		     char *why, size_t len)
{
	_cleanup_free_ char *text = aj_read_file(file, 1 << 20, NULL);

	if (!text) {
		snprintf(why, len, "%s cannot be read: %s", file, strerror(errno));
		return false;
	}
	if (aj_subids_parse(text, name, id, AJ_SUBIDS_NEEDED, start) < 0) {
		snprintf(why, len, "%s has no range of %u ids for %s (uid %u)", file,
			 AJ_SUBIDS_NEEDED, name, id);
		return false;
	}
	return true;
}

void aj_subids_probe(struct aj_subids *s)
{
	char path[64];
	struct passwd *pw;

	memset(s, 0, sizeof *s);
	s->uid = (uint32_t)getuid();
	s->gid = (uint32_t)getgid();
	if (s->uid == 0 || geteuid() == 0) {
		snprintf(s->why, sizeof s->why, "root maps ranges of its own");
		return;
	}
	if (!find_helper("newuidmap", path, sizeof path) ||
	    !find_helper("newgidmap", path, sizeof path)) {
		snprintf(s->why, sizeof s->why,
			 "newuidmap and newgidmap are not installed (Debian: the uidmap package)");
		return;
	}
	pw = getpwuid(s->uid);
	if (!pw) {
		snprintf(s->why, sizeof s->why,
			 "uid %u has no user name, which newuidmap looks its ranges up by", s->uid);
		return;
	}
	if (!range_of("/etc/subuid", pw->pw_name, s->uid, &s->sub_uid, s->why, sizeof s->why) ||
	    !range_of("/etc/subgid", pw->pw_name, s->uid, &s->sub_gid, s->why, sizeof s->why))
		return;
	s->on = true;
}

/* helper PID 0 OWN 1 1 FIRST 65535, with no environment; its complaint goes to stderr. */
static int run_helper(const char *name, pid_t pid, uint32_t own, uint32_t first,
		      struct aj_err *err)
{
	char path[64], a_pid[16], a_own[16], a_first[16], a_count[16];
	char *argv[] = {path, a_pid, "0", a_own, "1", "1", a_first, a_count, NULL};
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	pid_t h;
	int status, e;

	if (!find_helper(name, path, sizeof path))
		return aj_err_set(err, AJ_LAYER_USERNS, ENOENT, "%s is not installed", name);
	snprintf(a_pid, sizeof a_pid, "%d", (int)pid);
	snprintf(a_own, sizeof a_own, "%u", own);
	snprintf(a_first, sizeof a_first, "%u", first);
	snprintf(a_count, sizeof a_count, "%u", AJ_SUBIDS_NEEDED);
	e = posix_spawn(&h, path, NULL, NULL, argv, envp);
	if (e)
		return aj_err_set(err, AJ_LAYER_USERNS, e, "run %s: %s", path, strerror(e));
	while (waitpid(h, &status, 0) < 0)
		if (errno != EINTR)
			return aj_err_sys(err, AJ_LAYER_USERNS, "wait for %s", name);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return aj_err_set(err, AJ_LAYER_USERNS, EPERM,
				  "%s %s 0 %u 1 1 %u %u failed (status 0x%x)", path, a_pid, own,
				  first, AJ_SUBIDS_NEEDED, status),
		       aj_err_hint(err, "check the caller's ranges in /etc/subuid and /etc/subgid, "
					"and that %s is setuid root",
				   path);
	return 0;
}

int aj_subids_map(const struct aj_subids *s, pid_t pid, struct aj_err *err)
{
	if (!s->on)
		return aj_err_set(err, AJ_LAYER_USERNS, ENOENT, "no subordinate ids: %s", s->why);
	if (run_helper("newuidmap", pid, s->uid, s->sub_uid, err) < 0)
		return -1;
	return run_helper("newgidmap", pid, s->gid, s->sub_gid, err);
}

int aj_subids_child_enter(int sync_fd, struct aj_err *err)
{
	char go = 0;

	if (unshare(CLONE_NEWUSER) < 0) {
		aj_err_sys(err, AJ_LAYER_USERNS, "unshare a user namespace");
		(void)aj_write_all(sync_fd, "e", 1); /* the parent reads the reply that follows */
		return -1;
	}
	if (aj_write_all(sync_fd, "u", 1) < 0 || aj_read_full(sync_fd, &go, 1) != 1 || go != 'g')
		return aj_err_set(err, AJ_LAYER_USERNS, EPROTO,
				  "the parent did not map the user namespace");
	/* The map is written: become its root (the caller's own ids). */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "become uid 0 of the user namespace");
	return 0;
}

int aj_subids_parent_map(const struct aj_subids *s, pid_t pid, int sync_fd, struct aj_err *err)
{
	char c = 0;

	if (aj_read_full(sync_fd, &c, 1) != 1 || c != 'u') {
		aj_err_set(err, AJ_LAYER_USERNS, EPROTO,
			   "the child ended before its user namespace was made");
		return c == 'e' ? -2 : -1;
	}
	if (aj_subids_map(s, pid, err) < 0)
		return -1;
	if (aj_write_all(sync_fd, "g", 1) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "let the mapped child go on");
	return 0;
}

struct run_reply {
	int rc;
	struct aj_err err;
};

int aj_subids_run(const struct aj_subids *s, int (*fn)(void *arg, struct aj_err *err), void *arg,
		  struct aj_err *err)
{
	struct run_reply r;
	int sv[2], status = 0;
	pid_t pid;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "socketpair");
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return aj_err_sys(err, AJ_LAYER_USERNS, "fork");
	}
	if (pid == 0) {
		close(sv[0]);
		memset(&r, 0, sizeof r);
		r.rc = aj_subids_child_enter(sv[1], &r.err);
		if (r.rc == 0)
			r.rc = fn(arg, &r.err) < 0 ? -1 : 0;
		_exit(aj_write_all(sv[1], &r, sizeof r) < 0 ? 1 : 0);
	}
	close(sv[1]);
	if ((n = aj_subids_parent_map(s, pid, sv[0], err)) < 0) {
		/* -2: the child failed first and says why */
		if (n == -2 && aj_read_full(sv[0], &r, sizeof r) == (ssize_t)sizeof r && r.rc < 0)
			*err = r.err;
		close(sv[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
		}
		return -1;
	}
	n = aj_read_full(sv[0], &r, sizeof r);
	close(sv[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (n != (ssize_t)sizeof r)
		return aj_err_set(err, AJ_LAYER_USERNS, EIO,
				  "the helper in the user namespace ended without a result "
				  "(status 0x%x)",
				  status);
	if (r.rc < 0) {
		*err = r.err;
		return -1;
	}
	return 0;
}

int aj_subids_elevate(int (*fn)(void *arg, struct aj_err *err), void *arg, struct aj_err *err)
{
	static struct aj_subids mine;
	static bool probed;

	if (!probed) {
		aj_subids_probe(&mine);
		probed = true;
	}
	return mine.on ? aj_subids_run(&mine, fn, arg, err) : -1;
}
