#!/usr/bin/env bash
# Host services on purpose (--host-port, network.host_ports): a server the test runs on the
# host's loopback is reached from inside at 127.0.0.1:PORT, relayed by the supervisor, and
# nothing else on the host's loopback is: another host port next to it stays unreachable.
# One-shot and persistent (bound again at every start); each connection an event; the plan
# names it; bad input refused. Loopback only.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir "$WS" "$T/srv"
chmod 777 "$WS"
echo from-the-host >"$T/srv/h.txt"
export AGENTJAIL_STATE_DIR=$T/state
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; "$AJ" rm -f hp >/dev/null 2>&1; _aj_cleanup' EXIT
A=$(free_port)
B=$(free_port)
for p in "$A" "$B"; do
	(cd "$T/srv" && exec timeout 120 python3 -m http.server "$p" --bind 127.0.0.1 >/dev/null 2>&1) &
	PIDS+=($!)
done
wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$A/" && wait_until 20 curl -sf -o /dev/null "http://127.0.0.1:$B/"

TRY='
for p in "$@"; do
	out=$(curl -sS -m 5 "http://127.0.0.1:$p/h.txt" 2>&1) || out="refused"
	echo "$p: $out"
done'
# shellcheck disable=SC2046
aj_run run $(rootless_flags) -w "$WS" --host-port "$A" --events "$T/ev" --report "$T/r.json" -- sh -c "$TRY" sh "$A" "$B"
expect_eq "run --host-port: exit 0" "$RC" 0
expect_contains "the named host port is reached from inside" "$OUT" "$A: from-the-host"
expect_contains "the one next to it is not" "$OUT" "$B: refused"
expect_eq "each connection is an event" \
	"$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
c = [e for e in ev if e["event"] == "host_port.connection"]
print(len(c), all(e["port"] == int(sys.argv[2]) and e["bytes_out"] > 0 for e in c))' "$T/ev" "$A")" "1 True"
expect_contains "the plan names it" \
	"$(json "$T/r.json" '[l["detail"] for l in d["plan"]["layers"] if l["layer"] == "network-namespace"][0]')" \
	"out to the host only at 127.0.0.1:$A"
aj_run run $(rootless_flags) -w "$WS" -- sh -c "$TRY" sh "$A"
expect_contains "without --host-port the host's service is unreachable" "$OUT" "$A: refused"

# shellcheck disable=SC2046
aj_run create $(rootless_flags) --name hp --host-port "$A"
expect_eq "create --host-port: exit 0 ($ERR)" "$RC" 0
aj_run exec hp -- sh -c "$TRY" sh "$A"
expect_contains "a persistent sandbox reaches it" "$OUT" "$A: from-the-host"
aj_run stop hp
aj_run start hp
aj_run exec hp -- sh -c "$TRY" sh "$A" "$B"
expect_contains "again after stop and start" "$OUT" "$A: from-the-host"
expect_contains "and still nothing else" "$OUT" "$B: refused"

for bad in 0 70000 x; do
	aj_run run --host-port "$bad" -- true
	expect_eq "--host-port $bad: exit 125" "$RC" 125
	expect_contains "--host-port $bad: named" "$ERR" "--host-port"
done
aj_run run --network host --host-port "$A" -- true
expect_eq "--host-port with the host's network: exit 125" "$RC" 125
expect_contains "saying why" "$ERR" "network.host_ports: the sandbox shares the host's network"
aj_run run --tier landlock --host-port "$A" -- true
expect_eq "--host-port in the landlock tier: exit 125" "$RC" 125
aj_run run --allow-host example.invalid --host-port 3128 -- true
expect_eq "--host-port on the egress proxy's port: exit 125" "$RC" 125
