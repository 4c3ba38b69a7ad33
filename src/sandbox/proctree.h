/* Killing a process tree that no pid namespace holds together (the landlock tier). Processes
 * that daemonise (double fork, setsid) are reparented to the nearest child subreaper among
 * their ancestors, so as long as an ancestor of the tree is a subreaper, every process of the
 * tree stays its descendant and can be found by walking /proc.
 */
#ifndef AJ_SANDBOX_PROCTREE_H
#define AJ_SANDBOX_PROCTREE_H

#include <sys/types.h>

/* SIGKILLs every descendant of `root` (never root itself) except `spare` (0: none), in rounds
 * until none is left alive or about five seconds have passed; reaps those that are root's
 * children (call it from root). Each process is signalled through a pidfd taken after it
 * was seen, and only if its parent is then still in the tree, so a recycled pid is never
 * hit. Returns how many processes were still alive when it gave up (0: the tree is gone). */
unsigned aj_proctree_kill(pid_t root, pid_t spare);

#endif
