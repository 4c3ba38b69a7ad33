#!/usr/bin/env bash
# `agentjail policy import-srt`: sandbox-runtime settings files become policies that
# `agentjail run` accepts and enforces (a denyRead in the workspace is unreadable, a denyWrite
# is read-only, allowedDomains allow every port and deniedDomains are refused by the proxy);
# what has no equivalent is refused with exit 125 naming the field, and nothing is written.
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
WS=$T/ws
mkdir -p "$WS/src" "$WS/config"
echo topsecret >"$WS/.env"
echo '{"db": "prod"}' >"$WS/config/production.json"
echo 'alias ls=rm' >"$WS/.bashrc"
echo hello >"$WS/notes.txt"
cd "$WS" || exit 1
RL=$(rootless_flags)

# The proxy resolves names through these instead of the host's, so the test needs no network:
# every name is a private address, which the proxy refuses only after the rules allowed it.
printf '10.255.255.1 allowed.invalid port.invalid denied.invalid other.invalid\n' >"$T/hosts"
printf 'nameserver 127.0.0.1\n' >"$T/resolv.conf"
export AGENTJAIL_EGRESS_HOSTS=$T/hosts AGENTJAIL_EGRESS_RESOLV_CONF=$T/resolv.conf

cat >"$T/srt.json" <<'EOF'
{
  "network": {
    "allowedDomains": ["allowed.invalid", "port.invalid:8443"],
    "deniedDomains": ["denied.invalid"],
    "allowUnixSockets": [],
    "allowLocalBinding": false
  },
  "filesystem": {
    "denyRead": ["~/.ssh", ".env"],
    "allowWrite": [".", "/tmp"],
    "denyWrite": ["config/production.json"]
  },
  "ignoreViolations": {"*": ["/usr/bin"]},
  "enableWeakerNestedSandbox": false
}
EOF

# ---- conversion ------------------------------------------------------------------------------

P=$T/policy.json
aj_run policy import-srt "$T/srt.json" -o "$P"
expect_eq "import: exit 0" "$RC" 0
expect_eq "import: -o writes the file, nothing on stdout" "$OUT" ""
expect_contains "import: a note for the dropped ignoreViolations" "$ERR" \
	"agentjail: note: ignoreViolations: dropped"
expect_eq "import: the workspace is the current directory" "$(json "$P" 'd["filesystem"]["workspace"]')" "$WS"
expect_eq "import: allowWrite \".\" makes it writable" \
	"$(json "$P" 'd["filesystem"]["workspace_mode"]')" rw
expect_eq "import: denyRead in the workspace is a mask; ~/.ssh, unseen anyway, is not" \
	"$(json "$P" 'd["filesystem"]["mask"]')" "['$WS/.env']"
expect_eq "import: denyWrite and srt's existing dotfiles are read-only" \
	"$(json "$P" 'd["filesystem"]["read_only"]')" "['$WS/config/production.json', '$WS/.bashrc']"
expect_eq "import: allowedDomains: proxy mode, every port unless one is given" \
	"$(json "$P" '(d["network"]["mode"], d["network"]["allow"])')" \
	"('proxy', ['allowed.invalid:*', 'port.invalid:8443'])"
expect_eq "import: deniedDomains: every port" "$(json "$P" 'd["network"]["deny"]')" \
	"['denied.invalid:*']"

aj_run policy import-srt "$T/srt.json"
printf '%s\n' "$OUT" >"$T/stdout.json"
check "import: without -o the policy goes to stdout" cmp -s "$T/stdout.json" "$P"

(cd / && "$AJ" policy import-srt "$T/srt.json" -w "$WS" >"$T/elsewhere.json" 2>/dev/null)
check "import -w DIR: the same policy from another directory" cmp -s "$T/elsewhere.json" "$P"

# ---- the policy runs and is enforced ------------------------------------------------------------

aj_run run $RL --policy "$P" --dry-run -- true
expect_eq "dry-run: the policy is accepted" "$RC" 0
expect_contains "dry-run: the plan has the proxy with both rule lists" "$OUT" "2 allow, 1 deny rules"

