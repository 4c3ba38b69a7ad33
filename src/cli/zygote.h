/* serve's zygote (cmd_zygote.c): the process that forks the daemon's supervisors. */
#ifndef AJ_CLI_ZYGOTE_H
#define AJ_CLI_ZYGOTE_H

#include "common/err.h"

/* Starts `agentjail __zygote` for state_dir (fork and exec; call it before any thread
 * exists) and returns the daemon's end of its socket, for aj_mgr_set_zygote(); -1 with err
 * set. */
int aj_zygote_start(const char *state_dir, struct aj_err *err);

#endif
