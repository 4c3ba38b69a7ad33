#include "common/evbase.h"

#include <event2/event.h>

struct event_base *aj_event_base_new(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base = NULL;

	if (cfg && event_config_set_flag(cfg, EVENT_BASE_FLAG_IGNORE_ENV) == 0)
		base = event_base_new_with_config(cfg);
	if (cfg)
		event_config_free(cfg);
	return base;
}
