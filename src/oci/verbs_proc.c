/* Verbs on a live container: exec, ps, pause, resume, events; and features, report. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/oci.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "common/version.h"
#include "oci/oci.h"
#include "oci/plan_oci.h"
#include "oci/seccomp.h"
#include "oci/state.h"
#include "oci/verbs.h"
#include "rules/caps.h"

/* ---- exec ------------------------------------------------------------------------------- */

struct exec_opts {
	const char *process, *console, *pidfile, *cwd, *user, *env;
	bool detach, tty, ignore_paused, no_new_privs;
};

/* runc exec's flag form: the container's process with the command (and --cwd, --user,
 * --env, --tty) replaced. */
static int flag_process(const struct exec_opts *o, const struct aj_container_process *base, int argc,
			char **argv, struct aj_container_process *p, struct aj_err *err)
{
	unsigned uid = 0, gid = 0;

	memset(p, 0, sizeof *p);
	p->uid = base->uid;
	p->gid = base->gid;
	p->terminal = o->tty;
	memcpy(p->caps, base->caps, sizeof p->caps);
	p->no_new_privs = base->no_new_privs || o->no_new_privs;
	aj_strv_copy(&p->env, &base->env);
	p->cwd = aj_xstrdup(o->cwd ? o->cwd : base->cwd);
	for (int i = 0; i < argc; i++)
		aj_strv_push(&p->args, argv[i]);
	if (o->env && !strchr(o->env, '='))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: --env \"%s\"", o->env);
	if (o->env)
		aj_strv_push(&p->env, o->env);
	if (o->user) {
		int n = sscanf(o->user, "%u:%u", &uid, &gid);
		if (n < 1 || uid > 65535 || gid > 65535)
			return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: --user \"%s\" (UID[:GID])",
					  o->user);
		p->uid = uid;
		p->gid = n == 2 ? gid : p->gid;
	}
	if (p->args.n == 0)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: no command (--process FILE or "
							       "ID COMMAND...)");
	return 0;
}

static int exec_process(const struct exec_opts *o, const struct aj_oci_cplan *c, int argc,
			char **argv, struct aj_container_process *p, struct aj_err *err)
{
	_cleanup_json_ json_t *j = NULL;

	if (!o->process)
		return flag_process(o, &c->spec.proc, argc, argv, p, err);
	if (!(j = aj_oci_load_json(o->process, err)) ||
	    aj_oci_process_parse(j, "process.json", p, NULL, err) < 0 ||
	    aj_oci_caps_check(p, "process.json", err) < 0)
		return -1;
	aj_oci_caps_cap(c, p);
	if (o->tty)
		p->terminal = true;
	if (o->no_new_privs)
		p->no_new_privs = true;
	return 0;
}

static int exec_run(const struct aj_oci_globals *g, struct exec_opts *o, const char *id,
		    int argc, char **argv, struct aj_err *err)
{
	OCI_STATE st = {0};
	OCI_CPLAN c = {0};
	OCI_PROCESS p = {0};
	OCI_CGROUP cg = {0};
	_cleanup_json_ json_t *config = NULL;
	_cleanup_close_ int console = -1;
	struct aj_container_launch l;
	char path[4200];
	pid_t pid = -1;
	int status = 0;

	if (aj_oci_state_load(&st, g->root, id, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/config.json", st.dir);
	if (!aj_oci_state_alive(&st))
		return aj_err_set(err, AJ_LAYER_PROCESS, ESRCH, "cannot exec in a stopped container");
	if (!(config = aj_oci_load_json(path, err)) ||
	    aj_oci_cplan_build(&c, st.bundle, config, id, g->systemd_cgroup, err) < 0 ||
	    exec_process(o, &c, argc, argv, &p, err) < 0 || aj_oci_load_cg(&st, &cg, err) < 0)
		return -1;
	if (aj_cgroup_oci_frozen(&cg) && !o->ignore_paused)
		return aj_err_set(err, AJ_LAYER_PROCESS, EBUSY, "cannot exec in a paused container");
	if (p.terminal != (o->console != NULL))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "a terminal needs --console-socket, "
							       "and --console-socket needs a terminal");
	if (o->console && (console = aj_oci_connect_console(o->console, err)) < 0)
		return -1;
	aj_oci_cplan_launch(&c, &l);
	l.proc = &p;
	l.cg = &cg;
	l.init_pid = st.pid;
	l.init_start = st.pid_start;
	l.detach = o->detach;
	l.console_fd = console; /* borrowed: closed here, at the end */
	if (aj_container_exec(&l, &pid, &status, err) < 0 ||
	    aj_oci_write_pidfile(o->pidfile, pid, err) < 0)
		return -1;
	return o->detach ? 0 : status;
}

int aj_oci_exec_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	struct exec_opts o = {0};
	const char *ignored = NULL;
	const struct aj_oci_opt opts[] = {
		{"process", 'p', true, &o.process, NULL},  {"console-socket", 0, true, &o.console, NULL},
		{"pid-file", 0, true, &o.pidfile, NULL},   {"detach", 'd', false, NULL, &o.detach},
		{"tty", 't', false, NULL, &o.tty},         {"cwd", 0, true, &o.cwd, NULL},
		{"user", 'u', true, &o.user, NULL},        {"env", 'e', true, &o.env, NULL},
		{"ignore-paused", 0, false, NULL, &o.ignore_paused},
		{"no-new-privs", 0, false, NULL, &o.no_new_privs}, {"cap", 'c', true, &ignored, NULL},
		{"process-label", 0, true, &ignored, NULL}, {"apparmor", 0, true, &ignored, NULL},
		{"preserve-fds", 0, true, &ignored, NULL},  {"cgroup", 0, true, &ignored, NULL},
		{NULL, 0, false, NULL, NULL},
	};
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0)
		return -1;
	if (first >= argc)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: expected a container id");
	if (o.process && argc - first > 1)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "exec: --process and a command");
	return exec_run(g, &o, argv[first], argc - first - 1, argv + first + 1, err);
}

