/* OpenSSL loaded on first use (openssl.h): one forwarding function per OpenSSL function the
 * binary calls, and the loader. */
#include "common/openssl.h"

#if AJ_LAZY_LIBS

#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init and friends: supervisor/etc_share.c */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/lazylib.h"

/* Every OpenSSL function the binary calls: agentjail's own calls and those of libevent's
 * OpenSSL bufferevents. A function missing here is an undefined symbol at link time.
 * X: (return type, name, parameters, arguments); XV: the same, returning nothing. The two
 * written out below the list: CRYPTO_set_mem_functions (kept until the load) and
 * EVP_PKEY_Q_keygen (variadic). */
#define AJ_OPENSSL_FUNCTIONS(X, XV)                                                                \
	XV(void, BIO_clear_flags, (BIO * b, int flags), (b, flags))                                \
	X(long, BIO_ctrl, (BIO * bp, int cmd, long larg, void *parg), (bp, cmd, larg, parg))       \
	X(int, BIO_free, (BIO * a), (a))                                                           \
	X(void *, BIO_get_data, (BIO * a), (a))                                                    \
	X(int, BIO_get_init, (BIO * a), (a))                                                       \
	X(int, BIO_get_shutdown, (BIO * a), (a))                                                   \
	X(BIO_METHOD *, BIO_meth_new, (int type, const char *name), (type, name))                  \
	X(int, BIO_meth_set_create, (BIO_METHOD * biom, int (*fn)(BIO *)), (biom, fn))             \
	X(int, BIO_meth_set_ctrl, (BIO_METHOD * biom, long (*fn)(BIO *, int, long, void *)),       \
	  (biom, fn))                                                                              \
	X(int, BIO_meth_set_destroy, (BIO_METHOD * biom, int (*fn)(BIO *)), (biom, fn))            \
	X(int, BIO_meth_set_puts, (BIO_METHOD * biom, int (*fn)(BIO *, const char *)), (biom, fn)) \
	X(int, BIO_meth_set_read, (BIO_METHOD * biom, int (*fn)(BIO *, char *, int)), (biom, fn))  \
	X(int, BIO_meth_set_write, (BIO_METHOD * biom, int (*fn)(BIO *, const char *, int)),       \
	  (biom, fn))                                                                              \
	X(BIO *, BIO_new, (const BIO_METHOD *type), (type))                                        \
	X(BIO *, BIO_new_socket, (int sock, int close_flag), (sock, close_flag))                   \
	X(uint64_t, BIO_number_read, (BIO * bio), (bio))                                           \
	X(uint64_t, BIO_number_written, (BIO * bio), (bio))                                        \
	X(const BIO_METHOD *, BIO_s_mem, (void), ())                                               \
	XV(void, BIO_set_data, (BIO * a, void *ptr), (a, ptr))                                     \
	XV(void, BIO_set_flags, (BIO * b, int flags), (b, flags))                                  \
	XV(void, BIO_set_init, (BIO * a, int init), (a, init))                                     \
	XV(void, BIO_set_shutdown, (BIO * a, int shut), (a, shut))                                 \
	XV(void, BN_free, (BIGNUM * a), (a))                                                       \
	X(BIGNUM *, BN_new, (void), ())                                                            \
	X(int, BN_rand, (BIGNUM * rnd, int bits, int top, int bottom), (rnd, bits, top, bottom))   \
	X(ASN1_INTEGER *, BN_to_ASN1_INTEGER, (const BIGNUM *bn, ASN1_INTEGER *ai), (bn, ai))      \
	X(int, CRYPTO_memcmp, (const void *in_a, const void *in_b, size_t len), (in_a, in_b, len)) \
	XV(void, ERR_clear_error, (void), ())                                                      \
	XV(void, ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len))      \
	X(unsigned long, ERR_get_error, (void), ())                                                \
	X(unsigned long, ERR_peek_error, (void), ())                                               \
	X(int, EVP_Digest,                                                                         \
	  (const void *data, size_t count, unsigned char *md, unsigned int *size,                  \
	   const EVP_MD *type, ENGINE *impl),                                                      \
	  (data, count, md, size, type, impl))                                                     \
	X(int, EVP_DigestFinal_ex, (EVP_MD_CTX * ctx, unsigned char *md, unsigned int *s),         \
	  (ctx, md, s))                                                                            \
	X(int, EVP_DigestInit_ex, (EVP_MD_CTX * ctx, const EVP_MD *type, ENGINE *impl),            \
	  (ctx, type, impl))                                                                       \
	X(int, EVP_DigestUpdate, (EVP_MD_CTX * ctx, const void *d, size_t cnt), (ctx, d, cnt))     \
	XV(void, EVP_MD_CTX_free, (EVP_MD_CTX * ctx), (ctx))                                       \
	X(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ())                                                \
	XV(void, EVP_PKEY_free, (EVP_PKEY * pkey), (pkey))                                         \
	X(const EVP_MD *, EVP_sha1, (void), ())                                                    \
	X(const EVP_MD *, EVP_sha256, (void), ())                                                  \
	X(unsigned char *, HMAC,                                                                   \
	  (const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data,          \
	   size_t data_len, unsigned char *md, unsigned int *md_len),                              \
	  (evp_md, key, key_len, data, data_len, md, md_len))                                      \
	X(int, PEM_write_bio_X509, (BIO * out, const X509 *x), (out, x))                           \
	X(int, SHA256_Final, (unsigned char *md, SHA256_CTX *c), (md, c))                          \
	X(int, SHA256_Init, (SHA256_CTX * c), (c))                                                 \
	X(int, SHA256_Update, (SHA256_CTX * c, const void *data, size_t len), (c, data, len))      \
	X(long, SSL_CTX_ctrl, (SSL_CTX * ctx, int cmd, long larg, void *parg),                     \
	  (ctx, cmd, larg, parg))                                                                  \
	XV(void, SSL_CTX_free, (SSL_CTX * ctx), (ctx))                                             \
	X(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *meth), (meth))                                \
	X(int, SSL_CTX_set_alpn_protos,                                                            \
	  (SSL_CTX * ctx, const unsigned char *protos, unsigned int protos_len),                   \
	  (ctx, protos, protos_len))                                                               \
	X(int, SSL_CTX_set_default_verify_paths, (SSL_CTX * ctx), (ctx))                           \
	X(uint64_t, SSL_CTX_set_options, (SSL_CTX * ctx, uint64_t op), (ctx, op))                  \
	XV(void, SSL_CTX_set_verify, (SSL_CTX * ctx, int mode, SSL_verify_cb callback),            \
	   (ctx, mode, callback))                                                                  \
	X(int, SSL_clear, (SSL * s), (s))                                                          \
	X(long, SSL_ctrl, (SSL * ssl, int cmd, long larg, void *parg), (ssl, cmd, larg, parg))     \
	X(int, SSL_do_handshake, (SSL * s), (s))                                                   \
	XV(void, SSL_free, (SSL * ssl), (ssl))                                                     \
	X(int, SSL_get_error, (const SSL *s, int ret_code), (s, ret_code))                         \
	X(BIO *, SSL_get_rbio, (const SSL *s), (s))                                                \
	X(int, SSL_get_shutdown, (const SSL *ssl), (ssl))                                          \
	X(long, SSL_get_verify_result, (const SSL *ssl), (ssl))                                    \
	X(BIO *, SSL_get_wbio, (const SSL *s), (s))                                                \
	X(SSL *, SSL_new, (SSL_CTX * ctx), (ctx))                                                  \
	X(int, SSL_pending, (const SSL *s), (s))                                                   \
	X(int, SSL_read, (SSL * ssl, void *buf, int num), (ssl, buf, num))                         \
	X(int, SSL_renegotiate, (SSL * s), (s))                                                    \
	X(int, SSL_set1_host, (SSL * s, const char *hostname), (s, hostname))                      \
	XV(void, SSL_set_accept_state, (SSL * s), (s))                                             \
	XV(void, SSL_set_bio, (SSL * s, BIO * rbio, BIO * wbio), (s, rbio, wbio))                  \
	XV(void, SSL_set_connect_state, (SSL * s), (s))                                            \
	X(int, SSL_use_PrivateKey, (SSL * ssl, EVP_PKEY * pkey), (ssl, pkey))                      \
	X(int, SSL_use_certificate, (SSL * ssl, X509 * x), (ssl, x))                               \
	X(int, SSL_write, (SSL * ssl, const void *buf, int num), (ssl, buf, num))                  \
	X(const SSL_METHOD *, TLS_client_method, (void), ())                                       \
	X(const SSL_METHOD *, TLS_server_method, (void), ())                                       \
	X(X509_EXTENSION *, X509V3_EXT_conf_nid,                                                   \
	  (struct lhash_st_CONF_VALUE * conf, X509V3_CTX * ctx, int ext_nid, const char *value),   \
	  (conf, ctx, ext_nid, value))                                                             \
	XV(void, X509V3_set_ctx,                                                                   \
	   (X509V3_CTX * ctx, X509 * issuer, X509 * subject, X509_REQ * req, X509_CRL * crl,       \
	    int flags),                                                                            \
	   (ctx, issuer, subject, req, crl, flags))                                                \
	XV(void, X509_EXTENSION_free, (X509_EXTENSION * a), (a))                                   \
	X(int, X509_NAME_add_entry_by_txt,                                                         \
	  (X509_NAME * name, const char *field, int type, const unsigned char *bytes, int len,     \
	   int loc, int set),                                                                      \
	  (name, field, type, bytes, len, loc, set))                                               \
	X(int, X509_add_ext, (X509 * x, X509_EXTENSION * ex, int loc), (x, ex, loc))               \
	XV(void, X509_free, (X509 * a), (a))                                                       \
	X(const char *, X509_get_default_cert_file, (void), ())                                    \
	X(const char *, X509_get_default_cert_file_env, (void), ())                                \
	X(ASN1_INTEGER *, X509_get_serialNumber, (X509 * x), (x))                                  \
	X(X509_NAME *, X509_get_subject_name, (const X509 *a), (a))                                \
	X(ASN1_TIME *, X509_getm_notAfter, (const X509 *x), (x))                                   \
	X(ASN1_TIME *, X509_getm_notBefore, (const X509 *x), (x))                                  \
	X(ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME * s, long adj), (s, adj))                       \
	X(X509 *, X509_new, (void), ())                                                            \
	X(int, X509_set_issuer_name, (X509 * x, const X509_NAME *name), (x, name))                 \
	X(int, X509_set_pubkey, (X509 * x, EVP_PKEY * pkey), (x, pkey))                            \
	X(int, X509_set_version, (X509 * x, long version), (x, version))                           \
	X(int, X509_sign, (X509 * x, EVP_PKEY * pkey, const EVP_MD *md), (x, pkey, md))            \
	X(const char *, X509_verify_cert_error_string, (long n), (n))

