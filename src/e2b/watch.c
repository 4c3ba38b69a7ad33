/* filesystem.Filesystem/WatchDir (a stream) and CreateWatcher, GetWatcherEvents,
 * RemoveWatcher (a watcher polled by id; the Python SDK's way), on inotify
 * (docs/e2b-protocol.md 8.3).
 *
 * The inotify instance is made by the sandbox's init, inside the sandbox, and handed out over
 * SCM_RIGHTS (sandbox/initproto.h AJ_IOP_WATCH): paths resolve in the sandbox's mount tree and
 * the sandbox user's rights decide what may be watched. The daemon only reads events from the
 * descriptor (in the gvisor tier a socket whose packets are the instance's reads, init keeping
 * the instance inside: control/fsops.h). A recursive watch adds a watch per subdirectory, each again through init, as
 * they appear (from a worker: adding is a round trip to the supervisor), at most MAX_WATCHES.
 * Events follow fsnotify's mapping, which envd uses: one message per operation bit, names
 * relative to the watched directory. A watcher ends when the sandbox stops (its supervisor
 * connection closes) or the watched directory goes; a stream also at Connect-Timeout-Ms. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "common/strv.h"
#include "common/util.h"
#include "control/client.h"
#include "control/fsops.h"
#include "e2b/internal.h"

#define MAX_WATCHES 1024        /* directories per recursive watch */
#define MAX_BUFFERED 10000      /* events a polled watcher keeps */
#define MAX_WATCHERS 32         /* polled watchers per sandbox */
#define MASK                                                                                  \
	(IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |         \
	 IN_DELETE_SELF | IN_MOVE_SELF)
#define KEEPALIVE "{\"keepalive\":{}}"

struct wdir {
	int wd;
	char *rel; /* "" for the root */
};

struct addjob;

struct e2b_watcher {
	struct aj_e2b *e2b;
	char id[40];       /* polled watchers: the watcherId */
	char sandbox[17];
	char sock[256];    /* the supervisor's socket, for adding watches */
	char root[E2B_PATH_MAX + 1];
	bool recursive;
	int ifd, ctl;      /* ctl is only watched for its end: the sandbox stopped */
	struct event *ev_in, *ev_ctl, *closer;
	struct wdir *dirs;
	size_t n_dirs;
	struct aj_strv pending; /* new subdirectories whose watch is still to be added */
	struct addjob *job;     /* adding in flight; the watcher is freed when it is back */
	bool ended, closing, dying;
	struct e2b_stream *st;  /* WatchDir */
	const char *code;       /* of the end-stream */
	json_t *events;         /* polled: buffered events */
	bool overflow;
	struct e2b_watcher *next;
};

/* ---- watch descriptors ------------------------------------------------------------------------ */

static void add_dir(struct e2b_watcher *w, int wd, const char *rel)
{
	for (size_t i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd)
			return; /* the same directory again (moved back) */
	w->dirs = aj_xrealloc(w->dirs, (w->n_dirs + 1) * sizeof *w->dirs);
	w->dirs[w->n_dirs].wd = wd;
	w->dirs[w->n_dirs++].rel = aj_xstrdup(rel);
}

static const char *rel_of(const struct e2b_watcher *w, int wd)
{
	for (size_t i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd)
			return w->dirs[i].rel;
	return NULL;
}

static void drop_dir(struct e2b_watcher *w, int wd)
{
	for (size_t i = 0; i < w->n_dirs; i++)
		if (w->dirs[i].wd == wd) {
			free(w->dirs[i].rel);
			w->dirs[i] = w->dirs[--w->n_dirs];
			return;
		}
}

static void watcher_free(struct e2b_watcher *w)
{
	if (w->ev_in)
		event_free(w->ev_in);
	if (w->ev_ctl)
		event_free(w->ev_ctl);
	if (w->closer)
		event_free(w->closer);
	aj_srv_close_later(w->e2b->srv, w->ifd); /* the instance's last close: slow */
	if (w->ctl >= 0)
		close(w->ctl);
	for (size_t i = 0; i < w->n_dirs; i++)
		free(w->dirs[i].rel);
	free(w->dirs);
	aj_strv_free(&w->pending);
	json_decref(w->events);
	free(w);
}

