#!/usr/bin/env bash
# Privilege gain through exec: the host's setuid-root su, setuid/setgid-root and
# file-capability copies of a helper in a read-only directory, and set-ID files the attacker
# tries to make in the workspace by every call that sets a mode — which would stay set-ID (and,
# in a root-owned workspace, root's) on the host.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

SHOWID=$HELPERS/showid

# Runs a program with stdin held open and records the effective uids it runs with while it
# waits (a setuid-root su prompting for a password shows euid 0); "euids LIST".
WATCH='
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
seen = set()
end = time.time() + 3
while time.time() < end and p.poll() is None:
    try:
        with open("/proc/%d/status" % p.pid) as f:
            seen.update(l.split()[2] for l in f if l.startswith("Uid:"))
    except OSError:
        pass
    time.sleep(0.005)
p.kill()
p.wait()
print("euids", ",".join(sorted(seen)) or "-")
'

# The host's setuid-root su (it waits for a password as root): on the host it runs as root
# (control), inside as the sandbox user.
test_host_setuid_programs() {
	local prog=/usr/bin/su host
	if [ ! -u "$prog" ] || [ "$(stat -c %u "$prog")" != 0 ]; then
		skip "$prog stays unprivileged" "$prog is not setuid-root on this host"
		return
	fi
	adv_setup
	host=$(as_unprivileged python3 -c "$WATCH" "$prog" 2>&1)
	expect_contains "control: $prog runs as euid 0 on the host" "$host" "euids 0"
	sandbox -- python3 -c "$WATCH" "$prog"
	expect_line "$prog runs with the sandbox user's euid only" euids 1000
}

# showid inside, as NAME; checks it gained nothing.
expect_unprivileged() {
	local name=$1
	expect_line "$name: euid stays 1000" euid 1000
	expect_line "$name: egid stays 1000" egid 1000
	expect_line "$name: no effective capabilities" capeff 0000000000000000
	expect_line "$name: no permitted capabilities" capprm 0000000000000000
	expect_line "$name: no_new_privs set" nnp 1
}

# Copies of showid made setuid-root, setgid-root and capability-carrying by the host, bound
# in read-only; and one placed straight into the workspace.
make_privileged_copies() {
	mkdir "$T/priv"
	install -o 0 -g 0 -m 4755 "$SHOWID" "$T/priv/suid"
	install -o 0 -g 0 -m 2755 "$SHOWID" "$T/priv/sgid"
	install -o 0 -g 0 -m 0755 "$SHOWID" "$T/priv/caps"
	setcap cap_setuid,cap_dac_override,cap_sys_admin+ep "$T/priv/caps" 2>/dev/null
	install -o 0 -g 0 -m 4755 "$SHOWID" "$WS/suid-in-ws"
}

test_privileged_copies() {
	if ! is_root; then
		skip "setuid-root and file-capability copies" \
			"making a root-owned setuid file needs root"
		return
	fi
	adv_setup
	make_privileged_copies
	expect_contains "control: setuid-root copy gives euid 0 on the host" \
		"$(as_unprivileged "$T/priv/suid")" "euid 0"
	expect_contains "control: setgid-root copy gives egid 0 on the host" \
		"$(as_unprivileged "$T/priv/sgid")" "egid 0"
	local f
	for f in suid sgid caps; do
		sandbox --ro "$T/priv" -- "$T/priv/$f"
		expect_unprivileged "read-only setuid dir, $f"
	done
	if getcap "$T/priv/caps" 2>/dev/null | grep -q cap_sys_admin; then
		expect_not_contains "control: capability copy gains capabilities on the host" \
			"$(as_unprivileged "$T/priv/caps")" "capeff 0000000000000000"
	else
		skip "control: file capabilities" \
			"setcap is not available or the filesystem lacks xattrs"
	fi
	sandbox -- "$WS/suid-in-ws"
	expect_unprivileged "setuid-root file in the workspace"
}

