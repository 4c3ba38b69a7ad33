/* agentjail mcp [--state-dir DIR] NAME
 * agentjail mcp --create [--name N] [--from SNAPSHOT] [--rm] [policy flags...]
 *
 * An MCP server on stdin/stdout bound to one persistent sandbox (src/mcp/). stdout carries
 * protocol messages only: it is moved to a private descriptor first and fd 1 then points at
 * stderr, so that nothing else this process (or a library) prints can corrupt the stream. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/cleanup.h"
#include "cli/common.h"
#include "cli/config.h"
#include "cli/policy_flags.h"
#include "mcp/mcp.h"

struct mcp_cli {
	struct aj_pflags pf; /* first: the policy rows are recorded there */
	const char *name, *from;
	bool create, rm;
};

#define MC(field) .off = offsetof(struct mcp_cli, field)
static const struct aj_option mcp_options[] = {
	{AJ_OPT("create", 0, AJ_OPT_SWITCH), MC(create),
	 .help = "create a sandbox for this session (policy flags apply)"},
	{AJ_OPT("name", 'n', AJ_OPT_STRING), MC(name), .metavar = "NAME",
	 .help = "--create: name of the new sandbox (default: generated)"},
	{AJ_OPT("from", 0, AJ_OPT_STRING), MC(from), .metavar = "SNAPSHOT",
	 .complete = AJ_COMP_SNAPSHOT, .help = "--create: start from a snapshot's workspace"},
	{AJ_OPT("rm", 0, AJ_OPT_SWITCH), MC(rm),
	 .help = "--create: delete the sandbox when the session ends"},
	AJ_POLICY_FLAG_OPTIONS,
	AJ_OPT_END,
};
#undef MC

static int check_args(const struct mcp_cli *c, int argc, char **argv, int pos, struct aj_err *err)
{
	if (c->create && pos < argc)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "mcp: --create makes a new sandbox; drop \"%s\" or --create",
				  argv[pos]);
	if (!c->create && pos >= argc)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "mcp: name the sandbox to serve, or pass --create"),
		       aj_err_hint(err, "agentjail mcp NAME, or agentjail mcp --create --rm");
	if (!c->create && pos + 1 < argc)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "mcp: unexpected argument \"%s\"",
				  argv[pos + 1]);
	if (!c->create && (c->rm || c->name || c->from || c->pf.n_pending || c->pf.policy_file ||
			   c->pf.preset))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "mcp: --rm, --name, --from and policy flags go with --create; an "
				  "existing sandbox keeps its policy");
	return 0;
}

/* Keeps the protocol streams on private descriptors; fd 0 becomes /dev/null and fd 1 stderr. */
static int take_stdio(int *in, int *out, struct aj_err *err)
{
	int null;

	*in = fcntl(0, F_DUPFD_CLOEXEC, 3);
	*out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (*in < 0 || *out < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "mcp: duplicate stdin/stdout");
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "mcp: redirect stdin/stdout");
	close(null);
	return 0;
}

static int serve(struct mcp_cli *c, const char *ref, struct aj_err *err)
{
	_cleanup_policy_ struct aj_policy pol;
	struct aj_create_opts co = {0};
	struct aj_mcp_opts o = {.state_dir = aj_cli_state_dir(NULL), .ref = ref,
				.version = AJ_VERSION};
	_cleanup_close_ int in = -1, out = -1;

	aj_policy_init(&pol);
	if (c->create) {
		if (aj_pflags_load(&c->pf, &pol, err) < 0)
			return -1;
		co.name = c->name;
		co.policy = &pol;
		co.from_snapshot = c->from;
		co.start = true;
		o.create = &co;
		o.remove_on_exit = c->rm;
	}
	if (take_stdio(&in, &out, err) < 0)
		return -1;
	return aj_mcp_serve(&o, in, out, err);
}

static int cmd_mcp(const struct aj_verb *v, int argc, char **argv)
{
	static struct mcp_cli c;
	struct aj_err err;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (check_args(&c, nargs, args, 0, &err) < 0 ||
	    serve(&c, c.create ? NULL : args[0], &err) < 0)
		return aj_cli_fail(false, &err);
	return 0;
}

static const struct aj_arg mcp_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_mcp = {
	.name = "mcp",
	.fn = cmd_mcp,
	.summary = "serve MCP (shell and file tools) on stdio for one sandbox",
	.synopsis = "mcp [OPTIONS] NAME\nmcp --create [--rm] [OPTIONS]",
	.help = "Serve the Model Context Protocol on stdin/stdout: a shell, file tools and "
		"snapshots, all acting inside one persistent sandbox (docs/mcp.md).",
	.options = mcp_options,
	.args = mcp_args,
};
