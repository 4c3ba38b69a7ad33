/* agentjail: dispatch to a subcommand. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "cli/commands.h"
#include "common/proctitle.h"
#include "common/trace.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"run", aj_cmd_run, "run a command in a new sandbox"},
	{"create", aj_cmd_create, "create (and start) a persistent sandbox"},
	{"exec", aj_cmd_exec, "run a command in a running sandbox"},
	{"ls", aj_cmd_ls, "list persistent sandboxes"},
	{"inspect", aj_cmd_inspect, "show a sandbox as JSON"},
	{"start", aj_cmd_start, "start a stopped sandbox (a new compute generation)"},
	{"stop", aj_cmd_stop, "stop a sandbox's compute; its workspace stays"},
	{"pause", aj_cmd_pause, "freeze a sandbox (processes and memory kept)"},
	{"resume", aj_cmd_resume, "thaw a paused sandbox"},
	{"snapshot", aj_cmd_snapshot, "freeze a sandbox's workspace into a snapshot"},
	{"snapshots", aj_cmd_snapshots, "list or remove snapshots"},
	{"restore", aj_cmd_restore, "put a sandbox's workspace back to a snapshot"},
	{"fork", aj_cmd_fork, "new sandboxes sharing a sandbox's workspace copy-on-write"},
	{"diff", aj_cmd_diff, "what a sandbox changed in its workspace"},
	{"cp", aj_cmd_cp, "copy files between the host and a sandbox"},
	{"rm", aj_cmd_rm, "delete a sandbox"},
	{"events", aj_cmd_events, "show a sandbox's events"},
	{"gc", aj_cmd_gc, "apply retention, clean up after crashes"},
	{"changes", aj_cmd_changes, "review, apply or discard what an --overlay run changed"},
	{"mcp", aj_cmd_mcp, "serve MCP (shell and file tools) on stdio for one sandbox"},
	{"serve", aj_cmd_serve, "serve the HTTP API on a unix socket (and TCP with tokens)"},
	{"oci", aj_cmd_oci, "the OCI runtime (runc's verbs) for containerd and Kubernetes"},
	{"policy", aj_cmd_policy, "work with policy files (import an srt settings file)"},
	{"features", aj_cmd_features, "show what this host can enforce"},
	{"version", aj_cmd_version, "show the version"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: agentjail COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nagentjail COMMAND --help shows a command's options.\n");
}

/* A closed 0, 1 or 2 would be taken by the next file we open (the events log, say) and then
 * handed to the sandbox as its stdio. */
static void ensure_stdio(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			_exit(125);
}

int main(int argc, char **argv)
{
	ensure_stdio();
	aj_trace_init();
	aj_proctitle_init(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return 125;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return aj_cmd_version(argc - 1, argv + 1);
	/* containerd's runc shim runs its runtime as BIN --root DIR --log FILE ... VERB. */
	if (aj_oci_invoked_as_runc(argc, argv))
		return aj_cmd_oci(argc, argv);
	if (strcmp(argv[1], "__supervise") == 0)
		return aj_cmd_supervise(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "agentjail: [usage] unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 125;
}
