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
#include <stddef.h>
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

json_t *e2b_proc_find(struct aj_srv_req *r, const struct e2b_selector *sel)
{
	json_t *reply = NULL, *p, *found = NULL;
	size_t i;

	if (!sel->have_pid && !sel->tag) {
		e2b_rpc_fail(r, "invalid_argument", "process: a pid or a tag is required");
		return NULL;
	}
	if (e2b_proc_call(r, json_pack("{s:s}", "op", "procs"), &reply) < 0)
		return NULL;
	json_array_foreach(json_object_get(reply, "procs"), i, p) {
		const char *tag = json_string_value(json_object_get(p, "tag"));
		bool by_pid = sel->have_pid && json_integer_value(json_object_get(p, "exec")) == sel->pid;
		bool by_tag = sel->tag && tag && !strcmp(tag, sel->tag);
		if (running(p) && (by_pid || by_tag) && !found)
			found = json_incref(p);
	}
	json_decref(reply);
	if (!found && sel->have_pid)
		e2b_rpc_fail(r, "not_found", "process with pid %lld not found", (long long)sel->pid);
	else if (!found)
		e2b_rpc_fail(r, "not_found", "process with tag %s not found", sel->tag);
	return found;
}

/* The messages of the unary calls: a selector, and what each call adds. */
struct proc_msg {
	struct e2b_selector sel;
	json_t *data;     /* SendInput: the bytes (borrowed) */
	bool for_pty;     /* SendInput: input.pty, not input.stdin */
	int signal;       /* SendSignal */
	json_t *pty_size; /* Update: pty.size (borrowed), NULL: nothing to change */
	unsigned rows, cols;
};

#define MSG(m) offsetof(struct proc_msg, m)

static const struct aj_jf_field selector_fields[] = {
	E2B_SELECTOR_ROW(struct proc_msg, sel),
	{.name = NULL},
};

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

/* input.pty, present even as null, is for a terminal; else input.stdin, for a pipe. */
static int keep_pty(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct proc_msg *m = dst;

	m->for_pty = true;
	m->data = v;
	return 0;
}

static int keep_stdin(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct proc_msg *m = dst;

	if (!m->for_pty)
		m->data = v;
	return 0;
}

/* Both rows at offset 0: dst is the message. */
static const struct aj_jf_field input_rows[] = {
	{.name = "pty", .type = AJ_JF_ANY, .off = 0, .parse = keep_pty},
	{.name = "stdin", .type = AJ_JF_ANY, .off = 0, .parse = keep_stdin},
	{.name = NULL},
};

/* Input for a terminal goes as "pty", for a pipe as "stdin": the other is an error, as envd's
 * (checked once the command is found). Absent or not an object, it is no input. */
static int read_input(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct proc_msg *m = dst;

	if (json_is_object(v) &&
	    aj_jf_read(input_rows, v, m, &(struct aj_jf_opts){o->layer, o->flags, path, o->arg},
		       e) < 0)
		return -1;
	if (json_is_string(m->data))
		return 0;
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "input: expected stdin or pty bytes");
}

static const struct aj_jf_field input_fields[] = {
	{.name = "input", .type = AJ_JF_ANY, .flags = AJ_JF_SEES_ABSENT, .off = 0,
	 .parse = read_input},
	E2B_SELECTOR_ROW(struct proc_msg, sel),
	{.name = NULL},
};

static void input_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct proc_msg msg = {0};
	json_t *p;

	if (e2b_read_msg(r, input_fields, &msg) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    !(p = e2b_proc_find(r, &msg.sel)))
		return;
	if (json_is_true(json_object_get(p, "tty")) != msg.for_pty)
		e2b_rpc_fail(r, "failed_precondition", "process %lld %s", (long long)json_integer_value(
				json_object_get(p, "exec")), msg.for_pty ? "has no terminal" : "has a "
				"terminal: send pty input");
	else if (e2b_proc_call(r, json_pack("{s:s, s:O, s:O}", "op", "input", "exec",
					    json_object_get(p, "exec"), "data", msg.data),
			       NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

static void close_stdin_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct proc_msg msg = {0};
	json_t *p;

	if (e2b_read_msg(r, selector_fields, &msg) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    !(p = e2b_proc_find(r, &msg.sel)))
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

/* A number, or SIGNAL_SIGKILL or SIGNAL_SIGTERM by name; only those two are sent. */
static int read_signal(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	const char *s = json_string_value(v);
	int *sig = dst;

	*sig = json_is_integer(v)			   ? (int)json_integer_value(v)
	       : s && !strcmp(s, "SIGNAL_SIGKILL") ? SIGKILL
	       : s && !strcmp(s, "SIGNAL_SIGTERM") ? SIGTERM
						   : 0;
	if (*sig == SIGKILL || *sig == SIGTERM)
		return 0;
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
}

static const struct aj_jf_field signal_fields[] = {
	{.name = "signal", .type = AJ_JF_ANY, .flags = AJ_JF_SEES_ABSENT, .off = MSG(signal),
	 .parse = read_signal},
	E2B_SELECTOR_ROW(struct proc_msg, sel),
	{.name = NULL},
};

static void signal_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct proc_msg msg = {0};
	json_t *p;

	if (e2b_read_msg(r, signal_fields, &msg) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    !(p = e2b_proc_find(r, &msg.sel)))
		return;
	if (e2b_proc_call(r, json_pack("{s:s, s:O, s:i}", "op", "signal", "exec",
				       json_object_get(p, "exec"), "signal", msg.signal),
			  NULL) == 0)
		aj_srv_ok(r, 200, json_object());
	json_decref(p);
}

static int keep_size(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	*(json_t **)dst = v;
	return 0;
}

static const struct aj_jf_field pty_rows[] = {
	{.name = "size", .type = AJ_JF_ANY, .off = MSG(pty_size), .parse = keep_size},
	{.name = NULL},
};

/* pty.size, checked as e2b_pty_size does; a pty that is no object has none. dst: the
 * message (offset 0). */
static int read_pty_size(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct proc_msg *m = dst;

	if (json_is_object(v) &&
	    aj_jf_read(pty_rows, v, m, &(struct aj_jf_opts){o->layer, o->flags, path, o->arg}, e) <
		    0)
		return -1;
	if (e2b_pty_size(m->pty_size, &m->rows, &m->cols))
		return 0;
	return aj_jf_fail(e, AJ_JF_VALUE, f, path, v, "pty.size: expected rows and cols of 0-65535");
}

static const struct aj_jf_field update_fields[] = {
	{.name = "pty", .type = AJ_JF_ANY, .off = 0, .parse = read_pty_size},
	E2B_SELECTOR_ROW(struct proc_msg, sel),
	{.name = NULL},
};

static void update_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct proc_msg msg = {0};
	json_t *p;

	if (e2b_read_msg(r, update_fields, &msg) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    !(p = e2b_proc_find(r, &msg.sel)))
		return;
	if (!msg.pty_size)
		aj_srv_ok(r, 200, json_object()); /* nothing to change */
	else if (!json_is_true(json_object_get(p, "tty")))
		e2b_rpc_fail(r, "failed_precondition", "the process has no terminal to resize");
	else if (e2b_proc_call(r, json_pack("{s:s, s:O, s:i, s:i}", "op", "resize", "exec",
					    json_object_get(p, "exec"), "rows", (int)msg.rows, "cols",
					    (int)msg.cols),
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
