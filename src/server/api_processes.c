/* Background processes in a running sandbox: they run on without any client; their output
 * is kept by the sandbox's supervisor and can be read or followed later, their stdin written,
 * signals sent, a terminal resized. Process ids are the supervisor's exec ids, valid within
 * one compute generation of the sandbox. Spawning, the supervisor calls and the stream that
 * follows output are shared with exec (api_exec.c, procs_internal.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"
#include "server/procs_internal.h"

/* ---- POST and GET .../processes ---------------------------------------------------------------- */

static const struct aj_jf_field process_fields[] = {
	AJ_SRV_STRINGS("argv", 0),
	AJ_SRV_STRING("command", 0),
	AJ_SRV_LABELS("env", 0),
	AJ_SRV_STRING("cwd", 0),
	AJ_SRV_STRING("user", 0),
	AJ_SRV_DURATION("timeout", 0),
	AJ_SRV_BOOL("tty", 0),
	AJ_SRV_UINT("rows", 0),
	AJ_SRV_UINT("cols", 0),
	AJ_SRV_BOOL("stdin", 0),
	AJ_SRV_STRING("tag", 0),
	AJ_SRV_FIELDS_END,
};

static json_t *process_json(json_t *p)
{
	json_t *exit = json_object_get(p, "exit");

	return json_pack("{s:I, s:i, s:O, s:s, s:b, s:b, s:o, s:O, s:o}", "id",
			 json_integer_value(json_object_get(p, "exec")), "pid",
			 (int)json_integer_value(json_object_get(p, "pid")), "argv",
			 json_object_get(p, "argv"), "tag",
			 json_string_value(json_object_get(p, "tag")) ?: "", "tty",
			 json_is_true(json_object_get(p, "tty")), "running",
			 json_is_true(json_object_get(p, "running")), "started",
			 aj_srv_time_json(json_integer_value(json_object_get(p, "started_ms"))),
			 "output_bytes", json_object_get(p, "output_bytes"), "exit",
			 exit ? aj_srv_exit_line(exit) : json_null());
}

static int process_prepare(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);

	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "argv", "a JSON body is required");
	if (aj_srv_check_fields(r, process_fields) < 0 || aj_srv_build_spawn(r, d, false) < 0)
		return -1;
	if (json_is_true(json_object_get(r->body, "stdin")))
		json_object_set_new(d->spawn, "stdin", json_true());
	/* A background process has no timeout unless asked: it is meant to run on. */
	if (!json_object_get(d->spawn, "timeout_ms"))
		json_object_set_new(d->spawn, "timeout_ms", json_integer(0));
	return 0;
}

/* The supervisor's record of process `id` (a new reference), or NULL with the request failed. */
static json_t *find_process(struct aj_srv_req *r, struct aj_srv_pdata *d, uint64_t id)
{
	json_t *reply = NULL, *p, *found = NULL;
	size_t i;

	if (aj_srv_proc_call(r, d, json_pack("{s:s}", "op", "procs"), &reply) < 0)
		return NULL;
	json_array_foreach(json_object_get(reply, "procs"), i, p) if (
		(uint64_t)json_integer_value(json_object_get(p, "exec")) == id) found = json_incref(p);
	json_decref(reply);
	if (!found)
		aj_srv_fail(r, 404, "not_found", NULL, "no process %llu in sandbox \"%s\"",
			    (unsigned long long)id, r->ref);
	return found;
}

static void process_start_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = r->data;
	json_t *p;

	if (aj_srv_proc_spawn(r, m, d) < 0 || !(p = find_process(r, d, d->exec)))
		return;
	snprintf(r->location, sizeof r->location, "/v1/sandboxes/%s/processes/%llu", r->ref,
		 (unsigned long long)d->exec);
	aj_srv_ok(r, 201, process_json(p));
	json_decref(p);
}

static void process_list_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);
	json_t *reply = NULL, *p, *out;
	size_t i;

	if (aj_srv_proc_connect(r, m, d) < 0 || aj_srv_proc_call(r, d, json_pack("{s:s}", "op", "procs"), &reply) < 0)
		return;
	out = json_array();
	json_array_foreach(json_object_get(reply, "procs"), i, p)
		json_array_append_new(out, process_json(p));
	json_decref(reply);
	aj_srv_ok(r, 200, json_pack("{s:o}", "processes", out));
}

/* {name} of the path: the process id. */
static int process_id(struct aj_srv_req *r, uint64_t *id)
{
	char *end;
	unsigned long long v = strtoull(r->name, &end, 10);

	if (!r->name[0] || *end || v == 0)
		return aj_srv_fail(r, 404, "not_found", NULL, "no process \"%s\"", r->name);
	*id = v;
	return 0;
}

