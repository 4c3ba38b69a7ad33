#include "image/curl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "common/lazylib.h"
#include "common/openssl.h"

static struct aj_curl curl;
static const char *load_error;
static char openssl_error[sizeof ((struct aj_err *)0)->msg + 32], curl_error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define SYM(field, name)                                                                           \
	{                                                                                          \
		offsetof(struct aj_curl, field), name                                              \
	}

static const struct {
	size_t off;
	const char *name;
} syms[] = {
	SYM(global_init, "curl_global_init"),
	SYM(easy_init, "curl_easy_init"),
	SYM(easy_setopt, "curl_easy_setopt"),
	SYM(easy_perform, "curl_easy_perform"),
	SYM(easy_getinfo, "curl_easy_getinfo"),
	SYM(easy_cleanup, "curl_easy_cleanup"),
	SYM(easy_strerror, "curl_easy_strerror"),
	SYM(easy_reset, "curl_easy_reset"),
	SYM(slist_append, "curl_slist_append"),
	SYM(slist_free_all, "curl_slist_free_all"),
	SYM(multi_init, "curl_multi_init"),
	SYM(multi_add_handle, "curl_multi_add_handle"),
	SYM(multi_remove_handle, "curl_multi_remove_handle"),
	SYM(multi_perform, "curl_multi_perform"),
	SYM(multi_poll, "curl_multi_poll"),
	SYM(multi_info_read, "curl_multi_info_read"),
	SYM(multi_cleanup, "curl_multi_cleanup"),
	SYM(version, "curl_version"),
};

static void load(void)
{
	struct aj_err err;
	void *h;

	/* Before libcurl's own libssl.so.3 is loaded: the same library, with agentjail's
	 * allocators (common/openssl.h). */
	if (aj_openssl_load(&err) < 0) {
		snprintf(openssl_error, sizeof openssl_error, "%s (libcurl uses it)", err.msg);
		load_error = openssl_error;
		return;
	}
	h = aj_lazylib_open("libcurl.so.4", curl_error, sizeof curl_error);
	if (!h) {
		load_error = curl_error;
		return;
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			load_error = dlerror();
			return;
		}
		*(void **)((char *)&curl + syms[i].off) = f;
	}
	if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		load_error = "curl_global_init failed";
}

const struct aj_curl *aj_curl_load(struct aj_err *err)
{
	pthread_once(&once, load);
	if (!load_error)
		return &curl;
	aj_err_set(err, AJ_LAYER_IMAGE, ENOENT, "registries need libcurl: %s", load_error);
	aj_err_hint(err, "install it (Debian: apt-get install libcurl4)");
	return NULL;
}
