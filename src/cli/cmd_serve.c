/* agentjail serve [--socket PATH] [--listen HOST:PORT --token-file FILE] [limits...]: the
 * HTTP API daemon (src/server/, docs/api.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/config.h"
#include "cli/zygote.h"
#include "common/openssl.h"
#include "e2b/e2b.h"
#include "manager/manager.h"
#include "policy/policy.h"
#include "server/server.h"
#include "state/store.h"

struct serve_cli {
	struct aj_srv_config cfg;
};

#define SRV(field) .off = offsetof(struct serve_cli, cfg.field)
/* Sizes are 1 byte to 1 TiB; durations 1s to 24h, stored in seconds. */
#define SIZE_RANGE .min = 1, .max = (uint64_t)1 << 40
#define SECONDS .min = 1000, .max = 86400000, .scale = 1000, .store = AJ_STORE_INT
static const struct aj_option serve_options[] = {
	{AJ_OPT("socket", 0, AJ_OPT_STRING), SRV(socket_path), .metavar = "PATH",
	 .complete = AJ_COMP_FILE,
	 .help = "unix socket (default /run/agentjail/api.sock, rootless $XDG_RUNTIME_DIR/agentjail/)"},
	{AJ_OPT("listen", 0, AJ_OPT_LIST), SRV(listen), .metavar = "HOST:PORT",
	 .help = "also serve TCP, with bearer tokens (repeatable)"},
	{AJ_OPT("token-file", 0, AJ_OPT_STRING), SRV(token_file), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "lines TOKEN OWNER for --listen (mode 0600)"},
	{AJ_OPT("e2b-listen", 0, AJ_OPT_LIST), SRV(e2b_listen), .metavar = "HOST:PORT",
	 .help = "also serve the E2B-compatible API (docs/e2b.md; repeatable)"},
	{AJ_OPT("e2b-keys", 0, AJ_OPT_STRING), SRV(e2b_keys), .metavar = "FILE",
	 .complete = AJ_COMP_FILE,
	 .help = "lines API_KEY OWNER for --e2b-listen (mode 0600; without it: loopback only)"},
	{AJ_OPT("e2b-templates", 0, AJ_OPT_STRING), SRV(e2b_templates), .metavar = "FILE",
	 .complete = AJ_COMP_FILE,
	 .help = "JSON object: E2B template name -> sandbox policy (default: \"base\" only)"},
	/* E2B caps a sandbox's timeout per plan (1 h, 24 h); here the operator picks, up to 30
	 * days. */
	{AJ_OPT("e2b-max-timeout", 0, AJ_OPT_DURATION), SRV(e2b_max_timeout_s),
	 .metavar = "DURATION", .min = 1000, .max = 30ull * 86400000, .scale = 1000,
	 .store = AJ_STORE_INT, .help = "largest E2B sandbox timeout (24h)"},
	{AJ_OPT("warm-pool", 0, AJ_OPT_LIST), SRV(warm_pools), .metavar = "SPEC=N",
	 .help = "keep N started sandboxes ready for creates with SPEC's policy: a preset, a "
		 "policy file, image:REF or e2b:TEMPLATE (repeatable)"},
	{AJ_OPT("preview-listen", 0, AJ_OPT_STRING), SRV(preview_listen), .metavar = "HOST:PORT",
	 .help = "serve preview URLs PORT-SANDBOX.DOMAIN here (with --preview-domain)"},
	{AJ_OPT("preview-domain", 0, AJ_OPT_STRING), SRV(preview_domain), .metavar = "DOMAIN",
	 .help = "the domain of preview URLs: *.DOMAIN must resolve to --preview-listen"},
	{AJ_OPT("console-listen", 0, AJ_OPT_STRING), SRV(console_listen), .metavar = "HOST:PORT",
	 .help = "serve the web console for the local owner here (loopback only; port 0: any)"},
	{AJ_OPT("workers", 0, AJ_OPT_COUNT), SRV(workers), .metavar = "N", .min = 1, .max = 256,
	 .store = AJ_STORE_UINT, .help = "threads for manager calls (default 8)"},
	{AJ_OPT("max-sandboxes", 0, AJ_OPT_COUNT), SRV(max_sandboxes), .metavar = "N", .min = 1,
	 .max = 1000000, .store = AJ_STORE_UINT, .help = "per token owner: sandboxes at most"},
	{AJ_OPT("max-memory", 0, AJ_OPT_SIZE), SRV(max_memory), .metavar = "SIZE", SIZE_RANGE,
	 .help = "per token owner: sum of memory limits at most"},
	{AJ_OPT("max-volumes", 0, AJ_OPT_COUNT), SRV(max_volumes), .metavar = "N", .min = 1,
	 .max = 1000000, .store = AJ_STORE_UINT, .help = "per token owner: volumes at most"},
	{AJ_OPT("max-volume-bytes", 0, AJ_OPT_SIZE), SRV(max_volume_bytes), .metavar = "SIZE",
	 SIZE_RANGE, .help = "per token owner: sum of volume sizes at most (each needs one)"},
	{AJ_OPT("max-snapshots", 0, AJ_OPT_COUNT), SRV(max_snapshots), .metavar = "N", .min = 1,
	 .max = 1000000, .store = AJ_STORE_UINT, .help = "per token owner: snapshots at most"},
	{AJ_OPT("max-disk", 0, AJ_OPT_SIZE), SRV(max_disk), .metavar = "SIZE", SIZE_RANGE,
	 .help = "per token owner: disk limits, volume and snapshot sizes at most"},
	{AJ_OPT("max-body", 0, AJ_OPT_SIZE), SRV(max_body), .metavar = "SIZE", SIZE_RANGE,
	 .store = AJ_STORE_SIZE, .help = "largest JSON request body (default 1MiB)"},
	{AJ_OPT("max-upload", 0, AJ_OPT_SIZE), SRV(max_upload), .metavar = "SIZE", SIZE_RANGE,
	 .store = AJ_STORE_SIZE, .help = "largest file upload (default 64MiB)"},
	{AJ_OPT("max-download", 0, AJ_OPT_SIZE), SRV(max_download), .metavar = "SIZE", SIZE_RANGE,
	 .store = AJ_STORE_SIZE, .help = "largest file download (default 1GiB)"},
	{AJ_OPT("read-timeout", 0, AJ_OPT_DURATION), SRV(read_timeout_s), .metavar = "DURATION",
	 SECONDS, .help = "close connections stalled this long (30s)"},
	{AJ_OPT("keepalive", 0, AJ_OPT_DURATION), SRV(keepalive_s), .metavar = "DURATION", SECONDS,
	 .help = "keepalive lines of event streams (15s)"},
	{AJ_OPT("shutdown-timeout", 0, AJ_OPT_DURATION), SRV(shutdown_timeout_s),
	 .metavar = "DURATION", SECONDS, .help = "SIGTERM: wait this long for requests (30s)"},
	/* 0 turns the periodic gc off, for a host that runs gc from a timer. */
	{AJ_OPT("gc-interval", 0, AJ_OPT_DURATION), SRV(gc_interval_s), .metavar = "DURATION",
	 SECONDS, .flags = AJ_OPTF_ZERO_OK,
	 .help = "run gc (retention, crash recovery) this often (60s; 0 never)"},
	AJ_OPT_END,
};
#undef SRV
#undef SIZE_RANGE
#undef SECONDS

