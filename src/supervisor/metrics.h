/* A persistent sandbox's resource figures over time (docs/sandboxes.md "Metrics"): sampled by
 * its supervisor every AJ_METRICS_EVERY_S seconds from the sandbox's own cgroup and its egress
 * proxy, never from the host as a whole, into a ring of the last AJ_METRICS_RING samples (an
 * hour); while nothing changes and no client is attached the interval doubles up to
 * AJ_METRICS_IDLE_MAX_S, and any change or request brings it back (a sample costs less than
 * waking the supervisor for it). Read with the control socket's "metrics" operation. struct
 * aj_metrics owns its ring and the descriptors of the cgroup files it reads (a zeroed struct
 * is an empty one, of one cgroup for its life); aj_metrics_free() releases both. */
#ifndef AJ_SUPERVISOR_METRICS_H
#define AJ_SUPERVISOR_METRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cgroup.h"

#define AJ_METRICS_EVERY_S 5
#define AJ_METRICS_IDLE_MAX_S 60
#define AJ_METRICS_RING 720

struct aj_egress;

struct aj_metric {
	int64_t ms;               /* wall-clock time of the sample */
	uint64_t mono_us;         /* the monotonic clock's, for the CPU share */
	bool have_cpu, have_cpu_percent, have_memory, have_pids;
	uint64_t cpu_usec;        /* CPU time of the sandbox's tasks so far */
	double cpu_percent;       /* since the sample before (100: one CPU busy) */
	uint64_t memory;          /* bytes used now, page cache included */
	uint64_t memory_limit;    /* 0: none enforced (no limit, or no cgroup) */
	uint64_t pids, pids_limit;
	uint64_t net_up, net_down, net_connections; /* through the proxy so far */
	bool have_disk;           /* limits.disk: the writable layers' quota directory */
	uint64_t disk, disk_limit;
};

struct aj_metrics {
	struct aj_metric *v; /* AJ_METRICS_RING, allocated at the first sample */
	size_t n, next;      /* how many are kept, where the next goes */
	struct aj_metric last; /* the newest, also when taken on demand */
	bool have_last;
	struct aj_cgroup_sampler cg_files; /* the cgroup's files, open between samples */
};

/* Whether two samples show the same use: no CPU to speak of (under 1 ms), the same memory,
 * tasks and traffic. */
bool aj_metric_same(const struct aj_metric *a, const struct aj_metric *b);

/* A sample now of cg (NULL: none), eg (NULL: none) and the quota directory disk_dir (NULL:
 * none), with the limits given; into the ring when `keep`, else only compared with the newest
 * for its CPU share. */
void aj_metrics_sample(struct aj_metrics *m, struct aj_cgroup *cg, const struct aj_egress *eg,
		       const char *disk_dir, uint64_t memory_limit, uint64_t pids_limit, bool keep,
		       struct aj_metric *out);
/* The kept samples from start_ms to end_ms (0: no bound), oldest first, as JSON. */
json_t *aj_metrics_json(const struct aj_metrics *m, int64_t start_ms, int64_t end_ms);
json_t *aj_metric_json(const struct aj_metric *s);
void aj_metrics_free(struct aj_metrics *m);

#endif