static void process_get_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);
	uint64_t id = 0;
	json_t *p;

	if (process_id(r, &id) < 0 || aj_srv_proc_connect(r, m, d) < 0 ||
	    !(p = find_process(r, d, id)))
		return;
	aj_srv_ok(r, 200, process_json(p));
	json_decref(p);
}

/* ---- GET .../processes/{id}/output -------------------------------------------------------------- */

static const char *const output_query[] = {"from", "follow", NULL};

static int output_prepare(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);

	d->from_given = aj_srv_query(r, "from") != NULL;
	return aj_srv_query_int(r, "from", 0, INT64_MAX, &d->from) < 0 ||
			       aj_srv_query_bool(r, "follow", &d->follow) < 0
		       ? -1
		       : 0;
}

/* Collects the retained output up to the attach answer's offset (and the exit, if it ended). */
static void collect_output(struct aj_srv_req *r, struct aj_srv_pdata *d)
{
	uint64_t until = (uint64_t)json_integer_value(json_object_get(d->attach, "offset"));
	bool running = json_is_true(json_object_get(d->attach, "running"));
	struct aj_srv_textconv tc;
	json_t *chunks = json_array(), *exit = NULL, *m = NULL;
	uint64_t at = (uint64_t)d->from;

	memset(&tc, 0, sizeof tc);
	/* No descriptors wanted: any that come are closed. */
	while ((running ? at < until : !exit) &&
	       aj_ctl_recv(d->ctl, &m, NULL, NULL, AJ_SRV_CALL_MS) == 0) {
		const char *ev = json_string_value(json_object_get(m, "event"));
		if (ev && !strcmp(ev, "output")) {
			at = (uint64_t)json_integer_value(json_object_get(m, "offset")) +
			     (uint64_t)json_integer_value(json_object_get(m, "size"));
			json_array_append_new(chunks, aj_srv_output_line(&tc, m));
		} else if (ev && !strcmp(ev, "exit")) {
			exit = aj_srv_exit_line(m);
		}
		json_decref(m);
		m = NULL;
	}
	aj_srv_ok(r, 200,
		  json_pack("{s:o, s:I, s:I, s:b, s:o}", "output", chunks, "next_offset",
			    (json_int_t)at, "retained_from",
			    json_integer_value(json_object_get(d->attach, "retained_from")),
			    "running", running, "exit", exit ? exit : json_null()));
}

static void output_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = r->data;
	uint64_t id = 0;
	json_t *req;

	if (process_id(r, &id) < 0 || aj_srv_proc_connect(r, m, d) < 0)
		return;
	d->exec = id;
	req = json_pack("{s:s, s:I, s:I}", "op", "attach", "exec", (json_int_t)id, "from",
			(json_int_t)d->from);
	if (aj_srv_proc_call(r, d, req, &d->attach) < 0)
		return;
	if (d->follow)
		aj_fd_set_nonblock(d->ctl, true);
	else
		collect_output(r, d);
}

static void output_done(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = r->data;

	if (r->failed || !d->follow) {
		aj_srv_req_finish(r);
		return;
	}
	aj_srv_proc_stream(r, d, false,
		       json_pack("{s:s, s:I, s:b, s:O, s:O}", "type", "attached", "process",
				 (json_int_t)d->exec, "running",
				 json_is_true(json_object_get(d->attach, "running")), "offset",
				 json_object_get(d->attach, "offset"), "retained_from",
				 json_object_get(d->attach, "retained_from")),
		       false);
}

/* ---- stdin, signals, terminal size --------------------------------------------------------------- */

static const struct aj_jf_field stdin_fields[] = {
	AJ_SRV_STRING("data", 0),
	AJ_SRV_STRING("data_base64", 0),
	AJ_SRV_BOOL("eof", 0),
	AJ_SRV_FIELDS_END,
};

static int stdin_prepare(struct aj_srv_req *r)
{
	struct aj_srv_pdata *d = aj_srv_pdata_new(r);

	if (!r->body)
		r->body = json_object();
	if (aj_srv_check_fields(r, stdin_fields) < 0)
		return -1;
	if (aj_srv_str(r, "data") && aj_srv_str(r, "data_base64"))
		return aj_srv_fail(r, 400, "invalid_value", "data",
				   "data: give \"data\" or \"data_base64\", not both");
	json_object_set_new(r->body, "stdin", json_deep_copy(json_object_get(r->body, "data")));
	json_object_set_new(r->body, "stdin_base64",
			    json_deep_copy(json_object_get(r->body, "data_base64")));
	if (!json_object_get(r->body, "data"))
		json_object_del(r->body, "stdin");
	if (!json_object_get(r->body, "data_base64"))
		json_object_del(r->body, "stdin_base64");
	d->spawn = json_object(); /* exec_stdin marks it; unused otherwise */
	return aj_srv_spawn_stdin(r, d);
}

