#include "supervisor/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "egress/egress.h"
#include "storage/quota.h"

void aj_metrics_sample(struct aj_metrics *m, struct aj_cgroup *cg, const struct aj_egress *eg,
		       const char *disk_dir, uint64_t memory_limit, uint64_t pids_limit, bool keep,
		       struct aj_metric *out)
{
	struct aj_metric s = {.ms = (int64_t)aj_now_realtime_ms(), .mono_us = aj_now_monotonic_us(),
			      .memory_limit = cg ? memory_limit : 0, .pids_limit = cg ? pids_limit : 0};
	struct aj_cgroup_stats st;
	struct aj_egress_stats es;
	struct aj_quota_use du;

	if (cg) {
		cg->env->ops->sample(cg, &m->cg_files, &st);
		s.have_cpu = st.have_cpu;
		s.cpu_usec = st.cpu_usec;
		s.have_memory = st.have_memory_current;
		s.memory = st.memory_current;
		s.have_pids = st.have_pids_current;
		s.pids = st.pids_current;
	}
	aj_egress_get_stats(eg, &es);
	s.net_up = es.bytes_up;
	s.net_down = es.bytes_down;
	s.net_connections = es.connections;
	if (disk_dir && aj_quota_usage(disk_dir, false, &du) == 0) {
		s.have_disk = true;
		s.disk = du.bytes;
		s.disk_limit = du.limit;
	}
	/* The share since the newest kept sample, over at least half a second; an on-demand
	 * sample right after one takes that one's share. */
	if (m->have_last && m->last.have_cpu && s.have_cpu && s.cpu_usec >= m->last.cpu_usec &&
	    s.mono_us >= m->last.mono_us + 500000) {
		s.cpu_percent = (double)(s.cpu_usec - m->last.cpu_usec) /
				(double)(s.mono_us - m->last.mono_us) * 100.0;
		s.have_cpu_percent = true;
	} else if (!keep && m->have_last && m->last.have_cpu_percent) {
		s.cpu_percent = m->last.cpu_percent;
		s.have_cpu_percent = true;
	}
	if (keep) {
		if (!m->v)
			m->v = aj_xcalloc(AJ_METRICS_RING, sizeof *m->v);
		m->v[m->next] = s;
		m->next = (m->next + 1) % AJ_METRICS_RING;
		if (m->n < AJ_METRICS_RING)
			m->n++;
		m->last = s;
		m->have_last = true;
	}
	if (out)
		*out = s;
}

bool aj_metric_same(const struct aj_metric *a, const struct aj_metric *b)
{
	return a->cpu_usec <= b->cpu_usec + 1000 && b->cpu_usec <= a->cpu_usec + 1000 &&
	       a->memory == b->memory && a->pids == b->pids && a->net_up == b->net_up &&
	       a->net_down == b->net_down && a->net_connections == b->net_connections &&
	       a->disk == b->disk;
}

json_t *aj_metric_json(const struct aj_metric *s)
{
	char ts[40];
	json_t *j;

	aj_format_time_ms((uint64_t)s->ms, ts, sizeof ts);
	j = json_pack("{s:s, s:I, s:I, s:I, s:I}", "time", ts, "net_up",
		      (json_int_t)s->net_up, "net_down", (json_int_t)s->net_down,
		      "net_connections", (json_int_t)s->net_connections, "memory_limit",
		      (json_int_t)s->memory_limit);
	json_object_set_new(j, "cpu_usec", s->have_cpu ? json_integer((json_int_t)s->cpu_usec)
						       : json_null());
	json_object_set_new(j, "cpu_percent", s->have_cpu_percent ? json_real(s->cpu_percent)
								  : json_null());
	json_object_set_new(j, "memory", s->have_memory ? json_integer((json_int_t)s->memory)
						       : json_null());
	json_object_set_new(j, "pids", s->have_pids ? json_integer((json_int_t)s->pids)
						    : json_null());
	json_object_set_new(j, "pids_limit", json_integer((json_int_t)s->pids_limit));
	json_object_set_new(j, "disk", s->have_disk ? json_integer((json_int_t)s->disk)
						    : json_null());
	json_object_set_new(j, "disk_limit", json_integer((json_int_t)s->disk_limit));
	return j;
}

json_t *aj_metrics_json(const struct aj_metrics *m, int64_t start_ms, int64_t end_ms)
{
	json_t *a = json_array();
	size_t first = (m->next + AJ_METRICS_RING - m->n) % AJ_METRICS_RING;

	for (size_t i = 0; m->v && i < m->n; i++) {
		const struct aj_metric *s = &m->v[(first + i) % AJ_METRICS_RING];
		if ((!start_ms || s->ms >= start_ms) && (!end_ms || s->ms <= end_ms))
			json_array_append_new(a, aj_metric_json(s));
	}
	return a;
}

void aj_metrics_free(struct aj_metrics *m)
{
	aj_cgroup_sampler_close(&m->cg_files);
	free(m->v);
	memset(m, 0, sizeof *m);
}
