#!/usr/bin/env bash
# agentjail build (docs/build.md): Dockerfiles on a busybox base (every instruction: FROM with
# ARG, multi-stage with COPY --from, RUN in both forms and as USER, COPY and ADD with --chown
# and --chmod, a local tar unpacked by ADD, ENV, WORKDIR, LABEL, EXPOSE, CMD, ENTRYPOINT,
# SHELL, VOLUME, STOPSIGNAL, .dockerignore) and on the Debian root; the cache (hits, a
# changed file, a changed ARG, a touched file); RUN's network: none by default, a loopback
# server through the proxy with --allow-host; bad input with the file and line named and
# nothing half-built; the result runnable and read by skopeo.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

img_require
S=$IMG/state
RF=$(rootless_flags)
# Rootless, this pass maps one id: a COPY --chown gives the image files of another owner,
# which a later RUN accepts flattened only when told so (docs/images.md, "Rootless").
BF=$RF
is_root || BF="$RF --allow-degraded subids"
# shellcheck disable=SC2086
ab() { aj_run --state-dir "$S" build $BF "$@"; }
# shellcheck disable=SC2086
ar() { aj_run --state-dir "$S" run $BF -w "$WS" "$@"; }
WS=$(mktmp)
# The image config as JSON: `cfg NAME EXPR` evaluates EXPR over it as `c`.
cfg() {
	local id
	id=$("$AJ" --state-dir "$S" image ls --json |
		json /dev/stdin "[i['config'] for i in d if '$1' in i['names']][0]")
	json "$S/images/blobs/sha256/${id#sha256:}" "$2" 2>/dev/null | sed 's/^/ /; s/^ //'
}
leftovers() { find "$S/images/runs" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

img_rich "$IMG/base" v1 || { not_ok "the base image is built"; exit 1; }
aj_run --state-dir "$S" image import --name base:1 "$IMG/base"
[ "$RC" = 0 ] || { not_ok "the base image is imported ($ERR)"; exit 1; }

# ---- every instruction --------------------------------------------------------------------
C=$(mktmp)
mkdir -p "$C/src/lib" "$C/pkg/opt"
echo "main" >"$C/src/main.txt"
echo "lib" >"$C/src/lib/util.txt"
echo "secret" >"$C/src/token.key"
echo "from the tar" >"$C/pkg/opt/packed.txt"
tar -C "$C/pkg" -czf "$C/packed.tgz" opt
printf '**/*.key\nnotes/\n' >"$C/.dockerignore"
mkdir -p "$C/notes" && echo "ignored" >"$C/notes/n.txt"
cat >"$C/Dockerfile" <<'EOF'
# syntax=docker/dockerfile:1
ARG BASE=base:1
FROM ${BASE} AS builder
ARG MSG=default
WORKDIR /build
COPY src/ ./
RUN echo "built with $MSG" > /build/out.txt
RUN ["/bin/sh", "-c", "ls /build > /build/listing"]

FROM $BASE
LABEL org.example.name="demo app" org.example.v=1
ENV APP_HOME=/srv/app \
    GREETING=hello
WORKDIR $APP_HOME
COPY --from=builder /build/out.txt /build/listing ./
COPY --chown=app:app --chmod=600 src/main.txt /home/app/main.txt
COPY . /ctx/
ADD packed.tgz /unpacked/
ADD src/main.txt /added/
SHELL ["/bin/sh", "-e", "-c"]
RUN echo "$GREETING" > greeting && id -u > root-uid
USER app
RUN id -u > /tmp/app-uid && touch /tmp/made-by-app
EXPOSE 8080 9090/udp
VOLUME /data
STOPSIGNAL SIGTERM
ENTRYPOINT ["/bin/cat"]
CMD ["/srv/app/out.txt"]
EOF
ab -t demo/app:1 --build-arg MSG=from-arg "$C"
expect_eq "build: exit 0 ($ERR)" "$RC" 0
expect_contains "each step is shown, numbered" "$OUT" "STEP 6/25: RUN echo \"built with \$MSG\""
expect_contains "with its time" "$OUT" "  --> "
expect_contains "and the image named" "$OUT" ", named demo/app:1"
ar --image demo/app:1
expect_eq "the image runs its ENTRYPOINT with its CMD: the other stage's file, the ARG" \
	"$OUT" "built with from-arg"
ar --image demo/app:1 /srv/app/listing
expect_eq "COPY --from took the other stage's files (RUN exec form wrote the listing)" \
	"$OUT" "$(printf 'lib\nlisting\nmain.txt\nout.txt')"
# An image on it that clears the ENTRYPOINT, to look inside with a shell.
X=$(mktmp)
printf 'FROM demo/app:1\nENTRYPOINT []\nCMD ["/bin/sh"]\n' >"$X/Dockerfile"
ab -t demo/shell:1 "$X"
expect_eq "FROM an image built here, ENTRYPOINT [] clears it: exit 0 ($ERR)" "$RC" 0
expect_eq "  its Entrypoint is empty" "$(cfg demo/shell:1 'd["config"].get("Entrypoint")')" "[]"
ar --image demo/shell:1 --user root -- cat /srv/app/greeting /srv/app/root-uid /tmp/app-uid \
	/unpacked/opt/packed.txt /added/main.txt
expect_eq "ENV in RUN, RUN as root then as USER app, ADD unpacked the tar, ADD a file" "$OUT" \
	"$(printf 'hello\n0\n1000\nfrom the tar\nmain')"
ar --image demo/shell:1 -- cat /ctx/src/main.txt
expect_eq "COPY . took the context" "$OUT" "main"
ar --image demo/shell:1 -- cat /ctx/src/token.key
expect_contains ".dockerignore: **/*.key left out" "$ERR" "No such file"
ar --image demo/shell:1 -- cat /ctx/notes/n.txt
expect_contains ".dockerignore: a directory left out" "$ERR" "No such file"
# shellcheck disable=SC2016
ar --image demo/shell:1 -- /bin/sh -c 'stat -c "%u:%g %a" /home/app/main.txt /tmp/made-by-app'
expect_eq "--chown and --chmod; the file USER app made is app's" "$OUT" \
	"$(printf '1000:1000 600\n1000:1000 644')"
expect_eq "the config: User" "$(cfg demo/app:1 'd["config"]["User"]')" app
expect_eq "WorkingDir from ENV" "$(cfg demo/app:1 'd["config"]["WorkingDir"]')" /srv/app
expect_eq "Env" "$(cfg demo/app:1 '[e for e in d["config"]["Env"] if e.startswith(("APP_HOME", "GREETING"))]')" \
	"['APP_HOME=/srv/app', 'GREETING=hello']"
expect_eq "Labels" "$(cfg demo/app:1 'd["config"]["Labels"]["org.example.name"]')" "demo app"
expect_eq "ExposedPorts" "$(cfg demo/app:1 'sorted(d["config"]["ExposedPorts"])')" \
	"['8080/tcp', '9090/udp']"
expect_eq "Volumes and StopSignal" "$(cfg demo/app:1 'list(d["config"]["Volumes"]) + [d["config"]["StopSignal"]]')" \
	"['/data', 'SIGTERM']"
expect_eq "a history entry per instruction of the stage" \
	"$(cfg demo/app:1 'len([h for h in d["history"] if h.get("comment") == "agentjail build"])')" 17
expect_eq "no step directory left behind" "$(leftovers)" 0

# ---- the cache ----------------------------------------------------------------------------
ab -t demo/app:1 --build-arg MSG=from-arg "$C"
expect_eq "the same build again: every layer step cached" "$(printf '%s\n' "$OUT" | grep -c -- '--> cached')" 10
touch "$C/src/main.txt"
ab -t demo/app:1 --build-arg MSG=from-arg "$C"
expect_eq "a touched file: still cached (times are not content)" "$(printf '%s\n' "$OUT" | grep -c -- '--> cached')" 10
echo "main changed" >"$C/src/main.txt"
ab -t demo/app:2 --build-arg MSG=from-arg "$C"
expect_contains "a changed file: that COPY misses" "$OUT" "$(printf 'STEP 5/25: COPY src/ ./\n  --> ')"
expect_not_contains "  and the steps after it" "$(printf '%s\n' "$OUT" | sed -n '/STEP 5\/25/,/STEP 8\/25/p')" "cached"
ab -t demo/app:3 --build-arg MSG=other "$C"
ar --image demo/app:3
expect_eq "a changed ARG: the steps after it run again with the new value" "$OUT" "built with other"
ab --no-cache -t demo/app:4 --build-arg MSG=other "$C"
expect_not_contains "--no-cache: nothing cached" "$OUT" "--> cached"

# --target: the stage asked for, and no stage after it is built.
ab -t demo/builder:1 --target builder --build-arg MSG=from-arg "$C"
expect_eq "--target builder: exit 0 ($ERR)" "$RC" 0
expect_not_contains "  the stages after it are not built" "$OUT" "STEP 8/25"
ar --image demo/builder:1 -- cat /build/out.txt
expect_eq "  the image is that stage" "$OUT" "built with from-arg"
ab --target nosuch "$C"
expect_contains "--target of no stage: refused before anything runs" "$ERR" \
	"--target nosuch: the Dockerfile has no stage of that name"
expect_not_contains "  (nothing ran)" "$OUT" "STEP 1/"

# ---- RUN's network ----------------------------------------------------------------------
SRV=$(mktmp)
echo "served" >"$SRV/file.txt"
PORT=$(free_port)
(cd "$SRV" && exec timeout 120 python3 -m http.server --bind 127.0.0.1 "$PORT") >/dev/null 2>&1 &
HTTP=$!
trap 'kill $HTTP 2>/dev/null; img_cleanup; _aj_cleanup' EXIT
wait_until 10 curl -sf -o /dev/null "http://127.0.0.1:$PORT/file.txt" || not_ok "the test server serves"
N=$(mktmp)
# inside, no_proxy names 127.0.0.1 (the sandbox's own loopback): the host's goes by the proxy
printf 'FROM base:1\nRUN env -u no_proxy wget -O /got.txt http://127.0.0.1:%s/file.txt\n' "$PORT" >"$N/Dockerfile"
ab -t net:1 "$N"
expect_eq "RUN without an allowed host: no network, the step fails (125)" "$RC" 125
expect_contains "naming the line and the exit code" "$ERR" "Dockerfile:2: RUN env -u no_proxy wget"
expect_contains "  and its status" "$ERR" "the command exited with 1"
aj_run --state-dir "$S" image inspect net:1
expect_eq "  and no image is named" "$RC" 1
EV=$(mktmp)/events.jsonl
ab -t net:1 --allow-host "127.0.0.1:$PORT" --events "$EV" "$N"
expect_eq "with --allow-host: exit 0 ($ERR)" "$RC" 0
evs() { python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$EV"; }
expect_eq "--events: the build's steps, and the RUN's sandbox events between them" "$(evs)" \
	"build.start build.step build.step.end build.step start egress end build.step.end build.end"
expect_eq "  the egress decision: allowed by the rule --allow-host made" \
	"$(python3 -c 'import json,sys
e=[json.loads(l) for l in open(sys.argv[1])]
print([(x["decision"], x["rule"].split()[0], x["port"]) for x in e if x["event"] == "egress"])' "$EV")" \
	"[('allowed', 'network.allow[0]', $PORT)]"
BID=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["sandbox"])' "$EV")
aj_run --state-dir "$S" events --json "$BID"
expect_eq "the store's event log has them under the build's id (agentjail events ID)" \
	"$(printf '%s\n' "$OUT" | python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in sys.stdin if l.strip()))')" \
	"build.start build.step build.step.end build.step start egress end build.step.end build.end"
ar --image net:1 -- cat /got.txt
expect_eq "the file came from the loopback server through the proxy" "$OUT" served

# ADD of a URL: downloaded by the host's curl in a sandbox of the build policy's network.
printf 'FROM base:1\nADD http://127.0.0.1:%s/file.txt /srv/\nADD --chmod=644 http://127.0.0.1:%s/file.txt?x=1 /srv/renamed.txt\n' "$PORT" "$PORT" >"$N/Dockerfile"
ab -t addurl:1 "$N"
check "ADD of a URL without an allowed host: fails naming the line and the remedy ($ERR)" \
	eval '[ "$RC" = 125 ] && [[ $ERR == *"Dockerfile:2: ADD"* ]] && [[ $ERR == *"the download failed"* ]] && [[ $ERR == *"--allow-host"* ]]'
ab -t addurl:1 --allow-host "127.0.0.1:$PORT" "$N"
expect_eq "with --allow-host: exit 0 ($ERR)" "$RC" 0
ar --image addurl:1 -- sh -c 'cat /srv/file.txt /srv/renamed.txt; stat -c %a /srv/file.txt /srv/renamed.txt'
expect_eq "  the files, named by the URL or the destination, 0600 unless --chmod" "$OUT" "served
served
600
644"
printf 'FROM base:1\nADD http://127.0.0.1:%s/file.txt ctx.txt /srv/\n' "$PORT" >"$N/Dockerfile"
echo x >"$N/ctx.txt"
ab -t addurl:2 --allow-host "127.0.0.1:$PORT" "$N"
check "an ADD of a URL and a context file: refused ($ERR)" eval '[ "$RC" = 125 ] && [[ $ERR == *"URLs or files of the context, not both"* ]]'
printf 'FROM base:1\nADD ftp://127.0.0.1/x /srv/\n' >"$N/Dockerfile"
ab -t addurl:2 "$N"
check "an ADD of an ftp URL: refused ($ERR)" eval '[ "$RC" = 125 ] && [[ $ERR == *"http:// and https://"* ]]'

# ---- bad input ----------------------------------------------------------------------------
B=$(mktmp)
bad() { printf '%b' "$1" >"$B/Dockerfile"; ab -t bad:1 "$B"; }
images_before=$("$AJ" --state-dir "$S" image ls -a -q | sort)
bad 'FROM base:1\nFROBNICATE x\n'
expect_eq "an unknown instruction: exit 125" "$RC" 125
expect_contains "  file and line named" "$ERR" 'Dockerfile:2: unknown instruction "FROBNICATE"'
bad 'FROM base:1\nRUN echo a \\\n'
expect_contains "an unterminated continuation" "$ERR" "Dockerfile:2: the instruction continues"
bad 'FROM base:1\nCOPY ../outside /x\n'
expect_contains "COPY of a path outside the context" "$ERR" 'Dockerfile:2: COPY: "../outside" leaves the build context'
ln -s /etc "$B/etc-link"
bad 'FROM base:1\nCOPY etc-link/passwd /x\n'
expect_contains "COPY through a symlink that leaves it" "$ERR" '"etc-link/passwd" goes through a symlink'
bad 'FROM base:1\nCOPY nothing-here /x\n'
expect_contains "COPY of a missing file" "$ERR" '"nothing-here": no such file in the build context'
bad "FROM 127.0.0.1:$(free_port)/no/such:image\n"
expect_contains "a missing FROM image: the pull is tried and fails" "$ERR" "Dockerfile:1: FROM 127.0.0.1:"
bad 'FROM base:1\nRUN --mount=type=cache,target=/c true\n'
expect_contains "an unsupported flag" "$ERR" "RUN does not take the flag --mount"
bad 'FROM base:1\nONBUILD RUN true\n'
expect_contains "an unsupported instruction" "$ERR" "ONBUILD is not supported"
mkdir -p "$B/d1" "$B/d2" && echo 1 >"$B/d1/f" && echo 2 >"$B/d2/f"
bad 'FROM base:1\nCOPY d1/f d2/f /x/\n'
expect_contains "two sources giving the same path" "$ERR" '"/x/f" would be written twice'
bad 'FROM base:1\nCOPY --from=nowhere /a /b\n'
expect_contains "COPY --from an unknown stage" "$ERR" "--from=nowhere: no earlier stage"
aj_run --state-dir "$S" build "$B/missing-context"
expect_contains "a missing context" "$ERR" "the build context"
expect_eq "after all that: no image added" "$("$AJ" --state-dir "$S" image ls -a -q | sort)" "$images_before"
expect_eq "and no step directory left" "$(leftovers)" 0

# ---- the result, as other tools see it --------------------------------------------------
if is_root && command -v skopeo >/dev/null; then
	aj_run --state-dir "$S" image export demo/app:1 "$IMG/demo.tar"
	check "skopeo reads the exported image" sh -c \
		"skopeo inspect --config oci-archive:$IMG/demo.tar | grep -q '\"User\": \"app\"'"
	if command -v podman >/dev/null; then
		pod() { podman --root "$IMG/pod/root" --runroot "$IMG/pod/run" --storage-driver overlay "$@"; }
		pod load -q -i "$IMG/demo.tar" >"$IMG/pod.log" 2>&1 || cat "$IMG/pod.log" >&2
		expect_eq "podman runs the built image (its USER, ENTRYPOINT and CMD)" \
			"$(pod run --rm --network none --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
				"$(pod images -q | head -1)" 2>&1)" "built with from-arg"
		pod system reset --force >/dev/null 2>&1
	fi
