#!/usr/bin/env bash
# `agentjail run`: what of the host filesystem the sandbox sees — presets (workspace-write with
# .git/hooks and .git/config read-only, read-only), --ro, --rw, --mask, and nothing else of the
# host.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS/.git/hooks" "$WS/.git/objects" "$WS/.git/refs"
printf '[core]\n\tbare = false\n' >"$WS/.git/config"
echo 'ref: refs/heads/main' >"$WS/.git/HEAD"
echo original >"$WS/tracked.txt"
cd "$WS" || exit 1
RL=$(rootless_flags)

# ---- workspace-write (the default preset) ----------------------------------------------------

aj_run run $RL -- sh -c 'echo changed >tracked.txt && echo new >new.txt && echo ok'
expect_eq "workspace-write: the workspace is writable" "$OUT" ok
expect_eq "workspace-write: changes reach the host" "$(cat "$WS/tracked.txt")" changed
expect_eq "workspace-write: new files reach the host" "$(cat "$WS/new.txt")" new

aj_run run $RL -- sh -c 'echo "#!/bin/sh" >.git/hooks/pre-commit'
expect_eq "workspace-write: writing .git/hooks fails" "$RC" 2
expect_contains "workspace-write: .git/hooks is read-only (EROFS)" "$ERR" "Read-only file system"
check "workspace-write: no hook was planted on the host" test ! -e "$WS/.git/hooks/pre-commit"

aj_run run $RL -- sh -c 'echo "[core] hooksPath = /tmp" >>.git/config'
expect_contains "workspace-write: .git/config is read-only (EROFS)" "$ERR" "Read-only file system"
expect_eq "workspace-write: .git/config is unchanged on the host" "$(cat "$WS/.git/config")" \
	"$(printf '[core]\n\tbare = false')"

aj_run run $RL -- sh -c 'mv .git/config .git/config.old 2>&1; rm -rf .git/hooks 2>&1; echo done'
check "workspace-write: .git/config cannot be moved away" test -f "$WS/.git/config"
check "workspace-write: .git/hooks cannot be removed" test -d "$WS/.git/hooks"

aj_run run $RL -- sh -c 'echo "ref: refs/heads/dev" >.git/HEAD && mkdir .git/objects/ab && \
	echo obj >.git/objects/ab/cd && echo ok'
expect_eq "workspace-write: the rest of .git stays writable" "$OUT" ok
expect_eq "workspace-write: .git/HEAD changed on the host" "$(cat "$WS/.git/HEAD")" "ref: refs/heads/dev"

rmdir "$WS/.git/hooks"
aj_run run $RL -- sh -c 'test -d .git/hooks && echo present; touch .git/hooks/x 2>&1'
expect_contains "workspace-write: a missing .git/hooks exists inside" "$OUT" present
expect_contains "workspace-write: ... and is read-only" "$OUT" "Read-only file system"
check "workspace-write: .git/hooks was created on the host" test -d "$WS/.git/hooks"
expect_eq "workspace-write: .git/hooks is owned like .git" \
	"$(stat -c %u:%g "$WS/.git/hooks")" "$(stat -c %u:%g "$WS/.git")"
check "workspace-write: nothing was written into .git/hooks" test -z "$(ls -A "$WS/.git/hooks")"

# ---- read-only preset -----------------------------------------------------------------------

aj_run run $RL --preset read-only -- sh -c 'cat tracked.txt; echo x >tracked.txt'
expect_contains "read-only: the workspace is readable" "$OUT" changed
expect_contains "read-only: writing fails with EROFS" "$ERR" "Read-only file system"
expect_eq "read-only: the file is unchanged" "$(cat "$WS/tracked.txt")" changed
aj_run run $RL --preset read-only -- touch brand-new
expect_eq "read-only: creating a file fails" "$RC" 1
check "read-only: nothing was created" test ! -e "$WS/brand-new"
printf '{"version": 1, "preset": "read-only"}' >"$T/ro.json"
aj_run run $RL --policy "$T/ro.json" -- touch brand-new
expect_contains "read-only preset from a policy file" "$ERR" "Read-only file system"
aj_run run $RL --policy "$T/ro.json" --preset workspace-write -- touch brand-new
expect_eq "--preset overrides the policy file's preset" "$RC" 0
rm -f "$WS/brand-new"

