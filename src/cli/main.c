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
	{"changes", aj_cmd_changes, "review, apply or discard what an --overlay run changed"},
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
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "agentjail: [usage] unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 125;
}