static void stdin_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct aj_srv_pdata *d = r->data;
	uint64_t id = 0;
	json_t *req;

	if (process_id(r, &id) < 0 || aj_srv_proc_connect(r, m, d) < 0)
		return;
	req = json_pack("{s:s, s:I, s:b}", "op", "input", "exec", (json_int_t)id, "eof",
			json_is_true(json_object_get(r->body, "eof")));
	if (d->stdin_text)
		json_object_set(req, "data", d->stdin_text);
	if (aj_srv_proc_call(r, d, req, NULL) == 0)
		aj_srv_ok(r, 204, NULL);
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
	{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"STOP", SIGSTOP},
	{"CONT", SIGCONT}, {"WINCH", SIGWINCH}, {"ALRM", SIGALRM},
};

static const struct aj_jf_field signal_fields[] = {
	AJ_SRV_STRING("signal", AJ_JF_REQUIRED),
	AJ_SRV_FIELDS_END,
};

static int signal_number(struct aj_srv_req *r, int *sig)
{
	const char *s = aj_srv_str(r, "signal");

	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
		if (!strcmp(s, signals[i].name)) {
			*sig = signals[i].sig;
			return 0;
		}
	return aj_srv_fail(r, 400, "invalid_value", "signal",
			   "signal: one of HUP INT QUIT KILL USR1 USR2 TERM STOP CONT WINCH ALRM "
			   "(with or without SIG)");
}

static int signal_prepare(struct aj_srv_req *r)
{
	int *sig = aj_xcalloc(1, sizeof *sig);

	r->data = sig;
	r->data_free = free;
	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "signal", "signal: required");
	return aj_srv_check_fields(r, signal_fields) < 0 ? -1 : signal_number(r, sig);
}

/* One call about process {name} on a fresh connection: signal and resize. */
static void simple_call(struct aj_srv_req *r, struct aj_mgr *m, json_t *req)
{
	__attribute__((cleanup(aj_srv_pdata_freep))) struct aj_srv_pdata *d =
		aj_xcalloc(1, sizeof *d);
	_cleanup_json_ json_t *call = req;
	uint64_t id = 0;

	d->ctl = -1;
	if (process_id(r, &id) < 0 || aj_srv_proc_connect(r, m, d) < 0)
		return;
	json_object_set_new(call, "exec", json_integer((json_int_t)id));
	if (aj_srv_proc_call(r, d, aj_steal_ptr(&call), NULL) == 0) /* consumes the call */
		aj_srv_ok(r, 204, NULL);
}

static void signal_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	simple_call(r, m, json_pack("{s:s, s:i}", "op", "signal", "signal", *(int *)r->data));
}

static const struct aj_jf_field resize_fields[] = {
	AJ_SRV_UINT("rows", AJ_JF_REQUIRED),
	AJ_SRV_UINT("cols", AJ_JF_REQUIRED),
	AJ_SRV_FIELDS_END,
};

static int resize_prepare(struct aj_srv_req *r)
{
	if (!r->body)
		return aj_srv_fail(r, 400, "missing_field", "rows", "rows: required");
	return aj_srv_check_fields(r, resize_fields);
}

static void resize_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	simple_call(r, m, json_pack("{s:s, s:O, s:O}", "op", "resize", "rows",
				    json_object_get(r->body, "rows"), "cols",
				    json_object_get(r->body, "cols")));
}

const struct aj_srv_route aj_api_proc_routes[] = {
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/processes", AJ_SRV_BODY_JSON, NULL,
	 process_prepare, process_start_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/processes", AJ_SRV_BODY_NONE, NULL, NULL,
	 process_list_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/processes/{name}", AJ_SRV_BODY_NONE, NULL, NULL,
	 process_get_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_GET, "/v1/sandboxes/{ref}/processes/{name}/output", AJ_SRV_BODY_NONE,
	 output_query, output_prepare, output_work, output_done),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/processes/{name}/stdin", AJ_SRV_BODY_JSON, NULL,
	 stdin_prepare, stdin_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/processes/{name}/signal", AJ_SRV_BODY_JSON, NULL,
	 signal_prepare, signal_work, NULL),
	AJ_SRV_ROUTE(EVHTTP_REQ_POST, "/v1/sandboxes/{ref}/processes/{name}/resize", AJ_SRV_BODY_JSON, NULL,
	 resize_prepare, resize_work, NULL),
	AJ_SRV_ROUTES_END,
};
