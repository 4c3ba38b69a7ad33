/* agentjail top NAME: the processes of a running persistent sandbox, as `docker top` lists a
 * container's. They are its init and init's descendants: init is PID 1 of the sandbox's pid
 * namespace and the reaper of everything in it, and every command, exec'd or spawned, is
 * started by init. The supervisor says which host pid init is ("info"); the rest comes from
 * /proc, read here, with pids and uids shown as the sandbox sees them (NSpid, the uid map). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"
#include "control/client.h"

#define MAX_PROCS 8192

struct proc {
	int pid, ppid, nspid, nsppid;
	long uid;
	char state;
	unsigned long long ticks; /* user + system */
	unsigned long long rss_pages;
	char cmd[512];
};

/* /proc/PID/stat: "pid (comm) S ppid ..."; comm may hold spaces and parentheses. */
static int read_stat(int pid, struct proc *p)
{
	char path[64], buf[1024], *close_paren;
	unsigned long long utime, stime;
	long rss;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	close_paren = strrchr(buf, ')');
	if (!close_paren || sscanf(close_paren + 2,
				   "%c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
				   "%*d %*d %*d %*u %*u %ld",
				   &p->state, &p->ppid, &utime, &stime, &rss) != 5)
		return -1;
	p->pid = pid;
	p->ticks = utime + stime;
	p->rss_pages = rss > 0 ? (unsigned long long)rss : 0;
	*close_paren = '\0';
	snprintf(p->cmd, sizeof p->cmd, "[%s]", strchr(buf, '(') ? strchr(buf, '(') + 1 : "?");
	return 0;
}

/* The uid and the pid inside the sandbox (the last NSpid entry), from /proc/PID/status. */
static void read_status(struct proc *p)
{
	char path[64], line[256];
	FILE *f;

	p->uid = -1;
	p->nspid = p->pid;
	snprintf(path, sizeof path, "/proc/%d/status", p->pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f)) {
		if (!strncmp(line, "Uid:", 4))
			p->uid = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');
			p->nspid = last ? atoi(last + 1) : p->pid;
		}
	}
	fclose(f);
}

static void read_cmdline(struct proc *p)
{
	char path[64];
	size_t n = 0;
	_cleanup_free_ char *cmd = NULL;

	snprintf(path, sizeof path, "/proc/%d/cmdline", p->pid);
	cmd = aj_read_file(path, sizeof p->cmd - 1, &n);
	if (!cmd || n == 0)
		return; /* a kernel thread or a zombie: keep [comm] */
	for (size_t i = 0; i + 1 < n; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	/* A rewritten process title (init's) leaves its old length padded. */
	while (n > 0 && (cmd[n - 1] == ' ' || cmd[n - 1] == '\0'))
		cmd[--n] = '\0';
	snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
}

/* The host uid as the sandbox sees it, through init's uid map ("inside outside count"). */
static long inside_uid(int init, long uid)
{
	char path[64], line[128];
	long in, out, count;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/uid_map", init);
	if (uid < 0 || !(f = fopen(path, "re")))
		return uid;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%ld %ld %ld", &in, &out, &count) == 3 && uid >= out &&
		    uid < out + count) {
			fclose(f);
			return in + (uid - out);
		}
	fclose(f);
	return uid;
}

/* Every process on the host, then init and its descendants moved to the front. */
static size_t sandbox_procs(int init, struct proc *v, size_t cap)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0, kept = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < cap)
		if (isdigit((unsigned char)e->d_name[0]) && read_stat(atoi(e->d_name), &v[n]) == 0)
			n++;
	closedir(d);
	for (size_t i = 0; i < n; i++) /* init first */
		if (v[i].pid == init) {
			struct proc t = v[0];
			v[0] = v[i];
			v[i] = t;
			kept = 1;
		}
	/* Breadth first: whatever has a kept parent is kept, until nothing changes. */
	for (size_t done = 0; kept && done < kept; done++)
		for (size_t i = kept; i < n; i++)
			if (v[i].ppid == v[done].pid) {
				struct proc t = v[kept];
				v[kept] = v[i];
				v[i] = t;
				kept++;
			}
	return kept;
}

static void print_procs(struct proc *v, size_t n, int init)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	json_t *a = aj_cli.json ? json_array() : NULL;

	for (size_t i = 0; i < n; i++) {
		read_status(&v[i]);
		read_cmdline(&v[i]);
		v[i].nsppid = 0;
		for (size_t k = 0; k < n && i; k++)
			if (v[k].pid == v[i].ppid)
				v[i].nsppid = v[k].nspid;
	}
	if (!a)
		printf("%-7s %-9s %-7s %-6s %-4s %9s %9s  %s\n", "PID", "HOST_PID", "PPID", "UID",
		       "STAT", "TIME", "RSS", "COMMAND");
	for (size_t i = 0; i < n; i++) {
		unsigned long long ms = v[i].ticks * 1000 / (unsigned long long)(tick > 0 ? tick : 100);
		unsigned long long rss = v[i].rss_pages * (unsigned long long)page;
		long uid = inside_uid(init, v[i].uid);
		char t[32], r[32];
		if (a) {
			json_array_append_new(a, json_pack("{s:i, s:i, s:i, s:I, s:s#, s:I, s:I, s:s}",
							   "pid", v[i].nspid, "host_pid", v[i].pid,
							   "ppid", v[i].nsppid, "uid", (json_int_t)uid,
							   "state", &v[i].state, (size_t)1, "cpu_ms",
							   (json_int_t)ms, "rss_bytes", (json_int_t)rss,
							   "command", v[i].cmd));
			continue;
		}
		snprintf(t, sizeof t, "%llu:%02llu.%02llu", ms / 60000, ms / 1000 % 60, ms / 10 % 100);
		aj_format_size(rss, r, sizeof r);
		printf("%-7d %-9d %-7d %-6ld %-4c %9s %9s  %s\n", v[i].nspid, v[i].pid, v[i].nsppid,
		       uid, v[i].state, t, r, v[i].cmd);
	}
	if (a)
		aj_cli_print_json(a);
}

static int cmd_top(const struct aj_verb *v, int argc, char **argv)
{
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_sandbox_rec rec;
	struct aj_err err;
	_cleanup_json_ json_t *info = NULL;
	_cleanup_free_ struct proc *procs = NULL;
	char **args;
	int nargs, rc, init;
	_cleanup_close_ int ctl = -1;

	aj_err_clear(&err);
	if ((rc = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 1) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, nargs ? "top: unexpected argument \"%s\""
							  : "top: missing the sandbox name%s",
			   nargs ? args[1] : "");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_open(&m, &err) < 0 || (ctl = aj_mgr_connect(&m, args[0], &rec, &err)) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	aj_sandbox_rec_free(&rec);
	if (aj_ctl_call(ctl, json_pack("{s:s}", "op", "info"), NULL, 0, &info, NULL, NULL, 5000,
			&err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	init = (int)json_integer_value(json_object_get(info, "init_pid"));
	procs = aj_xcalloc(MAX_PROCS, sizeof *procs);
	print_procs(procs, init > 0 ? sandbox_procs(init, procs, MAX_PROCS) : 0, init);
	return 0;
}

static const struct aj_arg top_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
static const struct aj_option top_options[] = {AJ_OPT_END};
const struct aj_verb aj_verb_top = {
	.name = "top",
	.fn = cmd_top,
	.summary = "list a running sandbox's processes",
	.synopsis = "top [OPTIONS] NAME",
	.help = "The processes of a running or paused sandbox: its init and everything it started, "
		"with pids and uids as the sandbox sees them.",
	.options = top_options,
	.args = top_args,
};
