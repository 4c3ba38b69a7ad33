/* Warm pools (`serve --warm-pool SPEC=N`, docs/api.md "Warm pools"): N started sandboxes kept
 * ready per policy or image, so that a create they can serve is a claim (manager/claim.c)
 * instead of a start.
 *
 * A pool's sandboxes belong to AJ_POOL_OWNER, which no token or API key owner can be, until
 * a create claims one for its owner; the claim goes through the sandbox's supervisor, which
 * gives a sandbox away only while it is the pool's, so a claimed sandbox is never handed out
 * again. A create is served from a pool when the policy it would store is the one the pool's
 * sandboxes were made with (aj_mgr_policy_text), else it creates as always; its owner's
 * quotas are reserved before either. Each claim starts a fill in the background (a worker
 * job), and so does a fill that failed, after a pause once three failed in a row.
 *
 * Threads: the specs' lists are shared by the loop thread (fills, their results) and the
 * workers (claims), under one mutex; jobs are submitted from the loop thread only (a worker
 * asks for a refill through an event). Every job made is on a list freed at stop. The pool's
 * sandboxes are removed when the daemon stops (and, after a crash, when it starts again). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "server/internal.h"

#define WARM_RETRY_S 10
#define WARM_FAILS_BEFORE_PAUSE 3

struct warm_spec {
	char *name;        /* SPEC as given */
	unsigned target;   /* N */
	char *fill_policy; /* the policy (JSON text) each fill is made with */
	char *key;         /* the stored policy of its sandboxes, known after the first fill */
	struct aj_strv ready; /* ids, claimable */
	unsigned filling;  /* fills submitted, not done */
	unsigned failed;   /* fills failed in a row */
};

enum warm_kind { WJ_SWEEP, WJ_FILL, WJ_DROP };

struct warm_job {
	struct aj_srv_job job; /* first */
	struct aj_srv_warm *w;
	enum warm_kind kind;
	size_t spec;
	char id[33];
	char *stored;      /* a fill's stored policy */
	int rc;
	char msg[512];
	struct warm_job *all; /* every job made, for stop */
};

struct aj_srv_warm {
	struct aj_srv *s;
	pthread_mutex_t mu;
	struct warm_spec *v;
	size_t n;
	struct event *refill_ev, *retry_ev;
	struct aj_strv drop; /* taken from a pool but not claimable: to be removed */
	struct warm_job *jobs;
	bool swept; /* the last daemon's leftovers are gone: fills may start */
};

static void warm_submit(struct aj_srv_warm *w, enum warm_kind kind, size_t spec, const char *id);

/* ---- specs ----------------------------------------------------------------------------------- */

/* NAME as the native API's create would have it: a preset, a policy file (a path), or an image
 * of the store ("image:REF", or any other name). */
static int native_policy(const char *name, struct aj_policy *pol, struct aj_err *err)
{
	const char *image = !strncmp(name, "image:", 6) ? name + 6 : NULL;
	bool preset = false;

	for (const char *const *p = aj_policy_preset_names(); !image && *p; p++)
		preset = preset || !strcmp(*p, name);
	if (!image && !preset && (strchr(name, '/') || strstr(name, ".json")))
		return aj_policy_load(pol, name, NULL, err);
	if (aj_policy_apply_preset(pol, preset ? name : "workspace-write", err) < 0)
		return -1;
	if (!preset)
		pol->rootfs_image = aj_xstrdup(image ? image : name);
	return 0;
}

