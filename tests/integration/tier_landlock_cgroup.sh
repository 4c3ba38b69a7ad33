#!/usr/bin/env bash
# The landlock tier with a delegated cgroup: memory and pids limits are then real (not the
# rlimit stand-ins), and the sandbox is killed through the cgroup too. Simulated in the main
# pass (root) as run_cgroup_delegation.sh does: a temporary subtree under this test's own
# cgroups, owned by the tier's user, handed over with --cgroup-parent; agentjail runs as that
# user under the container seccomp profile (clone3 refused: the supervisor attaches the
# keeper to the cgroup itself). The subtree is removed at the end.
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

if ! is_root; then
	skip "landlock tier with a delegated cgroup" "creating the subtree needs root (main pass)"
	exit 0
fi
MODE=$("$AJ" features --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"]["mode"])')
if [ "$MODE" != v1 ]; then
	skip "landlock tier with a delegated cgroup" "simulated for cgroup v1; this host uses $MODE"
	exit 0
fi

own() { sed -n "s/^[0-9]*:\([^:]*,\)\{0,1\}$1\(,[^:]*\)\{0,1\}:\(.*\)/\3/p" /proc/self/cgroup | head -1; }
within() { [ "$2" = / ] || [ "$1" = "$2" ] || case "$1" in "$2"/*) true ;; *) false ;; esac; }
MEM_OWN=$(own memory)
PIDS_OWN=$(own pids)
if within "$MEM_OWN" "$PIDS_OWN"; then
	BASE=$MEM_OWN
elif within "$PIDS_OWN" "$MEM_OWN"; then
	BASE=$PIDS_OWN
else
	skip "landlock tier with a delegated cgroup" "own memory and pids cgroups are unrelated"
	exit 0
fi
REL=${BASE%/}/ajtierdeleg-$$
CREATED=()
MARK=ajtiercg$$x$RANDOM

cleanup() {
	local i d p
	for p in $(tl_procs "$MARK"); do kill -9 "$p" 2>/dev/null; done
	for d in /sys/fs/cgroup/memory"$REL" /sys/fs/cgroup/pids"$REL"; do
		[ -d "$d" ] || continue
		find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
		rmdir "$d" 2>/dev/null
	done
	for ((i = ${#CREATED[@]} - 1; i >= 0; i--)); do
		rmdir "${CREATED[$i]}" 2>/dev/null
	done
	_aj_cleanup
}
trap cleanup EXIT

make_tree() {
	local cur="" part
	IFS=/ read -ra parts <<<"${1#/}"
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
	chown -R "$TIER_UID:$TIER_UID" "$d"
done
ok "a delegated subtree $REL, owned by uid $TIER_UID"

CG=(--tier landlock --cgroup-parent "$REL" --cpus none)

tl_setup
tl_run run "${CG[@]}" -w "$WS" --memory 64MiB --pids 32 --report "$REPORT" -- echo ran
expect_eq "landlock tier, delegated cgroup: limits without --allow-degraded" "$RC:$OUT" "0:ran"
expect_eq "memory is enforced by the cgroup, not RLIMIT_AS" "$(layer_state memory)" enforced
expect_contains "memory: the cgroup's" "$(layer_detail memory)" "64 MiB (cgroup v1)"
expect_eq "pids is enforced by the cgroup" "$(layer_state pids)" enforced

tl_run run "${CG[@]}" -w "$WS" --memory 32MiB --pids none --report "$REPORT" -- \
	python3 -c 'x = bytearray(256 << 20); print("allocated")'
expect_eq "a 256 MiB allocation under 32 MiB ends with exit 122" "$RC" 122
expect_not_contains "the allocation did not succeed" "$OUT" allocated
expect_eq "report limit_hit memory" "$(rep 'd["limit_hit"]')" memory

tl_run run "${CG[@]}" -w "$WS" --memory 64MiB --pids 8 --report "$REPORT" -- \
	sh -c "for i in \$(seq 30); do sleep 30.$$ & done; wait"
expect_eq "a fork loop under --pids 8 ends with exit 121" "$RC" 121
expect_eq "report limit_hit pids" "$(rep 'd["limit_hit"]')" pids
expect_eq "the sleepers died with the sandbox" "$(tl_procs "sleep 30.$$")" ""

tl_run run "${CG[@]}" -w "$WS" --memory 64MiB --pids 32 --report "$REPORT" -- \
	bash -c "setsid bash -c 'exec -a $MARK sleep 60' </dev/null >/dev/null 2>&1 & sleep 0.2"
expect_eq "a setsid daemon: the run ends" "$RC" 0
sleep 0.3
expect_eq "the daemon was killed" "$(tl_procs "$MARK")" ""
left=$(find /sys/fs/cgroup/memory"$REL" /sys/fs/cgroup/pids"$REL" -mindepth 1 -type d 2>/dev/null)
expect_eq "every sandbox cgroup was removed" "$left" ""