/* ---- adding subdirectories (worker jobs) ------------------------------------------------------ */

struct addjob {
	struct aj_srv_job job; /* first */
	struct e2b_watcher *w;
	struct aj_strv paths;
	int ifd;
	char sock[256];
	int *wds;
};

static void add_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	struct addjob *a = (struct addjob *)j;
	_cleanup_close_ int ctl = aj_ctl_connect(a->sock, NULL);

	(void)m;
	for (size_t i = 0; i < a->paths.n; i++)
		if (ctl < 0 || aj_fs_watch(ctl, a->paths.v[i], a->ifd, MASK | IN_DONT_FOLLOW,
					   &a->wds[i], NULL) < 0)
			a->wds[i] = -1;
}

static void submit_adds(struct e2b_watcher *w);

static void add_done(struct aj_srv_job *j)
{
	struct addjob *a = (struct addjob *)j;
	struct e2b_watcher *w = a->w;
	size_t rootlen = strlen(w->root);

	w->job = NULL;
	for (size_t i = 0; !w->dying && i < a->paths.n; i++)
		if (a->wds[i] >= 0)
			add_dir(w, a->wds[i], a->paths.v[i] + rootlen + (strcmp(w->root, "/") ? 1 : 0));
	aj_strv_free(&a->paths);
	free(a->wds);
	free(a);
	if (w->dying)
		watcher_free(w);
	else
		submit_adds(w);
}

static void submit_adds(struct e2b_watcher *w)
{
	struct addjob *a;

	if (w->job || !w->pending.n || w->ended)
		return;
	a = aj_xcalloc(1, sizeof *a);
	a->wds = aj_xcalloc(w->pending.n, sizeof *a->wds);
	a->job.work = add_work;
	a->job.done = add_done;
	a->w = w;
	a->ifd = w->ifd;
	snprintf(a->sock, sizeof a->sock, "%s", w->sock);
	a->paths = w->pending;
	memset(&w->pending, 0, sizeof w->pending);
	w->job = a;
	aj_srv_pool_submit(w->e2b->srv, &a->job);
}

/* ---- events ------------------------------------------------------------------------------------ */

static const struct {
	uint32_t mask;
	const char *type;
} kinds[] = {
	{IN_CREATE | IN_MOVED_TO, "EVENT_TYPE_CREATE"},	  {IN_MODIFY, "EVENT_TYPE_WRITE"},
	{IN_DELETE, "EVENT_TYPE_REMOVE"},		  {IN_MOVED_FROM, "EVENT_TYPE_RENAME"},
	{IN_ATTRIB, "EVENT_TYPE_CHMOD"},
};

static void deliver(struct e2b_watcher *w, const char *name, const char *type)
{
	json_t *ev = json_pack("{s:s, s:s}", "name", name, "type", type);

	if (w->st) {
		e2b_stream_send(w->st, json_pack("{s:o}", "filesystem", ev));
	} else if (json_array_size(w->events) < MAX_BUFFERED) {
		json_array_append_new(w->events, ev);
	} else {
		w->overflow = true;
		json_decref(ev);
	}
}

static void finish_soon(struct e2b_watcher *w, const char *code)
{
	if (w->ended)
		return;
	w->ended = true;
	w->code = code;
	event_del(w->ev_in);
	event_del(w->ev_ctl);
	if (w->closer)
		event_active(w->closer, EV_TIMEOUT, 0);
}

static void one_event(struct e2b_watcher *w, const struct inotify_event *ev)
{
	const char *dir = rel_of(w, ev->wd);
	char name[2 * E2B_PATH_MAX + 2];

	if (ev->mask & IN_IGNORED) {
		if (dir && !dir[0])
			finish_soon(w, NULL); /* the watched directory is gone */
		drop_dir(w, ev->wd);
		return;
	}
	if (!dir || !ev->len) /* *_SELF: the parent's watch tells about it */
		return;
	snprintf(name, sizeof name, "%s%s%s", dir, dir[0] ? "/" : "", ev->name);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (ev->mask & kinds[i].mask)
			deliver(w, name, kinds[i].type);
	if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) &&
	    w->n_dirs + w->pending.n < MAX_WATCHES) {
		char abs[2 * E2B_PATH_MAX + 2];
		snprintf(abs, sizeof abs, "%s%s%s", w->root, strcmp(w->root, "/") ? "/" : "", name);
		aj_strv_push(&w->pending, abs);
	}
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_watcher *w = arg;
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)what;
	for (int rounds = 0; rounds < 16 && !w->ended; rounds++) {
		if (w->st && !e2b_stream_writable(w->st)) {
			event_del(w->ev_in); /* the stream's drain reads on */
			break;
		}
		n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		/* The end of a streamed instance (the gvisor tier's, whose init dropped it). */
		if (n == 0)
			finish_soon(w, "unavailable");
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			one_event(w, ev);
			p += sizeof *ev + ev->len;
		}
	}
	submit_adds(w);
}

