/* Pieces shared by the sandbox verbs: the options every one takes (--state-dir, --json,
 * --help, rows into the process-wide struct aj_cli), error printing with the documented exit
 * codes, and opening the manager. */
#ifndef AJ_CLI_COMMON_H
#define AJ_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/args.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "manager/manager.h"

#define AJ_G(field) .to = AJ_TO_GLOBAL, .off = offsetof(struct aj_cli, field)
#define AJ_OPTION_STATE_DIR(h)                                                              \
	{AJ_OPT("state-dir", 0, AJ_OPT_STRING), AJ_G(state_dir), .metavar = "DIR",             \
	 .complete = AJ_COMP_DIR, .help = (h)}
#define AJ_OPTION_JSON(h) {AJ_OPT("json", 0, AJ_OPT_SWITCH), AJ_G(json), .help = (h)}
#define AJ_OPTION_HELP {AJ_OPT("help", 'h', AJ_OPT_SWITCH), AJ_G(help), .help = "show this help"}
#define AJ_CLI_COMMON_OPTIONS                                                               \
	AJ_OPTION_STATE_DIR("state directory (default: see docs/cli.md)"),                     \
		AJ_OPTION_JSON("machine-readable output"), AJ_OPTION_HELP

/* Opens the state directory (--state-dir, else AGENTJAIL_STATE_DIR, else the default). */
int aj_cli_open(struct aj_mgr *m, struct aj_err *err);
/* Prints err (to stderr, or as JSON to stdout when json) and returns the exit code. */
int aj_cli_fail(bool json, const struct aj_err *err);
void aj_cli_print_json(json_t *j); /* consumes j */
json_t *aj_cli_sandbox_json(const struct aj_sandbox_rec *r);

#endif
