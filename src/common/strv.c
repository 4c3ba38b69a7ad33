#include "common/strv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int aj_strv_push_owned(struct aj_strv *sv, char *s)
{
	if (!s)
		return -1;
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 8;
		char **v = realloc(sv->v, cap * sizeof *v);
		if (!v) {
			free(s);
			errno = ENOMEM;
			return -1;
		}
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	return 0;
}

int aj_strv_push(struct aj_strv *sv, const char *s)
{
	return aj_strv_push_owned(sv, strdup(s));
}

int aj_strv_pushf(struct aj_strv *sv, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	return aj_strv_push_owned(sv, s);
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

int aj_strv_setenv(struct aj_strv *sv, const char *name, const char *value)
{
	char *s = NULL;
	long i;

	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -1;
	i = aj_strv_find_env(sv, name, strlen(name));
	if (i >= 0) {
		free(sv->v[i]);
		sv->v[i] = s;
		return 0;
	}
	return aj_strv_push_owned(sv, s);
}

int aj_strv_copy(struct aj_strv *dst, const struct aj_strv *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (aj_strv_push(dst, src->v[i]) < 0)
			return -1;
	return 0;
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
