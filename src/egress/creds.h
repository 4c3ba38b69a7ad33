/* Credentials in the proxy: the secrets themselves (read from the host when the supervisor
 * starts, held only in the supervisor's memory), the placeholders the sandbox holds instead,
 * and the rewriting of a request's headers for a host a credential is bound to.
 *
 * The rewriting is pure so that it can be unit-tested: every occurrence of a bound
 * credential's placeholder in a header value becomes the secret, also inside "Basic"
 * credentials (base64 of user:password, which is how git and most HTTP clients send a token
 * given as a password); then the credential's own header is added if the request lacks it.
 * Placeholders of credentials not bound to the host stay as they are.
 */
#ifndef AJ_EGRESS_CREDS_H
#define AJ_EGRESS_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "egress/http.h"
#include "rules/egress.h"

struct aj_plan;

struct aj_egress_cred {
	const char *name; /* borrowed: the policy's */
	char placeholder[64];
	char *secret; /* owned; never logged */
	size_t secret_len;
	struct aj_egress_rule *hosts;
	size_t n_hosts;
	const char *header; /* borrowed, may be NULL */
	const char *format;
	bool replace; /* the header replaces the request's own */
	uint64_t uses;
};

/* Reads every credential's secret (from_env, from_file, from_secret in the plan's
 * egress.secret_dir) and pairs it with the plan's
 * placeholder. Errors name the policy field. */
int aj_egress_creds_load(const struct aj_plan *plan, struct aj_egress_cred **out, size_t *n,
			 struct aj_err *err);
void aj_egress_creds_free(struct aj_egress_cred *c, size_t n);

/* True if some credential is bound to host:port (the proxy then terminates TLS there). */
bool aj_egress_creds_bound(const struct aj_egress_cred *c, size_t n, const char *host,
			   uint16_t port);

/* Rewrites h for host:port. used[i] is set for each credential that went out. Returns the
 * number of credentials used, or -1 if a credential's header format lacks its "{}" (the
 * policy lets none through). */
int aj_egress_creds_apply(struct aj_egress_cred *c, size_t n, const char *host, uint16_t port,
			  struct aj_http_head *h, bool *used);

/* Replaces every occurrence of `from` in s with `to` (malloc'd); NULL if s has none. Exposed
 * for the unit tests. */
char *aj_egress_replace_all(const char *s, const char *from, const char *to, size_t to_len);

#endif
