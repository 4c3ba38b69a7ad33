#!/usr/bin/env bash
# Root inside an image root attacks for real: mounts, namespaces, device nodes, chroot, the
# kernel's knobs in /proc, the host's processes, set-ID programs after dropping to a user; and
# hostile images: /etc a symlink to a host directory, /etc/passwd a symlink to a host file
# naming a uid-0 user, the workspace's mount point a symlink out. Each attack's result inside
# is checked, and what the host kept.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

img_require
S=$IMG/state
WS=$(mktmp)
RF=$(rootless_flags)
# shellcheck disable=SC2086
ar() { aj_run --state-dir "$S" run $RF -w "$WS" "$@"; }
ai() { aj_run --state-dir "$S" image "$@"; }

img_rich "$IMG/plain" v1 || { not_ok "image is built"; exit 1; }
ai import --name plain:1 "$IMG/plain"

# A rootfs tarball from a Python tarfile recipe: hostile entries the unpacker lets through.
# $1 name, $2 Python statements adding to `t` (with helpers sym(name, target), dir(name),
# reg(name, data)).
hostile() {
	python3 - "$IMG/$1.tar" "$2" <<'EOF'
import io, os, sys, tarfile
t = tarfile.open(sys.argv[1], "w")
def add(name, kind, target="", data=b"", mode=0o755):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = target; i.mode = mode
    i.size = len(data)
    t.addfile(i, io.BytesIO(data) if data else None)
def sym(name, target): add(name, tarfile.SYMTYPE, target)
def dir(name): add(name, tarfile.DIRTYPE)
def reg(name, data, mode=0o644): add(name, tarfile.REGTYPE, data=data.encode(), mode=mode)
busybox = open("/bin/busybox", "rb").read()
dir("bin")
i = tarfile.TarInfo("bin/busybox"); i.mode = 0o755; i.size = len(busybox)
t.addfile(i, io.BytesIO(busybox))
for a in ("sh", "cat", "ls", "echo", "id", "touch"):
    sym("bin/" + a, "busybox")
exec(sys.argv[2])
t.close()
EOF
	ai import --name "$1:1" "$IMG/$1.tar"
	[ "$RC" = 0 ] || not_ok "hostile image $1 is imported ($ERR)"
}

# An errno name for an attack's exit: busybox prints strerror texts.
test_root_attacks() {
	ar --image plain:1 -- sh -c '
		mount -t tmpfs none /mnt 2>/dev/null && echo mount-ok
		umount /proc 2>/dev/null && echo umount-ok
		unshare -U true 2>/dev/null && echo userns-ok
		unshare -m true 2>/dev/null && echo mntns-ok
		mknod /tmp/mem c 1 1 2>/dev/null && echo mknod-ok
		chroot /tmp /bin/true 2>/dev/null && echo chroot-ok
		echo x >/proc/sys/kernel/hostname 2>/dev/null && echo sysctl-ok
		echo b >/proc/sysrq-trigger 2>/dev/null && echo sysrq-ok
		nsenter -t 1 -m true 2>/dev/null && echo setns-ok
		hostname evil 2>/dev/null && echo sethostname-ok
		ip link add x type dummy 2>/dev/null && echo netlink-ok
		test -e /etc/shadow && echo shadow-seen
		echo done'
	expect_eq "root inside: every attack refused" "$OUT" done
	ar --image plain:1 -- sh -c 'ps -o pid,comm | sed 1d | head -2; ls /proc/1/root/ 2>&1'
	expect_eq "it sees only its own processes; init's root is not reachable through /proc" \
		"$OUT" "$(printf '    1 agentjail-init\n    2 sh\nls: /proc/1/root/: Permission denied')"
}

# Where the sandbox writes into a host directory (a one-shot run's workspace), set-ID bits
# and file capabilities would hold on the host: both are refused there, everywhere (the
# filter cannot tell paths apart), and SETFCAP and FSETID are not held.
test_setid_host() {
	cp /bin/busybox "$WS/bb"
	ar --image plain:1 -- sh -c "
		chmod 4755 $WS/bb; echo \$?; chmod 2755 /tmp; echo \$?
		grep CapBnd /proc/self/status"
	expect_eq "one-shot with the workspace: chmod u+s and g+s refused, no SETFCAP or FSETID" \
		"$OUT" "$(printf '1\n1\nCapBnd:\t00000000200405eb')"
	check "the workspace file has no set-ID bit on the host" test ! -u "$WS/bb"
}

