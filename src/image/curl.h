/* libcurl, loaded when a registry is first contacted: linked in, its 30-odd shared libraries
 * would cost every `agentjail run` about 3 ms of start-up (measured with a dynamically linked
 * `true`). Only the functions agentjail calls are looked up; the Debian package depends on
 * libcurl4. The table is loaded once per process and never unloaded.
 */
#ifndef AJ_IMAGE_CURL_H
#define AJ_IMAGE_CURL_H

#include <curl/curl.h>

#include "common/err.h"

struct aj_curl {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_getinfo) *easy_getinfo;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_multi_init) *multi_init;
	__typeof__(curl_multi_add_handle) *multi_add_handle;
	__typeof__(curl_multi_remove_handle) *multi_remove_handle;
	__typeof__(curl_multi_perform) *multi_perform;
	__typeof__(curl_multi_poll) *multi_poll;
	__typeof__(curl_multi_info_read) *multi_info_read;
	__typeof__(curl_multi_cleanup) *multi_cleanup;
	__typeof__(curl_version) *version;
};

/* The loaded table, or NULL with err naming the library and the package. */
const struct aj_curl *aj_curl_load(struct aj_err *err);

#endif
