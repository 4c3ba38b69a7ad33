/* One entry point per subcommand (one file each). Each returns the process exit code. */
#ifndef AJ_CLI_COMMANDS_H
#define AJ_CLI_COMMANDS_H

int aj_cmd_run(int argc, char **argv);
int aj_cmd_features(int argc, char **argv);
int aj_cmd_version(int argc, char **argv);
int aj_cmd_changes(int argc, char **argv);

#define AJ_VERSION "0.1.0"

#endif
