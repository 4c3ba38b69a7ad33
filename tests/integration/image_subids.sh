#!/usr/bin/env bash
# Rootless image sandboxes with subordinate ids (docs/images.md, "Root inside", rootless): a
# user with /etc/subuid and /etc/subgid ranges and Debian's newuidmap and newgidmap gets the
# image's ids 0-65535 (0 its own uid, 1-65535 its subordinate ids), layers unpacked with their
# owners, users switchable inside, files another id owns removed and copied through a user
# namespace that maps them; a user without ranges gets single-id mode, refused on an image
# with other owners unless --allow-degraded subids names it.
#
# Root sets this up in a private mount namespace of the test's own (nsenter into a holder
# process): copies of /etc/passwd, /etc/subuid and /etc/subgid naming two made-up users are
# bound over the host's there, and nowhere else. Each agentjail runs as one of those users.
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"

if ! is_root; then
	skip "subordinate ids" "the setup binds files over /etc in a private mount namespace: root only"
	exit 0
fi
for c in newuidmap newgidmap unshare nsenter setpriv busybox; do
	if ! command -v "$c" >/dev/null; then
		skip "subordinate ids" "$c is missing (Debian: uidmap, util-linux, busybox-static)"
		exit 0
	fi
done

T=$(mktmp)
SUB=23461 FLAT=23462 SUBUID=1200000 SUBGID=1300000

# The image: busybox, users root and app (1000), a home of app's at mode 0700 with a file in
# it, a file of uid 100, packed with those owners.
R=$T/rootfs
mkdir -p "$R/bin" "$R/etc" "$R/tmp" "$R/home/app" "$R/data" "$R/root" "$R/var"
chmod 1777 "$R/tmp"
cp "$(command -v busybox)" "$R/bin/busybox"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$R/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\napp:x:1000:\nhundred:x:100:app\n' >"$R/etc/group"
echo "app's notes" >"$R/home/app/notes"
chown -R 1000:1000 "$R/home/app"
chmod 700 "$R/home/app"
echo hundred >"$R/data/hundred"
chown 100:100 "$R/data/hundred"
tar -czf "$T/rich.tgz" --numeric-owner -C "$R" .

# The users and their ranges, bound over /etc in the holder's mount namespace.
cp /etc/passwd "$T/passwd"
printf 'ajsub:x:%s:%s::%s:/bin/sh\najflat:x:%s:%s::%s:/bin/sh\n' "$SUB" "$SUB" "$T/h$SUB" \
	"$FLAT" "$FLAT" "$T/h$FLAT" >>"$T/passwd"
printf 'ajsub:%s:65536\n' "$SUBUID" >"$T/subuid"
printf 'ajsub:%s:65536\n' "$SUBGID" >"$T/subgid"
for u in $SUB $FLAT; do mkdir -p "$T/h$u" && chown "$u:$u" "$T/h$u"; done
unshare -m --propagation private sleep 600 &
HOLDER=$!
trap 'kill $HOLDER 2>/dev/null; _aj_cleanup' EXIT
wait_until 5 sh -c "[ \"\$(readlink /proc/$HOLDER/ns/mnt)\" != \"\$(readlink /proc/self/ns/mnt)\" ]"
for f in passwd subuid subgid; do
	nsenter -t "$HOLDER" -m mount --bind "$T/$f" "/etc/$f" || { not_ok "bind $f in the test's namespace"; exit 1; }
done
check "the host's /etc/subuid is untouched" sh -c "! grep -q ajsub /etc/subuid /etc/passwd"

# as UID ARGS...: agentjail as that user in the namespace; OUT, ERR and RC as aj_run sets.
as() {
	local u=$1 o e
	shift
	o=$(mktemp) e=$(mktemp)
	nsenter -t "$HOLDER" -m --wd="$T/h$u" setpriv --reuid "$u" --regid "$u" --clear-groups --inh-caps=-all \
		env -i HOME="$T/h$u" PATH=/usr/bin:/bin "$AJ" --state-dir "$T/h$u/state" "$@" \
		>"$o" 2>"$e" </dev/null
	RC=$?
	OUT=$(cat "$o")
	ERR=$(cat "$e")
	rm -f "$o" "$e"
}
RF="--memory none --cpus none"

# ---- with ranges ------------------------------------------------------------------------
as $SUB image import --name sub/rich "$T/rich.tgz"
expect_eq "import with subordinate ids: exit 0 ($ERR)" "$RC" 0
expect_eq "the store records the map it unpacks with" "$(cat "$T/h$SUB/state/images/idmap")" \
	"subids $SUB $SUB $SUBUID $SUBGID"
L=$(find "$T/h$SUB/state/images/layers" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | head -1)
expect_eq "on disk, app's home is owned by the subordinate ids (1000 -> first + 999)" \
	"$(stat -c %u:%g "$L/home/app")" "$((SUBUID + 999)):$((SUBGID + 999))"
expect_eq "and root's files by the user itself" "$(stat -c %u:%g "$L/etc/passwd")" "$SUB:$SUB"

# shellcheck disable=SC2086
as $SUB run $RF --image sub/rich -- sh -c 'id -u; stat -c %u:%g /home/app /data/hundred'
expect_eq "inside, root and the image's owners as the image has them" "$OUT" \
	"$(printf '0\n1000:1000\n100:100')"
# shellcheck disable=SC2086
as $SUB run $RF --image sub/rich --user app -- sh -c 'id; cat /home/app/notes; touch /home/app/new && echo wrote'
expect_eq "--user app: uid 1000 with its groups, its 0700 home readable and writable" "$OUT" \
	"$(printf "uid=1000(app) gid=1000(app) groups=100(hundred)\napp's notes\nwrote")"
