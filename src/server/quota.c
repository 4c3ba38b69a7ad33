/* Per-owner quotas of token owners: how many sandboxes, volumes and snapshots an owner holds,
 * the sum of its sandboxes' memory limits, the sum of its volumes' sizes, and its disk: its
 * sandboxes' disk limits, its volumes' sizes and its snapshots' sizes together. The local owner
 * (unix socket, like the CLI) has none.
 *
 * A request states what it would add as a claim. The check and the creation are not one
 * transaction, so claims in progress are counted as reservations under one lock: two
 * concurrent requests cannot both take the last slot. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "server/internal.h"
#include "storage/volumes.h"

struct reservation {
	char owner[AJ_SRV_OWNER_MAX];
	struct aj_srv_claim held;
	struct reservation *next;
};

struct aj_srv_quota {
	pthread_mutex_t mu;
	struct aj_srv_claim max; /* 0 in a field: no quota on it */
	struct reservation *list;
};

struct aj_srv_quota *aj_srv_quota_new(const struct aj_srv_config *c)
{
	struct aj_srv_quota *q = aj_xcalloc(1, sizeof *q);

	pthread_mutex_init(&q->mu, NULL);
	q->max = (struct aj_srv_claim){
		.sandboxes = c->max_sandboxes,
		.memory = c->max_memory,
		.volumes = c->max_volumes,
		.volume_bytes = c->max_volume_bytes,
		.snapshots = c->max_snapshots,
		.disk = c->max_disk,
	};
	return q;
}

