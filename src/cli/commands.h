/* One entry point per subcommand (one file each). Each returns the process exit code. */
#ifndef AJ_CLI_COMMANDS_H
#define AJ_CLI_COMMANDS_H

#include <stdbool.h>

#include "common/version.h"
#include "oci/oci.h" /* aj_cmd_oci(), aj_oci_invoked_as_runc() */

int aj_cmd_run(int argc, char **argv);
int aj_cmd_features(int argc, char **argv);
int aj_cmd_version(int argc, char **argv);
int aj_cmd_changes(int argc, char **argv);
int aj_cmd_create(int argc, char **argv);
int aj_cmd_start(int argc, char **argv);
int aj_cmd_stop(int argc, char **argv);
int aj_cmd_pause(int argc, char **argv);
int aj_cmd_resume(int argc, char **argv);
int aj_cmd_rm(int argc, char **argv);
int aj_cmd_ls(int argc, char **argv);
int aj_cmd_inspect(int argc, char **argv);
int aj_cmd_supervise(int argc, char **argv);
int aj_cmd_exec(int argc, char **argv);
int aj_cmd_snapshot(int argc, char **argv);
int aj_cmd_snapshots(int argc, char **argv);
int aj_cmd_fork(int argc, char **argv);
int aj_cmd_diff(int argc, char **argv);
int aj_cmd_cp(int argc, char **argv);
int aj_cmd_events(int argc, char **argv);
int aj_cmd_gc(int argc, char **argv);
int aj_cmd_restore(int argc, char **argv);
int aj_cmd_mcp(int argc, char **argv);
int aj_cmd_serve(int argc, char **argv);
int aj_cmd_policy(int argc, char **argv);

#endif
