/* OpenSSL, loaded when first used. Linked in statically, its pointer tables (some 360 KiB of
 * .data.rel.ro: every algorithm's method table) were written by the dynamic loader at each
 * start of the position-independent binary, about 100 page faults in every agentjail process,
 * also in those that use no TLS and no digest (`run` without TLS interception, an image or
 * named volumes; `exec`; `ls`). In the default build
 * (STATIC_LIBS=1) the binary carries instead one small function for each OpenSSL function that
 * agentjail or libevent's OpenSSL bufferevents call; the first call loads Debian's libssl.so.3
 * and libcrypto.so.3 (the package depends on libssl3) and every call goes on to the library's
 * own function. libcurl, loaded the same way, uses the same libraries, so a process holds one
 * OpenSSL. With STATIC_LIBS=0 the libraries are linked as usual and this is only the API below.
 *
 * A process that enters a sandbox or confines itself loads no library afterwards
 * (common/lazylib.h): one that needs OpenSSL there loads it before (aj_openssl_load()). A call
 * that has to load the library and cannot ends the process with a message naming the library
 * and the package and exit code 125 (the callers test what OpenSSL returns, not whether it is
 * there).
 */
#ifndef AJ_COMMON_OPENSSL_H
#define AJ_COMMON_OPENSSL_H

#include "common/err.h"

/* Loads OpenSSL now if it is not loaded: 0, or -1 with err naming the library and the package
 * to install (layer AJ_LAYER_INTERNAL). Thread-safe. */
int aj_openssl_load(struct aj_err *err);

#endif
