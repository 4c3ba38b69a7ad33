#!/usr/bin/env bash
# agentjail cp between the host and a running persistent sandbox: files and directory trees
# both ways, contents and modes intact, cp's rule for an existing destination directory, names
# with odd characters, and the refusals (stopped sandbox, unknown sandbox, both or neither side
# in a sandbox, a relative sandbox path).
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

H=$(mktmp)
pj_create box

# ---- host -> sandbox ---------------------------------------------------------------------

head -c 3000000 /dev/urandom >"$H/blob"
BLOB_SUM=$(sha256sum <"$H/blob" | cut -d' ' -f1)
printf '#!/bin/sh\necho script-ran\n' >"$H/tool.sh"
chmod 755 "$H/tool.sh"
aj_run cp "$H/blob" box:/home/user/
expect_eq "cp file into an existing directory: exit 0" "$RC" 0
pj_x box sh -c 'sha256sum blob | cut -d" " -f1'
expect_eq "cp file in: keeps its name and contents (3 MB)" "$OUT" "$BLOB_SUM"
aj_run cp "$H/tool.sh" box:/home/user/renamed.sh
expect_eq "cp file to a new name: exit 0" "$RC" 0
pj_x box ./renamed.sh
expect_eq "cp file in: the mode is kept (it runs)" "$OUT" script-ran
pj_x box stat -c '%U %a' renamed.sh
expect_eq "cp file in: owned by the sandbox user, mode 755" "$OUT" "user 755"
if is_root; then
	echo private >"$H/rootonly"
	chmod 600 "$H/rootonly"
	aj_run cp "$H/rootonly" box:/home/user/
	pj_x box cat rootonly
	expect_eq "cp of a host file only root reads: readable by the sandbox user" "$OUT" private
fi
echo old >"$H/over"
aj_run cp "$H/over" box:/home/user/over
echo newer >"$H/over"
aj_run cp "$H/over" box:/home/user/over
pj_x box cat over
expect_eq "cp over an existing file replaces its contents" "$OUT" newer

mkdir -p "$H/tree/a/b/c" "$H/tree/empty"
echo 1 >"$H/tree/top"
echo 2 >"$H/tree/a/b/c/deep"
chmod 700 "$H/tree/a"
aj_run cp "$H/tree" box:/home/user/tree
expect_eq "cp directory in: exit 0" "$RC" 0
pj_x box sh -c 'cd tree && find . | sort && cat top a/b/c/deep'
expect_eq "cp directory in: the whole tree, empty directories included" "$OUT" ".
./a
./a/b
./a/b/c
./a/b/c/deep
./empty
./top
1
2"
# Files keep their mode (above); so must directories: a private (700) directory must not
# become world-readable on the way.
pj_x box stat -c %a tree/a
expect_eq "cp directory in: a directory's mode is kept (700)" "$OUT" 700
aj_run cp "$H/tree" box:/home/user/tree
pj_x box test -d tree/tree
expect_eq "cp directory into an existing directory: lands inside it, as cp does" "$RC" 0

# ---- sandbox -> host ---------------------------------------------------------------------

pj_x box sh -c 'head -c 2000000 /dev/urandom >out.bin; sha256sum out.bin | cut -d" " -f1; mkdir -p o/p/q && echo deep >o/p/q/r && echo top >o/t && chmod 640 o/t && chmod 700 o/p'
IN_SUM=$OUT
aj_run cp box:/home/user/out.bin "$H/got.bin"
expect_eq "cp file out: exit 0" "$RC" 0
expect_eq "cp file out: contents (2 MB)" "$(sha256sum <"$H/got.bin" | cut -d' ' -f1)" "$IN_SUM"
mkdir "$H/into"
aj_run cp box:/home/user/out.bin "$H/into"
check "cp file out into an existing directory: keeps its name" [ -f "$H/into/out.bin" ]
aj_run cp box:/home/user/o "$H/o-copy"
expect_eq "cp directory out: exit 0" "$RC" 0
expect_eq "cp directory out: the tree" "$(cd "$H/o-copy" && find . | sort | tr '\n' ' ')" ". ./p ./p/q ./p/q/r ./t "
expect_eq "cp directory out: contents" "$(cat "$H/o-copy/p/q/r" "$H/o-copy/t")" "deep
top"
expect_eq "cp directory out: file mode kept" "$(stat -c %a "$H/o-copy/t")" 640
expect_eq "cp directory out: a directory's mode is kept (700)" "$(stat -c %a "$H/o-copy/p")" 700
expect_eq "cp directory out: owned by the caller on the host" "$(stat -c %u "$H/o-copy/t")" "$(id -u)"
aj_run cp --json box:/home/user/o "$H/o-json"
printf '%s' "$OUT" >"$H/cp.json"
expect_eq "cp --json: files and bytes" "$(json "$H/cp.json" '(d["files"], d["bytes"])')" "(2, 9)"

