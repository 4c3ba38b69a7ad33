#include "control/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/exitcode.h"
#include "common/fdpass.h"
#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"

#define START_TIMEOUT_MS 30000
/* After the command ended, output still arriving (a background process holding the pipes)
 * is read until the pipes have been quiet this many times DRAIN_POLL_MS in a row. */
#define DRAIN_IDLE_ROUNDS 5
#define DRAIN_POLL_MS 20

static json_t *exec_request(const struct aj_exec_opts *o)
{
	json_t *argv = json_array(), *req;

	for (const char *const *a = o->argv; a && *a; a++)
		json_array_append_new(argv, json_string(*a));
	req = json_pack("{s:s, s:o, s:O?, s:s?, s:s?, s:I, s:s?}", "op",
			o->name ? "exec_named" : "exec", "argv", argv, "env", o->env, "cwd", o->cwd,
			"user", o->user, "timeout_ms", (json_int_t)o->timeout_ms, "name", o->name);
	if (req && o->tty) {
		json_object_set_new(req, "tty", json_true());
		if (o->rows && o->cols)
			json_object_update_new(req, json_pack("{s:i, s:i}", "rows", o->rows, "cols",
							      o->cols));
	}
	return req;
}

/* What an accepted request's reply says besides the command's id. */
static void take_started(struct aj_exec *x, json_t *reply)
{
	json_t *cap = json_object_get(reply, "output_cap");

	x->id = (uint64_t)json_integer_value(json_object_get(reply, "exec"));
	x->output_cap = json_is_integer(cap) && json_integer_value(cap) >= 0
				? (int64_t)json_integer_value(cap)
				: -1;
}

static int start_tty(struct aj_exec *x, json_t *req, struct aj_err *err)
{
	_cleanup_fdset_ struct aj_fdset got = {.n = 0};
	_cleanup_json_ json_t *reply = NULL;

	if (aj_ctl_call(x->ctl, req, NULL, 0, &reply, got.v, &got.n, START_TIMEOUT_MS, err) < 0)
		return -1;
	take_started(x, reply);
	if (got.n == 0)
		return aj_err_set(err, AJ_LAYER_EXEC, EPROTO, "the supervisor sent no terminal");
	x->master = aj_steal_fd(&got.v[0]);
	x->in = x->master;
	x->out[0] = dup(x->master);
	if (x->out[0] < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "dup the terminal");
	return 0;
}

/* The command's ends of the pipes go to the supervisor (and on to init); ours stay here.
 * req is consumed. */
static int start_pipes(struct aj_exec *x, json_t *req, bool stdin_pipe, struct aj_err *err)
{
	_cleanup_json_ json_t *request = req, *reply = NULL;
	_cleanup_close_ int out_r = -1, out_w = -1, err_r = -1, err_w = -1, in_r = -1, in_w = -1;

	if (aj_pipe(&out_r, &out_w, O_CLOEXEC) < 0 || aj_pipe(&err_r, &err_w, O_CLOEXEC) < 0 ||
	    (stdin_pipe && aj_pipe(&in_r, &in_w, O_CLOEXEC) < 0))
		return aj_err_sys(err, AJ_LAYER_IO, "pipe");
	if (!stdin_pipe && (in_r = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "open \"/dev/null\"");
	if (aj_ctl_call(x->ctl, aj_steal_ptr(&request), (int[]){in_r, out_w, err_w}, 3, &reply,
			NULL, NULL, START_TIMEOUT_MS, err) < 0)
		return -1;
	take_started(x, reply);
	x->out[0] = aj_steal_fd(&out_r);
	x->out[1] = aj_steal_fd(&err_r);
	x->in = aj_steal_fd(&in_w);
	return 0;
}

int aj_exec_start(struct aj_exec *x, int ctl, const struct aj_exec_opts *o, struct aj_err *err)
{
	json_t *req;

	memset(x, 0, sizeof *x);
	x->ctl = ctl;
	x->out[0] = x->out[1] = x->in = x->master = -1;
	x->output_cap = -1;
	if (!o->argv || !o->argv[0])
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: no command");
	req = exec_request(o);
	if (!req)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "exec: build the request");
	return o->tty ? start_tty(x, req, err) : start_pipes(x, req, o->stdin_pipe, err);
}

static void take_exit(struct aj_exec *x, json_t *m)
{
	json_t *st = json_object_get(m, "status");
	const char *limit = json_string_value(json_object_get(m, "limit"));

	x->exited = true;
	x->res.exit_code = (int)json_integer_value(json_object_get(m, "exit_code"));
	snprintf(x->res.limit, sizeof x->res.limit, "%s", limit ? limit : "");
	if (!strcmp(json_string_value(json_object_get(st, "kind")) ?: "", "signaled"))
		x->res.signal = (int)json_integer_value(json_object_get(st, "signal"));
	x->res.wall_ms = json_number_value(json_object_get(m, "wall_ms"));
	x->res.cpu_ms = json_number_value(json_object_get(m, "cpu_ms"));
}

/* One message from the supervisor: our command's exit event, or something to skip (the
 * answer to a signal request). Returns -1 once the supervisor is gone. */
