#!/usr/bin/env bash
# Hosts without unprivileged user namespaces (a container's default seccomp profile,
# simulated with seccomp-wrap, as an unprivileged user): the namespaces tier fails closed and
# names the cause and the remedies; the landlock tier (--tier landlock) runs, and its plan,
# report and `agentjail features` say layer by layer what it enforces and what it lost; the
# policies it cannot honour are refused unless --allow-degraded names the layer.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_landlock.bash"
tl_require

state() { layer_state "$1"; }

test_fail_closed() {
	tl_setup
	tl_run run --memory none --cpus none --report "$REPORT" -- echo ran
	expect_eq "no user namespaces: exit 125" "$RC" 125
	expect_not_contains "no user namespaces: the command did not run" "$OUT" ran
	expect_contains "no user namespaces: stderr names the layer" "$ERR" "agentjail: [userns]"
	expect_contains "no user namespaces: the cause is the seccomp filter" "$ERR" \
		"a seccomp filter on agentjail itself refuses CLONE_NEWUSER"
	expect_contains "no user namespaces: remedy for the container" "$ERR" \
		"run the container with a seccomp profile that allows user namespaces"
	expect_contains "no user namespaces: the landlock tier is offered" "$ERR" "--tier landlock"
	expect_contains "no user namespaces: running as root is offered" "$ERR" "run agentjail as root"
	expect_eq "no user namespaces: report error.layer" "$(rep 'd["error"]["layer"]')" userns
	expect_contains "no user namespaces: report hint offers the tier" "$(rep 'd["error"]["hint"]')" \
		"--tier landlock"
}

test_features() {
	tl_setup
	tl_run features --json
	printf '%s' "$OUT" >"$T/f.json"
	expect_eq "features: exit 0" "$RC" 0
	expect_eq "features: the namespaces tier is unusable here" \
		"$(json "$T/f.json" 'd["tiers"]["namespaces"]["usable"]')" False
	expect_contains "features: and says why" "$(json "$T/f.json" 'd["tiers"]["namespaces"]["detail"]')" \
		"seccomp filter"
	expect_eq "features: the landlock tier is usable" \
		"$(json "$T/f.json" 'd["tiers"]["landlock"]["usable"]')" True
	expect_contains "features: the comparison covers the pid namespace" \
		"$(json "$T/f.json" '[r["landlock"] for r in d["tiers"]["landlock"]["compared"] if r["layer"] == "pid-namespace"][0]')" \
		"host processes visible"
	expect_contains "features: and unix sockets to host paths" \
		"$(json "$T/f.json" '[r["landlock"] for r in d["tiers"]["landlock"]["compared"] if r["layer"] == "network-namespace"][0]')" \
		"does not check connect() to socket files"
	tl_run features
	expect_contains "features (text): the tier comparison" "$OUT" \
		"the landlock tier compared with the namespaces tier"
}

test_runs() {
	tl_setup
	tl_sandbox -- sh -c 'echo ran; id -u; echo "$HOME $TMPDIR"; touch "$HOME/h" "$TMPDIR/t" made'
	expect_eq "landlock tier: exit 0" "$RC" 0
	expect_eq "landlock tier: the command ran as the caller" "$(printf '%s\n' "$OUT" | head -2)" \
		"ran
$TIER_UID"
	local scratch
	scratch=$(rep 'd["plan"]["scratch"]')
	expect_eq "HOME and TMPDIR in the run's scratch directory" "$(printf '%s\n' "$OUT" | sed -n 3p)" \
		"$scratch/home $scratch/tmp"
	check "the scratch directory is gone after the run" test ! -e "$scratch"
	check "the workspace kept what the command made" test -e "$WS/made"
	expect_eq "report: tier" "$(rep 'd["plan"]["tier"]')" landlock
	expect_eq "report: the namespaces are absent" \
		"$(state user-namespace) $(state mount-namespace) $(state pid-namespace) $(state ipc-namespace) $(state uts-namespace) $(state network-namespace) $(state cgroup-namespace)" \
		"absent absent absent absent absent absent absent"
	expect_contains "report: the pid namespace's loss is said" "$(layer_detail pid-namespace)" \
		"host processes are visible in /proc"
	expect_contains "report: the uid is the caller's" "$(layer_detail user-namespace)" \
		"the caller's uid $TIER_UID"
	expect_eq "report: Landlock holds the boundaries" \
		"$(state landlock) $(state landlock-net) $(state landlock-scope) $(state seccomp) $(state no-new-privileges)" \
		"enforced enforced enforced enforced enforced"
	expect_eq "report: the tier's seccomp profile" "$(rep 'd["plan"]["seccomp"]["profile"]')" landlock-tier
	expect_eq "report: the workspace is a read-write Landlock rule" \
		"$(rep "[o['op'] + ' ' + o['landlock'] for o in d['plan']['rootfs'] if o['path'] == '$WS'][0]")" \
		"allow read-write"
	expect_eq "report: /usr is read-exec" \
		"$(rep "[o['landlock'] for o in d['plan']['rootfs'] if o['path'] == '/usr'][0]")" read-exec
}

