/* One /etc for the persistent sandboxes that would write the same one.
 *
 * A sandbox on the host's system directories gets /etc as a tmpfs of its own, with copies of
 * the host's small /etc files and the identity files (passwd, group, hosts...) its plan
 * generates: a page of unshared memory per file, about 130 KiB that an idle persistent
 * sandbox holds for its whole life. Here the plan's /etc is written once per distinct content
 * into <state>/etc/<sha256 of what it holds>, and bound read-only in the tmpfs's place, so
 * the pages are in the page cache once for every sandbox that has the same /etc. What the
 * sandbox sees is the same: the same files, modes and owners (privileged: through an idmapped
 * mount, as root inside), read-only as before; the binds and masks below /etc are made as
 * before, on mount points the directory holds.
 *
 * The directories are storage/shared_dir.h's: written under a temporary name and renamed,
 * a shared lock held by each supervisor while its sandbox runs, those nobody holds removed
 * when a new one is written (the host's /etc changed) and by `agentjail gc`.
 */
#ifndef AJ_SUPERVISOR_ETC_SHARE_H
#define AJ_SUPERVISOR_ETC_SHARE_H

#include "common/err.h"
#include "policy/plan.h"

/* Rewrites plan's /etc into a bind of the shared directory, made if missing, and returns a
 * descriptor of it that holds the lock (to keep open while the sandbox runs); -2 if the plan
 * has no /etc to share (an image root, another tier, files written at launch such as the
 * egress CA), the plan unchanged; -1 with err set if the directory could not be made, the
 * plan unchanged too (the sandbox can start with its own tmpfs). owner: the sandbox's owner
 * (the API's tenant; "" for the CLI's), which is part of the key. */
int aj_sv_etc_share(struct aj_plan *plan, const char *state_dir, const char *owner,
		    struct aj_err *err);

#endif
