/* Shared by ca.c and tls.c only: the TLS state, and cleanup attributes for the OpenSSL
 * objects they hold in local variables (common/cleanup.h's convention; each free function
 * accepts NULL). */
#ifndef AJ_EGRESS_TLS_INTERNAL_H
#define AJ_EGRESS_TLS_INTERNAL_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "egress/tls.h"

static inline void eg_x509_freep(X509 **x)
{
	X509_free(*x);
}

static inline void eg_bio_freep(BIO **b)
{
	BIO_free(*b);
}

static inline void eg_bn_freep(BIGNUM **b)
{
	BN_free(*b);
}

#define _cleanup_x509_ __attribute__((cleanup(eg_x509_freep)))
#define _cleanup_bio_ __attribute__((cleanup(eg_bio_freep)))
#define _cleanup_bn_ __attribute__((cleanup(eg_bn_freep)))

struct leaf {
	char host[AJ_EGRESS_HOST_MAX + 1];
	X509 *cert;
	struct leaf *next;
};

struct aj_egress_tls {
	EVP_PKEY *ca_key;   /* never leaves this process */
	EVP_PKEY *leaf_key; /* shared by every leaf of this sandbox */
	X509 *ca;
	struct leaf *leaves;
	SSL_CTX *server; /* towards the sandbox */
	SSL_CTX *client; /* towards the real hosts */
};

int aj_egress_ca_make(struct aj_egress_tls *t, const char *sandbox_id,
		      const struct aj_strv *names, struct aj_err *err);
X509 *aj_egress_ca_leaf(struct aj_egress_tls *t, const char *host, struct aj_err *err);
/* Fills err from OpenSSL's error queue (and clears it). Returns -1. */
int aj_egress_ossl_err(struct aj_err *err, const char *what);

#endif
