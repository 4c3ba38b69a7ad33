/* gVisor's runsc, the runtime of the gvisor tier (docs/gvisor.md): where it is, whether it
 * can run here, its version. Finding it is cheap (the environment and a stat per PATH entry)
 * and runs at every launch; its version costs a fork and an exec and is read only for
 * `agentjail features`. Nothing here changes the host. The struct owns nothing.
 */
#ifndef AJ_HOST_RUNSC_H
#define AJ_HOST_RUNSC_H

#include <stdbool.h>

/* The platform the tier runs the Sentry on: ptrace needs nothing but the kernel's ptrace, and
 * this tier does not use KVM. */
#define AJ_RUNSC_PLATFORM "ptrace"
/* The environment variable naming runsc (an absolute path); without it, PATH is searched. */
#define AJ_RUNSC_ENV "AGENTJAIL_RUNSC"

struct aj_runsc {
	bool searched;   /* aj_runsc_find() ran: what follows says what it found */
	bool found;      /* path names an executable regular file */
	bool usable;     /* found, and the kernel lets it trace its own children */
	char path[512];  /* absolute */
	char from[24];   /* "AGENTJAIL_RUNSC" or "PATH" */
	char why[256];   /* not found or not usable: why, with the remedy */
	char version[64]; /* aj_runsc_probe_version(): "0.0~20221219.0", or "" */
};

/* Finds runsc (AGENTJAIL_RUNSC, else PATH) and checks that ptrace is not forbidden
 * (kernel.yama.ptrace_scope 3 would stop the ptrace platform). */
void aj_runsc_find(struct aj_runsc *r);
/* `runsc --version`, first line's version (forks; a few milliseconds). */
void aj_runsc_probe_version(struct aj_runsc *r);

#endif
