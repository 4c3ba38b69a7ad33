/* Shared libraries loaded at their first use rather than at every start: OpenSSL
 * (common/openssl.h), libm (common/libm.c) and libcurl (image/curl.h). What the binary calls of
 * them goes through functions of its own that load the library the first time.
 *
 * A process that leaves the host's filesystem view or confines itself (a sandbox's init in
 * every tier, gVisor's in the Sentry, the layer unpacker, a container's init and exec) calls
 * aj_lazylib_forbid() first: a library is then never loaded from a root the sandbox controls,
 * and what such a process needs is loaded before. The helpers cloned with CLONE_VM share their
 * parent's memory, so they never call it.
 */
#ifndef AJ_COMMON_LAZYLIB_H
#define AJ_COMMON_LAZYLIB_H

#include <stddef.h>

/* dlopen(soname, RTLD_NOW | RTLD_LOCAL); NULL with the reason in why and errno EPERM (this
 * process forbade loading) or ENOENT (the loader's message). */
void *aj_lazylib_open(const char *soname, char *why, size_t len);
/* fns[i] = the address of names[i] in the library h (and what it depends on), for i < n; -1 at
 * the first one missing, with why saying which, as aj_lazylib_open() says its failures. */
int aj_lazylib_bind(void *h, const char *soname, const char *const *names, void **fns, size_t n,
		    char *why, size_t len);
/* From now on this process loads no library: what is loaded stays usable. */
void aj_lazylib_forbid(void);
/* A call that needed a library that could not be loaded: the message ("agentjail: WHAT\n") on
 * stderr, then exit 125. Not abort: a core file of a supervisor would hold its keys. */
__attribute__((noreturn)) void aj_lazylib_fail(const char *what);

#endif
