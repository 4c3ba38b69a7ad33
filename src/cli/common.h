/* Pieces shared by the verbs: rows that give the shared options (args.h, aj_cli_options) a
 * verb's own help text, error printing with the documented exit codes, the CLI's own messages
 * by log level, and opening the manager. */
#ifndef AJ_CLI_COMMON_H
#define AJ_CLI_COMMON_H

#include <jansson.h>
#include <stdbool.h>

#include "cli/args.h"
#include "common/err.h"
#include "common/exitcode.h"
#include "manager/manager.h"

/* Rows of a verb that give a shared option a help text of its own (run's --state-dir). */
#define AJ_G(field) .to = AJ_TO_GLOBAL, .off = offsetof(struct aj_cli, field)
#define AJ_OPTION_STATE_DIR(h)                                                              \
	{AJ_OPT("state-dir", 0, AJ_OPT_STRING), AJ_G(state_dir), .metavar = "DIR",             \
	 .complete = AJ_COMP_DIR, .help = (h)}
#define AJ_OPTION_JSON(h) {AJ_OPT("json", 0, AJ_OPT_SWITCH), AJ_G(json), .help = (h)}

/* Opens the state directory (--state-dir, else AGENTJAIL_STATE_DIR, else the default). */
int aj_cli_open(struct aj_mgr *m, struct aj_err *err);
/* The state directory's path into buf; -1 when there is none (no HOME and none given). */
int aj_cli_state_path(char *buf, size_t len);
/* Prints err (to stderr, or as JSON to stdout when json) and returns the exit code. */
int aj_cli_fail(bool json, const struct aj_err *err);
void aj_cli_print_json(json_t *j); /* consumes j */
/* "agentjail: MESSAGE" on stderr when the log level is at least `level`. */
void aj_cli_log(enum aj_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
json_t *aj_cli_sandbox_json(const struct aj_sandbox_rec *r);

#endif
