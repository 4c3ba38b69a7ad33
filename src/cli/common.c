#include "cli/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/config.h"
#include "common/util.h"

void aj_cli_log(enum aj_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (level > aj_cli_level())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "agentjail: %s\n", msg);
}

int aj_cli_open(struct aj_mgr *m, struct aj_err *err)
{
	const char *src, *dir = aj_cli_state_dir(&src);

	aj_cli_log(AJ_LOG_INFO, "state directory %s (%s)", dir ? dir : "(the default)", src);
	return aj_mgr_open(m, dir, NULL, err);
}

int aj_cli_state_path(char *buf, size_t len)
{
	const char *dir = aj_cli_state_dir(NULL);

	if (dir) {
		snprintf(buf, len, "%s", dir);
		return 0;
	}
	return aj_state_dir_default(buf, len);
}

int aj_cli_fail(bool json, const struct aj_err *err)
{
	/* From the class only: errnum alone also comes from failed file operations. */
	int code = err->cls == AJ_ERRC_NOT_FOUND     ? AJ_EXIT_NOTFOUND_OBJ
		 : err->cls == AJ_ERRC_WRONG_STATE ? AJ_EXIT_STATE
		 : err->cls == AJ_ERRC_EXISTS	   ? AJ_EXIT_EXISTS
						   : 125;
	char msg[sizeof err->msg + 128];
	struct aj_err shown = *err;

	/* "no sandbox \"x\"" says it all; an errno text after it would only confuse. */
	if (shown.cls != AJ_ERRC_NONE)
		shown.errnum = 0;
	err = &shown;
	if (json) {
		aj_err_format(err, msg, sizeof msg);
		aj_cli_print_json(json_pack("{s:{s:s, s:s, s:s?, s:i}}", "error", "layer",
					    aj_layer_name(err->layer), "message", msg, "hint",
					    err->hint[0] ? err->hint : NULL, "exit_code", code));
	} else {
		aj_err_print(err, stderr);
	}
	return code;
}

void aj_cli_print_json(json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(j);
}

static json_t *time_json(int64_t ms)
{
	char buf[40];

	if (!ms)
		return json_null();
	aj_format_time_ms((uint64_t)ms, buf, sizeof buf);
	return json_string(buf);
}

json_t *aj_cli_sandbox_json(const struct aj_sandbox_rec *r)
{
	json_t *labels = json_object(), *layers = json_array();
	json_t *policy = json_loads(r->policy ? r->policy : "{}", 0, NULL);

	for (size_t i = 0; i < r->labels.n; i++) {
		const char *eq = strchr(r->labels.v[i], '=');
		char key[256];
		snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - r->labels.v[i]) : 255,
			 r->labels.v[i]);
		json_object_set_new(labels, key, json_string(eq ? eq + 1 : ""));
	}
	for (size_t i = 0; i < r->layers.n; i++)
		json_array_append_new(layers, json_string(r->layers.v[i]));
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:s?, s:{s:I, s:s, s:I, "
		"s:I}, s:o, s:s?, s:s?, s:o}",
		"id", r->id, "name", r->name, "owner", r->owner, "state",
		aj_sandbox_state_name(r->state), "generation",
		(json_int_t)r->generation, "created", time_json(r->created_ms), "started",
		time_json(r->started_ms), "stopped", time_json(r->stopped_ms), "last_active",
		time_json(r->last_active_ms), "labels", labels, "layers", layers, "base_snapshot",
		r->base_snapshot[0] ? r->base_snapshot : NULL, "ttl", "idle_timeout_ms",
		(json_int_t)r->idle_timeout_ms, "idle_action", r->idle_action, "max_lifetime_ms",
		(json_int_t)r->max_lifetime_ms, "retention_ms", (json_int_t)r->retention_ms,
		"supervisor_pid", r->supervisor_pid ? json_integer(r->supervisor_pid) : json_null(),
		"socket", r->socket[0] ? r->socket : NULL, "error", r->error[0] ? r->error : NULL,
		"policy", policy ? policy : json_null());
}