static int spec_parse(struct aj_srv *s, const char *arg, struct warm_spec *sp, struct aj_err *err)
{
	const struct aj_srv_config *c = aj_srv_cfg(s);
	const char *eq = strrchr(arg, '=');
	_cleanup_policy_ struct aj_policy pol;
	_cleanup_json_ json_t *j = NULL;
	char *end = NULL;
	unsigned long n = eq ? strtoul(eq + 1, &end, 10) : 0;

	aj_policy_init(&pol);
	if (!eq || eq == arg || !end || *end || end == eq + 1 || n < 1 || n > 1000)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--warm-pool \"%s\": expected SPEC=N, N from 1 to 1000", arg);
	sp->name = aj_xstrndup(arg, (size_t)(eq - arg));
	sp->target = (unsigned)n;
	if (!strncmp(sp->name, "e2b:", 4)) {
		if (!c->e2b_listen.n || !c->e2b->warm_policy)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
					  "--warm-pool \"%s\": an E2B template's pool needs "
					  "--e2b-listen",
					  arg);
		if (c->e2b->warm_policy(s->front, sp->name + 4, &pol, err) < 0)
			return aj_err_prefix(err, "--warm-pool \"%s\"", arg);
	} else if (native_policy(sp->name, &pol, err) < 0) {
		return aj_err_prefix(err, "--warm-pool \"%s\"", arg);
	}
	if (pol.n_creds || pol.volumes.n)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--warm-pool \"%s\": a pool's policy cannot use secrets or volumes "
				  "(they are an owner's)",
				  arg);
	j = aj_policy_to_json(&pol);
	sp->fill_policy = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	if (!sp->fill_policy)
		return aj_err_set(err, AJ_LAYER_POLICY, ENOMEM, "--warm-pool \"%s\"", arg);
	return 0;
}

/* ---- jobs ------------------------------------------------------------------------------------ */

static void sweep_work(struct aj_mgr *m, struct warm_job *j)
{
	struct aj_sandbox_rec *v = NULL;
	struct aj_err err;
	size_t n = 0;

	if (aj_mgr_list(m, NULL, &v, &n, &err) < 0) {
		aj_err_format(&err, j->msg, sizeof j->msg);
		j->rc = -1;
		return;
	}
	for (size_t i = 0; i < n; i++)
		aj_mgr_remove(m, v[i].id, true, NULL);
	aj_sandbox_recs_free(v, n);
}

static void fill_work(struct aj_mgr *m, struct warm_job *j, const char *policy, const char *name)
{
	_cleanup_policy_ struct aj_policy pol;
	_cleanup_strv_ struct aj_strv labels = AJ_STRV_INIT;
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = AJ_REC_INIT;
	struct aj_create_opts o = {.policy = &pol, .labels = &labels, .start = true};
	struct aj_err err;

	aj_policy_init(&pol);
	aj_strv_pushf(&labels, "agentjail.warm-pool=%s", name);
	if (aj_policy_load_text(&pol, policy, &err) < 0 || aj_mgr_create(m, &o, &rec, &err) < 0) {
		aj_err_format(&err, j->msg, sizeof j->msg);
		j->rc = -1;
		return;
	}
	snprintf(j->id, sizeof j->id, "%s", rec.id);
	j->stored = aj_xstrdup(rec.policy);
}

static void warm_work(struct aj_srv_job *job, struct aj_mgr *m)
{
	struct warm_job *j = (struct warm_job *)job;
	struct aj_srv_warm *w = j->w;
	char *policy, *name;

	j->rc = 0;
	if (j->kind == WJ_SWEEP) {
		sweep_work(m, j);
	} else if (j->kind == WJ_DROP) {
		aj_mgr_remove(m, j->id, true, NULL);
	} else {
		pthread_mutex_lock(&w->mu); /* the spec's strings are constant; read under the lock */
		policy = w->v[j->spec].fill_policy;
		name = w->v[j->spec].name;
		pthread_mutex_unlock(&w->mu);
		fill_work(m, j, policy, name);
	}
}

static void refill(struct aj_srv_warm *w);

static void fill_done(struct aj_srv_warm *w, struct warm_job *j)
{
	struct warm_spec *sp = &w->v[j->spec];

	pthread_mutex_lock(&w->mu);
	sp->filling--;
	if (j->rc == 0) {
		sp->failed = 0;
		free(sp->key);
		sp->key = j->stored;
		j->stored = NULL;
		aj_strv_push(&sp->ready, j->id);
	} else {
		sp->failed++;
	}
	pthread_mutex_unlock(&w->mu);
	if (j->rc < 0)
		fprintf(stderr, "agentjail: serve: warm pool \"%s\": a fill failed: %s\n", sp->name,
			j->msg);
}

