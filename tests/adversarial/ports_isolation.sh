#!/usr/bin/env bash
# Published ports are a way in only. A sandbox that publishes a port (and a second one next to
# it) attacks from inside: its own published port's host side, the other sandbox's, a service
# the test runs on the host's loopback and on the host's address, and the supervisor's helper
# that makes the sockets inside (the dialer). Each attempt must fail, and the host's listener
# must see nothing. From the host, only the published port reaches inside.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

T=$(mktmp)
WS=$T/ws
mkdir "$WS"
chmod 777 "$WS"
cp "$AJ_ROOT/tests/helpers/portsrv.py" "$WS/"
PIDS=()
stop_all() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
}
trap 'stop_all; _aj_cleanup' EXIT

# A host service the sandbox must not reach: counts what connects, for at most 60 s.
HOSTPORT=$(free_port)
python3 -c '
import socket, sys, time, select
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(16)
open(sys.argv[2] + ".up", "w").close()
end = time.time() + 60
while time.time() < end:
    r, _, _ = select.select([s], [], [], 0.2)
    if r:
        c, a = s.accept(); open(sys.argv[2], "a").write("hit %s\n" % (a,)); c.close()' \
	"$HOSTPORT" "$T/hits" &
PIDS+=($!)
wait_until 10 test -e "$T/hits.up"
HOST_ADDR=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')

# The second sandbox: publishes its own port, serves on it.
P2=$(free_port)
mkdir "$T/ws2" && chmod 777 "$T/ws2" && cp "$WS/portsrv.py" "$T/ws2/"
# shellcheck disable=SC2046
"$AJ" run $(rootless_flags) -w "$T/ws2" -p "$P2:9000" -- python3 portsrv.py echo 9000 ready 60 \
	>/dev/null 2>"$T/two.err" &
PIDS+=($!)
wait_until 20 test -e "$T/ws2/ready"

P1=$(free_port)
ATTACK='
import errno, socket, sys
def try_(label, host, port, fam=socket.AF_INET):
    s = socket.socket(fam)
    s.settimeout(3)
    try:
        s.connect((host, port))
        print(label, "CONNECTED")
    except OSError as e:
        print(label, errno.errorcode.get(e.errno, e.errno))
    s.close()
p1, p2, hp, addr = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try_("own-published-host-side", "127.0.0.1", p1)
try_("other-sandbox-published", "127.0.0.1", p2)
try_("host-loopback-service", "127.0.0.1", hp)
try_("host-loopback-service-v6", "::1", hp, socket.AF_INET6)
if addr:
    try_("host-address-service", addr, hp)
    try_("host-address-published", addr, p1)
import os
comms = sorted(set(open("/proc/%s/comm" % p).read().strip() for p in os.listdir("/proc") if p.isdigit()))
print("comms", " ".join(comms))
'
# shellcheck disable=SC2046
aj_run run $(rootless_flags) -w "$WS" -p "$P1:8000" -- sh -c '
python3 portsrv.py echo 8000 ready 30 & srv=$!
for i in $(seq 100); do [ -e ready ] && break; sleep 0.1; done
python3 -c "$1" "$2" "$3" "$4" "$5"
kill $srv' sh "$ATTACK" "$P1" "$P2" "$HOSTPORT" "$HOST_ADDR"
expect_eq "the attack ran (exit 0)" "$RC" 0
expect_eq "its own published port's host side is not on its loopback" \
	"$(echo "$OUT" | grep own-published)" "own-published-host-side ECONNREFUSED"
expect_eq "another sandbox's published port is unreachable" \
	"$(echo "$OUT" | grep other-sandbox)" "other-sandbox-published ECONNREFUSED"
expect_eq "the host's loopback service is unreachable" \
	"$(echo "$OUT" | grep 'host-loopback-service ')" "host-loopback-service ECONNREFUSED"
expect_contains "also over IPv6" "$(echo "$OUT" | grep 'service-v6')" "host-loopback-service-v6 E"
if [ -n "$HOST_ADDR" ]; then
	expect_eq "the host's own address: no route" \
		"$(echo "$OUT" | grep host-address-service)" "host-address-service ENETUNREACH"
	expect_eq "the host's address at the published port: no route" \
		"$(echo "$OUT" | grep host-address-published)" "host-address-published ENETUNREACH"
else
	skip "the host's own address" "this host has no global IPv4 address"
fi
expect_eq "the dialer and the supervisor are not among the sandbox's processes" \
	"$(echo "$OUT" | grep '^comms' | tr ' ' '\n' | grep -c '^agentjail$')" 0
expect_eq "the host service saw nothing" "$(cat "$T/hits" 2>/dev/null)" ""

# From the host: the published port reaches the echo server; a port inside that is not
# published has no host side at all, and the published one reaches only its own port.
expect_eq "the other sandbox's published port serves the host" \
	"$(python3 "$AJ_ROOT/tests/helpers/portsrv.py" many 127.0.0.1 "$P2" 3)" "echoed 3 of 3"
# A dialer exists only while its sandbox runs, as a child of that sandbox's supervisor, in the
# sandbox's network namespace but not its pid namespace, and not dumpable.
sup=$(pgrep -f -- "-p $P2:9000" | head -1)
dialer=$(pgrep -P "$sup" -x aj-dialer | head -1)
check "the sandbox's supervisor has a dialer (aj-dialer)" test -n "$dialer"
if [ -n "$dialer" ] && is_root; then
	expect_eq "the dialer is in the sandbox's network namespace" \
		"$(readlink "/proc/$dialer/ns/net")" "$(readlink "/proc/$(pgrep -P "$sup" -x agentjail-init | head -1)/ns/net" 2>/dev/null ||
			readlink "/proc/$(pgrep -f 'portsrv.py echo 9000' | tail -1)/ns/net")"
	expect_eq "but in the host's pid namespace, where the sandbox cannot see it" \
		"$(readlink "/proc/$dialer/ns/pid")" "$(readlink /proc/self/ns/pid)"
	expect_eq "the dialer holds nothing but its channel to the supervisor" \
		"$(ls "/proc/$dialer/fd" 2>/dev/null | sort -n | tr '\n' ' ')" "3 "
elif [ -n "$dialer" ]; then
	check "the dialer is not dumpable: its descriptors are not even its own user's to list" \
		test ! -r "/proc/$dialer/fd/."
fi
