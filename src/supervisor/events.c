#include "supervisor/events.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"

int aj_events_open(struct aj_events *ev, const char *path, const char *sandbox,
		   struct aj_err *err)
{
	ev->fd = -1;
	snprintf(ev->sandbox, sizeof ev->sandbox, "%s", sandbox);
	if (!path)
		return 0;
	/* Never through a symlink (the caller may point this into a sandbox-written tree), and
	 * private: events carry command lines. */
	ev->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
	if (ev->fd < 0)
		return aj_err_sys(err, AJ_LAYER_IO, "open the events file \"%s\"", path);
	return 0;
}

void aj_events_emit(struct aj_events *ev, const char *event, json_t *fields)
{
	char ts[40];
	_cleanup_free_ char *line = NULL;
	_cleanup_json_ json_t *o = NULL;

	if (ev->fd < 0) {
		json_decref(fields);
		return;
	}
	o = json_object();
	aj_format_time_ms(aj_now_realtime_ms(), ts, sizeof ts);
	json_object_set_new(o, "time", json_string(ts));
	json_object_set_new(o, "sandbox", json_string(ev->sandbox));
	json_object_set_new(o, "event", json_string(event));
	if (fields)
		json_object_update(o, fields);
	json_decref(fields);
	line = json_dumps(o, JSON_COMPACT);
	if (!line)
		return;
	/* One write per line with O_APPEND: lines from concurrent writers do not interleave. */
	size_t n = strlen(line);
	line[n] = '\n';
	aj_write_all(ev->fd, line, n + 1);
}

void aj_events_close(struct aj_events *ev)
{
	aj_close_fd(&ev->fd);
}