/* The supervisor's connection ends when the sandbox stops: so does the watcher. */
static void on_ctl_end(evutil_socket_t fd, short what, void *arg)
{
	char b[256];
	ssize_t n = read(fd, b, sizeof b);

	(void)what;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		finish_soon(arg, "unavailable");
}

/* ---- setting up (worker) ----------------------------------------------------------------------- */

/* The request's route data: what the worker set up, for the loop thread to start. */
struct wsetup {
	int ifd, root_wd;
	char root[E2B_PATH_MAX + 1];
	struct aj_strv dirs; /* "WD:REL" of the directories watched at start */
	const char *path;    /* the message's (borrowed) */
	bool recursive;
};

static const struct aj_jf_field watch_fields[] = {
	{.name = "path", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED,
	 .off = offsetof(struct wsetup, path), .parse = e2b_keep_string,
	 .refusal = "a directory is required"},
	{.name = "recursive", .type = AJ_JF_BOOL, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct wsetup, recursive), .refusal = "expected true or false"},
	{.name = NULL},
};

static void wsetup_free(void *p)
{
	struct wsetup *s = p;

	if (s->ifd >= 0)
		close(s->ifd);
	aj_strv_free(&s->dirs);
	free(s);
}

struct subdirs {
	const char *dir;
	struct aj_strv *out;
};

static int on_subdir(void *arg, const struct aj_fs_entry *e)
{
	struct subdirs *sd = arg;
	char path[E2B_PATH_MAX + 1];

	if (S_ISDIR(e->st.st_mode) &&
	    (size_t)snprintf(path, sizeof path, "%s%s%s", sd->dir, strcmp(sd->dir, "/") ? "/" : "",
			     e->name) < sizeof path)
		aj_strv_push(sd->out, path);
	return 0;
}

/* A recursive watch starts with every subdirectory there is, breadth first, at most
 * MAX_WATCHES; each watch is added by init, not followed through symlinks. */
static void watch_tree(int ctl, struct wsetup *s)
{
	_cleanup_strv_ struct aj_strv queue = AJ_STRV_INIT;
	size_t rootlen = strlen(s->root) + (strcmp(s->root, "/") ? 1 : 0);
	char line[E2B_PATH_MAX + 32];

	aj_strv_push(&queue, s->root);
	for (size_t q = 0; q < queue.n && s->dirs.n < MAX_WATCHES; q++) {
		struct subdirs sd = {queue.v[q], &queue};
		int wd;
		if (q > 0) {
			if (aj_fs_watch(ctl, queue.v[q], s->ifd, MASK | IN_DONT_FOLLOW, &wd, NULL) < 0)
				continue;
			snprintf(line, sizeof line, "%d:%s", wd, queue.v[q] + rootlen);
			aj_strv_push(&s->dirs, line);
		}
		aj_fs_list(ctl, queue.v[q], on_subdir, &sd, NULL);
	}
}

static int watch_open(struct aj_srv_req *r, struct aj_mgr *m, struct wsetup *s)
{
	struct e2b_req *x = e2b_of(r);
	struct e2b_user u;
	struct aj_err err;

	if (e2b_read_msg(r, watch_fields, s) < 0 || e2b_sandbox_open(r, m) < 0 ||
	    e2b_user_resolve(r, &u) < 0 || e2b_path(r, &u, s->path, s->root, sizeof s->root) < 0)
		return -1;
	s->ifd = aj_fs_watch(x->ctl, s->root, -1, MASK, &s->root_wd, &err);
	if (s->ifd < 0 && err.errnum == ENOENT)
		return e2b_rpc_fail(r, "not_found", "directory '%s' does not exist", s->root);
	if (s->ifd < 0 && err.errnum == ENOTDIR)
		return e2b_rpc_fail(r, "invalid_argument", "path '%s' is not a directory", s->root);
	if (s->ifd < 0)
		return e2b_fail_err(r, &err);
	if (s->recursive)
		watch_tree(x->ctl, s);
	aj_fd_set_nonblock(x->ctl, true);
	return 0;
}

