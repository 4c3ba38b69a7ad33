/* The output cap (src/supervisor/output.c): stdout and stderr share one budget; what passes,
 * what is counted and when "truncated" is set. And the result record built from it
 * (src/supervisor/report.c). */
#include <jansson.h>
#include <signal.h>
#include <string.h>

#include "supervisor/output.h"
#include "supervisor/run.h"
#include "unit.h"

static void no_cap(void)
{
	struct aj_output o = {.cap = 0};

	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, 1000) == 1000, "without a cap all bytes pass");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDERR, 1u << 30) == 1u << 30,
	      "without a cap even 1 GiB passes");
	CHECK(o.received[0] == 1000 && o.received[1] == 1u << 30 && o.passed == 1000 + (1u << 30),
	      "bytes are counted per stream and in total");
	CHECK(!o.truncated, "nothing is truncated without a cap");
}

static void shared_budget(void)
{
	struct aj_output o = {.cap = 10};

	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, 4) == 4, "4 of 10: all pass");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDERR, 4) == 4, "stderr draws on the same budget");
	CHECK(!o.truncated, "not truncated while within the cap");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, 4) == 2, "only the 2 remaining bytes pass");
	CHECK(o.truncated, "truncated once bytes are held back");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDERR, 5) == 0, "nothing passes once the cap is used");
	CHECK(o.received[AJ_STREAM_STDOUT] == 8 && o.received[AJ_STREAM_STDERR] == 9,
	      "held-back bytes are still counted as received");
	CHECK(o.passed == 10, "exactly the cap passed");
}

static void exact_fill(void)
{
	struct aj_output o = {.cap = 10};

	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, 10) == 10 && !o.truncated,
	      "filling the cap exactly does not truncate");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, 0) == 0 && !o.truncated,
	      "an empty read at the cap does not truncate");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDERR, 1) == 0 && o.truncated,
	      "one byte past the cap truncates");
}

static void large(void)
{
	struct aj_output o = {.cap = 5ULL << 30};

	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, (size_t)3 << 30) == (size_t)3 << 30,
	      "3 GiB of a 5 GiB cap pass");
	CHECK(aj_output_admit(&o, AJ_STREAM_STDOUT, (size_t)3 << 30) == (size_t)2 << 30,
	      "past 4 GiB the arithmetic stays 64-bit");
	CHECK(o.passed == 5ULL << 30 && o.received[0] == 6ULL << 30 && o.truncated,
	      "totals beyond 32 bits are exact");
}

static void report(void)
{
	struct aj_run_result res;
	json_t *r, *v;

	memset(&res, 0, sizeof res);
	res.exit_code = 3;
	res.have_status = true;
	res.status = 3 << 8; /* exited 3 */
	res.wall_us = 1500;
	res.cpu_us = 250;
	res.out = (struct aj_output){.cap = 10, .received = {12, 3}, .passed = 10, .truncated = true};
	r = aj_run_report(NULL, &res);
	CHECK(json_integer_value(json_object_get(r, "version")) == 1, "report version 1");
	CHECK(json_integer_value(json_object_get(r, "exit_code")) == 3, "exit_code");
	v = json_object_get(r, "status");
	CHECK_STR(json_string_value(json_object_get(v, "kind")), "exited", "status kind exited");
	CHECK(json_integer_value(json_object_get(v, "code")) == 3, "status code 3");
	CHECK(json_real_value(json_object_get(r, "wall_ms")) == 1.5 &&
		      json_real_value(json_object_get(r, "cpu_ms")) == 0.25,
	      "wall_ms and cpu_ms in milliseconds");
	CHECK(json_is_null(json_object_get(r, "peak_memory_bytes")),
	      "peak memory is null when unknown");
	v = json_object_get(r, "output");
	CHECK(json_integer_value(json_object_get(v, "stdout_bytes")) == 12 &&
		      json_integer_value(json_object_get(v, "stderr_bytes")) == 3 &&
		      json_integer_value(json_object_get(v, "passed_bytes")) == 10 &&
		      json_is_true(json_object_get(v, "truncated")),
	      "output counts and truncation");
	CHECK(json_is_null(json_object_get(r, "error")) && json_is_null(json_object_get(r, "plan")) &&
		      json_is_null(json_object_get(r, "sandbox")),
	      "no error; no plan and no sandbox id without a plan");
	json_decref(r);

	memset(&res, 0, sizeof res);
	res.have_status = true;
	res.status = SIGKILL; /* killed by SIGKILL */
	res.exit_code = 128 + SIGKILL;
	res.hits = AJ_HIT_MEMORY | AJ_HIT_TIMEOUT;
	res.decided_by = "timeout";
	res.have_peak = true;
	res.peak_memory = 1 << 20;
	r = aj_run_report(NULL, &res);
	v = json_object_get(r, "status");
	CHECK_STR(json_string_value(json_object_get(v, "kind")), "signaled", "status kind signaled");
	CHECK(json_integer_value(json_object_get(v, "signal")) == SIGKILL, "the signal number");
	CHECK_STR(json_string_value(json_object_get(v, "signal_name")), "KILL", "the signal name");
	CHECK_STR(json_string_value(json_object_get(r, "limit_hit")), "timeout",
		  "limit_hit names the deciding limit");
	v = json_object_get(r, "limits_hit");
	CHECK(json_array_size(v) == 2 &&
		      strcmp(json_string_value(json_array_get(v, 0)), "timeout") == 0 &&
		      strcmp(json_string_value(json_array_get(v, 1)), "memory") == 0,
	      "limits_hit lists every limit hit");
	CHECK(json_integer_value(json_object_get(r, "peak_memory_bytes")) == 1 << 20,
	      "peak memory in bytes");
	json_decref(r);

	memset(&res, 0, sizeof res);
	res.failed = true;
	res.exit_code = AJ_EXIT_ERROR;
	aj_err_set(&res.err, AJ_LAYER_CGROUP, 13, "create cgroup \"/x\"");
	aj_err_hint(&res.err, "pass --cgroup-parent");
	r = aj_run_report(NULL, &res);
	v = json_object_get(r, "error");
	CHECK_STR(json_string_value(json_object_get(v, "layer")), "cgroup", "error layer");
	CHECK_STR(json_string_value(json_object_get(v, "message")),
		  "create cgroup \"/x\": Permission denied", "error message with the errno text");
	CHECK_STR(json_string_value(json_object_get(v, "hint")), "pass --cgroup-parent",
		  "error hint");
	CHECK(json_is_null(json_object_get(r, "status")), "no status when the command never ran");
	json_decref(r);
}

int main(void)
{
	no_cap();
	shared_budget();
	exact_fill();
	large();
	report();
	UNIT_EXIT();
}
