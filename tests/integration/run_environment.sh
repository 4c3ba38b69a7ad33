#!/usr/bin/env bash
# `agentjail run`: the environment inside — the host environment is dropped except a short
# allowlist, --env passes a host variable, --setenv sets one, policy files and flags combine,
# and reports name variables without their values.
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS"
cd "$WS" || exit 1
RL=$(rootless_flags)
HOSTPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# host_run ARGS...: agentjail with a known host environment full of secrets.
host_run() {
	local o e
	o=$(mktemp) e=$(mktemp)
	env -i PATH="$HOSTPATH" HOME=/root USER=root TERM=xterm-256color LANG=C.UTF-8 \
		LC_TIME=C TZ=UTC MYSECRET=s3cr3t AWS_SECRET_ACCESS_KEY=aws-key GITHUB_TOKEN=ghp-token \
		SSH_AUTH_SOCK=/tmp/agent.sock FOO=foo-from-host LD_PRELOAD=/tmp/evil.so \
		"$AJ" "$@" >"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}

host_run run $RL -- env
expect_eq "default environment: the run succeeds" "$RC" 0
[ "$RC" = 0 ] || printf '%s\n' "$ERR" | sed 's/^/# agentjail said: /'
names=$(printf '%s\n' "$OUT" | cut -d= -f1 | sort | tr '\n' ' ')
expect_eq "default environment: only the fixed variables and the allowlist" "$names" \
	"HOME LANG LC_TIME LOGNAME PATH SHELL TERM TZ USER "
for secret in s3cr3t aws-key ghp-token agent.sock evil.so foo-from-host; do
	expect_not_contains "default environment: no host value '$secret'" "$OUT" "$secret"
done
expect_contains "HOME is the sandbox user's home" "$OUT" "HOME=/home/user"
expect_contains "USER is the sandbox user" "$OUT" "USER=user"
expect_contains "PATH is the sandbox's" "$OUT" "PATH=$HOSTPATH"
expect_contains "TERM passes (allowlisted)" "$OUT" "TERM=xterm-256color"
expect_contains "LC_* passes (allowlisted prefix)" "$OUT" "LC_TIME=C"

host_run run $RL --env FOO -- sh -c 'echo "FOO=$FOO MYSECRET=${MYSECRET-unset}"'
expect_eq "--env passes one host variable, and only it" "$OUT" "FOO=foo-from-host MYSECRET=unset"
host_run run $RL --env NOT_ON_HOST -- sh -c 'echo "${NOT_ON_HOST-unset}"'
expect_eq "--env of a variable the host lacks leaves it unset" "$OUT" unset
host_run run $RL -e FOO -e GITHUB_TOKEN -- sh -c 'echo "$FOO $GITHUB_TOKEN"'
expect_eq "-e is repeatable" "$OUT" "foo-from-host ghp-token"

host_run run $RL --setenv BAR=baz --setenv 'EQ=a=b' --setenv EMPTY= -- \
	sh -c 'echo "$BAR|$EQ|${EMPTY-unset}"'
expect_eq "--setenv sets variables (values may hold '=' or be empty)" "$OUT" "baz|a=b|"
host_run run $RL --env FOO --setenv FOO=from-flag -- sh -c 'echo "$FOO"'
expect_eq "--setenv wins over a passed host variable" "$OUT" from-flag
host_run run $RL --setenv LANG=C -- sh -c 'echo "$LANG"'
expect_eq "--setenv wins over the allowlist" "$OUT" C
host_run run $RL --setenv A=1 --setenv A=2 -- sh -c 'env | grep -c "^A="; echo "$A"'
expect_eq "a repeated --setenv keeps one entry, the last value" "$OUT" "1
2"

P=$T/env.json
cat >"$P" <<'EOF'
{"version": 1,
 "environment": {"allow": ["FOO", "GITHUB_*"], "set": {"FROM_FILE": "file", "BOTH": "file"}}}
EOF
host_run run $RL --policy "$P" --setenv BOTH=flag -- \
	sh -c 'echo "$FOO|$GITHUB_TOKEN|$FROM_FILE|$BOTH|${TERM-unset}"'
expect_eq "a policy's allow and set apply; the flag wins over the file" "$OUT" \
	"foo-from-host|ghp-token|file|flag|unset"

R=$T/report.json
host_run run $RL --report "$R" --setenv API_KEY=hunter2-value -- true
expect_contains "report: plan.environment lists the variable names" \
	"$(json "$R" 'd["plan"]["environment"]')" "'API_KEY'"
check "report: written" test -s "$R"
check "report: never the values" sh -c "! grep -q hunter2-value '$R'"
host_run run $RL --dry-run --json --setenv API_KEY=hunter2-value -- true
expect_not_contains "--dry-run --json: never the values" "$OUT" hunter2-value
