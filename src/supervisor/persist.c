#include "supervisor/persist.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/evbase.h"
#include "common/trace.h"
#include "common/util.h"
#include "common/warn.h"
#include "egress/egress.h"
#include "host/features.h"
#include "ports/publish.h"
#include "state/names.h"
#include "state/secrets.h"
#include "storage/quota.h"
#include "storage/volumes.h"
#include "supervisor/etc_share.h"
#include "supervisor/procs.h"
#include "supervisor/start.h"
#include "workspace/layers.h"

#define TICK_SECONDS 1 /* the first tick; then timers() says when */

struct pevent {
	char type[32];
	char *text;
	struct pevent *next;
};

/* Events reach the store after the client has its answer: a write costs a tenth of a
 * millisecond, as much as the rest of an exec, and several events share one transaction. */
static void flush_events(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;
	bool tx = p->evq && aj_store_begin(p->store, NULL) == 0;

	(void)fd;
	(void)what;
	while (p->evq) {
		struct pevent *e = p->evq;
		p->evq = e->next;
		aj_store_event_add(p->store, p->id, e->type, e->text ? e->text : "{}", NULL);
		free(e->text);
		free(e);
	}
	p->evq_tail = NULL;
	if (tx && aj_store_commit(p->store, NULL) < 0)
		aj_store_rollback(p->store);
}

void aj_persist_flush_events(struct persist *p)
{
	flush_events(-1, 0, p);
}

void aj_persist_event(struct persist *p, const char *type, json_t *data)
{
	struct pevent *e = aj_xcalloc(1, sizeof *e);

	snprintf(e->type, sizeof e->type, "%s", type);
	e->text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (p->evq_tail)
		p->evq_tail->next = e;
	else
		p->evq = e;
	p->evq_tail = e;
	if (p->ev_flush)
		event_active(p->ev_flush, EV_TIMEOUT, 0);
	else
		flush_events(-1, 0, p);
}

void aj_persist_touch(struct persist *p)
{
	p->last_activity_ms = aj_now_realtime_ms();
	/* Activity ends an idle sandbox's slow sampling at once: a sample soon, then every
	 * AJ_METRICS_EVERY_S again. */
	if (p->sample_every_s > AJ_METRICS_EVERY_S && p->ev_tick) {
		struct timeval soon = {0, 10000};
		p->sample_every_s = AJ_METRICS_EVERY_S;
		p->next_sample_us = 0;
		evtimer_add(p->ev_tick, &soon);
	}
}

void aj_persist_rearm(struct persist *p)
{
	struct timeval soon = {0, 1000};

	if (p->ev_tick)
		evtimer_add(p->ev_tick, &soon);
}

/* An image sandbox's root: the image's layers, then the sandbox's own (its snapshots), under
 * its writable layer; no workspace overlay (the workspace is a directory of the root). */
static int image_root(struct persist *p, const char *rw, struct aj_workspace_spec *ws,
		      struct aj_err *err)
{
	struct aj_images im;
	char dir[4200];
	int r;

	r = aj_images_open(p->state_dir, p->store, &im, err);
	if (r == 0)
		r = aj_image_root_open(&im, p->rec.owner, p->pol.rootfs_image, &p->img, err);
	aj_images_close(&im);
	if (r < 0)
		return aj_err_prefix(err, "sandbox %s", p->rec.name);
	for (size_t i = 0; i < p->rec.layers.n; i++) {
		if (aj_ws_path(dir, sizeof dir, p->state_dir, "layers", p->rec.layers.v[i], NULL) < 0)
			return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "layer path");
		aj_strv_push(&p->img.lowers, dir);
	}
	if (aj_image_root_layer_at(&p->img, rw, err) < 0)
		return -1;
	ws->root = &p->img.spec;
	return 0;
}

/* The credentials "from_secret" are the sandbox owner's secrets. */
static int set_secret_dir(struct persist *p, int r, struct aj_err *err)
{
	char dir[4200];

	if (r < 0)
		return -1;
	if (!aj_policy_uses_secret_store(&p->pol))
		return 0;
	if (aj_secret_dir(p->state_dir, p->rec.owner, dir, sizeof dir) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "the secret store's path");
	p->plan.egress.secret_dir = aj_xstrdup(dir);
	return 0;
}

/* The sandbox's policy as stored, rebuilt and checked again: what was valid at create time
 * is re-validated against this host and this start. */
