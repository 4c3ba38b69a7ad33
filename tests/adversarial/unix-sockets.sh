#!/usr/bin/env bash
# Host unix sockets: an abstract-namespace listener and a filesystem listener outside the
# workspace, both started by the test, plus whatever well-known sockets the host has (D-Bus,
# container engines, systemd). The listeners count connections; they stop by themselves.
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

# Listens on the abstract name $2 and the path $1/host.sock for at most 60 s; one line per
# accepted connection in $1/hits.
LISTENER='
import os, select, socket, sys, time
d, name = sys.argv[1], sys.argv[2]
ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ab.bind("\0" + name); ab.listen(16)
fs = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
fs.bind(d + "/host.sock"); fs.listen(16)
os.chmod(d + "/host.sock", 0o777)
open(d + "/ready", "w").close()
end = time.time() + 60
while time.time() < end:
    r, _, _ = select.select([ab, fs], [], [], 0.2)
    for s in r:
        c, _ = s.accept()
        c.close()
        with open(d + "/hits", "a") as f:
            f.write("abstract\n" if s is ab else "path\n")
'

ATTACK='
import errno, socket, sys
def t(name, fn):
    try:
        fn()
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def conn(addr, kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_UNIX, kind)
    try:
        s.connect(addr)
    finally:
        s.close()
t("abstract", lambda: conn("\0" + sys.argv[2]))
t("abstract-dgram", lambda: conn("\0" + sys.argv[2], socket.SOCK_DGRAM))
t("path", lambda: conn(sys.argv[1] + "/host.sock"))
for i, p in enumerate(sys.argv[3:]):
    t("host-socket-%d" % i, lambda: conn(p))
'

start_listener() {
	NAME=$(marker)
	python3 -c "$LISTENER" "$T" "$NAME" &
	LISTENER_PID=$!
	for _ in $(seq 50); do
		[ -e "$T/ready" ] && break
		sleep 0.1
	done
}

# hits [KIND]: connections counted so far (of KIND: abstract or path).
hits() {
	if [ ! -f "$T/hits" ]; then
		echo 0
	elif [ $# -eq 0 ]; then
		wc -l <"$T/hits"
	else
		grep -c -x "$1" "$T/hits"
	fi
}

# Well-known sockets of host services, those this host has (at most 8).
host_sockets() {
	find /run /var/run -maxdepth 3 -type s 2>/dev/null | head -8
}

test_unix_reach() {
	adv_setup
	start_listener
	local socks=() i
	mapfile -t socks < <(host_sockets)
	sandbox -- python3 -c "$ATTACK" "$T" "$NAME" "${socks[@]}"
	expect_eq "attack exit code" "$RC" 0
	# The abstract namespace belongs to the network namespace: the name is not found there.
	expect_line "connect to the host's abstract socket: ECONNREFUSED" abstract ECONNREFUSED
	expect_line "datagram connect to the host's abstract socket: ECONNREFUSED" abstract-dgram \
		ECONNREFUSED
	expect_line "connect to a host socket file outside the workspace: ENOENT" path ENOENT
	for i in "${!socks[@]}"; do
		expect_line "connect to host service socket ${socks[$i]}: ENOENT" \
			"host-socket-$i" ENOENT
	done
	sleep 0.3
	expect_eq "host: no connection reached the listeners" "$(hits)" 0
	stop_listener
}

# With the host's network namespace shared on purpose, the abstract name is visible; Landlock's
# abstract-socket scope is then what refuses the connection.
test_abstract_scope_host_network() {
	adv_setup
	start_listener
	sandbox --network host -- python3 -c "$ATTACK" "$T" "$NAME"
	local state
	state=$(layer_state landlock-scope)
	if [ "$state" != enforced ]; then
		skip "abstract socket scope" "Landlock scopes are not available here ($state)"
	else
		expect_line "host network: connect to the host's abstract socket: EPERM (scoped)" \
			abstract EPERM
		sleep 0.3
		expect_eq "host: no connection reached the abstract listener" \
			"$(hits abstract)" 0
	fi
	# Control: from the host the same name is reachable.
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).connect("\0" + sys.argv[1])' "$NAME"
	wait_until 10 at_least 1 hits abstract
	expect_eq "host: the abstract listener counts a host connection (control)" \
		"$(hits abstract)" 1
	stop_listener
}

test_unix_reach
test_abstract_scope_host_network