void aj_srv_quota_free(struct aj_srv_quota *q)
{
	if (!q)
		return;
	while (q->list) {
		struct reservation *n = q->list->next;
		free(q->list);
		q->list = n;
	}
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static bool any_quota(const struct aj_srv_claim *m)
{
	return m->sandboxes || m->memory || m->volumes || m->volume_bytes || m->snapshots ||
	       m->disk;
}

static bool applies(const struct aj_srv_req *r)
{
	const struct aj_srv_quota *q = r->srv->quota;

	return r->remote && q && any_quota(&q->max);
}

static struct reservation *find(struct aj_srv_quota *q, const char *owner, bool make)
{
	struct reservation *e;

	for (e = q->list; e; e = e->next)
		if (!strcmp(e->owner, owner))
			return e;
	if (!make)
		return NULL;
	e = aj_xcalloc(1, sizeof *e);
	snprintf(e->owner, sizeof e->owner, "%s", owner);
	e->next = q->list;
	q->list = e;
	return e;
}

/* a += b, or a -= b */
static void add(struct aj_srv_claim *a, const struct aj_srv_claim *b, bool minus)
{
	int s = minus ? -1 : 1;

	a->sandboxes += (unsigned)s * b->sandboxes;
	a->memory += (uint64_t)(int64_t)s * b->memory;
	a->volumes += (unsigned)s * b->volumes;
	a->volume_bytes += (uint64_t)(int64_t)s * b->volume_bytes;
	a->snapshots += (unsigned)s * b->snapshots;
	a->disk += (uint64_t)(int64_t)s * b->disk;
}

static int sandbox_holdings(struct aj_mgr *m, const char *owner, struct aj_srv_claim *h,
			    struct aj_err *err)
{
	struct aj_sandbox_rec *v = NULL;
	size_t n = 0;

	if (aj_store_sandbox_list(m->store, owner, NULL, &v, &n, err) < 0)
		return -1;
	h->sandboxes += (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		struct aj_srv_limits l = aj_srv_policy_limits(v[i].policy);
		h->memory += l.memory;
		h->disk += l.disk;
	}
	aj_sandbox_recs_free(v, n);
	return 0;
}

static int volume_holdings(struct aj_mgr *m, const char *owner, struct aj_srv_claim *h,
			   struct aj_err *err)
{
	struct aj_volume *v = NULL;
	size_t n = 0;

	if (aj_volume_list(m->state, owner, &v, &n, err) < 0)
		return -1;
	h->volumes += (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		h->volume_bytes += v[i].size;
		h->disk += v[i].size;
	}
	free(v);
	return 0;
}

static int snapshot_holdings(struct aj_mgr *m, const char *owner, struct aj_srv_claim *h,
			     struct aj_err *err)
{
	struct aj_snapshot_rec *v = NULL;
	size_t n = 0;

	if (aj_store_snapshot_list(m->store, owner, &v, &n, err) < 0)
		return -1;
	h->snapshots += (unsigned)n;
	for (size_t i = 0; i < n; i++)
		h->disk += v[i].size_bytes > 0 ? (uint64_t)v[i].size_bytes : 0;
	aj_snapshot_recs_free(v, n);
	return 0;
}

/* What the owner holds now: its sandboxes, volumes and snapshots (each read only when a quota
 * counts them) plus claims in progress. */
static int holdings(struct aj_srv_quota *q, struct aj_mgr *m, const char *owner,
		    struct aj_srv_claim *h, struct aj_err *err)
{
	const struct aj_srv_claim *x = &q->max;
	struct reservation *e = find(q, owner, false);

	memset(h, 0, sizeof *h);
	if (e)
		add(h, &e->held, false);
	if ((x->sandboxes || x->memory || x->disk) && sandbox_holdings(m, owner, h, err) < 0)
		return -1;
	if ((x->volumes || x->volume_bytes || x->disk) && volume_holdings(m, owner, h, err) < 0)
		return -1;
	if ((x->snapshots || x->disk) && snapshot_holdings(m, owner, h, err) < 0)
		return -1;
	return 0;
}

/* A claim a quota cannot weigh: a sandbox without the limit a quota sums, a volume without a
 * size. */
static int unweighable(struct aj_srv_req *r, const struct aj_srv_claim *c)
{
	const struct aj_srv_claim *x = &r->srv->quota->max;
	const char *o = r->job.owner;

	if (x->memory && c->sandboxes && !c->memory)
		return aj_srv_fail(r, 429, "quota_exceeded", "policy.limits.memory",
				   "memory quota: a sandbox of owner \"%s\" needs a memory limit "
				   "(policy.limits.memory)",
				   o);
	if (x->disk && c->sandboxes && !c->disk)
		return aj_srv_fail(r, 429, "quota_exceeded", "policy.limits.disk",
				   "disk quota: a sandbox of owner \"%s\" needs a disk limit "
				   "(policy.limits.disk)",
				   o);
	if ((x->volume_bytes || x->disk) && c->volumes && !c->volume_bytes)
		return aj_srv_fail(r, 429, "quota_exceeded", "size",
				   "%s quota: a volume of owner \"%s\" needs a size (--max-%s bounds "
				   "the sum)",
				   x->disk ? "disk" : "volume", o, x->disk ? "disk" : "volume-bytes");
	return 0;
}

static int over_count(struct aj_srv_req *r, const char *what, const char *plural,
		      unsigned have, unsigned max, unsigned more)
{
	if (!max || !more || (uint64_t)have + more <= max)
		return 0;
	return aj_srv_fail(r, 429, "quota_exceeded", NULL,
			   "%s quota: owner \"%s\" has %u of %u %s; %u more do not fit", what,
			   r->job.owner, have, max, plural, more);
}

static int over_bytes(struct aj_srv_req *r, const char *what, const char *sum,
		      const char *field, uint64_t have, uint64_t max, uint64_t more)
{
	char a[32], b[32], c[32];

	if (!max || !more || (have <= max && more <= max - have))
		return 0;
	aj_format_size(have, a, sizeof a);
	aj_format_size(max, b, sizeof b);
	aj_format_size(more, c, sizeof c);
	return aj_srv_fail(r, 429, "quota_exceeded", field,
			   "%s quota: owner \"%s\" has %s of %s in %s; %s more do not fit", what,
			   r->job.owner, a, b, sum, c);
}

static int over(struct aj_srv_req *r, const struct aj_srv_claim *h, const struct aj_srv_claim *c)
{
	const struct aj_srv_claim *x = &r->srv->quota->max;

	if (over_count(r, "sandbox", "sandboxes", h->sandboxes, x->sandboxes, c->sandboxes) < 0 ||
	    over_count(r, "volume", "volumes", h->volumes, x->volumes, c->volumes) < 0 ||
	    over_count(r, "snapshot", "snapshots", h->snapshots, x->snapshots, c->snapshots) < 0 ||
	    over_bytes(r, "memory", "memory limits", "policy.limits.memory", h->memory, x->memory,
		       c->memory) < 0 ||
	    over_bytes(r, "volume", "volume sizes", "size", h->volume_bytes, x->volume_bytes,
		       c->volume_bytes) < 0 ||
	    over_bytes(r, "disk", "disk limits, volumes and snapshots",
		       c->sandboxes ? "policy.limits.disk" : c->volumes ? "size" : NULL, h->disk,
		       x->disk, c->disk) < 0)
		return -1;
	return 0;
}

int aj_srv_quota_claim(struct aj_srv_req *r, struct aj_mgr *m, const struct aj_srv_claim *c)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct aj_srv_claim h;
	struct aj_err err;
	int rc;

	if (!applies(r))
		return 0;
	if (unweighable(r, c) < 0)
		return -1;
	pthread_mutex_lock(&q->mu);
	rc = holdings(q, m, r->job.owner, &h, &err);
	if (rc < 0)
		aj_srv_fail_err(r, &err, NULL);
	else if ((rc = over(r, &h, c)) == 0)
		add(&find(q, r->job.owner, true)->held, c, false);
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void aj_srv_quota_unclaim(struct aj_srv_req *r, const struct aj_srv_claim *c)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct reservation *e;

	if (!applies(r))
		return;
	pthread_mutex_lock(&q->mu);
	e = find(q, r->job.owner, false);
	if (e)
		add(&e->held, c, true);
	pthread_mutex_unlock(&q->mu);
}

/* An overflow is a claim no quota can take. */
static uint64_t times(unsigned count, uint64_t each)
{
	return each && (uint64_t)count * each / each != count ? UINT64_MAX : (uint64_t)count * each;
}

struct aj_srv_claim aj_srv_claim_sandboxes(unsigned count, uint64_t memory_each,
					   uint64_t disk_each)
{
	return (struct aj_srv_claim){
		.sandboxes = count,
		.memory = times(count, memory_each),
		.disk = times(count, disk_each),
	};
}
