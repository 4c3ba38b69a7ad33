#include "common/alloc.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void aj_oom(size_t size)
{
	char msg[96];
	int n = snprintf(msg, sizeof msg, "agentjail: out of memory (allocating %zu bytes)\n",
			 size);

	/* No stdio: its buffers may need the memory there is not. */
	if (n > 0 && write(2, msg, (size_t)n) < 0) {
		/* nothing more to say */
	}
	abort();
}

void *aj_xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		aj_oom(size);
	return p;
}

void *aj_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		aj_oom(n * size);
	return p;
}

void *aj_xrealloc(void *p, size_t size)
{
	void *q = realloc(p, size ? size : 1);

	if (!q)
		aj_oom(size);
	return q;
}

char *aj_xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		aj_oom(strlen(s) + 1);
	return d;
}

char *aj_xstrndup(const char *s, size_t n)
{
	char *d = strndup(s, n);

	if (!d)
		aj_oom(n + 1);
	return d;
}

char *aj_xvasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		aj_oom(strlen(fmt));
	return s;
}

char *aj_xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = aj_xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

static void *json_alloc(size_t size)
{
	return aj_xmalloc(size);
}

void aj_alloc_install(void)
{
	json_set_alloc_funcs(json_alloc, free);
}