static int take_event(struct aj_exec *x)
{
	_cleanup_json_ json_t *m = NULL;
	_cleanup_fdset_ struct aj_fdset fds = {.n = 0}; /* none is expected: closed */

	if (aj_ctl_recv(x->ctl, &m, fds.v, &fds.n, 0) < 0) {
		if (errno == EAGAIN || errno == ETIMEDOUT || errno == EPROTO)
			return 0;
		if (!x->exited) {
			x->exited = true;
			x->res.lost = true;
			x->res.exit_code = AJ_EXIT_ERROR;
		}
		return -1;
	}
	if (json_object_get(m, "event") &&
	    (uint64_t)json_integer_value(json_object_get(m, "exec")) == x->id)
		take_exit(x, m);
	return 0;
}

static int pump(struct aj_exec *x, int stream, const struct aj_exec_hooks *h)
{
	char buf[65536];
	ssize_t n = read(x->out[stream], buf, sizeof buf);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) /* EOF, or EIO from a terminal whose every other end closed */
		return -1;
	if (h->output)
		h->output(h->arg, stream, buf, (size_t)n);
	return 0;
}

/* A terminal can answer EIO (its other side closed) a moment before the command's last output
 * has reached it; that output is there once the exit is known. So before the exit, EIO only
 * parks the terminal (not watched); after it, the terminal is read to its end. */
static void stream_ended(struct aj_exec *x, int i, bool *parked)
{
	if (x->master >= 0 && !x->exited) {
		parked[i] = true;
		return;
	}
	aj_close_fd(&x->out[i]);
}

int aj_exec_wait(struct aj_exec *x, const struct aj_exec_hooks *h)
{
	int idle_after_exit = 0, watch = h->on_watch ? h->watch_fd : -1, ctl = x->ctl;
	bool parked[2] = {false, false};

	/* What came before the wait (a signal while the command was being started) is handled
	 * now, not after the next event, which may be a long time coming. */
	if (h->on_wake && h->on_wake(h->arg, x))
		return 1;
	while (!x->exited || idle_after_exit < DRAIN_IDLE_ROUNDS) {
		struct pollfd p[4] = {{ctl, POLLIN, 0},
				      {parked[0] ? -1 : x->out[0], POLLIN, 0},
				      {parked[1] ? -1 : x->out[1], POLLIN, 0},
				      {watch, POLLIN, 0}};
		int r = poll(p, 4, x->exited ? DRAIN_POLL_MS : h->tick_ms > 0 ? h->tick_ms : -1);

		idle_after_exit += r == 0 && x->exited;
		if (r > 0 && p[0].revents && take_event(x) < 0)
			ctl = -1; /* gone: its hang-up would wake every poll */
		for (int i = 0; r > 0 && i < 2; i++)
			if (p[1 + i].revents && pump(x, i, h) < 0)
				stream_ended(x, i, parked);
		if (x->exited)
			parked[0] = parked[1] = false;
		if (r > 0 && watch >= 0 && p[3].revents && h->on_watch(h->arg, x) < 0)
			watch = -1;
		/* Also after a signal interrupted poll (r < 0, EINTR): the hook handles it. */
		if (h->on_wake && h->on_wake(h->arg, x))
			return 1;
		if (x->exited && x->out[0] < 0 && x->out[1] < 0)
			break;
	}
	return 0;
}

int aj_exec_signal(struct aj_exec *x, int sig)
{
	_cleanup_json_ json_t *req = json_pack("{s:s, s:I, s:i}", "op", "signal", "exec",
						(json_int_t)x->id, "signal", sig);

	/* The answer arrives on the connection and is skipped by aj_exec_wait. */
	return aj_ctl_send(x->ctl, req, NULL, 0);
}

int aj_exec_resize(struct aj_exec *x, unsigned short rows, unsigned short cols)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	_cleanup_json_ json_t *req = NULL;

	if (x->master < 0)
		return -1;
	if (ioctl(x->master, TIOCSWINSZ, &ws) == 0)
		return 0;
	if (errno != ENOTTY)
		return -1;
	/* The gvisor tier's terminal is inside, with init: x->master is a socket to it. */
	req = json_pack("{s:s, s:I, s:i, s:i}", "op", "resize", "exec", (json_int_t)x->id, "rows",
			rows, "cols", cols);
	/* The answer arrives on the connection and is skipped by aj_exec_wait. */
	return aj_ctl_send(x->ctl, req, NULL, 0);
}

void aj_exec_close(struct aj_exec *x)
{
	for (int i = 0; i < 2; i++)
		aj_close_fd(&x->out[i]);
	if (x->in != x->master) /* with a terminal, in is the master */
		aj_close_fd(&x->in);
	aj_close_fd(&x->master);
	x->in = -1;
}

void aj_exec_capture_output(void *arg, int stream, const char *buf, size_t n)
{
	struct aj_exec_capture *c = arg;
	size_t room = c->cap > c->len[stream] ? c->cap - c->len[stream] : 0;
	size_t take = n < room ? n : room;
	char *p;

	c->total[stream] += n;
	if (take < n)
		c->truncated[stream] = true;
	if (!take)
		return;
	p = aj_xrealloc(c->data[stream], c->len[stream] + take + 1);
	memcpy(p + c->len[stream], buf, take);
	c->len[stream] += take;
	p[c->len[stream]] = '\0';
	c->data[stream] = p;
}

void aj_exec_capture_free(struct aj_exec_capture *c)
{
	for (int i = 0; i < 2; i++) {
		free(c->data[i]);
		c->data[i] = NULL;
		c->len[i] = 0;
	}
}
