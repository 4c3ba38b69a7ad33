/* The egress proxy of network.mode "proxy" (docs/policy.md, "The egress proxy"). It runs in
 * the sandbox's supervisor, outside the sandbox, on the supervisor's libevent loop, and accepts
 * on a socket the sandbox's child made inside the sandbox's network namespace (src/sandbox/
 * launch.c, step 5b): it is the sandbox's only way out.
 *
 * It speaks HTTP/1.1 (absolute-URI requests, keep-alive, chunked bodies), CONNECT and SOCKS5
 * CONNECT; decides every request by the policy's rules (rules.c), resolves names itself and
 * connects only to addresses it checked (addr.c); terminates TLS for hosts a credential is
 * bound to and puts the secret where the sandbox put its placeholder (creds.c, tls.c); and
 * reports every decision as an event.
 *
 * Life cycle, all in the supervisor:
 *   aj_egress_new()   before the sandbox starts: reads the secrets and makes the CA, whose
 *                     files aj_egress_ca_files() gives for the sandbox's /etc;
 *   aj_egress_start() once the loop exists and the child passed the listening socket;
 *   aj_egress_stop()  closes every connection (their events are emitted) and the listener;
 *   aj_egress_free()  releases what is left. The proxy owns the listening socket it gets.
 * Module files: proxy.c (this API, accepting, limits, events), conn.c (a connection's life,
 * relaying), upstream.c (resolve, check, connect), fwd.c (HTTP), socks.c, splice.c (blind
 * tunnels relayed in the kernel), tls.c/ca.c, creds.c, rules.c, addr.c, http.c.
 */
#ifndef AJ_EGRESS_EGRESS_H
#define AJ_EGRESS_EGRESS_H

#include <event2/event.h>
#include <jansson.h>
#include <stdint.h>

#include "common/err.h"
#include "policy/plan.h"

struct aj_egress;

/* Counters for the one-shot --report. */
struct aj_egress_stats {
	uint64_t connections; /* accepted from the sandbox */
	uint64_t allowed;     /* requests and tunnels allowed */
	uint64_t denied;      /* refused by a rule, the address guard or a limit */
	uint64_t failed;      /* allowed, but name resolution, connect or TLS failed */
	uint64_t bytes_up;    /* sandbox -> internet, payload through the proxy */
	uint64_t bytes_down;
	uint64_t credentials; /* requests that carried a secret */
	uint64_t intercepted; /* TLS sessions terminated for credential injection */
	uint64_t peak_connections;
};

/* Receives every event: "egress" (a decision and its traffic) and "limit". fields is
 * consumed. */
typedef void (*aj_egress_emit_fn)(void *arg, const char *event, json_t *fields);

/* Environment for tests and special setups, read when the proxy starts (docs/policy.md):
 *   AGENTJAIL_EGRESS_RESOLV_CONF  resolv.conf the proxy uses instead of /etc/resolv.conf
 *   AGENTJAIL_EGRESS_HOSTS        hosts file the proxy consults instead of /etc/hosts */
int aj_egress_new(struct aj_plan *plan, struct aj_egress **out, struct aj_err *err);
/* With credentials: the CA bundle the sandbox trusts (the host's CAs and the sandbox's CA) and
 * the sandbox's CA alone, as PEM the caller frees. Both NULL without credentials. */
int aj_egress_ca_files(const struct aj_egress *eg, char **bundle, size_t *bundle_len, char **ca,
		       size_t *ca_len, struct aj_err *err);
int aj_egress_start(struct aj_egress *eg, struct event_base *base, int listen_fd,
		    aj_egress_emit_fn emit, void *arg, struct aj_err *err);
/* The policy's network.allow and network.deny changed (the plan's policy holds the new
 * lists): the rules are replaced at once, and every connection whose target they no longer
 * allow (an open tunnel, a request in flight, a kept-alive upstream) is closed, each with an
 * "egress" event (decision "closed"). *closed counts them. On error nothing changed. */
int aj_egress_update(struct aj_egress *eg, unsigned *closed, struct aj_err *err);
void aj_egress_get_stats(const struct aj_egress *eg, struct aj_egress_stats *out);
void aj_egress_stop(struct aj_egress *eg);
void aj_egress_free(struct aj_egress *eg);

json_t *aj_egress_stats_json(const struct aj_egress_stats *s);

#endif
