#!/usr/bin/env bash
# The workspace's .git/hooks and .git/config run code on the host the next time the user runs
# git there, so the workspace-write preset keeps them read-only. The attacker tries to write
# them, unlink or rename them, link them, replace the whole .git directory, write a
# submodule's hooks and config, repoint a worktree's .git file, and redirect git through
# .git/commondir (during the run and through --overlay apply). No test runs git on the host
# afterwards: the payloads are only looked at.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

ATTACK='
import errno, os, shutil
def t(name, fn):
    try:
        fn()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def write(p, mode="w"):
    with open(p, mode) as f:
        f.write("#!/bin/sh\ntouch /tmp/pwned\n")
t("hook-write", lambda: write(".git/hooks/post-checkout"))
t("hook-sample-append", lambda: write(".git/hooks/pre-commit.sample", "a"))
t("config-append", lambda: write(".git/config", "a"))
t("config-unlink", lambda: os.unlink(".git/config"))
t("config-rename", lambda: os.rename(".git/config", "cfg"))
t("config-link", lambda: os.link(".git/config", "cfg-link"))
t("hooks-rename", lambda: os.rename(".git/hooks", "hooks"))
t("hooks-rmdir", lambda: os.rmdir(".git/hooks"))
'

# Replaces .git by a copy whose config names a hooks directory of the attacker.
REPLACE='
import errno, os, shutil
try:
    os.rename(".git", ".git-orig")
    print("rename-git OK")
except OSError as e:
    print("rename-git", errno.errorcode[e.errno])
    raise SystemExit(0)
shutil.copytree(".git-orig", ".git", symlinks=True)
with open(".git/config", "a") as f:
    f.write("[core]\n\thooksPath = .evil-hooks\n\tfsmonitor = touch /tmp/pwned\n")
os.makedirs(".git/hooks", exist_ok=True)
with open(".git/hooks/post-checkout", "w") as f:
    f.write("#!/bin/sh\ntouch /tmp/pwned\n")
print("replaced")
'

git_workspace() {
	adv_setup
	git -C "$WS" init -q
	chmod -R a+rwX "$WS"
	CONFIG_SUM=$(sha256sum <"$WS/.git/config")
	GIT_INODE=$(stat -c %i "$WS/.git")
	HOOKS_BEFORE=$(ls -A "$WS/.git/hooks" | sort | tr '\n' ' ')
}

test_direct_writes() {
	git_workspace
	sandbox -- python3 -c "$ATTACK"
	expect_line "write a new hook: EROFS" hook-write EROFS
	expect_line "append to a sample hook: EROFS" hook-sample-append EROFS
	expect_line "append to .git/config: EROFS" config-append EROFS
	expect_line "unlink .git/config (a mount point): EBUSY" config-unlink EBUSY
	expect_line_in "rename .git/config (a mount point) away: refused" config-rename EBUSY EXDEV
	expect_line "hardlink .git/config elsewhere: EXDEV" config-link EXDEV
	expect_line_in "rename .git/hooks (a mount point) away: refused" hooks-rename EBUSY EXDEV
	expect_line "rmdir .git/hooks (a mount point): EBUSY" hooks-rmdir EBUSY
	expect_eq "host: .git/config unchanged" "$(sha256sum <"$WS/.git/config")" "$CONFIG_SUM"
	expect_eq "host: no hook added" "$(ls -A "$WS/.git/hooks" | sort | tr '\n' ' ')" \
		"$HOOKS_BEFORE"
}

# Moving .git aside would take the read-only mounts with it and leave a writable place for a
# new .git.
test_replace_git_dir() {
	git_workspace
	sandbox -- python3 -c "$REPLACE"
	expect_eq "replacement attack ran (exit code)" "$RC" 0
	expect_line_in "rename .git away: refused" rename-git EBUSY EXDEV
	expect_eq "host: .git is still the original directory" "$(stat -c %i "$WS/.git")" \
		"$GIT_INODE"
	expect_eq "host: .git/config unchanged after replacing .git" \
		"$(sha256sum <"$WS/.git/config")" "$CONFIG_SUM"
	check "host: no post-checkout hook after replacing .git" \
		test ! -e "$WS/.git/hooks/post-checkout"
}

test_missing_hooks_dir() {
	git_workspace
	rm -rf "$WS/.git/hooks"
	sandbox -- sh -c 'echo x > .git/hooks/pre-push; echo "rc=$?"'
	expect_contains "a missing hooks directory is created read-only" "$OUT" "rc=2"
	check "host: hooks directory exists and is empty" \
		bash -c '[ -d "$1" ] && [ -z "$(ls -A "$1")" ]' _ "$WS/.git/hooks"
}