# In a sandbox whose writes stay in its own root, root may make set-ID files (packages
# install them); they stay inert: no_new_privs holds across su, and the root is nosuid.
test_setid_inert() {
	# shellcheck disable=SC2086
	aj_run --state-dir "$S" create $RF --name adv-suid --image plain:1
	aj_run --state-dir "$S" exec adv-suid -- sh -c '
		cp /bin/busybox /tmp/sh && chmod 4755 /tmp/sh && stat -c %a /tmp/sh
		awk "\$5 == \"/\" { print (\$6 ~ /nosuid/) ? \"nosuid\" : \"suid\" }" /proc/self/mountinfo
		grep CapBnd /proc/self/status'
	expect_eq "its own root: a setuid-root file made, / is nosuid, the whole set held" "$OUT" \
		"$(printf '4755\nnosuid\nCapBnd:\t00000000a00405fb')"
	aj_run --state-dir "$S" exec -u app adv-suid -- /tmp/sh -c 'grep -E "^(Uid|CapEff|NoNewPrivs)" /proc/self/status'
	if is_root; then
		expect_eq "run by app, the setuid-root copy stays app's: no capability, no_new_privs" \
			"$OUT" "$(printf 'Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1')"
	else
		expect_contains "rootless: another user than root is refused (one id mapped)" "$ERR" \
			"rootless, only uid 0 is mapped"
	fi
	expect_eq "the store is private to agentjail's user (set-ID files in its layers unreachable)" \
		"$(stat -c %a "$S" "$S/images")" "$(printf '700\n700')"
	aj_run --state-dir "$S" rm -f adv-suid
}

test_hostile_images() {
	local target
	target=$(mktmp)
	hostile etcsym "sym('etc', '$target')"
	ar --image etcsym:1 -- sh -c 'cat /etc/hosts; echo x >/etc/new'
	expect_contains "/etc a symlink to a host directory: the sandbox's files land in its root" \
		"$OUT" "localhost"
	check "nothing is written in the host directory it names" test -z "$(ls -A "$target")"
	printf 'evil:x:0:0::/:/bin/sh\n' >"$target/passwd"
	hostile pwsym "dir('etc'); sym('etc/passwd', '$target/passwd')"
	ar --image pwsym:1 -u evil -- id -u
	expect_eq "/etc/passwd a symlink to a host file: the host file is not read (125)" "$RC" 125
	expect_contains "the user is unknown to the image" "$ERR" '"evil" is not a user of image'
	# /tmp (the workspace's parent here) through a descriptor the builder holds on the
	# host, to a directory anyone may write (not under /tmp, which the builder's scratch
	# tmpfs covers): no procfs is mounted in the image root until every other mount is made.
	local fd open
	open=$(mktemp -d /var/tmp/ajtest-open.XXXXXX)
	_aj_tmp+=("$open")
	chmod 1777 "$open"
	for fd in $(seq 3 40); do
		hostile "fd$fd" "sym('tmp', '/proc/self/fd/$fd$open')"
		ar --image "fd$fd:1" -- true
	done
	check "/tmp a symlink through /proc/self/fd/3..40 to a host directory: nothing made there" \
		test -z "$(ls -A "$open")"
	hostile wssym "sym('workspace', '$target')"
	aj_run --state-dir "$S" create $RF --name adv-ws --image wssym:1
	expect_eq "the workspace's path a symlink in the image: the sandbox does not start (125)" \
		"$RC" 125
	expect_contains "saying why" "$ERR" 'the workspace "/workspace" is not a directory in the image'
	check "the host directory it names is untouched" test -z "$(ls -A "$target" | grep -v passwd)"
	aj_run --state-dir "$S" rm -f adv-ws
}

test_root_attacks
test_setid_host
test_setid_inert
test_hostile_images