static void warm_done(struct aj_srv_job *job)
{
	struct warm_job *j = (struct warm_job *)job;
	struct aj_srv_warm *w = j->w;

	if (j->kind == WJ_SWEEP) {
		if (j->rc < 0)
			fprintf(stderr, "agentjail: serve: warm pools: removing the last run's: %s\n",
				j->msg);
		w->swept = true;
	} else if (j->kind == WJ_FILL) {
		fill_done(w, j);
	}
	refill(w);
}

static void warm_submit(struct aj_srv_warm *w, enum warm_kind kind, size_t spec, const char *id)
{
	struct warm_job *j = aj_xcalloc(1, sizeof *j);

	j->w = w;
	j->kind = kind;
	j->spec = spec;
	snprintf(j->id, sizeof j->id, "%s", id ? id : "");
	j->job.work = warm_work;
	j->job.done = warm_done;
	snprintf(j->job.owner, sizeof j->job.owner, "%s", AJ_POOL_OWNER);
	j->all = w->jobs;
	w->jobs = j;
	aj_srv_pool_submit(w->s, &j->job);
}

/* Loop thread: fills for every spec short of its N, unless failures asked for a pause. */
static void refill(struct aj_srv_warm *w)
{
	_cleanup_strv_ struct aj_strv drop = AJ_STRV_INIT;
	bool pause = false;

	pthread_mutex_lock(&w->mu);
	drop = w->drop;
	w->drop = (struct aj_strv)AJ_STRV_INIT;
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < drop.n; i++)
		warm_submit(w, WJ_DROP, 0, drop.v[i]);
	if (!w->swept || aj_srv_stopping(w->s))
		return;
	for (size_t i = 0; i < w->n; i++) {
		struct warm_spec *sp = &w->v[i];
		unsigned want;

		pthread_mutex_lock(&w->mu);
		want = sp->failed >= WARM_FAILS_BEFORE_PAUSE ? 0
		       : sp->ready.n + sp->filling < sp->target
			       ? sp->target - (unsigned)sp->ready.n - sp->filling
			       : 0;
		pause = pause || sp->failed >= WARM_FAILS_BEFORE_PAUSE;
		sp->filling += want;
		pthread_mutex_unlock(&w->mu);
		while (want--)
			warm_submit(w, WJ_FILL, i, NULL);
	}
	if (pause && !evtimer_pending(w->retry_ev, NULL)) {
		struct timeval tv = {WARM_RETRY_S, 0};
		evtimer_add(w->retry_ev, &tv);
	}
}

static void on_refill(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	refill(arg);
}

/* After a pause, one more try per spec that failed. */
static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct aj_srv_warm *w = arg;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].failed >= WARM_FAILS_BEFORE_PAUSE)
			w->v[i].failed = WARM_FAILS_BEFORE_PAUSE - 1;
	pthread_mutex_unlock(&w->mu);
	refill(w);
}

/* ---- claims ---------------------------------------------------------------------------------- */

/* Takes a ready id of the spec whose sandboxes have `text` for policy; false if none. */
static bool take_ready(struct aj_srv_warm *w, const char *text, char id[33], size_t *spec)
{
	bool found = false;

	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->n && !found; i++) {
		struct warm_spec *sp = &w->v[i];
		if (!sp->key || sp->ready.n == 0 || strcmp(sp->key, text) != 0)
			continue;
		snprintf(id, 33, "%s", sp->ready.v[sp->ready.n - 1]);
		free(sp->ready.v[--sp->ready.n]);
		sp->ready.v[sp->ready.n] = NULL;
		*spec = i;
		found = true;
	}
	pthread_mutex_unlock(&w->mu);
	return found;
}

