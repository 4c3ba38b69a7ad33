#include "common/lazylib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "common/exitcode.h"

/* Written only in single-threaded processes (a sandbox's children), before any load. */
static bool forbidden;

void *aj_lazylib_open(const char *soname, char *why, size_t len)
{
	void *h;

	if (forbidden) {
		snprintf(why, len, "%s is needed after this process confined itself (internal error)",
			 soname);
		errno = EPERM;
		return NULL;
	}
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, len, "%s could not be loaded: %s", soname, dlerror());
		errno = ENOENT;
	}
	return h;
}

int aj_lazylib_bind(void *h, const char *soname, const char *const *names, void **fns, size_t n,
		    char *why, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!(fns[i] = dlsym(h, names[i]))) {
			snprintf(why, len, "%s could not be loaded: no %s in it", soname, names[i]);
			return -1;
		}
	return 0;
}

void aj_lazylib_forbid(void)
{
	forbidden = true;
}

void aj_lazylib_fail(const char *what)
{
	char msg[1024];
	int n = snprintf(msg, sizeof msg, "agentjail: %s\n", what);

	(void)!write(2, msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
	_exit(AJ_EXIT_ERROR);
}