/* ---- ps, pause, resume, events ------------------------------------------------------------ */

static int with_cg(const struct aj_oci_globals *g, int argc, char **argv,
		   const struct aj_oci_opt *opts, struct aj_oci_state *st, struct aj_cgroup_oci *cg,
		   struct aj_err *err)
{
	const char *id = NULL;
	int first;

	/* What is loaded is the caller's to free, also on failure. */
	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &id, err) < 0 ||
	    aj_oci_state_load(st, g->root, id, err) < 0 || aj_oci_load_cg(st, cg, err) < 0)
		return -1;
	return 0;
}

static void print_ps(const pid_t *pids, size_t n, bool json)
{
	if (json) {
		printf("[");
		for (size_t i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		printf("]\n");
		return;
	}
	printf("PID\tCMD\n");
	for (size_t i = 0; i < n; i++) {
		char path[64];
		_cleanup_free_ char *comm = NULL;
		snprintf(path, sizeof path, "/proc/%d/comm", (int)pids[i]);
		comm = aj_read_file(path, 256, NULL);
		if (comm)
			comm[strcspn(comm, "\n")] = '\0';
		printf("%d\t%s\n", (int)pids[i], comm ? comm : "?");
	}
}

int aj_oci_ps_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	const char *format = "table";
	const struct aj_oci_opt opts[] = {{"format", 'f', true, &format, NULL},
					  {NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	OCI_CGROUP cg = {0};
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;

	if (with_cg(g, argc, argv, opts, &st, &cg, err) < 0 ||
	    aj_cgroup_oci_pids(&cg, &pids, &n, err) < 0)
		return -1;
	print_ps(pids, n, strcmp(format, "json") == 0);
	return 0;
}

static int set_frozen(const struct aj_oci_globals *g, int argc, char **argv, bool frozen,
		      struct aj_err *err)
{
	const struct aj_oci_opt opts[] = {{NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	OCI_CGROUP cg = {0};

	if (with_cg(g, argc, argv, opts, &st, &cg, err) < 0)
		return -1;
	if (!aj_oci_state_alive(&st))
		return aj_err_set(err, AJ_LAYER_PROCESS, ESRCH, "container not running");
	return aj_cgroup_oci_freeze(&cg, frozen, err);
}

int aj_oci_pause_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	return set_frozen(g, argc, argv, true, err);
}

int aj_oci_resume_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	return set_frozen(g, argc, argv, false, err);
}

/* runc's stats event, with what the cgroup tells. */
static json_t *stats_event(const struct aj_oci_state *st, struct aj_cgroup_oci *cg)
{
	struct aj_cgroup *c = &cg->cg;
	uint64_t mem = 0, lim = 0, cpu_ns = 0, pids = 0;
	bool v2 = cg->env.mode == AJ_CGROUP_V2;

	if (c->used[v2 ? 0 : AJ_CG_MEMORY]) {
		aj_cgroup_read_u64(c->path[AJ_CG_MEMORY], v2 ? "memory.current" : "memory.usage_in_bytes",
				   &mem);
		aj_cgroup_read_u64(c->path[AJ_CG_MEMORY], v2 ? "memory.max" : "memory.limit_in_bytes",
				   &lim);
	}
	if (v2 && aj_cgroup_read_keyed(c->path[0], "cpu.stat", "usage_usec", &cpu_ns) == 0)
		cpu_ns *= 1000;
	else if (!v2 && c->used[AJ_CG_CPUACCT])
		aj_cgroup_read_u64(c->path[AJ_CG_CPUACCT], "cpuacct.usage", &cpu_ns);
	if (c->used[v2 ? 0 : AJ_CG_PIDS])
		aj_cgroup_read_u64(c->path[AJ_CG_PIDS], "pids.current", &pids);
	return json_pack("{s:s, s:s, s:{s:{s:{s:I}}, s:{s:{s:I, s:I}}, s:{s:I}}}", "type", "stats",
			 "id", st->id, "data", "cpu", "usage", "total", (json_int_t)cpu_ns, "memory",
			 "usage", "usage", (json_int_t)mem, "limit", (json_int_t)lim, "pids",
			 "current", (json_int_t)pids);
}

/* runc's --interval is a Go duration ("5s", "1m"); a bare number is taken as seconds, as the
 * duration parser does anyway. */
static int interval_secs(const char *v, unsigned *secs, struct aj_err *err)
{
	uint64_t ms;

	if (aj_policy_parse_duration("--interval", v, &ms, err) < 0)
		return -1;
	*secs = ms > 86400000 ? 86401 : (unsigned)((ms + 999) / 1000);
	if (*secs == 0 || *secs > 86400)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "--interval: expected 1s to 24h");
	return 0;
}

int aj_oci_events_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	bool stats = false;
	const char *interval = "5";
	const struct aj_oci_opt opts[] = {{"stats", 0, false, NULL, &stats},
					  {"interval", 0, true, &interval, NULL},
					  {NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	OCI_CGROUP cg = {0};
	unsigned secs;

	if (with_cg(g, argc, argv, opts, &st, &cg, err) < 0 || interval_secs(interval, &secs, err) < 0)
		return -1;
	do {
		_cleanup_json_ json_t *e = stats_event(&st, &cg);
		_cleanup_free_ char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;
		if (s)
			printf("%s\n", s);
		fflush(stdout);
	} while (!stats && aj_oci_state_alive(&st) && sleep(secs) == 0);
	return 0;
}

/* ---- features, report ------------------------------------------------------------------- */

static json_t *names_json(const char *const *v)
{
	json_t *a = json_array();

	for (; *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

int aj_oci_features_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	static const char *const archs[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32",
					    "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", NULL};
	char why[160], abi[16];
	_cleanup_json_ json_t *f = NULL;
	_cleanup_free_ char *s = NULL;

	(void)g;
	(void)argc;
	(void)argv;
	snprintf(abi, sizeof abi, "%d", aj_features_landlock_abi(why, sizeof why));
	const char *caps[AJ_CAP_LAST + 2];

	for (int c = 0; c <= AJ_CAP_LAST; c++)
		caps[c] = aj_cap_name(c);
	caps[AJ_CAP_LAST + 1] = NULL;
	f = json_pack("{s:s, s:s, s:[], s:o, s:{s:o, s:o, s:{s:b, s:b, s:b, s:b}, "
		      "s:{s:b, s:o, s:o, s:o}, s:{s:b}, s:{s:b}, s:{s:b}}, s:{s:s, s:s, s:s, s:s, s:s}}",
		      "ociVersionMin", "1.0.0", "ociVersionMax", "1.1.0", "hooks", "mountOptions",
		      names_json(aj_oci_mount_options), "linux", "namespaces",
		      names_json(aj_oci_ns_names), "capabilities", names_json(caps), "cgroup", "v1", 1, "v2", 1,
		      "systemd", 0, "systemdUser", 0, "seccomp", "enabled", 1, "actions",
		      names_json(aj_oci_seccomp_actions), "operators",
		      names_json(aj_oci_seccomp_operators), "archs", names_json(archs), "apparmor",
		      "enabled", 0, "selinux", "enabled", 0, "intelRdt", "enabled", 0,
		      "annotations", "io.agentjail.version", AJ_VERSION, "io.agentjail.landlock.abi",
		      abi, "io.agentjail.landlock", "on (\"off\" disables it)",
		      "io.agentjail.seccomp", "agentjail's deny list + the bundle's (\"bundle\": "
					      "the bundle's only)",
		      "io.agentjail.capabilities", "the bundle's (a list, or \"none\", caps them)");
	s = f ? json_dumps(f, JSON_INDENT(2)) : NULL;
	if (!s)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "features");
	printf("%s\n", s);
	return 0;
}

int aj_oci_report_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err)
{
	const struct aj_oci_opt opts[] = {{NULL, 0, false, NULL, NULL}};
	OCI_STATE st = {0};
	_cleanup_free_ char *text = NULL;
	char path[4200];
	const char *id = NULL;
	int first;

	if (aj_oci_parse_opts(argc, argv, opts, &first, err) < 0 ||
	    aj_oci_one_operand(argc, argv, first, &id, err) < 0 ||
	    aj_oci_state_load(&st, g->root, id, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/report.json", st.dir);
	text = aj_read_file(path, 1 << 22, NULL);
	if (!text)
		return aj_err_sys(err, AJ_LAYER_STATE, "read \"%s\"", path);
	fputs(text, stdout);
	return 0;
}
