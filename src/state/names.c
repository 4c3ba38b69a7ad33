#include "state/names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* A sandbox's name as the manager allows it (aj_mgr_name_ok()): no path separator, nothing
 * hidden, so a link is always a plain entry of names/. */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63 || name[0] == '.' || name[0] == '-')
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			return false;
	return true;
}

static int link_path(char *buf, size_t len, const char *state_dir, const char *name)
{
	if (!name_ok(name)) {
		errno = EINVAL;
		return -1;
	}
	if ((size_t)snprintf(buf, len, "%s/names/%s", state_dir, name) >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int aj_names_publish(const char *state_dir, const char *name, const char *socket_path)
{
	char dir[4200], path[4300], tmp[4300];

	if (link_path(path, sizeof path, state_dir, name) < 0)
		return -1;
	snprintf(dir, sizeof dir, "%s/names", state_dir);
	if (aj_mkdir_p(dir, 0700) < 0)
		return -1;
	/* A hidden name of this process, then renamed over the old link: a reader sees the old
	 * link or the new one, never none. */
	snprintf(tmp, sizeof tmp, "%s/.%s.%d", dir, name, (int)getpid());
	unlink(tmp);
	if (symlink(socket_path, tmp) < 0)
		return -1;
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

void aj_names_withdraw(const char *state_dir, const char *name, const char *id)
{
	char path[4300], target[4300];
	const char *base;

	if (aj_names_resolve(state_dir, name, target, sizeof target) < 0)
		return;
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strncmp(base, id, strlen(id)) == 0 && strcmp(base + strlen(id), ".sock") == 0 &&
	    link_path(path, sizeof path, state_dir, name) == 0)
		unlink(path);
}

int aj_names_resolve(const char *state_dir, const char *name, char *buf, size_t len)
{
	char path[4300];
	ssize_t n;

	if (len == 0 || link_path(path, sizeof path, state_dir, name) < 0)
		return -1;
	n = readlink(path, buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	return 0;
}
