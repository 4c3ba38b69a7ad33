/* agentjail build: an image from a Dockerfile, every RUN in a sandbox (docs/build.md). The
 * RUN steps' policy comes from the policy flags build shares with run (the file, limits,
 * network, layers); --allow-host opens the egress proxy to a host for them. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build/builder.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/config.h"
#include "cli/policy_flags.h"
#include "common/cleanup.h"
#include "image/store.h"
#include "manager/manager.h"

struct build_cli {
	struct aj_pflags pf; /* first: the engine records policy rows here */
	const char *file, *tag, *target, *authfile, *ca_file, *events;
	struct aj_strv build_args;
	bool no_cache, insecure, quiet;
};

#define BC(f) .off = offsetof(struct build_cli, f)
static const struct aj_option build_options[] = {
	{AJ_OPT("file", 'f', AJ_OPT_STRING), BC(file), .metavar = "FILE", .complete = AJ_COMP_FILE,
	 .help = "the Dockerfile (default: CONTEXT/Dockerfile)"},
	{AJ_OPT("tag", 't', AJ_OPT_STRING), BC(tag), .metavar = "NAME[:TAG]",
	 .help = "the image's name (default: none; its id is printed)"},
	{AJ_OPT("build-arg", 0, AJ_OPT_LIST), BC(build_args), .metavar = "NAME=VALUE",
	 .help = "a value for an ARG (repeatable)"},
	{AJ_OPT("target", 0, AJ_OPT_STRING), BC(target), .metavar = "STAGE",
	 .help = "the stage the image is (default: the last)"},
	{AJ_OPT("no-cache", 0, AJ_OPT_SWITCH), BC(no_cache), .help = "run every step again"},
	{AJ_OPT("insecure", 0, AJ_OPT_SWITCH), BC(insecure),
	 .help = "FROM images the store lacks: plain HTTP and unverified TLS for their registry"},
	{AJ_OPT("authfile", 0, AJ_OPT_STRING), BC(authfile), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "registry credentials for FROM images the store lacks"},
	{AJ_OPT("ca-file", 0, AJ_OPT_STRING), BC(ca_file), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "CA certificates for the registry's TLS"},
	{AJ_OPT("events", 0, AJ_OPT_STRING), BC(events), .metavar = "FILE",
	 .complete = AJ_COMP_FILE,
	 .help = "append JSON-lines events: the steps, and each RUN's sandbox events"},
	{AJ_OPT("quiet", 'q', AJ_OPT_SWITCH), BC(quiet),
	 .help = "print only the image id (steps' output still goes to stderr)"},
	AJ_PF_FILE_ROWS,
	AJ_PF_LIMIT_ROWS,
	AJ_PF_NET_ROWS,
	AJ_PF_LAYER_ROWS,
	AJ_OPTION_STATE_DIR("the state directory whose image store gets the image"),
	AJ_OPTION_JSON("print the image as JSON"),
	AJ_OPT_END,
};
#undef BC

/* Hosts --allow-host names by address (a loopback or private registry, a test server) are
 * reached only if the proxy's private-address guard lets them: naming one is that consent. */
static void allow_named_addresses(struct aj_policy *pol)
{
	for (size_t i = 0; i < pol->net_allow.n; i++) {
		char host[256];
		const char *h = pol->net_allow.v[i], *end;

		if (h[0] == '[') {
			end = strchr(h, ']');
			if (!end)
				continue;
			snprintf(host, sizeof host, "%.*s", (int)(end - h - 1), h + 1);
		} else {
			end = strchr(h, ':');
			snprintf(host, sizeof host, "%.*s", end ? (int)(end - h) : (int)strlen(h), h);
		}
		if (strspn(host, "0123456789.") == strlen(host) || strchr(host, ':'))
			if (!aj_strv_contains(&pol->net_allow_private, host))
				aj_strv_push(&pol->net_allow_private, host);
	}
}

static int cmd_build(const struct aj_verb *v, int argc, char **argv)
{
	static struct build_cli c;
	_cleanup_policy_ struct aj_policy pol;
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	struct aj_mgr m;
	struct aj_images im = {.layers_dir = -1, .lock_fd = -1, .blobs = {.dir = -1}};
	struct aj_err err;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	aj_policy_init(&pol);
	memset(&c, 0, sizeof c);
	if ((r = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 1) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "build: %s the build context (CONTEXT)",
			   nargs ? "one argument expected:" : "missing");
		aj_err_hint(&err, "agentjail build [-f Dockerfile] [-t NAME[:TAG]] CONTEXT");
		return aj_cli_fail(aj_cli.json, &err);
	}
	for (size_t i = 0; i < c.build_args.n; i++)
		if (!strchr(c.build_args.v[i], '=') || c.build_args.v[i][0] == '=') {
			aj_err_set(&err, AJ_LAYER_USAGE, 0, "--build-arg \"%s\": expected NAME=VALUE",
				   c.build_args.v[i]);
			return aj_cli_fail(aj_cli.json, &err);
		}
	if (aj_pflags_load(&c.pf, &pol, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	allow_named_addresses(&pol);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	r = aj_images_open(m.state, m.store, &im, &err);
	if (r == 0) {
		struct aj_pull_opts po = {
			.registry = {.authfile = c.authfile,
				     .insecure = c.insecure,
				     .ca_file = c.ca_file,
				     .mirror = aj_cli_config()->registry_mirror,
				     .progress = c.quiet ? NULL : stderr,
				     .progress_tty = isatty(2)},
			.owner = "",
		};
		struct aj_build_opts o = {
			.context = args[0],
			.file = c.file,
			.tag = c.tag,
			.target = c.target,
			.build_args = &c.build_args,
			.no_cache = c.no_cache,
			.policy = &pol,
			.pull = &po,
			.out = c.quiet || aj_cli.json ? stderr : stdout,
			/* both: the window takes the steps' stderr too */
			.tty = isatty(1) == 1 && isatty(2) == 1,
			.events_path = c.events,
		};
		r = aj_build(&im, &o, &rec, &err);
	}
	aj_images_close(&im);
	aj_mgr_close(&m);
	aj_strv_free(&c.build_args);
	if (r < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:s, s:s?}", "id", rec.digest, "name", c.tag));
	else if (c.quiet)
		printf("%s\n", rec.digest);
	else
		printf("built %s%s%s\n", rec.digest, c.tag ? ", named " : "", c.tag ? c.tag : "");
	return 0;
}

static const struct aj_arg build_args[] = {AJ_ARG("CONTEXT", AJ_COMP_DIR), AJ_ARG_END};
const struct aj_verb aj_verb_build = {
	.name = "build",
	.fn = cmd_build,
	.summary = "build an image from a Dockerfile, each RUN in a sandbox",
	.synopsis = "build [-f FILE] [-t NAME[:TAG]] [--build-arg NAME=VALUE]... "
		    "[--allow-host HOST[:PORT]]... [--policy FILE] [--no-cache] CONTEXT",
	.help = "Build an image from the Dockerfile in CONTEXT (docs/build.md): every RUN runs in a "
		"sandbox with the build policy (network none unless --allow-host), COPY and ADD "
		"take files from CONTEXT, and the image goes into the store.",
	.options = build_options,
	.args = build_args,
};
