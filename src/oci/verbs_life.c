/* Container life cycle verbs: create, start, state, kill, delete, list. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/oci.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "oci/oci.h"
#include "oci/plan_oci.h"
#include "oci/state.h"
#include "oci/verbs.h"
#include "sandbox/userns.h"

int aj_oci_one_operand(int argc, char **argv, int first, const char **id, struct aj_err *err)
{
	if (first != argc - 1)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: expected exactly one container "
							       "id",
				  argv[0]);
	*id = argv[first];
	return 0;
}

int aj_oci_write_pidfile(const char *path, pid_t pid, struct aj_err *err)
{
	char tmp[PATH_MAX], v[32];
	_cleanup_close_ int fd = -1;

	if (!path)
		return 0;
	/* Atomically: the shim may read it as soon as it appears. */
	snprintf(tmp, sizeof tmp, "%s.aj-tmp", path);
	snprintf(v, sizeof v, "%d", (int)pid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || aj_write_all(fd, v, strlen(v)) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "write pid file \"%s\"", tmp);
	if (rename(tmp, path) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "rename \"%s\" to \"%s\"", tmp, path);
	return 0;
}

int aj_oci_connect_console(const char *path, struct aj_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof a.sun_path)
		return aj_err_set(err, AJ_LAYER_IO, ENAMETOOLONG, "console socket \"%s\"", path);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "connect to the console socket \"%s\"", path);
	return aj_steal_fd(&fd);
}

json_t *aj_oci_load_json(const char *path, struct aj_err *err)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);

	if (!j)
		aj_err_set(err, AJ_LAYER_POLICY, errno == ENOENT ? ENOENT : EINVAL,
			   "\"%s\": line %d: %s", path, je.line, je.text);
	return j;
}

/* ---- create ---------------------------------------------------------------------------- */

struct create_ctx {
	const struct aj_oci_globals *g;
	const char *id, *bundle, *pidfile, *console;
	struct aj_oci_cplan c;
	struct aj_oci_state st;
	struct aj_cgroup_oci cg;
	bool have_cg, made_dir;
	struct aj_container_launch l;
	json_t *config;
	char scratch[4200];
};

static void rfc3339_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09ldZ", s, ts.tv_nsec);
}

