/* Compute of persistent sandboxes: starting a supervisor, and asking it to pause, resume or
 * stop. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "common/util.h"
#include "control/client.h"
#include "manager/internal.h"
#include "state/names.h"
#include "workspace/layers.h"

#define SPAWN_TIMEOUT_MS 60000
#define STOP_TIMEOUT_MS 30000

/* Everything the supervisor's child process needs, made before fork: in a threaded caller
 * (the HTTP daemon) another thread may hold the malloc or stdio lock at the moment of fork,
 * so between fork and exec the child only makes async-signal-safe calls. */
struct spawn_prep {
	char *argv[AJ_SUPERVISE_ARGC + 1];
	int null_fd, log_fd, ready_fd;
};

void aj_mgr_supervise_argv(char *argv[AJ_SUPERVISE_ARGC + 1], const char *state_dir,
			   const char *id)
{
	static char fd_word[] = {'0' + AJ_SUPERVISE_READY_FD, '\0'};
	char *words[AJ_SUPERVISE_ARGC + 1] = {
		"agentjail", "__supervise", "--state-dir", (char *)state_dir, "--ready-fd",
		fd_word,     (char *)id,    NULL};

	memcpy(argv, words, sizeof words);
}

static int prepare_spawn(struct aj_mgr *m, const char *id, int ready_fd, struct spawn_prep *s,
			 struct aj_err *err)
{
	char log[4200];

	s->ready_fd = ready_fd;
	s->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (s->null_fd < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "open \"/dev/null\"");
	aj_ws_path(log, sizeof log, m->state, "sandboxes", id, "supervisor.log");
	/* Without its log the supervisor still runs; its stderr goes to /dev/null. */
	s->log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	aj_mgr_supervise_argv(s->argv, m->state, id);
	return 0;
}

static void close_prep(struct spawn_prep *s)
{
	aj_close_fd(&s->null_fd);
	aj_close_fd(&s->log_fd);
}

/* The forked child. The supervisor must not be our child (the CLI exits soon) nor share our
 * session: new session, a second fork (_Fork, the async-signal-safe one), exec of this very
 * binary. The caller's signal mask and dispositions are not the supervisor's business (a
 * daemon blocks signals in its worker threads and ignores SIGPIPE): both are reset, and
 * descriptors other than stdio and the ready pipe are closed even if one lacked O_CLOEXEC. */
static void exec_supervisor(const struct spawn_prep *s)
{
	extern char **environ;
	struct sigaction dfl;
	sigset_t none;
	pid_t pid;

	setsid();
	pid = _Fork();
	if (pid != 0)
		_exit(pid < 0 ? 127 : 0);
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	dup2(s->null_fd, 0);
	dup2(s->null_fd, 1);
	dup2(s->log_fd >= 0 ? s->log_fd : s->null_fd, 2);
	/* dup2 onto itself would keep O_CLOEXEC and lose the pipe at exec. */
	if (s->ready_fd == AJ_SUPERVISE_READY_FD ? fcntl(AJ_SUPERVISE_READY_FD, F_SETFD, 0) < 0
						 : dup2(s->ready_fd, AJ_SUPERVISE_READY_FD) < 0)
		_exit(127);
	close_range(AJ_SUPERVISE_READY_FD + 1, ~0U, 0);
	execve("/proc/self/exe", s->argv, environ);
	_exit(127);
}

/* serve's zygote (cli/cmd_zygote.c): the daemon's end of its socket, set once before any
 * thread exists; -1: every supervisor is forked and exec'd here. */
static int zygote_fd = -1;

void aj_mgr_set_zygote(int fd)
{
	zygote_fd = fd;
}

/* Asks the zygote to fork the supervisor: "STATE\0ID\0" with the ready pipe and the log (or
 * /dev/null) attached; it answers on the ready pipe as the supervisor would. -1 when the
 * zygote cannot be asked (it is gone: then the caller forks and execs itself). */
static int zygote_spawn(struct aj_mgr *m, const char *id, const struct spawn_prep *s)
{
	struct iovec iov[2] = {{m->state, strlen(m->state) + 1}, {(char *)id, strlen(id) + 1}};
	int fds[2] = {s->ready_fd, s->log_fd >= 0 ? s->log_fd : s->null_fd};

	return zygote_fd < 0 || aj_fdpass_send(zygote_fd, iov, 2, fds, 2) < 0 ? -1 : 0;
}

