#include "supervisor/run.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/guard.h"
#include "common/cleanup.h"
#include "common/evbase.h"
#include "common/trace.h"
#include "common/units.h"
#include "common/util.h"
#include "egress/egress.h"
#include "sandbox/launch.h"
#include "sandbox/userns.h"
#include "storage/quota.h"
#include "supervisor/events.h"
#include "supervisor/gitwatch.h"
#include "supervisor/start.h"
#include "supervisor/stdin.h"

struct run_ctx;

struct stream {
	struct run_ctx *c;
	int fd;    /* our read end, -1 at EOF */
	int dest;  /* the caller's descriptor */
	enum aj_stream which;
	struct event *ev;
};

struct run_ctx {
	struct aj_plan *plan;
	struct aj_run_result *res;
	const struct aj_warn *warn;
	struct aj_sandbox sb;
	struct aj_cgroup cg;
	struct aj_cgroup_guard guard; /* removes cg if this process is killed */
	struct aj_gitwatch git;
	bool have_cg;
	struct aj_events ev;
	struct aj_egress *egress; /* network.mode "proxy" */
	struct aj_ports *ports;   /* network.publish */
	struct aj_ports *host_ports; /* network.host_ports */
	struct aj_dialer dialer;  /* the ports' sockets inside */
	struct event_base *base;
	struct event *ctl_ev; /* the sync socket's; dropped at its end-of-file */
	struct stream streams[2];
	struct aj_stdin in;
	struct event *in_read, *in_write;
	bool init_gone;
	bool got_exit;
	int interrupts;
	int interrupt_sig;
	sigset_t mask_before; /* the caller's signal mask, while interrupts are held */
	bool interrupts_held;
	uint64_t start_us;
};

static const int interrupt_sigs[] = {SIGINT, SIGTERM, SIGHUP};

/* From the sandbox's start until the loop handles them, interrupts are held back: one arriving
 * in between would otherwise end agentjail with the default action, without passing it on and
 * without a report. Before that, nothing runs yet and the default action is what the caller
 * wants. The sandbox's init and the command reset their masks. */
static void hold_interrupts(struct run_ctx *c)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < 3; i++)
		sigaddset(&set, interrupt_sigs[i]);
	sigprocmask(SIG_BLOCK, &set, &c->mask_before);
	c->interrupts_held = true;
}

static void release_interrupts(struct run_ctx *c)
{
	if (c->interrupts_held)
		sigprocmask(SIG_SETMASK, &c->mask_before, NULL);
	c->interrupts_held = false;
}

/* The wall-clock timeout must fire even while the loop is stuck writing output to a caller
 * that stopped reading: SIGALRM interrupts that write, kills the sandbox, and from then on
 * output is dropped instead of written. The alarm repeats until the loop ends: a write that
 * had moved some bytes returns that count instead of EINTR, and the next one would block
 * for good if no further signal came. */
#define HARD_TIMEOUT_REPEAT_US 100000

static volatile sig_atomic_t hard_timeout;
static int alarm_pidfd = -1;

static void on_alarm(int sig)
{
	int saved = errno; /* the repeats land between other calls and their errno checks */

	(void)sig;
	hard_timeout = 1;
	if (alarm_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, alarm_pidfd, SIGKILL, NULL, 0);
	errno = saved;
}

static void arm_hard_timeout(int pidfd, uint64_t ms)
{
	struct sigaction sa;
	struct itimerval it = {{0, HARD_TIMEOUT_REPEAT_US},
			       {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000}};

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART: a blocked write returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	hard_timeout = 0;
	alarm_pidfd = pidfd;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_hard_timeout(void)
{
	struct itimerval off = {{0, 0}, {0, 0}};

	setitimer(ITIMER_REAL, &off, NULL);
	alarm_pidfd = -1;
}

/* Writes all of buf to the caller, unless the timeout fired meanwhile; what was not written
 * is counted as undelivered. */
static int write_out(int fd, const char *buf, size_t len, uint64_t *undelivered)
{
	while (len > 0 && !hard_timeout) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			poll(&p, 1, -1); /* EINTR from the alarm: the loop's condition ends it */
			continue;
		}
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		}
	}
	*undelivered += len;
	return len > 0 ? -1 : 0;
}