static void watch_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	struct wsetup *s = aj_xcalloc(1, sizeof *s);

	s->ifd = -1;
	e2b_of(r)->x = s;
	e2b_of(r)->x_free = wsetup_free;
	watch_open(r, m, s);
}

/* ---- the watcher (loop thread) ------------------------------------------------------------------ */

static void on_closer(evutil_socket_t fd, short what, void *arg);

/* Takes the set-up over from the request: descriptors, the watched directories. */
static struct e2b_watcher *watcher_new(struct aj_srv_req *r, bool stream)
{
	struct e2b_req *x = e2b_of(r);
	struct wsetup *s = x->x;
	struct e2b_watcher *w = aj_xcalloc(1, sizeof *w);
	struct event_base *base = aj_srv_base(r->srv);

	w->e2b = x->e2b;
	w->ifd = aj_steal_fd(&s->ifd);
	w->ctl = aj_steal_fd(&x->ctl);
	snprintf(w->sandbox, sizeof w->sandbox, "%s", x->id);
	snprintf(w->sock, sizeof w->sock, "%s", x->rec.socket);
	snprintf(w->root, sizeof w->root, "%s", s->root);
	w->recursive = s->recursive;
	add_dir(w, s->root_wd, "");
	for (size_t i = 0; i < s->dirs.n; i++)
		add_dir(w, atoi(s->dirs.v[i]), strchr(s->dirs.v[i], ':') + 1);
	w->ev_in = event_new(base, w->ifd, EV_READ | EV_PERSIST, on_inotify, w);
	w->ev_ctl = event_new(base, w->ctl, EV_READ | EV_PERSIST, on_ctl_end, w);
	w->closer = stream ? event_new(base, -1, 0, on_closer, w) : NULL;
	w->events = stream ? NULL : json_array();
	if (!w->ev_in || !w->ev_ctl || (stream && !w->closer)) { /* libevent's allocations */
		watcher_free(w);
		return NULL;
	}
	event_add(w->ev_in, NULL);
	event_add(w->ev_ctl, NULL);
	return w;
}

/* Freed now, or by the add job in flight when it comes back. */
static void watcher_release(struct e2b_watcher *w)
{
	w->ended = true;
	if (w->job) {
		w->dying = true;
		event_del(w->ev_in);
		event_del(w->ev_ctl);
	} else {
		watcher_free(w);
	}
}

/* ---- WatchDir ---------------------------------------------------------------------------------- */

static void on_closer(evutil_socket_t fd, short what, void *arg)
{
	struct e2b_watcher *w = arg;

	(void)fd;
	(void)what;
	e2b_stream_finish(w->st, w->code,
			  !w->code			       ? NULL
			  : !strcmp(w->code, "deadline_exceeded") ? "context deadline exceeded"
								   : "the sandbox stopped");
	w->st = NULL;
	watcher_release(w);
}

static void on_drain(void *arg)
{
	struct e2b_watcher *w = arg;

	if (!w->ended && !w->closing) {
		event_add(w->ev_in, NULL);
		event_active(w->ev_in, EV_READ, 0);
	}
}

static void on_close(void *arg)
{
	struct e2b_watcher *w = arg;

	w->closing = true;
	finish_soon(w, NULL);
}

static void on_deadline(void *arg)
{
	finish_soon(arg, "deadline_exceeded");
}

static void watch_done(struct aj_srv_req *r)
{
	struct e2b_watcher *w = watcher_new(r, true);
	struct e2b_stream_cbs cbs = {on_drain, on_close, on_deadline, w};

	if (!w) {
		e2b_rpc_fail(r, "internal", "out of memory");
		e2b_finish(r);
		return;
	}
	if (!(w->st = e2b_stream_start(r, KEEPALIVE, &cbs))) {
		watcher_release(w);
		return;
	}
	e2b_stream_send(w->st, json_pack("{s:{}}", "start"));
	if (aj_srv_stopping(r->srv) || e2b_stream_gone(w->st))
		on_close(w);
}

