#!/usr/bin/env bash
# Volumes (docs/storage.md "Volumes"): `agentjail volume` creates, lists, inspects, copies and
# removes them; two persistent sandboxes mount one at once and see each other's files with the
# same owners; a read-only mount refuses writes; a volume outlives its sandboxes, is refused
# removal while a running sandbox mounts it (unless -f), is not part of a sandbox's diff or
# snapshots; `run --volume` mounts one for a single command and binds host directories
# (read-only refused writes). Bad input names the field and leaves nothing: malformed entries,
# unknown volumes, system targets, bad names. `volume cp` never follows a link the sandbox made.
# /v1/volumes is the owner's: another owner's volume is 404 to a token owner, who is held to
# --max-volumes and --max-volume-bytes and cannot bind host directories.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
. "$AJ_ROOT/tests/serve.bash"
sv_setup
T=$(mktmp)
cd "$T" || exit 1

# ---- the store ----------------------------------------------------------------------------

aj_run volume create shared
expect_eq "volume create: exit 0" "$RC" 0
expect_eq "prints the name" "$OUT" shared
aj_run volume create shared
expect_eq "a taken name: exit 4" "$RC" 4
expect_contains "says so" "$ERR" 'a volume "shared" exists already'
aj_run volume create 'no/slash'
expect_eq "a bad name: exit 125" "$RC" 125
expect_contains "names what is wrong" "$ERR" "has a character other than letters, digits"
aj_run volume create .hidden
expect_contains "a name must begin with a letter or digit" "$ERR" "does not begin with a letter or digit"
aj_run volume create small --size 1MiB
expect_contains "--size below the minimum" "$ERR" "--size: at least 16MiB"
aj_run --json volume ls
expect_eq "ls: only the one made" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([v["name"] for v in json.load(sys.stdin)])')" "['shared']"
aj_run volume inspect shared
expect_eq "inspect: an id" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"][:4])')" vol_
VID=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
aj_run volume inspect "$VID"
expect_eq "inspect by id" "$RC" 0
aj_run volume inspect nosuch
expect_eq "an unknown volume: exit 1" "$RC" 1

# ---- two sandboxes share one ----------------------------------------------------------------

pj_create a --volume shared:/data
pj_create b --volume shared:/data
pj_create r --volume shared:/data:ro
aj_run exec a -- sh -c 'echo from-a >/data/note && mkdir /data/dir && id -u'
expect_eq "a writes the volume" "$RC" 0
UID_A=$OUT
aj_run exec b -- cat /data/note
expect_eq "b reads what a wrote, at once" "$OUT" from-a
aj_run exec b -- sh -c 'stat -c %u:%g /data/note'
OWN_B=$OUT
aj_run exec a -- sh -c 'stat -c %u:%g /data/note'
expect_eq "the same owners in both sandboxes" "$OWN_B" "$OUT"
expect_eq "the writer's own uid" "${OUT%%:*}" "$UID_A"
aj_run exec r -- sh -c 'cat /data/note; echo x >/data/other'
expect_contains "a read-only mount reads" "$OUT" from-a
expect_contains "and refuses writes" "$ERR" "Read-only file system"
aj_run diff a
expect_not_contains "the volume is not part of a's diff" "$OUT" note
aj_run volume rm shared
expect_eq "rm while running sandboxes mount it: exit 3" "$RC" 3
expect_contains "says why and what to do" "$ERR" "is mounted by a running sandbox"
aj_run --json volume inspect shared
expect_eq "inspect says it is in use" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["in_use"])')" True
aj_run stop a
aj_run snapshot a --name snap
expect_eq "a snapshot of a sandbox that mounts a volume" "$RC" 0
# shellcheck disable=SC2086
aj_run create --name c $PJ_FLAGS --from snap
expect_eq "a sandbox from that snapshot (no --volume of its own)" "$RC" 0
aj_run exec c -- sh -c 'ls /data 2>&1; ls ~'
expect_not_contains "has none of the volume's files: a snapshot does not copy volumes" "$OUT" note
aj_run exec b -- sh -c 'echo later >/data/note'
pj_remove_all
aj_run --json volume inspect shared
expect_eq "the volume outlives its sandboxes" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["in_use"], d["used_bytes"] > 0)')" "False True"

# ---- one-shot runs and host directories ---------------------------------------------------------

# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/mnt/v -- sh -c 'cat /mnt/v/note; echo run >/mnt/v/run.txt'
expect_eq "run --volume: the volume's files" "$OUT" later
mkdir -p "$T/out"
aj_run volume cp shared:/run.txt "$T/out/"
expect_eq "what the run wrote is in the volume (volume cp out)" "$(cat "$T/out/run.txt" 2>/dev/null)" run
mkdir -p "$T/hostdir" && echo host >"$T/hostdir/h.txt"
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume "$T/hostdir:/srv/h" -- sh -c 'cat /srv/h/h.txt; echo back >/srv/h/w.txt'
expect_eq "a host directory bound read-write" "$OUT" host
expect_eq "writes reach the host" "$(cat "$T/hostdir/w.txt" 2>/dev/null)" back
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume "$T/hostdir:/srv/h:ro" -- sh -c 'echo x >/srv/h/x'
expect_contains "a host directory bound read-only refuses writes" "$ERR" "Read-only file system"
expect_eq "nothing written" "$(ls "$T/hostdir")" "$(printf 'h.txt\nw.txt')"

# ---- volume cp and the sandbox's links ---------------------------------------------------------

# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/v -- sh -c 'ln -s /etc /v/etc-link && ln -s .. /v/up'
aj_run volume cp shared:/etc-link/passwd "$T/out/p"
expect_eq "copying out through a link the sandbox made is refused" "$RC" 125
expect_eq "and nothing was copied" "$(ls "$T/out")" run.txt
aj_run volume cp "$T/hostdir/h.txt" shared:/etc-link/h.txt
expect_eq "copying in through a link the sandbox made is refused" "$RC" 125
check "the host's /etc is untouched" test ! -e /etc/h.txt
aj_run volume cp shared:/up/.. "$T/out/x"
expect_eq "a path out of the volume is refused" "$RC" 125
aj_run volume cp shared:/etc-link "$T/out/"
expect_eq "the link itself copies as a link" "$(readlink "$T/out/etc-link")" /etc
aj_run volume cp "$T/hostdir" shared:/
expect_eq "a tree copies in" "$RC" 0
aj_run volume cp "$T/hostdir/" shared:/
expect_eq "a tree named with a trailing slash copies in" "$RC" 0
expect_eq "and the host's files are untouched (not their own destination)" "$(cat "$T/hostdir/h.txt")" host
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/v -- mkfifo /v/pipe
aj_run timeout 10 "$AJ" volume cp "$T/hostdir/h.txt" shared:/pipe
expect_eq "copying onto a FIFO the sandbox made: refused at once, not hung" "$RC" 125
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/v -- sh -c 'cat /v/hostdir/h.txt && echo more >>/v/hostdir/h.txt && echo ok'
expect_contains "files copied in are the sandbox user's to change" "$OUT" ok

# ---- bad input ---------------------------------------------------------------------------------

# shellcheck disable=SC2086
aj_run create --name bad1 $PJ_FLAGS --volume nosuch:/data
expect_eq "an unknown volume: create fails" "$RC" 1
expect_contains "naming the entry" "$ERR" 'filesystem.volumes[0]: no volume "nosuch"'
expect_eq "and no sandbox is left" "$(pj_state bad1)" MISSING
# shellcheck disable=SC2086
aj_run create --name bad2 $PJ_FLAGS --volume shared:/usr/lib
expect_eq "a volume over a system directory: exit 125" "$RC" 125
expect_contains "naming the field" "$ERR" 'filesystem.volumes[0]: "/usr/lib" is (or is inside, or contains) a system directory'
expect_eq "no sandbox" "$(pj_state bad2)" MISSING
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared -- true
expect_contains "an entry without a target" "$ERR" 'is not SOURCE:TARGET[:ro]'
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/a:rx -- true
expect_contains "a bad mode" "$ERR" 'ends in "rx" (expected :ro or :rw)'
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume shared:/a --volume shared:/a -- true
expect_contains "a target twice" "$ERR" 'is the target of filesystem.volumes[0] too'
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --volume /etc:/hostetc -- true
expect_contains "a writable host system directory" "$ERR" 'cannot be made writable'

pj_create needs --volume shared:/data
aj_run stop needs
aj_run volume rm shared
expect_eq "rm once no sandbox runs (a stopped one may name it): exit 0" "$RC" 0
aj_run start needs
expect_eq "the stopped sandbox that names it does not start: exit 3 (a state, not a missing sandbox)" "$RC" 3
expect_contains "naming the volume" "$ERR" 'no volume "shared"'
aj_run rm -f needs
aj_run --json volume ls
expect_eq "gone" "$OUT" "[]"
check "its directory is gone from the state directory" sh -c "! find '$STATE/volumes' -mindepth 2 -maxdepth 2 ! -name .lock | grep -q ."

# ---- E2B's Volume class, then /v1/volumes ------------------------------------------------------

