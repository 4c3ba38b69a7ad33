#include "common/proctitle.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "common/alloc.h"

static char *area;
static size_t area_len;
static char *env_area;
static size_t env_len;

void aj_proctitle_init(int argc, char **argv)
{
	extern char **environ;
	size_t n = 0;

	if (argc < 1 || !argv[0])
		return;
	area = argv[0];
	area_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
	/* The kernel lays the environment strings out right after the arguments. */
	while (environ && environ[n])
		n++;
	if (n) {
		env_area = environ[0];
		env_len = (size_t)(environ[n - 1] + strlen(environ[n - 1]) - environ[0]);
	}
}

void aj_proctitle_set(const char *title)
{
	if (area && area_len) {
		memset(area, 0, area_len);
		strncpy(area, title, area_len - 1);
	}
	prctl(PR_SET_NAME, title, 0, 0, 0);
}

void aj_proctitle_wipe_environment(void)
{
	clearenv();
	if (env_area && env_len)
		memset(env_area, 0, env_len);
	env_area = NULL;
}

void aj_proctitle_take_environment(void)
{
	extern char **environ;
	size_t n = 0;
	char **copy;

	while (environ && environ[n])
		n++;
	copy = aj_xcalloc(n + 1, sizeof *copy);
	for (size_t i = 0; i < n; i++)
		copy[i] = aj_xstrdup(environ[i]);
	environ = copy; /* the strings of the old area are no longer anyone's */
	/* The kernel shows the argument area and, when its last byte is no longer a NUL, what
	 * follows it: the environment's strings, contiguous after the arguments. */
	if (area && env_area && env_area == area + area_len + 1)
		area_len += 1 + env_len;
	env_area = NULL;
}