static int load_plan(struct persist *p, struct aj_err *err)
{
	_cleanup_strv_ struct aj_strv lowers = AJ_STRV_INIT;
	char dir[4200];
	struct aj_workspace_spec ws = {.persistent = true, .canonical = true};

	aj_policy_init(&p->pol);
	p->pol.managed = true;
	if (aj_policy_load_text(&p->pol, p->rec.policy, err) < 0 ||
	    aj_policy_validate(&p->pol, err) < 0)
		return -1;
	/* The owner's volumes, held for this generation (released when the supervisor ends). */
	if (p->pol.volumes.n) {
		if (aj_volumes_attach(p->state_dir, p->rec.owner, &p->pol.volumes, &p->volume_dirs,
				      &p->vol_fds, &p->n_vol_fds, err) < 0) {
			/* the sandbox exists; what it needs does not: a state, not a missing sandbox */
			if (err->cls == AJ_ERRC_NOT_FOUND)
				aj_err_class(err, AJ_ERRC_WRONG_STATE);
			return aj_err_prefix(err, "sandbox %s cannot start", p->rec.name);
		}
		ws.volume_dirs = &p->volume_dirs;
	}
	aj_features_probe(&p->feat, NULL);
	if (aj_ws_path(dir, sizeof dir, p->state_dir, "sandboxes", p->id, NULL) < 0)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "sandbox path");
	if (p->pol.rootfs_image) {
		if (image_root(p, dir, &ws, err) < 0)
			return -1;
		return set_secret_dir(p, aj_plan_build_ex(&p->plan, &p->pol, &p->feat, NULL, &ws, err),
				      err);
	}
	for (size_t i = 0; i < p->rec.layers.n; i++) {
		char layer[4200];
		if (aj_ws_path(layer, sizeof layer, p->state_dir, "layers", p->rec.layers.v[i],
			       NULL) < 0)
			return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG, "layer path");
		aj_strv_push(&lowers, layer);
	}
	ws.lowers = &lowers;
	ws.rw_dir = dir;
	return set_secret_dir(p, aj_plan_build_ex(&p->plan, &p->pol, &p->feat, NULL, &ws, err), err);
}

/* Where the control socket lives: a runtime directory, private to the caller. */
static int socket_path(struct persist *p, struct aj_err *err)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char dir[4096];

	if (geteuid() == 0)
		snprintf(dir, sizeof dir, "/run/agentjail/sb");
	else if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof dir, "%s/agentjail", xdg);
	else
		snprintf(dir, sizeof dir, "%s/run", p->state_dir);
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", dir);
	if ((size_t)snprintf(p->sock_path, sizeof p->sock_path, "%s/%s.sock", dir, p->id) >=
	    sizeof ((struct sockaddr_un *)0)->sun_path)
		return aj_err_set(err, AJ_LAYER_STATE, ENAMETOOLONG,
				  "control socket path \"%s/%s.sock\" is too long", dir, p->id);
	return 0;
}

static int listen_control(struct persist *p, struct aj_err *err)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	mode_t old;

	if (socket_path(p, err) < 0)
		return -1;
	snprintf(a.sun_path, sizeof a.sun_path, "%s", p->sock_path);
	unlink(p->sock_path);
	p->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->listen_fd < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "control socket");
	old = umask(0077);
	if (bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) < 0) {
		umask(old);
		return aj_err_sys(err, AJ_LAYER_STATE, "bind \"%s\"", p->sock_path);
	}
	umask(old);
	if (listen(p->listen_fd, 128) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "listen \"%s\"", p->sock_path);
	return 0;
}

/* One /etc for the sandboxes that would have the same (etc_share.h). Where it cannot be
 * written the sandbox has its own, as a one-shot run does, and the log says why. */
static void share_etc(struct persist *p)
{
	struct aj_err err;
	int fd;

	aj_err_clear(&err);
	fd = aj_sv_etc_share(&p->plan, p->state_dir, p->rec.owner, &err);
	if (fd == -1) {
		aj_warn(p->warn, "sandbox %s: its own /etc instead of the shared one: %s", p->rec.name,
			err.msg);
	} else if (fd >= 0) {
		aj_close_fd(&p->etc_fd);
		p->etc_fd = fd;
	}
}