aj_run volume create localvol
TA=tok-a-$RANDOM$RANDOM$RANDOM TB=tok-b-$RANDOM$RANDOM$RANDOM
sv_tokens "$TA alice" "$TB bob"
sv_e2b_keys
E2B_PORT=$(free_port)
printf '{"base": %s}\n' "$SV_POLICY" >"$SV_DIR/templates.json"
sv_start_tcp --max-volumes 2 --e2b-listen "127.0.0.1:$E2B_PORT" --e2b-keys "$SV_DIR/e2b-keys" \
	--e2b-templates "$SV_DIR/templates.json" || {
	not_ok "serve starts ($(tail -5 "$SV_LOG"))"
	exit 0
}
sdk=$("$AJ_ROOT/tests/e2b/setup.sh")
case "$sdk" in
*E2B_SDK_DIR=*)
	node=$(command -v node)
	[ -x /usr/bin/node ] && node=/usr/bin/node
	E2B_SDK_DIR=${sdk##*E2B_SDK_DIR=} E2B_API_URL=http://127.0.0.1:$E2B_PORT \
		E2B_SANDBOX_URL=http://127.0.0.1:$E2B_PORT E2B_VOLUME_API_URL=http://127.0.0.1:$E2B_PORT \
		E2B_API_KEY=$KEY E2B_OTHER_KEY="$KEY2" \
		timeout 200 "$node" "$AJ_ROOT/tests/e2b/volumes_test.mjs" 2>&1 | grep -E '^(not )?ok '
	;;
*) echo "$sdk" ;;
esac

api GET /v1/volumes
expect_eq "GET /v1/volumes on the socket: the local owner's" "$(bj '[v["name"] for v in d["volumes"]]')" "['localvol']"
apij POST /v1/volumes '{"name": "apivol"}'
expect_api "POST /v1/volumes (the local owner): 201" 201
expect_eq "the Location header" "$(printf '%s' "$HEADERS" | sed -n 's/^[Ll]ocation: //p')" /v1/volumes/apivol
apij POST /v1/volumes '{"name": "apivol"}'
expect_api "a name taken: 409" 409 name already_exists
apij POST /v1/volumes '{"name": "bad name"}'
expect_api "a bad name: 400 naming the field" 400 name
apij POST /v1/volumes '{"name": "x", "colour": 1}'
expect_api "an unknown field: 400" 400 colour
apitj "$TA" POST /v1/volumes '{"name": "mine"}'
expect_api "a token owner's volume: 201" 201
apitj "$TA" POST /v1/volumes '{"name": "second"}'
expect_api "a second (--max-volumes 2)" 201
apitj "$TA" POST /v1/volumes '{"name": "third"}'
expect_api "a third, past --max-volumes: 429" 429 "" quota_exceeded
apit "$TA" GET /v1/volumes
expect_eq "a token owner sees its own volumes only" "$(bj 'sorted(v["name"] for v in d["volumes"])')" "['mine', 'second']"
apit "$TB" GET /v1/volumes/mine
expect_api "another owner's volume: 404" 404
apit "$TB" DELETE /v1/volumes/mine
expect_api "and cannot be removed by it: 404" 404
apit "$TA" GET /v1/volumes/localvol
expect_api "the local owner's volume is 404 to a token owner" 404
apitj "$TA" POST /v1/sandboxes "{\"name\": \"hb\", \"policy\": {\"filesystem\": {\"volumes\": [\"$T/hostdir:/h\"]}}}"
expect_api "a token owner cannot bind a host directory: 403" 403 policy.filesystem.volumes
apij POST /v1/sandboxes "{\"name\": \"usesapi\", \"policy\": $(printf '%s' "$SV_POLICY" | python3 -c 'import json,sys; p=json.load(sys.stdin); p.setdefault("filesystem",{})["volumes"]=["apivol:/data"]; print(json.dumps(p))')}"
expect_api "a sandbox over the API mounts a volume by name: 201" 201
apij POST /v1/sandboxes/usesapi/exec '{"command": "echo api >/data/f && cat /data/f"}'
expect_contains "and writes it" "$BODY" api
api DELETE /v1/volumes/apivol
expect_api "DELETE while a running sandbox mounts it: 409" 409 "" wrong_state
api DELETE "/v1/volumes/apivol?force=true"
expect_api "DELETE ?force=true: 204" 204
api GET /v1/volumes/apivol
expect_api "gone: 404" 404
sv_stop
sv_start_tcp --max-volume-bytes 48MiB || {
	not_ok "serve starts again ($(tail -5 "$SV_LOG"))"
	exit 0
}
apitj "$TB" POST /v1/volumes '{"name": "unsized"}'
expect_api "--max-volume-bytes: a token owner's volume needs a size: 429" 429 size quota_exceeded
apitj "$TB" POST /v1/volumes '{"name": "sized", "size": 33554432}'
if [ "$CODE" = 201 ]; then
	ok "a token owner's sized volume"
	apitj "$TB" POST /v1/volumes '{"name": "more", "size": 33554432}'
	expect_api "past --max-volume-bytes: 429" 429 size quota_exceeded
else
	expect_contains "a sized volume needs a quota-capable state directory, and says so" "$BODY" "a volume's size is a disk quota"
fi
sv_done