enum {
	FN_EVP_PKEY_Q_keygen,
#define INDEX(ret, name, params, args) FN_##name,
	AJ_OPENSSL_FUNCTIONS(INDEX, INDEX)
#undef INDEX
	N_FUNCTIONS
};

static const char *const names[N_FUNCTIONS] = {
	[FN_EVP_PKEY_Q_keygen] = "EVP_PKEY_Q_keygen",
#define NAME(ret, name, params, args) [FN_##name] = #name,
	AJ_OPENSSL_FUNCTIONS(NAME, NAME)
#undef NAME
};

static void *fns[N_FUNCTIONS];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty once loaded */
static bool missing;         /* the library, not this process, is the cause */
static struct {
	CRYPTO_malloc_fn m;
	CRYPTO_realloc_fn r;
	CRYPTO_free_fn f;
} alloc;

static void load(void)
{
	void *crypto, *ssl;
	int (*set_mem)(CRYPTO_malloc_fn, CRYPTO_realloc_fn, CRYPTO_free_fn);

	/* libcrypto first: its allocators are set before anything allocates through it. */
	crypto = aj_lazylib_open("libcrypto.so.3", load_error, sizeof load_error);
	if (!crypto) {
		missing = errno == ENOENT;
		return;
	}
	*(void **)&set_mem = dlsym(crypto, "CRYPTO_set_mem_functions");
	/* Refused (0) only where another library loaded libcrypto and allocated through it
	 * first, which nothing in agentjail does: OpenSSL then keeps malloc's (frees match). */
	if (alloc.m && set_mem)
		(void)set_mem(alloc.m, alloc.r, alloc.f);
	ssl = aj_lazylib_open("libssl.so.3", load_error, sizeof load_error);
	if (!ssl) {
		missing = errno == ENOENT;
		return;
	}
	/* libssl, then what it depends on: libcrypto */
	if (aj_lazylib_bind(ssl, "libssl.so.3", names, fns, N_FUNCTIONS, load_error,
			    sizeof load_error) < 0)
		missing = true;
}

