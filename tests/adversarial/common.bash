# Helpers shared by the adversarial tests (sourced after tests/lib.sh; not a test itself:
# tests/run only runs *.sh).
#
# Every attack runs for real inside a sandbox; the checks then look at both sides: what the
# attacker saw (exact errno names printed by the attack) and what the host kept (files,
# processes, sockets), plus the run's report for limits.

# adv_setup: a scratch directory T with a workspace WS in it; REPORT is where runs write their
# report. Everything is removed at exit by lib.sh.
adv_setup() {
	T=$(mktmp)
	WS=$T/ws
	mkdir "$WS"
	REPORT=$T/report.json
}

# sandbox ARGS... -- CMD...: runs agentjail in the workspace with a report; OUT, ERR, RC as
# aj_run sets them. The helper directory is visible read-only, the way the attacker's own
# programs would be. AJ_ADV_TIER names the tier (the gvisor tier runs the suites so:
# tier_gvisor_suites.sh).
sandbox() {
	rm -f "$REPORT"
	aj_run run ${AJ_ADV_TIER:+--tier "$AJ_ADV_TIER"} -w "$WS" --report "$REPORT" --ro "$HELPERS" \
		$(rootless_flags) "$@"
	if [ "$RC" = 125 ]; then
		printf '%s\n' "$ERR" | sed 's/^/# agentjail: /'
	fi
}

# tier_is NAME: the suite runs on that tier (AJ_ADV_TIER; tier_gvisor_suites.sh sets gvisor).
tier_is() { [ "${AJ_ADV_TIER:-namespaces}" = "$1" ]; }
# want NAMESPACES GVISOR: the answer expected on this tier. gVisor's Sentry is another kernel
# and refuses some attacks with another errno (it checks permissions before the host sees a
# read-only mount, it lacks some calls); each value is still exact for its tier.
want() { if tier_is gvisor; then echo "$2"; else echo "$1"; fi; }

# rep EXPR: a field of the last run's report (Python expression over `d`).
rep() {
	if [ ! -s "$REPORT" ]; then
		echo "NO-REPORT"
		return
	fi
	json "$REPORT" "$1"
}

# layer_state NAME / layer_detail NAME: a layer of the last run's plan, from the report.
layer_state() {
	rep "[l['state'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"
}
layer_detail() {
	rep "[l['detail'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"
}

# line_of KEY: the value printed by an attack as "KEY VALUE" in OUT (first match).
line_of() {
	printf '%s\n' "$OUT" | awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'
}

# expect_line NAME KEY VALUE: the attack printed "KEY VALUE".
expect_line() {
	expect_eq "$1" "$(line_of "$2")" "$3"
}

# expect_line_in NAME KEY VALUE...: the attack printed KEY with one of the VALUEs.
expect_line_in() {
	local name=$1 key=$2 got v
	shift 2
	got=$(line_of "$key")
	for v in "$@"; do
		if [ "$got" = "$v" ]; then
			ok "$name"
			return
		fi
	done
	not_ok "$name (got '$got', expected one of: $*)"
}

# as_unprivileged CMD...: runs CMD on the host as an unprivileged user (nobody when the test
# runs as root, the test's own uid otherwise), outside any sandbox.
as_unprivileged() {
	if is_root; then
		setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all "$@"
	else
		"$@"
	fi
}

# elapsed_ms CMD...: runs CMD, prints its wall time in milliseconds.
elapsed_ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# A unique word to mark processes and files of this test run.
marker() {
	echo "ajmark$$x$RANDOM$RANDOM"
}

# host_pids_matching WORD: host pids whose command line contains WORD (ours excluded).
host_pids_matching() {
	local p
	for p in $(pgrep -f -- "$1" 2>/dev/null); do
		[ "$p" = $$ ] || [ "$p" = "$BASHPID" ] || echo "$p"
	done
}
