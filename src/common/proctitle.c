#include "common/proctitle.h"

#include <string.h>
#include <sys/prctl.h>

static char *area;
static size_t area_len;

void aj_proctitle_init(int argc, char **argv)
{
	if (argc < 1 || !argv[0])
		return;
	area = argv[0];
	area_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
}

void aj_proctitle_set(const char *title)
{
	if (area && area_len) {
		memset(area, 0, area_len);
		strncpy(area, title, area_len - 1);
	}
	prctl(PR_SET_NAME, title, 0, 0, 0);
}
