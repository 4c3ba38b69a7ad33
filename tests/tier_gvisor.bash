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

# stat_state FILE: owner, group, mode and device numbers, to compare before and after runs.
stat_state() { stat -c '%u:%g %a %t,%T' "$1"; }

# gv_stdio_setup DIR: files the test's runs use as their stdio (GV_IN, GV_OUT, GV_ERR, mode
# 0640), and the state of those and of /dev/null now; gv_stdio_kept NAME: one check that all
# four kept their owner and mode since (Debian's runsc changes the owner of the stdio it is
# handed: the tier hands it only descriptors of agentjail's own).
gv_stdio_setup() {
	GV_IN=$1/stdin.txt GV_OUT=$1/stdout.txt GV_ERR=$1/stderr.txt
	echo input >"$GV_IN"
	: >"$GV_OUT"
	: >"$GV_ERR"
	chmod 640 "$GV_IN" "$GV_OUT" "$GV_ERR"
	GV_STDIO0=$(gv_stdio_state)
}
gv_stdio_state() {
	printf '%s|' "$(stat_state /dev/null)" "$(stat_state "$GV_IN")" "$(stat_state "$GV_OUT")" \
		"$(stat_state "$GV_ERR")"
}
gv_stdio_kept() {
	expect_eq "$1: /dev/null and the caller's stdio keep owner and mode" "$(gv_stdio_state)" \
		"$GV_STDIO0"
}
