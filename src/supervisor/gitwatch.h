/* Removal of .git/commondir as soon as the sandbox makes one (see gitwatch.c). */
#ifndef AJ_SUPERVISOR_GITWATCH_H
#define AJ_SUPERVISOR_GITWATCH_H

#include <event2/event.h>

#include "common/err.h"
#include "common/warn.h"
#include "supervisor/events.h"

struct aj_gitwatch {
	int ifd;        /* inotify descriptor, -1 when not watching */
	int dirfd;      /* the git directory, opened once */
	struct event *ev;
	const char *git_dir;
	struct aj_events *events; /* where removals are reported */
	const struct aj_warn *warn; /* and told, the first time */
	unsigned removed;         /* how many times the file was removed */
};

#define AJ_GITWATCH_INIT {.ifd = -1, .dirfd = -1}

/* Starts watching git_dir for a "commondir" entry, before the sandbox starts, so that no
 * creation is missed; w must be AJ_GITWATCH_INIT. events and warn may be NULL. */
int aj_gitwatch_open(struct aj_gitwatch *w, const char *git_dir, struct aj_events *events,
		     const struct aj_warn *warn, struct aj_err *err);
/* Removes the file whenever it appears, from the event loop on. No-op if never opened. */
int aj_gitwatch_attach(struct aj_gitwatch *w, struct event_base *base, struct aj_err *err);
/* Stops watching; before the event base goes. */
void aj_gitwatch_unhook(struct aj_gitwatch *w);
/* Once every sandbox process is gone: removes a commondir made since the last event, and
 * releases the rest. Safe on a watch that never started (zeroed, ifd and dirfd -1). */
void aj_gitwatch_finish(struct aj_gitwatch *w);

#endif
