/* The one-shot supervisor behind `agentjail run`: it lives as long as the command, outside the
 * sandbox, and owns the cgroup, the timeout, the output cap, the event log and the result.
 */
#ifndef AJ_SUPERVISOR_RUN_H
#define AJ_SUPERVISOR_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cgroup/cgroup.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "common/warn.h"
#include "egress/egress.h"
#include "policy/plan.h"
#include "rules/publish.h"
#include "supervisor/output.h"

enum aj_hit {
	AJ_HIT_TIMEOUT = 1u << 0,
	AJ_HIT_MEMORY = 1u << 1,
	AJ_HIT_OUTPUT = 1u << 2,
	AJ_HIT_PIDS = 1u << 3,
	AJ_HIT_CPU = 1u << 4,       /* throttled by the CPU quota */
	AJ_HIT_FILE_SIZE = 1u << 5, /* a process died of SIGXFSZ */
	AJ_HIT_DISK = 1u << 6,      /* the writable layers reached limits.disk */
};

struct aj_run_opts {
	const char *events_path;
	bool verbose;
	const struct aj_warn *warn; /* what the run has to tell as it happens; NULL: nothing */
};

struct aj_run_result {
	int exit_code;
	bool failed;        /* agentjail's own error, see err */
	struct aj_err err;
	bool started;
	bool have_status;
	int status;         /* wait status of the command */
	int exec_errno;
	char exec_stage[16];
	unsigned hits;      /* enum aj_hit */
	const char *decided_by; /* the limit that set exit_code, or NULL */
	uint64_t wall_us;
	uint64_t cpu_us;
	bool have_peak;
	uint64_t peak_memory;
	bool have_disk;      /* limits.disk: what the writable layers hold at the end */
	uint64_t disk_bytes, disk_limit;
	struct aj_output out;
	struct aj_cgroup_stats cg;
	bool have_cg;
	bool have_egress;
	struct aj_egress_stats egress; /* network.mode "proxy" */
	struct aj_publish ports[AJ_PUBLISH_MAX]; /* network.publish as bound */
	size_t n_ports;
	struct {
		const char *id; /* set for runs with --overlay */
		const char *action;
		unsigned added, modified, deleted;
	} changes;
};

/* Runs the plan's command to its end. Always fills *res (exit_code included), also on error. */
void aj_run(struct aj_plan *plan, const struct aj_run_opts *opts, struct aj_run_result *res);

/* The result record written by --report (new reference). `plan` may be NULL when the error
 * happened before a plan existed. */
json_t *aj_run_report(const struct aj_plan *plan, const struct aj_run_result *res);
const char *aj_hit_name(unsigned hit);

#endif
