/* The exit codes agentjail itself gives (docs/cli.md), in one place for every front end: a
 * command's own code passes through; these mean agentjail ended the command, could not run
 * it, or refused the request. Nothing to free.
 */
#ifndef AJ_COMMON_EXITCODE_H
#define AJ_COMMON_EXITCODE_H

/* A command ended by a limit, or that could not run. When several limits were hit, the first
 * in this list decides. */
#define AJ_EXIT_TIMEOUT 124
#define AJ_EXIT_MEMORY 122
#define AJ_EXIT_OUTPUT 123
#define AJ_EXIT_PIDS 121
#define AJ_EXIT_ERROR 125    /* agentjail's own error: usage, policy, setup */
#define AJ_EXIT_NOEXEC 126   /* found, but not executable (or no working directory) */
#define AJ_EXIT_NOTFOUND 127 /* the command was not found */

/* The sandbox verbs (create, start, rm, ...). */
#define AJ_EXIT_NOTFOUND_OBJ 1 /* no such sandbox or snapshot */
#define AJ_EXIT_STATE 3        /* wrong state for the verb, or in use */
#define AJ_EXIT_EXISTS 4       /* the name is taken */

#endif
