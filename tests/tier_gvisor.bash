# Helpers for the tests of the gvisor tier (tests/*/tier_gvisor*.sh); sourced after
# tests/lib.sh. Not a test itself: tests/run only runs *.sh.
#
# The tier runs the sandbox's processes on gVisor's Sentry through Debian's runsc, which
# scripts/install-deps installs. Without runsc, or as an unprivileged user (the tier needs
# root), the tests that need a running sandbox are skipped with the reason.

# gv_usable: whether `agentjail features` says the tier can run here; GV_WHY says why not.
gv_usable() {
	GV_WHY=$("$AJ" features --json 2>/dev/null | python3 -c '
import json, sys
t = json.load(sys.stdin)["tiers"]["gvisor"]
print("" if t["usable"] else t["detail"])')
	[ -z "$GV_WHY" ]
}

# gv_require: exits the test with one skip line when the tier cannot run here.
gv_require() {
	if ! gv_usable; then
		skip "gvisor tier" "${GV_WHY:-agentjail features failed}"
		exit 0
	fi
}

# dev_null_state / stdio_state FILE: owner, group and mode, to compare before and after runs.
stat_state() { stat -c '%u:%g %a %t,%T' "$1"; }
