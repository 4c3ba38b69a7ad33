/* agentjail exec [-i] [-t] [--env K=V] [--cwd DIR] [--timeout DUR] NAME [--] CMD [ARGS...]
 *
 * The command is started by the sandbox's init (no namespaces made per command). Its stdout
 * and stderr are pipes whose write ends go straight to the command; this client reads the
 * other ends and applies the output cap. With -t the command gets a terminal made inside the
 * sandbox and this client relays it. The exit code is the command's.
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
#include "common/units.h"
#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"
#include "supervisor/output.h"
#include "supervisor/run.h"

struct exec_cli {
	struct aj_cli cli;
	bool interactive, tty;
	const char *cwd;
	uint64_t timeout_ms, output_cap;
	bool have_cap;
	json_t *env;
};

static int exec_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct exec_cli *c = vctx;
	const char *eq;

	if (!strcmp(name, "interactive"))
		c->interactive = true;
	else if (!strcmp(name, "tty"))
		c->tty = true;
	else if (!strcmp(name, "cwd"))
		c->cwd = v;
	else if (!strcmp(name, "timeout"))
		return aj_policy_parse_duration("--timeout", v, &c->timeout_ms, err);
	else if (!strcmp(name, "output-limit")) {
		c->have_cap = true;
		c->output_cap = 0;
		if (!strcmp(v, "none"))
			return 0;
		return aj_policy_parse_size("--output-limit", v, &c->output_cap, err);
	} else if (!strcmp(name, "env")) {
		eq = strchr(v, '=');
		if (!eq || eq == v)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "--env: expected NAME=VALUE, got \"%s\"",
					  v);
		json_object_set_new(c->env, strndup(v, (size_t)(eq - v)) ?: "", json_string(eq + 1));
	} else
		return aj_cli_set_common(vctx, name, v, err);
	return 0;
}

static const struct aj_option exec_options[] = {
	{"interactive", 'i', NULL, exec_opt, "pass stdin to the command"},
	{"tty", 't', NULL, exec_opt, "give the command a terminal"},
	{"env", 'e', "NAME=VALUE", exec_opt, "set a variable for this command (repeatable)"},
	{"cwd", 'w', "DIR", exec_opt, "working directory (default: the workspace)"},
	{"timeout", 0, "DURATION", exec_opt, "kill the command after this long (exit 124)"},
	{"output-limit", 0, "SIZE", exec_opt, "stdout+stderr passed on (default: the policy's)"},
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};

static volatile sig_atomic_t pending_sig;

static void on_sig(int sig)
{
	pending_sig = sig;
}

struct session {
	int ctl;
	int out[2]; /* our read ends, -1 at EOF */
	int in_src, in_dst; /* stdin relay: caller's fd 0 -> pipe or terminal master */
	int master;
	uint64_t exec_id;
	struct aj_output cap;
	bool exited, truncated_said;
	int exit_code;
	struct termios saved;
	bool raw;
};

static uint64_t policy_output_cap(const struct aj_sandbox_rec *r)
{
	json_t *p = json_loads(r->policy, 0, NULL);
	json_t *v = json_object_get(json_object_get(p, "limits"), "output_bytes");
	uint64_t cap = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;

	json_decref(p);
	return cap;
}

static int pump(int from, int to, struct session *s, int stream)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof buf);
	size_t pass;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	if (stream < 0)
		return aj_write_all(to, buf, (size_t)n) < 0 ? -1 : 0;
	pass = aj_output_admit(&s->cap, stream, (size_t)n);
	if (pass)
		aj_write_all(to, buf, pass);
	if (pass < (size_t)n && !s->truncated_said) {
		s->truncated_said = true;
		fprintf(stderr, "\nagentjail: output limit reached; further output is discarded\n");
	}
	return 0;
}