static void maybe_done(struct run_ctx *c)
{
	if (c->init_gone && c->streams[0].fd < 0 && c->streams[1].fd < 0)
		event_base_loopbreak(c->base);
}

/* Where no pid namespace takes every process along (the landlock tier), the supervisor,
 * their last subreaper, finds and kills them, sparing its cgroup guard. */
static void kill_tree(struct run_ctx *c)
{
	aj_sandbox_kill_tree(&c->sb, c->guard.pid, c->warn);
}

static void kill_sandbox(struct run_ctx *c)
{
	aj_sandbox_kill(&c->sb);
	if (c->have_cg)
		c->cg.env->ops->kill_all(&c->cg, NULL);
	kill_tree(c);
}

static void hit(struct run_ctx *c, unsigned which, json_t *details)
{
	if (c->res->hits & which) {
		json_decref(details);
		return;
	}
	c->res->hits |= which;
	if (!details)
		details = json_object();
	json_object_set_new(details, "limit", json_string(aj_hit_name(which)));
	aj_events_emit(&c->ev, "limit", details);
}

/* limits.disk: the writable layers' final figures, and the limit as hit when they reached it
 * (the sandbox got EDQUOT or was about to). */
static void disk_usage(struct run_ctx *c)
{
	struct aj_quota_use u;

	if (!c->plan->disk_dir || aj_quota_usage(c->plan->disk_dir, true, &u) < 0)
		return;
	c->res->have_disk = true;
	c->res->disk_bytes = u.bytes;
	c->res->disk_limit = u.limit;
	if (aj_quota_reached(&u))
		hit(c, AJ_HIT_DISK, json_pack("{s:I, s:I}", "used_bytes", (json_int_t)u.bytes,
					      "limit_bytes", (json_int_t)u.limit));
}

static void close_stream(struct run_ctx *c, struct stream *s)
{
	event_free(s->ev);
	s->ev = NULL;
	aj_close_fd(&s->fd);
	maybe_done(c);
}

static void relay(struct run_ctx *c, struct stream *s)
{
	char buf[65536];
	ssize_t n = read(s->fd, buf, sizeof buf);
	size_t pass;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_stream(c, s);
		return;
	}
	pass = aj_output_admit(&c->res->out, s->which, (size_t)n);
	if (pass && s->dest < 0)
		c->res->out.undelivered += pass;
	else if (pass && write_out(s->dest, buf, pass, &c->res->out.undelivered) < 0)
		s->dest = -1; /* the caller stopped reading, or the timeout hit: keep draining */
	if (pass < (size_t)n && !(c->res->hits & AJ_HIT_OUTPUT)) {
		const struct aj_limits *l = &c->plan->policy->limits;
		char cap[32];
		aj_format_size(l->output_bytes, cap, sizeof cap);
		aj_warn_flags(c->warn, AJ_WARN_FRESH_LINE, "output limit of %s reached; %s", cap,
			      l->output_action == AJ_OUTPUT_KILL ? "stopping the sandbox"
								 : "further output is discarded");
		hit(c, AJ_HIT_OUTPUT, json_pack("{s:I}", "limit_bytes", (json_int_t)l->output_bytes));
		if (l->output_action == AJ_OUTPUT_KILL)
			kill_sandbox(c);
	}
}

static void on_stream(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;

	(void)fd;
	(void)what;
	relay(s->c, s);
}

/* Reached through the loop's timer or, when the loop was stuck writing to a caller that
 * stopped reading, through the alarm; whichever comes first reports it. */
static void reach_timeout(struct run_ctx *c)
{
	char d[32];

	if (c->res->hits & AJ_HIT_TIMEOUT)
		return;
	aj_format_duration_ms(c->plan->policy->limits.timeout_ms, d, sizeof d);
	aj_warn(c->warn, "timeout of %s reached; stopping the sandbox", d);
	hit(c, AJ_HIT_TIMEOUT,
	    json_pack("{s:I}", "timeout_ms", (json_int_t)c->plan->policy->limits.timeout_ms));
	kill_sandbox(c);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	reach_timeout(arg);
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *c = arg;
	struct aj_sync_msg m;

	(void)fd;
	(void)what;
	if (aj_sync_recv(c->sb.ctl_fd, &m, 0) < 0) {
		/* init closed its end (it is exiting): the socket stays readable until init's
		 * pidfd says it is gone, and polling it meanwhile would take the CPU init's exit
		 * needs. */
		if (errno == EPIPE && c->ctl_ev)
			event_del(c->ctl_ev);
		return;
	}
	if (m.type != AJ_SYNC_EXIT)
		return;
	c->got_exit = true;
	aj_trace("exit message");
	c->res->have_status = true;
	c->res->status = m.status;
	c->res->cpu_us = (uint64_t)(m.ru.ru_utime.tv_sec + m.ru.ru_stime.tv_sec) * 1000000u +
			 (uint64_t)(m.ru.ru_utime.tv_usec + m.ru.ru_stime.tv_usec);
	c->res->peak_memory = (uint64_t)m.ru.ru_maxrss * 1024u;
	c->res->have_peak = true;
}

