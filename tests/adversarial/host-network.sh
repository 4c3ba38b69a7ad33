#!/usr/bin/env bash
# Host network services: the attacker tries to reach TCP and UDP listeners that the test
# starts on the host's loopback (and on the host's own address), and to find any interface
# but loopback. The listeners count what reaches them; they stop by themselves.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

LISTENER_PID=
stop_listener() {
	if [ -n "$LISTENER_PID" ]; then
		kill "$LISTENER_PID" 2>/dev/null && wait "$LISTENER_PID" 2>/dev/null
	fi
	LISTENER_PID=
}
trap 'stop_listener; _aj_cleanup' EXIT

# Listens on TCP 127.0.0.1, TCP ::1 and UDP 127.0.0.1 for at most 60 s; writes the ports to
# $1/ports and one line per accepted connection or datagram to $1/hits.
LISTENER='
import os, select, socket, sys, time
d = sys.argv[1]
tcp4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp4.bind(("127.0.0.1", 0)); tcp4.listen(16)
tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
tcp6.bind(("::1", 0)); tcp6.listen(16)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
anyt = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
anyt.bind(("0.0.0.0", 0)); anyt.listen(16)
with open(d + "/ports.tmp", "w") as f:
    f.write("%d %d %d %d\n" % (tcp4.getsockname()[1], tcp6.getsockname()[1],
                               udp.getsockname()[1], anyt.getsockname()[1]))
os.rename(d + "/ports.tmp", d + "/ports")
end = time.time() + 60
socks = [tcp4, tcp6, udp, anyt]
while time.time() < end:
    r, _, _ = select.select(socks, [], [], 0.2)
    for s in r:
        if s is udp:
            data, peer = udp.recvfrom(4096)
            what = "udp %r" % (data,)
        else:
            c, peer = s.accept()
            c.close()
            what = "tcp %r" % (peer,)
        with open(d + "/hits", "a") as f:
            f.write(what + "\n")
'

ATTACK='
import errno, fcntl, os, socket, sys
p4, p6, pu, pa = (int(a) for a in sys.argv[1:5])
hostip, hostnet = sys.argv[5], sys.argv[6]
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
def tcp(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
    finally:
        s.close()
def udp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _ in range(3):
            s.sendto(b"leak", addr)
    finally:
        s.close()
def ifaces():
    with open("/proc/net/dev") as f:
        return ",".join(sorted(l.split(":")[0].strip() for l in f.readlines()[2:]))
t("tcp4-loopback", lambda: tcp(socket.AF_INET, ("127.0.0.1", p4)))
t("tcp6-loopback", lambda: tcp(socket.AF_INET6, ("::1", p6)))
t("tcp4-any", lambda: tcp(socket.AF_INET, ("127.0.0.1", pa)))
t("udp-loopback", lambda: udp(("127.0.0.1", pu)))
if hostip != "-":
    t("tcp-hostip", lambda: tcp(socket.AF_INET, (hostip, pa)))
    t("udp-hostip", lambda: udp((hostip, pu)))
t("ifaces", ifaces)
t("routes", lambda: str(len(open("/proc/net/route").readlines()) - 1))
t("netns", lambda: "host" if os.readlink("/proc/self/ns/net") == hostnet else "own")
def netns_owner():
    with open("/proc/self/ns/net") as net:
        owner = fcntl.ioctl(net.fileno(), 0xb701)  # NS_GET_USERNS
    try:
        same = os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino
    finally:
        os.close(owner)
    return "sandbox-userns" if same else "other-userns"
t("netns-owner", netns_owner)
'

start_listener() {
	python3 -c "$LISTENER" "$T" &
	LISTENER_PID=$!
	for _ in $(seq 50); do
		[ -s "$T/ports" ] && break
		sleep 0.1
	done
	read -r P4 P6 PU PA <"$T/ports"
}

host_ip() {
	local ip
	ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
	echo "${ip:--}"
}

hits() {
	[ -f "$T/hits" ] && wc -l <"$T/hits" || echo 0
}

test_reach_host() {
	adv_setup
	start_listener
	local hostip
	hostip=$(host_ip)
	sandbox -- python3 -c "$ATTACK" "$P4" "$P6" "$PU" "$PA" "$hostip" "$(readlink /proc/self/ns/net)"
	expect_eq "attack exit code" "$RC" 0
	# The network namespace is the boundary (no Landlock TCP rules in this tier): 127.0.0.1
	# and ::1 inside are the sandbox's own loopback, where nothing listens on these ports.
	expect_eq "landlock-net is off: the namespace holds TCP" "$(layer_state landlock-net)" off
	expect_line "TCP to the host's 127.0.0.1 listener: ECONNREFUSED" tcp4-loopback ECONNREFUSED
	expect_line "TCP to the host's ::1 listener: ECONNREFUSED" tcp6-loopback ECONNREFUSED
	expect_line "TCP to the host's 0.0.0.0 listener via 127.0.0.1: ECONNREFUSED" tcp4-any \
		ECONNREFUSED
	expect_line "UDP to 127.0.0.1 stays on the sandbox's loopback" udp-loopback OK
	if [ "$hostip" != - ]; then
		expect_line "TCP to the host's address ($hostip): ENETUNREACH" tcp-hostip ENETUNREACH
		expect_line "UDP to the host's address: ENETUNREACH" udp-hostip ENETUNREACH
	else
		skip "host address unreachable" "the host has no global IPv4 address"
	fi
	expect_line "only the loopback interface" ifaces lo
	expect_line "no routes" routes 0
	# The namespace is made beside the child, which starts in the caller's (launch.c): it
	# must be joined, and owned by the sandbox's user namespace as one the child made. (The
	# gvisor tier's Sentry has no namespace ioctls.)
	expect_line "a network namespace of its own" netns own
	expect_line "owned by the sandbox's user namespace" netns-owner \
		"$(want sandbox-userns ENOTTY)"
	sleep 0.3
	expect_eq "host: no connection or datagram reached the listeners" "$(hits)" 0
	# Control: the listener does count what reaches it.
	python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()' "$P4"
	wait_until 10 at_least 1 hits
	expect_eq "host: the listener counts a host connection (control)" "$(hits)" 1
	stop_listener
}

test_curl() {
	adv_setup
	start_listener
	sandbox -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$P4/"
	expect_eq "curl to the host listener fails to connect (exit 7)" "$RC" 7
	sleep 0.3
	expect_eq "host: curl reached nothing" "$(hits)" 0
	stop_listener
}

test_reach_host
if command -v curl >/dev/null; then
	test_curl
else
	skip "curl to the host listener" "curl is not installed"
fi