aj_run run $RL --policy "$P" -- cat .env
expect_eq "run: denyRead .env is unreadable" "$RC" 1
expect_contains "run: ... with EACCES" "$ERR" "Permission denied"
aj_run run $RL --policy "$P" -- cat notes.txt
expect_eq "run: the rest of the workspace is readable" "$OUT" hello

aj_run run $RL --policy "$P" -- sh -c 'echo x >config/production.json'
expect_contains "run: denyWrite config/production.json is read-only" "$ERR" "Read-only file system"
expect_eq "run: ... and unchanged on the host" "$(cat "$WS/config/production.json")" '{"db": "prod"}'
aj_run run $RL --policy "$P" -- sh -c 'echo x >>.bashrc'
expect_eq "run: srt's built-in protection of .bashrc holds" "$(cat "$WS/.bashrc")" 'alias ls=rm'
aj_run run $RL --policy "$P" -- sh -c 'echo new >src/new.txt'
expect_eq "run: the workspace is writable" "$(cat "$WS/src/new.txt" 2>/dev/null)" new

aj_run run $RL --policy "$P" -- python3 -c '
import urllib.request, urllib.error
for url in ["http://allowed.invalid:9999/", "http://port.invalid:8443/", "http://port.invalid/",
            "http://denied.invalid/", "http://other.invalid/"]:
    try:
        urllib.request.urlopen(url, timeout=20)
        print(url, "200")
    except urllib.error.HTTPError as e:
        print(url, e.code, e.read().decode().strip())
'
expect_contains "proxy: allowedDomains without a port allow any port (rules pass, the guard refuses 10/8)" \
	"$OUT" "http://allowed.invalid:9999/ 403 agentjail egress proxy: allowed.invalid resolves to 10.255.255.1"
expect_contains "proxy: a port-scoped entry allows its port" \
	"$OUT" "http://port.invalid:8443/ 403 agentjail egress proxy: port.invalid resolves to"
expect_contains "proxy: ... and no other" "$OUT" "port.invalid:80 is not allowed"
expect_contains "proxy: deniedDomains are denied by the deny rule" "$OUT" \
	"denied.invalid:80 is denied by network.deny[0] \"denied.invalid:*\""
expect_contains "proxy: anything else is not allowed" "$OUT" "other.invalid:80 is not allowed"

# ---- no allowedDomains: no network ------------------------------------------------------------

echo '{"network": {"allowedDomains": [], "deniedDomains": []}, "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}' >"$T/none.json"
aj_run policy import-srt "$T/none.json" -o "$T/none.policy"
expect_eq "no allowedDomains: network mode none, read-only workspace" \
	"$(json "$T/none.policy" '(d["network"], d["filesystem"]["workspace_mode"])')" "({'mode': 'none'}, 'ro')"
aj_run run $RL --policy "$T/none.policy" -- sh -c 'echo x >notes.txt'
expect_contains "no allowWrite: the workspace is read-only" "$ERR" "Read-only file system"

# ---- a denyWrite path that does not exist: the run refuses to start ----------------------------

echo '{"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": ["missing.json"]}}' >"$T/missing.json"
aj_run policy import-srt "$T/missing.json" -o "$T/missing.policy"
expect_eq "missing denyWrite: imported" "$RC" 0
expect_contains "missing denyWrite: a note says the run refuses until it exists" "$ERR" \
	"\"$WS/missing.json\" does not exist now"
aj_run run $RL --policy "$T/missing.policy" -- true
expect_eq "missing denyWrite: the run refuses to start (exit 125)" "$RC" 125
expect_contains "missing denyWrite: ... naming the read-only grant" "$ERR" "filesystem.read_only"

# ---- symlinks in allow lists: refused, never followed --------------------------------------------

# A cloned repository's "build -> .." would otherwise make its parent writable (srt itself
# ignores allow paths whose symlink points outside them).
ln -s .. "$WS/build"
printf '{"filesystem": {"allowWrite": ["./build"]}}' >"$T/link.json"
aj_run policy import-srt "$T/link.json" -o "$T/link.policy"
expect_eq "allowWrite through a symlink: refused (exit 125)" "$RC" 125
expect_contains "allowWrite through a symlink: the message names the field and the target" "$ERR" \
	"filesystem.allowWrite[0]: \"./build\" is a symlink to \"$T\"; srt ignores such entries"