/* The supervisors of the daemon's sandboxes are forked by the zygote (cmd_zygote.c), which
 * must be started before the daemon makes its first thread. Without it they are forked and
 * exec'd as by the CLI: slower and each with its own copy of the relocated binary, but the
 * same supervisors, so a failure here only warns. */
static void start_zygote(const char *state_dir)
{
	char dir[4096];
	struct aj_err err;
	int fd;

	if (!state_dir && aj_state_dir_default(dir, sizeof dir) == 0)
		state_dir = dir;
	fd = state_dir ? aj_zygote_start(state_dir, &err) : -1;
	if (fd >= 0)
		aj_mgr_set_zygote(fd);
	else if (state_dir)
		aj_cli_log(AJ_LOG_WARN, "%s (supervisors are started without the zygote)", err.msg);
}

static int cmd_serve(const struct aj_verb *v, int argc, char **argv)
{
	struct serve_cli c;
	struct aj_err err;
	char **args;
	int nargs, rc = 0;

	memset(&c, 0, sizeof c);
	aj_srv_config_init(&c.cfg);
	c.cfg.e2b = &aj_e2b_frontend;
	c.cfg.version = AJ_VERSION;
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) == 0 && nargs > 0)
		rc = aj_err_set(&err, AJ_LAYER_USAGE, 0, "serve: unexpected argument \"%s\"",
				args[0]);
	/* The daemon's tokens, signed URLs and websockets need OpenSSL: a host without it is
	 * refused now, not at the first request. */
	if (rc == 0)
		rc = aj_openssl_load(&err);
	if (rc == 0) {
		c.cfg.state_dir = aj_cli_state_dir(NULL);
		start_zygote(c.cfg.state_dir);
		rc = aj_srv_run(&c.cfg, &err);
	}
	aj_strv_free(&c.cfg.listen);
	aj_strv_free(&c.cfg.e2b_listen);
	aj_strv_free(&c.cfg.warm_pools);
	return rc > 0 ? 0 : rc < 0 ? aj_cli_fail(aj_cli.json, &err) : 0;
}

const struct aj_verb aj_verb_serve = {
	.name = "serve",
	.fn = cmd_serve,
	.summary = "serve the HTTP API on a unix socket (and TCP with tokens)",
	.synopsis = "serve [OPTIONS]",
	.help = "Serve the HTTP API (docs/api.md) until SIGTERM; sandboxes keep running when it "
		"stops.",
	.options = serve_options,
};
