/* Per-owner quotas of token owners (--max-sandboxes, --max-memory): the number of the
 * owner's sandboxes and the sum of their policies' memory limits, whatever their state. The
 * local owner (unix socket, like the CLI) has none.
 *
 * The check and the creation are not one transaction, so creations in progress are counted as
 * reservations under one lock: two concurrent requests cannot both take the last slot. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "server/internal.h"

struct reservation {
	char owner[AJ_SRV_OWNER_MAX];
	unsigned count;
	uint64_t memory;
	struct reservation *next;
};

struct aj_srv_quota {
	pthread_mutex_t mu;
	unsigned max_sandboxes;
	uint64_t max_memory;
	struct reservation *list;
};

struct aj_srv_quota *aj_srv_quota_new(unsigned max_sandboxes, uint64_t max_memory)
{
	struct aj_srv_quota *q = aj_xcalloc(1, sizeof *q);

	pthread_mutex_init(&q->mu, NULL);
	q->max_sandboxes = max_sandboxes;
	q->max_memory = max_memory;
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

static bool applies(const struct aj_srv_req *r)
{
	const struct aj_srv_quota *q = r->srv->quota;

	return r->remote && q && (q->max_sandboxes || q->max_memory);
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

/* What the owner holds now: its sandboxes in the store plus creations in progress. */
static int holdings(struct aj_srv_quota *q, struct aj_mgr *m, const char *owner, unsigned *n,
		    uint64_t *mem, struct aj_err *err)
{
	struct aj_sandbox_rec *v = NULL;
	struct reservation *e = find(q, owner, false);
	size_t cnt = 0;

	if (aj_store_sandbox_list(m->store, owner, NULL, &v, &cnt, err) < 0)
		return -1;
	*n = (unsigned)cnt + (e ? e->count : 0);
	*mem = e ? e->memory : 0;
	for (size_t i = 0; i < cnt; i++)
		*mem += aj_srv_policy_memory(v[i].policy);
	aj_sandbox_recs_free(v, cnt);
	return 0;
}

static int over(struct aj_srv_req *r, unsigned n, uint64_t mem, unsigned count,
		uint64_t need)
{
	struct aj_srv_quota *q = r->srv->quota;
	char a[32], b[32], c[32];

	if (q->max_sandboxes && n + count > q->max_sandboxes)
		return aj_srv_fail(r, 429, "quota_exceeded", NULL,
				   "sandbox quota: owner \"%s\" has %u of %u sandboxes; %u more do "
				   "not fit",
				   r->job.owner, n, q->max_sandboxes, count);
	if (q->max_memory && mem + need > q->max_memory) {
		aj_format_size(mem, a, sizeof a);
		aj_format_size(q->max_memory, b, sizeof b);
		aj_format_size(need, c, sizeof c);
		return aj_srv_fail(r, 429, "quota_exceeded", "policy.limits.memory",
				   "memory quota: owner \"%s\" has %s of %s in memory limits; %s more "
				   "do not fit",
				   r->job.owner, a, b, c);
	}
	return 0;
}

int aj_srv_quota_reserve(struct aj_srv_req *r, struct aj_mgr *m, unsigned count,
			 uint64_t memory_each)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct reservation *e;
	struct aj_err err;
	uint64_t need = (uint64_t)count * memory_each;
	unsigned n = 0;
	uint64_t mem = 0;
	int rc;

	if (!applies(r))
		return 0;
	if (q->max_memory && memory_each == 0)
		return aj_srv_fail(r, 429, "quota_exceeded", "policy.limits.memory",
				   "memory quota: a sandbox of owner \"%s\" needs a memory limit "
				   "(policy.limits.memory)",
				   r->job.owner);
	if (q->max_memory && (need / memory_each != count || need > q->max_memory))
		return over(r, 0, 0, count, need / memory_each != count ? UINT64_MAX : need);
	pthread_mutex_lock(&q->mu);
	rc = holdings(q, m, r->job.owner, &n, &mem, &err);
	if (rc < 0)
		aj_srv_fail_err(r, &err, NULL);
	else if ((rc = over(r, n, mem, count, need)) == 0) {
		e = find(q, r->job.owner, true);
		e->count += count;
		e->memory += need;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

int aj_srv_quota_reserve_memory(struct aj_srv_req *r, struct aj_mgr *m, uint64_t extra)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct reservation *e;
	struct aj_err err;
	unsigned n = 0;
	uint64_t mem = 0;
	int rc;

	if (!applies(r) || !q->max_memory || !extra)
		return 0;
	pthread_mutex_lock(&q->mu);
	rc = holdings(q, m, r->job.owner, &n, &mem, &err);
	if (rc < 0)
		aj_srv_fail_err(r, &err, NULL);
	else if (mem + extra > q->max_memory || mem + extra < mem)
		rc = over(r, 0, mem, 0, extra);
	else {
		e = find(q, r->job.owner, true);
		e->memory += extra;
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void aj_srv_quota_release_memory(struct aj_srv_req *r, uint64_t extra)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct reservation *e;

	if (!applies(r) || !q->max_memory || !extra)
		return;
	pthread_mutex_lock(&q->mu);
	e = find(q, r->job.owner, false);
	if (e)
		e->memory -= extra;
	pthread_mutex_unlock(&q->mu);
}

void aj_srv_quota_release(struct aj_srv_req *r, unsigned count, uint64_t memory_each)
{
	struct aj_srv_quota *q = r->srv->quota;
	struct reservation *e;

	if (!applies(r))
		return;
	pthread_mutex_lock(&q->mu);
	e = find(q, r->job.owner, false);
	if (e) {
		e->count -= count;
		e->memory -= (uint64_t)count * memory_each;
	}
	pthread_mutex_unlock(&q->mu);
}