# ---- --ro, --rw, --mask ------------------------------------------------------------------------

mkdir -p "$T/ro" "$T/rw" "$T/outside" "$T/secrets/sub"
echo readable >"$T/ro/a"
echo topsecret-file >"$WS/.env"
echo topsecret-dir >"$T/secrets/key"
echo hidden >"$T/outside/x"

aj_run run $RL --ro "$T/ro" -- sh -c "cat $T/ro/a; echo x >$T/ro/b"
expect_contains "--ro: readable" "$OUT" readable
expect_contains "--ro: not writable (EROFS)" "$ERR" "Read-only file system"
check "--ro: nothing written on the host" test ! -e "$T/ro/b"

aj_run run $RL --rw "$T/rw" -- sh -c "echo written >$T/rw/c"
expect_eq "--rw: writable" "$RC" 0
expect_eq "--rw: the write reaches the host" "$(cat "$T/rw/c" 2>/dev/null)" written

aj_run run $RL --mask "$WS/.env" -- sh -c 'cat .env; echo "rc=$?"'
expect_not_contains "--mask file: the content is not readable" "$OUT$ERR" topsecret-file
case "$OUT" in
"rc=0") ok "--mask file: reads empty" ;;
*"rc=1"*) expect_contains "--mask file: read denied" "$ERR" "Permission denied" ;;
*) not_ok "--mask file: unexpected result '$OUT'" ;;
esac
aj_run run $RL --mask "$WS/.env" -- sh -c 'echo overwrite >.env'
check "--mask file: cannot be written through" test "$(cat "$WS/.env")" = topsecret-file

aj_run run $RL --ro "$T/secrets" --mask "$T/secrets" -- sh -c \
	"ls -A $T/secrets 2>/dev/null; cat $T/secrets/key 2>/dev/null; echo end"
expect_eq "--mask dir: shows no entries and no content" "$OUT" end
expect_not_contains "--mask dir: the secret does not leak" "$OUT$ERR" topsecret-dir
aj_run run $RL --mask "$T/not-there" -- true
expect_eq "--mask of a missing path is accepted" "$RC" 0

# ---- nothing else of the host -----------------------------------------------------------------

aj_run run $RL -- sh -c "ls $T/outside 2>&1"
expect_contains "a host path that was not granted is absent" "$OUT" "No such file or directory"
aj_run run $RL -- sh -c 'ls -A /home; test -e /root && echo root-visible; echo end'
expect_eq "host home directories are absent (only the sandbox user's)" "$OUT" "user
end"
aj_run run $RL -- sh -c 'touch /usr/aj-test 2>&1; touch /etc/aj-test 2>&1; echo end'
expect_contains "system directories are read-only" "$OUT" "Read-only file system"
check "nothing was written into /usr on the host" test ! -e /usr/aj-test
check "nothing was written into /etc on the host" test ! -e /etc/aj-test
aj_run run $RL -- cat /etc/passwd
expect_eq "/etc/passwd names only the sandbox's users" "$OUT" \
	"root:x:0:0:root:/root:/usr/sbin/nologin
user:x:1000:1000::/home/user:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"
aj_run run $RL -- sh -c 'for f in /etc/shadow /etc/ssh/ssh_host_rsa_key /etc/sudoers; do
	test -e $f && echo "present: $f"; done; echo end'
expect_eq "host secrets in /etc are absent" "$OUT" end
aj_run run $RL -- sh -c 'echo ok >"$HOME/f" && cat "$HOME/f" && echo "$HOME"'
expect_eq "the home is a private writable tmpfs" "$OUT" "ok
/home/user"