static void on_init_exit(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *c = arg;

	(void)fd;
	(void)what;
	if (!c->got_exit)
		on_ctl(-1, 0, c); /* the EXIT record may still sit in the socket */
	aj_trace("init exited");
	waitpid(c->sb.pid, NULL, 0);
	c->sb.pid = 0;
	c->init_gone = true;
	if (hard_timeout)
		reach_timeout(c);
	/* A daemon left by the command may hold the output pipes open. */
	kill_tree(c);
	maybe_done(c);
}

/* The first interrupt is passed to the command (it may want to clean up); a second one ends
 * the sandbox. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct run_ctx *c = arg;

	(void)what;
	c->interrupt_sig = (int)sig;
	if (++c->interrupts > 1) {
		kill_sandbox(c);
		return;
	}
	if (c->sb.pidfd >= 0)
		syscall(SYS_pidfd_send_signal, c->sb.pidfd, (int)sig, NULL, 0);
}

static void stdin_update(struct run_ctx *c)
{
	if (!c->in_write)
		return;
	if (c->in.pipe_w < 0) {
		if (c->in_read)
			event_del(c->in_read);
		event_del(c->in_write);
	} else if (aj_stdin_wants_write(&c->in)) {
		if (c->in_read)
			event_del(c->in_read);
		event_add(c->in_write, NULL);
	} else {
		event_del(c->in_write);
		event_add(c->in_read, NULL);
	}
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
	struct run_ctx *c = arg;

	(void)fd;
	(void)what;
	if (!aj_stdin_pump(&c->in))
		aj_close_fd(&c->in.pipe_w); /* EOF for the command */
	stdin_update(c);
}

static int open_pipes(struct run_ctx *c, struct aj_stdio *io, struct aj_err *err)
{
	/* Privileged sandboxes get their range at launch, after this: any of agentjail's. */
	struct aj_stdin_ids ids = {c->plan->id_base, c->plan->id_count, false};
	int *write_end[2] = {&io->out, &io->err};

	if (c->plan->privileged)
		ids = (struct aj_stdin_ids){AJ_ID_BASE, AJ_ID_RANGES * 65536u, false};
	ids.pipes_only = c->plan->pipes_only;

	/* Read ends in the streams, write ends in io: each closed by its owner's teardown. */
	for (int i = 0; i < 2; i++) {
		int rd;
		if (aj_pipe(&rd, write_end[i], O_CLOEXEC) < 0)
			return aj_err_sys(err, AJ_LAYER_IO, "pipe for the command's output");
		c->streams[i] = (struct stream){
			.c = c, .fd = rd, .dest = i + 1, .which = (enum aj_stream)i};
		aj_fd_set_nonblock(rd, true);
	}
	if (aj_stdin_setup(&c->in, &ids, err) < 0)
		return -1;
	io->in = c->in.child_fd;
	return 0;
}

/* The sandbox's cgroup, and the guard that removes it: an aj_cgroup_maker's function, called
 * by aj_sandbox_start() while the sandbox builds its root where the tier allows. */
static int create_cgroup(void *arg, struct aj_cgroup **cg, struct aj_err *err)
{
	struct run_ctx *c = arg;
	char name[64];
	int r;

	/* The guard removes a killed supervisor's cgroups; the sweep is for guards killed too.
	 * It reads directories that grow with the number of sandboxes, so only now and then. */
	if (c->plan->use_cgroup && c->plan->id[0] == '0') /* the id is random hex: 1 in 16 */
		aj_cgroup_sweep(c->plan->features->cgroup, "run-", 10);
	snprintf(name, sizeof name, "run-%s", c->plan->id);
	/* The guard holds the .git watch too: the last close of an inotify instance waits for
	 * an SRCU grace period (16 ms here), which is better spent after the exit status. */
	r = aj_sv_cgroup_create(c->plan, name, &c->cg, &c->guard, c->git.ifd, err);
	c->have_cg = r > 0;
	*cg = c->have_cg ? &c->cg : NULL;
	aj_trace("cgroup created");
	return r < 0 ? -1 : r;
}

