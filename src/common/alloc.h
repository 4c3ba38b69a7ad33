/* Allocation: agentjail's one out-of-memory policy. An allocation that fails
 * ends the process with a message naming the size (aj_oom), as bubblewrap and
 * crun do; code does not check what these return. State outlives the process by
 * design (the store is SQLite in WAL mode, layers are published by rename), so
 * an abort loses no workspace, and a supervisor's cgroup guard removes what the
 * supervisor leaves. The libraries agentjail holds memory through (jansson,
 * libevent, OpenSSL) are given the same policy by aj_alloc_install(). Memory
 * comes from malloc and is released with free().
 *
 * Not for the post-fork child of a launch, which allocates nothing.
 */
#ifndef AJ_COMMON_ALLOC_H
#define AJ_COMMON_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

__attribute__((noreturn)) void aj_oom(size_t size);

__attribute__((malloc, returns_nonnull)) void *aj_xmalloc(size_t size);
__attribute__((malloc, returns_nonnull)) void *aj_xcalloc(size_t n, size_t size);
__attribute__((returns_nonnull)) void *aj_xrealloc(void *p, size_t size);
__attribute__((malloc, returns_nonnull)) char *aj_xstrdup(const char *s);
__attribute__((malloc, returns_nonnull)) char *aj_xstrndup(const char *s, size_t n);
__attribute__((malloc, returns_nonnull, format(printf, 1, 2))) char *aj_xasprintf(const char *fmt,
										  ...);
__attribute__((malloc, returns_nonnull, format(printf, 1, 0))) char *aj_xvasprintf(const char *fmt,
										   va_list ap);

/* jansson's allocator (the libraries that take one at run time are set up where
 * they are first used: libevent by the event loops, OpenSSL by egress/tls.c).
 * Call once, first thing in main(). */
void aj_alloc_install(void);

#endif