static int read_ready(int fd, struct aj_err *err)
{
	char buf[4096];
	size_t len = 0;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	_cleanup_json_ json_t *j = NULL;
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
		/* Only "wrong state" crosses: a start never says "no such sandbox" (what a
		 * missing image or secret is classed as inside the supervisor). */
		if (json_integer_value(json_object_get(j, "class")) == AJ_ERRC_WRONG_STATE)
			aj_err_class(err, AJ_ERRC_WRONG_STATE);
	}
	return rc;
}

/* The supervisor reads the stack from the store: merge it there first. */
static int squash_before_start(struct aj_mgr *m, const char *id, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;

	if (aj_store_sandbox_get(m->store, id, NULL, &r, err) < 0)
		return -1;
	return aj_mgr_squash(m, &r, err);
}

int aj_mgr_spawn(struct aj_mgr *m, const struct aj_sandbox_rec *rec, struct aj_err *err)
{
	__attribute__((cleanup(close_prep))) struct spawn_prep prep = {.null_fd = -1, .log_fd = -1};
	_cleanup_close_ int rd = -1, wr = -1;
	bool via_zygote;
	int rc;
	pid_t pid;

	/* Said here rather than as the supervisor's failure to mount a missing directory. */
	if (!aj_ws_sandbox_has_upper(m->state, rec->id)) {
		aj_err_set(err, AJ_LAYER_STATE, 0,
			   "sandbox \"%s\" has no writable layer (%s/sandboxes/%s/upper): an "
			   "interrupted snapshot or fork left it incomplete",
			   rec->name, m->state, rec->id);
		return aj_err_hint(err, "agentjail gc finishes what was interrupted");
	}
	if (rec->layers.n > AJ_MAX_LAYERS && squash_before_start(m, rec->id, err) < 0)
		return -1;
	if (aj_pipe(&rd, &wr, O_CLOEXEC) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "pipe");
	if (prepare_spawn(m, rec->id, wr, &prep, err) < 0)
		return -1;
	via_zygote = zygote_spawn(m, rec->id, &prep) == 0;
	pid = via_zygote ? 0 : fork();
	if (pid == 0 && !via_zygote)
		exec_supervisor(&prep);
	/* Our copies go before the wait: the report ends at the supervisor's end of file. */
	close_prep(&prep);
	aj_close_fd(&wr);
	if (pid < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork");
	while (!via_zygote && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	rc = read_ready(rd, err);
	if (rc < 0)
		aj_err_prefix(err, "start sandbox \"%s\"", rec->name);
	return rc;
}

int aj_mgr_start(struct aj_mgr *m, const char *ref, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int lock = -1;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		return -1;
	aj_sandbox_rec_free(&r);
	/* Again under the lock: another start may have won. */
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (r.state != AJ_ST_STOPPED)
		return aj_mgr_wrong_state(err, &r, "stopped");
	return aj_mgr_spawn(m, &r, err);
}

int aj_mgr_connect(struct aj_mgr *m, const char *ref, struct aj_sandbox_rec *rec,
		   struct aj_err *err)
{
	int fd;

	if (aj_mgr_get(m, ref, rec, err) < 0)
		return -1;
	if (rec->state != AJ_ST_RUNNING && rec->state != AJ_ST_PAUSED) {
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

int aj_mgr_connect_named(const char *state_dir, const char *ref)
{
	char sock[256];
	struct aj_err err;

	if (aj_names_resolve(state_dir, ref, sock, sizeof sock) < 0)
		return -1;
	return aj_ctl_connect(sock, &err);
}

/* Waits for the supervisor process to be gone; SIGKILL after the timeout. */
/* Until the supervisor has exited, or STOP_TIMEOUT_MS (then it is killed). A pidfd says the
 * moment it exits: polling /proc every 10 ms made every stop (and rm -f, E2B's kill) last at
 * least 10 ms. The pidfd is checked against the recorded start time first, so a reused pid is
 * never waited for. */
static bool wait_gone_pidfd(pid_t pid, uint64_t start)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = {.events = POLLIN};
	int r;

	if (fd < 0)
		return errno == ESRCH; /* gone already; else no pidfd here: poll /proc */
	if (!aj_proc_alive(pid, start))
		return true;
	p.fd = fd;
	do
		r = poll(&p, 1, STOP_TIMEOUT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
	return true;
}

static void wait_gone(const struct aj_sandbox_rec *r)
{
	pid_t pid = (pid_t)r->supervisor_pid;
	uint64_t start = (uint64_t)r->supervisor_start;

	if (pid > 0 && wait_gone_pidfd(pid, start))
		return;
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
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (r.state != AJ_ST_RUNNING && r.state != AJ_ST_PAUSED)
		return aj_mgr_wrong_state(err, &r, "running or paused");
	if (aj_ctl_simple(r.socket, "stop", NULL, err) < 0 && err->errnum != ECONNREFUSED &&
	    err->errnum != ENOENT)
		return -1;
	wait_gone(&r);
	aj_sandbox_rec_free(&r);
	/* Reads the state the supervisor left (or marks it stopped if it had to be killed). */
	return aj_mgr_get(m, ref, &r, err) < 0 ? -1 : 0;
}

int aj_mgr_pause(struct aj_mgr *m, const char *ref, bool pause, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	int rc;

	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (r.state != (pause ? AJ_ST_RUNNING : AJ_ST_PAUSED))
		return aj_mgr_wrong_state(err, &r, pause ? "running" : "paused");
	rc = aj_ctl_simple(r.socket, pause ? "pause" : "resume", NULL, err);
	/* Someone else paused or resumed it since we read its state. */
	if (rc < 0 && err && err->errnum == EALREADY)
		aj_err_class(err, AJ_ERRC_WRONG_STATE);
	return rc;
}

/* A live sandbox's lifetime is its supervisor's timer, which writes the record itself; a
 * stopped one's record is written here, under its lock so that no start reads it halfway. */
int aj_mgr_set_lifetime(struct aj_mgr *m, const char *ref, int64_t max_lifetime_ms,
			struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int fd = -1, lock = -1;

	if (max_lifetime_ms < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "a lifetime cannot be negative");
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if (r.state == AJ_ST_RUNNING || r.state == AJ_ST_PAUSED) {
		if ((fd = aj_ctl_connect(r.socket, err)) < 0)
			return -1;
		return aj_ctl_call(fd, json_pack("{s:s, s:I}", "op", "lifetime", "max_lifetime_ms",
						 (json_int_t)max_lifetime_ms),
				   NULL, 0, NULL, NULL, NULL, STOP_TIMEOUT_MS, err);
	}
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0)
		return -1;
	aj_sandbox_rec_free(&r);
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	r.max_lifetime_ms = max_lifetime_ms;
	/* Started meanwhile: its supervisor holds the lifetime now. */
	return r.state != AJ_ST_STOPPED ? aj_mgr_wrong_state(err, &r, "stopped")
					  : aj_mgr_save(m, &r, err);
}

/* ---- update -------------------------------------------------------------------------------- */

static void set_list(struct aj_strv *dst, const struct aj_strv *src)
{
	aj_strv_free(dst);
	*dst = (struct aj_strv)AJ_STRV_INIT;
	for (size_t i = 0; src && i < src->n; i++)
		aj_strv_push(dst, src->v[i]);
}

/* The record's policy with the update applied, as the text a record keeps. A running
 * sandbox (live) keeps its network mode. */
static char *updated_policy(const struct aj_sandbox_rec *r, const struct aj_update *u,
			    bool live, struct aj_err *err)
{
	_cleanup_policy_ struct aj_policy p;
	_cleanup_json_ json_t *doc = NULL;

	aj_policy_init(&p);
	p.managed = true; /* a persistent sandbox's: its workspace is the store's */
	if (aj_policy_load_text(&p, r->policy, err) < 0)
		return NULL;
	if (live && u->net_mode >= 0 && (int)p.net_mode != u->net_mode) {
		aj_err_set(err, AJ_LAYER_NET, ENOTSUP,
			   "update sandbox \"%s\": network.mode: a running sandbox keeps the mode it "
			   "started with (its network namespace and proxy are made at start); stop "
			   "it, update it, start it",
			   r->name);
		return NULL;
	}
	if (u->allow)
		set_list(&p.net_allow, u->allow);
	if (u->deny)
		set_list(&p.net_deny, u->deny);
	if (u->net_mode >= 0)
		p.net_mode = (enum aj_net_mode)u->net_mode;
	if (u->net_mode == AJ_NET_NONE) { /* no proxy: its rules go with it */
		aj_strv_free(&p.net_allow);
		aj_strv_free(&p.net_deny);
		aj_strv_free(&p.net_allow_private);
		aj_policy_creds_free(&p);
	}
	if (u->set_memory)
		p.limits.memory = u->memory;
	if (u->set_pids)
		p.limits.pids = u->pids;
	if (u->set_cpus)
		p.limits.cpu_milli = u->cpu_milli;
	if (aj_policy_validate(&p, err) < 0)
		return NULL;
	doc = aj_policy_to_json(&p);
	return doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

static int update_running(const struct aj_sandbox_rec *r, const char *text,
			  const struct aj_update *u, struct aj_err *err)
{
	_cleanup_close_ int fd = aj_ctl_connect(r->socket, err);
	json_t *req, *pol;

	if (fd < 0)
		return -1;
	pol = json_loads(text, 0, NULL);
	req = json_pack("{s:s, s:o}", "op", "update", "policy", pol ? pol : json_object());
	if (u->idle_timeout_ms >= 0)
		json_object_set_new(req, "idle_timeout_ms", json_integer(u->idle_timeout_ms));
	if (u->max_lifetime_ms >= 0)
		json_object_set_new(req, "max_lifetime_ms", json_integer(u->max_lifetime_ms));
	return aj_ctl_call(fd, req, NULL, 0, NULL, NULL, NULL, STOP_TIMEOUT_MS, err);
}

int aj_mgr_update(struct aj_mgr *m, const char *ref, const struct aj_update *u,
		  struct aj_sandbox_rec *out, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int lock = -1;
	_cleanup_free_ char *text = NULL;
	bool live;
	int rc;

	aj_err_clear(err);
	if (aj_mgr_get(m, ref, &r, err) < 0)
		return -1;
	if ((lock = aj_mgr_lock(m, r.id, true, err)) < 0 || aj_mgr_reread(m, &r, err) < 0)
		return -1;
	live = r.state == AJ_ST_RUNNING || r.state == AJ_ST_PAUSED;
	if (!(text = updated_policy(&r, u, live, err)))
		return err->msg[0] ? -1
				   : aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "the new policy");
	if (live) {
		rc = update_running(&r, text, u, err);
	} else {
		free(r.policy);
		r.policy = aj_steal_ptr(&text);
		if (u->idle_timeout_ms >= 0)
			r.idle_timeout_ms = u->idle_timeout_ms;
		if (u->max_lifetime_ms >= 0)
			r.max_lifetime_ms = u->max_lifetime_ms;
		r.updated_ms = (int64_t)aj_now_realtime_ms();
		rc = aj_mgr_save(m, &r, err);
		if (rc == 0)
			aj_store_event_add(m->store, r.id, "update", "{\"stopped\":true}", NULL);
	}
	if (rc < 0)
		return aj_err_prefix(err, "update sandbox \"%s\"", r.name);
	if (out) {
		aj_sandbox_rec_free(&r);
		return aj_mgr_get(m, ref, out, err);
	}
	return 0;
}

int aj_mgr_metrics(struct aj_mgr *m, const char *ref, int64_t start_ms, int64_t end_ms,
		   json_t **out, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = AJ_REC_INIT;
	_cleanup_close_ int fd = aj_mgr_connect(m, ref, &r, err);

	*out = NULL;
	if (fd < 0)
		return -1;
	return aj_ctl_call(fd, json_pack("{s:s, s:I, s:I}", "op", "metrics", "start_ms",
					 (json_int_t)start_ms, "end_ms", (json_int_t)end_ms),
			   NULL, 0, out, NULL, NULL, STOP_TIMEOUT_MS, err);
}
