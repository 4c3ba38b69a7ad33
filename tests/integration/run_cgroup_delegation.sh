#!/usr/bin/env bash
# A delegated cgroup makes limits enforceable for an unprivileged user. Simulated in the main
# pass (root) without changing the host's cgroup layout: a temporary subtree under this test's
# own cgroups (from /proc/self/cgroup) in the memory and pids hierarchies, owned by the rootless
# test uid, handed to agentjail with --cgroup-parent; agentjail runs as that uid through
# setpriv. The subtree is removed at the end.
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

RUID=${AJ_ROOTLESS_UID:-23456}
if ! is_root; then
	skip "cgroup delegation" "creating the delegated subtree needs root (main pass)"
	exit 0
fi
MODE=$("$AJ" features --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"]["mode"])')
if [ "$MODE" != v1 ]; then
	skip "cgroup delegation" "simulated for cgroup v1 hierarchies; this host uses $MODE"
	exit 0
fi

own() { sed -n "s/^[0-9]*:\([^:]*,\)\{0,1\}$1\(,[^:]*\)\{0,1\}:\(.*\)/\3/p" /proc/self/cgroup | head -1; }
MEM_OWN=$(own memory)
PIDS_OWN=$(own pids)
within() { [ "$2" = / ] || [ "$1" = "$2" ] || case "$1" in "$2"/*) true ;; *) false ;; esac; }
# One --cgroup-parent names the same relative path in every hierarchy: it must lie under this
# test's cgroup in both.
if within "$MEM_OWN" "$PIDS_OWN"; then
	BASE=$MEM_OWN
elif within "$PIDS_OWN" "$MEM_OWN"; then
	BASE=$PIDS_OWN
else
	skip "cgroup delegation" "own memory ($MEM_OWN) and pids ($PIDS_OWN) cgroups are unrelated"
	exit 0
fi
REL=${BASE%/}/ajdeleg-$$
CREATED=()

cleanup_cgroups() {
	local i d
	for d in /sys/fs/cgroup/memory"$REL" /sys/fs/cgroup/pids"$REL"; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
	for ((i = ${#CREATED[@]} - 1; i >= 0; i--)); do
		rmdir "${CREATED[$i]}" 2>/dev/null
	done
}
trap 'cleanup_cgroups; _aj_cleanup' EXIT

# mkdir -p that remembers what it created (intermediate levels included), for the cleanup.
make_tree() {
	local path=$1 cur="" part
	IFS=/ read -ra parts <<<"${path#/}"
	for part in "${parts[@]}"; do
		cur=$cur/$part
		if [ ! -d "$cur" ]; then
			mkdir "$cur" || return 1
			CREATED+=("$cur")
		fi
	done
}

for ctrl in memory pids; do
	d=/sys/fs/cgroup/$ctrl$REL
	if ! make_tree "$d"; then
		not_ok "create the delegated subtree $d"
		exit 0
	fi
	chown -R "$RUID:$RUID" "$d"
done
ok "a delegated subtree $REL in the memory and pids hierarchies, owned by uid $RUID"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
chown -R "$RUID:$RUID" "$T"
cd "$WS" || exit 1
R=$T/report.json

as_user() {
	local o e
	o=$(mktemp -p "$T") e=$(mktemp -p "$T")
	setpriv --reuid "$RUID" --regid "$RUID" --clear-groups --inh-caps=-all \
		env HOME="$T" "$@" >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
	[ "$RC" = 125 ] && printf '%s\n' "$ERR" | sed 's/^/# agentjail said: /'
	return 0
}
no_process() { ! pgrep -f -- "$1" >/dev/null; }
layer_state() { json "$R" "[l['state'] for l in d['plan']['layers'] if l['layer'] == '$1'][0]"; }

as_user "$AJ" features --json --cgroup-parent "$REL"
printf '%s' "$OUT" >"$T/f.json"
expect_eq "features: rootless mode" "$(json "$T/f.json" 'd["mode"]')" rootless
expect_eq "features: the delegated memory cgroup is usable" \
	"$(json "$T/f.json" 'd["cgroup"]["controllers"]["memory"]["usable"]')" True
expect_eq "features: the delegated pids cgroup is usable" \
	"$(json "$T/f.json" 'd["cgroup"]["controllers"]["pids"]["usable"]')" True
expect_eq "features: the memory parent is the delegated subtree" \
	"$(json "$T/f.json" 'd["cgroup"]["controllers"]["memory"]["parent"]')" "/sys/fs/cgroup/memory$REL"

as_user "$AJ" run --cgroup-parent "$REL" --memory 64MiB --pids 32 --report "$R" -- echo ran
expect_eq "delegated: a run with memory and pids limits works as uid $RUID" "$RC:$OUT" "0:ran"
if [ "$RC" != 0 ]; then printf '# %s\n' "$ERR"; fi
if [ -e "/sys/fs/cgroup/memory$REL/memory.memsw.limit_in_bytes" ]; then
	swap=", no swap beyond it"
else
	swap="; swap is not bounded (no swap accounting)"
fi
expect_eq "delegated: memory is enforced by the cgroup" \
	"$(json "$R" "[l['detail'] for l in d['plan']['layers'] if l['layer'] == 'memory'][0]")" \
	"64 MiB (cgroup v1)$swap"
expect_eq "delegated: pids is enforced by the cgroup" "$(layer_state pids)" enforced

as_user "$AJ" run --cgroup-parent "$REL" --memory 32MiB --report "$R" -- \
	python3 -c 'x = bytearray(256 << 20); print("allocated")'
expect_eq "delegated: a 256 MiB allocation under a 32 MiB limit ends with exit 122" "$RC" 122
expect_not_contains "delegated: the allocation did not succeed" "$OUT" allocated
expect_eq "delegated: report limit_hit" "$(report_field "$R" 'd["limit_hit"]')" memory
expect_eq "delegated: peak memory stays within the limit" \
	"$(report_field "$R" 'd["peak_memory_bytes"] <= 32 << 20')" True

as_user "$AJ" run --cgroup-parent "$REL" --memory 64MiB --pids 8 --report "$R" -- \
	sh -c "for i in \$(seq 30); do sleep 30.$$ & done; wait"
expect_eq "delegated: a fork loop under --pids 8 ends with exit 121" "$RC" 121
expect_eq "delegated: report limit_hit pids" "$(report_field "$R" 'd["limit_hit"]')" pids
check "delegated: the sleepers died with the sandbox" no_process "sleep 30.$$"

left=$(find /sys/fs/cgroup/memory"$REL" /sys/fs/cgroup/pids"$REL" -mindepth 1 -type d 2>/dev/null)
expect_eq "delegated: every sandbox cgroup was removed" "$left" ""

cleanup_cgroups
CREATED=()
check "the delegated subtree is gone from the memory hierarchy" test ! -e /sys/fs/cgroup/memory"$REL"
check "the delegated subtree is gone from the pids hierarchy" test ! -e /sys/fs/cgroup/pids"$REL"
