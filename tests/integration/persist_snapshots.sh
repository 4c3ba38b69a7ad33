#!/usr/bin/env bash
# Snapshots, forks and diffs of persistent sandboxes: a snapshot of a stopped and of a running
# sandbox, create --from, a snapshot's contents never change after it is taken, fork --count 3
# makes independent sandboxes, diff lists A/M/D against the lower layers, a snapshot in use
# cannot be removed, and snapshot retention with gc.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# tree_sum DIR: a checksum of every path, type, mode and content below DIR on the host.
tree_sum() {
	(cd "$1" && find . -printf '%p %y %m %s\n' | sort && find . -type f -print0 | sort -z |
		xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}
snap_field() {
	"$AJ" snapshots --json | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]]
d = s[0] if s else None
print(eval(sys.argv[2]) if d else "MISSING")' "$1" "$2"
}

# can_freeze: snapshots and forks of a running sandbox freeze it, which needs the freezer
# cgroup (root here; rootless has none without delegation).
can_freeze() { is_root; }
# frozen ARGS...: agentjail ARGS on sandbox src as it is, or, where a running sandbox cannot
# be frozen, with src stopped for the time of the command. OUT, ERR, RC as aj_run sets them.
frozen() {
	if can_freeze; then
		aj_run "$@"
		return
	fi
	"$AJ" stop src >/dev/null 2>&1
	aj_run "$@"
	local rc=$RC out=$OUT err=$ERR
	"$AJ" start src >/dev/null 2>&1
	RC=$rc OUT=$out ERR=$err
}

# ---- a snapshot of a stopped sandbox, in a state directory that has none yet --------------

# The first snapshot a state directory ever takes, of a stopped sandbox (no layers/ yet).
FRESH=$(mktmp)/state
PJ_EXTRA_STATES+=("$FRESH")
# shellcheck disable=SC2086
AGENTJAIL_STATE_DIR=$FRESH aj_run create --name first --stopped $PJ_FLAGS
expect_eq "fresh state directory: create --stopped" "$RC" 0
AGENTJAIL_STATE_DIR=$FRESH aj_run snapshot first --name first-snap
expect_eq "fresh state directory: snapshot of a stopped sandbox: exit 0" "$RC" 0
[ "$RC" = 0 ] || printf '# %s\n' "$ERR"
AGENTJAIL_STATE_DIR=$FRESH aj_run start first
expect_eq "fresh state directory: the sandbox starts after its snapshot" "$RC" 0
AGENTJAIL_STATE_DIR=$FRESH aj_run snapshots --json
expect_not_contains "fresh state directory: no snapshot left half made" "$OUT" '"creating"'

# ---- snapshot of a running sandbox, then of the same sandbox stopped ----------------------

pj_create src
pj_x src sh -c 'echo one >f; echo gone >g; mkdir -p d && echo y >d/y && echo z >d/z; printf "\000\001bin" >b; chmod 750 d; ln -s f link; echo two >f2'
expect_eq "source files written" "$RC" 0
SRC_ID=$(pj_id src)
pj_x src sh -c 'while :; do date +%s%N >beat; sleep 0.05; done </dev/null >/dev/null 2>&1 &'
if can_freeze; then
	aj_run snapshot src --name s-running
	expect_eq "snapshot of a running sandbox: exit 0" "$RC" 0
	[ "$RC" = 0 ] || pj_bail "snapshot of a running sandbox"
	expect_eq "snapshot of a running sandbox: it is running afterwards (not left paused)" "$(pj_state src)" running
	b1=$("$AJ" exec src -- cat beat)
	beat_moved() { [ "$("$AJ" exec src -- cat beat)" != "$b1" ]; }
	check "snapshot of a running sandbox: its processes go on" pj_wait 3 beat_moved
