/* The user's configuration file: defaults for the command line (docs/cli.md, "Configuration
 * file"). One JSON object, read once per process before the verb's options, from
 * $AGENTJAIL_CONFIG if set (empty or "none": no file), else /etc/agentjail/config.json as
 * root, else $XDG_CONFIG_HOME/agentjail/config.json (~/.config/agentjail/config.json). A
 * file that is not there (or below a directory this user may not search) is no
 * configuration; one that is there but unreadable or malformed, an unknown field or a bad
 * value is an error naming the file and the field. The fields are one table (config.c); `agentjail config
 * show` prints what is in effect and where each value came from.
 *
 * Ownership: the process keeps the loaded configuration (static in config.c) until it ends;
 * accessors return borrowed pointers.
 */
#ifndef AJ_CLI_CONFIG_H
#define AJ_CLI_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct aj_cli_config {
	char path[4096]; /* the file read, or looked for; "" when AGENTJAIL_CONFIG turned it off */
	bool found;
	char why[128];   /* when not found: why ("not found", "Permission denied") */
	const char *state_dir; /* absolute */
	const char *policy;    /* a policy file, absolute (relative ones resolve against the
				* configuration file's directory) */
	const char *preset;
	json_t *limits;        /* the "limits" object of a policy; checked when loaded */
	const char *registry_mirror; /* accepted and shown; nothing uses it yet (images) */
	const char *log_level;       /* applied to aj_cli.log_level when loaded */
};

/* Loads the file (once); sets aj_cli.log_level from it. */
int aj_cli_config_load(struct aj_err *err);
const struct aj_cli_config *aj_cli_config(void);

/* The state directory: --state-dir, then AGENTJAIL_STATE_DIR, then the configuration file;
 * NULL for the default (aj_state_dir_default()). *source (if not NULL) says which: "command
 * line", "AGENTJAIL_STATE_DIR", the file's path or "default". */
const char *aj_cli_state_dir(const char **source);

#endif
