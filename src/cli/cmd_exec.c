/* agentjail exec [-i] [-t] [--env K=V] [--cwd DIR] [-u USER] [--timeout DUR] NAME [--] CMD [ARGS...]
 *
 * The command is started by the sandbox's init (no namespaces made per command; the mechanics
 * are in control/exec.h). Its stdout and stderr are pipes whose write ends go straight to the
 * command; this client reads the other ends and applies the output cap. With -t the command
 * gets a terminal made inside the sandbox and this client relays it. The exit code is the
 * command's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "control/exec.h"
#include "supervisor/output.h"

struct exec_cli {
	bool interactive, tty;
	const char *cwd, *user;
	uint64_t timeout_ms;
	uint64_t output_cap; /* NO_CAP: the policy's */
	json_t *env;
};
#define NO_CAP UINT64_MAX

/* --env NAME=VALUE into the JSON object of the command's variables. */
static int exec_env(void *vctx, const struct aj_option *o, const char *v, struct aj_err *err)
{
	json_t *env = *(json_t **)((char *)vctx + o->off);
	const char *eq = strchr(v, '=');

	if (!eq || eq == v)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "--env: expected NAME=VALUE, got \"%s\"", v);
	/* jansson copies the key; a NULL value (not UTF-8) makes it fail too. */
	if (json_object_setn_new(env, v, (size_t)(eq - v), json_string(eq + 1)) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--env: cannot pass \"%s\" (not UTF-8, or out of memory)", v);
	return 0;
}

#define EX(field) .off = offsetof(struct exec_cli, field)
static const struct aj_option exec_options[] = {
	{AJ_OPT("interactive", 'i', AJ_OPT_SWITCH), EX(interactive), .help = "pass stdin to the command"},
	{AJ_OPT("tty", 't', AJ_OPT_SWITCH), EX(tty), .help = "give the command a terminal"},
	{AJ_OPT("env", 'e', AJ_OPT_FUNC), EX(env), .metavar = "NAME=VALUE", .parse = exec_env,
	 .help = "set a variable for this command (repeatable)"},
	{AJ_OPT("cwd", 'w', AJ_OPT_STRING), EX(cwd), .metavar = "DIR",
	 .help = "working directory (default: the workspace)"},
	{AJ_OPT("user", 'u', AJ_OPT_STRING), EX(user), .metavar = "USER[:GROUP]",
	 .help = "run as this user of an image sandbox (root, a name, UID[:GID]; default: the "
		 "sandbox's)"},
	{AJ_OPT("timeout", 0, AJ_OPT_DURATION), EX(timeout_ms), .metavar = "DURATION",
	 .help = "kill the command after this long (exit 124)"},
	{AJ_OPT("output-limit", 0, AJ_OPT_SIZE), EX(output_cap), .metavar = "SIZE",
	 .flags = AJ_OPTF_NONE_OK, .help = "stdout+stderr passed on (default: the policy's)"},
	AJ_OPT_END,
};
#undef EX

/* Apart, so that a resize cannot overwrite an interrupt that is still to be passed on. */
static volatile sig_atomic_t pending_sig, pending_winch;

static void on_sig(int sig)
{
	if (sig == SIGWINCH)
		pending_winch = 1;
	else
		pending_sig = sig;
}

struct session {
	struct aj_exec x;
	int in_src; /* the caller's fd 0 while it is relayed to the command, else -1 */
	struct aj_output cap;
	bool truncated_said;
	struct termios saved;
	bool raw;
};

static uint64_t policy_output_cap(const char *policy)
{
	json_t *p = json_loads(policy, 0, NULL);
	json_t *v = json_object_get(json_object_get(p, "limits"), "output_bytes");
	uint64_t cap = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;

	json_decref(p);
	return cap;
}

/* Output hook: the command's stdout and stderr to ours, within the output cap. */
static void on_output(void *arg, int stream, const char *buf, size_t n)
{
	struct session *s = arg;
	size_t pass = aj_output_admit(&s->cap, stream, n);

	if (pass)
		aj_write_all(1 + stream, buf, pass);
	if (pass < n && !s->truncated_said) {
		s->truncated_said = true;
		fprintf(stderr, "\nagentjail: output limit reached; further output is discarded\n");
	}
}

/* Watch hook: the caller's stdin to the command's (a pipe, or the terminal). */
static int on_stdin(void *arg, struct aj_exec *x)
{
	struct session *s = arg;
	char buf[65536];
	ssize_t n = read(s->in_src, buf, sizeof buf);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n > 0 && aj_write_all(x->in, buf, (size_t)n) == 0)
		return 0;
	if (x->in != x->master) { /* EOF reaches a pipe's reader; a terminal stays open */
		close(x->in);
		x->in = -1;
	}
	return -1;
}

