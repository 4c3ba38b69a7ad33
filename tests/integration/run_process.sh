#!/usr/bin/env bash
# `agentjail run`: the command's process — exit status pass-through, signals, stdin and
# output streams, working directory, hostname, a private size-limited /tmp, descriptor limit,
# and a pid namespace of its own.
# rootless: yes
# timeout: 180
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS/sub"
cd "$WS" || exit 1
RL=$(rootless_flags)

# ---- exit status -------------------------------------------------------------------------

aj_run run $RL -- true
expect_eq "exit 0 passes through" "$RC" 0
aj_run run $RL -- sh -c 'exit 3'
expect_eq "exit 3 passes through" "$RC" 3
aj_run run $RL -- sh -c 'exit 120'
expect_eq "exit 120 passes through" "$RC" 120
aj_run run $RL -- sh -c 'kill -TERM $$'
expect_eq "killed by SIGTERM is 128+15" "$RC" 143
aj_run run $RL -- sh -c 'kill -KILL $$'
expect_eq "killed by SIGKILL is 128+9" "$RC" 137
aj_run run $RL -- sh -c 'kill -SEGV $$'
expect_eq "killed by SIGSEGV is 128+11" "$RC" 139
R=$T/report.json
aj_run run $RL --report "$R" -- sh -c 'kill -USR1 $$'
expect_eq "killed by SIGUSR1 is 128+10" "$RC" 138
expect_eq "report: status kind" "$(json "$R" 'd["status"]["kind"]')" signaled
expect_eq "report: status signal" "$(json "$R" 'd["status"]["signal"]')" 10
expect_eq "report: status signal_name" "$(json "$R" 'd["status"]["signal_name"]')" USR1

# Signals the caller ignores (nohup, a shell's trap '') are not ignored by the command: only
# what it sets itself is. Bits 1 (SIGHUP) and 13 (SIGPIPE) of SigIgn.
ign=$( (trap '' HUP PIPE; "$AJ" run $RL -- sh -c 'sed -n "s/^SigIgn:[[:space:]]*//p" /proc/self/status') </dev/null)
check "signals the caller ignored are at their default in the command (SigIgn $ign)" \
	python3 -c 'import sys; sys.exit(int(sys.argv[1], 16) & ((1 << 0) | (1 << 12)) != 0)' "${ign:-1}"

# ---- streams -----------------------------------------------------------------------------

out=$(echo "hello from stdin" | "$AJ" run $RL -- cat)
expect_eq "stdin passes through" "$out" "hello from stdin"
head -c 3000000 /dev/urandom >"$T/big"
want=$(sha256sum <"$T/big" | cut -d' ' -f1)
got=$("$AJ" run $RL -- sha256sum <"$T/big" | cut -d' ' -f1)
expect_eq "3 MB of stdin arrive intact" "$got" "$want"
got=$("$AJ" run $RL -- cat <"$T/big" | sha256sum | cut -d' ' -f1)
expect_eq "3 MB of stdout arrive intact" "$got" "$want"
out=$("$AJ" run $RL -- sh -c 'echo to-out; echo to-err >&2' 2>"$T/err")
expect_eq "stdout goes to stdout" "$out" "to-out"
expect_eq "stderr goes to stderr" "$(cat "$T/err")" "to-err"
out=$("$AJ" run $RL -- sh -c 'read x; echo "got:$x"' </dev/null)
expect_eq "a closed stdin reads as EOF" "$out" "got:"

# ---- working directory, hostname, ids ------------------------------------------------------

aj_run run $RL -- pwd
expect_eq "the default cwd is the workspace" "$OUT" "$WS"
aj_run run $RL --cwd "$WS/sub" -- pwd
expect_eq "--cwd sets the working directory" "$OUT" "$WS/sub"
aj_run run $RL --cwd /tmp -- pwd
expect_eq "--cwd outside the workspace" "$OUT" /tmp
aj_run run $RL -- hostname
expect_eq "the default hostname" "$OUT" agentjail
aj_run run $RL --hostname box-7 -- sh -c 'hostname; cat /etc/hostname'
expect_eq "--hostname sets the hostname and /etc/hostname" "$OUT" "box-7
box-7"
aj_run run $RL -- id -u
expect_eq "the command runs as uid 1000 inside" "$OUT" 1000
aj_run run $RL -- sh -c 'grep -E "^(CapEff|CapPrm|NoNewPrivs)" /proc/self/status | tr -s "\t " " "'
expect_eq "no capabilities and no_new_privs" "$OUT" "CapPrm: 0000000000000000
CapEff: 0000000000000000
NoNewPrivs: 1"