# shellcheck disable=SC2086
as $SUB run $RF --image sub/rich -- sh -c 'touch /tmp/f && chown 1234:1234 /tmp/f && stat -c %u /tmp/f && su app -s /bin/sh -c "id -u"'
expect_eq "root inside chowns to another id and switches users" "$OUT" "$(printf '1234\n1000')"
# shellcheck disable=SC2086
as $SUB run $RF --image sub/rich -- sh -c 'cat /proc/self/uid_map'
expect_eq "the map: 0 is the caller, 1-65535 its subordinate uids, nothing else" \
	"$(echo "$OUT" | awk '{print $1, $2, $3}' | tr '\n' ' ')" "0 $SUB 1 1 $SUBUID 65535 "
# shellcheck disable=SC2086
as $SUB run $RF --dry-run --json --image sub/rich -- true
expect_eq "the plan names the mode" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])')" subids
expect_contains "and says how it maps" "$OUT" "subordinate uids from $SUBUID"

# A persistent sandbox: files of another id, 0700, in its system layer; a snapshot and a
# sandbox from it; all of it removed although the user cannot enter those directories.
# shellcheck disable=SC2086
as $SUB create $RF --image sub/rich --name s1
expect_eq "create --image: exit 0 ($ERR)" "$RC" 0
as $SUB exec s1 -- sh -c 'mkdir /var/x && echo f >/var/x/f && chown -R 100:100 /var/x && chmod 700 /var/x'
expect_eq "exec: a 0700 directory of uid 100 in the system layer" "$RC" 0
check "the user itself cannot enter it on the host" sh -c \
	"! nsenter -t $HOLDER -m setpriv --reuid $SUB --regid $SUB --clear-groups ls $T/h$SUB/state/sandboxes/*/system/upper/var/x 2>/dev/null"
as $SUB stop s1
as $SUB snapshot -n snap1 s1
expect_eq "snapshot of the stopped sandbox: exit 0 ($ERR)" "$RC" 0
# shellcheck disable=SC2086
as $SUB create $RF --from snap1 --image sub/rich --name s2
as $SUB exec s2 -- sh -c 'stat -c %u:%a /var/x; cat /var/x/f'
expect_eq "a sandbox from the snapshot has the system change, owners kept" "$OUT" "$(printf '100:700\nf')"
as $SUB rm -f s1 s2
expect_eq "rm of both: exit 0 ($ERR)" "$RC" 0
as $SUB snapshots rm snap1
expect_eq "snapshots rm: exit 0 ($ERR)" "$RC" 0
as $SUB gc
expect_eq "gc: nothing left to fail on ($ERR)" "$RC" 0
check "no sandbox directory left" sh -c "[ -z \"\$(ls -A $T/h$SUB/state/sandboxes)\" ]"
# A build on it: a RUN's layer holds a 0700 directory of uid 100, which the user cannot
# enter on the host; it is read in a user namespace with the map, owners as the image has.
mkdir -p "$T/ctx" && chmod 755 "$T/ctx"
printf 'FROM sub/rich\nRUN mkdir /var/y && echo f > /var/y/f && chown -R 100:100 /var/y && chmod 700 /var/y\nCOPY --chown=app:app note /home/app/note\n' >"$T/ctx/Dockerfile"
echo note >"$T/ctx/note"
# shellcheck disable=SC2086
as $SUB build $RF -t sub/built "$T/ctx"
expect_eq "build with subordinate ids: exit 0 ($ERR)" "$RC" 0
# shellcheck disable=SC2086
as $SUB run $RF --image sub/built -- sh -c 'stat -c %u:%a /var/y; cat /var/y/f; stat -c %u:%g /home/app/note'
expect_eq "the built image: uid 100's 0700 directory and app's file, as the image has them" \
	"$OUT" "$(printf '100:700\nf\n1000:1000')"
as $SUB image rm sub/built
as $SUB image rm sub/rich
as $SUB image prune
expect_eq "image rm and prune: exit 0 ($ERR)" "$RC" 0
expect_eq "no layer left, app's 0700 home included" \
	"$(find "$T/h$SUB/state/images/layers" -mindepth 1 | wc -l)" 0

# ---- without ranges: single-id mode -------------------------------------------------------
as $FLAT image import --name flat/rich "$T/rich.tgz"
expect_eq "import without ranges: exit 0 ($ERR)" "$RC" 0
expect_eq "the store records single-id mode" "$(cat "$T/h$FLAT/state/images/idmap")" single
# shellcheck disable=SC2086
as $FLAT run $RF --image flat/rich -- true
expect_eq "an image with other owners in single-id mode: refused (exit 125)" "$RC" 125
expect_contains "naming the layer, why and the remedy" "$ERR" "the subids layer is needed"
expect_contains "why: the user's ranges" "$ERR" "/etc/subuid has no range"
expect_contains "the remedy" "$ERR" "--allow-degraded subids"
# shellcheck disable=SC2086
as $FLAT run $RF --allow-degraded subids --image flat/rich -- sh -c 'id -u; stat -c %u:%g /home/app'
expect_eq "accepted: every file appears as the one id's" "$OUT" "$(printf '0\n0:0')"
# shellcheck disable=SC2086
as $FLAT run $RF --allow-degraded subids --dry-run --image flat/rich -- true
expect_contains "and the plan says what is given up" "$OUT" "NOT KEPT (single-id mode"
as $FLAT image rm flat/rich
as $FLAT image prune
expect_eq "single-id: prune leaves no mark behind" \
	"$(find "$T/h$FLAT/state/images/layers" -mindepth 1 | wc -l)" 0