test_policy_file_and_dry_run() {
	tl_setup
	printf '{"version": 1, "tier": "landlock", "limits": {"memory": null, "pids": null}}' >"$T/p.json"
	tl_run run -w "$WS" --policy "$T/p.json" --report "$REPORT" -- true
	expect_eq '"tier": "landlock" in a policy file: runs' "$RC" 0
	expect_eq "policy file: report tier" "$(rep 'd["plan"]["tier"]')" landlock
	tl_run run -w "$WS" --policy "$T/p.json" --tier namespaces --report "$REPORT" -- true
	expect_eq "--tier namespaces overrides the file: fails closed again" "$RC" 125
	tl_run run "${TIER[@]}" -w "$WS" --dry-run --json -- true
	printf '%s' "$OUT" >"$T/plan.json"
	expect_eq "--dry-run --json: tier" "$(json "$T/plan.json" 'd["tier"]')" landlock
	expect_eq "--dry-run: nothing made" "$(json "$T/plan.json" 'd["scratch"]' | xargs test -e && echo made)" ""
	tl_run run "${TIER[@]}" -w "$WS" --dry-run -- true
	expect_contains "--dry-run (text): names the tier" "$OUT" "landlock tier (no namespaces)"
	tl_run run --tier chroot -- true
	expect_eq "--tier with an unknown value: exit 125" "$RC" 125
	expect_contains "--tier with an unknown value: says what is expected" "$ERR" \
		"--tier: expected namespaces, landlock or gvisor"
}

test_exit_codes() {
	tl_setup
	tl_sandbox -- sh -c 'exit 7'
	expect_eq "the command's exit code passes through" "$RC" 7
	tl_sandbox -- sh -c 'kill -TERM $$'
	expect_eq "a signal becomes 128+N" "$RC" 143
	tl_sandbox -- no-such-command-ajtest
	expect_eq "command not found: 127" "$RC" 127
	tl_sandbox --cwd /nonexistent-ajtest -- true
	expect_eq "a missing cwd: 126" "$RC" 126
	tl_sandbox --timeout 1s -- sleep 30
	expect_eq "timeout: 124" "$RC" 124
	tl_cmd sh -c "echo piped | '$WRAP' ${NO_USERNS[*]} -- '$AJ' run ${TIER[*]} -w '$WS' -- cat"
	expect_eq "stdin reaches the command" "$OUT" piped
}

