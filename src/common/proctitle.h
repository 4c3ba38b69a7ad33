/* Rewriting what `ps` shows for a process (its argument area and comm), so that a sandbox's
 * init does not carry the caller's command line, host paths included, into the sandbox's
 * /proc. aj_proctitle_init() must be called from main() with the original argv. */
#ifndef AJ_COMMON_PROCTITLE_H
#define AJ_COMMON_PROCTITLE_H

void aj_proctitle_init(int argc, char **argv);
void aj_proctitle_set(const char *title);
/* clearenv(), and the original environment strings overwritten, so that /proc/PID/environ of
 * this process shows nothing of the caller's environment. */
void aj_proctitle_wipe_environment(void);
/* Moves the environment to the heap (environ keeps its values) and lets later titles use
 * the area of its strings too: for a process whose children take titles longer than its own
 * command line (serve's zygote names each supervisor it forks). */
void aj_proctitle_take_environment(void);

#endif