# ---- odd names -----------------------------------------------------------------------------

ODD=("with space" "quote'd" 'dq"x' 'dollar$HOME' '-leading-dash' 'ünïcødé' 'colon:name' 'back\slash' 'star*?' $'new\nline' '.hidden')
mkdir "$H/odd"
for n in "${ODD[@]}"; do printf '%s' "$n" >"$H/odd/$n"; done
aj_run cp "$H/odd" box:/home/user/odd
expect_eq "cp in of odd names: exit 0" "$RC" 0
bad=
for n in "${ODD[@]}"; do
	got=$("$AJ" exec box -- cat "/home/user/odd/$n" 2>/dev/null)
	[ "$got" = "$n" ] || bad="$bad [$n]"
done
expect_eq "cp in: every odd name arrives with its contents" "$bad" ""
aj_run cp box:/home/user/odd "$H/odd-back"
expect_eq "cp out of odd names: exit 0" "$RC" 0
bad=
for n in "${ODD[@]}"; do
	[ "$(cat "$H/odd-back/$n" 2>/dev/null)" = "$n" ] || bad="$bad [$n]"
done
expect_eq "cp out: every odd name comes back with its contents" "$bad" ""
expect_eq "cp out: nothing else" "$(ls -A "$H/odd-back" | wc -l)" "$(ls -A "$H/odd" | wc -l)"
aj_run cp "$H/odd/with space" "box:/home/user/name with:colon"
pj_x box cat "/home/user/name with:colon"
expect_eq "cp to a sandbox path with a space and a colon" "$OUT" "with space"
aj_run cp "box:/home/user/name with:colon" "$H/back with space"
expect_eq "cp from a sandbox path with a space and a colon" "$(cat "$H/back with space")" "with space"

# ---- refusals ------------------------------------------------------------------------------

aj_run cp "$H/blob" "$H/blob2"
expect_eq "cp with no sandbox side: exit 125" "$RC" 125
expect_contains "cp with no sandbox side: says so" "$ERR" "NAME:/absolute/path"
aj_run cp box:/home/user/out.bin box:/home/user/x
expect_eq "cp with two sandbox sides: exit 125" "$RC" 125
aj_run cp "$H/blob" box:relative/path
expect_eq "cp to a relative sandbox path: exit 125" "$RC" 125
aj_run cp "$H/blob" nosuch:/home/user/
expect_eq "cp to an unknown sandbox: exit 1" "$RC" 1
aj_run cp box:/home/user/does-not-exist "$H/nothing"
check "cp of a missing sandbox file: fails" [ "$RC" != 0 ]
check "cp of a missing sandbox file: creates nothing on the host" [ ! -e "$H/nothing" ]
aj_run cp "$H/does-not-exist" box:/home/user/
check "cp of a missing host file: fails" [ "$RC" != 0 ]
aj_run cp "$H/blob" box:/usr/blob
check "cp into a read-only sandbox directory: fails" [ "$RC" != 0 ]
expect_contains "cp into a read-only directory: says why" "$ERR" "/usr/blob"
aj_run stop box
aj_run cp "$H/blob" box:/home/user/late
expect_eq "cp to a stopped sandbox: exit 3" "$RC" 3
expect_contains "cp to a stopped sandbox: says it is stopped" "$ERR" stopped
aj_run start box
pj_x box test -e late
expect_eq "cp to a stopped sandbox: wrote nothing" "$RC" 1
