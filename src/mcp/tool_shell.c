/* The shell tool: `/bin/sh -c COMMAND` inside the sandbox, through the same exec path as
 * `agentjail exec` (control/exec.h), with its output captured up to a cap per stream. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "control/exec.h"
#include "control/fsops.h"
#include "mcp/internal.h"

#define OUTPUT_CAP (256 * 1024) /* per stream */
#define PROGRESS_EVERY_US (10 * 1000000ull)

static const struct aj_jf_field params[] = {
	AJ_MCP_STRING("command", AJ_JF_REQUIRED,
	 "The shell command line, run as `/bin/sh -c COMMAND` (pipes, redirections, && and ; "
	 "work). Each call is a new shell: cd and variables do not carry over to the next call; "
	 "processes started in the background keep running."),
	AJ_MCP_INT("timeout_seconds", 0, 1, 1800, 120,
	 "Kill the command and everything it started after this many seconds (exit code 124). "
	 "The sandbox's policy may set a lower limit, which then applies."),
	AJ_MCP_STRING("cwd", 0,
	 "Directory to run in, absolute or relative to the sandbox's working directory "
	 "(default: the working directory)."),
	AJ_MCP_PARAMS_END,
};

static const char output_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"exit_code\":{\"type\":\"integer\",\"description\":\"the command's exit code; 128+N "
	"when signal N killed it; 124 timeout\"},"
	"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
	"\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
	"\"limit\":{\"type\":\"string\",\"description\":\"the limit that ended the command "
	"(timeout), empty if none\"},"
	"\"signal\":{\"type\":\"integer\",\"description\":\"the signal that ended it, 0 if it "
	"exited\"},"
	"\"wall_ms\":{\"type\":\"number\"}},"
	"\"required\":[\"exit_code\",\"stdout\",\"stderr\",\"stdout_truncated\","
	"\"stderr_truncated\",\"limit\",\"signal\",\"wall_ms\"]}";

struct shell_run {
	struct aj_mcp_call *call;
	struct aj_exec_capture cap;
	uint64_t started_us, last_progress_us;
	bool stopped;
};

static void on_output(void *arg, int stream, const char *buf, size_t n)
{
	struct shell_run *s = arg;

	aj_exec_capture_output(&s->cap, stream, buf, n);
}

static int on_input(void *arg, struct aj_exec *x)
{
	struct shell_run *s = arg;

	(void)x;
	return aj_mcp_call_poll_input(s->call);
}

/* Stops waiting when the client cancelled the call, went away, or the server is told to end:
 * the command is killed (with everything it started: its process group). */
static int on_wake(void *arg, struct aj_exec *x)
{
	struct shell_run *s = arg;
	uint64_t now = aj_now_monotonic_us();

	/* The end of input alone is no reason: a client that closed its end after sending still
	 * reads the answers, and one that is gone follows up with SIGTERM. */
	if (s->call->cancelled || aj_mcp_terminating()) {
		aj_exec_signal(x, SIGKILL);
		s->stopped = true;
		return 1;
	}
	if (now - s->last_progress_us >= PROGRESS_EVERY_US) {
		char msg[64];
		s->last_progress_us = now;
		snprintf(msg, sizeof msg, "running for %llu s",
			 (unsigned long long)((now - s->started_us) / 1000000));
		aj_mcp_call_progress(s->call, (double)(now - s->started_us) / 1e6, msg);
	}
	return 0;
}

static void append(char **buf, size_t *len, const char *s, size_t n)
{
	char *p = aj_xrealloc(*buf, *len + n + 1);

	memcpy(p + *len, s, n);
	*len += n;
	p[*len] = '\0';
	*buf = p;
}