else
	skip "skopeo reads the built image" "skopeo unpacks an oci-archive with chown, as root only"
fi

# ---- a Debian base ----------------------------------------------------------------------------
ROOTFS=/var/cache/agentjail-tests/bookworm-minbase.tar
if [ -s "$ROOTFS" ]; then
	aj_run --state-dir "$S" image import --name debian:12 "$ROOTFS"
	D=$(mktmp)
	printf 'FROM debian:12\nRUN useradd -m -u 1500 builder && echo ok > /home/builder/x\nUSER builder\nRUN id -un > /home/builder/who\n' >"$D/Dockerfile"
	ab -t deb:1 "$D"
	expect_eq "Debian base: useradd as root, then RUN as that user: exit 0 ($ERR)" "$RC" 0
	ar --image deb:1 -- cat /home/builder/who
	expect_eq "  the user ran the step" "$OUT" builder
else
	skip "a Debian base" "$ROOTFS is missing (scripts/install-deps makes it)"
fi

# ---- on a terminal: each RUN's output in a window that redraws, kept when it fails ----------
T=$(mktmp)
printf 'FROM base:1\nRUN for i in 1 2 3 4 5 6 7 8; do echo window-line-$i; sleep 0.05; done\n' >"$T/Dockerfile"
# shellcheck disable=SC2086
script -qec "$AJ --state-dir $S build $BF --no-cache -t tty:1 $T" "$T/ok.ts" >/dev/null 2>&1 </dev/null
expect_eq "a build on a terminal (script's pty): exit 0" "$?" 0
tty_after() { python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); print(sys.argv[2].encode() in d[d.rfind(b"\x1b[J"):])' "$@"; }
tty_has() { python3 -c 'import sys; print(sys.argv[2].encode() in open(sys.argv[1],"rb").read())' "$@"; }
expect_eq "the window showed the step's lines and its time" \
	"$(tty_has "$T/ok.ts" window-line-) $(tty_has "$T/ok.ts" "running ")" "True True"
expect_eq "and was erased when the step succeeded (none of its lines after the last erase)" \
	"$(tty_after "$T/ok.ts" window-line-)" False
expect_eq "the step's time follows" "$(tty_after "$T/ok.ts" '-->')" True
printf 'FROM base:1\nRUN echo tty-boom-output; exit 3\n' >"$T/Dockerfile"
# shellcheck disable=SC2086
script -qec "$AJ --state-dir $S build $BF --no-cache $T" "$T/bad.ts" >/dev/null 2>&1 </dev/null
expect_eq "a failing step on a terminal: exit 125" "$?" 125
expect_eq "its output is printed whole after the window, for the error" \
	"$(tty_after "$T/bad.ts" tty-boom-output)" True
