/* TLS contexts of the proxy (see tls.h). */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "egress/tls_internal.h"

#define BUNDLE_MAX (16u << 20)

static int make_contexts(struct aj_egress_tls *t, struct aj_err *err)
{
	static const unsigned char alpn[] = "\x08http/1.1";

	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->server || !t->client)
		return aj_egress_ossl_err(err, "TLS context");
	/* No renegotiation, no session tickets to keep per sandbox: the proxy's sessions are
	 * short and local. */
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_options(t->server, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_options(t->client, SSL_OP_NO_RENEGOTIATION);
	/* The host's trust store: its default file and directory, or SSL_CERT_FILE and
	 * SSL_CERT_DIR when set in agentjail's environment. */
	if (SSL_CTX_set_default_verify_paths(t->client) != 1)
		return aj_egress_ossl_err(err, "load the host's trusted CAs");
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_alpn_protos(t->client, alpn, sizeof alpn - 1) != 0)
		return aj_egress_ossl_err(err, "ALPN");
	return 0;
}

static void tls_freep(struct aj_egress_tls **t)
{
	aj_egress_tls_free(*t);
}

int aj_egress_tls_new(const char *sandbox_id, const struct aj_strv *names,
		      struct aj_egress_tls **out, struct aj_err *err)
{
	__attribute__((cleanup(tls_freep))) struct aj_egress_tls *t = aj_xcalloc(1, sizeof *t);

	*out = NULL;
	if (aj_egress_ca_make(t, sandbox_id, names, err) < 0 || make_contexts(t, err) < 0)
		return -1;
	*out = aj_steal_ptr(&t);
	return 0;
}

void aj_egress_tls_free(struct aj_egress_tls *t)
{
	if (!t)
		return;
	while (t->leaves) {
		struct leaf *l = t->leaves;
		t->leaves = l->next;
		X509_free(l->cert);
		free(l);
	}
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t);
}

char *aj_egress_tls_bundle(const struct aj_egress_tls *t, size_t *len, struct aj_err *err)
{
	const char *path = getenv(X509_get_default_cert_file_env());
	size_t sys_len = 0, ca_len = 0;
	_cleanup_free_ char *sys = NULL, *ca = NULL;
	char *out;

	if (!path || !*path)
		path = X509_get_default_cert_file();
	sys = aj_read_file(path, BUNDLE_MAX, &sys_len);
	if (!sys) {
		/* A host without a bundle file still gets a bundle: the sandbox CA alone. */
		if (errno != ENOENT)
			return aj_err_sys(err, AJ_LAYER_PROXY, "read the host's CA bundle \"%s\"",
					  path), NULL;
		sys_len = 0;
	}
	ca = aj_egress_tls_ca_pem(t, &ca_len);
	if (!ca)
		return aj_err_sys(err, AJ_LAYER_PROXY, "CA bundle"), NULL;
	out = aj_xmalloc(sys_len + ca_len + 2);
	if (sys_len)
		memcpy(out, sys, sys_len);
	if (sys_len && out[sys_len - 1] != '\n')
		out[sys_len++] = '\n';
	memcpy(out + sys_len, ca, ca_len);
	*len = sys_len + ca_len;
	out[*len] = '\0';
	return out;
}

SSL *aj_egress_tls_server(struct aj_egress_tls *t, const char *host, struct aj_err *err)
{
	X509 *leaf = aj_egress_ca_leaf(t, host, err);
	_cleanup_ssl_ SSL *ssl = NULL;

	if (!leaf)
		return NULL;
	ssl = SSL_new(t->server);
	if (!ssl || SSL_use_certificate(ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(ssl, t->leaf_key) != 1) {
		aj_egress_ossl_err(err, "TLS towards the sandbox");
		return NULL;
	}
	return aj_steal_ptr(&ssl);
}

SSL *aj_egress_tls_client(struct aj_egress_tls *t, const char *host, struct aj_err *err)
{
	_cleanup_ssl_ SSL *ssl = SSL_new(t->client);

	if (!ssl || SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1) {
		aj_egress_ossl_err(err, "TLS towards the host");
		return NULL;
	}
	return aj_steal_ptr(&ssl);
}

void aj_egress_tls_why(SSL *ssl, unsigned long ossl_err, char *buf, size_t len)
{
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	char e[200] = "";

	if (ossl_err)
		ERR_error_string_n(ossl_err, e, sizeof e);
	ERR_clear_error();
	if (v != X509_V_OK)
		snprintf(buf, len, "certificate verification failed: %s",
			 X509_verify_cert_error_string(v));
	else if (e[0])
		snprintf(buf, len, "TLS handshake failed: %s", e);
	else
		snprintf(buf, len, "TLS handshake failed (connection closed)");
}
