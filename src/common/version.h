/* agentjail's version, as `agentjail version`, `features`, the API and the OCI verbs report
 * it. */
#ifndef AJ_COMMON_VERSION_H
#define AJ_COMMON_VERSION_H

#define AJ_VERSION "0.1.0"

#endif