static int start_sandbox(struct persist *p, struct aj_err *err)
{
	struct aj_stdio io;
	struct aj_sync_msg ready;
	char name[64];
	int r;
	/* The sandbox's stdio; init hands the commands their own. */
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (devnull < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "open /dev/null");
	/* Named per generation, so that a killed supervisor's guard, still removing the old
	 * cgroup, never meets the new one. Stale ones of this sandbox go first. */
	snprintf(name, sizeof name, "sb-%s-%lld", p->id, (long long)p->rec.generation);
	if (p->plan.use_cgroup)
		aj_cgroup_remove_stale(p->feat.cgroup, name);
	snprintf(name, sizeof name, "sb-%s-%lld", p->id, (long long)p->rec.generation + 1);
	r = aj_sv_cgroup_create(&p->plan, name, &p->cg, &p->guard, -1, err);
	p->have_cg = r > 0;
	if (r < 0)
		return -1;
	io.in = io.out = io.err = devnull;
	/* network.mode "proxy": secrets read and the CA made before the sandbox's /etc is; the
	 * published ports bound before anything runs (a host port taken since the last start
	 * fails here, naming it). */
	if (aj_sv_egress_new(&p->plan, &p->egress, err) < 0 ||
	    aj_sv_ports_bind(&p->plan, &p->ports, err) < 0)
		return -1;
	aj_trace("supervisor: before etc");
	share_etc(p);
	aj_trace("supervisor: etc shared");
	/* A sandbox that filled its disk starts with its overlays writable, to delete files. */
	if (p->plan.disk_dir)
		aj_quota_headroom(p->plan.disk_dir);
	r = aj_sandbox_start(&p->plan, &io, p->have_cg ? &p->cg : NULL, NULL, &p->sb, &ready, err);
	/* The policy's limit, whatever a crashed start left raised. */
	if (p->plan.disk_dir &&
	    aj_quota_set_limit(p->plan.disk_dir, p->pol.limits.disk, r < 0 ? NULL : err) < 0 &&
	    r == 0)
		return -1;
	if (r < 0)
		return -1;
	/* Init's exit unmounts the sandbox's tree, as it always did: a copy held past it would
	 * keep the workspace's overlay mounted while the next start mounts it again. */
	aj_close_fd(&p->sb.mnt_fd);
	if (ready.exec_errno)
		return aj_err_set(err, AJ_LAYER_EXEC, ready.exec_errno,
				  "the workspace \"%s\" is not usable inside the sandbox",
				  p->plan.cwd);
	aj_fd_set_nonblock(p->sb.ctl_fd, true);
	return 0;
}