/* ---- CreateWatcher, GetWatcherEvents, RemoveWatcher -------------------------------------------- */

static const struct aj_jf_field watcher_fields[] = {
	{.name = "watcherId", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = 0,
	 .parse = e2b_keep_string, .refusal = "a string is required"},
	{.name = NULL},
};

static struct e2b_watcher **find_watcher(struct aj_srv_req *r)
{
	const char *id = NULL;

	if (e2b_read_msg(r, watcher_fields, &id) < 0)
		return NULL;
	for (struct e2b_watcher **pw = &e2b_of(r)->e2b->watchers; *pw; pw = &(*pw)->next)
		if (!strcmp((*pw)->id, id) && !strcmp((*pw)->sandbox, e2b_of(r)->id))
			return pw;
	e2b_rpc_fail(r, "not_found", "watcher %s not found", id);
	return NULL;
}

static int count_watchers(const struct aj_e2b *e, const char *sandbox)
{
	int n = 0;

	for (const struct e2b_watcher *w = e->watchers; w; w = w->next)
		n += !strcmp(w->sandbox, sandbox);
	return n;
}

static void create_done(struct aj_srv_req *r)
{
	struct aj_e2b *e = e2b_of(r)->e2b;
	struct e2b_watcher *w;

	if (count_watchers(e, e2b_of(r)->id) >= MAX_WATCHERS) {
		e2b_rpc_fail(r, "resource_exhausted", "at most %d watchers per sandbox; remove some",
			     MAX_WATCHERS);
	} else if (!(w = watcher_new(r, false))) {
		e2b_rpc_fail(r, "internal", "out of memory");
	} else {
		snprintf(w->id, sizeof w->id, "w%llu-%s", (unsigned long long)e->next_watcher++,
			 w->sandbox);
		w->next = e->watchers;
		e->watchers = w;
		aj_srv_ok(r, 200, json_pack("{s:s}", "watcherId", w->id));
	}
	e2b_finish(r);
}

/* Unlinks and frees a polled watcher. */
static void remove_watcher(struct e2b_watcher **pw)
{
	struct e2b_watcher *w = *pw;

	*pw = w->next;
	watcher_release(w);
}

static int get_events_prepare(struct aj_srv_req *r)
{
	struct e2b_watcher **pw = find_watcher(r), *w;

	if (!pw)
		return -1;
	w = *pw;
	if (w->overflow || (w->ended && json_array_size(w->events) == 0)) {
		if (w->overflow)
			e2b_rpc_fail(r, "resource_exhausted", "more than %d events were not fetched; "
				     "the watcher is gone", MAX_BUFFERED);
		else
			e2b_rpc_fail(r, "not_found", "the watcher ended (its directory or sandbox is "
				     "gone)");
		remove_watcher(pw);
		return -1;
	}
	/* The reply takes the buffered events (it is sent after this returns); new ones go to a
	 * new array. */
	aj_srv_ok(r, 200, json_pack("{s:o}", "events", w->events));
	w->events = json_array();
	return 0;
}

static int remove_prepare(struct aj_srv_req *r)
{
	struct e2b_watcher **pw = find_watcher(r);

	if (!pw)
		return -1;
	remove_watcher(pw);
	aj_srv_ok(r, 200, json_object());
	return 0;
}

/* At exit, after the worker pool: no add job comes back any more. */
void e2b_watchers_free(struct aj_e2b *e)
{
	while (e->watchers) {
		struct e2b_watcher *w = e->watchers;
		e->watchers = w->next;
		watcher_free(w);
	}
}

const struct e2b_route e2b_watch_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/WatchDir", E2B_STREAM, NULL, watch_work,
	 watch_done),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/CreateWatcher", E2B_UNARY, NULL, watch_work,
	 create_done),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/GetWatcherEvents", E2B_UNARY, get_events_prepare,
	 NULL, NULL),
	E2B_ROUTE(EVHTTP_REQ_POST, "/filesystem.Filesystem/RemoveWatcher", E2B_UNARY, remove_prepare, NULL,
	 NULL),
	E2B_ROUTES_END,
};
