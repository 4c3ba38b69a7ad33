#!/usr/bin/env bash
# File endpoints of agentjail serve: write (201 new, 200 replaced, parents, mode), read (binary
# round trip, 404, a directory is 400 is_a_directory), list, stat (symlinks not followed unless
# asked), mkdir, move, remove (409 not empty, recursive), relative paths against the working
# directory, and 409 when the sandbox is stopped or paused. Then containment: "..", absolute
# host paths, symlinks made inside pointing at host files, /proc, writes through links, and
# removals and moves of host paths all stay inside the sandbox (the daemon runs as the test's
# user, root in the main pass): no host file is read, written or removed, no daemon secret seen.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
MARKER="daemon-secret-$RANDOM$RANDOM"
AJ_SERVE_MARKER=$MARKER sv_start || { not_ok "serve starts ($(tail -5 "$SV_LOG"))"; exit 0; }
sv_create fs
F=/v1/sandboxes/fs/files
put() { api PUT "$F?path=$1${3:+&$3}" -H 'Content-Type: application/octet-stream' --data-binary "$2"; }

# ---- write and read ---------------------------------------------------------------------------

put hello.txt 'hello'
expect_api "put a new file: 201" 201
expect_eq "put: the absolute path inside" "$(bj 'd["path"]')" /home/user/hello.txt
expect_eq "put: the size" "$(bj 'd["size"]')" 5
put hello.txt 'hello again'
expect_api "put over an existing file: 200" 200
api GET "$F?path=hello.txt"
expect_api "get: 200" 200
expect_eq "get: the content" "$BODY" "hello again"
expect_eq "get: application/octet-stream" "$CTYPE" application/octet-stream
api GET "$F?path=/home/user/hello.txt"
expect_eq "get by absolute path: the same file" "$BODY" "hello again"

head -c 300000 /dev/urandom >"$SV_DIR/blob"
api PUT "$F?path=blob" -H 'Content-Type:' --data-binary @"$SV_DIR/blob"
expect_api "put binary without a Content-Type: 201" 201
curl -s --unix-socket "$SOCK" -o "$SV_DIR/blob.back" "http://aj$F?path=blob"
expect_eq "binary round trip: identical bytes" "$(sha256sum <"$SV_DIR/blob.back")" "$(sha256sum <"$SV_DIR/blob")"
OUT=$("$AJ" exec fs -- sha256sum blob | cut -d' ' -f1)
expect_eq "binary round trip: the sandbox sees the same bytes" "$OUT" "$(sha256sum <"$SV_DIR/blob" | cut -d' ' -f1)"

put deep/er/f.txt 'x'
expect_api "put into a missing directory: 404, field path" 404 path not_found
put deep/er/f.txt 'x' parents=true
expect_api "put ?parents=true: 201" 201
put private.txt 's' mode=0600
api GET "$F/stat?path=private.txt"
expect_eq "put ?mode=0600: the file's mode" "$(bj 'd["mode"]')" 0600
expect_eq "put: owned by the sandbox user" "$("$AJ" exec fs -- stat -c %U private.txt)" user

api GET "$F?path=missing.txt"
expect_api "get a missing file: 404, field path" 404 path not_found
api GET "$F?path=deep"
expect_api "get a directory: 400 is_a_directory" 400 path is_a_directory
"$AJ" exec fs -- mkfifo fifo
api GET "$F?path=fifo"
expect_api "get a FIFO: 400 not_a_regular_file (init does not wait for a writer)" 400 path not_a_regular_file

# ---- list, stat ---------------------------------------------------------------------------------

api GET "$F/list?path=."
expect_api "list: 200" 200
expect_eq "list: the entries" "$(bj '" ".join(sorted(e["name"] for e in d["entries"]))')" "blob deep fifo hello.txt private.txt"
expect_eq "list: types" "$(bj '" ".join(sorted(e["type"] for e in d["entries"]))')" "dir fifo file file file"
api GET "$F/list?path=hello.txt"
expect_api "list a file: 400 not_a_directory" 400 path not_a_directory
"$AJ" exec fs -- ln -s hello.txt link
api GET "$F/stat?path=link"
expect_eq "stat of a symlink: type symlink" "$(bj 'd["type"]')" symlink
expect_eq "stat of a symlink: its target text" "$(bj 'd["link"]')" hello.txt
api GET "$F/stat?path=link&follow=true"
expect_eq "stat ?follow=true: the target, a file" "$(bj 'd["type"]')" file
expect_eq "stat ?follow=true: its size" "$(bj 'd["size"]')" 11
api GET "$F/stat?path=deep"
expect_eq "stat of a directory" "$(bj 'd["type"]')" dir

# ---- mkdir, move, remove ------------------------------------------------------------------------

apij POST "$F/mkdir" '{"path": "a/b/c", "parents": true, "mode": "0700"}'
expect_api "mkdir parents: 201" 201
expect_eq "mkdir: the path" "$(bj 'd["path"]')" /home/user/a/b/c
expect_eq "mkdir: the mode" "$("$AJ" exec fs -- stat -c %a a/b/c)" 700
apij POST "$F/mkdir" '{"path": "x/y"}'
expect_api "mkdir without parents under a missing one: 404" 404 path
apij POST "$F/mkdir" '{"path": "a"}'
expect_api "mkdir of an existing directory: 409 already_exists" 409 path already_exists
apij POST "$F/move" '{"from": "hello.txt", "to": "a/b/moved.txt"}'
expect_api "move: 200" 200
expect_eq "move: both absolute" "$(bj 'd["from"] + " " + d["to"]')" "/home/user/hello.txt /home/user/a/b/moved.txt"
api GET "$F?path=a/b/moved.txt"
expect_eq "move: the content at the new path" "$BODY" "hello again"
api GET "$F?path=hello.txt"
expect_api "move: the old path is gone" 404
api DELETE "$F?path=a"
expect_api "remove a non-empty directory: 409 not_empty" 409 "" not_empty
api DELETE "$F?path=a&recursive=true"
expect_api "remove ?recursive=true: 204" 204
api GET "$F/stat?path=a"
expect_api "removed: gone" 404
api DELETE "$F?path=private.txt"
expect_api "remove a file: 204" 204