# Limits that need a cgroup (the tier's user has none here), and their weaker stand-ins.
test_limits() {
	tl_setup
	tl_run run --tier landlock --cpus none --pids none -w "$WS" -- true
	expect_eq "the default memory limit without a cgroup: refused" "$RC" 125
	expect_contains "memory refusal names the layer" "$ERR" \
		"[cgroup] the memory layer is needed but cannot be enforced"
	expect_contains "memory refusal offers --allow-degraded" "$ERR" "--allow-degraded memory"
	tl_run run --tier landlock --cpus none --pids none --memory 256MiB --allow-degraded memory \
		-w "$WS" --report "$REPORT" -- sh -c 'ulimit -v'
	expect_eq "--allow-degraded memory: runs" "$RC" 0
	expect_eq "--allow-degraded memory: RLIMIT_AS stands in" "$OUT" 262144
	expect_eq "--allow-degraded memory: reported degraded" "$(state memory)" degraded
	expect_contains "--allow-degraded memory: and why it is weaker" "$(layer_detail memory)" \
		"RLIMIT_AS 256 MiB per process stands in (weaker"
	tl_run run --tier landlock --memory none --cpus none --pids 64 -w "$WS" -- true
	expect_eq "a pids limit without a cgroup: refused" "$RC" 125
	expect_contains "pids refusal says why RLIMIT_NPROC is not the same" "$ERR" \
		"RLIMIT_NPROC counts every process of uid $TIER_UID"
	tl_run run --tier landlock --memory none --cpus none --pids 64 --allow-degraded pids \
		-w "$WS" --report "$REPORT" -- python3 -c 'import resource; print(resource.getrlimit(resource.RLIMIT_NPROC)[0])'
	expect_eq "--allow-degraded pids: runs" "$RC" 0
	expect_eq "--allow-degraded pids: reported degraded" "$(state pids)" degraded
	check "--allow-degraded pids: RLIMIT_NPROC is at least the limit ($OUT)" test "${OUT:-0}" -ge 64
}

# What Landlock cannot express without a mount namespace.
test_refusals() {
	tl_setup
	as_tier_user mkdir -p "$WS/vendor" "$T/outside"
	echo s >"$WS/secret"
	tl_sandbox --hostname other -- true
	expect_eq "a hostname: refused" "$RC" 125
	expect_contains "a hostname: names the layer" "$ERR" "the uts-namespace layer is needed"
	tl_sandbox --hostname other --allow-degraded uts-namespace -- true
	expect_eq "a hostname with --allow-degraded uts-namespace: runs" "$RC" 0
	expect_eq "a hostname accepted: reported degraded" "$(state uts-namespace)" degraded
	tl_sandbox --ro "$WS/vendor" -- true
	expect_eq "a read-only path inside the writable workspace: refused" "$RC" 125
	expect_contains "read-only inside writable: says why" "$ERR" \
		"is granted read-only inside the writable"
	tl_sandbox --ro "$WS/vendor" --allow-degraded mount-namespace -- touch vendor/x
	expect_eq "read-only inside writable, accepted: runs (and stays writable)" "$RC:$(state mount-namespace)" \
		"0:degraded"
	tl_sandbox --mask "$WS/secret" -- cat secret
	expect_eq "a mask inside the workspace: refused" "$RC" 125
	expect_contains "a mask inside a grant: names the field and the grant" "$ERR" \
		"filesystem.mask[0]: \"$WS/secret\" lies inside the granted \"$WS\""
	tl_sandbox --mask "$WS/secret" --allow-degraded mount-namespace -- cat secret
	expect_eq "a mask inside a grant: not degradable" "$RC" 125
	tl_sandbox --mask "$T/outside" -- true
	expect_eq "a mask outside every grant: runs" "$RC" 0
	expect_eq "a mask outside every grant: a deny record" \
		"$(rep "[o['op'] for o in d['plan']['rootfs'] if o['path'] == '$T/outside'][0]")" deny
	mkdir "$WS/.git"
	tl_sandbox -- true
	expect_eq "a git workspace: refused (.git/hooks cannot be read-only)" "$RC" 125
	expect_contains "a git workspace: says why" "$ERR" ".git/hooks and .git/config"
	tl_sandbox --allow-degraded mount-namespace -- true
	expect_eq "a git workspace, accepted: runs" "$RC" 0
	tl_sandbox --preset read-only -- true
	expect_eq "a git workspace, read-only: runs" "$RC" 0
	rmdir "$WS/.git"
	tl_sandbox --allow-syscalls io_uring -- true
	expect_eq "io_uring relaxed: refused in this tier" "$RC" 125
	expect_contains "io_uring: says why" "$ERR" "io_uring cannot be relaxed in the landlock tier"
	tl_run run "${TIER[@]}" -w "$WS" --overlay discard --state-dir "$T/state" -- true
	expect_eq "--overlay: refused in this tier" "$RC" 125
	expect_contains "--overlay: says why" "$ERR" "persistent sandboxes and --overlay"
}