static int add_event(struct run_ctx *c, struct event **slot, int fd, short what,
		     event_callback_fn cb, void *arg, const struct timeval *tv, struct aj_err *err)
{
	*slot = event_new(c->base, fd, what, cb, arg);
	if (!*slot || event_add(*slot, tv) < 0)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop setup");
	return 0;
}

static void emit_egress(void *arg, const char *event, json_t *fields)
{
	aj_events_emit(arg, event, fields);
}

/* The loop's events: the streams, the control socket, init's end, the timeout, the
 * interrupts (released to the loop from here on), stdin, the .git watch and the proxy. What
 * it made before a failure is freed by disarm_loop(), as after the loop. */
static int arm_loop(struct run_ctx *c, struct event **evs, const struct timeval *tv,
		    uint64_t timeout, struct aj_err *err)
{
	for (int i = 0; i < 2; i++)
		if (add_event(c, &c->streams[i].ev, c->streams[i].fd, EV_READ | EV_PERSIST,
			      on_stream, &c->streams[i], NULL, err) < 0)
			return -1;
	if (add_event(c, &evs[0], c->sb.ctl_fd, EV_READ | EV_PERSIST, on_ctl, c, NULL, err) < 0 ||
	    add_event(c, &evs[1], c->sb.pidfd, EV_READ, on_init_exit, c, NULL, err) < 0 ||
	    (timeout && add_event(c, &evs[2], -1, 0, on_timeout, c, tv, err) < 0))
		return -1;
	c->ctl_ev = evs[0];
	for (size_t i = 0; i < 3; i++)
		if (add_event(c, &evs[3 + i], interrupt_sigs[i], EV_SIGNAL | EV_PERSIST, on_signal,
			      c, NULL, err) < 0)
			return -1;
	/* The loop's handlers are in place: what was held back is delivered to them now. */
	release_interrupts(c);
	if (c->in.relay) {
		/* A regular file cannot be polled (and is always ready): it has no read event. */
		if (!c->in.src_file)
			c->in_read = event_new(c->base, c->in.src, EV_READ, on_stdin, c);
		c->in_write = event_new(c->base, c->in.pipe_w, EV_WRITE, on_stdin, c);
		if ((!c->in_read && !c->in.src_file) || !c->in_write)
			return aj_err_set(err, AJ_LAYER_IO, ENOMEM, "relay stdin");
		stdin_update(c);
	}
	if (aj_gitwatch_attach(&c->git, c->base, err) < 0)
		return -1;
	/* The proxy takes over the listening socket the sandbox's child made. */
	if (c->egress && aj_egress_start(c->egress, c->base, aj_steal_fd(&c->sb.proxy_fd),
					 emit_egress, &c->ev, err) < 0)
		return -1;
	if (aj_sv_host_ports_start(&c->sb, c->base, emit_egress, &c->ev, &c->host_ports, err) < 0)
		return -1;
	return aj_sv_ports_start(c->ports, &c->dialer, c->sb.net_fd, c->base, emit_egress, &c->ev,
				 err);
}

/* Everything on the loop, then the loop itself. The proxy goes last while the loop still
 * exists: open proxy connections end with their events, and the counters are final. */
static void disarm_loop(struct run_ctx *c, struct event **evs, size_t n_evs)
{
	aj_gitwatch_unhook(&c->git);
	c->ctl_ev = NULL; /* one of evs */
	for (size_t i = 0; i < n_evs; i++)
		if (evs[i])
			event_free(evs[i]);
	for (int i = 0; i < 2; i++)
		if (c->streams[i].ev)
			event_free(c->streams[i].ev);
	if (c->in_read)
		event_free(c->in_read);
	if (c->in_write)
		event_free(c->in_write);
	c->in_read = c->in_write = NULL;
	if (c->egress) {
		aj_egress_stop(c->egress);
		aj_egress_get_stats(c->egress, &c->res->egress);
		c->res->have_egress = true;
	}
	/* Open connections to published ports end with the loop (without events of their own). */
	aj_ports_free(c->ports);
	aj_ports_free(c->host_ports);
	c->ports = c->host_ports = NULL;
	event_base_free(c->base);
}

