/* envd's process.Process service (docs/e2b-protocol.md 7) on the supervisor's spawned
 * commands (supervisor/procs.h): the supervisor holds their stdio and they run on when a
 * client goes, as envd's do. An E2B pid is the command's exec id: unique for the sandbox's
 * compute generation, unlike a pid inside, which the kernel reuses; the SDK only hands back
 * what a start event gave it.
 *
 * The process config E2B lists (envs, cwd as given) travels with the command as the spawn's
 * meta. Users: the sandbox user runs everything (a sandbox has no real root; docs/e2b.md).
 * Start and Connect are streams (pstream.c); the rest are unary calls, one supervisor round
 * trip each (two where the command's kind, pipe or terminal, must be checked first). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/client.h"
#include "e2b/internal.h"

#define CALL_MS 30000

int e2b_proc_call(struct aj_srv_req *r, json_t *req, json_t **reply)
{
	struct aj_err err;

	if (aj_ctl_call(e2b_of(r)->ctl, req, NULL, 0, reply, NULL, NULL, CALL_MS, &err) == 0)
		return 0;
	if (err.errnum == ESRCH)
		return e2b_rpc_fail(r, "not_found", "%s", err.msg);
	if (err.errnum == EPIPE)
		return e2b_rpc_fail(r, "failed_precondition", "stdin not enabled or closed");
	if (err.errnum == EAGAIN && err.layer == AJ_LAYER_STATE)
		return e2b_rpc_fail(r, "resource_exhausted", "%s", err.msg);
	return e2b_fail_err(r, &err);
}

/* ---- process selectors ------------------------------------------------------------------------ */

static bool running(json_t *p)
{
	return json_is_true(json_object_get(p, "running"));
}

json_t *e2b_proc_find(struct aj_srv_req *r, json_t *sel)
{
	json_t *pid = json_object_get(sel, "pid"), *tag = json_object_get(sel, "tag");
	json_t *reply = NULL, *p, *found = NULL;
	size_t i;

	if (!json_is_integer(pid) && !json_is_string(tag)) {
		e2b_rpc_fail(r, "invalid_argument", "process: a pid or a tag is required");
		return NULL;
	}
	if (e2b_proc_call(r, json_pack("{s:s}", "op", "procs"), &reply) < 0)
		return NULL;
	json_array_foreach(json_object_get(reply, "procs"), i, p) {
		bool by_pid = json_is_integer(pid) &&
			      json_integer_value(json_object_get(p, "exec")) == json_integer_value(pid);
		bool by_tag = json_is_string(tag) && json_equal(json_object_get(p, "tag"), tag);
		if (running(p) && (by_pid || by_tag) && !found)
			found = json_incref(p);
	}
	json_decref(reply);
	if (!found && json_is_integer(pid))
		e2b_rpc_fail(r, "not_found", "process with pid %lld not found",
			     (long long)json_integer_value(pid));
	else if (!found)
		e2b_rpc_fail(r, "not_found", "process with tag %s not found", json_string_value(tag));
	return found;
}

static json_t *selector(struct aj_srv_req *r)
{
	return json_object_get(e2b_of(r)->msg, "process");
}

/* ---- List --------------------------------------------------------------------------------------- */

static json_t *info_json(json_t *p)
{
	json_t *argv = json_object_get(p, "argv"), *meta = json_object_get(p, "meta");
	json_t *args = json_array(), *envs = json_object_get(meta, "envs"), *cfg, *info;
	const char *tag = json_string_value(json_object_get(p, "tag"));
	size_t i;
	json_t *a;

	json_array_foreach(argv, i, a) if (i > 0) json_array_append(args, a);
	cfg = json_pack("{s:O?, s:o, s:o}", "cmd", json_array_get(argv, 0), "args", args, "envs",
			json_is_object(envs) ? json_incref(envs) : json_object());
	if (json_is_string(json_object_get(meta, "cwd")))
		json_object_set(cfg, "cwd", json_object_get(meta, "cwd"));
	info = json_pack("{s:o, s:O}", "config", cfg, "pid", json_object_get(p, "exec"));
	if (tag && tag[0])
		json_object_set_new(info, "tag", json_string(tag));
	return info;
}

static void list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *reply = NULL, *p, *out;
	size_t i;

	if (e2b_sandbox_open(r, m) < 0 ||
	    e2b_proc_call(r, json_pack("{s:s}", "op", "procs"), &reply) < 0)
		return;
	out = json_array();
	json_array_foreach(json_object_get(reply, "procs"), i, p) if (running(p))
		json_array_append_new(out, info_json(p));
	json_decref(reply);
	aj_srv_ok(r, 200, json_pack("{s:o}", "processes", out));
}

