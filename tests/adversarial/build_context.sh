#!/usr/bin/env bash
# agentjail build against a hostile build context and Dockerfile (docs/build.md): every path
# is read beneath the context or through the stage's layers without following a symlink,
# deleted files stay deleted for COPY --from, the context's own Dockerfile and .dockerignore
# are its regular files, ignored paths are not in the context even when named, names that are
# whiteouts in a layer are refused, and an expansion that doubles is stopped. Each attack is
# checked by looking for the host's secret in the store's layers and for files made outside.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

img_require
S=$IMG/state
RF=$(rootless_flags)
# shellcheck disable=SC2086
ab() { aj_run --state-dir "$S" build $RF "$@"; }
img_rich "$IMG/base" v1 || { not_ok "the base image is built"; exit 1; }
aj_run --state-dir "$S" image import --name base:1 "$IMG/base"
[ "$RC" = 0 ] || { not_ok "the base image is imported ($ERR)"; exit 1; }

H=$(mktmp) # the host's: a secret and a place nothing may be written to
SECRET="host-secret-$RANDOM$RANDOM"
echo "$SECRET" >"$H/secret"
mkdir -p "$H/target"
leaked() { grep -rqs "$SECRET" "$S/images/layers" "$S/images/blobs"; }
newctx() { C=$(mktmp); }

# 1. A stage's symlink to the host, then COPY --from through it.
newctx
ln -s "$H" "$C/evil"
printf 'FROM base:1 AS s0\nCOPY evil /evil\nFROM base:1\nCOPY --from=s0 evil/secret /leak\n' >"$C/Dockerfile"
ab "$C"
expect_eq "COPY --from through a stage's symlink to the host: refused (125)" "$RC" 125
expect_contains "  the path is not in the stage" "$ERR" '"/evil/secret": no such file in the stage s0'
check "  the host's secret is in no layer" sh -c "! grep -rqs '$SECRET' '$S/images/layers'"

# 2. A symlink over a stage's directory, then COPY --from of a file below it: nothing is
# written through it.
newctx
mkdir -p "$C/a/d" && echo f >"$C/a/d/f"
mkdir -p "$C/b" && ln -s "$H/target" "$C/b/d"
printf 'FROM base:1 AS s0\nCOPY a/ /\nCOPY b/ /\nFROM base:1\nCOPY --from=s0 d d/f /out/\n' >"$C/Dockerfile"
ab "$C"
check "a stage's symlink over its directory: nothing written at the link's target" \
	sh -c "[ -z \"\$(ls -A '$H/target')\" ]"
expect_contains "  d/f is not in the stage (the link hides it)" "$ERR" '"/d/f": no such file in the stage'

# 3. A file the stage deleted stays deleted for COPY --from.
newctx
mkdir -p "$C/s" && echo "the stage's own, deleted" >"$C/s/key"
printf 'FROM base:1 AS s0\nCOPY s/ /s/\nRUN rm -rf /s\nFROM base:1\nCOPY --from=s0 s/key /k\n' >"$C/Dockerfile"
ab "$C"
expect_eq "COPY --from of a file the stage deleted: refused (125)" "$RC" 125
expect_contains "  not in the stage" "$ERR" '"/s/key": no such file in the stage s0'
printf 'FROM base:1 AS s0\nCOPY s/ /s/\nRUN rm /s/key && echo kept > /s/other\nFROM base:1\nCOPY --from=s0 s /copied/\nRUN ls /copied > /listing\n' >"$C/Dockerfile"
ab -t del:1 "$C"
expect_eq "  COPY --from of its directory: exit 0 ($ERR)" "$RC" 0
# shellcheck disable=SC2086
aj_run --state-dir "$S" run $RF -w "$(mktmp)" --image del:1 -- cat /listing
expect_eq "  only what the stage kept" "$OUT" other

# 4. The context's Dockerfile a symlink to a host file; a FIFO.
newctx
ln -s "$H/secret" "$C/Dockerfile"
ab "$C"
expect_eq "a Dockerfile that is a symlink out of the context: refused (125)" "$RC" 125
expect_not_contains "  nothing of the file it names is shown" "$ERR" "$SECRET"
newctx
mkfifo "$C/Dockerfile"
ab "$C"
expect_eq "a Dockerfile that is a FIFO: refused, no hang (125)" "$RC" 125
newctx
printf 'FROM base:1\nCOPY . /c/\n' >"$C/Dockerfile"
ln -s "$H/secret" "$C/.dockerignore"
ab "$C"
expect_eq "a .dockerignore that is a symlink: refused (125)" "$RC" 125

# 5. .dockerignore holds for named sources, and for ./ forms of them.
newctx
echo "$SECRET" >"$C/.env"
mkdir -p "$C/sub" && echo "$SECRET" >"$C/sub/secret" && echo ok >"$C/sub/ok"
printf '.env\nsub/secret\n' >"$C/.dockerignore"
printf 'FROM base:1\nCOPY .env /e\n' >"$C/Dockerfile"
ab "$C"
expect_contains "COPY of an ignored file by name: not in the context" "$ERR" \
	'".env" is left out of the build context by .dockerignore'
