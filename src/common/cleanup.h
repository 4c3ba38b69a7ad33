/* Scope-bound cleanup. Variables declared with these attributes are released when they go out
 * of scope; ownership is handed over explicitly with aj_steal_ptr()/aj_steal_fd(), which return
 * the value and reset the variable so that the cleanup becomes a no-op. Always initialise such
 * variables (NULL, -1, AJ_STRV_INIT) at declaration. One helper per type the code holds:
 * memory, descriptors, FILE, DIR, jansson values and string vectors here; libevent's and
 * SQLite's types in the modules that use them (their internal headers).
 */
#ifndef AJ_COMMON_CLEANUP_H
#define AJ_COMMON_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/strv.h"

static inline void aj_freep(void *p)
{
	free(*(void **)p);
}

static inline void aj_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* Closes what a descriptor variable holds before its scope ends (a pipe's write end, so that
 * the reader sees end-of-file) and leaves -1, so that its cleanup does nothing. */
static inline void aj_close_fd(int *fd)
{
	aj_closep(fd);
	*fd = -1;
}

static inline void aj_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void aj_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static inline void aj_json_decrefp(json_t **j)
{
	json_decref(*j);
}

static inline void aj_strv_freep(struct aj_strv *sv)
{
	aj_strv_free(sv);
}

static inline void *aj_steal_ptr_impl(void **pp)
{
	void *p = *pp;
	*pp = NULL;
	return p;
}

static inline int aj_steal_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

#define _cleanup_free_ __attribute__((cleanup(aj_freep)))
#define _cleanup_close_ __attribute__((cleanup(aj_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(aj_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(aj_closedirp)))
#define _cleanup_json_ __attribute__((cleanup(aj_json_decrefp)))
#define _cleanup_strv_ __attribute__((cleanup(aj_strv_freep)))
#define aj_steal_ptr(pp) aj_steal_ptr_impl((void **)(pp))

#define AJ_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