static int prepare(struct create_ctx *x, struct aj_err *err)
{
	char path[PATH_MAX + 16], fifo[4200];

	snprintf(path, sizeof path, "%s/config.json", x->bundle);
	if (!(x->config = aj_oci_load_json(path, err)) ||
	    aj_oci_cplan_build(&x->c, x->bundle, x->config, x->id, x->g->systemd_cgroup, err) < 0 ||
	    aj_oci_cplan_open_ns(&x->c, err) < 0)
		return -1;
	if (x->c.spec.proc.terminal != (x->console != NULL))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  x->console ? "--console-socket given but process.terminal is false"
					     : "process.terminal needs --console-socket");
	if (aj_mkdir_p(x->g->root, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create the state root \"%s\"", x->g->root);
	if (mkdir(x->st.dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, errno == EEXIST ? "container \"%s\" already "
									 "exists"
								       : "create \"%s\"",
				  errno == EEXIST ? x->id : x->st.dir);
	x->made_dir = true;
	if (aj_cgroup_oci_open(&x->cg, x->c.cgroup_path, err) < 0)
		return -1;
	x->have_cg = true;
	if (aj_cgroup_oci_create(&x->cg, &x->c.spec.res, &x->c.notes, err) < 0)
		return -1;
	aj_oci_cplan_launch(&x->c, &x->l);
	x->l.cg = &x->cg;
	x->l.id_key = aj_oci_pod_key(x->c.spec.annotations);
	snprintf(x->scratch, sizeof x->scratch, "%s/rootfs-layers", x->st.dir);
	x->l.scratch = x->scratch;
	snprintf(fifo, sizeof fifo, "%s/exec.fifo", x->st.dir);
	if (mkfifo(fifo, 0600) < 0 ||
	    (x->l.fifo_fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "start fifo \"%s\"", fifo);
	if (x->console && (x->l.console_fd = aj_oci_connect_console(x->console, err)) < 0)
		return -1;
	return 0;
}

static int record(struct create_ctx *x, pid_t pid, struct aj_err *err)
{
	char path[PATH_MAX];
	json_t *report = aj_oci_cplan_report(&x->c);
	_cleanup_free_ char *rtext = report ? json_dumps(report, JSON_INDENT(2)) : NULL;
	_cleanup_free_ char *ctext = json_dumps(x->config, JSON_COMPACT);

	json_decref(report);
	x->st.pid = pid;
	x->st.pid_start = aj_proc_start_time(pid);
	snprintf(x->st.bundle, sizeof x->st.bundle, "%s", realpath(x->bundle, path) ? path : x->bundle);
	snprintf(x->st.rootfs, sizeof x->st.rootfs, "%s", x->c.rootfs);
	snprintf(x->st.cgroup_path, sizeof x->st.cgroup_path, "%s", x->c.cgroup_path);
	rfc3339_now(x->st.created, sizeof x->st.created);
	x->st.annotations = json_deep_copy(x->c.spec.annotations);
	snprintf(path, sizeof path, "%s/report.json", x->st.dir);
	json_object_set_new(x->st.annotations, "io.agentjail.report", json_string(path));
	if (!rtext || !ctext)
		return aj_err_set(err, AJ_LAYER_STATE, ENOMEM, "encode the report");
	if (aj_oci_state_write(&x->st, "config.json", ctext, err) < 0 ||
	    aj_oci_state_write(&x->st, "report.json", rtext, err) < 0 ||
	    aj_oci_state_save(&x->st, err) < 0)
		return -1;
	return aj_oci_write_pidfile(x->pidfile, pid, err);
}

static void create_cleanup(struct create_ctx *x, bool failed)
{
	if (x->l.fifo_fd >= 0)
		close(x->l.fifo_fd);
	if (x->l.console_fd >= 0)
		close(x->l.console_fd);
	/* Only what create made: the container's processes are already ended (create's
	 * own child, killed and reaped), and a cgroup that was there before is not ours. */
	if (failed && x->have_cg)
		aj_cgroup_oci_undo(&x->cg);
	if (failed && x->made_dir)
		aj_oci_state_remove(&x->st, NULL);
	/* A pod whose sandbox container failed to start has no range to find again. */
	if (failed && x->l.id_key && aj_oci_sandbox_container(x->c.spec.annotations))
		aj_idrange_forget(x->l.id_key);
	if (x->have_cg)
		aj_cgroup_oci_free(&x->cg);
	aj_strv_free(&x->l.undo_sysctl);
	aj_oci_cplan_free(&x->c);
	aj_oci_state_free(&x->st);
	json_decref(x->config);
}

int aj_oci_create_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	struct create_ctx x = {.g = g, .bundle = "."};
	const char *preserve = NULL;
	bool ignored = false;
	const struct aj_oci_opt opts[] = {
		{"bundle", 'b', true, &x.bundle, NULL},   {"pid-file", 0, true, &x.pidfile, NULL},
		{"console-socket", 0, true, &x.console, NULL},
		{"no-pivot", 0, false, NULL, &ignored},   {"no-new-keyring", 0, false, NULL, &ignored},
		{"detach", 'd', false, NULL, &ignored},   {"preserve-fds", 0, true, &preserve, NULL},
		{NULL, 0, false, NULL, NULL},
	};
	pid_t pid = -1;
	int first, r;

	x.l.fifo_fd = x.l.console_fd = -1;
	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &x.id, err) < 0 ||
	    aj_oci_state_init(&x.st, g->root, x.id, err) < 0)
		return -1;
	if (preserve && strcmp(preserve, "0") != 0)
		return aj_err_set(err, AJ_LAYER_USAGE, ENOTSUP, "--preserve-fds is not supported");
	r = prepare(&x, err);
	if (r == 0)
		r = aj_container_create(&x.l, &pid, err);
	if (r == 0 && (r = record(&x, pid, err)) < 0) {
		kill(pid, SIGKILL); /* our child until we exit */
		waitpid(pid, NULL, 0);
		aj_container_join_undo(&x.l);
	}
	create_cleanup(&x, r < 0);
	return r < 0 ? -1 : 0;
}

/* ---- start, state, kill, delete, list --------------------------------------------------- */

