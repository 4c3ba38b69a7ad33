#!/usr/bin/env bash
# gc and crash recovery on states staged exactly (the kills at timed moments are in
# adversarial/persist_crash.sh, as root): gc never touches a layer or sandbox whose lock is held
# (an operation in progress), and once the lock is free it removes layer and sandbox
# directories the store does not know, removes a sandbox left "creating", and finishes a
# snapshot of a stopped sandbox interrupted after its upper became the layer (the sandbox
# refuses to start until then, saying why) or undoes one interrupted before.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# sql STATEMENT...: runs statements on the state store; q QUERY: prints the first column.
sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for s in sys.argv[2:]:
    c.execute(s)
c.commit()' "$STATE/state.db" "$@"; }
q() { python3 -c 'import sqlite3, sys
print(" ".join(str(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$STATE/state.db" "$1"; }

# hold PATH: holds an flock on PATH from a background process (HOLDER) until release (-o: the
# lock stays with flock itself, not with the sleep it runs).
HOLDER=
hold() {
	mkdir -p "$(dirname "$1")"
	flock -o "$1" sleep 120 &
	HOLDER=$!
	pj_wait 5 sh -c "! flock -n '$1' true"
}
release() {
	local kid
	[ -n "$HOLDER" ] || return 0
	kid=$(pgrep -P "$HOLDER")
	kill "$HOLDER" $kid 2>/dev/null
	wait "$HOLDER" 2>/dev/null
	HOLDER=
}
cleanup_gc() {
	release
	pj_cleanup
}
trap cleanup_gc EXIT

if ! command -v flock >/dev/null; then
	skip "gc and staged crashes" "flock(1) is not installed"
	exit 0
fi

pj_create down --stopped
mkdir -p "$STATE/layers"
L=$STATE/layers

# ---- layer directories the store does not know ----------------------------------------------

mkdir "$L/0123456789abcdef" "$L/.tmp-fedcba9876543210"
echo leftover >"$L/0123456789abcdef/f"
: >"$L/.lock-aaaaaaaaaaaaaaaa"
mkdir "$L/1111111111111111"
hold "$L/.lock-1111111111111111"
aj_run gc
expect_eq "unknown layer directories: gc exit 0" "$RC" 0
check "an unknown layer directory is removed" [ ! -e "$L/0123456789abcdef" ]
check "an unknown layers/.tmp- directory is removed" [ ! -e "$L/.tmp-fedcba9876543210" ]
check "a lock file nobody holds is removed" [ ! -e "$L/.lock-aaaaaaaaaaaaaaaa" ]
check "an unknown layer whose lock is held is kept (its creator is at work)" [ -d "$L/1111111111111111" ]
release
aj_run gc
check "once its lock is free, it is removed with its lock file" \
	[ ! -e "$L/1111111111111111" ] && [ ! -e "$L/.lock-1111111111111111" ]

# A ready layer nothing references yet, whose lock is held: a fork between making its layer
# and recording its sandboxes.
sql "INSERT INTO layers (id, state, created_ms) VALUES ('2222222222222222', 'ready', 0)"
mkdir "$L/2222222222222222"
hold "$L/.lock-2222222222222222"
aj_run gc
check "an unreferenced layer whose lock is held is kept" [ -d "$L/2222222222222222" ]
expect_eq "its record too" "$(q "SELECT state FROM layers WHERE id = '2222222222222222'")" ready
release
aj_run gc
check "once its lock is free, the unreferenced layer is removed" [ ! -e "$L/2222222222222222" ]
expect_eq "its record too" "$(q "SELECT count(*) FROM layers WHERE id = '2222222222222222'")" 0

# ---- sandboxes: no record, or left "creating" ------------------------------------------------

S=$STATE/sandboxes
mkdir -p "$S/3333333333333333/upper"
aj_run gc
check "a sandbox directory with no record is removed" [ ! -e "$S/3333333333333333" ]
mkdir -p "$S/4444444444444444/upper"
hold "$S/4444444444444444/lock"
aj_run gc
check "a sandbox directory with no record whose lock is held is kept" [ -d "$S/4444444444444444/upper" ]
release
aj_run gc
check "... and removed once its lock is free" [ ! -e "$S/4444444444444444" ]

# create killed after its record: "creating", its lock free. The record copies down's.
sql "INSERT INTO sandboxes (id, name, owner, policy, state, created_ms, updated_ms) SELECT
	'5555555555555555', 'half-made', owner, policy, 'creating', created_ms, updated_ms FROM
	sandboxes WHERE name = 'down'"
mkdir -p "$S/5555555555555555"
hold "$S/5555555555555555/lock"
aj_run gc
expect_eq "a creating sandbox whose lock is held is kept (being made)" "$(pj_state half-made)" creating
release
aj_run gc
expect_eq "a creating sandbox whose lock is free: gc exit 0" "$RC" 0
expect_eq "a creating sandbox whose lock is free is removed" "$(pj_state half-made)" MISSING
check "... with its directory" [ ! -e "$S/5555555555555555" ]
# shellcheck disable=SC2086
aj_run create --name half-made --stopped $PJ_FLAGS
expect_eq "its name can be used again" "$RC" 0

# ---- a snapshot of a stopped sandbox, interrupted -------------------------------------------

pj_create moved
pj_x moved sh -c 'echo kept >f; mkdir d && echo 2 >d/x'
aj_run stop moved
MID=$(pj_id moved)
# stage_snapshot LAYER NAME: step 1 of a snapshot of `moved` (the records), as a crash leaves it.
stage_snapshot() {
	local pos
	pos=$(q "SELECT count(*) FROM stacks WHERE kind = 'sandbox' AND owner_id = '$MID'")
	sql "INSERT INTO layers (id, state, created_ms) VALUES ('$1', 'creating', 0)" \
		"INSERT INTO stacks (kind, owner_id, position, layer_id) VALUES ('sandbox', '$MID', $pos, '$1')" \
		"INSERT INTO snapshots (id, name, owner, source, state, created_ms) SELECT '${1:0:15}f', '$2', owner, id, 'creating', 0 FROM sandboxes WHERE id = '$MID'" \
		"INSERT INTO stacks (kind, owner_id, position, layer_id) VALUES ('snapshot', '${1:0:15}f', 0, '$1')"
}

# Interrupted before its rename: gc undoes it.
stage_snapshot 6666666666666666 before-move
aj_run gc
expect_eq "interrupted before the move: the snapshot is gone" "$("$AJ" snapshots --json | grep -c before-move)" 0
expect_eq "interrupted before the move: the layer is off the sandbox's stack" "$(pj_field moved 'len(d["layers"])')" 0
check "interrupted before the move: no layer directory" [ ! -e "$L/6666666666666666" ]

# Interrupted after the upper became the layer, before the new upper was made.
stage_snapshot 7777777777777777 after-move
mv "$S/$MID/upper" "$L/7777777777777777"
aj_run start moved
expect_eq "upper missing: start refused (exit 125)" "$RC" 125
expect_contains "upper missing: start says so" "$ERR" "has no writable layer"
expect_contains "upper missing: and what to do" "$ERR" "agentjail gc"
hold "$L/.lock-7777777777777777"
aj_run gc
expect_eq "its layer's lock held: gc leaves the snapshot creating" "$(q "SELECT state FROM snapshots WHERE name = 'after-move'")" creating
release
aj_run gc
expect_eq "after the move: gc exit 0" "$RC" 0
expect_eq "after the move: the snapshot is finished" "$(q "SELECT state FROM snapshots WHERE name = 'after-move'")" ready
check "after the move: a new upper and work directory" [ -d "$S/$MID/upper" ] && [ -d "$S/$MID/work" ]
check "after the move: no lock file left" [ ! -e "$L/.lock-7777777777777777" ]
aj_run start moved
expect_eq "after the move: the sandbox starts" "$RC" 0
pj_x moved sh -c 'cat f d/x'
expect_eq "after the move: its data is intact" "$OUT" "kept
2"
aj_run diff moved
expect_eq "after the move: diff still lists its changes" "$OUT" "A d
A d/x
A f"
pj_create from-after --from after-move --stopped
aj_run start from-after
pj_x from-after cat f
expect_eq "after the move: the snapshot has the data" "$OUT" kept