# ---- sandbox state ------------------------------------------------------------------------------

if is_root; then
	api POST /v1/sandboxes/fs/pause
	api GET "$F?path=blob"
	expect_api "get in a paused sandbox: 409 wrong_state" 409 "" wrong_state
	api POST /v1/sandboxes/fs/resume
else
	skip "files of a paused sandbox" "pausing needs the freezer cgroup, which uid $(id -u) has not"
fi
sv_create fs-stopped '"start": false'
api GET "/v1/sandboxes/fs-stopped/files?path=x"
expect_api "files of a stopped sandbox: 409 wrong_state" 409 "" wrong_state

# ---- containment ----------------------------------------------------------------------------------

# Host files the sandbox must never reach: one in the test's directory (not mounted inside: the
# sandbox has its own /tmp), and the host's /etc/shadow.
printf 'host-only %s\n' "$MARKER" >"$SV_DIR/secret.txt"
printf 'keep\n' >"$SV_DIR/keep.txt"
chmod 644 "$SV_DIR/secret.txt" "$SV_DIR/keep.txt"
never_host() { # NAME: the last response shows neither host file nor the daemon's secret
	expect_not_contains "$1: no host content" "$BODY" "$MARKER"
	check "$1: not a 200 with host data" [ "$CODE" != 200 ] || ! grep -q "$MARKER" <<<"$BODY"
}
api GET "$F?path=$SV_DIR/secret.txt"
expect_api "host path by absolute name: 404 inside the sandbox" 404 path
never_host "host path by absolute name"
api GET "$F?path=../../../../../..$SV_DIR/secret.txt"
expect_api "host path through ..: 404 inside the sandbox" 404 path
never_host "host path through .."
api GET "$F?path=/proc/1/root$SV_DIR/secret.txt"
never_host "host path through /proc/1/root (the sandbox's own root)"
check "host path through /proc/1/root: refused" [ "$CODE" = 404 ] || [ "$CODE" = 403 ]

"$AJ" exec fs -- sh -c "ln -s $SV_DIR/secret.txt s-abs; ln -s ../../../../..$SV_DIR/secret.txt s-rel; ln -s / s-root; ln -s $SV_DIR s-dir; ln -s $SV_DIR/written.txt s-write"
for l in s-abs s-rel "s-root$SV_DIR/secret.txt" s-dir/secret.txt; do
	api GET "$F?path=$l"
	expect_api "symlink $l to a host file: 404 (resolved inside)" 404 path
	never_host "symlink $l"
done
api GET "$F/list?path=s-dir"
expect_api "list through a symlink to a host directory: 404" 404 path
api GET "$F/list?path=s-root/tmp"
expect_not_contains "list / through a symlink: the sandbox's /tmp, not the host's" "$BODY" "$(basename "$(dirname "$SV_DIR")")"

api GET "$F?path=/etc/shadow"
check "the host's /etc/shadow: not served ($CODE)" [ "$CODE" != 200 ]
if [ -r /etc/shadow ]; then
	expect_not_contains "/etc/shadow: none of its content" "$BODY" "$(head -1 /etc/shadow | cut -d: -f1-2)"
fi
api GET "$F?path=/proc/self/environ"
never_host "/proc/self/environ (the opener is the sandbox's init)"
api GET "$F?path=/proc/$SV_PID/environ"
never_host "/proc/<daemon pid>/environ"
check "/proc/<daemon pid>/environ: refused ($CODE)" [ "$CODE" != 200 ]

put s-write 'through a link'
check "write through a symlink to a host path: no host file" test ! -e "$SV_DIR/written.txt"
put "$SV_DIR/made-inside.txt" 'inside' parents=true
expect_api "write to the host path name with parents: made inside the sandbox" 201
check "write to a host path name: no host file" test ! -e "$SV_DIR/made-inside.txt"
api GET "$F?path=$SV_DIR/made-inside.txt"
expect_eq "write to a host path name: readable inside" "$BODY" inside
api DELETE "$F?path=../../../../..$SV_DIR/keep.txt"
expect_api "remove a host file through ..: 404" 404
check "remove through ..: the host file is still there" test -f "$SV_DIR/keep.txt"
api DELETE "$F?path=s-dir&recursive=true"
check "remove a symlink to a host directory: the host directory stays" test -f "$SV_DIR/keep.txt"
apij POST "$F/move" "{\"from\": \"$SV_DIR/keep.txt\", \"to\": \"stolen.txt\"}"
check "move a host file in: refused ($CODE, $(bj 'd["error"]["code"]'))" [ "$CODE" != 200 ]
check "move: the host file is still there" test -f "$SV_DIR/keep.txt"
apij POST "$F/mkdir" "{\"path\": \"$SV_DIR/newdir\", \"parents\": true}"
check "mkdir of a host path name: no host directory" test ! -e "$SV_DIR/newdir"
expect_eq "the host files are unchanged" "$(cat "$SV_DIR/secret.txt" "$SV_DIR/keep.txt")" "host-only $MARKER
keep"
expect_not_contains "the daemon's environment never reached a sandbox file" "$("$AJ" exec fs -- sh -c 'cat /proc/1/environ; env' 2>&1)" "$MARKER"

sv_done
