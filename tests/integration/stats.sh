#!/usr/bin/env bash
# agentjail stats and GET /v1/sandboxes/{id}/metrics (docs/sandboxes.md "Metrics"): two running
# sandboxes told apart, one spinning a CPU and one holding 100 MiB, their figures from their
# own cgroups (the memory within a few percent of what the cgroup itself says); samples over
# time through the API; stopped and unknown sandboxes.
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
pj_create spin
pj_create hold
pj_create off
aj_run stop off
"$AJ" exec spin -- sh -c 'timeout 20 sh -c "while :; do :; done"' >/dev/null 2>&1 &
"$AJ" exec hold -- python3 -c "b = bytearray(100 << 20); b[::4096] = b'x' * len(b[::4096]); open('/tmp/held', 'w').write('1'); import time; time.sleep(20)" >/dev/null 2>&1 &
held() { aj_run exec hold -- test -e /tmp/held; [ "$RC" = 0 ]; }
check "the workloads run" wait_until 15 held
sleep 6 # a sample or more of them

aj_run stats --no-stream
check "stats --no-stream: a table of the running sandboxes ($OUT)" \
	eval '[[ $OUT == NAME*"CPU %"*"MEM USAGE / LIMIT"* ]] && [[ $OUT == *spin* ]] && [[ $OUT == *hold* ]] && [[ $OUT != *off* ]]'
aj_run stats --json
J=$OUT
fig() { printf '%s' "$J" | python3 -c "import json,sys; d={x['name']: x for x in json.load(sys.stdin)}; v=d['$1']['$2']; print('null' if v is None else v)"; }
if [ "$(fig spin cpu_percent)" = null ]; then
	skip "CPU and memory figures" "rootless without a delegated cgroup: the sandboxes have no cgroup to read (docs/sandboxes.md)"
else
	check "the spinning sandbox near one CPU ($(fig spin cpu_percent) %)" \
		eval '[ "$(python3 -c "print(int($(fig spin cpu_percent) > 60))")" = 1 ]'
	check "the holding one near none ($(fig hold cpu_percent) %)" \
		eval '[ "$(python3 -c "print(int($(fig hold cpu_percent) < 15))")" = 1 ]'
	ID=$(pj_id hold)
	CG=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "sb-$ID*" 2>/dev/null | grep -m1 -E '/memory/|^/sys/fs/cgroup/[^/]*sb-|unified|/sys/fs/cgroup/agentjail')
	OWN=$(cat "$CG/memory.usage_in_bytes" 2>/dev/null || cat "$CG/memory.current" 2>/dev/null)
	check "its memory ($(fig hold memory)) within 5 % of its cgroup's own ($OWN, $CG)" \
		eval '[ -n "$OWN" ] && python3 -c "import sys; a, b = $(fig hold memory), $OWN; sys.exit(0 if abs(a - b) <= b * 0.05 and a > 100 << 20 else 1)"'
	check "the two are told apart: pids of each ($(fig spin pids), $(fig hold pids))" \
		eval '[ "$(fig spin pids)" -ge 2 ] && [ "$(fig hold pids)" -ge 1 ]'
fi
# Watching is no use: a sandbox read every second still reaches its idle timeout.
pj_create idler --idle-timeout 3s --idle-action stop
for _ in 1 2 3 4 5 6; do
	"$AJ" stats idler --json >/dev/null 2>&1
	sleep 1
done
expect_eq "a sandbox watched by stats every second still goes idle (stopped after 3 s)" "$(pj_state idler)" stopped
aj_run stats off --json
expect_eq "a stopped sandbox has no figures" "$OUT" "[]"
aj_run stats nosuch
check "an unknown sandbox: exit 1 ($ERR)" eval '[ "$RC" = 1 ] && [[ $ERR == *nosuch* ]]'

sv_start || { not_ok "serve starts"; exit 0; }
api GET /v1/sandboxes/hold/metrics
check "GET /v1/sandboxes/{id}/metrics: samples over time ($CODE)" \
	eval '[ "$CODE" = 200 ] && [ "$(bj "len(d[\"samples\"])")" -ge 1 ] && [ "$(bj "d[\"every_s\"]")" = 5 ]'
api GET "/v1/sandboxes/hold/metrics?start=$(($(date +%s) + 3600))"
expect_eq "... none from the future" "$(bj 'len(d["samples"])')" 0
api GET /v1/sandboxes/off/metrics
expect_api "... a stopped sandbox: 409" 409
api GET "/v1/sandboxes/hold/metrics?start=x"
expect_api "... start not a number: 400" 400 start
sv_stop
sv_done