# A submodule's repository lives in .git/modules/NAME with hooks and config of its own, which
# git runs on the host as well (`git status` in the superproject runs the submodule's
# core.fsmonitor, for one).
test_submodule_repo() {
	adv_setup
	local cfg sum
	git init -q "$T/sub"
	git -C "$T/sub" -c user.email=t@t -c user.name=t commit -q --allow-empty -m init
	git init -q "$WS"
	git -C "$WS" -c protocol.file.allow=always submodule add -q "$T/sub" sub >/dev/null 2>&1
	cfg=$WS/.git/modules/sub/config
	if [ ! -f "$cfg" ]; then
		skip "submodule hooks and config" "git could not add a submodule here"
		return
	fi
	chmod -R a+rwX "$WS"
	sum=$(sha256sum <"$cfg")
	sandbox -- python3 -c "$ATTACK_MODULE"
	expect_line "submodule config append: EROFS" module-config EROFS
	expect_line "submodule hook write: EROFS" module-hook EROFS
	expect_eq "host: submodule config unchanged" "$(sha256sum <"$cfg")" "$sum"
	check "host: no submodule hook added" test ! -e "$WS/.git/modules/sub/hooks/post-checkout"
}

ATTACK_MODULE='
import errno
def t(name, path, mode):
    try:
        with open(path, mode) as f:
            f.write("[core]\n\tfsmonitor = touch /tmp/pwned\n")
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
t("module-config", ".git/modules/sub/config", "a")
t("module-hook", ".git/modules/sub/hooks/post-checkout", "w")
'

# In a linked worktree (or a submodule checkout) .git is a file naming the repository; pointing
# it at a directory of the attacker's makes host git use that directory's hooks and config.
test_gitdir_file() {
	adv_setup
	local before
	git init -q "$T/repo"
	git -C "$T/repo" -c user.email=t@t -c user.name=t commit -q --allow-empty -m init
	rmdir "$WS"
	git -C "$T/repo" worktree add -q "$WS" 2>/dev/null
	if [ ! -f "$WS/.git" ]; then
		skip "gitdir file" "git could not make a linked worktree here"
		return
	fi
	chmod -R a+rwX "$WS"
	before=$(cat "$WS/.git")
	sandbox -- python3 -c '
import errno
try:
    with open(".git", "w") as f:
        f.write("gitdir: .evil\n")
    print("gitdir-file OK")
except OSError as e:
    print("gitdir-file", errno.errorcode[e.errno])
'
	expect_line "rewrite the .git file: EROFS" gitdir-file EROFS
	expect_eq "host: .git file unchanged" "$(cat "$WS/.git")" "$before"
}

# .git/commondir makes git take config and hooks from another directory, one the attacker can
# fill in the workspace. Host git runs while the sandbox runs too (editors poll `git status`,
# shell prompts call it), so the file must not stay on the host. Creating it cannot be refused
# without refusing every new file in .git (git's own lock files): the supervisor removes it
# the moment it appears, and says so.
COMMONDIR='
import errno, os, shutil, time
shutil.copytree(".git", "evil-common", symlinks=True,
                ignore=shutil.ignore_patterns("hooks", "config"))
with open("evil-common/config", "w") as f:
    f.write("[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch /tmp/pwned\n")
try:
    with open(".git/commondir", "w") as f:
        f.write("../evil-common\n")
    print("commondir OK", flush=True)
except OSError as e:
    print("commondir", errno.errorcode[e.errno], flush=True)
print("planted", flush=True)
time.sleep(3)
'

test_commondir_window() {
	git_workspace
	local seen=absent
	rm -f "$REPORT"
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) -- python3 -c "$COMMONDIR" \
		>"$T/out" 2>"$T/err" </dev/null &
	local pid=$!
	for _ in $(seq 100); do
		grep -q planted "$T/out" 2>/dev/null && break
		sleep 0.05
	done
	[ -e "$WS/.git/commondir" ] && seen=present
	wait "$pid"
	OUT=$(cat "$T/out")
	expect_contains "commondir attack ran" "$OUT" planted
	expect_contains "the removal of .git/commondir is reported" "$(cat "$T/err")" \
		"removed $WS/.git/commondir"
	expect_eq "host: no .git/commondir while the sandbox runs" "$seen" absent
	check "host: no .git/commondir after the run" test ! -e "$WS/.git/commondir"
}

# With --overlay apply the changes under .git are merged into the host's .git when the command
# succeeds: a .git/commondir made inside must not be among them.
test_commondir_overlay_apply() {
	git_workspace
	sandbox --overlay apply --state-dir "$T/state" -- sh -c '
		cp -r .git evil-common && echo ../evil-common > .git/commondir; echo "commondir $?"'
	expect_eq "overlay apply run: exit code" "$RC" 0
	check "host: no .git/commondir after --overlay apply" test ! -e "$WS/.git/commondir"
	expect_eq "host: .git/config unchanged after --overlay apply" \
		"$(sha256sum <"$WS/.git/config")" "$CONFIG_SUM"
}

test_direct_writes
test_replace_git_dir
test_missing_hooks_dir
test_submodule_repo
test_gitdir_file
test_commondir_window
test_commondir_overlay_apply
