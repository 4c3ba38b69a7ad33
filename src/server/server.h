/* `agentjail serve`: the HTTP API daemon (docs/api.md, docs/openapi.json).
 *
 * One evented thread runs libevent's evhttp on a unix socket (the local owner "", the same
 * owner the CLI uses) and optionally on TCP listeners (bearer tokens, one owner per token).
 * Manager calls, which may block for seconds (supervisor start, stop, snapshot copies, file
 * operations through a sandbox's init), run on a small pool of worker threads, each with its
 * own manager and state-store connection; results are posted back to the event loop. The
 * daemon never sets up a sandbox itself: the manager starts supervisors, separate processes
 * that outlive it, so a crash or restart of the daemon loses no sandbox.
 *
 * Only this module knows HTTP (docs/architecture.md, module rules).
 */
#ifndef AJ_SERVER_SERVER_H
#define AJ_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strv.h"

struct aj_srv_frontend; /* server/frontend.h */

struct aj_srv_config {
	const char *version;       /* reported by GET /v1/version */
	const char *state_dir;     /* NULL: the default state directory */
	const char *socket_path;   /* NULL: the default (root: /run/agentjail/api.sock) */
	struct aj_strv listen;     /* "HOST:PORT" TCP listeners */
	const char *token_file;    /* required with listen */
	unsigned workers;          /* worker threads */
	size_t max_body;           /* JSON request bodies */
	size_t max_upload;         /* file uploads (PUT .../files) */
	size_t max_download;       /* file downloads are streamed; this caps their size */
	unsigned max_sandboxes;    /* per token owner; 0: no quota */
	uint64_t max_memory;       /* per token owner, bytes; 0: no quota */
	unsigned max_volumes;      /* per token owner; 0: no quota */
	uint64_t max_volume_bytes; /* per token owner, the sum of volume sizes; 0: no quota */
	unsigned max_snapshots;    /* per token owner; 0: no quota */
	uint64_t max_disk;         /* per token owner, the sum of sandboxes' disk limits, volume
				    * sizes and snapshot sizes; 0: no quota */
	int read_timeout_s;        /* a connection idle or stalled this long is closed */
	int keepalive_s;           /* keepalive lines of streamed responses */
	int shutdown_timeout_s;    /* SIGTERM: longest wait for requests in flight */
	int gc_interval_s;         /* agentjail gc this often; 0 never */
	/* The E2B-compatible API (src/e2b/, docs/e2b.md), a front end of its own. */
	const struct aj_srv_frontend *e2b; /* needed with e2b_listen */
	struct aj_strv e2b_listen;    /* "HOST:PORT" listeners */
	const char *e2b_keys;         /* "KEY OWNER" lines; NULL: loopback only, any key */
	const char *e2b_templates;    /* template name -> policy (JSON); NULL: "base" only */
	int e2b_max_timeout_s;        /* the largest sandbox timeout a client may ask for */
	/* Warm pools (warm.c): "SPEC=N" each, SPEC a preset, a policy file, an image
	 * ("image:REF") or a front end's template ("e2b:NAME"). */
	struct aj_strv warm_pools;
	/* Preview URLs (preview.c): PORT-SANDBOX.DOMAIN on this listener. */
	const char *preview_listen;   /* "HOST:PORT", or NULL */
	const char *preview_domain;   /* needed with preview_listen */
	/* The web console (console.c) for the local owner on a loopback-only listener; its
	 * token is made at start and written to <state>/console.json. */
	const char *console_listen;   /* "127.0.0.1:PORT", or NULL */
};

/* Defaults for every field but version. */
void aj_srv_config_init(struct aj_srv_config *c);

/* The default socket path for this user into buf; -1 with err when there is none (rootless
 * without XDG_RUNTIME_DIR). */
int aj_srv_default_socket(char *buf, size_t len, struct aj_err *err);

/* Runs the daemon until SIGTERM or SIGINT; 0 after a clean shutdown. */
int aj_srv_run(const struct aj_srv_config *c, struct aj_err *err);

#endif
