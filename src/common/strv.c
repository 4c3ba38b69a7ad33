#include "common/strv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

void aj_strv_push_owned(struct aj_strv *sv, char *s)
{
	if (sv->n + 2 > sv->cap) {
		sv->cap = sv->cap ? sv->cap * 2 : 8;
		sv->v = aj_xrealloc(sv->v, sv->cap * sizeof *sv->v);
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void aj_strv_push(struct aj_strv *sv, const char *s)
{
	aj_strv_push_owned(sv, aj_xstrdup(s));
}

void aj_strv_pushf(struct aj_strv *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = aj_xvasprintf(fmt, ap);
	va_end(ap);
	aj_strv_push_owned(sv, s);
}

bool aj_strv_contains(const struct aj_strv *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return true;
	return false;
}

long aj_strv_find_env(const struct aj_strv *sv, const char *name, size_t name_len)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strncmp(sv->v[i], name, name_len) == 0 && sv->v[i][name_len] == '=')
			return (long)i;
	return -1;
}

void aj_strv_setenv(struct aj_strv *sv, const char *name, const char *value)
{
	char *s = aj_xasprintf("%s=%s", name, value);
	long i = aj_strv_find_env(sv, name, strlen(name));

	if (i >= 0) {
		free(sv->v[i]);
		sv->v[i] = s;
		return;
	}
	aj_strv_push_owned(sv, s);
}

void aj_strv_copy(struct aj_strv *dst, const struct aj_strv *src)
{
	for (size_t i = 0; i < src->n; i++)
		aj_strv_push(dst, src->v[i]);
}

void aj_strv_clear(struct aj_strv *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	sv->n = 0;
	if (sv->v)
		sv->v[0] = NULL;
}

void aj_strv_free(struct aj_strv *sv)
{
	aj_strv_clear(sv);
	free(sv->v);
	sv->v = NULL;
	sv->cap = 0;
}
