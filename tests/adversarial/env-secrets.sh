#!/usr/bin/env bash
# The host's environment secrets: fake credentials exported before the run must not be
# readable inside — not in the command's environment, not in /proc/self or /proc/1 (the
# sandbox's init was forked from agentjail, whose environment held them), not in init's
# memory — and must not be copied into the report or the event log.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

SECRET="ajsecret-$RANDOM$RANDOM-do-not-leak"

# Prints "NAME found|absent|ERRNO" for each place the secret could be read from.
HUNT='
import errno, os, sys
secret = sys.argv[1][::-1].encode()  # given reversed: argv is logged
def look(name, fn):
    try:
        print(name, "found" if secret in fn() else "absent")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def read(p):
    with open(p, "rb") as f:
        return f.read()
def memory(pid):
    found = False
    with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb") as mem:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if "r" not in line.split()[1]:
                continue
            try:
                mem.seek(lo)
                found = found or secret in mem.read(hi - lo)
            except OSError:
                pass
    return secret if found else b""
look("env", lambda: "\n".join("%s=%s" % kv for kv in os.environ.items()).encode())
look("self-environ", lambda: read("/proc/self/environ"))
look("init-environ", lambda: read("/proc/1/environ"))
look("init-cmdline", lambda: read("/proc/1/cmdline"))
look("init-memory", lambda: memory(1))
look("parent-environ", lambda: read("/proc/%d/environ" % os.getppid()))
print("term", os.environ.get("TERM", "-"))
print("granted", os.environ.get("AJ_GRANTED_VAR", "-"))
'

run_hunt() {
	adv_setup
	local events=$T/events.jsonl
	env AJ_FAKE_SECRET="$SECRET" AWS_SECRET_ACCESS_KEY="$SECRET" GITHUB_TOKEN="$SECRET" \
		OPENAI_API_KEY="$SECRET" AJ_GRANTED_VAR=granted-value TERM=xterm-ajtest \
		"$AJ" run -w "$WS" --report "$REPORT" --events "$events" $(rootless_flags) \
		--env AJ_GRANTED_VAR -- python3 -c "$HUNT" "$(rev <<<"$SECRET")" \
		>"$T/out" 2>"$T/err" </dev/null
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	EVENTS=$(cat "$events" 2>/dev/null)
}

test_secrets() {
	run_hunt
	expect_eq "hunt exit code" "$RC" 0
	# Controls: the environment does get through where the policy allows it.
	expect_line "allowlisted TERM passes (control)" term xterm-ajtest
	expect_line "--env passes a named variable (control)" granted granted-value
	expect_line "secret not in the command's environment" env absent
	expect_line "secret not in /proc/self/environ" self-environ absent
	expect_line_in "secret not readable from init's /proc/1/environ" init-environ absent EACCES
	expect_line_in "secret not in init's command line" init-cmdline absent EACCES
	expect_line_in "secret not readable from init's memory" init-memory absent EACCES
	expect_line_in "secret not readable from the parent's environ" parent-environ absent EACCES
	expect_not_contains "secret not in agentjail's own output" "$OUT$ERR" "$SECRET"
	check "report written" test -s "$REPORT"
	check "secret not in the report" bash -c '! grep -q -- "$1" "$2"' _ "$SECRET" "$REPORT"
	expect_not_contains "secret not in the event log" "$EVENTS" "$SECRET"
}

test_host_home_hidden() {
	adv_setup
	sandbox -- sh -c 'test -e "$1"; echo "home-visible $?"' _ "$HOME"
	expect_line "host home directory ($HOME) not visible" home-visible 1
}

test_secrets
test_host_home_hidden
