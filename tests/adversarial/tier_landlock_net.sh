#!/usr/bin/env bash
# Host network services in the landlock tier, where the sandbox shares the host's network
# stack: the attacker tries TCP (connect, TCP Fast Open, MPTCP), binding and listening, UDP,
# other protocols, and unix sockets (abstract and on a path) against listeners the test
# starts on the host. Landlock must refuse TCP, seccomp everything Landlock does not see; the
# listeners count what reaches them and stop by themselves.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

LISTENER_PID=
stop_listener() {
	if [ -n "$LISTENER_PID" ]; then
		kill "$LISTENER_PID" 2>/dev/null && wait "$LISTENER_PID" 2>/dev/null
	fi
	LISTENER_PID=
}
trap 'stop_listener; _aj_cleanup' EXIT

# TCP on 127.0.0.1 and ::1, UDP on 127.0.0.1, unix sockets on an abstract name and a path,
# for at most 60 s; one line per connection or datagram in $1/hits.
LISTENER='
import os, select, socket, sys, time
d, name = sys.argv[1], sys.argv[2]
tcp4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp4.bind(("127.0.0.1", 0)); tcp4.listen(16)
tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
tcp6.bind(("::1", 0)); tcp6.listen(16)
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.1", 0))
ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ab.bind("\0" + name); ab.listen(16)
fs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
fs.bind(d + "/host.sock"); fs.listen(16)
os.chmod(d + "/host.sock", 0o777)
with open(d + "/ports.tmp", "w") as f:
    f.write("%d %d %d\n" % (tcp4.getsockname()[1], tcp6.getsockname()[1], udp.getsockname()[1]))
os.rename(d + "/ports.tmp", d + "/ports")
end = time.time() + 60
names = {tcp4: "tcp", tcp6: "tcp", udp: "udp", ab: "abstract", fs: "path"}
while time.time() < end:
    r, _, _ = select.select(list(names), [], [], 0.2)
    for s in r:
        if s is udp:
            udp.recvfrom(4096)
        else:
            s.accept()[0].close()
        with open(d + "/hits", "a") as f:
            f.write(names[s] + "\n")
'

ATTACK='
import errno, socket, sys
p4, p6, pu, name, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def t(key, fn):
    try:
        r = fn()
        print(key, "OK" if r is None else r)
    except OSError as e:
        print(key, errno.errorcode.get(e.errno, e.errno))
def tcp(family, addr, proto=0):
    s = socket.socket(family, socket.SOCK_STREAM, proto)
    s.settimeout(3)
    try:
        s.connect(addr)
    finally:
        s.close()
def fastopen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", p4))
    finally:
        s.close()
