/* showid: prints the credentials this process runs with, one "KEY VALUE" per line, so that a
 * test can tell whether exec'ing it (setuid, setgid, file capabilities) raised privileges:
 *
 *   euid N, egid N     effective ids (from the kernel, not the environment)
 *   capeff HEX         effective capability set (CapEff of /proc/self/status)
 *   capprm HEX         permitted capability set
 *   nnp N              no_new_privs
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void status_field(const char *field, const char *key)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(field);

	if (!f) {
		printf("%s ?\n", key);
		return;
	}
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			char *v = line + n + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			printf("%s %s\n", key, v);
			break;
		}
	fclose(f);
}

int main(void)
{
	printf("euid %u\n", (unsigned)geteuid());
	printf("egid %u\n", (unsigned)getegid());
	status_field("CapEff", "capeff");
	status_field("CapPrm", "capprm");
	status_field("NoNewPrivs", "nnp");
	return 0;
}
