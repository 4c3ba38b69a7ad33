/* The worker pool: manager calls off the event loop.
 *
 * Each worker owns one manager, i.e. one SQLite connection (connections are not shared
 * between threads). Jobs wait in one FIFO queue; a finished job goes on the done list and an
 * event wakes the loop thread, which runs the done callbacks. Workers block every signal so
 * that signals reach the loop thread's libevent handler, and the manager resets the mask in
 * the supervisors it starts.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/internal.h"

struct aj_srv_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct aj_srv_job *head, *tail; /* queued */
	struct aj_srv_job *done;        /* finished, for the loop thread (LIFO, reversed there) */
	struct event *done_ev;
	unsigned busy;                  /* submitted, done not yet run; loop thread only */
	bool quit;
	unsigned n, n_threads;
	pthread_t *threads;
	struct aj_mgr *mgrs;
};

struct worker_arg {
	struct aj_srv_pool *pool;
	struct aj_mgr *m;
};

static struct aj_srv_job *next_job(struct aj_srv_pool *p)
{
	struct aj_srv_job *j;

	pthread_mutex_lock(&p->mu);
	while (!p->head && !p->quit)
		pthread_cond_wait(&p->cv, &p->mu);
	j = p->quit ? NULL : p->head;
	if (j) {
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	return j;
}

static void *worker_main(void *varg)
{
	struct worker_arg a = *(struct worker_arg *)varg;
	struct aj_srv_job *j;

	free(varg);
	while ((j = next_job(a.pool))) {
		/* The manager filters every lookup by this owner: another owner's sandbox is
		 * simply not found. */
		snprintf(a.m->owner, sizeof a.m->owner, "%s", j->owner);
		a.m->any_owner = j->any_owner;
		j->work(j, a.m);
		pthread_mutex_lock(&a.pool->mu);
		j->next = a.pool->done;
		a.pool->done = j;
		pthread_mutex_unlock(&a.pool->mu);
		event_active(a.pool->done_ev, EV_READ, 0);
	}
	return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
	struct aj_srv *s = arg;
	struct aj_srv_pool *p = s->pool;
	struct aj_srv_job *list, *rev = NULL;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&p->mu);
	list = p->done;
	p->done = NULL;
	pthread_mutex_unlock(&p->mu);
	while (list) { /* oldest first */
		struct aj_srv_job *n = list->next;
		list->next = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		struct aj_srv_job *n = rev->next;
		p->busy--;
		rev->done(rev);
		rev = n;
	}
}

void aj_srv_pool_submit(struct aj_srv *s, struct aj_srv_job *j)
{
	struct aj_srv_pool *p = s->pool;

	j->next = NULL;
	p->busy++;
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

struct close_job {
	struct aj_srv_job job; /* first */
	int fd;
};

static void close_work(struct aj_srv_job *j, struct aj_mgr *m)
{
	(void)m;
	close(((struct close_job *)j)->fd);
}

static void close_done(struct aj_srv_job *j)
{
	free(j);
}

void aj_srv_close_later(struct aj_srv *s, int fd)
{
	struct close_job *c;

	if (fd < 0)
		return;
	if (!s->pool) {
		close(fd);
		return;
	}
	c = aj_xcalloc(1, sizeof *c);
	c->job.work = close_work;
	c->job.done = close_done;
	c->job.any_owner = true; /* the daemon's own: it looks nothing up */
	c->fd = fd;
	aj_srv_pool_submit(s, &c->job);
}

unsigned aj_srv_pool_busy(const struct aj_srv *s)
{
	return s->pool ? s->pool->busy : 0;
}

static int start_threads(struct aj_srv_pool *p, struct aj_err *err)
{
	sigset_t all, old;
	int rc = 0;

	/* Threads inherit the creator's mask: block everything around pthread_create. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < p->n && rc == 0; i++) {
		struct worker_arg *a = aj_xmalloc(sizeof *a); /* the thread's */
		int e;

		a->pool = p;
		a->m = &p->mgrs[i];
		e = pthread_create(&p->threads[i], NULL, worker_main, a);
		if (e) {
			free(a);
			rc = aj_err_set(err, AJ_LAYER_API, e, "start worker thread %u", i);
		} else {
			p->n_threads = i + 1;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int aj_srv_pool_start(struct aj_srv *s, struct aj_err *err)
{
	struct aj_srv_pool *p = aj_xcalloc(1, sizeof *p);
	unsigned n = s->cfg->workers ? s->cfg->workers : 1;

	s->pool = p;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->threads = aj_xcalloc(n, sizeof *p->threads);
	p->mgrs = aj_xcalloc(n, sizeof *p->mgrs);
	p->done_ev = event_new(s->base, -1, 0, on_done, s);
	if (!p->done_ev)
		return aj_err_sys(err, AJ_LAYER_API, "worker pool");
	for (unsigned i = 0; i < n; i++) {
		if (aj_mgr_open(&p->mgrs[i], s->cfg->state_dir, "", err) < 0)
			return aj_err_prefix(err, "worker %u", i);
		p->n = i + 1;
	}
	return start_threads(p, err);
}

void aj_srv_pool_stop(struct aj_srv *s)
{
	struct aj_srv_pool *p = s->pool;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	for (unsigned i = 0; i < p->n; i++)
		aj_mgr_close(&p->mgrs[i]);
	if (p->done_ev)
		event_free(p->done_ev);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p->threads);
	free(p->mgrs);
	free(p);
	s->pool = NULL;
}