def bind(port):
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).bind(("127.0.0.1", port))
def listen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.listen(1)
    return "port-%d" % s.getsockname()[1]
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", pu))
def unix(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(addr)
    finally:
        s.close()
def pair():
    a, b = socket.socketpair()
    a.send(b"x")
    return "got-" + b.recv(1).decode()
t("tcp4", lambda: tcp(socket.AF_INET, ("127.0.0.1", p4)))
t("tcp6", lambda: tcp(socket.AF_INET6, ("::1", p6)))
t("fastopen", fastopen)
t("mptcp", lambda: tcp(socket.AF_INET, ("127.0.0.1", p4), 262))
t("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
t("dccp", lambda: socket.socket(socket.AF_INET, 6, 0))
t("bind", lambda: bind(0))
t("bind-high", lambda: bind(40123))
t("listen", listen)
t("udp", udp)
t("icmp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
t("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
t("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
t("abstract", lambda: unix("\0" + name))
t("path", lambda: unix(path))
t("socketpair", pair)
'

start_listener() {
	NAME=ajabs$$x$RANDOM
	python3 -c "$LISTENER" "$T" "$NAME" &
	LISTENER_PID=$!
	for _ in $(seq 50); do
		[ -s "$T/ports" ] && break
		sleep 0.1
	done
	read -r P4 P6 PU <"$T/ports"
}

hits() {
	if [ -f "$T/hits" ]; then grep -c -x "$1" "$T/hits"; else echo 0; fi
}

attack() {
	tl_sandbox "$@" -- python3 -c "$ATTACK" "$P4" "$P6" "$PU" "$NAME" "$T/host.sock"
}

test_reach_host() {
	tl_setup
	start_listener
	attack
	expect_eq "attack exit code" "$RC" 0
	expect_line "TCP to the host's 127.0.0.1 listener: EACCES (Landlock)" tcp4 EACCES
	expect_line "TCP to the host's ::1 listener: EACCES (Landlock)" tcp6 EACCES
	expect_line "TCP Fast Open (sendto connects): EACCES (seccomp)" fastopen EACCES
	expect_line "MPTCP (not TCP to Landlock): EACCES (seccomp)" mptcp EACCES
	expect_line "SCTP stream socket: EACCES (seccomp)" sctp EACCES
	expect_line "DCCP socket: EACCES (seccomp)" dccp EACCES
	expect_line "bind to an ephemeral port: EACCES (Landlock)" bind EACCES
	expect_line "bind to a fixed port: EACCES (Landlock)" bind-high EACCES
	expect_line "listen() without bind (kernel autobind): EACCES (seccomp)" listen EACCES
	expect_line "UDP: EACCES (seccomp)" udp EACCES
	expect_line "ICMP echo socket: EACCES (seccomp)" icmp EACCES
	expect_line "raw socket: EPERM (default profile)" raw EPERM
	expect_line "netlink socket: EAFNOSUPPORT (default profile)" netlink EAFNOSUPPORT
	expect_line "unix socket to the host's abstract listener: refused (EAFNOSUPPORT)" abstract \
		EAFNOSUPPORT
	expect_line "unix socket to the host's socket file: refused (EAFNOSUPPORT)" path EAFNOSUPPORT
	expect_line "socketpair() still works" socketpair got-x
	sleep 0.3
	expect_eq "host: no TCP connection reached the listeners" "$(hits tcp)" 0
	expect_eq "host: no datagram reached the listener" "$(hits udp)" 0
	expect_eq "host: no unix connection reached the listeners" "$(( $(hits abstract) + $(hits path) ))" 0
	expect_contains "report: the network namespace is absent, and what stands in" \
		"$(layer_detail network-namespace)" "Landlock refuses TCP connect and bind"
	# Control: the listeners do count what reaches them.
	python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()' "$P4"
	wait_until 10 at_least 1 hits tcp
	expect_eq "host: the listener counts a host connection (control)" "$(hits tcp)" 1
	stop_listener
}

# With unix sockets allowed by the policy, Landlock's scoping (ABI 6) still refuses the
# host's abstract sockets; socket files are out of its reach up to ABI 7, and the plan says
# so.
test_unix_relaxed() {
	tl_setup
	start_listener
	attack --allow-syscalls unix-sockets
	expect_line "unix-sockets relaxed: abstract listener refused by Landlock scoping (EPERM)" \
		abstract EPERM
	expect_not_contains "unix-sockets relaxed: the plan no longer claims unix sockets are refused" \
		"$(layer_detail seccomp)" "unix sockets"
	sleep 0.3
	expect_eq "host: the abstract listener was not reached" "$(hits abstract)" 0
	stop_listener
}

test_curl() {
	tl_setup
	start_listener
	tl_sandbox -- curl -sS -m 5 -o /dev/null "http://127.0.0.1:$P4/"
	expect_eq "curl to the host listener fails to connect (exit 7)" "$RC" 7
	sleep 0.3
	expect_eq "host: curl reached nothing" "$(hits tcp)" 0
	stop_listener
}

test_host_mode() {
	tl_setup
	start_listener
	tl_sandbox --network host -- python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close(); print("connected")' "$P4"
	expect_eq "network.mode=host opts out: TCP connects" "$OUT" connected
	expect_eq "network.mode=host: reported off" "$(layer_state network-namespace)" off
	stop_listener
}

test_reach_host
test_unix_relaxed
if command -v curl >/dev/null; then
	test_curl
else
	skip "curl to the host listener" "curl is not installed"
fi
test_host_mode
