/* Confinement for agentjail's own helper processes that handle hostile input
 * outside any sandbox: unpacking an image layer writes only beneath one
 * directory, whatever the layer's paths say. The kernel holds that, not the
 * unpacker's path checks alone: no_new_privs, the capabilities the work needs
 * and no others, Landlock rights beneath the directory and nowhere else, and
 * the default seccomp profile.
 *
 * For a process made for this (it cannot be undone); nothing to free.
 */
#ifndef AJ_SANDBOX_CONFINE_H
#define AJ_SANDBOX_CONFINE_H

#include <stdint.h>

#include "common/err.h"

/* Capability bits (1 << CAP_x) a confined writer may keep. */
#define AJ_CONFINE_CAPS_UNPACK                                                                     \
	((1ULL << 0) /* CHOWN */ | (1ULL << 1) /* DAC_OVERRIDE */ | (1ULL << 3) /* FOWNER */ |     \
	 (1ULL << 4) /* FSETID */ | (1ULL << 27) /* MKNOD */)

/* Confines the calling process to writing beneath `dir` (and creating character
 * devices there: overlay whiteouts), with the capabilities in `keep` that it
 * has, no others, in the bounding set too. Descriptors already open stay
 * usable. */
int aj_confine_writer(const char *dir, uint64_t keep, struct aj_err *err);

#endif