static int run_loop(struct run_ctx *c, struct aj_err *err)
{
	struct event *evs[3 + 3] = {NULL};
	uint64_t timeout = c->plan->policy->limits.timeout_ms;
	struct timeval tv = {(time_t)(timeout / 1000), (suseconds_t)(timeout % 1000) * 1000};
	int r = -1;

	c->base = aj_event_base_new();
	if (!c->base)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "make the event loop");
	if (arm_loop(c, evs, &tv, timeout, err) == 0) {
		if (timeout)
			arm_hard_timeout(c->sb.pidfd, timeout + 50);
		event_base_dispatch(c->base);
		/* With the alarm still on: its message may meet a stalled stderr. */
		if (hard_timeout)
			reach_timeout(c);
		disarm_hard_timeout();
		r = 0;
	}
	disarm_loop(c, evs, AJ_ARRAY_SIZE(evs));
	return r;
}

static void collect_stats(struct run_ctx *c)
{
	struct aj_run_result *res = c->res;

	res->wall_us = aj_now_monotonic_us() - c->start_us;
	disk_usage(c);
	if (!c->have_cg)
		return;
	c->cg.env->ops->kill_all(&c->cg, NULL);
	if (c->cg.env->ops->stats(&c->cg, &res->cg, NULL) == 0) {
		res->have_cg = true;
		if (res->cg.have_cpu)
			res->cpu_us = res->cg.cpu_usec;
		if (res->cg.have_memory_peak) {
			res->peak_memory = res->cg.memory_peak;
			res->have_peak = true;
		}
		if (res->cg.oom_kills)
			hit(c, AJ_HIT_MEMORY, json_pack("{s:I}", "oom_kills",
							(json_int_t)res->cg.oom_kills));
		if (res->cg.pids_max_hits)
			hit(c, AJ_HIT_PIDS, json_pack("{s:I}", "refused_forks",
						      (json_int_t)res->cg.pids_max_hits));
		if (res->cg.nr_throttled)
			hit(c, AJ_HIT_CPU, json_pack("{s:I}", "throttled_periods",
						     (json_int_t)res->cg.nr_throttled));
	}
	aj_sv_cgroup_remove(&c->cg, &c->guard);
	c->have_cg = false;
}

static int decide(struct aj_run_result *res, int interrupt_sig, const char **by)
{
	bool clean = res->have_status && WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0;

	*by = NULL;
	if (res->exec_errno)
		return res->exec_errno == ENOENT && strcmp(res->exec_stage, "exec") == 0
			       ? AJ_EXIT_NOTFOUND
			       : AJ_EXIT_NOEXEC;
	if (res->have_status && WIFSIGNALED(res->status) && WTERMSIG(res->status) == SIGXFSZ)
		res->hits |= AJ_HIT_FILE_SIZE;
	if (res->hits & AJ_HIT_TIMEOUT)
		return *by = "timeout", AJ_EXIT_TIMEOUT;
	if (!clean && (res->hits & AJ_HIT_MEMORY))
		return *by = "memory", AJ_EXIT_MEMORY;
	if (!res->have_status && (res->hits & AJ_HIT_OUTPUT))
		return *by = "output", AJ_EXIT_OUTPUT;
	if (!clean && (res->hits & AJ_HIT_PIDS))
		return *by = "pids", AJ_EXIT_PIDS;
	if (!res->have_status && interrupt_sig)
		return 128 + interrupt_sig; /* stopped by the caller's repeated interrupt */
	if (!res->have_status)
		return -1;
	if (WIFEXITED(res->status))
		return WEXITSTATUS(res->status);
	return 128 + WTERMSIG(res->status);
}

static void finish(struct run_ctx *c)
{
	struct aj_run_result *res = c->res;
	int code = decide(res, c->interrupt_sig, &res->decided_by);

	if (code < 0) {
		res->failed = true;
		aj_err_set(&res->err, AJ_LAYER_PROCESS, 0,
			   "the sandbox's init died before the command ended");
		code = AJ_EXIT_ERROR;
	}
	res->exit_code = code;
	aj_events_emit(&c->ev, "end",
		       json_pack("{s:i, s:s?, s:I, s:I}", "exit_code", code, "decided_by",
				 res->decided_by, "wall_ms", (json_int_t)(res->wall_us / 1000),
				 "output_bytes",
				 (json_int_t)(res->out.received[0] + res->out.received[1])));
}