#define HINT "install it (Debian: apt-get install libssl3)"

static void error_to(struct aj_err *err)
{
	aj_err_set(err, AJ_LAYER_INTERNAL, missing ? ENOENT : EPERM, "%s", load_error);
	if (missing)
		aj_err_hint(err, HINT);
}

int aj_openssl_load(struct aj_err *err)
{
	pthread_once(&once, load);
	if (!load_error[0])
		return 0;
	error_to(err);
	return -1;
}

/* A call that finds no library: the process cannot go on (openssl.h). */
static void need(void)
{
	char msg[600];

	pthread_once(&once, load);
	if (!load_error[0])
		return;
	snprintf(msg, sizeof msg, "%s%s", load_error, missing ? "; " HINT : "");
	aj_lazylib_fail(msg);
}

/* The arguments are a type, a parameter list and an argument list: nothing to parenthesize. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define FORWARD(ret, name, params, args)                                                           \
	ret name params                                                                            \
	{                                                                                          \
		need();                                                                            \
		return ((__typeof__(&name))fns[FN_##name])args;                                    \
	}
#define FORWARD_VOID(ret, name, params, args)                                                      \
	ret name params                                                                            \
	{                                                                                          \
		need();                                                                            \
		((__typeof__(&name))fns[FN_##name]) args;                                          \
	}
/* NOLINTEND(bugprone-macro-parentheses) */
/* cppcheck reads the cast through __typeof__ as an int: */
/* cppcheck-suppress CastIntegerToAddressAtReturn */
AJ_OPENSSL_FUNCTIONS(FORWARD, FORWARD_VOID)