/* Wake hook: a window size change goes to the terminal, other signals to the command. */
static int on_wake(void *arg, struct aj_exec *x)
{
	struct winsize ws;
	int sig = pending_sig;

	(void)arg;
	if (sig) {
		pending_sig = 0;
		aj_exec_signal(x, sig);
	}
	if (pending_winch) {
		pending_winch = 0;
		if (x->master >= 0 && ioctl(1, TIOCGWINSZ, &ws) == 0)
			aj_exec_resize(x, ws.ws_row, ws.ws_col);
	}
	return 0;
}

static void raw_mode(struct session *s)
{
	struct termios t;

	if (!isatty(0) || tcgetattr(0, &s->saved) < 0)
		return;
	t = s->saved;
	cfmakeraw(&t);
	if (tcsetattr(0, TCSANOW, &t) == 0)
		s->raw = true;
}

static int start(struct session *s, struct exec_cli *c, int ctl, char **cmd, const char *name,
		 struct aj_err *err)
{
	struct aj_exec_opts o = {.argv = (const char *const *)cmd, .env = c->env, .cwd = c->cwd,
				 .user = c->user, .timeout_ms = c->timeout_ms, .tty = c->tty,
				 .stdin_pipe = c->interactive, .name = name};
	struct winsize ws;

	if (c->tty && ioctl(1, TIOCGWINSZ, &ws) == 0) {
		o.rows = ws.ws_row;
		o.cols = ws.ws_col;
	}
	if (aj_exec_start(&s->x, ctl, &o, err) < 0)
		return -1;
	s->in_src = c->interactive || (c->tty && isatty(0)) ? 0 : -1;
	if (c->tty)
		raw_mode(s);
	return 0;
}

static void report_end(const struct aj_exec_result *r)
{
	if (r->lost)
		fprintf(stderr, "agentjail: the sandbox's supervisor went away\n");
	else if (r->limit[0])
		fprintf(stderr, "agentjail: %s limit reached; the command was killed\n", r->limit);
}

static int paused(const char *name, struct aj_err *err)
{
	aj_err_set(err, AJ_LAYER_STATE, EBUSY, "sandbox \"%s\" is paused; it must be running", name);
	aj_err_class(err, AJ_ERRC_WRONG_STATE);
	aj_err_hint(err, "agentjail resume %s", name);
	return -1;
}

/* The state store's way to the sandbox's supervisor, which also says why a sandbox cannot be
 * reached (stopped, removed, its supervisor dead); its policy's output cap in *cap. */
static int connect_store(struct aj_mgr *m, const char *ref, uint64_t *cap, struct aj_err *err)
{
	struct aj_sandbox_rec rec;
	int fd;

	if (aj_cli_open(m, err) < 0 || (fd = aj_mgr_connect(m, ref, &rec, err)) < 0)
		return -1;
	if (rec.state == AJ_ST_PAUSED) { /* its init is frozen: it could not answer */
		paused(rec.name, err);
		close(fd);
		fd = -1;
	}
	*cap = policy_output_cap(rec.policy);
	aj_sandbox_rec_free(&rec);
	return fd;
}

/* The command started through the names index, as "exec_named": the request names the
 * sandbox, which a supervisor of another one refuses (a stale or forged link: ESTALE), and a
 * supervisor of an earlier build refuses the operation (EINVAL); neither starts anything, and
 * the store decides. 0 started, with the policy's output cap in *cap from the supervisor's
 * answer; 1 the index could not say (nothing reported); -1 with err. */
static int start_named(struct session *s, struct exec_cli *c, struct aj_mgr *m, int *ctl,
		       const char *ref, char **cmd, uint64_t *cap, struct aj_err *err)
{
	char dir[4096];
	struct aj_err why;
	uint64_t unused;
	int fd;

	if (aj_cli_state_path(dir, sizeof dir) < 0 || (*ctl = aj_mgr_connect_named(dir, ref)) < 0)
		return 1;
	if (start(s, c, *ctl, cmd, ref, err) < 0) {
		if ((err->layer == AJ_LAYER_STATE && err->errnum == ESTALE) ||
		    (err->layer == AJ_LAYER_USAGE && err->errnum == EINVAL)) {
			aj_err_clear(err);
			close(*ctl);
			*ctl = -1;
			return 1;
		}
		/* Paused, or the connection lost (a stop under way): the store says what became
		 * of the sandbox, and while it says running the error stands. Nothing is sent
		 * again: the command may have started. */
		if (err->layer == AJ_LAYER_STATE) {
			aj_err_clear(&why);
			if ((fd = connect_store(m, ref, &unused, &why)) < 0)
				*err = why;
			else
				close(fd);
		}
		return -1;
	}
	aj_cli_log(AJ_LOG_INFO, "sandbox %s reached through the names index", ref);
	if (s->x.output_cap < 0) { /* every supervisor that knows exec_named says it */
		aj_exec_signal(&s->x, SIGKILL);
		return aj_err_set(err, AJ_LAYER_STATE, EPROTO,
				  "the supervisor did not say the output cap; the command was killed");
	}
	*cap = (uint64_t)s->x.output_cap;
	return 0;
}

