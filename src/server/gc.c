/* Retention and crash recovery while the daemon runs: what `agentjail gc` does, every
 * gc_interval_s, on a worker, for every owner's sandboxes, never two at once. Without it a
 * stopped sandbox's retention would only be applied when someone ran gc by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

struct aj_srv_gc {
	struct aj_srv_job job; /* first */
	struct event *timer;
	bool running;
	struct aj_gc_report rep;
	int rc;
	char msg[512];
};

static void gc_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	struct aj_srv_gc *g = (struct aj_srv_gc *)j;
	struct aj_err err;

	aj_err_clear(&err);
	g->rc = aj_mgr_gc(m, &g->rep, &err);
	if (g->rc < 0)
		aj_err_format(&err, g->msg, sizeof g->msg);
}

static void gc_done(struct aj_srv_job *j)
{
	struct aj_srv_gc *g = (struct aj_srv_gc *)j;
	const struct aj_gc_report *r = &g->rep;

	g->running = false;
	if (g->rc < 0)
		fprintf(stderr, "agentjail: serve: gc: %s\n", g->msg);
	else if (r->sandboxes_deleted || r->snapshots_deleted || r->layers_deleted ||
		 r->marked_stopped || r->recovered || r->builds_deleted)
		fprintf(stderr,
			"agentjail: serve: gc: %u sandboxes and %u snapshots past their retention "
			"deleted, %u layers freed, %u found stopped, %u interrupted operations "
			"finished, %u old builds and uploads removed\n",
			r->sandboxes_deleted, r->snapshots_deleted, r->layers_deleted,
			r->marked_stopped, r->recovered, r->builds_deleted);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct aj_srv *s = arg;

	(void)fd;
	(void)what;
	if (s->gc->running || s->stopping)
		return;
	s->gc->running = true;
	aj_srv_pool_submit(s, &s->gc->job);
}

int aj_srv_gc_start(struct aj_srv *s, struct aj_err *err)
{
	struct timeval tv = {s->cfg->gc_interval_s, 0};

	if (s->cfg->gc_interval_s <= 0)
		return 0;
	s->gc = aj_xcalloc(1, sizeof *s->gc);
	if (!(s->gc->timer = event_new(s->base, -1, EV_PERSIST, on_timer, s)) ||
	    event_add(s->gc->timer, &tv) < 0)
		return aj_err_set(err, AJ_LAYER_API, ENOMEM, "gc timer");
	s->gc->job.work = gc_work;
	s->gc->job.done = gc_done;
	s->gc->job.any_owner = true;
	return 0;
}

void aj_srv_gc_stop(struct aj_srv *s)
{
	if (!s->gc)
		return;
	if (s->gc->timer)
		event_free(s->gc->timer);
	free(s->gc);
	s->gc = NULL;
}