# The attacker tries every way to leave a set-user-ID or set-group-ID file or directory in the
# workspace. Inside it would gain nothing (nosuid, no_new_privs), but on the host the file keeps
# its owner, which for a workspace owned by root is root. Each attempt prints "NAME ERRNO" (or
# OK) and leaves its file behind for the host-side check.
PLANT='
import ctypes, errno, os, shutil, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
def t(name, fn):
    try:
        fn()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def sc(nr, *args):
    conv = [ctypes.c_char_p(a) if isinstance(a, bytes) else ctypes.c_long(a) for a in args]
    if libc.syscall(nr, *conv) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
def copy(name):
    shutil.copy(sys.argv[1], name)
    return name
def create(name, mode):
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT, mode))
def tmpfile_linked(name, mode):
    fd = os.open(".", os.O_WRONLY | os.O_TMPFILE, mode)
    os.link("/proc/self/fd/%d" % fd, name)
t("chmod-suid", lambda: os.chmod(copy("p-chmod-suid"), 0o4755))
t("chmod-sgid", lambda: os.chmod(copy("p-chmod-sgid"), 0o2755))
t("chmod-hi", lambda: sc(90, copy("p-chmod-hi").encode(), (1 << 32) | 0o4755))
t("fchmod", lambda: os.fchmod(os.open(copy("p-fchmod"), os.O_RDONLY), 0o4755))
t("fchmodat", lambda: sc(268, -100, copy("p-fchmodat").encode(), 0o4755))
t("fchmodat2", lambda: sc(452, -100, copy("p-fchmodat2").encode(), 0o4755, 0))
t("open-creat", lambda: create("p-open-creat", 0o4755))
t("creat", lambda: sc(85, b"p-creat", 0o6755))
t("tmpfile", lambda: tmpfile_linked("p-tmpfile", 0o4755))
t("mknod", lambda: os.mknod("p-mknod", stat.S_IFREG | 0o4755))
t("mkdir-sgid", lambda: os.mkdir("p-mkdir-sgid", 0o2777))
t("dir-chmod-sgid", lambda: (os.mkdir("p-dir"), os.chmod("p-dir", 0o2777)))
t("openat2", lambda: sc(437, -100, b"p-openat2", 0, 24))
'

test_planted_setuid() {
	adv_setup
	cp "$SHOWID" "$T/showid"
	chmod 755 "$T/showid"
	chmod 777 "$WS"
	sandbox --ro "$T/showid" -- python3 -c "$PLANT" "$T/showid"
	local k
	for k in chmod-suid chmod-sgid chmod-hi fchmod fchmodat fchmodat2 open-creat creat tmpfile \
		mknod mkdir-sgid dir-chmod-sgid; do
		expect_line "inside: $k with a set-ID mode: EPERM" "$k" EPERM
	done
	expect_line "inside: openat2 (flags in memory): ENOSYS" openat2 ENOSYS
	local f mode bad=""
	for f in "$WS"/p-*; do
		[ -e "$f" ] || continue
		mode=$(stat -c %a "$f")
		[ $((0$mode & 06000)) -eq 0 ] || bad="$bad ${f##*/}:$mode"
	done
	expect_eq "host: no set-ID file or directory in the workspace" "${bad# }" ""
	check "host: the attempts did leave files to check" test -e "$WS/p-chmod-suid"
	cp "$SHOWID" "$WS/plain"
	chmod 755 "$WS/plain"
	sandbox -- "$WS/plain"
	expect_unprivileged "a workspace program run inside"
	if [ -e "$WS/p-chmod-suid" ]; then
		expect_not_contains "host: an attempt's file run as another user gives no euid 0" \
			"$(as_unprivileged "$WS/p-chmod-suid" 2>&1)" "euid 0"
	fi
}

test_host_setuid_programs
test_privileged_copies
test_planted_setuid