test_no_landlock() {
	tl_setup
	tl_cmd "$WRAP" "${NO_USERNS[@]}" --deny landlock_create_ruleset:EOPNOTSUPP -- \
		"$AJ" run "${TIER[@]}" -w "$WS" --allow-degraded landlock -- echo ran
	expect_eq "no Landlock: the tier cannot run, even degraded" "$RC" 125
	expect_contains "no Landlock: says so" "$ERR" "the landlock tier is built on Landlock"
	expect_not_contains "no Landlock: the command did not run" "$OUT" ran
}

# The egress proxy has no namespace to listen in: it takes the host's loopback, and the port
# rule lets the sandbox reach that port on any address. Accepted only when named.
test_proxy() {
	tl_setup
	tl_sandbox --network proxy --allow-host allowed.invalid -- true
	expect_eq "proxy mode: refused without --allow-degraded network-namespace" "$RC" 125
	expect_contains "proxy mode: says what is lost" "$ERR" \
		"Landlock rules name ports, not addresses"
	tl_sandbox --network proxy --allow-host allowed.invalid --allow-degraded network-namespace \
		-- curl -sS -m 5 -o /dev/null -w '%{http_code}' http://denied.invalid/
	if [ "$RC" = 125 ] && [[ "$ERR" == *"Address already in use"* ]]; then
		skip "proxy mode in the tier" "port 3128 of the host's loopback is taken"
		return
	fi
	expect_eq "proxy mode, accepted: the proxy answers (and denies the host)" "$OUT" 403
	expect_eq "proxy mode, accepted: reported degraded" "$(state network-namespace)" degraded
	expect_contains "proxy mode: connect allowed to the proxy's port only" \
		"$(layer_detail landlock-net)" "connect denied but to port 3128"
}

# network.listen: without a network namespace a listener is on the host's network, so only the
# ports the policy names may be bound (Landlock bind rules); connect stays refused, even to the
# sandbox's own server; the host reaches it (the documented trade-off).
LISTEN='
import errno, socket, sys, os
p1, p2 = int(sys.argv[1]), int(sys.argv[2])
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
srv = socket.socket()
t("bind-named", lambda: srv.bind(("127.0.0.1", p1)))
t("listen-named", lambda: srv.listen())
t("bind-other", lambda: socket.socket().bind(("127.0.0.1", p2)))
t("connect-own", lambda: socket.create_connection(("127.0.0.1", p1), 3).close())
open("ready", "w").close()
srv.settimeout(10)
t("host-connected", lambda: srv.accept()[0].close())
'

test_listen() {
	local p1 p2 helper
	tl_setup
	p1=$(free_port)
	p2=$(free_port)
	printf '{"version": 1, "network": {"listen": [%s]}}' "$p1" >"$T/listen.json"
	(wait_until 15 test -e "$WS/ready" &&
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3).close()' "$p1") &
	helper=$!
	tl_sandbox --policy "$T/listen.json" -- python3 -c "$LISTEN" "$p1" "$p2"
	wait "$helper"
	expect_eq "network.listen: exit 0" "$RC" 0
	expect_line "network.listen: the named port binds" bind-named OK
	expect_line "network.listen: listen() is allowed" listen-named OK
	expect_line "network.listen: another port is refused (EACCES)" bind-other EACCES
	expect_line "network.listen: connect to the own server stays refused (EACCES)" connect-own \
		EACCES
	expect_line "network.listen: the host reaches the listener (it is on the host's network)" \
		host-connected OK
	expect_contains "network.listen: the plan names the port" "$(layer_detail landlock-net)" \
		"TCP bind denied but on port $p1"
	tl_sandbox -- python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))'
	expect_contains "without network.listen: bind refused" "$ERR" "Permission denied"
}

test_as_root() {
	local out rc
	if ! is_root; then
		skip "the tier refuses root" "not running as root"
		return
	fi
	out=$("$AJ" run "${TIER[@]}" -- echo ran 2>&1)
	rc=$?
	expect_eq "as root: refused" "$rc" 125
	expect_contains "as root: says why" "$out" "the sandbox would be host root"
}

test_fail_closed
test_features
test_runs
test_policy_file_and_dry_run
test_exit_codes
test_limits
test_refusals
test_no_landlock
test_listen
if command -v curl >/dev/null; then
	test_proxy
else
	skip "proxy mode in the tier" "curl is not installed"
fi
test_as_root
