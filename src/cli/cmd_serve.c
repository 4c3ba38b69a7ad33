/* agentjail serve [--socket PATH] [--listen HOST:PORT --token-file FILE] [limits...]: the
 * HTTP API daemon (src/server/, docs/api.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "e2b/e2b.h"
#include "policy/policy.h"
#include "server/server.h"

struct serve_cli {
	struct aj_cli cli;
	struct aj_srv_config cfg;
};

static int size_opt(const char *name, const char *v, size_t *out, struct aj_err *err)
{
	char what[48];
	uint64_t n;

	snprintf(what, sizeof what, "--%s", name);
	if (aj_policy_parse_size(what, v, &n, err) < 0)
		return -1;
	if (n == 0 || n > (uint64_t)1 << 40)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: expected 1 byte to 1TiB", what);
	*out = (size_t)n;
	return 0;
}

/* zero_off: 0 turns the thing off (the periodic gc, for a host that runs gc from a timer). */
static int seconds_opt(const char *name, const char *v, bool zero_off, int *out,
		       struct aj_err *err)
{
	char what[48];
	uint64_t ms;

	snprintf(what, sizeof what, "--%s", name);
	if (aj_policy_parse_duration(what, v, &ms, err) < 0)
		return -1;
	if ((ms < 1000 && !(zero_off && ms == 0)) || ms > 86400000)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: expected %s1s to 24h", what,
				  zero_off ? "0 or " : "");
	*out = (int)(ms / 1000);
	return 0;
}

static int count_opt(const char *name, const char *v, unsigned min, unsigned max, unsigned *out,
		     struct aj_err *err)
{
	char what[48];
	uint64_t n;

	snprintf(what, sizeof what, "--%s", name);
	if (aj_policy_parse_count(what, v, &n, err) < 0)
		return -1;
	if (n < min || n > max)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s: expected %u to %u", what, min,
				  max);
	*out = (unsigned)n;
	return 0;
}

/* E2B caps a sandbox's timeout per plan (1 h, 24 h); here the operator picks, up to 30 days. */
static int max_timeout_opt(const char *v, int *out, struct aj_err *err)
{
	uint64_t ms;

	if (aj_policy_parse_duration("--e2b-max-timeout", v, &ms, err) < 0)
		return -1;
	if (ms < 1000 || ms > 30ull * 86400000)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "--e2b-max-timeout: expected 1s to 30d");
	*out = (int)(ms / 1000);
	return 0;
}

static int serve_opt(void *vctx, const char *name, const char *v, struct aj_err *err)
{
	struct aj_srv_config *c = &((struct serve_cli *)vctx)->cfg;

	if (!strcmp(name, "socket"))
		c->socket_path = v;
	else if (!strcmp(name, "listen"))
		aj_strv_push(&c->listen, v);
	else if (!strcmp(name, "token-file"))
		c->token_file = v;
	else if (!strcmp(name, "e2b-listen"))
		aj_strv_push(&c->e2b_listen, v);
	else if (!strcmp(name, "e2b-keys"))
		c->e2b_keys = v;
	else if (!strcmp(name, "e2b-templates"))
		c->e2b_templates = v;
	else if (!strcmp(name, "e2b-max-timeout"))
		return max_timeout_opt(v, &c->e2b_max_timeout_s, err);
	else if (!strcmp(name, "workers"))
		return count_opt(name, v, 1, 256, &c->workers, err);
	else if (!strcmp(name, "max-sandboxes"))
		return count_opt(name, v, 1, 1000000, &c->max_sandboxes, err);
	else if (!strcmp(name, "max-memory")) {
		size_t n = 0;
		if (size_opt(name, v, &n, err) < 0)
			return -1;
		c->max_memory = n;
	} else if (!strcmp(name, "max-body"))
		return size_opt(name, v, &c->max_body, err);
	else if (!strcmp(name, "max-upload"))
		return size_opt(name, v, &c->max_upload, err);
	else if (!strcmp(name, "max-download"))
		return size_opt(name, v, &c->max_download, err);
	else if (!strcmp(name, "read-timeout"))
		return seconds_opt(name, v, false, &c->read_timeout_s, err);
	else if (!strcmp(name, "keepalive"))
		return seconds_opt(name, v, false, &c->keepalive_s, err);
	else if (!strcmp(name, "shutdown-timeout"))
		return seconds_opt(name, v, false, &c->shutdown_timeout_s, err);
	else if (!strcmp(name, "gc-interval"))
		return seconds_opt(name, v, true, &c->gc_interval_s, err);
	else
		return aj_cli_set_common(vctx, name, v, err);
	return 0;
}