static void take_event(struct session *s)
{
	json_t *m = NULL;
	int fds[AJ_CTL_MAX_FDS];
	size_t n = 0;

	if (aj_ctl_recv(s->ctl, &m, fds, &n, 0) < 0) {
		if (errno != EAGAIN && errno != ETIMEDOUT && !s->exited) {
			fprintf(stderr, "agentjail: the sandbox's supervisor went away\n");
			s->exited = true;
			s->exit_code = AJ_EXIT_ERROR;
		}
		return;
	}
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	if (json_object_get(m, "event") &&
	    (uint64_t)json_integer_value(json_object_get(m, "exec")) == s->exec_id) {
		s->exited = true;
		s->exit_code = (int)json_integer_value(json_object_get(m, "exit_code"));
		if (json_is_string(json_object_get(m, "limit")))
			fprintf(stderr, "agentjail: %s limit reached; the command was killed\n",
				json_string_value(json_object_get(m, "limit")));
	}
	json_decref(m);
}

static void forward_signal(struct session *s)
{
	int sig = pending_sig;

	pending_sig = 0;
	aj_ctl_send(s->ctl, json_pack("{s:s, s:I, s:i}", "op", "signal", "exec",
				      (json_int_t)s->exec_id, "signal", sig) ?: json_null(),
		    NULL, 0);
}

static void resize(struct session *s)
{
	struct winsize ws;

	if (s->master >= 0 && ioctl(1, TIOCGWINSZ, &ws) == 0)
		ioctl(s->master, TIOCSWINSZ, &ws);
}

/* Relays until the command ended and its output is drained. Output that background
 * processes keep writing after the command exited is read for a short while only. */
static void relay(struct session *s)
{
	int idle_after_exit = 0;

	while (!s->exited || idle_after_exit < 5) {
		struct pollfd p[4] = {{s->ctl, POLLIN, 0},
				      {s->out[0], POLLIN, 0},
				      {s->out[1], POLLIN, 0},
				      {s->in_src, POLLIN, 0}};
		int r = poll(p, 4, s->exited ? 20 : -1);

		if (pending_sig == SIGWINCH) {
			pending_sig = 0;
			resize(s);
		} else if (pending_sig) {
			forward_signal(s);
		}
		if (r < 0)
			continue;
		if (r == 0) {
			idle_after_exit++;
			continue;
		}
		if (p[0].revents)
			take_event(s);
		for (int i = 0; i < 2; i++)
			if (p[1 + i].revents && pump(s->out[i], 1 + i, s, i) < 0) {
				close(s->out[i]);
				s->out[i] = -1;
			}
		if (p[3].revents && pump(s->in_src, s->in_dst, s, -1) < 0) {
			if (s->in_dst != s->master)
				close(s->in_dst);
			s->in_src = s->in_dst = -1;
		}
		if (s->exited && s->out[0] < 0 && s->out[1] < 0)
			break;
	}
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

static int start(struct session *s, struct exec_cli *c, json_t *req, struct aj_err *err)
{
	int p[2][2] = {{-1, -1}, {-1, -1}}, in[2] = {-1, -1}, fds[3], got[AJ_CTL_MAX_FDS];
	size_t ngot = 0;
	json_t *reply = NULL;
	int rc;

	if (c->tty) {
		struct winsize ws;
		if (ioctl(1, TIOCGWINSZ, &ws) == 0)
			json_object_update_new(req, json_pack("{s:i, s:i}", "rows", ws.ws_row, "cols",
							      ws.ws_col));
		json_object_set_new(req, "tty", json_true());
		rc = aj_ctl_call(s->ctl, req, NULL, 0, &reply, got, &ngot, 30000, err);
		if (rc == 0 && ngot == 1) {
			s->master = got[0];
			s->out[0] = dup(s->master);
			s->in_src = c->interactive || isatty(0) ? 0 : -1;
			s->in_dst = s->master;
			raw_mode(s);
		}
	} else {
		if (pipe2(p[0], O_CLOEXEC) < 0 || pipe2(p[1], O_CLOEXEC) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "pipe");
		if (c->interactive && pipe2(in, O_CLOEXEC) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "pipe");
		fds[0] = c->interactive ? in[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);
		fds[1] = p[0][1];
		fds[2] = p[1][1];
		rc = aj_ctl_call(s->ctl, req, fds, 3, &reply, NULL, NULL, 30000, err);
		close(fds[0]);
		close(p[0][1]);
		close(p[1][1]);
		s->out[0] = p[0][0];
		s->out[1] = p[1][0];
		s->in_src = c->interactive ? 0 : -1;
		s->in_dst = in[1];
	}
	if (rc == 0)
		s->exec_id = (uint64_t)json_integer_value(json_object_get(reply, "exec"));
	json_decref(reply);
	return rc;
}

static int run_exec(struct exec_cli *c, const char *ref, char **cmd, struct aj_err *err)
{
	struct aj_mgr m = {0};
	struct aj_sandbox_rec rec;
	struct session s = {.ctl = -1, .out = {-1, -1}, .in_src = -1, .in_dst = -1, .master = -1};
	json_t *argv = json_array(), *req;
	int code = -1;

	for (char **a = cmd; *a; a++)
		json_array_append_new(argv, json_string(*a));
	req = json_pack("{s:s, s:o, s:O, s:s?, s:I}", "op", "exec", "argv", argv, "env", c->env,
			"cwd", c->cwd, "timeout_ms", (json_int_t)c->timeout_ms);
	if (aj_cli_open(&c->cli, &m, err) < 0 || (s.ctl = aj_mgr_connect(&m, ref, &rec, err)) < 0) {
		json_decref(req);
		goto out;
	}
	s.cap.cap = c->have_cap ? c->output_cap : policy_output_cap(&rec);
	aj_sandbox_rec_free(&rec);
	if (start(&s, c, req, err) < 0)
		goto out;
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGHUP, on_sig);
	signal(SIGWINCH, on_sig);
	signal(SIGPIPE, SIG_IGN);
	relay(&s);
	code = s.exit_code;
out:
	if (s.raw)
		tcsetattr(0, TCSANOW, &s.saved);
	for (int i = 0; i < 2; i++)
		if (s.out[i] >= 0)
			close(s.out[i]);
	if (s.master >= 0)
		close(s.master);
	if (s.ctl >= 0)
		close(s.ctl);
	aj_mgr_close(&m);
	return code;
}

