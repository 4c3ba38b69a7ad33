#!/usr/bin/env bash
# agentjail restore NAME SNAPSHOT: a running sandbox's workspace goes back to the snapshot (it
# restarts, its processes end), a stopped one's too (it stays stopped), errors change nothing,
# no layer is left unused; and a restore a crash interrupted is finished by gc when its files
# had changed (upper.old exists) and undone when they had not.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

snap_layers() {
	"$AJ" snapshots --json | python3 -c '
import json, sys
print(" ".join(next(s["layers"] for s in json.load(sys.stdin) if s["name"] == sys.argv[1])))' "$1"
}
# used_layers: the layer directories every stack needs, sorted; layer_dirs: those on disk.
used_layers() {
	{ "$AJ" ls --json; echo @@; "$AJ" snapshots --json; } | python3 -c '
import json, sys
a, b = sys.stdin.read().split("@@")
print(" ".join(sorted({l for s in json.loads(a) + json.loads(b) for l in s["layers"]})))'
}
layer_dirs() { (cd "$STATE/layers" && ls | grep -v '^\.' | sort | tr '\n' ' ' | sed 's/ $//'); }
# sql STATEMENT...: runs statements on the state store (to stage an interrupted restore).
sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for s in sys.argv[2:]:
    c.execute(s)
c.commit()' "$STATE/state.db" "$@"; }
# stage_intent ID SNAPSHOT: the intent record step 1 of a restore writes.
stage_intent() {
	local pos=0 l stmts=()
	for l in $(snap_layers "$2"); do
		stmts+=("INSERT INTO stacks (kind, owner_id, position, layer_id) VALUES ('restore', '$1', $pos, '$l')")
		pos=$((pos + 1))
	done
	sql "${stmts[@]}"
}
intents() { python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM stacks WHERE kind = \"restore\"").fetchone()[0])' "$STATE/state.db"; }

# ---- a running sandbox ---------------------------------------------------------------------

pj_create rs
pj_x rs sh -c 'echo v1 >f; mkdir d; echo k >d/k'
# Snapshots of a running sandbox freeze it; without a freezer cgroup it is stopped for that.
is_root || aj_run stop rs
aj_run snapshot rs --name rs-1
expect_eq "snapshot rs-1" "$RC" 0
is_root || aj_run start rs
pj_x rs sh -c 'echo v2 >f; rm -r d; echo new >n; sleep 300 </dev/null >/dev/null 2>&1 &'
GEN=$(pj_field rs 'd["generation"]')
aj_run restore rs rs-1
expect_eq "restore of a running sandbox: exit 0" "$RC" 0
expect_eq "restore: prints the sandbox's name" "$OUT" rs
expect_eq "restore: the sandbox is running again" "$(pj_state rs)" running
expect_eq "restore: a new compute generation" "$(pj_field rs 'd["generation"]')" $((GEN + 1))
pj_x rs sh -c 'cat f d/k; test -e n && echo n-still-there; ps -eo args | grep -c "^sleep 300$"'
expect_eq "restore: the snapshot's files, the later ones gone, no old process" "$OUT" "v1
k
0"
expect_eq "restore: the stack is the snapshot's" "$(pj_field rs '" ".join(d["layers"])')" "$(snap_layers rs-1)"
expect_eq "restore: no layer left that nothing uses" "$(layer_dirs)" "$(used_layers)"
check "restore: no upper.old left" [ ! -e "$STATE/sandboxes/$(pj_id rs)/upper.old" ]
aj_run events rs
expect_contains "restore: recorded as an event" "$OUT" restore

# ---- a stopped sandbox, twice, and errors ----------------------------------------------------

pj_x rs sh -c 'echo v3 >f'
aj_run stop rs
aj_run restore rs rs-1
expect_eq "restore of a stopped sandbox: exit 0" "$RC" 0
expect_eq "restore of a stopped sandbox: it stays stopped" "$(pj_state rs)" stopped
aj_run start rs
pj_x rs cat f
expect_eq "restore of a stopped sandbox: the snapshot's content after start" "$OUT" v1
aj_run restore rs rs-1
expect_eq "restore again: exit 0" "$RC" 0
aj_run snapshots --json
expect_contains "the snapshot is still there after restores" "$OUT" '"rs-1"'
BEFORE=$(pj_summary)
aj_run restore rs no-such-snapshot
expect_eq "restore to an unknown snapshot: exit 1" "$RC" 1
expect_contains "restore to an unknown snapshot: says which" "$ERR" no-such-snapshot
expect_eq "restore to an unknown snapshot: nothing changed" "$(pj_summary)" "$BEFORE"
expect_eq "restore to an unknown snapshot: still running" "$(pj_state rs)" running
aj_run restore no-such-sandbox rs-1
expect_eq "restore of an unknown sandbox: exit 1" "$RC" 1
aj_run restore rs
expect_eq "restore without a snapshot: exit 125" "$RC" 125

# ---- interrupted restores -----------------------------------------------------------------

ID=$(pj_id rs)
UP=$STATE/sandboxes/$ID/upper
pj_x rs sh -c 'echo v4 >f; echo extra >x'
aj_run stop rs
OLD_STACK=$(pj_field rs '" ".join(d["layers"])')
# Crashed before the files changed: intent recorded, upper untouched. gc undoes it.
stage_intent "$ID" rs-1
aj_run gc
expect_eq "interrupted before the files: gc exit 0" "$RC" 0
expect_eq "interrupted before the files: the intent is gone" "$(intents)" 0
expect_eq "interrupted before the files: the stack is unchanged" "$(pj_field rs '" ".join(d["layers"])')" "$OLD_STACK"
aj_run start rs
pj_x rs cat f x
expect_eq "interrupted before the files: the sandbox's own changes are kept" "$OUT" "v4
extra"
aj_run stop rs
# Crashed after the commit point: upper moved aside, the new one not even made. gc finishes.
stage_intent "$ID" rs-1
mv "$UP" "$UP.old"
aj_run gc
expect_eq "interrupted after the commit point: gc exit 0" "$RC" 0
expect_eq "interrupted after the commit point: the intent is gone" "$(intents)" 0
expect_eq "interrupted after the commit point: the stack is the snapshot's" "$(pj_field rs '" ".join(d["layers"])')" "$(snap_layers rs-1)"
check "interrupted after the commit point: a fresh upper, upper.old removed" [ -d "$UP" ] && [ ! -e "$UP.old" ]
aj_run start rs
pj_x rs sh -c 'cat f; test -e x && echo x-still-there; true'
expect_eq "interrupted after the commit point: the snapshot's content" "$OUT" v1
# A finished restore's leftover upper.old does not confuse the next restore.
pj_x rs sh -c 'echo v5 >f'
mkdir "$UP.old"
aj_run restore rs rs-1
expect_eq "a stale upper.old: restore exit 0" "$RC" 0
pj_x rs cat f
expect_eq "a stale upper.old: the snapshot's content, not the stale dir's" "$OUT" v1
check "a stale upper.old: removed" [ ! -e "$UP.old" ]
expect_eq "after the interrupted restores: no layer left that nothing uses" "$(layer_dirs)" "$(used_layers)"

aj_run rm -f rs
expect_eq "rm -f: exit 0" "$RC" 0