/* The command's run, from connecting to its end: its exit code, or -1 with err (and in
 * *interrupted the signal that came while it was being started). What it opens is in m, s and
 * *ctl, which run_exec releases. */
static int exec_session(struct exec_cli *c, struct session *s, struct aj_mgr *m, int *ctl,
			const char *ref, char **cmd, int *interrupted, struct aj_err *err)
{
	struct aj_exec_hooks h = {.output = on_output, .on_watch = on_stdin, .on_wake = on_wake,
				  .arg = s};
	uint64_t cap = 0;
	int r;

	/* Caught from before the command starts: one that came while it was being started would
	 * otherwise end this client (leaving the terminal raw) instead of reaching the command. */
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGHUP, on_sig);
	signal(SIGWINCH, on_sig);
	signal(SIGPIPE, SIG_IGN);
	r = start_named(s, c, m, ctl, ref, cmd, &cap, err);
	if (r == 1 && (*ctl = connect_store(m, ref, &cap, err)) >= 0)
		r = start(s, c, *ctl, cmd, NULL, err);
	if (r != 0) {
		*interrupted = pending_sig;
		return -1;
	}
	/* Set before the first byte is read: the pipes hold what the command writes meanwhile. */
	s->cap.cap = c->output_cap != NO_CAP ? c->output_cap : cap;
	h.watch_fd = s->in_src;
	aj_exec_wait(&s->x, &h);
	if (s->raw) /* before the messages, so they are not printed in raw mode */
		tcsetattr(0, TCSANOW, &s->saved);
	s->raw = false;
	report_end(&s->x.res);
	return s->x.res.exit_code;
}

static int run_exec(struct exec_cli *c, const char *ref, char **cmd, struct aj_err *err)
{
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct session s = {.x = {.out = {-1, -1}, .in = -1, .master = -1}, .in_src = -1};
	_cleanup_close_ int ctl = -1;
	int interrupted = 0;
	int code = exec_session(c, &s, &m, &ctl, ref, cmd, &interrupted, err);

	if (s.raw)
		tcsetattr(0, TCSANOW, &s.saved);
	aj_exec_close(&s.x);
	if (interrupted) { /* the caller's interrupt, not the failure, says how this ends */
		signal(interrupted, SIG_DFL);
		raise(interrupted);
	}
	return code;
}

static int cmd_exec(const struct aj_verb *v, int argc, char **argv)
{
	static struct exec_cli c;
	struct aj_err err;
	const char *ref;
	char **args;
	int nargs, pos = 0, code;

	c.env = json_object();
	c.output_cap = NO_CAP;
	aj_err_clear(&err);
	if ((code = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return code > 0 ? 0 : (aj_cli_fail(aj_cli.json, &err), AJ_EXIT_ERROR);
	argc = nargs;
	argv = args;
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "exec: missing the sandbox name");
		aj_cli_fail(aj_cli.json, &err);
		return AJ_EXIT_ERROR;
	}
	ref = argv[pos++];
	if (pos < argc && !strcmp(argv[pos], "--"))
		pos++;
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "exec: missing the command to run");
		aj_cli_fail(aj_cli.json, &err);
		return AJ_EXIT_ERROR;
	}
	code = run_exec(&c, ref, argv + pos, &err);
	if (code < 0) {
		/* exec keeps the command's exit codes for the command: its own failures are 125
		 * (an unknown sandbox and a wrong state included, whose 1 and 3 of the other verbs
		 * a command exits with too), or 126/127 when the command could not be started. */
		if (err.layer != AJ_LAYER_EXEC)
			aj_err_prefix(&err, "exec");
		aj_cli_fail(aj_cli.json, &err);
		code = err.cls == AJ_ERRC_NO_COMMAND ? AJ_EXIT_NOTFOUND
		     : err.cls == AJ_ERRC_NO_EXEC    ? AJ_EXIT_NOEXEC
						     : AJ_EXIT_ERROR;
	}
	json_decref(c.env);
	return code;
}

static const struct aj_arg exec_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG("CMD", AJ_COMP_COMMAND),
	AJ_ARG_REST("ARGS", AJ_COMP_FILE),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_exec = {
	.name = "exec",
	.fn = cmd_exec,
	.summary = "run a command in a running sandbox",
	.synopsis = "exec [OPTIONS] NAME [--] CMD [ARGS...]",
	.help = "Run a command in a running sandbox; exit with its status.",
	.options = exec_options,
	.args = exec_args,
	.flags = AJ_VERB_OPTS_FIRST,
};