/* ---- SendInput, CloseStdin ------------------------------------------------------------------- */

/* Input for a terminal goes as "pty", for a pipe as "stdin": the other is an error, as envd's. */
static void input_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *in = json_object_get(e2b_of(r)->msg, "input");
	json_t *data = json_object_get(in, "pty") ? json_object_get(in, "pty")
						  : json_object_get(in, "stdin");
	bool for_pty = json_object_get(in, "pty") != NULL;
	json_t *p;

	if (!json_is_string(data)) {
		e2b_rpc_fail(r, "invalid_argument", "input: expected stdin or pty bytes");
		return;
	}
	if (e2b_sandbox_open(r, m) < 0 || !(p = e2b_proc_find(r, selector(r))))
		return;
	if (json_is_true(json_object_get(p, "tty")) != for_pty)
		e2b_rpc_fail(r, "failed_precondition", "process %lld %s", (long long)json_integer_value(
				json_object_get(p, "exec")), for_pty ? "has no terminal" : "has a "
				"terminal: send pty input");
	else if (e2b_proc_call(r, json_pack("{s:s, s:O, s:O}", "op", "input", "exec",
					    json_object_get(p, "exec"), "data", data),
			       NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

static void close_stdin_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *p;

	if (e2b_sandbox_open(r, m) < 0 || !(p = e2b_proc_find(r, selector(r))))
		return;
	if (json_is_true(json_object_get(p, "tty")))
		e2b_rpc_fail(r, "failed_precondition", "a terminal has no stdin to close");
	else if (e2b_proc_call(r, json_pack("{s:s, s:O}", "op", "close_stdin", "exec",
					    json_object_get(p, "exec")),
			       NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

/* ---- SendSignal, Update ------------------------------------------------------------------------ */

static int signal_number(json_t *v)
{
	const char *s = json_string_value(v);

	if (json_is_integer(v))
		return (int)json_integer_value(v);
	if (s && !strcmp(s, "SIGNAL_SIGKILL"))
		return SIGKILL;
	if (s && !strcmp(s, "SIGNAL_SIGTERM"))
		return SIGTERM;
	return 0;
}

static void signal_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	int sig = signal_number(json_object_get(e2b_of(r)->msg, "signal"));
	json_t *p;

	if (sig != SIGKILL && sig != SIGTERM) {
		e2b_rpc_fail(r, "invalid_argument", "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
		return;
	}
	if (e2b_sandbox_open(r, m) < 0 || !(p = e2b_proc_find(r, selector(r))))
		return;
	if (e2b_proc_call(r, json_pack("{s:s, s:O, s:i}", "op", "signal", "exec",
				       json_object_get(p, "exec"), "signal", sig),
			  NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

static void update_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	json_t *size = json_object_get(json_object_get(e2b_of(r)->msg, "pty"), "size");
	unsigned rows, cols;
	json_t *p;

	if (!e2b_pty_size(size, &rows, &cols)) {
		e2b_rpc_fail(r, "invalid_argument", "pty.size: expected rows and cols of 0-65535");
		return;
	}
	if (e2b_sandbox_open(r, m) < 0 || !(p = e2b_proc_find(r, selector(r))))
		return;
	if (!size)
		aj_srv_ok(r, 200, json_object()); /* nothing to change */
	else if (!json_is_true(json_object_get(p, "tty")))
		e2b_rpc_fail(r, "failed_precondition", "the process has no terminal to resize");
	else if (e2b_proc_call(r, json_pack("{s:s, s:O, s:i, s:i}", "op", "resize", "exec",
					    json_object_get(p, "exec"), "rows", (int)rows, "cols",
					    (int)cols),
			       NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

const struct e2b_route e2b_process_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/Start", E2B_STREAM, e2b_start_prepare, e2b_start_work,
	 e2b_follow_done),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/Connect", E2B_STREAM, NULL, e2b_connect_work,
	 e2b_follow_done),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/List", E2B_UNARY, NULL, list_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/SendInput", E2B_UNARY, NULL, input_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/CloseStdin", E2B_UNARY, NULL, close_stdin_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/SendSignal", E2B_UNARY, NULL, signal_work, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/process.Process/Update", E2B_UNARY, NULL, update_work, NULL),
	E2B_ROUTES_END,
};
