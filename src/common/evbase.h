/* The event bases of agentjail's loops (the supervisors, the daemon, port-forward): libevent's
 * default backend, chosen without reading the environment. libevent otherwise reads
 * EVENT_NO<METHOD>, EVENT_SHOW_METHOD and EVENT_PRECISE_TIMER, and asks getuid, geteuid,
 * getgid and getegid before each read (16 system calls per base): what the caller's
 * environment says does not change how a supervisor waits.
 */
#ifndef AJ_COMMON_EVBASE_H
#define AJ_COMMON_EVBASE_H

struct event_base;

/* A new event base, or NULL (out of memory, or no backend works). */
struct event_base *aj_event_base_new(void);

#endif