static void give_back(struct aj_srv_warm *w, size_t spec, const char *id)
{
	pthread_mutex_lock(&w->mu);
	aj_strv_push(&w->v[spec].ready, id);
	pthread_mutex_unlock(&w->mu);
}

/* Worker thread. */
int aj_srv_warm_create(struct aj_srv *s, struct aj_mgr *m, const struct aj_create_opts *o,
		       struct aj_sandbox_rec *out, struct aj_err *err)
{
	struct aj_srv_warm *w = s->warm;
	_cleanup_free_ char *text = NULL;
	char id[33];
	size_t spec;

	if (!w || !o->start || o->from_snapshot || aj_mgr_policy_text(m, o->policy, &text, err) < 0)
		return aj_mgr_create(m, o, out, err);
	while (take_ready(w, text, id, &spec)) {
		int rc = aj_mgr_claim(m, id, text, o, out, err);

		if (rc < 0) {
			give_back(w, spec, id); /* a name taken: the sandbox is still the pool's */
			return -1;
		}
		/* Not claimable any more (it stopped, say): removed by a job the loop thread
		 * submits, which then fills in its place. */
		if (rc == 0) {
			pthread_mutex_lock(&w->mu);
			aj_strv_push(&w->drop, id);
			pthread_mutex_unlock(&w->mu);
		}
		event_active(w->refill_ev, EV_READ, 0);
		if (rc > 0)
			return 0;
	}
	return aj_mgr_create(m, o, out, err);
}

/* ---- start, stop ----------------------------------------------------------------------------- */

int aj_srv_warm_start(struct aj_srv *s, struct aj_err *err)
{
	const struct aj_srv_config *c = aj_srv_cfg(s);
	struct aj_srv_warm *w;

	if (!c->warm_pools.n)
		return 0;
	w = s->warm = aj_xcalloc(1, sizeof *w);
	w->s = s;
	pthread_mutex_init(&w->mu, NULL);
	w->v = aj_xcalloc(c->warm_pools.n, sizeof *w->v);
	for (size_t i = 0; i < c->warm_pools.n; i++, w->n++)
		if (spec_parse(s, c->warm_pools.v[i], &w->v[i], err) < 0) {
			w->n++; /* freed with the others */
			return -1;
		}
	w->refill_ev = event_new(s->base, -1, 0, on_refill, w);
	w->retry_ev = evtimer_new(s->base, on_retry, w);
	if (!w->refill_ev || !w->retry_ev)
		return aj_err_set(err, AJ_LAYER_API, ENOMEM, "warm pool events");
	for (size_t i = 0; i < w->n; i++)
		fprintf(stderr, "agentjail: serve: warm pool \"%s\": %u sandboxes\n", w->v[i].name,
			w->v[i].target);
	/* What a daemon killed before its stop left goes first: nobody can claim it now. */
	warm_submit(w, WJ_SWEEP, 0, NULL);
	return 0;
}

/* After the workers have stopped: the pool's sandboxes go with the daemon (a stopped daemon
 * serves no claims), then every job and spec. */
void aj_srv_warm_stop(struct aj_srv *s)
{
	struct aj_srv_warm *w = s->warm;
	struct aj_mgr m;

	if (!w)
		return;
	if (w->swept && aj_mgr_open(&m, aj_srv_cfg(s)->state_dir, AJ_POOL_OWNER, NULL) == 0) {
		struct warm_job sweep = {.kind = WJ_SWEEP};
		sweep_work(&m, &sweep);
		aj_mgr_close(&m);
	}
	while (w->jobs) {
		struct warm_job *j = w->jobs;
		w->jobs = j->all;
		free(j->stored);
		free(j);
	}
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].name);
		free(w->v[i].fill_policy);
		free(w->v[i].key);
		aj_strv_free(&w->v[i].ready);
	}
	aj_strv_free(&w->drop);
	free(w->v);
	if (w->refill_ev)
		event_free(w->refill_ev);
	if (w->retry_ev)
		event_free(w->retry_ev);
	pthread_mutex_destroy(&w->mu);
	free(w);
	s->warm = NULL;
}