else
	# A consistent copy of a live workspace needs its processes frozen: without a freezer
	# the snapshot is refused cleanly, and taken once the sandbox is stopped.
	aj_run snapshot src --name s-refused
	expect_eq "snapshot of a running sandbox without a freezer cgroup: refused (exit 125)" "$RC" 125
	expect_contains "refused snapshot: says why" "$ERR" "cgroup"
	expect_eq "refused snapshot: the sandbox is still running" "$(pj_state src)" running
	expect_eq "refused snapshot: no snapshot recorded" "$(snap_field s-refused 'd')" MISSING
	check "refused snapshot: no layer left behind" [ -z "$(ls -A "$STATE/layers" 2>/dev/null)" ]
	frozen snapshot src --name s-running
	[ "$RC" = 0 ] || pj_bail "snapshot of the stopped sandbox"
fi
L2=$(snap_field s-running 'd["layers"][-1]')
SUM2=$(tree_sum "$STATE/layers/$L2")
expect_eq "snapshot of a running sandbox: state ready" "$(snap_field s-running 'd["state"]')" ready

aj_run stop src
STACK_BEFORE=$(pj_field src 'd["layers"]')
aj_run snapshot --json src --name s-stopped
expect_eq "snapshot of a stopped sandbox: exit 0" "$RC" 0
[ "$RC" = 0 ] || pj_bail "snapshot of a stopped sandbox"
printf '%s' "$OUT" >"$STATE/../snap.json"
expect_eq "snapshot --json: name" "$(json "$STATE/../snap.json" 'd["name"]')" s-stopped
expect_eq "snapshot --json: state ready" "$(json "$STATE/../snap.json" 'd["state"]')" ready
expect_eq "snapshot --json: source is the sandbox's id" "$(json "$STATE/../snap.json" 'd["source"]')" "$SRC_ID"
expect_eq "snapshot --json: the source's stack plus one new layer" \
	"$(json "$STATE/../snap.json" 'd["layers"][:-1]')" "$STACK_BEFORE"
L1=$(json "$STATE/../snap.json" 'd["layers"][-1]')
check "snapshot: its layer is a directory" [ -d "$STATE/layers/$L1" ]
SUM1=$(tree_sum "$STATE/layers/$L1")
expect_eq "snapshot of a stopped sandbox: the source stays stopped" "$(pj_state src)" stopped
aj_run snapshots
expect_contains "snapshots: lists it" "$OUT" s-stopped

aj_run start src
expect_eq "the source starts again after its snapshot" "$RC" 0
pj_x src sh -c 'cat f d/y'
expect_eq "the source still has its files" "$OUT" "one
y"

# ---- the snapshots never change ----------------------------------------------------------

pj_x src sh -c 'echo changed >f; rm g; echo new >h; rm -r d; echo more >>f2'
expect_eq "writes to the source after its snapshots" "$RC" 0
expect_eq "the stopped-source snapshot's layer is unchanged by later writes" \
	"$(tree_sum "$STATE/layers/$L1")" "$SUM1"
expect_eq "the running-source snapshot's layer is unchanged by later writes" \
	"$(tree_sum "$STATE/layers/$L2")" "$SUM2"

pj_create from-stopped --from s-stopped
pj_x from-stopped sh -c 'cat f g d/y d/z f2; od -An -c b | tr -s " "; stat -c %a d; readlink link'
expect_eq "create --from the stopped snapshot: its contents, not the later writes" "$OUT" "one
gone
y
z
two
 \\0 001 b i n
750
f"
expect_eq "create --from: records the snapshot as its base" \
	"$(pj_field from-stopped 'd["base_snapshot"]')" "$(snap_field s-stopped 'd["id"]')"
pj_create from-running --from s-running
pj_x from-running sh -c 'cat f f2 g d/y'
expect_eq "create --from the running snapshot: its contents at snapshot time" "$OUT" "one
two
gone
y"

# A sandbox made from a snapshot writes into its own layer only.
pj_x from-stopped sh -c 'echo mine >f; rm d/y; echo x >new'
pj_create from-stopped-2 --from s-stopped
pj_x from-stopped-2 sh -c 'cat f d/y; test -e new || echo no-new'
expect_eq "writes in one sandbox made from a snapshot do not reach another" "$OUT" "one
y
no-new"
expect_eq "writes in a sandbox made from the snapshot leave its layer unchanged" \
	"$(tree_sum "$STATE/layers/$L1")" "$SUM1"

# ---- diff --------------------------------------------------------------------------------