static void appendf(char **buf, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void appendf(char **buf, size_t *len, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n > 0)
		append(buf, len, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* One stream's captured bytes, if any, after its label, ending with a newline. */
static void append_stream(char **t, size_t *n, const char *label, const char *data, size_t len)
{
	if (!data || !len)
		return;
	append(t, n, label, strlen(label));
	append(t, n, data, len);
	if (data[len - 1] != '\n')
		append(t, n, "\n", 1);
}

/* What the model reads: stdout, then stderr, then one line on how the command ended. */
static char *summary(const struct shell_run *s, const struct aj_exec_result *r,
		     uint64_t timeout_ms)
{
	char *t = NULL;
	size_t n = 0;

	append(&t, &n, "", 0);
	append_stream(&t, &n, "", s->cap.data[0], s->cap.len[0]);
	append_stream(&t, &n, "[stderr]\n", s->cap.data[1], s->cap.len[1]);
	for (int i = 0; i < 2; i++)
		if (s->cap.truncated[i])
			appendf(&t, &n, "[%s truncated: the command wrote %llu bytes, the first %zu "
					"are shown]\n", i ? "stderr" : "stdout",
				(unsigned long long)s->cap.total[i], s->cap.len[i]);
	if (!strcmp(r->limit, "timeout"))
		appendf(&t, &n, "[exit code %d: killed after the %llu s timeout]\n", r->exit_code,
			(unsigned long long)(timeout_ms / 1000));
	else if (r->limit[0])
		appendf(&t, &n, "[exit code %d: killed by the %s limit]\n", r->exit_code, r->limit);
	else if (r->lost)
		appendf(&t, &n, "[the sandbox's supervisor went away before the command ended]\n");
	else if (r->signal)
		appendf(&t, &n, "[exit code %d: killed by signal %d (%s)]\n", r->exit_code, r->signal,
			strsignal(r->signal));
	else
		appendf(&t, &n, "[exit code %d]\n", r->exit_code);
	return t;
}

static json_t *result_of(struct shell_run *s, const struct aj_exec_result *r, uint64_t timeout_ms)
{
	char *text = summary(s, r, timeout_ms);
	json_t *sc = json_pack("{s:i, s:o, s:o, s:b, s:b, s:s, s:i, s:f}", "exit_code", r->exit_code,
			       "stdout", aj_mcp_text(s->cap.data[0] ? s->cap.data[0] : "", s->cap.len[0]),
			       "stderr", aj_mcp_text(s->cap.data[1] ? s->cap.data[1] : "", s->cap.len[1]),
			       "stdout_truncated", s->cap.truncated[0], "stderr_truncated",
			       s->cap.truncated[1], "limit", r->limit, "signal", r->signal, "wall_ms",
			       r->wall_ms);
	json_t *res = text && sc ? aj_mcp_result_text(text, sc) : NULL;

	if (!res)
		json_decref(sc);
	free(text);
	return res;
}

/* Resolves and checks the directory first: init reports a missing one as a command that
 * could not be found, which would mislead. On failure *res is the error result, NULL if
 * even that could not be built (so NULL never passes for "checked"). */
static int check_cwd(struct aj_mcp_binding *b, int ctl, const char *arg, char *out, size_t len,
		     json_t **res)
{
	char why[600];
	struct stat st;
	struct aj_err err;

	if (aj_mcp_path(b, arg, "cwd", out, len, why, sizeof why) < 0)
		*res = aj_mcp_result_error("%s", why);
	else if (aj_fs_stat(ctl, out, true, &st, &err) < 0)
		*res = aj_mcp_result_err(&err, "arguments.cwd");
	else if (!S_ISDIR(st.st_mode))
		*res = aj_mcp_result_error("arguments.cwd: \"%s\" is not a directory", out);
	else
		return 0;
	return -1;
}

static json_t *run_shell(struct aj_mcp_call *c, json_t *args)
{
	struct aj_mcp_binding *b = &c->srv->sb;
	const char *argv[] = {"/bin/sh", "-c", aj_mcp_arg_str(args, "command"), NULL};
	uint64_t timeout_ms = (uint64_t)aj_mcp_arg_int(&aj_mcp_tool_shell, args, "timeout_seconds") * 1000;
	struct aj_exec_opts o = {.argv = argv};
	struct shell_run s = {.call = c, .cap = {.cap = OUTPUT_CAP}};
	struct aj_exec_hooks h = {.output = on_output, .watch_fd = c->srv->in.fd,
				  .on_watch = on_input, .on_wake = on_wake, .tick_ms = 1000, .arg = &s};
	struct aj_exec x;
	struct aj_err err;
	char cwd[4200];
	json_t *res;
	int ctl = aj_mcp_ctl(b, &err);

	if (ctl < 0)
		return aj_mcp_result_err(&err, "shell: the sandbox is not available");
	if (aj_mcp_arg_str(args, "cwd") &&
	    check_cwd(b, ctl, aj_mcp_arg_str(args, "cwd"), cwd, sizeof cwd, &res) < 0)
		return res;
	o.cwd = aj_mcp_arg_str(args, "cwd") ? cwd : NULL;
	if (b->policy_timeout_ms && b->policy_timeout_ms < timeout_ms)
		timeout_ms = b->policy_timeout_ms; /* the model never gets more than the policy */
	o.timeout_ms = timeout_ms;
	if (b->policy_output_cap && b->policy_output_cap < s.cap.cap)
		s.cap.cap = (size_t)b->policy_output_cap;
	s.started_us = s.last_progress_us = aj_now_monotonic_us();
	if (aj_exec_start(&x, ctl, &o, &err) < 0) {
		aj_exec_close(&x);
		if (err.layer != AJ_LAYER_EXEC)
			aj_mcp_disconnect(b); /* the next call reconnects */
		return aj_mcp_result_err(&err, "shell: could not start /bin/sh in the sandbox");
	}
	aj_exec_wait(&x, &h);
	aj_exec_close(&x);
	/* A command left behind answers on this connection later (its kill, its end), where the
	 * next request would take those for its own answers: a new connection for the next call. */
	if (s.stopped)
		aj_mcp_disconnect(b);
	if (s.stopped)
		res = c->cancelled ? NULL
				   : aj_mcp_result_error("shell: the call was abandoned (the server "
							 "is ending); the command was killed");
	else
		res = result_of(&s, &x.res, timeout_ms);
	if (x.res.lost)
		aj_mcp_disconnect(b);
	aj_exec_capture_free(&s.cap);
	return res;
}

const struct aj_mcp_tool aj_mcp_tool_shell = {
	.name = "shell",
	.title = "Run a shell command in the sandbox",
	.description =
		"Runs a command with /bin/sh inside the sandbox and returns its stdout, its stderr "
		"(after a [stderr] line) and a last line with the exit code. Output beyond 256 KiB "
		"per stream is cut (the result says so). The sandbox is an isolated Linux system: "
		"the host's files, other projects and (unless the policy allows) the network are "
		"out of reach. Use it to build, test, search (grep, find) and run programs; use "
		"read_file/write_file/edit_file for files.",
	.params = params,
	.output_schema = output_schema,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.run = run_shell,
};