check "allowWrite through a symlink: nothing written" test ! -e "$T/link.policy"
rm "$WS/build"

# A denyRead reached again through a symlink: workspace docs -> the secret directory.
mkdir "$T/secret"
echo hunter2 >"$T/secret/key"
ln -s "$T/secret" "$WS/docs"
printf '{"filesystem": {"denyRead": ["%s"], "allowRead": ["./docs"]}}' "$T/secret" >"$T/reopen.json"
aj_run policy import-srt "$T/reopen.json" -o "$T/reopen.policy"
expect_eq "allowRead through a symlink to a denyRead: refused (exit 125)" "$RC" 125
expect_contains "allowRead through a symlink: the message names the field" "$ERR" \
	"filesystem.allowRead[0]: \"./docs\" is a symlink to \"$T/secret\""
# srt compares spellings: a denyRead spelled through the link is not re-opened by the target's.
printf '{"filesystem": {"denyRead": ["./docs"], "allowRead": ["%s"]}}' "$T/secret" >"$T/spell.json"
aj_run policy import-srt "$T/spell.json" -o "$T/spell.policy"
expect_eq "denyRead through a symlink, allowRead of its target: imported" "$RC" 0
expect_eq "... the target is masked" "$(json "$T/spell.policy" 'd["filesystem"]["mask"]')" "['$T/secret']"
aj_run run $RL --policy "$T/spell.policy" -- cat "$T/secret/key"
expect_eq "run: ... and its key is unreadable" "$OUT" ""
expect_not_contains "run: ... not a word of it" "$OUT$ERR" hunter2
rm "$WS/docs"

# ---- srt's write protections apply to every writable path ---------------------------------------

WS2=$T/repo
mkdir -p "$WS2/.git/hooks" "$WS2/.git/objects" "$WS2/.vscode"
echo '[core]' >"$WS2/.git/config"
printf '{"filesystem": {"allowWrite": ["./.git"]}}' >"$T/git.json"
aj_run policy import-srt "$T/git.json" -w "$WS2" -o "$T/git.policy"
expect_eq "read-only workspace, allowWrite .git: imported" "$RC" 0
expect_eq "... .git/hooks and .git/config are read-only" \
	"$(json "$T/git.policy" '(d["filesystem"]["workspace_mode"], d["filesystem"]["read_only"])')" \
	"('ro', ['$WS2/.git/hooks', '$WS2/.git/config'])"
(cd "$WS2" && "$AJ" run $RL --policy "$T/git.policy" -- sh -c \
	'echo "#!/bin/sh" >.git/hooks/pre-commit; echo "[alias] x = !evil" >>.git/config; echo obj >.git/objects/new' \
	>/dev/null 2>&1)
check "run: a hook cannot be planted" test ! -e "$WS2/.git/hooks/pre-commit"
expect_eq "run: .git/config is unchanged" "$(cat "$WS2/.git/config")" '[core]'
expect_eq "run: the rest of .git is writable" "$(cat "$WS2/.git/objects/new" 2>/dev/null)" obj
printf '{"filesystem": {"allowWrite": ["./.git", ".vscode"]}}' >"$T/vscode.json"
aj_run policy import-srt "$T/vscode.json" -w "$WS2" -o "$T/vscode.policy"
expect_eq "allowWrite .vscode: refused (exit 125)" "$RC" 125
expect_contains "allowWrite .vscode: the message names the field" "$ERR" \
	"filesystem.allowWrite[1]: \".vscode\" is inside \".vscode\", which srt keeps read-only"

# ---- host unix sockets: srt's sandbox cannot reach them ------------------------------------------