/* main() gives OpenSSL agentjail's allocators before anything runs: kept for the load. */
int CRYPTO_set_mem_functions(CRYPTO_malloc_fn malloc_fn, CRYPTO_realloc_fn realloc_fn,
			     CRYPTO_free_fn free_fn)
{
	alloc.m = malloc_fn;
	alloc.r = realloc_fn;
	alloc.f = free_fn;
	return 1;
}

/* The key types agentjail asks for: "EC" with a curve name (EVP_EC_gen), "RSA" with a size in
 * bits (EVP_RSA_gen); the others take no more arguments. */
EVP_PKEY *EVP_PKEY_Q_keygen(OSSL_LIB_CTX *libctx, const char *propq, const char *type, ...)
{
	__typeof__(&EVP_PKEY_Q_keygen) f;
	EVP_PKEY *k;
	va_list ap;

	need();
	f = (__typeof__(&EVP_PKEY_Q_keygen))fns[FN_EVP_PKEY_Q_keygen];
	va_start(ap, type);
	if (strcasecmp(type, "EC") == 0) /* OpenSSL's names ignore case */
		k = f(libctx, propq, type, va_arg(ap, char *));
	else if (strcasecmp(type, "RSA") == 0)
		k = f(libctx, propq, type, va_arg(ap, size_t));
	else
		k = f(libctx, propq, type);
	va_end(ap);
	return k;
}

#else /* STATIC_LIBS=0: linked as usual */

int aj_openssl_load(struct aj_err *err)
{
	(void)err;
	return 0;
}

#endif