static void fail(struct run_ctx *c, const struct aj_err *err)
{
	c->res->failed = true;
	c->res->err = *err;
	c->res->exit_code = AJ_EXIT_ERROR;
	char msg[sizeof err->msg + 128];

	aj_err_format(err, msg, sizeof msg);
	aj_events_emit(&c->ev, "error",
		       json_pack("{s:s, s:s}", "layer", aj_layer_name(err->layer), "message", msg));
}

static void report_start(struct run_ctx *c, const struct aj_sync_msg *ready)
{
	json_t *argv = json_array();

	for (size_t i = 0; i < c->plan->argv.n; i++)
		json_array_append_new(argv, json_string(c->plan->argv.v[i]));
	c->res->started = true;
	c->res->exec_errno = ready->exec_errno;
	memcpy(c->res->exec_stage, ready->exec_stage, sizeof c->res->exec_stage);
	aj_events_emit(&c->ev, "start", json_pack("{s:o, s:s}", "argv", argv, "mode",
						  c->plan->privileged ? "privileged" : "rootless"));
	if (ready->exec_errno)
		aj_warn(c->warn, "%s \"%s\" inside the sandbox: %s", ready->exec_stage,
			strcmp(ready->exec_stage, "chdir") == 0 ? c->plan->cwd : c->plan->argv.v[0],
			ready->exec_errno == ENOENT && strcmp(ready->exec_stage, "exec") == 0
				? "command not found"
				: strerror(ready->exec_errno));
}

/* The output pipes' write ends, which go to the sandbox: ours are closed once it has them. */
static void stdio_closep(struct aj_stdio *io)
{
	aj_close_fd(&io->out);
	aj_close_fd(&io->err);
}

/* The host side of each published port, on stderr (an ephemeral one is only known here) and
 * in the report. */
static void announce_ports(struct run_ctx *c)
{
	char host[64];

	for (size_t i = 0; i < aj_ports_count(c->ports) && i < AJ_PUBLISH_MAX; i++) {
		const struct aj_publish *p = aj_ports_at(c->ports, i);
		c->res->ports[c->res->n_ports++] = *p;
		aj_publish_host(p, host, sizeof host);
		fprintf(stderr, "agentjail: port %u published on %s\n", (unsigned)p->port, host);
	}
}

/* The unmounting of the sandbox's tree, which init's exit would do while the exit status
 * waits (0.2 ms for the default root), is left to the guard: it holds the mount namespace
 * until it exits, after this process has returned. Not with overlays, whose upper directory
 * the caller reads right after the run (--overlay) or a next run may mount again. Best
 * effort: without the guard init unmounts, as before. */
static void hand_over_mounts(struct run_ctx *c)
{
	const struct aj_plan *plan = c->plan;
	struct aj_err err;

	if (c->sb.mnt_fd >= 0 && !plan->ovl.on && !plan->root.on) {
		if (c->guard.pid > 0)
			(void)aj_cgroup_guard_hold(&c->guard, c->sb.mnt_fd, &err);
		else
			(void)aj_cgroup_guard_start(&c->guard, NULL, c->sb.mnt_fd, &err);
	}
	aj_close_fd(&c->sb.mnt_fd);
}

/* Everything up to a started sandbox; what it made is torn down by teardown() either way. */
static int start(struct run_ctx *c, const struct aj_run_opts *opts, struct aj_stdio *io,
		 struct aj_sync_msg *ready, struct aj_err *err)
{
	struct aj_plan *plan = c->plan;

	if (aj_events_open(&c->ev, opts->events_path, plan->id, err) < 0 ||
	    open_pipes(c, io, err) < 0)
		return -1;
	if (plan->git_dir && !plan->had_commondir &&
	    aj_gitwatch_open(&c->git, plan->git_dir, &c->ev, c->warn, err) < 0)
		return -1;
	if (aj_sv_egress_new(plan, &c->egress, err) < 0 ||
	    aj_sv_ports_bind(plan, &c->ports, err) < 0)
		return -1;
	announce_ports(c);
	hold_interrupts(c);
	if (aj_sandbox_start(plan, io, NULL,
			     &(struct aj_cgroup_maker){.make = create_cgroup, .arg = c}, &c->sb,
			     ready, err) < 0)
		return -1;
	hand_over_mounts(c);
	return 0;
}

