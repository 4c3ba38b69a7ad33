/* agentjail version */
#include <seccomp.h>
#include <stdio.h>

#include "cli/commands.h"

int aj_cmd_version(int argc, char **argv)
{
	const struct scmp_version *sv = seccomp_version();

	(void)argc;
	(void)argv;
	printf("agentjail %s (libseccomp %u.%u.%u)\n", AJ_VERSION, sv->major, sv->minor, sv->micro);
	return 0;
}
