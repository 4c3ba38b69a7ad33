#!/usr/bin/env bash
# Filesystem escapes in the landlock tier (no mount namespace: the host's tree is all there,
# and only Landlock stands between the sandbox and it): reading and writing outside the
# workspace by absolute path, "..", symlinks and hardlinks made inside, /proc/self/root and
# /proc/PID/cwd, descriptors opened with O_PATH, writes into system directories and into
# the host's shared /tmp and /dev/shm. Outside files are world-readable and their directory
# world-writable, so that no host permission, only the sandbox, keeps the attacker out.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

# Each attack prints "NAME OK ..." or "NAME ERRNO".
ATTACK='
import errno, os, sys
T, WS, mark = sys.argv[1], sys.argv[2], sys.argv[3]
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
def opath_read():
    d = os.open(T + "/outside", os.O_PATH)
    fd = os.open("secret", os.O_RDONLY, dir_fd=d)
    return os.read(fd, 100)
t("read-abs", lambda: read(T + "/outside/secret"))
t("read-dotdot", lambda: read(WS + "/../outside/secret"))
t("read-dotdot-rel", lambda: read("../outside/secret"))
t("list-parent", lambda: os.listdir(".."))
t("write-abs", lambda: write(T + "/outside/planted"))
t("write-dotdot", lambda: write("../outside/planted"))
t("truncate-outside", lambda: os.truncate(T + "/outside/secret", 0))
t("unlink-outside", lambda: os.unlink(T + "/outside/secret"))
t("mkdir-dotdot", lambda: os.mkdir("../evil"))
t("rename-workspace", lambda: os.rename(WS, WS + "-moved"))
os.symlink(T + "/outside/secret", "sym-read")
t("symlink-read", lambda: read("sym-read"))
os.symlink(T + "/outside/planted", "sym-write")
t("symlink-write", lambda: write("sym-write"))
os.symlink("/", "sym-root")
t("symlink-root", lambda: read("sym-root" + T + "/outside/secret"))
t("hardlink-outside", lambda: os.link(T + "/outside/secret", "hl-out"))
t("opath-openat", opath_read)
t("rename-into-ro", lambda: os.rename("victim", T + "/ro/victim"))
t("ro-write", lambda: write(T + "/ro/file", mode="a"))
t("ro-truncate", lambda: os.truncate(T + "/ro/file", 0))
t("ro-unlink", lambda: os.unlink(T + "/ro/file"))
t("ro-create", lambda: write(T + "/ro/new"))
t("proc-self-root", lambda: read("/proc/self/root" + T + "/outside/secret"))
t("proc-self-cwd", lambda: read("/proc/self/cwd/../outside/secret"))
t("proc-self-root-up", lambda: read("/proc/self/root/../../.." + T + "/outside/secret"))
t("proc-1-root", lambda: read("/proc/1/root" + T + "/outside/secret"))
t("proc-ppid-cwd", lambda: os.listdir("/proc/%d/cwd" % os.getppid()))
t("usr-write", lambda: write("/usr/bin/planted"))
t("etc-write", lambda: write("/etc/passwd", mode="a"))
t("root-write", lambda: write("/planted"))
t("list-root", lambda: os.listdir("/"))
t("proc-sys-write", lambda: write("/proc/sys/kernel/hostname", "x"))
t("sys-read", lambda: read("/sys/kernel/uevent_seqnum"))
t("etc-shadow", lambda: read("/etc/shadow"))
t("etc-list", lambda: os.listdir("/etc"))
t("home-list", lambda: os.listdir("/home"))
t("root-home", lambda: os.listdir("/root"))
t("run-list", lambda: os.listdir("/run"))
t("var-read", lambda: os.listdir("/var/log"))
t("dev-kmsg", lambda: read("/dev/kmsg"))
t("dev-pts", lambda: os.listdir("/dev/pts"))
t("mknod-dev", lambda: os.mknod("null", 0o20666, os.makedev(1, 3)))
t("tmp-write", lambda: write("/tmp/" + mark, "tmp"))
t("var-tmp-write", lambda: write("/var/tmp/" + mark, "vartmp"))
t("dev-shm-write", lambda: write("/dev/shm/" + mark, "shm"))
t("usr-read", lambda: len(read("/usr/bin/env" if False else "/etc/os-release")) > 0)
t("workspace-write", lambda: write("inside"))
t("home-write", lambda: write(os.environ["HOME"] + "/h"))
t("tmpdir-write", lambda: write(os.environ["TMPDIR"] + "/t"))
print("done")
'

setup_tree() {
	tl_setup
	mkdir "$T/outside" "$T/ro"
	echo "host-secret-$RANDOM" >"$T/outside/secret"
	echo "read-only-original" >"$T/ro/file"
	echo victim >"$WS/victim"
	chmod 644 "$T/outside/secret" "$T/ro/file"
	chmod 777 "$T/outside" "$T/ro" "$WS" "$T"
	# The attacker's own files: only Landlock refuses them, not ownership.
	is_root && chown "$TIER_UID:$TIER_UID" "$T/ro/file" "$T/outside/secret"
}

