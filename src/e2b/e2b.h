/* The E2B-compatible API of `agentjail serve --e2b-listen` (docs/e2b.md; the wire protocol in
 * docs/e2b-protocol.md): the official E2B SDKs, pointed at the daemon with E2B_API_URL and
 * E2B_SANDBOX_URL, drive persistent sandboxes as if they were E2B's.
 *
 * It is a second HTTP front end of the daemon (src/server/): its requests become the server's
 * request objects, run their blocking parts on the server's worker pool and stream with the
 * server's backpressure; only the routing (by the E2b-Sandbox-Id/Port headers), the E2B
 * formats and the mapping onto sandboxes are this module's.
 *
 * Lifetime: aj_e2b_new() before the listeners exist, aj_e2b_free() after the worker pool has
 * stopped and before the event base goes (it owns the CreateWatcher watchers' events).
 */
#ifndef AJ_E2B_E2B_H
#define AJ_E2B_E2B_H

#include <event2/http.h>

#include "common/err.h"

struct srv;
struct aj_e2b;

/* Keys (--e2b-keys; refused without them on a non-loopback address), the secret of the
 * sandboxes' access tokens (made once, kept in the state directory) and templates. */
int aj_e2b_new(struct srv *s, struct aj_e2b **out, struct aj_err *err);
void aj_e2b_free(struct aj_e2b *e);
/* Makes the E2B router the request handler of http. */
void aj_e2b_install(struct srv *s, struct evhttp *http);

#endif