printf 'FROM base:1\nCOPY ./sub /s\nCOPY .//sub/./ /t\n' >"$C/Dockerfile"
ab -t ign:1 "$C"
expect_eq "  COPY ./sub: exit 0 ($ERR)" "$RC" 0
check "  the ignored file is in no layer" sh -c "! grep -rqs '$SECRET' '$S/images/layers'"

# A symlink inside the context to an ignored path: not a way to it.
newctx
mkdir -p "$C/secret" && echo "$SECRET" >"$C/secret/key"
ln -s secret "$C/link"
printf 'secret\n' >"$C/.dockerignore"
printf 'FROM base:1\nCOPY link/key /k\n' >"$C/Dockerfile"
ab "$C"
expect_contains "COPY through an in-context link to an ignored directory: refused" "$ERR" \
	'"link/key" goes through a symlink'
printf 'FROM base:1\nCOPY link/* /g/\n' >"$C/Dockerfile"
ab "$C"
expect_eq "  and with a pattern (125)" "$RC" 125

# A destination through the image's own symlink is refused, not replaced by a directory.
newctx
echo f >"$C/f"
printf 'FROM base:1 AS s0\nRUN ln -s /tmp /lnk\nCOPY f /lnk/f\n' >"$C/Dockerfile"
ab "$C"
expect_contains "COPY to a path through the image's symlink: refused, naming it" "$ERR" \
	'goes through the image'"'"'s symlink "/lnk"'

# A cached COPY leaves other images' blobs alone (the same files, older times).
newctx
echo same >"$C/f"
printf 'FROM base:1\nCOPY f /f\n' >"$C/Dockerfile"
touch -d '2020-01-01' "$C/f"
ab -t keep:1 "$C"
touch -d '2021-01-01' "$C/f"
ab --no-cache -t keep:2 "$C"
touch -d '2020-01-01' "$C/f"
ab -t keep:3 "$C"
aj_run --state-dir "$S" image export keep:1 "$(mktmp)/keep1.tar"
expect_eq "after a cache hit, an older image still exports whole ($ERR)" "$RC" 0

# 6. Names that are whiteouts in a layer.
newctx
echo x >"$C/.wh.passwd"
printf 'FROM base:1\nCOPY .wh.passwd /etc/\n' >"$C/Dockerfile"
ab "$C"
expect_contains "COPY of a file named .wh.*: refused" "$ERR" 'is a whiteout in an image layer'
printf 'FROM base:1\nRUN touch /etc/.wh.passwd\n' >"$C/Dockerfile"
ab "$C"
expect_contains "a RUN that makes one: refused" "$ERR" 'is a whiteout in an image layer'
mkdir -p "$C/t/etc" && echo x >"$C/t/etc/.wh.passwd" && tar -C "$C/t" -cf "$C/wh.tar" etc
printf 'FROM base:1\nADD wh.tar /\n' >"$C/Dockerfile"
ab "$C"
expect_contains "an ADD archive holding one: refused" "$ERR" 'is a whiteout in an image layer'

# 7. A source that is a symlink out of the context is copied as a link, never followed.
newctx
ln -s "$H/secret" "$C/link"
printf 'FROM base:1\nCOPY link /link\n' >"$C/Dockerfile"
ab -t link:1 "$C"
expect_eq "COPY of a symlink to a host file: exit 0 ($ERR)" "$RC" 0
check "  the secret is in no layer (the link is)" sh -c "! grep -rqs '$SECRET' '$S/images/layers'"

# 8. A variable that doubles at each ENV: stopped at a bound, not at the host's memory.
newctx
{
	echo 'FROM base:1'
	echo 'ENV A=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'
	for _ in $(seq 30); do echo 'ENV A=$A$A'; done
} >"$C/Dockerfile"
ab "$C"
expect_eq "ENV A=\$A\$A thirty times: refused (125)" "$RC" 125
expect_contains "  at the bound on a word" "$ERR" "expands to more than"
{
	echo 'FROM base:1'
	printf 'ARG A=%s\n' "$(head -c 200000 /dev/zero | tr '\0' a)"
	printf 'ARG B=$A'
	for _ in $(seq 200); do printf ' B=$A'; done
	echo
} >"$C/Dockerfile"
ab "$C"
expect_contains "many words each within the bound: stopped by the build's budget" "$ERR" \
	"expand to more than 16 MiB in all"

check "after all of it: the host's secret is in no layer or blob" sh -c "! grep -rqs '$SECRET' '$S/images/layers' '$S/images/blobs'"
check "and nothing was written at the host's target" sh -c "[ -z \"\$(ls -A '$H/target')\" ]"
