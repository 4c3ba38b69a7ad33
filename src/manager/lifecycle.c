/* Compute of persistent sandboxes: starting a supervisor, and asking it to pause, resume or
 * stop. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "control/client.h"
#include "manager/internal.h"
#include "workspace/layers.h"

#define SPAWN_TIMEOUT_MS 60000
#define STOP_TIMEOUT_MS 30000

/* The supervisor must not be our child (we exit soon) nor share our session: double fork,
 * new session, exec of this very binary. Its stderr goes to a log beside the workspace. */
static void exec_supervisor(struct aj_mgr *m, const char *id, int ready_fd)
{
	char log[4200], fdbuf[16];
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), logfd;

	setsid();
	if (fork() != 0)
		_exit(0);
	aj_ws_path(log, sizeof log, m->state, "sandboxes", id, "supervisor.log");
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	dup2(null, 0);
	dup2(null, 1);
	dup2(logfd >= 0 ? logfd : null, 2);
	if (dup2(ready_fd, 3) < 0)
		_exit(127);
	snprintf(fdbuf, sizeof fdbuf, "%d", 3);
	execl("/proc/self/exe", "agentjail", "__supervise", "--state-dir", m->state, "--ready-fd",
	      fdbuf, id, (char *)NULL);
	_exit(127);
}

static int read_ready(int fd, struct aj_err *err)
{
	char buf[4096];
	size_t len = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	json_t *j;
	int rc;

	while (len < sizeof buf - 1) {
		ssize_t n;
		if (poll(&p, 1, SPAWN_TIMEOUT_MS) <= 0)
			return aj_err_set(err, AJ_LAYER_PROCESS, ETIMEDOUT,
					  "the supervisor did not report within %d s",
					  SPAWN_TIMEOUT_MS / 1000);
		n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	buf[len] = '\0';
	j = json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
	if (!j)
		return aj_err_set(err, AJ_LAYER_PROCESS, EPROTO,
				  "the supervisor exited without reporting (see supervisor.log)");
	rc = json_is_true(json_object_get(j, "ok")) ? 0 : -1;
	if (rc < 0) {
		const char *layer = json_string_value(json_object_get(j, "layer"));
		const char *hint = json_string_value(json_object_get(j, "hint"));
		int layer_id = AJ_LAYER_PROCESS;
		for (int i = 0; layer && i < AJ_LAYER__COUNT; i++)
			if (!strcmp(aj_layer_name(i), layer))
				layer_id = i;
		aj_err_set(err, (enum aj_layer)layer_id,
			   (int)json_integer_value(json_object_get(j, "errno")), "%s",
			   json_string_value(json_object_get(j, "message")) ?: "start failed");
		if (hint && hint[0])
			aj_err_hint(err, "%s", hint);
	}
	json_decref(j);
	return rc;
}

int aj_mgr_spawn(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err)
{
	int p[2], rc;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "pipe");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork");
	}
	if (pid == 0) {
		close(p[0]);
		exec_supervisor(m, rec->id, p[1]);
	}
	close(p[1]);
	waitpid(pid, NULL, 0);
	rc = read_ready(p[0], err);
	close(p[0]);
	if (rc < 0)
		aj_err_prefix(err, "start sandbox \"%s\"", rec->name);
	return rc;
}

int aj_mgr_start(struct aj_mgr *m, const char *ref, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	int lock, rc = -1;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		goto out;
	aj_sandbox_rec_free(&r);
	/* Again under the lock: another start may have won. */
	if (aj_mgr_get(m, ref, &r, err) == 0) {
		if (strcmp(r.state, AJ_ST_STOPPED) != 0)
			aj_mgr_wrong_state(err, &r, "stopped");
		else
			rc = aj_mgr_spawn(m, &r, err);
		aj_sandbox_rec_free(&r);
	}
	close(lock);
	return rc;
out:
	aj_sandbox_rec_free(&r);
	return rc;
}

int aj_mgr_connect(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *rec,
		   struct aj_err *err)
{
	int fd;

	if (aj_mgr_get(m, ref, rec, err) < 0)
		return -1;
	if (strcmp(rec->state, AJ_ST_RUNNING) && strcmp(rec->state, AJ_ST_PAUSED)) {
		aj_mgr_wrong_state(err, rec, "running");
		aj_err_hint(err, "agentjail start %s", rec->name);
		aj_sandbox_rec_free(rec);
		return -1;
	}
	fd = aj_ctl_connect(rec->socket, err);
	if (fd < 0)
		aj_sandbox_rec_free(rec);
	return fd;
}

/* Waits for the supervisor process to be gone; SIGKILL after the timeout. */
static void wait_gone(const struct aj_sandbox_rec *r)
{
	pid_t pid = (pid_t)r->supervisor_pid;
	uint64_t start = (uint64_t)r->supervisor_start;

	for (int i = 0; i < STOP_TIMEOUT_MS / 10; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		if (!aj_proc_alive(pid, start))
			return;
		nanosleep(&ts, NULL);
	}
	if (aj_proc_alive(pid, start))
		kill(pid, SIGKILL);
}

int aj_mgr_stop(struct aj_mgr *m, const char *ref, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	int rc;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (strcmp(r.state, AJ_ST_RUNNING) && strcmp(r.state, AJ_ST_PAUSED)) {
		rc = aj_mgr_wrong_state(err, &r, "running or paused");
		aj_sandbox_rec_free(&r);
		return rc;
	}
	rc = aj_ctl_simple(r.socket, "stop", NULL, err);
	if (rc < 0 && err->errnum != ECONNREFUSED && err->errnum != ENOENT) {
		aj_sandbox_rec_free(&r);
		return -1;
	}
	wait_gone(&r);
	aj_sandbox_rec_free(&r);
	/* Reads the state the supervisor left (or marks it stopped if it had to be killed). */
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	aj_sandbox_rec_free(&r);
	return 0;
}

int aj_mgr_pause(struct aj_mgr *m, const char *ref, bool pause, struct aj_err *err)
{
	struct aj_sandbox_rec r;
	int rc;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (strcmp(r.state, pause ? AJ_ST_RUNNING : AJ_ST_PAUSED) != 0) {
		rc = aj_mgr_wrong_state(err, &r, pause ? "running" : "paused");
		aj_sandbox_rec_free(&r);
		return rc;
	}
	rc = aj_ctl_simple(r.socket, pause ? "pause" : "resume", NULL, err);
	aj_sandbox_rec_free(&r);
	return rc;
}
