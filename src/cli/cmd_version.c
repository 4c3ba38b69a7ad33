/* agentjail version */
#include <seccomp.h>
#include <stdio.h>

#include "cli/commands.h"

static int cmd_version(const struct aj_verb *v, int argc, char **argv)
{
	const struct scmp_version *sv = seccomp_version();

	(void)v;
	(void)argc;
	(void)argv;
	printf("agentjail %s (libseccomp %u.%u.%u)\n", AJ_VERSION, sv->major, sv->minor, sv->micro);
	return 0;
}

const struct aj_verb aj_verb_version = {
	.name = "version",
	.fn = cmd_version,
	.summary = "show the version",
	.synopsis = "version",
	.flags = AJ_VERB_OWN_ARGS | AJ_VERB_NO_CONFIG,
};
