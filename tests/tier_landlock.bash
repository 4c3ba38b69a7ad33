# Helpers for the tests of the landlock tier (tests/*/tier_landlock*.sh); sourced after
# tests/lib.sh. Not a test itself: tests/run only runs *.sh.
#
# The tier is for hosts where unprivileged user namespaces are refused. Such a host is
# simulated without touching this one's settings: agentjail runs under tests/helpers/
# seccomp-wrap with the filter Docker's and Kubernetes' default profiles apply (clone and
# unshare with CLONE_NEWUSER answer EPERM, clone3 ENOSYS), as an unprivileged user: the
# rootless pass's own uid, or TIER_UID through setpriv when the test runs as root (the tier
# refuses root: the sandbox would be host root).
#
# tl_setup makes T (owned by the tier's user, world-traversable), WS inside it and REPORT;
# tl_run runs agentjail there and sets OUT, ERR, RC.

WRAP=$HELPERS/seccomp-wrap
NO_USERNS=(--deny unshare:EPERM:0x10000000 --deny clone:EPERM:0x10000000 --deny clone3:ENOSYS)
# An unprivileged host has no delegated cgroup: limits that need one are turned off here and
# tested on their own (tier_landlock.sh).
TIER=(--tier landlock --memory none --cpus none --pids none)

if is_root; then
	TIER_UID=${AJ_TIER_UID:-23458}
else
	TIER_UID=$(id -u)
fi

# AS_TIER_USER: the command prefix that runs a command as the tier's unprivileged user,
# without capabilities (empty when the test already is that user); as_tier_user CMD... runs
# CMD so.
AS_TIER_USER=()
is_root && AS_TIER_USER=(setpriv --reuid "$TIER_UID" --regid "$TIER_UID" --clear-groups
	--inh-caps=-all)
as_tier_user() {
	"${AS_TIER_USER[@]}" "$@"
}

tl_setup() {
	T=$(mktmp)
	WS=$T/ws
	mkdir "$WS"
	REPORT=$T/report.json
	is_root && chown -R "$TIER_UID:$TIER_UID" "$T"
	chmod 755 "$T"
}

# tl_cmd CMD...: CMD as the tier's user in the workspace, stdin from /dev/null; sets OUT,
# ERR, RC.
tl_cmd() {
	local o=$T/.out e=$T/.err
	(cd "$WS" && as_tier_user "$@") >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}

# tl_run ARGS...: agentjail ARGS under the simulated container profile.
tl_run() {
	rm -f "$REPORT"
	tl_cmd "$WRAP" "${NO_USERNS[@]}" -- "$AJ" "$@"
	if [ "$RC" = 125 ]; then
		printf '%s\n' "$ERR" | sed 's/^/# agentjail: /'
	fi
}

# tl_sandbox ARGS... -- CMD...: `run` in the tier with the workspace, a report and the test
# helpers visible read-only.
tl_sandbox() {
	tl_run run "${TIER[@]}" -w "$WS" --report "$REPORT" --ro "$HELPERS" "$@"
}

# rep EXPR / layer_state NAME / layer_detail NAME: the last run's report.
rep() {
	if [ ! -s "$REPORT" ]; then
		echo "NO-REPORT"
		return
	fi
	json "$REPORT" "$1"
}
layer_state() { rep "[l['state'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }
layer_detail() { rep "[l['detail'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }

# line_of KEY / expect_line NAME KEY VALUE / expect_line_in NAME KEY VALUE...: what an
# attack script printed as "KEY VALUE".
line_of() {
	printf '%s\n' "$OUT" | awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'
}
expect_line() { expect_eq "$1" "$(line_of "$2")" "$3"; }
expect_line_in() {
	local name=$1 key=$2 got v
	shift 2
	got=$(line_of "$key")
	for v in "$@"; do
		[ "$got" = "$v" ] && { ok "$name"; return; }
	done
	not_ok "$name (got '$got', expected one of: $*)"
}

# tl_procs WORD: pids of the tier user's processes whose command line holds WORD.
tl_procs() {
	local p
	for p in $(pgrep -u "$TIER_UID" -f -- "$1" 2>/dev/null); do
		[ "$p" = $$ ] || echo "$p"
	done
}

# The tier's scratch directories (HOME and TMPDIR of a run) left in /tmp by this user.
tl_scratch_left() {
	find /tmp -maxdepth 1 -name 'agentjail-*' -user "$TIER_UID" 2>/dev/null
}

tl_require() {
	if [ ! -x "$WRAP" ]; then
		not_ok "seccomp-wrap helper is built ($WRAP)"
		exit 0
	fi
}