int aj_cmd_exec(int argc, char **argv)
{
	static struct exec_cli c;
	struct aj_err err;
	const char *ref;
	int pos = 1, code;

	c.env = json_object();
	aj_err_clear(&err);
	if (aj_args_parse(exec_options, &c, argc, argv, &pos, &err) < 0)
		return aj_cli_fail(&c.cli, &err) == 0 ? 0 : AJ_EXIT_ERROR;
	if (c.cli.help) {
		aj_args_usage(stdout, "agentjail exec [OPTIONS] NAME [--] CMD [ARGS...]",
			      "Run a command in a running sandbox; exit with its status.",
			      exec_options);
		return 0;
	}
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "exec: missing the sandbox name");
		aj_cli_fail(&c.cli, &err);
		return AJ_EXIT_ERROR;
	}
	ref = argv[pos++];
	if (pos < argc && !strcmp(argv[pos], "--"))
		pos++;
	if (pos >= argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "exec: missing the command to run");
		aj_cli_fail(&c.cli, &err);
		return AJ_EXIT_ERROR;
	}
	code = run_exec(&c, ref, argv + pos, &err);
	if (code < 0) {
		aj_cli_fail(&c.cli, &err);
		/* exec keeps the command's exit codes for the command: its own failures are 125,
		 * or 126/127 when the command could not be started. */
		code = err.layer == AJ_LAYER_EXEC && err.errnum == ENOENT ? AJ_EXIT_NOTFOUND
		     : err.layer == AJ_LAYER_EXEC			   ? AJ_EXIT_NOEXEC
									   : AJ_EXIT_ERROR;
	}
	json_decref(c.env);
	return code;
}
