/* Launch-phase timestamps for performance work: AGENTJAIL_TRACE=1 prints each phase with the
 * time since the process started to stderr. Off by default; one branch per call when off. */
#ifndef AJ_COMMON_TRACE_H
#define AJ_COMMON_TRACE_H

void aj_trace_init(void);
void aj_trace(const char *phase);

#endif