aj_run diff from-stopped-2
expect_eq "diff of an untouched sandbox: empty" "$OUT" ""
expect_eq "diff of an untouched sandbox: exit 0" "$RC" 0
pj_x from-stopped-2 sh -c 'echo edited >f; rm g d/y; echo add >n; mkdir e && echo z >e/z; rm link; echo back >>d/z'
aj_run diff from-stopped-2
expect_eq "diff: A/M/D against the snapshot's layer" "$OUT" "D d/y
M d/z
A e
A e/z
M f
D g
D link
A n"
aj_run diff --json from-stopped-2
printf '%s' "$OUT" >"$STATE/../diff.json"
expect_eq "diff --json" "$(json "$STATE/../diff.json" '[(c["change"], c["path"]) for c in d]')" \
	"[('deleted', 'd/y'), ('modified', 'd/z'), ('added', 'e'), ('added', 'e/z'), ('modified', 'f'), ('deleted', 'g'), ('deleted', 'link'), ('added', 'n')]"
pj_x from-stopped-2 sh -c 'rm n; rm -r e'
aj_run diff from-stopped-2
expect_eq "diff: a file added then removed is not listed" "$OUT" "D d/y
M d/z
M f
D g
D link"
pj_x from-stopped-2 sh -c 'rm -r d; mkdir d; echo fresh >d/only'
aj_run diff from-stopped-2
expect_contains "diff: a lower directory replaced: its old file deleted" "$OUT" "D d/z"
expect_contains "diff: a lower directory replaced: its new file added" "$OUT" "A d/only"
aj_run stop from-stopped-2
aj_run diff from-stopped-2
expect_contains "diff of a stopped sandbox works too" "$OUT" "M f"
DIFF_BEFORE=$OUT
# A fork takes the sandbox's state as the forks' base; the sandbox's own changes since its
# base are still its changes (as they are when it is forked while running).
aj_run fork --stopped from-stopped-2 --name dfork-1
aj_run diff from-stopped-2
expect_eq "diff after a fork of the stopped sandbox: still lists its changes" "$OUT" "$DIFF_BEFORE"
aj_run diff dfork-1
expect_eq "diff of a fresh fork: nothing changed yet" "$OUT" ""

# ---- fork --------------------------------------------------------------------------------

pj_x src sh -c 'echo at-fork >forked'
frozen fork src --count 3 --name kid
expect_eq "fork --count 3: exit 0" "$RC" 0
expect_eq "fork --count 3: prints the three names" "$OUT" "kid-1
kid-2
kid-3"
for k in kid-1 kid-2 kid-3; do
	expect_eq "fork: $k is running" "$(pj_state $k)" running
done
expect_eq "fork: the source is still running" "$(pj_state src)" running
pj_x kid-1 sh -c 'cat forked f; echo only-in-1 >mine; rm f2'
expect_eq "fork: a fork sees the source's files at fork time" "$OUT" "at-fork
changed"
pj_x src sh -c 'echo after-fork >forked'
for k in kid-2 kid-3; do
	pj_x $k sh -c 'cat forked f2; test -e mine || echo no-mine'
	expect_eq "fork: $k is independent (no write of kid-1 or of the source after the fork)" "$OUT" "at-fork
two
more
no-mine"
done
pj_x src sh -c 'test -e mine || echo no-mine; cat f2'
expect_eq "fork: the source sees no write of a fork" "$OUT" "no-mine
two
more"
expect_eq "fork: labels and policy come along" "$(pj_field kid-2 'd["policy"]["filesystem"]["workspace"]')" /home/user
frozen fork --stopped --json src
expect_eq "fork --stopped --json: exit 0" "$RC" 0
FK=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')
expect_eq "fork --stopped: the new sandbox is stopped" "$(pj_state "$FK")" stopped
aj_run start "$FK"
pj_x "$FK" cat forked
expect_eq "fork --stopped: starts with the source's files" "$OUT" after-fork

# ---- snapshots rm, in use ------------------------------------------------------------------