mkdir -p "$T/sockdir/run"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sockdir/run/agent.sock"
printf '{"filesystem": {"allowRead": ["%s"]}}' "$T/sockdir" >"$T/sock.json"
aj_run policy import-srt "$T/sock.json" -o "$T/sock.policy"
expect_eq "a grant holding a unix socket: refused (exit 125)" "$RC" 125
expect_contains "... naming the field and the socket" "$ERR" \
	"filesystem.allowRead[0]: \"$T/sockdir\" holds a unix socket, \"$T/sockdir/run/agent.sock\""
rm "$T/sockdir/run/agent.sock"
aj_run policy import-srt "$T/sock.json" -o "$T/sock.policy"
expect_eq "... the same grant without it: imported" "$RC" 0

# ---- an allowRead above a denyRead does not re-open what is below it ----------------------------

mkdir -p "$T/rv/x/proj"
printf '{"filesystem": {"denyRead": ["%s"], "allowRead": ["/tmp"]}}' "$T/rv/x" >"$T/above.json"
aj_run policy import-srt "$T/above.json" -w "$T/rv/x/proj" -o "$T/above.policy"
expect_eq "allowRead above a denyRead: the workspace below stays masked" \
	"$(json "$T/above.policy" 'd["filesystem"]["mask"]')" "['$T/rv/x/proj']"

printf '{"network": {"allowedDomains": [], "deniedDomains": [], "allowLocalBinding": true}}' \
	>"$T/bind.json"
aj_run policy import-srt "$T/bind.json" -o "$T/bind.policy"
expect_eq "allowLocalBinding: imported (servers bind on the sandbox's own loopback)" "$RC" 0
expect_contains "allowLocalBinding: a note says why nothing is needed" "$ERR" \
	"network.allowLocalBinding: dropped"

# ---- refusals ---------------------------------------------------------------------------------

refused() { # NAME JSON FIELD-MESSAGE
	printf '%s' "$2" >"$T/bad.json"
	rm -f "$T/bad.policy"
	aj_run policy import-srt "$T/bad.json" -o "$T/bad.policy"
	expect_eq "$1: exit 125" "$RC" 125
	expect_contains "$1: the message names the field" "$ERR" "$3"
	check "$1: nothing written" test ! -e "$T/bad.policy"
}
refused "allowUnixSockets" '{"network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": ["/var/run/docker.sock"]}}' \
	"srt settings \"$T/bad.json\": network.allowUnixSockets: no equivalent in agentjail"
refused "httpProxyPort" '{"network": {"allowedDomains": ["a.example"], "deniedDomains": [], "httpProxyPort": 8080}}' \
	"network.httpProxyPort: no equivalent in agentjail"
refused "enableWeakerNestedSandbox" '{"enableWeakerNestedSandbox": true}' \
	"enableWeakerNestedSandbox: no equivalent in agentjail"
refused "a glob" '{"filesystem": {"denyRead": ["**/.env"], "allowWrite": [], "denyWrite": []}}' \
	"filesystem.denyRead[0]: \"**/.env\" is a glob pattern"
refused "a system directory" '{"filesystem": {"denyRead": [], "allowWrite": ["/usr/local"], "denyWrite": []}}' \
	"filesystem.allowWrite[0]: \"/usr/local\" is a host system directory"
refused "an unknown field" '{"filesytem": {}}' "filesytem: unknown field"
refused "broken JSON" '{"network": ' "line 1 column"

aj_run policy import-srt
expect_eq "no FILE: exit 125" "$RC" 125
expect_contains "no FILE: says so" "$ERR" "which settings file"
aj_run policy import-srt "$T/nonexistent.json"
expect_eq "a missing file: exit 125" "$RC" 125

# ---- help -------------------------------------------------------------------------------------

aj_run policy --help
expect_eq "policy --help: exit 0" "$RC" 0
expect_contains "policy --help: lists import-srt" "$OUT" "import-srt"
aj_run policy import-srt --help
expect_eq "policy import-srt --help: exit 0" "$RC" 0
expect_contains "policy import-srt --help: the synopsis" "$OUT" "agentjail policy import-srt FILE [-o OUT]"
aj_run policy bogus
expect_eq "policy bogus: exit 125" "$RC" 125
aj_run --help
expect_contains "agentjail --help lists policy" "$OUT" "policy"