int aj_oci_start_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	const struct aj_oci_opt opts[] = {{NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	_cleanup_close_ int fd = -1;
	char fifo[4200];
	const char *id = NULL;
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &id, err) < 0 ||
	    aj_oci_state_load(&st, g->root, id, err) < 0)
		return -1;
	snprintf(fifo, sizeof fifo, "%s/exec.fifo", st.dir);
	if (st.started)
		return aj_err_set(err, AJ_LAYER_STATE, EINVAL,
				  "cannot start an already running container");
	if (!aj_oci_state_alive(&st))
		return aj_err_set(err, AJ_LAYER_STATE, ESRCH,
				  "cannot start a container that has stopped");
	/* Non-blocking: ENXIO means no reader, i.e. init is gone. */
	if ((fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open the start fifo \"%s\"", fifo);
	if (write(fd, "s", 1) != 1)
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", fifo);
	st.started = true;
	unlink(fifo);
	return aj_oci_state_save(&st, err);
}

int aj_oci_load_cg(const struct aj_oci_state *st, struct aj_cgroup_oci *cg, struct aj_err *err)
{
	return aj_cgroup_oci_open(cg, st->cgroup_path, err);
}

int aj_oci_state_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	const struct aj_oci_opt opts[] = {{NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	OCI_CGROUP cg = {0};
	_cleanup_json_ json_t *j = NULL;
	_cleanup_free_ char *text = NULL;
	const char *id = NULL;
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &id, err) < 0 ||
	    aj_oci_state_load(&st, g->root, id, err) < 0 || aj_oci_load_cg(&st, &cg, err) < 0)
		return -1;
	j = aj_oci_state_json(&st, aj_oci_state_status(&st, aj_cgroup_oci_frozen(&cg)));
	text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	if (!text)
		return aj_err_set(err, AJ_LAYER_STATE, ENOMEM, "encode state");
	printf("%s\n", text);
	return 0;
}

