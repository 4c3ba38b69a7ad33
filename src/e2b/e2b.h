/* The E2B-compatible API of `agentjail serve --e2b-listen` (docs/e2b.md; the wire protocol in
 * docs/e2b-protocol.md): the official E2B SDKs, pointed at the daemon with E2B_API_URL and
 * E2B_SANDBOX_URL, drive persistent sandboxes as if they were E2B's.
 *
 * It is a second HTTP front end of the daemon (src/server/): its requests become the server's
 * request objects, run their blocking parts on the server's worker pool and stream with the
 * server's backpressure; only the routing (by the E2b-Sandbox-Id/Port headers), the E2B
 * formats and the mapping onto sandboxes are this module's.
 *
 * Lifetime: the daemon creates it before the listeners exist and destroys it after the worker
 * pool has stopped and before the event base goes (it owns the CreateWatcher watchers'
 * events).
 */
#ifndef AJ_E2B_E2B_H
#define AJ_E2B_E2B_H

#include "server/frontend.h"

/* The front end for aj_srv_config.e2b: create loads the keys (--e2b-keys; refused without
 * them on a non-loopback address), the secret of the sandboxes' access tokens (made once, kept
 * in the state directory) and the templates; install makes the E2B router the request handler
 * of its listeners. */
extern const struct aj_srv_frontend aj_e2b_frontend;

#endif