test_attacks() {
	local mark
	mark=$(echo "ajmark$$x$RANDOM$RANDOM")
	tl_sandbox --ro "$T/ro" -- python3 -c "$ATTACK" "$T" "$WS" "$mark"
	expect_contains "attack script printed its last line" "$OUT" "done"
	expect_eq "attack script exit code" "$RC" 0

	# Everything outside the granted paths is there, and Landlock refuses it (EACCES).
	expect_line "read by absolute path: EACCES" read-abs EACCES
	expect_line "read via workspace/..: EACCES" read-dotdot EACCES
	expect_line "read via relative ..: EACCES" read-dotdot-rel EACCES
	expect_line "list the workspace's parent: EACCES" list-parent EACCES
	expect_line "write by absolute path: EACCES" write-abs EACCES
	expect_line "write via ..: EACCES" write-dotdot EACCES
	expect_line "truncate a host file: EACCES" truncate-outside EACCES
	expect_line "unlink a host file: EACCES" unlink-outside EACCES
	expect_line "mkdir beside the workspace: EACCES" mkdir-dotdot EACCES
	expect_line "rename the workspace away: EACCES" rename-workspace EACCES
	expect_line "read through a symlink made inside: EACCES" symlink-read EACCES
	expect_line "write through a symlink made inside: EACCES" symlink-write EACCES
	expect_line "read through a symlink to /: EACCES" symlink-root EACCES
	# Landlock's REFER rule: a link may not give a file more rights than it had.
	expect_line "hardlink a host file into the workspace: EXDEV" hardlink-outside EXDEV
	expect_line "openat under an O_PATH descriptor of a host directory: EACCES" opath-openat EACCES
	expect_line_in "rename into a read-only grant: refused" rename-into-ro EACCES EXDEV
	expect_line "append to a read-only grant: EACCES" ro-write EACCES
	expect_line "truncate a read-only grant: EACCES" ro-truncate EACCES
	expect_line "unlink in a read-only grant: EACCES" ro-unlink EACCES
	expect_line "create in a read-only grant: EACCES" ro-create EACCES
	expect_line "/proc/self/root/<host path>: EACCES" proc-self-root EACCES
	expect_line "/proc/self/cwd/../<host path>: EACCES" proc-self-cwd EACCES
	expect_line "/proc/self/root/../../..: EACCES" proc-self-root-up EACCES
	expect_line "/proc/1/root/<host path>: EACCES" proc-1-root EACCES
	expect_line "/proc/<keeper>/cwd: EACCES (outside the Landlock domain)" proc-ppid-cwd EACCES
	expect_line "write into /usr: EACCES" usr-write EACCES
	expect_line "append to /etc/passwd: EACCES" etc-write EACCES
	expect_line "write into /: EACCES" root-write EACCES
	expect_line "list /: EACCES" list-root EACCES
	expect_line "write to /proc/sys: EACCES" proc-sys-write EACCES
	expect_line "read /sys: EACCES" sys-read EACCES
	expect_line "read /etc/shadow: EACCES" etc-shadow EACCES
	expect_line "list /etc: EACCES (only chosen entries are granted)" etc-list EACCES
	expect_line "list /home: EACCES" home-list EACCES
	expect_line "list /root: EACCES" root-home EACCES
	expect_line "list /run (host sockets): EACCES" run-list EACCES
	expect_line "list /var/log: EACCES" var-read EACCES
	expect_line "read /dev/kmsg: EACCES" dev-kmsg EACCES
	expect_line "the host's /dev/pts is not granted: EACCES" dev-pts EACCES
	expect_line_in "mknod of a device in the workspace: refused" mknod-dev EACCES EPERM
	expect_line "write into the host's /tmp: EACCES" tmp-write EACCES
	expect_line "write into the host's /var/tmp: EACCES" var-tmp-write EACCES
	expect_line "write into the host's /dev/shm: EACCES" dev-shm-write EACCES
	# What is granted works.
	expect_line "read a granted /etc entry" usr-read "OK True"
	expect_line "write in the workspace" workspace-write "OK None"
	expect_line "write in HOME" home-write "OK None"
	expect_line "write in TMPDIR" tmpdir-write "OK None"
	check_host_side "$mark"
}

check_host_side() {
	local mark=$1
	check "host: secret unchanged" grep -q '^host-secret-' "$T/outside/secret"
	check "host: nothing planted next to the secret" test ! -e "$T/outside/planted"
	check "host: no directory made beside the workspace" test ! -e "$T/evil"
	check "host: the workspace was not moved" test -d "$WS"
	check "host: no hardlink in the workspace" test ! -e "$WS/hl-out"
	expect_eq "host: read-only file unchanged" "$(cat "$T/ro/file")" "read-only-original"
	check "host: nothing created in the read-only grant" test ! -e "$T/ro/new"
	check "host: nothing planted in /usr/bin" test ! -e /usr/bin/planted
	check "host: nothing planted in /" test ! -e /planted
	check "host: nothing in /tmp" test ! -e "/tmp/$mark"
	check "host: nothing in /var/tmp" test ! -e "/var/tmp/$mark"
	check "host: nothing in /dev/shm" test ! -e "/dev/shm/$mark"
	check "host: passwd untouched" bash -c '! grep -q pwned /etc/passwd'
	check "host: no device node in the workspace" test ! -e "$WS/null"
}

setup_tree
test_attacks