static int mark_running(struct persist *p, struct aj_err *err)
{
	int64_t now = (int64_t)aj_now_realtime_ms();

	p->rec.state = AJ_ST_RUNNING;
	p->rec.generation++;
	p->rec.started_ms = now;
	p->rec.updated_ms = now;
	p->rec.last_active_ms = now;
	p->rec.supervisor_pid = getpid();
	p->rec.supervisor_start = (int64_t)aj_proc_start_time(getpid());
	snprintf(p->rec.socket, sizeof p->rec.socket, "%s", p->sock_path);
	p->rec.error[0] = '\0';
	if (aj_store_begin(p->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(p->store, &p->rec, err) < 0) {
		aj_store_rollback(p->store);
		return -1;
	}
	return aj_store_commit(p->store, err);
}

void aj_persist_publish_name(struct persist *p)
{
	if (strcmp(p->rec.owner, AJ_POOL_OWNER) != 0 &&
	    aj_names_publish(p->state_dir, p->rec.name, p->sock_path) < 0)
		aj_warn(p->warn, "sandbox %s: not in the names index (clients use the state store): "
				 "%s",
			p->rec.name, strerror(errno));
}

static void mark_stopped(struct persist *p, const char *reason, bool failed)
{
	int64_t now = (int64_t)aj_now_realtime_ms();

	aj_names_withdraw(p->state_dir, p->rec.name, p->id);

	p->rec.state = AJ_ST_STOPPED;
	p->rec.stopped_ms = now;
	p->rec.updated_ms = now;
	p->rec.supervisor_pid = 0;
	p->rec.supervisor_start = 0;
	p->rec.socket[0] = '\0';
	snprintf(p->rec.error, sizeof p->rec.error, "%s", failed ? reason : "");
	if (aj_store_begin(p->store, NULL) == 0) {
		if (aj_store_sandbox_update(p->store, &p->rec, NULL) == 0)
			aj_store_commit(p->store, NULL);
		else
			aj_store_rollback(p->store);
	}
}

int aj_persist_save(struct persist *p, struct aj_err *err)
{
	if (aj_store_begin(p->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(p->store, &p->rec, err) < 0) {
		aj_store_rollback(p->store);
		return -1;
	}
	return aj_store_commit(p->store, err);
}

int aj_persist_set_paused(struct persist *p, bool paused, struct aj_err *err)
{
	if (!p->have_cg)
		return aj_err_set(err, AJ_LAYER_CGROUP, ENOTSUP,
				  "pausing needs the sandbox's cgroup, which this host could not give "
				  "it");
	if (p->cg.env->ops->freeze(&p->cg, paused, err) < 0)
		return -1;
	p->paused = paused;
	if (!paused)
		p->pause_lease = NULL;
	p->rec.state = paused ? AJ_ST_PAUSED : AJ_ST_RUNNING;
	p->rec.updated_ms = (int64_t)aj_now_realtime_ms();
	if (aj_store_begin(p->store, err) < 0)
		return -1;
	if (aj_store_sandbox_update(p->store, &p->rec, err) < 0) {
		aj_store_rollback(p->store);
		return -1;
	}
	if (aj_store_commit(p->store, err) < 0)
		return -1;
	aj_persist_event(p, paused ? "pause" : "resume", NULL);
	return 0;
}

/* Ends the sandbox's compute; the workspace stays. Leaves the event loop. */
void aj_persist_stop(struct persist *p, const char *reason)
{
	if (p->stopping)
		return;
	p->stopping = true;
	p->stop_reason = reason;
	event_base_loopbreak(p->base);
}

static void on_init_exit(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;

	(void)fd;
	(void)what;
	aj_persist_stop(p, "the sandbox's init exited");
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	aj_persist_stop(arg, "stopped by a signal to the supervisor");
}

/* The maximum lifetime ends the sandbox's compute: stopped, or with lifetime_action "pause"
 * frozen (once; it stays paused until someone extends the lifetime and resumes it). Where the
 * freezer is missing the pause fails and the sandbox is stopped: the lifetime bounds the
 * sandbox's resources either way. */
static void lifetime_reached(struct persist *p)
{
	struct aj_err err;
	bool pause = !strcmp(p->rec.lifetime_action, "pause");

	if (pause && p->paused)
		return;
	aj_persist_event(p, "limit", json_pack("{s:s, s:s}", "limit", "max_lifetime", "action",
					       pause ? "pause" : "stop"));
	if (pause && aj_persist_set_paused(p, true, &err) == 0)
		return;
	if (pause)
		aj_warn(p->warn, "supervisor: pause at the maximum lifetime: %s; stopping",
			err.msg);
	aj_persist_stop(p, "maximum lifetime reached");
}

/* Idle timeout and maximum lifetime, checked once a second. Idle means: no request from any
 * client and no command attached to a client; background commands do not keep a sandbox
 * awake. */
/* The timers' work: done commands forgotten, a metrics sample every AJ_METRICS_EVERY_S, the
 * lifetime and the idle timeout. Returns the milliseconds until it is next needed: the next
 * sample, or a deadline before it (an idle sandbox wakes its supervisor once per sample, not
 * every second; a wake-up costs more than the sample). */
/* A "limit" event when the writable layers reach limits.disk, once until they drop below. */
static void disk_event(struct persist *p, const struct aj_metric *s)
{
	struct aj_quota_use u = {.bytes = s->disk, .limit = s->disk_limit};
	bool reached = s->have_disk && aj_quota_reached(&u);

	if (reached && !p->disk_hit)
		aj_persist_event(p, "limit", json_pack("{s:s, s:I, s:I}", "limit", "disk",
							"used_bytes", (json_int_t)s->disk,
							"limit_bytes", (json_int_t)s->disk_limit));
	p->disk_hit = reached;
}

static uint64_t timers(struct persist *p)
{
	uint64_t now = aj_now_realtime_ms(), mono = aj_now_monotonic_us(), next, at;
	bool attached = false;

	aj_procs_expire(p);
	for (struct exec_rec *e = p->execs; e; e = e->next)
		attached = attached || e->owner || aj_procs_followed(e);
	/* Open connections to published ports keep the sandbox awake as attached clients do. */
	attached = attached || aj_ports_open_connections(p->ports) > 0;
	if (mono >= p->next_sample_us) {
		struct aj_metric before = p->metrics.last, now_s;
		bool had = p->metrics.have_last;
		/* activity since the sample before (a request, an exec, a port's connection) */
		bool active = had && p->last_activity_ms >= (uint64_t)before.ms;
		aj_metrics_sample(&p->metrics, p->have_cg ? &p->cg : NULL, p->egress,
				  p->plan.disk_dir, p->pol.limits.memory, p->pol.limits.pids, true,
				  &now_s);
		disk_event(p, &now_s);
		/* Nothing changed and nobody came: sample half as often, up to a minute. */
		if (!attached && had && !active && aj_metric_same(&before, &now_s))
			p->sample_every_s = p->sample_every_s * 2 > AJ_METRICS_IDLE_MAX_S
						    ? AJ_METRICS_IDLE_MAX_S
						    : p->sample_every_s * 2;
		else
			p->sample_every_s = AJ_METRICS_EVERY_S;
		p->next_sample_us = mono + p->sample_every_s * 1000000ULL;
	}
	next = (p->next_sample_us - mono + 999) / 1000;
	if (p->rec.max_lifetime_ms) {
		at = (uint64_t)(p->rec.started_ms + p->rec.max_lifetime_ms);
		if (now >= at) {
			lifetime_reached(p);
			return next;
		}
		next = at - now < next ? at - now : next;
	}
	if (!p->rec.idle_timeout_ms || p->paused || attached)
		return next; /* a detach or a resume is seen at the next sample */
	at = p->last_activity_ms + (uint64_t)p->rec.idle_timeout_ms;
	if (now < at)
		return at - now < next ? at - now : next;
	aj_persist_event(p, "idle", json_pack("{s:s}", "action", p->rec.idle_action));
	if (strcmp(p->rec.idle_action, "stop") == 0)
		aj_persist_stop(p, "idle timeout");
	else
		aj_persist_set_paused(p, true, NULL);
	return next;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct persist *p = arg;
	uint64_t ms = timers(p);
	struct timeval tv;

	(void)fd;
	(void)what;
	if (ms < 10)
		ms = 10;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(p->ev_tick, &tv);
}

static int add_event(struct persist *p, struct event **ev, int fd, short what,
		     event_callback_fn cb, const struct timeval *tv, struct aj_err *err)
{
	*ev = event_new(p->base, fd, what, cb, p);
	if (!*ev || event_add(*ev, tv) < 0)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	return 0;
}

static void emit_egress(void *arg, const char *event, json_t *fields)
{
	aj_persist_event(arg, event, fields);
}

/* A connection to a published port is activity, as a client's request is. */
static void touch_ports(void *arg)
{
	aj_persist_touch(arg);
}

static int setup_loop(struct persist *p, struct aj_err *err)
{
	struct timeval tick = {TICK_SECONDS, 0};

	p->base = aj_event_base_new();
	if (!p->base)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	if (add_event(p, &p->ev_listen, p->listen_fd, EV_READ | EV_PERSIST, aj_persist_on_accept,
		      NULL, err) < 0 ||
	    add_event(p, &p->ev_init, p->sb.ctl_fd, EV_READ | EV_PERSIST, aj_persist_on_init, NULL,
		      err) < 0 ||
	    add_event(p, &p->ev_pid, p->sb.pidfd, EV_READ, on_init_exit, NULL, err) < 0 ||
	    add_event(p, &p->ev_tick, -1, 0, on_tick, &tick, err) < 0 ||
	    add_event(p, &p->ev_term, SIGTERM, EV_SIGNAL | EV_PERSIST, on_term, NULL, err) < 0)
		return -1;
	p->ev_flush = event_new(p->base, -1, 0, flush_events, p);
	if (!p->ev_flush)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	/* The proxy takes over the listening socket the sandbox's child made. */
	if (p->egress && aj_egress_start(p->egress, p->base, aj_steal_fd(&p->sb.proxy_fd),
					 emit_egress, p, err) < 0)
		return -1;
	aj_ports_set_touch(p->ports, touch_ports, p);
	if (aj_sv_host_ports_start(&p->sb, p->base, emit_egress, p, &p->host_ports, err) < 0)
		return -1;
	/* Without published ports the dialer waits for the first "socket" operation (a
	 * port-forward, the daemon's port proxy): most sandboxes never need one, and an idle
	 * one would cost every sandbox a process (control.c). */
	return aj_sv_ports_start(p->ports, &p->dialer, p->ports ? p->sb.net_fd : -1, p->base,
				 emit_egress, p, err);
}

static void report_ready(int fd, const struct aj_err *err)
{
	_cleanup_json_ json_t *j =
		err ? json_pack("{s:b, s:s, s:s, s:i, s:s, s:i}", "ok", 0, "layer",
				aj_layer_name(err->layer), "message", err->msg, "errno",
				err->errnum, "hint", err->hint, "class", (int)err->cls)
		    : json_pack("{s:b}", "ok", 1);
	_cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);

	if (fd >= 0 && text) {
		aj_write_all(fd, text, strlen(text));
		aj_write_all(fd, "\n", 1);
		close(fd); /* the ready pipe: its reader waits for end of file */
	}
}

static void teardown(struct persist *p)
{
	struct aj_cgroup_stats st;

	if (p->have_cg && p->cg.env->ops->stats(&p->cg, &st, NULL) == 0 && st.oom_kills)
		aj_persist_event(p, "limit", json_pack("{s:s, s:I}", "limit", "memory", "oom_kills",
						       (json_int_t)st.oom_kills));
	/* Thawed first: a frozen task cannot die. */
	if (p->paused && p->have_cg)
		p->cg.env->ops->freeze(&p->cg, false, NULL);
	aj_sandbox_kill(&p->sb);
	aj_sandbox_release(&p->sb);
	/* After the sandbox: no new connection can come; open proxy connections end with their
	 * events (published ports' connections end without one). */
	aj_egress_free(p->egress);
	aj_metrics_free(&p->metrics);
	p->egress = NULL;
	aj_ports_free(p->ports);
	aj_ports_free(p->host_ports);
	p->ports = p->host_ports = NULL;
	aj_dialer_stop(&p->dialer);
	if (p->have_cg) {
		p->cg.env->ops->kill_all(&p->cg, NULL);
		aj_sv_cgroup_remove(&p->cg, &p->guard);
	}
	if (p->listen_fd >= 0) {
		aj_close_fd(&p->listen_fd);
		unlink(p->sock_path);
	}
}

int aj_supervise(const char *state_dir, const char *id, int ready_fd, const struct aj_warn *warn)
{
	static struct persist p;
	struct aj_err err;

	memset(&p, 0, sizeof p);
	aj_sandbox_init(&p.sb); /* teardown() after an early failure must touch no descriptor */
	aj_dialer_init(&p.dialer);
	p.listen_fd = p.etc_fd = -1;
	p.sample_every_s = AJ_METRICS_EVERY_S;
	p.img.lock_fd = -1;
	p.next_id = 1;
	p.warn = warn;
	snprintf(p.state_dir, sizeof p.state_dir, "%s", state_dir);
	snprintf(p.id, sizeof p.id, "%s", id);
	aj_err_clear(&err);
	signal(SIGPIPE, SIG_IGN);
	if (aj_store_open(state_dir, &p.store, &err) < 0 ||
	    aj_store_sandbox_get(p.store, id, NULL, &p.rec, &err) < 0 || load_plan(&p, &err) < 0 ||
	    listen_control(&p, &err) < 0 || start_sandbox(&p, &err) < 0 ||
	    setup_loop(&p, &err) < 0 || mark_running(&p, &err) < 0) {
		report_ready(ready_fd, &err);
		teardown(&p);
		if (p.store && p.rec.id[0])
			mark_stopped(&p, err.msg, true);
		return 1;
	}
	aj_persist_touch(&p);
	aj_persist_publish_name(&p);
	aj_persist_event(&p, "start", json_pack("{s:I, s:s}", "generation",
						(json_int_t)p.rec.generation, "mode",
						p.plan.privileged ? "privileged" : "rootless"));
	report_ready(ready_fd, NULL);
	event_base_dispatch(p.base);
	/* Clients hear about the end of their commands before the sandbox goes. */
	aj_persist_conn_flush_all(&p);
	event_free(p.ev_flush);
	p.ev_flush = NULL;
	flush_events(-1, 0, &p);
	while (p.conns)
		aj_persist_conn_close(&p, p.conns);
	teardown(&p);
	mark_stopped(&p, p.stop_reason ? p.stop_reason : "stopped", false);
	aj_persist_event(&p, "stop", json_pack("{s:s}", "reason",
					       p.stop_reason ? p.stop_reason : "stopped"));
	aj_store_close(p.store);
	return 0;
}
