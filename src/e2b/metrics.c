/* sandbox.getMetrics() (GET /sandboxes/{id}/metrics?start=&end=, unix seconds): the samples
 * the sandbox's supervisor keeps (supervisor/metrics.h) as E2B's SandboxMetric. cpuCount is the
 * sandbox's CPU limit rounded up (the host's CPUs without one) and cpuUsedPct its share of
 * them; memTotal the memory limit (the host's memory without one). Disk figures are not
 * measured: 0. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "e2b/internal.h"
#include "manager/manager.h"
#include "policy/policy.h"

static void metrics_work(struct aj_srv_req *r, struct aj_mgr *m)
{
	const struct aj_sandbox_rec *rec = &e2b_of(r)->rec;
	_cleanup_policy_ struct aj_policy pol;
	_cleanup_json_ json_t *reply = NULL;
	int64_t start = 0, end = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t cpus;
	struct aj_err err;
	json_t *out, *s;
	size_t i;

	aj_policy_init(&pol);
	pol.managed = true;
	if (aj_srv_query_int(r, "start", 0, INT64_MAX / 1000 - 1, &start) < 0 ||
	    aj_srv_query_int(r, "end", 0, INT64_MAX / 1000 - 1, &end) < 0)
		return;
	if (e2b_find_live(r, m, false) < 0)
		return;
	aj_policy_load_text(&pol, rec->policy, &err);
	cpus = pol.limits.cpu_milli ? (pol.limits.cpu_milli + 999) / 1000
				    : (uint64_t)(ncpu > 0 ? ncpu : 1);
	if (aj_mgr_metrics(m, rec->id, start * 1000, end ? end * 1000 + 999 : 0, &reply, &err) < 0) {
		e2b_fail_err(r, &err);
		return;
	}
	out = json_array();
	json_array_foreach(json_object_get(reply, "samples"), i, s) {
		const char *t = json_string_value(json_object_get(s, "time"));
		json_t *mem = json_object_get(s, "memory"), *lim = json_object_get(s, "memory_limit");
		uint64_t total = json_integer_value(lim) ? (uint64_t)json_integer_value(lim)
							 : (uint64_t)pages * (uint64_t)psize;
		double pct = json_number_value(json_object_get(s, "cpu_percent")) / (double)cpus;
		struct tm tm = {0};

		/* timestampUnix from the sample's RFC 3339 time (UTC) */
		strptime(t ? t : "", "%Y-%m-%dT%H:%M:%S", &tm);
		json_array_append_new(out, json_pack("{s:s, s:I, s:I, s:f, s:I, s:I, s:i, s:I, s:I}",
						     "timestamp", t ? t : "", "timestampUnix",
						     (json_int_t)timegm(&tm), "cpuCount",
						     (json_int_t)cpus, "cpuUsedPct", pct, "memUsed",
						     (json_int_t)json_integer_value(mem), "memTotal",
						     (json_int_t)total, "memCache", 0, "diskUsed",
						     (json_int_t)json_integer_value(
							     json_object_get(s, "disk")),
						     "diskTotal",
						     (json_int_t)json_integer_value(
							     json_object_get(s, "disk_limit"))));
	}
	aj_srv_ok(r, 200, out);
}

const struct e2b_route e2b_metrics_routes[] = {
	E2B_ROUTE(EVHTTP_REQ_GET, "/sandboxes/{id}/metrics", E2B_API, NULL, metrics_work, NULL),
	E2B_ROUTES_END,
};
