/* Pieces shared by the sandbox verbs: the options every one takes (--state-dir, --json,
 * --help), error printing with the documented exit codes, and opening the manager. */
#ifndef AJ_CLI_COMMON_H
#define AJ_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/args.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "manager/manager.h"

struct aj_pflags;

struct aj_cli {
	const char *state_dir;
	bool json, help;
	struct aj_pflags *pf; /* commands that take policy flags */
};

#define AJ_CLI_COMMON_OPTIONS                                                                \
	{"state-dir", 0, "DIR", aj_cli_set_common, "state directory (default: see docs/cli.md)"}, \
	{"json", 0, NULL, aj_cli_set_common, "machine-readable output"},                        \
	{"help", 'h', NULL, aj_cli_set_common, "show this help"}

/* Option callback for the common options; ctx must start with a struct aj_cli. */
int aj_cli_set_common(void *ctx, const char *name, const char *value, struct aj_err *err);
int aj_cli_open(const struct aj_cli *c, struct aj_mgr *m, struct aj_err *err);
/* Prints err (to stderr, or as JSON to stdout with --json) and returns the exit code. */
int aj_cli_fail(const struct aj_cli *c, const struct aj_err *err);
void aj_cli_print_json(json_t *j); /* consumes j */
json_t *aj_cli_sandbox_json(const struct aj_sandbox_rec *r);

#endif