# A snapshot whose source is gone: in use only by the sandbox made from it.
pj_create base
pj_x base sh -c 'echo base-data >f'
aj_run stop base
aj_run snapshot base --name s-base
aj_run rm -f base
pj_create from-base --from s-base --stopped
LB=$(snap_field s-base 'd["layers"][-1]')
aj_run snapshots rm s-base
expect_eq "snapshots rm of a snapshot in use: exit 3" "$RC" 3
expect_contains "snapshots rm in use: names the user" "$ERR" '"from-base"'
expect_eq "snapshots rm in use: still there" "$(snap_field s-base 'd["state"]')" ready
check "snapshots rm in use: its layer is still there" [ -d "$STATE/layers/$LB" ]
aj_run rm -f from-base
aj_run snapshots rm s-base
expect_eq "snapshots rm once unused: exit 0" "$RC" 0
expect_eq "snapshots rm: gone from the list" "$(snap_field s-base 'd')" MISSING
check "snapshots rm: its layer directory is removed" [ ! -e "$STATE/layers/$LB" ]
aj_run snapshots rm s-base
expect_eq "snapshots rm again: no such snapshot (exit 1)" "$RC" 1

# Nothing was made from a snapshot of a stopped sandbox: its source keeps running on the
# layer, but that does not make the snapshot "in use" (as it does not for a snapshot of a
# running sandbox).
pj_create solo
aj_run stop solo
aj_run snapshot solo --name s-solo
aj_run snapshots rm s-solo
expect_eq "snapshots rm of a snapshot of a stopped sandbox nothing was made from: exit 0" "$RC" 0
[ "$RC" = 0 ] || printf '# %s\n' "$ERR"
aj_run start solo
expect_eq "snapshots rm: the source still starts" "$RC" 0

# ---- snapshot retention and gc -----------------------------------------------------------

# Each from a source of its own, removed afterwards: no sandbox but the ones made from them
# holds their layers.
for sn in short short-used lasting; do
	pj_create "src-$sn"
	pj_x "src-$sn" sh -c 'echo kept >f'
	aj_run stop "src-$sn"
done
aj_run snapshot src-short --name short --retention 6s
expect_eq "snapshot --retention: exit 0" "$RC" 0
aj_run snapshot src-short-used --name short-used --retention 6s
aj_run snapshot src-lasting --name lasting
aj_run stop solo
aj_run snapshot solo --name solo-short --retention 6s
# Every snapshot above is older than this, however slow the machine: the wait below makes
# each of them past its retention.
T_SNAP=$(date +%s%N)
aj_run gc
expect_eq "gc before the retention: the snapshot is kept" "$(snap_field short 'd["state"]')" ready
aj_run rm -f src-short src-short-used src-lasting
LS=$(snap_field short 'd["layers"][-1]')
pj_create uses-it --from short-used
while [ $((($(date +%s%N) - T_SNAP) / 1000000)) -lt 6300 ]; do sleep 0.1; done
aj_run gc
expect_eq "gc after the retention: exit 0" "$RC" 0
expect_eq "gc: a snapshot past its retention is deleted" "$(snap_field short 'd')" MISSING
check "gc: its layer directory is removed" [ ! -e "$STATE/layers/$LS" ]
expect_eq "gc: a snapshot past its retention but in use is kept" "$(snap_field short-used 'd["state"]')" ready
expect_eq "gc: a snapshot without retention is kept" "$(snap_field lasting 'd["state"]')" ready
expect_eq "gc: a snapshot of a stopped sandbox past its retention is deleted" "$(snap_field solo-short 'd')" MISSING
pj_x uses-it cat f
expect_eq "gc: the sandbox made from the kept snapshot still works" "$OUT" kept

# Every layer directory on disk is referenced by a sandbox or a snapshot, and the reverse.
REFS=$( ("$AJ" ls --json; "$AJ" snapshots --json) | python3 -c '
import json, sys
refs = set()
dec = json.JSONDecoder()
text = sys.stdin.read()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    v, i = dec.raw_decode(text, i)
    for x in v:
        refs.update(x["layers"])
print(" ".join(sorted(refs)))')
ONDISK=$(ls "$STATE/layers" | sort | tr '\n' ' ' | sed 's/ $//')
expect_eq "layers on disk are exactly the referenced ones" "$ONDISK" "$REFS"
