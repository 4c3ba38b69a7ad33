#!/usr/bin/env bash
# Resource exhaustion: fork bomb, memory bomb, filling /tmp, /dev/shm and the home, a big
# file in the workspace under --file-size, an output flood, and a CPU spin that ignores
# SIGTERM past --timeout (also while the caller stops reading its output). Each is bounded in
# size and time and stops by itself; each checks that it was contained, that the host stayed
# responsive while it ran, and what the report says.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

# A host command must keep answering within this many milliseconds during a bomb.
RESPONSIVE_MS=1500

BG_PID=
trap '[ -n "$BG_PID" ] && kill "$BG_PID" 2>/dev/null; _aj_cleanup' EXIT

# sandbox_bg ARGS...: like sandbox, in the background; sandbox_wait collects OUT, ERR, RC.
sandbox_bg() {
	rm -f "$REPORT"
	"$AJ" run -w "$WS" --report "$REPORT" --ro "$HELPERS" $(rootless_flags) "$@" \
		>"$T/bg.out" 2>"$T/bg.err" </dev/null &
	BG_PID=$!
}
sandbox_wait() {
	wait "$BG_PID"
	RC=$?
	BG_PID=
	OUT=$(cat "$T/bg.out")
	ERR=$(cat "$T/bg.err")
}

# The slowest of a few host commands timed while the sandbox runs (after DELAY seconds).
host_latency_during() {
	local delay=$1 worst=0 ms
	sleep "$delay"
	for _ in 1 2 3; do
		ms=$(elapsed_ms sh -c 'ls / >/dev/null; date >/dev/null')
		[ "$ms" -gt "$worst" ] && worst=$ms
		sleep 0.2
	done
	echo "$worst"
}

expect_responsive() {
	local ms=$2
	if [ "$ms" -le "$RESPONSIVE_MS" ]; then
		ok "$1: host responsive (${ms} ms)"
	else
		not_ok "$1: host responsive (${ms} ms > ${RESPONSIVE_MS} ms)"
	fi
}

test_fork_bomb() {
	local lat tasks
	adv_setup
	sandbox_bg --pids 64 --timeout 60s -- "$HELPERS/forkbomb" 4
	lat=$(host_latency_during 1)
	sandbox_wait
	expect_responsive "fork bomb" "$lat"
	expect_line "fork bomb: fork refused with EAGAIN" refused EAGAIN
	tasks=$(line_of tasks)
	check "fork bomb: grew to the limit but not past it (${tasks:-?} of 64 tasks)" \
		test "${tasks:-0}" -ge 32 -a "${tasks:-999}" -le 64
	if is_root; then
		expect_eq "fork bomb: exit code 121 (pids)" "$RC" 121
		expect_eq "fork bomb: report limit_hit" "$(rep 'd["limit_hit"]')" pids
		expect_eq "fork bomb: report limits_hit" "$(rep '",".join(d["limits_hit"])')" pids
	else
		# Without a pids cgroup the plan says hits are not observable: the exit code is the
		# command's own.
		expect_contains "fork bomb: plan enforces pids by RLIMIT_NPROC" \
			"$(layer_detail pids)" RLIMIT_NPROC
		expect_eq "fork bomb: exit code is the command's own (1)" "$RC" 1
		expect_eq "fork bomb: report limit_hit" "$(rep 'd["limit_hit"]')" None
	fi
}

# Without a delegated cgroup a limit cannot be enforced: the run must be refused, not run
# unlimited (fail closed).
expect_refused_without_cgroup() {
	local what=$1
	expect_eq "$what without a cgroup: refused (exit 125)" "$RC" 125
	expect_eq "$what without a cgroup: nothing ran" "$OUT" ""
	expect_eq "$what without a cgroup: report error layer" "$(rep 'd["error"]["layer"]')" cgroup
}

test_memory_bomb() {
	local lat
	if ! is_root; then
		adv_setup
		sandbox --memory 64MiB --timeout 60s -- "$HELPERS/membomb" 2048
		expect_refused_without_cgroup "memory bomb"
		return
	fi
	adv_setup
	sandbox_bg --memory 64MiB --timeout 60s -- "$HELPERS/membomb" 2048
	lat=$(host_latency_during 0.2)
	sandbox_wait
	expect_responsive "memory bomb" "$lat"
	expect_not_contains "memory bomb: never got its 2 GiB" "$OUT" "allocated"
	expect_eq "memory bomb: exit code 122 (memory)" "$RC" 122
	expect_eq "memory bomb: report limit_hit" "$(rep 'd["limit_hit"]')" memory
	expect_eq "memory bomb: report limits_hit" "$(rep '",".join(d["limits_hit"])')" memory
	expect_eq "memory bomb: killed by SIGKILL" "$(rep 'd["status"]["signal_name"]')" KILL
	check "memory bomb: peak memory within the limit" \
		test "$(rep 'd["peak_memory_bytes"]')" -le $((64 << 20))
}

