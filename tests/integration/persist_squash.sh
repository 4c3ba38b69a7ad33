#!/usr/bin/env bash
# A layer stack deeper than the limit (24, src/manager/squash.c) is merged at the next start:
# every snapshot of a stopped sandbox adds a layer, and overlayfs caps the depth. After the
# merge the stack is short, the workspace reads exactly as before (files of every layer, the
# newest version of a file changed in many layers, a file deleted in a later layer stays
# deleted, modes kept), diff still lists what the sandbox changed since its base, the merge is
# an event, and the snapshots made along the way still restore their own state.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

N=25 # one past the limit: the start after the last snapshot is the first to merge
pj_create deep
pj_x deep sh -c 'echo base >base; echo gone >gone; echo 0 >count; mkdir d; chmod 750 d'
for i in $(seq 1 $N); do
	if [ "$i" -gt 1 ]; then
		aj_run start deep
		[ "$RC" = 0 ] || pj_bail "start deep (round $i)"
	fi
	pj_x deep sh -c "echo $i >count; echo $i >d/f$i; [ $i -ne 5 ] || rm gone"
	aj_run stop deep
	[ "$RC" = 0 ] || pj_bail "stop deep (round $i)"
	aj_run snapshot deep --name "s$i"
	[ "$RC" = 0 ] || pj_bail "snapshot deep (round $i)"
done
BEFORE=$(pj_field deep 'len(d["layers"])')
expect_eq "each snapshot of the stopped sandbox added a layer" "$BEFORE" "$N"

aj_run start deep
expect_eq "a start past the limit: accepted" "$RC" "0"
AFTER=$(pj_field deep 'len(d["layers"])')
check "the stack was merged: $AFTER layers (limit 24)" [ "$AFTER" -le 4 ]

pj_x deep sh -c 'cat base count; ls d | wc -l; test -e gone && echo gone-is-back; stat -c %a d'
expect_eq "the workspace reads as before: first layer, newest version, deletion kept, mode" \
	"$OUT" "base
$N
$N
750"
pj_x deep cat d/f1 d/f13 "d/f$N"
expect_eq "files of the oldest, a middle and the newest layer" "$OUT" "1
13
$N"

aj_run diff deep
WANT=$( (printf 'A base\nA count\nA d\n'; for i in $(seq 1 $N); do echo "A d/f$i"; done) | sort)
expect_eq "diff: everything since the base, the deleted file not at all" "$(printf '%s\n' "$OUT" | sort)" "$WANT"

EV=$("$AJ" events --json deep | python3 -c '
import json, sys
print(sum(json.loads(l)["event"] == "squash" for l in sys.stdin if l.strip()))')
expect_eq "the merge is one event" "$EV" "1"

aj_run stop deep
aj_run start deep
expect_eq "the next start does not merge again" "$(pj_field deep 'len(d["layers"])')" "$AFTER"

aj_run create --name old --from s3 $PJ_FLAGS
expect_eq "a snapshot from before the merge: a sandbox made from it starts" "$RC" "0"
pj_x old sh -c 'cat count; ls d | wc -l; cat gone'
expect_eq "it has that snapshot's state" "$OUT" "3
3
gone"

# A sandbox made from a deep snapshot: its base layers and its own are merged apart, so diff
# still shows only its own changes.
aj_run create --name kid --from s20 $PJ_FLAGS
[ "$RC" = 0 ] || pj_bail "create kid --from s20"
for i in 1 2 3 4 5; do
	[ "$i" -gt 1 ] && aj_run start kid
	pj_x kid sh -c "echo kid$i >count; echo $i >k$i"
	aj_run stop kid
	aj_run snapshot kid --name "k$i"
	[ "$RC" = 0 ] || pj_bail "snapshot kid (round $i)"
done
expect_eq "from a deep snapshot: base and own layers past the limit" \
	"$(pj_field kid 'len(d["layers"])')" "25"
aj_run start kid
expect_eq "merged: one base layer and one of its own" "$(pj_field kid 'len(d["layers"])')" "2"
pj_x kid sh -c 'cat count d/f20 k1 k5; test -e d/f21 || echo no-f21'
expect_eq "it reads as before" "$OUT" "kid5
20
1
5
no-f21"
aj_run diff kid
expect_eq "diff: only what it changed since its base" "$(printf '%s\n' "$OUT" | sort)" "A k1
A k2
A k3
A k4
A k5
M count"
