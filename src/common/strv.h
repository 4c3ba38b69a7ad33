/* Growable NULL-terminated vector of owned strings. The vector owns every string in it;
 * aj_strv_free() releases them all. `v` is always NULL-terminated (or NULL when empty) so it
 * can be handed to execve() directly. Memory comes from common/alloc.h, so adding to a vector
 * cannot fail (an allocation failure ends the process) and these functions return nothing.
 */
#ifndef AJ_COMMON_STRV_H
#define AJ_COMMON_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct aj_strv {
	char **v;
	size_t n;
	size_t cap;
};

#define AJ_STRV_INIT {NULL, 0, 0}

void aj_strv_push(struct aj_strv *sv, const char *s);
void aj_strv_pushf(struct aj_strv *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Takes ownership of s, which must come from malloc (aj_x*). */
void aj_strv_push_owned(struct aj_strv *sv, char *s);
bool aj_strv_contains(const struct aj_strv *sv, const char *s);
/* Index of the entry "NAME=..." for NAME, or -1. */
long aj_strv_find_env(const struct aj_strv *sv, const char *name, size_t name_len);
/* Sets "NAME=value", replacing an existing entry for NAME. */
void aj_strv_setenv(struct aj_strv *sv, const char *name, const char *value);
void aj_strv_copy(struct aj_strv *dst, const struct aj_strv *src);
void aj_strv_clear(struct aj_strv *sv);
void aj_strv_free(struct aj_strv *sv);

#endif
