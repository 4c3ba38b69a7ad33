#!/usr/bin/env bash
# Filesystem escapes: reading and writing host files outside the workspace by absolute path,
# "..", symlinks and hardlinks made inside, /proc/<pid>/root and /proc/self/cwd, and writes
# that should land only in the sandbox's private areas.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

# Each attack prints "NAME OK ..." or "NAME ERRNO".
ATTACK='
import errno, os, sys
T, WS = sys.argv[1], sys.argv[2]
def t(name, fn):
    try:
        r = fn()
        print(name, "OK", repr(r).replace(" ", ""))
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def read(p):
    with open(p) as f:
        return f.read()
def write(p, s="pwned\n", mode="w"):
    with open(p, mode) as f:
        f.write(s)
t("read-abs", lambda: read(T + "/outside/secret"))
t("read-dotdot", lambda: read(WS + "/../outside/secret"))
t("read-dotdot-rel", lambda: read("../outside/secret"))
t("read-dotdot-deep", lambda: read("../../../../../../.." + T + "/outside/secret"))
t("write-abs", lambda: write(T + "/outside/planted"))
t("write-dotdot", lambda: write("../outside/planted"))
t("mkdir-dotdot", lambda: os.mkdir("../evil"))
os.symlink(T + "/outside/secret", "sym-read")
t("symlink-read", lambda: read("sym-read"))
os.symlink(T + "/outside/planted", "sym-write")
t("symlink-write", lambda: write("sym-write"))
os.symlink(T + "/ro/file", "sym-ro")
t("symlink-ro-write", lambda: write("sym-ro", mode="a"))
os.symlink("/", "sym-root")
t("symlink-root", lambda: read("sym-root" + T + "/outside/secret"))
t("hardlink-outside", lambda: os.link(T + "/outside/secret", "hl-out"))
t("hardlink-ro", lambda: os.link(T + "/ro/file", "hl-ro"))
t("rename-into-ro", lambda: os.rename("victim", T + "/ro/victim"))
t("ro-append", lambda: write(T + "/ro/file", mode="a"))
t("ro-chmod", lambda: os.chmod(T + "/ro/file", 0o777))
t("ro-truncate", lambda: os.truncate(T + "/ro/file", 0))
t("ro-unlink", lambda: os.unlink(T + "/ro/file"))
t("proc-self-root", lambda: read("/proc/self/root" + T + "/outside/secret"))
t("proc-self-cwd", lambda: read("/proc/self/cwd/../outside/secret"))
t("proc-self-root-up", lambda: read("/proc/self/root/../../.." + T + "/outside/secret"))
t("proc-1-root", lambda: read("/proc/1/root" + T + "/outside/secret"))
t("proc-1-cwd", lambda: read("/proc/1/cwd/../outside/secret"))
t("usr-write", lambda: write("/usr/bin/planted"))
t("etc-write", lambda: write("/etc/passwd", mode="a"))
t("root-write", lambda: write("/planted"))
t("proc-sys-write", lambda: write("/proc/sys/kernel/hostname", "x"))
t("oldroot", lambda: os.stat("/.oldroot"))
t("sys", lambda: os.stat("/sys/kernel"))
t("sys-module", lambda: os.listdir("/sys/module"))
t("etc-shadow", lambda: read("/etc/shadow"))
t("root-home", lambda: os.listdir("/root"))
t("home", lambda: ",".join(sorted(os.listdir("/home"))))
t("dev-disk", lambda: os.stat("/dev/vda"))
t("dev-kmsg", lambda: os.stat("/dev/kmsg"))
t("dev-mem", lambda: os.stat("/dev/mem"))
t("mknod-dev", lambda: os.mknod("null", 0o20666, os.makedev(1, 3)))
write("/tmp/" + sys.argv[3], "tmp")
write("/var/tmp/" + sys.argv[3] + "v", "vartmp")
write(os.environ["HOME"] + "/" + sys.argv[3], "home")
write("/dev/shm/" + sys.argv[3], "shm")
print("done")
'

setup_tree() {
	adv_setup
	mkdir "$T/outside" "$T/ro"
	echo "host-secret-$RANDOM" >"$T/outside/secret"
	echo "read-only-original" >"$T/ro/file"
	echo victim >"$WS/victim"
	chmod 644 "$T/outside/secret" "$T/ro/file"
	# World-writable so that no host permission, only the sandbox, keeps the attacker out.
	chmod 777 "$T/outside" "$WS"
}