# tmpfs contents are memory: filling /dev/shm past the memory limit is the memory bomb again.
test_shm_counts_as_memory() {
	if ! is_root; then
		echo "# tmpfs charged to the memory limit: no memory limit without a cgroup"
		return
	fi
	adv_setup
	sandbox --memory 64MiB --tmpfs-size 512MiB --timeout 60s -- \
		dd if=/dev/zero of=/dev/shm/fill bs=1M count=256
	expect_eq "shm fill: dd killed, exit code 122 (memory)" "$RC" 122
	expect_eq "shm fill: report limit_hit" "$(rep 'd["limit_hit"]')" memory
}

FILL='
for d in /tmp /dev/shm "$HOME"; do
	err=$(dd if=/dev/zero of="$d/fill" bs=1M count=64 2>&1)
	echo "rc:$d $?"
	echo "size:$d $(wc -c <"$d/fill")"
	case "$err" in *"No space left on device"*) echo "enospc:$d yes" ;; esac
done
exit 0
'

test_tmpfs_fill() {
	adv_setup
	local d size
	sandbox --tmpfs-size 8MiB -- sh -c "$FILL"
	for d in /tmp /dev/shm /home/user; do
		expect_line "fill $d: dd fails" "rc:$d" 1
		expect_line "fill $d: ENOSPC" "enospc:$d" yes
		size=$(line_of "size:$d")
		check "fill $d: at most 8 MiB written (${size:-?} bytes)" \
			test "${size:-999999999}" -le 8388608
	done
	expect_eq "tmpfs fill: report exit_code is the command's own" "$(rep 'd["exit_code"]')" 0
	expect_eq "tmpfs fill: no limit blamed" "$(rep 'd["limit_hit"]')" None
}

test_workspace_file_size() {
	adv_setup
	sandbox --file-size 1MiB -- dd if=/dev/zero of=big bs=64k count=1000
	expect_eq "file-size: dd killed by SIGXFSZ (exit code 153)" "$RC" 153
	expect_eq "file-size: report status signal" "$(rep 'd["status"]["signal_name"]')" XFSZ
	expect_eq "file-size: report limits_hit" "$(rep '",".join(d["limits_hit"])')" file_size
	expect_eq "file-size: report limit_hit (not one of the deciding limits)" \
		"$(rep 'd["limit_hit"]')" None
	expect_eq "host: the workspace file stopped at 1 MiB" "$(stat -c %s "$WS/big")" 1048576
	# A writer that ignores SIGXFSZ gets EFBIG instead and the file still stops at the limit.
	sandbox --file-size 1MiB -- python3 -c '
import errno, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
try:
    with open("big2", "wb") as f:
        for _ in range(100):
            f.write(b"\0" * 65536)
            f.flush()
    print("write OK")
except OSError as e:
    print("write", errno.errorcode[e.errno])
'
	expect_line "file-size, SIGXFSZ ignored: EFBIG" write EFBIG
	expect_eq "host: that file stopped at 1 MiB too" "$(stat -c %s "$WS/big2")" 1048576
}

