/* The event log: one JSON object per line (time, sandbox, event, details). Opened by the
 * supervisor outside the sandbox; the sandbox never holds the descriptor. */
#ifndef AJ_SUPERVISOR_EVENTS_H
#define AJ_SUPERVISOR_EVENTS_H

#include <jansson.h>

#include "common/err.h"

struct aj_events {
	int fd; /* -1: events are dropped */
	char sandbox[40];
};

int aj_events_open(struct aj_events *ev, const char *path, const char *sandbox,
		   struct aj_err *err);
/* Adds "time", "sandbox" and "event" to `fields` (consumed; may be NULL) and appends it. */
void aj_events_emit(struct aj_events *ev, const char *event, json_t *fields);
void aj_events_close(struct aj_events *ev);

#endif