test_attacks() {
	local mark
	mark=$(marker)
	sandbox --ro "$T/ro" -- python3 -c "$ATTACK" "$T" "$WS" "$mark"
	expect_contains "attack script printed its last line" "$OUT" "done"
	expect_eq "attack script exit code" "$RC" 0

	# Paths outside the workspace are simply not in the sandbox.
	expect_line "read by absolute path: ENOENT" read-abs ENOENT
	expect_line "read via workspace/..: ENOENT" read-dotdot ENOENT
	expect_line "read via relative ..: ENOENT" read-dotdot-rel ENOENT
	expect_line "read via ../../..: ENOENT" read-dotdot-deep ENOENT
	expect_line "write by absolute path: ENOENT" write-abs ENOENT
	expect_line "write via ..: ENOENT" write-dotdot ENOENT
	expect_line "read through a symlink made inside: ENOENT" symlink-read ENOENT
	expect_line "write through a symlink made inside: ENOENT" symlink-write ENOENT
	# Read-only grants keep host ownership: a file the sandbox user does not own fails the
	# permission check (EACCES) before the read-only one (EROFS).
	expect_line_in "append through a symlink to a read-only path: refused" symlink-ro-write \
		EROFS EACCES
	expect_line "read through a symlink to /: $(want ENOENT EISDIR)" symlink-root "$(want ENOENT EISDIR)"
	expect_line "hardlink to a host file outside: ENOENT" hardlink-outside ENOENT
	expect_line "hardlink to a read-only bound file: $(want EXDEV EPERM)" hardlink-ro "$(want EXDEV EPERM)"
	expect_line "rename into a read-only path: $(want EXDEV EACCES)" rename-into-ro "$(want EXDEV EACCES)"
	expect_line_in "append to a read-only path: refused" ro-append EROFS EACCES
	expect_line_in "chmod of a read-only path: refused" ro-chmod EROFS EPERM
	expect_line_in "truncate of a read-only path: refused" ro-truncate EROFS EACCES
	expect_line "unlink in a read-only path: $(want EROFS EACCES)" ro-unlink "$(want EROFS EACCES)"
	expect_line "/proc/self/root/<host path>: ENOENT" proc-self-root ENOENT
	expect_line "/proc/self/cwd/../<host path>: ENOENT" proc-self-cwd ENOENT
	expect_line "/proc/self/root/../../..: ENOENT" proc-self-root-up ENOENT
	# init's root is the sandbox's root; in privileged mode init is not even dumpable.
	expect_line_in "/proc/1/root/<host path>: not readable" proc-1-root ENOENT EACCES
	expect_line_in "/proc/1/cwd/../<host path>: not readable" proc-1-cwd ENOENT EACCES
	expect_line "write into /usr: $(want EROFS EACCES)" usr-write "$(want EROFS EACCES)"
	# Root-owned in privileged mode (permission check first), the sandbox user's in rootless.
	expect_line_in "append to /etc/passwd: refused" etc-write EACCES EROFS
	expect_line "write into /: $(want EROFS EACCES)" root-write "$(want EROFS EACCES)"
	expect_line "write to /proc/sys: $(want EROFS EACCES)" proc-sys-write "$(want EROFS EACCES)"
	expect_line "the host root is detached (/.oldroot): ENOENT" oldroot ENOENT
	if tier_is gvisor; then # runsc gives the Sentry a /sys of its own
		expect_line "/sys is the Sentry's: no host module in it" sys-module "OK []"
	else
		expect_line "no /sys: ENOENT" sys ENOENT
	fi
	expect_line "no /etc/shadow: ENOENT" etc-shadow ENOENT
	expect_line "no /root: ENOENT" root-home ENOENT
	expect_line "only the sandbox user's home" home "OK 'user'"
	expect_line "no host disk device: ENOENT" dev-disk ENOENT
	expect_line "no /dev/kmsg: ENOENT" dev-kmsg ENOENT
	expect_line "no /dev/mem: ENOENT" dev-mem ENOENT
	expect_line "mknod of a device in the workspace: $(want EACCES EPERM)" mknod-dev "$(want EACCES EPERM)"
	check_host_side "$mark"
}

check_host_side() {
	local mark=$1
	check "host: secret unchanged" grep -q '^host-secret-' "$T/outside/secret"
	check "host: nothing planted next to the secret" test ! -e "$T/outside/planted"
	check "host: no directory made beside the workspace" test ! -e "$T/evil"
	expect_eq "host: read-only file unchanged" "$(cat "$T/ro/file")" "read-only-original"
	check "host: no device node in the workspace" test ! -e "$WS/null"
	check "host: nothing planted in /usr/bin" test ! -e /usr/bin/planted
	check "host: nothing planted in /" test ! -e /planted
	check "host: sandbox /tmp is private" test ! -e "/tmp/$mark"
	check "host: sandbox /var/tmp is private" test ! -e "/var/tmp/${mark}v"
	check "host: sandbox /dev/shm is private" test ! -e "/dev/shm/$mark"
	check "host: sandbox home is private" test ! -e "$HOME/$mark"
	check "host: passwd untouched" bash -c '! grep -q pwned /etc/passwd'
}

setup_tree
test_attacks