static const struct {
	const char *name;
	int sig;
} signames[] = {
	{"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"ILL", SIGILL},
	{"TRAP", SIGTRAP}, {"ABRT", SIGABRT},   {"BUS", SIGBUS},     {"FPE", SIGFPE},
	{"KILL", SIGKILL}, {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
	{"PIPE", SIGPIPE}, {"ALRM", SIGALRM},   {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
	{"CONT", SIGCONT}, {"STOP", SIGSTOP},   {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
	{"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
	{"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
	{"PWR", SIGPWR},   {"SYS", SIGSYS},
};

static int parse_signal(const char *s, int *sig, struct aj_err *err)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (*s && !*end && n > 0 && n < NSIG) {
		*sig = (int)n;
		return 0;
	}
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(signames); i++)
		if (strcasecmp(s, signames[i].name) == 0) {
			*sig = signames[i].sig;
			return 0;
		}
	return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "kill: unknown signal \"%s\"", s);
}

static int signal_init(const struct aj_oci_state *st, int sig, struct aj_err *err)
{
	_cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, st->pid, 0);

	/* The pidfd pins the process: checked against the recorded start time, a recycled pid
	 * cannot receive the signal. */
	if (fd < 0 || !aj_oci_state_alive(st))
		return aj_err_set(err, AJ_LAYER_PROCESS, ESRCH, "container not running");
	if (syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "signal %d to the container's init", sig);
	return 0;
}

static int signal_all(const struct aj_oci_state *st, int sig, struct aj_err *err)
{
	OCI_CGROUP cg = {0};
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	bool frozen;
	int r;

	if (aj_oci_load_cg(st, &cg, err) < 0)
		return -1;
	frozen = aj_cgroup_oci_frozen(&cg);
	r = aj_cgroup_oci_pids(&cg, &pids, &n, err);
	for (size_t i = 0; r == 0 && i < n; i++)
		kill(pids[i], sig);
	/* A frozen task dies of SIGKILL only once thawed. */
	if (r == 0 && frozen && sig == SIGKILL)
		aj_cgroup_oci_freeze(&cg, false, NULL);
	return r;
}

int aj_oci_kill_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	bool all = false;
	const struct aj_oci_opt opts[] = {{"all", 'a', false, NULL, &all},
					  {NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	int first, sig = SIGTERM;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0)
		return -1;
	if (first >= argc || argc - first > 2)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "kill: expected ID [SIGNAL]");
	if ((argc - first == 2 && parse_signal(argv[first + 1], &sig, err) < 0) ||
	    aj_oci_state_load(&st, g->root, argv[first], err) < 0)
		return -1;
	/* --all reaches what is left in the container's cgroup after its init, as runc's: the
	 * shim sends it when init of a container without a pid namespace of its own exits. */
	if (all)
		return signal_all(&st, sig, err);
	if (!aj_oci_state_alive(&st))
		return aj_err_set(err, AJ_LAYER_PROCESS, ESRCH, "container not running");
	return signal_init(&st, sig, err);
}

static int teardown(struct aj_oci_state *st, struct aj_err *err)
{
	OCI_CGROUP cg = {0};
	int r = 0;

	if (aj_oci_state_alive(st))
		signal_init(st, SIGKILL, NULL);
	if (st->cgroup_path[0] && aj_oci_load_cg(st, &cg, err) == 0)
		r = aj_cgroup_oci_destroy(&cg, err);
	/* init is the shim's child, not ours: wait (bounded) until the kernel is done with it. */
	for (int i = 0; i < 400 && aj_oci_state_alive(st); i++)
		nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
	/* The pod's sandbox container goes last: its pod's id range need not be found again. */
	if (r == 0 && aj_oci_pod_key(st->annotations) &&
	    (strcmp(aj_oci_pod_key(st->annotations), st->id) == 0 ||
	     aj_oci_sandbox_container(st->annotations)))
		aj_idrange_forget(aj_oci_pod_key(st->annotations));
	if (r == 0)
		r = aj_oci_state_remove(st, err);
	return r;
}

int aj_oci_delete_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	bool force = false;
	const struct aj_oci_opt opts[] = {{"force", 'f', false, NULL, &force},
					  {NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	OCI_CGROUP cg = {0};
	const char *id = NULL, *status = "stopped";
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &id, err) < 0)
		return -1;
	if (aj_oci_state_load(&st, g->root, id, err) < 0) {
		/* runc: with --force a missing container is no error (an aborted create may have
		 * left only its directory). */
		if (force && err->errnum == ENOENT && aj_oci_state_init(&st, g->root, id, NULL) == 0)
			return aj_oci_state_remove(&st, err);
		return -1;
	}
	if (aj_oci_load_cg(&st, &cg, NULL) == 0)
		status = aj_oci_state_status(&st, aj_cgroup_oci_frozen(&cg));
	if (!force && (strcmp(status, "running") == 0 || strcmp(status, "paused") == 0))
		return aj_err_set(err, AJ_LAYER_STATE, EBUSY,
				  "cannot delete container %s that is not stopped: %s", id, status);
	return teardown(&st, err);
}

int aj_oci_list_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	const char *format = "table";
	bool quiet = false;
	const struct aj_oci_opt opts[] = {{"format", 'f', true, &format, NULL},
					  {"quiet", 'q', false, NULL, &quiet},
					  {NULL, 0, false, NULL, NULL}};
	_cleanup_json_ json_t *all = json_array();
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *e;
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0)
		return -1;
	d = opendir(g->root);
	while (d && (e = readdir(d))) {
		OCI_STATE st = {0};
		if (e->d_name[0] == '.' || aj_oci_state_load(&st, g->root, e->d_name, NULL) < 0)
			continue;
		json_array_append_new(all, aj_oci_state_json(&st, aj_oci_state_status(&st, false)));
	}
	if (strcmp(format, "json") == 0) {
		_cleanup_free_ char *s = json_dumps(all, JSON_COMPACT);
		printf("%s\n", s ? s : "[]");
	} else {
		size_t i;
		json_t *c;
		if (!quiet)
			printf("ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n");
		json_array_foreach(all, i, c)
			printf(quiet ? "%s\n" : "%s\t%d\t%s\t%s\t%s\troot\n",
			       json_string_value(json_object_get(c, "id")),
			       (int)json_integer_value(json_object_get(c, "pid")),
			       json_string_value(json_object_get(c, "status")),
			       json_string_value(json_object_get(c, "bundle")),
			       json_string_value(json_object_get(c, "created")));
	}
	return 0;
}
