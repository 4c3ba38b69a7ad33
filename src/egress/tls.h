/* TLS for credential injection (OpenSSL): the per-sandbox CA, the leaf certificates the
 * proxy shows the sandbox for hosts a credential is bound to, and the verified client side
 * towards those hosts.
 *
 * The CA is made when the supervisor starts the sandbox: an EC P-256 key that never leaves
 * the supervisor's memory, a certificate valid for 90 days and name-constrained to the bound
 * hosts, so that even a leaked key could only vouch for those names. The sandbox trusts it
 * through a bundle (the host's trusted CAs + this CA) placed in its /etc. Leaves share one
 * key and are cached per host. aj_egress_tls_free() releases everything.
 */
#ifndef AJ_EGRESS_TLS_H
#define AJ_EGRESS_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "common/err.h"
#include "egress/creds.h"

struct aj_egress_tls;

/* Makes the CA (named after the sandbox) constrained to names (the hosts of the credentials
 * and of https:// HTTP rules: "x" permits x and every name below it) and the two TLS
 * contexts. */
int aj_egress_tls_new(const char *sandbox_id, const struct aj_strv *names,
		      struct aj_egress_tls **out, struct aj_err *err);
void aj_egress_tls_free(struct aj_egress_tls *t);

/* The CA certificate as PEM, and the bundle the sandbox trusts: the file OpenSSL trusts by
 * default on this host (SSL_CERT_FILE if set) followed by the CA. Both malloc'd. */
char *aj_egress_tls_ca_pem(const struct aj_egress_tls *t, size_t *len);
char *aj_egress_tls_bundle(const struct aj_egress_tls *t, size_t *len, struct aj_err *err);

/* A server-side SSL presenting a leaf for host, signed by the CA. */
SSL *aj_egress_tls_server(struct aj_egress_tls *t, const char *host, struct aj_err *err);
/* A client-side SSL for host: SNI, certificate verified against the host's trusted CAs,
 * name checked, HTTP/1.1 offered by ALPN. */
SSL *aj_egress_tls_client(struct aj_egress_tls *t, const char *host, struct aj_err *err);

static inline void aj_egress_ssl_freep(SSL **s)
{
	SSL_free(*s);
}

/* An SSL not yet taken over by a bufferevent (which frees it from then on). */
#define _cleanup_ssl_ __attribute__((cleanup(aj_egress_ssl_freep)))

/* Why a TLS session failed, from OpenSSL's error queue and the verify result. */
void aj_egress_tls_why(SSL *ssl, unsigned long ossl_err, char *buf, size_t len);

#endif
