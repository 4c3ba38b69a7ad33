/* The result record of a run (--report FILE): what happened, which limit decided it, and the
 * plan that was enforced, layer by layer. Documented in docs/cli.md. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "supervisor/run.h"

static json_t *status_json(const struct aj_run_result *res)
{
	if (!res->have_status)
		return json_null();
	if (WIFEXITED(res->status))
		return json_pack("{s:s, s:i}", "kind", "exited", "code", WEXITSTATUS(res->status));
	return json_pack("{s:s, s:i, s:s}", "kind", "signaled", "signal", WTERMSIG(res->status),
			 "signal_name", sigabbrev_np(WTERMSIG(res->status))
						? sigabbrev_np(WTERMSIG(res->status))
						: "?");
}

static json_t *hits_json(unsigned hits)
{
	json_t *a = json_array();
	for (unsigned bit = 1; bit <= AJ_HIT_DISK; bit <<= 1)
		if (hits & bit)
			json_array_append_new(a, json_string(aj_hit_name(bit)));
	return a;
}

static json_t *output_json(const struct aj_run_result *res)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:b}", "stdout_bytes",
			 (json_int_t)res->out.received[AJ_STREAM_STDOUT], "stderr_bytes",
			 (json_int_t)res->out.received[AJ_STREAM_STDERR], "passed_bytes",
			 (json_int_t)res->out.passed, "undelivered_bytes",
			 (json_int_t)res->out.undelivered, "truncated", res->out.truncated);
}

static json_t *error_json(const struct aj_run_result *res)
{
	char msg[sizeof res->err.msg + 128];

	if (!res->failed)
		return json_null();
	aj_err_format(&res->err, msg, sizeof msg);
	return json_pack("{s:s, s:s, s:s?}", "layer", aj_layer_name(res->err.layer), "message",
			 msg, "hint", res->err.hint[0] ? res->err.hint : NULL);
}

/* network.publish as bound: the host side of each port (an ephemeral one chosen). */
static json_t *ports_json(const struct aj_run_result *res)
{
	json_t *a = json_array();

	for (size_t i = 0; i < res->n_ports; i++)
		json_array_append_new(a, json_pack("{s:s, s:i, s:i}", "host_ip", res->ports[i].host_ip,
						   "host_port", res->ports[i].host_port, "port",
						   res->ports[i].port));
	return a;
}

json_t *aj_run_report(const struct aj_plan *plan, const struct aj_run_result *res)
{
	json_t *r = json_object();

	json_object_set_new(r, "version", json_integer(1));
	json_object_set_new(r, "sandbox", plan ? json_string(plan->id) : json_null());
	json_object_set_new(r, "exit_code", json_integer(res->exit_code));
	json_object_set_new(r, "status", status_json(res));
	json_object_set_new(r, "error", error_json(res));
	json_object_set_new(r, "exec_error",
			    res->exec_errno ? json_pack("{s:s, s:s}", "stage", res->exec_stage,
							"message", strerror(res->exec_errno))
					    : json_null());
	json_object_set_new(r, "limit_hit",
			    res->decided_by ? json_string(res->decided_by) : json_null());
	json_object_set_new(r, "limits_hit", hits_json(res->hits));
	json_object_set_new(r, "wall_ms", json_real((double)res->wall_us / 1000.0));
	json_object_set_new(r, "cpu_ms", json_real((double)res->cpu_us / 1000.0));
	json_object_set_new(r, "peak_memory_bytes",
			    res->have_peak ? json_integer((json_int_t)res->peak_memory) : json_null());
	json_object_set_new(r, "disk",
			    res->have_disk ? json_pack("{s:I, s:I}", "used_bytes",
						       (json_int_t)res->disk_bytes, "limit_bytes",
						       (json_int_t)res->disk_limit)
					   : json_null());
	json_object_set_new(r, "output", output_json(res));
	json_object_set_new(r, "changes",
			    res->changes.id
				    ? json_pack("{s:s, s:s, s:i, s:i, s:i}", "id", res->changes.id,
						"action", res->changes.action ? res->changes.action : "",
						"added", res->changes.added, "modified",
						res->changes.modified, "deleted", res->changes.deleted)
				    : json_null());
	json_object_set_new(r, "egress",
			    res->have_egress ? aj_egress_stats_json(&res->egress) : json_null());
	json_object_set_new(r, "ports", ports_json(res));
	json_object_set_new(r, "plan", plan ? aj_plan_to_json(plan) : json_null());
	return r;
}