/* The started sandbox to its end, and the result. */
static void supervise(struct run_ctx *c, struct aj_stdio *io, const struct aj_sync_msg *ready)
{
	struct aj_err err;

	aj_err_clear(&err);
	/* Only our read ends stay open, so EOF arrives when the sandbox closes its ends. */
	stdio_closep(io);
	if (c->in.relay || c->in.owned)
		aj_close_fd(&c->in.child_fd);
	signal(SIGPIPE, SIG_IGN);
	report_start(c, ready);
	/* While the command runs: the statistics at its end are then a read each, not a walk
	 * down the cgroup hierarchy and an open and close per file. */
	if (c->have_cg)
		c->cg.env->ops->open_stats(&c->cg);
	if (run_loop(c, &err) < 0) {
		kill_sandbox(c);
		fail(c, &err);
	}
	aj_trace("loop done");
	collect_stats(c);
	aj_gitwatch_finish(&c->git);
	aj_trace("stats collected");
	if (!c->res->failed)
		finish(c);
}

/* What a run holds, in this order: our copy of the .git watch (before the guard that holds
 * the other is released), the cgroup (its tasks killed), our stream ends, the sandbox (killed,
 * reaped, what its tier left removed), the .git directory's last check, stdin, the proxy, the
 * event log, the held interrupts. Each step is a no-op for what was never made. */
static void teardown(struct run_ctx *c)
{
	aj_gitwatch_unhook(&c->git);
	if (c->have_cg) {
		c->cg.env->ops->kill_all(&c->cg, NULL);
		aj_sv_cgroup_remove(&c->cg, &c->guard);
	}
	aj_cgroup_guard_release(&c->guard); /* one that only holds the .git watch */
	for (int i = 0; i < 2; i++)
		aj_close_fd(&c->streams[i].fd);
	aj_sandbox_kill(&c->sb);
	kill_tree(c);
	aj_sandbox_release(&c->sb);
	aj_sandbox_cleanup(&c->sb, c->plan, c->warn);
	aj_gitwatch_finish(&c->git);
	aj_stdin_close(&c->in);
	aj_ports_free(c->ports);
	aj_dialer_stop(&c->dialer);
	aj_egress_free(c->egress);
	aj_events_close(&c->ev);
	release_interrupts(c);
}

void aj_run(struct aj_plan *plan, const struct aj_run_opts *opts, struct aj_run_result *res)
{
	struct run_ctx c;
	__attribute__((cleanup(stdio_closep))) struct aj_stdio io = {-1, -1, -1};
	struct aj_sync_msg ready;
	struct aj_err err;

	memset(res, 0, sizeof *res);
	memset(&c, 0, sizeof c);
	/* Not started yet: an early failure's exit path must not signal or close descriptor 0. */
	aj_sandbox_init(&c.sb);
	aj_dialer_init(&c.dialer);
	c.plan = plan;
	c.res = res;
	c.warn = opts->warn;
	c.streams[0].fd = c.streams[1].fd = -1;
	c.in.pipe_w = c.in.child_fd = -1;
	c.git = (struct aj_gitwatch)AJ_GITWATCH_INIT;
	res->out.cap = plan->policy->limits.output_bytes;
	aj_err_clear(&err);
	c.start_us = aj_now_monotonic_us();
	aj_trace("run: begin");
	if (start(&c, opts, &io, &ready, &err) < 0)
		fail(&c, &err);
	else
		supervise(&c, &io, &ready);
	teardown(&c);
}

const char *aj_hit_name(unsigned hit)
{
	switch (hit) {
	case AJ_HIT_TIMEOUT: return "timeout";
	case AJ_HIT_MEMORY: return "memory";
	case AJ_HIT_OUTPUT: return "output";
	case AJ_HIT_PIDS: return "pids";
	case AJ_HIT_CPU: return "cpu";
	case AJ_HIT_FILE_SIZE: return "file_size";
	case AJ_HIT_DISK: return "disk";
	default: return "?";
	}
}
