#!/usr/bin/env bash
# The names index (STATE/names/NAME, src/state/names.h): `exec NAME` reaches a running
# sandbox's supervisor through a link its supervisor keeps, without the state store. The link
# is a hint: a stale or forged one must never run a command in another sandbox nor hide what
# became of the one asked for; the request names the sandbox ("exec_named"), the supervisor it
# reaches refuses it for another (one of an earlier build refuses the operation), and the store
# decides. The policy's output cap and a pause hold on this way as on the store's.
# rootless: yes
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

NAMES=$STATE/names
field() { # field NAME KEY: the sandbox's record field
	local t
	t=$(mktmp)/rec.json
	"$AJ" inspect "$1" >"$t" && json "$t" "d['$2']"
}
via_index() { # the CLI's own account of the way it took
	aj_run --verbose exec "$@"
	case $ERR in *"reached through the names index"*) return 0 ;; esac
	return 1
}

pj_create nx --output-limit 1KiB
link=$(readlink "$NAMES/nx" 2>/dev/null)
check "create: STATE/names/nx is a link to the sandbox's control socket" \
	[ -S "$link" ]
expect_eq "... the socket the store records" "$link" "$(field nx socket)"
check "... not readable by others (the state directory is private)" \
	[ "$(stat -c %a "$NAMES")" = 700 ]

via_index nx -- sh -c 'echo here; exit 7'
expect_eq "exec through the index: the command's exit code" "$RC" 7
expect_eq "... its output" "$OUT" here
check "... and the CLI says it took the index's way" [ "$(printf '%s' "$ERR" | grep -c 'names index')" = 1 ]

aj_run exec nx -- sh -c 'head -c 5000 /dev/zero | tr "\0" x'
expect_eq "the policy's output cap (1 KiB), read from the supervisor: 1024 bytes pass" "${#OUT}" 1024
expect_contains "... and the limit is reported" "$ERR" "output limit reached"

if pj_can_freeze; then
	aj_run pause nx
	via_index nx -- true
	expect_eq "paused, through the index: exit 125" "$RC" 125
	expect_contains "... saying it is paused" "$ERR" "is paused"
	aj_run resume nx
else
	skip "a paused sandbox through the index" "no usable cgroup freezer for this user"
fi

aj_run stop nx
check "stop: the link is removed" [ ! -e "$NAMES/nx" ] && [ ! -L "$NAMES/nx" ]
aj_run exec nx -- true
expect_eq "exec of a stopped sandbox: exit 125" "$RC" 125
expect_contains "... saying it is stopped (the store's answer)" "$ERR" "is stopped"
aj_run start nx
check "start: the link is back" [ -S "$(readlink "$NAMES/nx")" ]

# ---- a supervisor killed before it could remove its link ---------------------------------------

sup=$(field nx supervisor_pid)
kill -9 "$sup"
wait_until 10 pid_gone "$sup"
check "SIGKILL: the link stays behind, stale" [ -L "$NAMES/nx" ]
if via_index nx -- true; then not_ok "a stale link: the CLI did not take it"; else ok "a stale link: the CLI did not take it"; fi
expect_eq "... exit 125" "$RC" 125
expect_contains "... and says the sandbox is stopped" "$ERR" "is stopped"
check "... the stale link is removed once the store knows the supervisor died" \
	[ ! -L "$NAMES/nx" ]

# ---- a link to another sandbox's socket --------------------------------------------------------

pj_create other
aj_run stop nx
ln -sfn "$(readlink "$NAMES/other")" "$NAMES/nx"
if via_index nx -- sh -c 'touch /home/user/ran-here'; then
	not_ok "a link to another sandbox's socket: not taken"
else
	ok "a link to another sandbox's socket: not taken"
fi
expect_eq "... exit 125" "$RC" 125
expect_contains "... the store's answer for nx" "$ERR" "is stopped"
aj_run exec other -- test -e /home/user/ran-here
expect_eq "... and the command did not run in the other sandbox" "$RC" 1

# ---- a link to another sandbox's socket while the sandbox named runs ---------------------------

aj_run start nx
own=$(readlink "$NAMES/nx")
ln -sfn "$(readlink "$NAMES/other")" "$NAMES/nx"
aj_run --verbose exec nx -- sh -c 'touch /home/user/ran-in-nx; head -c 5000 /dev/zero | tr "\0" x'
expect_eq "a link to another sandbox's socket, nx running: the command runs (exit 0)" "$RC" 0
expect_eq "... with nx's output cap (1 KiB), not the other's" "${#OUT}" 1024
check "... through the store, not the index" [ "$(printf '%s' "$ERR" | grep -c 'names index')" = 0 ]
aj_run exec nx -- test -e /home/user/ran-in-nx
expect_eq "... in nx" "$RC" 0
aj_run exec other -- test -e /home/user/ran-in-nx
expect_eq "... and not in the other sandbox" "$RC" 1
if pj_can_freeze; then
	aj_run pause other
	aj_run exec nx -- true
	expect_eq "the other sandbox paused: its supervisor refuses for the name first (nx runs it)" \
		"$RC" 0
	aj_run resume other
else
	skip "a link to a paused sandbox's socket" "no usable cgroup freezer for this user"
fi
ln -sfn "$own" "$NAMES/nx"

# ---- a supervisor of an earlier build, which ignores members it does not know -------------------
# Sent "exec" with the name, it would run the command wherever the link leads; the index's way
# sends "exec_named", which such a supervisor refuses as an unknown operation.

T=$(mktmp)
python3 - "$T/old.sock" "$T/ops" <<'PY' &
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(4)
s.settimeout(60)
with open(sys.argv[2], "w") as log:
    c, _ = s.accept()
    c.settimeout(30)
    while True:
        msg, fds, _, _ = socket.recv_fds(c, 1 << 18, 4)
        for fd in fds:
            os.close(fd)
        if not msg:
            break
        req = json.loads(msg)
        op = req.get("op", "")
        log.write(op + "\n")
        log.flush()
        c.send(json.dumps({"ok": False, "rid": req.get("rid"), "error": {
            "layer": "usage", "message": 'unknown operation "%s"' % op, "errno": 22}}).encode())
PY
old=$!
wait_until 10 test -S "$T/old.sock"
aj_run stop nx
ln -sfn "$T/old.sock" "$NAMES/nx"
aj_run exec nx -- true
expect_eq "a link to a supervisor of an earlier build: exit 125" "$RC" 125
expect_contains "... the store's answer for nx" "$ERR" "is stopped"
wait "$old"
expect_eq "... which was asked exec_named, never exec" "$(tr '\n' ' ' <"$T/ops")" "exec_named "
rm -f "$NAMES/nx"

# ---- a name given again ------------------------------------------------------------------------

aj_run rm -f nx
rm -f "$NAMES/nx"
pj_create nx
aj_run exec nx -- sh -c 'echo new > /home/user/mark'
via_index nx -- cat /home/user/mark
expect_eq "a name given to a new sandbox: the index leads to the new one" "$OUT" new
aj_run rm -f nx
check "rm -f: the link is removed" [ ! -L "$NAMES/nx" ]
