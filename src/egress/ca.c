/* The per-sandbox CA and its leaf certificates (see tls.h). */
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "egress/tls_internal.h"

#define CA_DAYS 90
#define LEAF_DAYS 30

int aj_egress_ossl_err(struct aj_err *err, const char *what)
{
	char buf[256] = "";
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, buf, sizeof buf);
	ERR_clear_error();
	return aj_err_set(err, AJ_LAYER_PROXY, 0, "%s: %s", what, e ? buf : "OpenSSL failed");
}

static int random_serial(X509 *x)
{
	_cleanup_bn_ BIGNUM *bn = BN_new();

	return bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
			       BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))
		       ? 0
		       : -1;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* Common body of both kinds of certificate: version 3, random serial, validity starting an
 * hour ago (clocks differ), subject CN, public key. */
static X509 *cert_base(const char *cn, EVP_PKEY *pub, int days)
{
	_cleanup_x509_ X509 *x = X509_new();
	X509_NAME *name;

	if (!x || !X509_set_version(x, 2) || random_serial(x) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) ||
	    !X509_set_pubkey(x, pub))
		return NULL;
	name = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"agentjail",
					-1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
					-1, 0))
		return NULL;
	return aj_steal_ptr(&x);
}

/* "permitted;DNS:a.example,permitted;DNS:example.org" from the names ("*.x" given as "x",
 * which RFC 5280 reads as x and every name below it). */
static char *name_constraints(const struct aj_strv *names)
{
	size_t cap = 32, len = 0;
	char *s = aj_xmalloc(cap);

	len = (size_t)snprintf(s, cap, "critical");
	for (size_t i = 0; i < names->n; i++) {
		const char *h = names->v[i];
		size_t need = len + strlen(h) + 24;
		if (need > cap) {
			cap = need * 2;
			s = aj_xrealloc(s, cap);
		}
		len += (size_t)snprintf(s + len, cap - len, ",permitted;DNS:%s", h);
	}
	return s;
}

int aj_egress_ca_make(struct aj_egress_tls *t, const char *sandbox_id,
		      const struct aj_strv *names, struct aj_err *err)
{
	char cn[96];
	_cleanup_free_ char *nc = name_constraints(names);

	snprintf(cn, sizeof cn, "agentjail egress CA for sandbox %s", sandbox_id);
	t->ca_key = EVP_EC_gen("P-256");
	t->leaf_key = EVP_EC_gen("P-256");
	if (!t->ca_key || !t->leaf_key)
		return aj_egress_ossl_err(err, "make the sandbox's egress CA");
	t->ca = cert_base(cn, t->ca_key, CA_DAYS);
	if (!t->ca || X509_set_issuer_name(t->ca, X509_get_subject_name(t->ca)) != 1 ||
	    add_ext(t->ca, t->ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(t->ca, t->ca, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(t->ca, t->ca, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(t->ca, t->ca, NID_name_constraints, nc) < 0 ||
	    !X509_sign(t->ca, t->ca_key, EVP_sha256()))
		return aj_egress_ossl_err(err, "make the sandbox's egress CA");
	return 0;
}

static X509 *issue(struct aj_egress_tls *t, const char *host)
{
	char san[AJ_EGRESS_HOST_MAX + 8];
	_cleanup_x509_ X509 *x = cert_base(host, t->leaf_key, LEAF_DAYS);

	snprintf(san, sizeof san, "DNS:%s", host);
	if (!x || X509_set_issuer_name(x, X509_get_subject_name(t->ca)) != 1 ||
	    add_ext(x, t->ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, t->ca, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, t->ca, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, t->ca, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, t->ca, NID_authority_key_identifier, "keyid:always") < 0 ||
	    !X509_sign(x, t->ca_key, EVP_sha256()))
		return NULL;
	return aj_steal_ptr(&x);
}

X509 *aj_egress_ca_leaf(struct aj_egress_tls *t, const char *host, struct aj_err *err)
{
	struct leaf *l;
	X509 *cert;

	for (l = t->leaves; l; l = l->next)
		if (strcmp(l->host, host) == 0)
			return l->cert;
	if (!(cert = issue(t, host))) {
		aj_egress_ossl_err(err, "issue a certificate");
		return NULL;
	}
	l = aj_xcalloc(1, sizeof *l);
	snprintf(l->host, sizeof l->host, "%s", host);
	l->cert = cert;
	/* Bound hosts are few (the credentials' names): the cache needs no eviction. */
	l->next = t->leaves;
	t->leaves = l;
	return l->cert;
}

char *aj_egress_tls_ca_pem(const struct aj_egress_tls *t, size_t *len)
{
	_cleanup_bio_ BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	if (!b || PEM_write_bio_X509(b, t->ca) != 1 || (n = BIO_get_mem_data(b, &data)) <= 0)
		return NULL;
	out = aj_xmalloc((size_t)n + 1);
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	*len = (size_t)n;
	return out;
}
