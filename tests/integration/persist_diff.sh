#!/usr/bin/env bash
# diff is what a sandbox changed since its base, the workspace it was made with: nothing for a
# plain create, the snapshot for create --from and after a restore, the source's state at the
# time for a fork (of a stopped and, as root, of a running source). Snapshots and forks of the
# sandbox itself turn its writable layer into a shared layer without moving its base, and
# changes across that layer and the new writable one combine (deleted there and made again:
# M; made there and deleted again: nothing; a directory gone: listed once). Records made before
# the base was stored (base_depth -1) fall back to their base snapshot.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for s in sys.argv[2:]:
    c.execute(s)
c.commit()' "$STATE/state.db" "$@"; }
d() { aj_run diff "$1"; [ "$RC" = 0 ] || printf '# diff %s: exit %s: %s\n' "$1" "$RC" "$ERR"; }

# ---- a plain create, snapshotted and forked while stopped ---------------------------------

pj_create p
pj_x p sh -c 'echo 1 >keep; echo 1 >gone; echo 1 >edit; mkdir dir && echo 1 >dir/a'
d p
expect_eq "plain create: everything it made is added" "$OUT" "A dir
A dir/a
A edit
A gone
A keep"
BEFORE=$OUT
aj_run stop p
aj_run snapshot p --name p-snap
d p
expect_eq "after a snapshot of the stopped sandbox: the same" "$OUT" "$BEFORE"
aj_run fork p --stopped --name pf-1
d p
expect_eq "after a fork of the stopped sandbox too" "$OUT" "$BEFORE"
d pf-1
expect_eq "the fork: nothing changed yet" "$OUT" ""

# Changes on top of the moved layers combine with them.
aj_run start p
pj_x p sh -c 'rm gone; echo 2 >>edit; echo new >later; rm -r dir; echo tmp >tmp'
aj_run stop p
aj_run snapshot p --name p-snap2
aj_run start p
pj_x p sh -c 'rm tmp; echo back >gone'
d p
expect_eq "across two own layers and the upper" "$OUT" "A edit
A gone
A keep
A later"
# A file of the base deleted in an own layer and made again above it: modified.
aj_run start pf-1
pj_x pf-1 sh -c 'rm -r dir keep; echo 3 >edit'
aj_run stop pf-1
aj_run snapshot pf-1 --name pf-snap
aj_run start pf-1
pj_x pf-1 sh -c 'echo again >keep; mkdir dir; echo b >dir/b'
d pf-1
expect_eq "the fork: deleted and made again is modified; a replaced directory's old file deleted" "$OUT" "D dir/a
A dir/b
M edit
M keep"
pj_x pf-1 sh -c 'rm -r dir'
d pf-1
expect_eq "the fork: a directory of the base gone: listed once" "$OUT" "D dir
M edit
M keep"

# ---- create --from and restore -------------------------------------------------------------

pj_create c --from p-snap
d c
expect_eq "create --from: nothing changed yet" "$OUT" ""
pj_x c sh -c 'echo c >>keep; rm edit'
d c
expect_eq "create --from: against the snapshot" "$OUT" "D edit
M keep"
aj_run restore c p-snap2
expect_eq "restore: exit 0" "$RC" 0
d c
expect_eq "after a restore: nothing changed since the snapshot restored" "$OUT" ""
pj_x c sh -c 'echo r >restored'
d c
expect_eq "after a restore: only what changed since" "$OUT" "A restored"

# Made before the base was recorded: from the base snapshot, else from nothing.
sql "UPDATE sandboxes SET base_depth = -1 WHERE name IN ('c', 'p')"
d c
expect_eq "no recorded base: the base snapshot's stack" "$OUT" "A restored"
d p
expect_eq "no recorded base nor base snapshot: everything is a change" "$OUT" "A edit
A gone
A keep
A later"

# ---- a fork of a running sandbox (its processes frozen meanwhile) --------------------------

if is_root; then
	pj_x p sh -c 'echo live >live'
	aj_run fork p --name rf-1
	expect_eq "fork of a running sandbox: exit 0" "$RC" 0
	d rf-1
	expect_eq "fork of a running sandbox: nothing changed yet" "$OUT" ""
	pj_x rf-1 sh -c 'rm live; echo x >x'
	d rf-1
	expect_eq "fork of a running sandbox: against the source at the fork" "$OUT" "D live
A x"
	d p
	expect_contains "the running source: its own changes, unchanged by the fork" "$OUT" "A live"
else
	skip "diff of a fork of a running sandbox" "freezing a running sandbox needs the freezer cgroup"
fi