# ---- /tmp --------------------------------------------------------------------------------

marker=/tmp/aj-host-marker-$$
echo host >"$marker"
aj_run run $RL -- sh -c "ls $marker 2>&1; echo inside >/tmp/aj-inside-$$ && echo wrote"
expect_contains "host /tmp is not visible inside" "$OUT" "No such file or directory"
expect_contains "/tmp is writable inside" "$OUT" "wrote"
check "what the sandbox wrote to /tmp is not on the host" test ! -e "/tmp/aj-inside-$$"
rm -f "$marker"
aj_run run $RL -- sh -c 'cat /tmp/aj-inside-'$$' 2>/dev/null || echo fresh'
expect_eq "each sandbox gets a fresh /tmp" "$OUT" fresh
aj_run run $RL --tmpfs-size 2MiB -- sh -c 'df -k /tmp | tail -1 | tr -s " " | cut -d" " -f2'
expect_eq "--tmpfs-size 2MiB sizes /tmp" "$OUT" 2048
aj_run run $RL --tmpfs-size 2MiB -- sh -c \
	'dd if=/dev/zero of=/tmp/fill bs=1M count=4 2>&1; echo "dd=$?"'
expect_contains "writing past the /tmp size fails" "$OUT" "No space left on device"
expect_contains "dd reports failure" "$OUT" "dd=1"
aj_run run $RL -- sh -c 'df -k /tmp | tail -1 | tr -s " " | cut -d" " -f2'
expect_eq "the default /tmp size is 1 GiB" "$OUT" 1048576

# ---- limits on the process -----------------------------------------------------------------

aj_run run $RL --open-files 77 -- sh -c 'ulimit -n; ulimit -Hn'
expect_eq "--open-files sets the soft and hard descriptor limits" "$OUT" "77
77"
aj_run run $RL -- sh -c 'ulimit -n'
expect_eq "the default descriptor limit is 4096" "$OUT" 4096
aj_run run $RL --file-size 1MiB --report "$R" -- dd if=/dev/zero of=big bs=1M count=3
expect_eq "--file-size: a write past the limit kills with SIGXFSZ (128+25)" "$RC" 153
expect_eq "--file-size: the file stops at the limit" "$(stat -c %s big)" 1048576
expect_eq "--file-size: report limits_hit" "$(json "$R" 'd["limits_hit"]')" "['file_size']"
rm -f big

# ---- pid namespace -----------------------------------------------------------------------

aj_run run $RL -- sh -c 'ls -d /proc/[0-9]* | wc -l'
check "only the sandbox's few processes are visible (saw $OUT)" test "$OUT" -le 5
aj_run run $RL -- sh -c 'echo $$'
check "the command is not pid 1 (init is)" test "$OUT" -gt 1
aj_run run $RL -- sh -c 'kill -0 1 && echo alive'
expect_eq "init is pid 1 of the sandbox" "$OUT" alive

# ---- what the supervisor loads -----------------------------------------------------------
# OpenSSL is loaded at its first use (src/common/openssl.h): a run without the egress proxy
# has none of it mapped, in its supervisor or in the sandbox's init (where readable: rootless,
# init is not dumpable to the caller).

"$AJ" run $RL -- sleep 3 >/dev/null 2>&1 &
SV=$!
init_of() { INIT=$(pgrep -P "$SV" -x agentjail-init | head -1) && [ -n "$INIT" ]; }
if wait_until 5 init_of; then
	SV_MAPS=$(cat "/proc/$SV/maps" 2>&1)
	expect_contains "the supervisor's memory map is read" "$SV_MAPS" "agentjail"
	expect_not_contains "no OpenSSL in the supervisor of a run without the proxy" "$SV_MAPS" \
		"libcrypto"
	if INIT_MAPS=$(cat "/proc/$INIT/maps" 2>/dev/null) && [ -n "$INIT_MAPS" ]; then
		expect_not_contains "no OpenSSL in the sandbox's init" "$INIT_MAPS" "libcrypto"
	else
		skip "no OpenSSL in the sandbox's init" "its memory map is not readable to this user"
	fi
else
	not_ok "the run's init appears within 5 s"
fi
kill "$SV" 2>/dev/null
wait "$SV" 2>/dev/null || true # its status is that of the kill