static const struct aj_option serve_options[] = {
	{"socket", 0, "PATH", serve_opt,
	 "unix socket (default /run/agentjail/api.sock, rootless $XDG_RUNTIME_DIR/agentjail/)"},
	{"listen", 0, "HOST:PORT", serve_opt, "also serve TCP, with bearer tokens (repeatable)"},
	{"token-file", 0, "FILE", serve_opt, "lines TOKEN OWNER for --listen (mode 0600)"},
	{"e2b-listen", 0, "HOST:PORT", serve_opt,
	 "also serve the E2B-compatible API (docs/e2b.md; repeatable)"},
	{"e2b-keys", 0, "FILE", serve_opt,
	 "lines API_KEY OWNER for --e2b-listen (mode 0600; without it: loopback only)"},
	{"e2b-templates", 0, "FILE", serve_opt,
	 "JSON object: E2B template name -> sandbox policy (default: \"base\" only)"},
	{"e2b-max-timeout", 0, "DURATION", serve_opt, "largest E2B sandbox timeout (24h)"},
	{"workers", 0, "N", serve_opt, "threads for manager calls (default 8)"},
	{"max-sandboxes", 0, "N", serve_opt, "per token owner: sandboxes at most"},
	{"max-memory", 0, "SIZE", serve_opt, "per token owner: sum of memory limits at most"},
	{"max-body", 0, "SIZE", serve_opt, "largest JSON request body (default 1MiB)"},
	{"max-upload", 0, "SIZE", serve_opt, "largest file upload (default 64MiB)"},
	{"max-download", 0, "SIZE", serve_opt, "largest file download (default 1GiB)"},
	{"read-timeout", 0, "DURATION", serve_opt, "close connections stalled this long (30s)"},
	{"keepalive", 0, "DURATION", serve_opt, "keepalive lines of event streams (15s)"},
	{"shutdown-timeout", 0, "DURATION", serve_opt, "SIGTERM: wait this long for requests (30s)"},
	{"gc-interval", 0, "DURATION", serve_opt,
	 "run gc (retention, crash recovery) this often (60s; 0 never)"},
	AJ_CLI_COMMON_OPTIONS,
	{NULL, 0, NULL, NULL, NULL},
};

int aj_cmd_serve(int argc, char **argv)
{
	struct serve_cli c;
	struct aj_err err;
	const char *env = getenv("AGENTJAIL_STATE_DIR");
	int pos = 1, rc = 0;

	memset(&c, 0, sizeof c);
	aj_srv_config_init(&c.cfg);
	c.cfg.e2b = &aj_e2b_frontend;
	c.cfg.version = AJ_VERSION;
	if (aj_args_parse(serve_options, &c, argc, argv, &pos, &err) < 0)
		goto fail;
	if (c.cli.help) {
		aj_args_usage(stdout, "agentjail serve [OPTIONS]",
			      "Serve the HTTP API (docs/api.md) until SIGTERM; sandboxes keep "
			      "running when it stops.",
			      serve_options);
		goto out;
	}
	if (pos < argc) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "serve: unexpected argument \"%s\"", argv[pos]);
		goto fail;
	}
	c.cfg.state_dir = c.cli.state_dir ? c.cli.state_dir : (env && *env ? env : NULL);
	if (aj_srv_run(&c.cfg, &err) == 0)
		goto out;
fail:
	rc = aj_cli_fail(&c.cli, &err);
out:
	aj_strv_free(&c.cfg.listen);
	aj_strv_free(&c.cfg.e2b_listen);
	return rc;
}
