#include "host/runsc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

static bool executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static bool search_path(struct aj_runsc *r)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof dirs, "%s",
		 path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/')
			continue; /* a relative PATH entry would depend on the caller's directory */
		if ((size_t)snprintf(r->path, sizeof r->path, "%s/runsc", d) < sizeof r->path &&
		    executable_file(r->path))
			return true;
	}
	r->path[0] = '\0';
	return false;
}

void aj_runsc_find(struct aj_runsc *r)
{
	const char *env = getenv(AJ_RUNSC_ENV);
	_cleanup_free_ char *scope = NULL;

	memset(r, 0, sizeof *r);
	r->searched = true;
	if (env && *env) {
		snprintf(r->from, sizeof r->from, "%s", AJ_RUNSC_ENV);
		snprintf(r->path, sizeof r->path, "%s", env);
		r->found = env[0] == '/' && strlen(env) < sizeof r->path && executable_file(env);
		if (!r->found)
			snprintf(r->why, sizeof r->why,
				 "%s=\"%.160s\" is not an absolute path to an executable file",
				 AJ_RUNSC_ENV, env);
	} else {
		snprintf(r->from, sizeof r->from, "PATH");
		r->found = search_path(r);
		if (!r->found)
			snprintf(r->why, sizeof r->why,
				 "runsc not found on PATH: install Debian's runsc package (apt-get "
				 "install runsc) or set %s to its path",
				 AJ_RUNSC_ENV);
	}
	if (!r->found)
		return;
	scope = aj_read_file("/proc/sys/kernel/yama/ptrace_scope", 16, NULL);
	if (scope && atoi(scope) >= 3) {
		snprintf(r->why, sizeof r->why,
			 "kernel.yama.ptrace_scope is 3: runsc's ptrace platform cannot trace the "
			 "sandbox's processes");
		return;
	}
	r->usable = true;
}

void aj_runsc_probe_version(struct aj_runsc *r)
{
	int fds[2], in[2];
	char buf[256];
	ssize_t n, len = 0;
	pid_t pid;

	r->version[0] = '\0';
	if (!r->found || pipe2(fds, O_CLOEXEC) < 0)
		return;
	if (pipe2(in, O_CLOEXEC) < 0) {
		close(fds[0]);
		close(fds[1]);
		return;
	}
	/* runsc is handed only descriptors of ours, never the host's /dev/null (docs/gvisor.md):
	 * stdin is an empty pipe. */
	close(in[1]);
	pid = fork();
	if (pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
			_exit(127);
		execl(r->path, "runsc", "--version", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(fds[1]);
	while (pid > 0 && len < (ssize_t)sizeof buf - 1 &&
	       ((n = read(fds[0], buf + len, sizeof buf - 1 - (size_t)len)) > 0 ||
		(n < 0 && errno == EINTR)))
		len += n > 0 ? n : 0;
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	buf[len] = '\0';
	/* "runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n" */
	if (sscanf(buf, "runsc version %63s", r->version) != 1)
		r->version[0] = '\0';
}
