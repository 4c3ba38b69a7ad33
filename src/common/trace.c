#include "common/trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/util.h"

static bool enabled;
static uint64_t t0;

void aj_trace_init(void)
{
	const char *v = getenv("AGENTJAIL_TRACE");

	enabled = v && *v && *v != '0';
	t0 = aj_now_monotonic_us();
}

void aj_trace(const char *phase)
{
	char buf[160];
	int n;

	if (!enabled)
		return;
	n = snprintf(buf, sizeof buf, "agentjail-trace: %8.3f ms [%d] %s\n",
		     (double)(aj_now_monotonic_us() - t0) / 1000.0, (int)getpid(), phase);
	if (n > 0)
		(void)!write(2, buf, (size_t)n);
}
