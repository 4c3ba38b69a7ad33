/* The runc-compatible command line: global flags, error logging, verb dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "common/version.h"
#include "oci/oci.h"

struct verb {
	const char *name;
	int (*fn)(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
};

static const struct verb verbs[] = {
	{"create", aj_oci_create_verb}, {"start", aj_oci_start_verb},
	{"state", aj_oci_state_verb},   {"kill", aj_oci_kill_verb},
	{"delete", aj_oci_delete_verb}, {"list", aj_oci_list_verb},
	{"exec", aj_oci_exec_verb},     {"ps", aj_oci_ps_verb},
	{"pause", aj_oci_pause_verb},   {"resume", aj_oci_resume_verb},
	{"events", aj_oci_events_verb}, {"features", aj_oci_features_verb},
	{"report", aj_oci_report_verb},
};

static void now_rfc3339(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09ldZ", s, ts.tv_nsec);
}

static void log_line(const struct aj_oci_globals *g, const char *level, const char *msg)
{
	char t[64];
	FILE *f;

	if (!g->log || !(f = fopen(g->log, "ae")))
		return;
	now_rfc3339(t, sizeof t);
	if (g->log_json) {
		_cleanup_json_ json_t *j =
			json_pack("{s:s, s:s, s:s}", "level", level, "msg", msg, "time", t);
		_cleanup_free_ char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		if (s)
			fprintf(f, "%s\n", s);
	} else {
		fprintf(f, "time=\"%s\" level=%s msg=\"%s\"\n", t, level, msg);
	}
	fclose(f);
}

void aj_oci_log(const struct aj_oci_globals *g, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_line(g, level, msg);
	if (g->debug)
		fprintf(stderr, "agentjail: %s: %s\n", level, msg);
}

static const struct aj_oci_opt *find_opt(const struct aj_oci_opt *opts, const char *a,
					 const char **inline_val)
{
	const char *name = a + 1 + (a[1] == '-');
	size_t n = strcspn(name, "=");

	*inline_val = name[n] == '=' ? name + n + 1 : NULL;
	for (const struct aj_oci_opt *o = opts; o->name; o++) {
		if (a[1] != '-' && n == 1 && o->alias == name[0])
			return o;
		if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
			return o;
	}
	return NULL;
}

int aj_oci_parse_opts(int argc, char **argv, const struct aj_oci_opt *opts, int *first,
		      struct aj_err *err)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *val;
		const struct aj_oci_opt *o;

		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		o = find_opt(opts, argv[i], &val);
		if (!o)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: unknown option %s",
					  argv[0], argv[i]);
		if (!o->has_arg) {
			if (o->flag)
				*o->flag = !val || strcmp(val, "false") != 0;
			continue;
		}
		if (!val && i + 1 >= argc)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: %s needs a value",
					  argv[0], argv[i]);
		if (o->value)
			*o->value = val ? val : argv[++i];
		else if (!val)
			i++;
	}
	*first = i;
	return 0;
}

static int version(void)
{
	/* go-runc reads three lines: "<name> version X", "commit: Y", "spec: Z". */
	printf("agentjail version %s\ncommit: agentjail-%s\nspec: 1.1.0\n", AJ_VERSION,
	       AJ_VERSION);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: agentjail [--root DIR] [--log FILE] [--log-format text|json] VERB ...\n"
		   "       agentjail oci [global flags] VERB ...\n\nverbs (runc's):");
	for (size_t i = 0; i < AJ_ARRAY_SIZE(verbs); i++)
		fprintf(f, " %s", verbs[i].name);
	fprintf(f, "\n");
}

static int fail(const struct aj_oci_globals *g, const struct aj_err *err)
{
	char msg[sizeof err->msg + sizeof err->hint + 160];

	aj_err_format(err, msg, sizeof msg);
	log_line(g, "error", msg);
	aj_err_print(err, stderr);
	return 1;
}

static int run_verb(const struct aj_oci_globals *g, int argc, char **argv)
{
	struct aj_err err;
	int r;

	aj_err_clear(&err);
	for (size_t i = 0; i < AJ_ARRAY_SIZE(verbs); i++) {
		if (strcmp(argv[0], verbs[i].name) != 0)
			continue;
		r = verbs[i].fn(g, argc, argv, &err);
		return r < 0 ? fail(g, &err) : r;
	}
	aj_err_set(&err, AJ_LAYER_USAGE, EINVAL, "unknown command \"%s\"", argv[0]);
	usage(stderr);
	return fail(g, &err);
}

int aj_cmd_oci(int argc, char **argv)
{
	struct aj_oci_globals g = {.root = AJ_OCI_DEFAULT_ROOT};
	const char *fmt = NULL, *ignored = NULL;
	bool ver = false, help = false;
	const struct aj_oci_opt opts[] = {
		{"root", 0, true, &g.root, NULL},     {"log", 0, true, &g.log, NULL},
		{"log-format", 0, true, &fmt, NULL},  {"systemd-cgroup", 0, false, NULL, &g.systemd_cgroup},
		{"debug", 0, false, NULL, &g.debug},  {"rootless", 0, true, &ignored, NULL},
		{"criu", 0, true, &ignored, NULL},    {"version", 'v', false, NULL, &ver},
		{"help", 'h', false, NULL, &help},    {NULL, 0, false, NULL, NULL},
	};
	struct aj_err err;
	int first;

	aj_err_clear(&err);
	if (aj_oci_parse_opts(argc, argv, opts, &first, &err) < 0)
		return fail(&g, &err);
	g.log_json = fmt && strcmp(fmt, "json") == 0;
	if (ver)
		return version();
	if (help || first >= argc) {
		usage(help ? stdout : stderr);
		return help ? 0 : 1;
	}
	if (g.systemd_cgroup)
		aj_oci_log(&g, "warning", "--systemd-cgroup: agentjail manages cgroupfs itself; "
					  "the systemd driver is not used");
	return run_verb(&g, argc - first, argv + first);
}

bool aj_oci_invoked_as_runc(int argc, char **argv)
{
	static const char *const globals[] = {"--root", "--log", "--log-format", "--systemd-cgroup",
					      "--debug", "--rootless", "--criu"};

	if (argc < 2)
		return false;
	for (size_t i = 0; i < AJ_ARRAY_SIZE(globals); i++) {
		size_t n = strlen(globals[i]);
		if (strncmp(argv[1], globals[i], n) == 0 && (!argv[1][n] || argv[1][n] == '='))
			return true;
	}
	return strcmp(argv[1], "-v") == 0;
}