test_output_flood() {
	adv_setup
	local n
	n=$("$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) --output-limit 1MiB -- \
		head -c 20000000 /dev/zero 2>/dev/null </dev/null | wc -c)
	expect_eq "output flood: exactly 1 MiB passed on" "$n" 1048576
	expect_eq "output flood: exit code is the command's own (0)" "$(rep 'd["exit_code"]')" 0
	expect_eq "output flood: report truncated" "$(rep 'd["output"]["truncated"]')" True
	expect_eq "output flood: report passed_bytes" "$(rep 'd["output"]["passed_bytes"]')" 1048576
	expect_eq "output flood: report stdout_bytes (all produced)" \
		"$(rep 'd["output"]["stdout_bytes"]')" 20000000
	expect_eq "output flood: report limits_hit" "$(rep '",".join(d["limits_hit"])')" output
	expect_eq "output flood: no deciding limit" "$(rep 'd["limit_hit"]')" None
}

test_output_flood_kill() {
	adv_setup
	local n t0 ms
	t0=$(date +%s%N)
	n=$("$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) --output-limit 1MiB \
		--output-action kill --timeout 60s -- yes 2>/dev/null </dev/null | wc -c)
	ms=$((($(date +%s%N) - t0) / 1000000))
	expect_eq "output flood (kill): exactly 1 MiB passed on" "$n" 1048576
	expect_eq "output flood (kill): exit code 123" "$(rep 'd["exit_code"]')" 123
	expect_eq "output flood (kill): report limit_hit" "$(rep 'd["limit_hit"]')" output
	check "output flood (kill): stopped at once, not by the timeout (${ms} ms)" \
		test "$ms" -lt 10000
}

SPIN='trap "" TERM INT HUP
(trap "" TERM INT HUP; while :; do :; done) &
setsid sh -c "trap \"\" TERM INT HUP; while :; do :; done" &
while :; do :; done'

test_cpu_spin_timeout() {
	local lat wall
	adv_setup
	sandbox_bg --timeout 3s -- sh -c "$SPIN"
	lat=$(host_latency_during 1)
	sandbox_wait
	expect_responsive "CPU spin" "$lat"
	expect_eq "CPU spin: exit code 124 (timeout)" "$RC" 124
	expect_eq "CPU spin: report limit_hit" "$(rep 'd["limit_hit"]')" timeout
	expect_contains "CPU spin: report limits_hit" "$(rep '",".join(d["limits_hit"])')" timeout
	wall=$(rep 'int(d["wall_ms"])')
	check "CPU spin: ended 3-6 s after the start (${wall} ms)" \
		test "$wall" -ge 3000 -a "$wall" -le 6000
	expect_contains "CPU spin: the timeout is announced" "$ERR" "timeout of 3s reached"
}

# A caller that stops reading (a full pipe) must not hold the timeout off: the sandbox floods
# its output and spins; the caller reads nothing (for up to 20 s: until agentjail has gone).
test_timeout_unread_output() {
	adv_setup
	local t0 ms
	t0=$(date +%s%N)
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) --timeout 2s -- \
		sh -c 'yes & while :; do :; done' </dev/null 2>/dev/null | never_reads 20
	ms=$(rep 'int(d["wall_ms"])')
	expect_eq "unread output: exit code 124 (timeout)" "$(rep 'd["exit_code"]')" 124
	expect_eq "unread output: report limit_hit" "$(rep 'd["limit_hit"]')" timeout
	check "unread output: the sandbox ended 2-5 s after the start (${ms} ms)" \
		test "${ms:-99999}" -ge 2000 -a "${ms:-99999}" -le 5000
}

# The same with a write that the full pipe cuts in two: 60,000 bytes fit in the caller's
# 64 KiB pipe, the next 10,000 only in part, and the timeout comes while agentjail waits to
# write the rest (a write that moved some bytes returns their count, not EINTR).
test_timeout_partial_write() {
	adv_setup
	local ms
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) --timeout 2s -- \
		sh -c 'head -c 60000 /dev/zero; sleep 0.5; head -c 10000 /dev/zero
			while :; do :; done' </dev/null 2>"$T/err" | never_reads 20
	ms=$(rep 'int(d["wall_ms"])')
	expect_eq "partial write: exit code 124 (timeout)" "$(rep 'd["exit_code"]')" 124
	expect_eq "partial write: report limit_hit" "$(rep 'd["limit_hit"]')" timeout
	check "partial write: the sandbox ended 2-5 s after the start (${ms} ms)" \
		test "${ms:-99999}" -ge 2000 -a "${ms:-99999}" -le 5000
	expect_contains "partial write: the timeout is announced" "$(cat "$T/err")" \
		"timeout of 2s reached"
	expect_eq "partial write: report passed_bytes" "$(rep 'd["output"]["passed_bytes"]')" 70000
	check "partial write: what did not fit is reported undelivered" \
		test "$(rep 'd["output"]["undelivered_bytes"]')" -ge $((70000 - 65536))
}

test_cpu_quota() {
	adv_setup
	if ! is_root; then
		sandbox --cpus 0.25 --timeout 3s -- sh -c 'echo spinning; while :; do :; done'
		expect_refused_without_cgroup "CPU quota"
		return
	fi
	sandbox --cpus 0.25 --timeout 3s -- sh -c 'while :; do :; done'
	local cpu
	cpu=$(rep 'int(d["cpu_ms"])')
	expect_eq "CPU quota: exit code 124 (timeout)" "$RC" 124
	check "CPU quota: about a quarter of a CPU used (${cpu} ms of 3000)" test "$cpu" -le 1200
	expect_eq "CPU quota: report limits_hit" "$(rep '",".join(d["limits_hit"])')" timeout,cpu
}

test_fork_bomb
test_memory_bomb
test_shm_counts_as_memory
test_tmpfs_fill
test_workspace_file_size
test_output_flood
test_output_flood_kill
test_cpu_spin_timeout
test_timeout_unread_output
test_timeout_partial_write
test_cpu_quota
