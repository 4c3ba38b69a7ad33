#!/usr/bin/env bash
# Disk limits (limits.disk, --disk; docs/storage.md). As root, in a private mount namespace of
# its own (nothing on the host is mounted), the test makes btrfs filesystems on loop devices
# and puts state directories on them: disk-fill and file-creation attacks against an --overlay
# run and a persistent sandbox are stopped at the limit with EDQUOT inside, and the report,
# the events and the metrics say "disk"; a full sandbox does not stop another; the limit is
# kept across stop and start (a full sandbox restarts writable, to delete), a snapshot and a
# fork; rm releases the subvolume; `storage init` makes a state directory from nothing. Where
# no quota is possible (this host's ext4 without CONFIG_QUOTA, btrfs with quota groups off,
# rootless) a requested limit is refused with exit 125 naming the layer, the probe and the
# remedy, and nothing is left behind, unless --allow-degraded disk. Bad sizes name the field.
# Persistent sandboxes get the default limit (10 GiB) where quotas work, none elsewhere.
# rootless: yes
# timeout: 400
if [ "$(id -u)" = 0 ] && [ -z "${AJ_DISK_PRIVATE_NS:-}" ]; then
	exec unshare -m --propagation private env AJ_DISK_PRIVATE_NS=1 bash "$0" "$@"
fi
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup
WS=$(mktmp)
echo base >"$WS/base.txt"
cd "$WS" || exit 1

# ---- refusals wherever the limit cannot be enforced ---------------------------------------

HOST_QUOTA=$("$AJ" --json features 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["disk"]["enforceable"])')

aj_run run --overlay discard --disk 1MiB -- true
expect_eq "--disk below the minimum: exit 125" "$RC" 125
expect_contains "names limits.disk and the minimum" "$ERR" "limits.disk: at least 16MiB"
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --disk 16MiB -- true
expect_eq "--disk on a run that writes the workspace in place: exit 125" "$RC" 125
expect_contains "says why" "$ERR" "the disk layer is needed but cannot be enforced: the workspace is a host directory written in place"
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --pids none --tier landlock --preset read-only --disk 16MiB -- true
if is_root; then
	expect_eq "the landlock tier with --disk: refused (as root, the tier itself is)" "$RC" 125
else
	expect_contains "the landlock tier (HOME and TMPDIR on the host) is refused" "$ERR" "the landlock tier writes HOME and TMPDIR in a host directory"
fi
if [ "$HOST_QUOTA" = True ]; then
	skip "refusals where the state directory has no quotas" "this host's $STATE has them"
else
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --overlay discard --disk 16MiB -- true
expect_eq "--disk where the state directory has no quotas: exit 125" "$RC" 125
expect_contains "names the disk layer" "$ERR" "the disk layer is needed but cannot be enforced"
if is_root; then
	check "and the probe's finding (no project quotas on the host's filesystem)" \
		grep -qE "CONFIG_QUOTA|project quotas are|has no quotas agentjail can use" <<<"$ERR"
else
	expect_contains "and the probe's finding (rootless)" "$ERR" "needs root"
fi
expect_contains "and the remedies" "$ERR" "--allow-degraded disk"
expect_eq "nothing is left in the state directory's change sets" "$(ls "$STATE/changes" 2>/dev/null | wc -l)" 0
# shellcheck disable=SC2086
aj_run run $PJ_FLAGS --overlay discard --disk 16MiB --allow-degraded disk --report "$WS/../deg.json" -- true
expect_eq "accepted degraded: runs" "$RC" 0
expect_eq "the report says the disk layer is degraded" \
	"$(json "$WS/../deg.json" '[l["state"] for l in d["plan"]["layers"] if l["layer"]=="disk"][0]')" degraded
# shellcheck disable=SC2086
aj_run create --name nodisk $PJ_FLAGS --disk 32MiB
expect_eq "create --disk without quotas: exit 125" "$RC" 125
expect_contains "names the disk layer" "$ERR" "the disk layer is needed but cannot be enforced"
expect_eq "and no sandbox is kept" "$(pj_state nodisk)" MISSING
expect_eq "nor its directory" "$(ls "$STATE/sandboxes" 2>/dev/null | wc -l)" 0
aj_run --json features
expect_eq "features: disk limits not enforceable here" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["disk"]["enforceable"])')" False
fi

if ! is_root; then
	exit 0
fi
if ! command -v mkfs.btrfs >/dev/null; then
	skip "disk quotas on btrfs" "mkfs.btrfs is missing (btrfs-progs; scripts/install-deps installs it)"
	exit 0
fi

# A btrfs on a loop device, mounted on $1 (in this test's mount namespace), quota groups on
# unless $2 is "off".
mkbtrfs() {
	truncate -s 2G "$1.img" && mkfs.btrfs -q "$1.img" >/dev/null 2>&1 && mkdir -p "$1" &&
		mount -o loop "$1.img" "$1" || return 1
	PJ_AT_EXIT+=("umount -l '$1'")
	[ "${2:-on}" = off ] || btrfs quota enable "$1"
}
T=$(mktmp)
mkbtrfs "$T/noq" off || { not_ok "a btrfs on a loop device"; exit 0; }
aj_run --state-dir "$T/noq/st" run --overlay discard --disk 16MiB -- true
expect_eq "btrfs with quota groups off: exit 125" "$RC" 125
expect_contains "the probe says quota groups are off, and how to turn them on" "$ERR" "quota groups are off on this btrfs; enable them with \`btrfs quota enable"

mkbtrfs "$T/q" || { not_ok "a btrfs with quota groups"; exit 0; }
PJ_EXTRA_STATES+=("$STATE")
export AGENTJAIL_STATE_DIR=$T/q/st
STATE=$AGENTJAIL_STATE_DIR
aj_run --json features
expect_eq "features: disk limits enforceable with btrfs qgroups" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin)["disk"]; print(d["enforceable"], d["mechanism"])')" "True btrfs qgroup"

# ---- an --overlay run ----------------------------------------------------------------------

aj_run run --overlay discard --disk 16MiB --report "$T/fill.json" --events "$T/fill.ev" -- \
	sh -c 'dd if=/dev/zero of=big bs=1M count=64 2>&1; echo "dd=$?"'
expect_eq "the run ends normally (the command's own exit)" "$RC" 0
expect_contains "a write past 16 MiB fails with EDQUOT inside" "$OUT" "Disk quota exceeded"
expect_contains "dd failed" "$OUT" "dd=1"
expect_eq "the report's limits_hit has disk" "$(json "$T/fill.json" '"disk" in d["limits_hit"]')" True
expect_eq "the report's disk: the limit" "$(json "$T/fill.json" 'd["disk"]["limit_bytes"]')" 16777216
expect_eq "and what was written, at most the limit" \
	"$(json "$T/fill.json" '15*2**20 <= d["disk"]["used_bytes"] <= 16*2**20')" True
expect_eq "the plan: disk enforced by a btrfs qgroup" \
	"$(json "$T/fill.json" '[l["detail"] for l in d["plan"]["layers"] if l["layer"]=="disk"][0].startswith("16 MiB (btrfs qgroup on ")')" True
expect_contains "a limit event names disk" "$(cat "$T/fill.ev")" '"limit":"disk"'
expect_eq "the workspace is untouched" "$(ls "$WS")" base.txt
expect_eq "the change set's subvolume is gone" "$(btrfs subvolume list "$T/q" | wc -l)" 0

aj_run run --overlay discard --disk 16MiB --report "$T/files.json" -- \
	sh -c 'i=0; while [ $i -lt 100000 ] && true >"f$i"; do i=$((i+1)); done; echo "files=$i"; : >last'
expect_contains "creating empty files stops at the limit" "$ERR" "Disk quota exceeded"
N=$(printf '%s' "$OUT" | sed -n 's/^files=//p')
expect_eq "after thousands of files, not 100000 ($N)" "$([ "${N:-0}" -gt 1000 ] && [ "${N:-0}" -lt 100000 ] && echo yes)" yes
expect_eq "the report says disk" "$(json "$T/files.json" '"disk" in d["limits_hit"]')" True

aj_run run --overlay discard --disk 64MiB --report "$T/small.json" -- sh -c 'dd if=/dev/zero of=f bs=1M count=4 2>/dev/null'
expect_eq "a run within its limit: exit 0" "$RC" 0
expect_eq "and no limit hit" "$(json "$T/small.json" 'd["limits_hit"]')" "[]"

# ---- persistent sandboxes ------------------------------------------------------------------

pj_create full --disk 32MiB
pj_create other --disk 32MiB
aj_run exec full -- sh -c 'dd if=/dev/zero of=big bs=1M count=64 2>&1'
expect_contains "a persistent sandbox's disk fill: EDQUOT inside" "$OUT" "Disk quota exceeded"
aj_run exec other -- sh -c 'dd if=/dev/zero of=f bs=1M count=8 2>&1 && echo wrote'
expect_contains "another sandbox on the same filesystem still writes" "$OUT" "wrote"
aj_run --json stats full
expect_eq "stats: the disk used and the limit" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk_limit"], d["disk"] > 30*2**20)')" "33554432 True"
wait_until 20 sh -c "'$AJ' events full 2>/dev/null | grep -q '\"limit\":\"disk\"'"
check "a limit event names disk" sh -c "'$AJ' events full | grep -q '\"limit\":\"disk\"'"
aj_run stop full
aj_run start full
expect_eq "a full sandbox starts again" "$RC" 0
aj_run exec full -- sh -c 'rm big && echo removed && dd if=/dev/zero of=again bs=1M count=64 2>&1'
expect_contains "and can delete what filled it" "$OUT" "removed"
expect_contains "the limit refuses writes again after the start" "$OUT" "Disk quota exceeded"
aj_run --json stats full
expect_eq "its limit is the policy's again (not the start's headroom)" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk_limit"])')" 33554432
aj_run exec full -- rm again
aj_run snapshot full --name snap1
expect_eq "snapshot of a sandbox with a disk limit" "$RC" 0
aj_run fork full --name child
expect_eq "fork" "$RC" 0
aj_run exec child -- sh -c 'dd if=/dev/zero of=big bs=1M count=64 2>&1'
expect_contains "the fork has the same limit" "$OUT" "Disk quota exceeded"
aj_run --json stats child
expect_eq "the fork's limit: 32 MiB" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk_limit"])')" 33554432
aj_run stop other
aj_run snapshot other --name snap2
expect_eq "snapshot of a stopped sandbox (its upper copied out of the subvolume)" "$RC" 0
aj_run start other
aj_run exec other -- sh -c 'wc -c <f'
expect_eq "its files are still there" "$OUT" 8388608
aj_run --json stats other
expect_eq "and no longer count against its quota (they are in the snapshot's layer)" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk"] < 2**20)')" True
pj_create dflt
aj_run --json stats dflt
expect_eq "a persistent sandbox without --disk: the default limit, 10 GiB, where quotas work" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk_limit"])')" 10737418240
pj_create unlimited --disk none
aj_run --json stats unlimited
expect_eq "--disk none: no limit" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d["disk_limit"])')" 0
pj_remove_all
expect_eq "rm releases every sandbox's subvolume" "$(btrfs subvolume list "$T/q" | wc -l)" 0

# ---- a volume's size ------------------------------------------------------------------------

aj_run volume create capped --size 16MiB
expect_eq "a volume with a size, on a quota-capable state directory" "$RC" 0
aj_run run --volume capped:/v -- sh -c 'dd if=/dev/zero of=/v/big bs=1M count=64 2>&1'
expect_contains "writes to it stop at its size (EDQUOT)" "$OUT" "Disk quota exceeded"
aj_run --json volume inspect capped
expect_eq "inspect: its size, and what it holds within it" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["size"], 15*2**20 <= d["used_bytes"] <= 16*2**20)')" "16777216 True"
aj_run volume rm capped
expect_eq "volume rm releases its subvolume" "$(btrfs subvolume list "$T/q" | wc -l)" 0

# ---- the API's per-owner disk quota: disk limits, volume sizes and snapshots ---------------

. "$AJ_ROOT/tests/serve.bash"
SV_DIR=$(mktmp)
SOCK=$SV_DIR/api.sock
SV_LOG=$SV_DIR/serve.log
trap sv_cleanup EXIT
TA=tok-a-$RANDOM$RANDOM$RANDOM
sv_tokens "$TA alice"
SV_NO_OPENAPI=0
sv_start_tcp --max-disk 100MiB --max-snapshots 1 || pj_bail "serve --max-disk starts ($(tail -3 "$SV_LOG"))"
disk_box() { # NAME DISK-JSON
	apitj "$TA" POST /v1/sandboxes "{\"name\": \"$1\", \"policy\": {\"limits\": {\"disk\": $2}}}"
}
disk_box qa 33554432
expect_api "--max-disk: a token owner's sandbox with a 32 MiB disk limit: 201" 201
disk_box qnone null
expect_api "a sandbox without a disk limit does not fit under a disk quota: 429" 429 policy.limits.disk quota_exceeded
expect_contains "and the message says it needs one" "$(bj 'd["error"]["message"]')" "needs a disk limit"
disk_box qdflt '"default"'
expect_api "the default limit (10 GiB) counts too: 429" 429 policy.limits.disk quota_exceeded
apitj "$TA" POST /v1/volumes '{"name": "qv", "size": 33554432}'
expect_api "a 32 MiB volume (64 of 100 MiB): 201" 201
apitj "$TA" POST /v1/volumes '{"name": "qvfree"}'
expect_api "a volume without a size does not fit under a disk quota: 429" 429 size quota_exceeded
apitj "$TA" POST /v1/sandboxes/qa/exec '{"command": "dd if=/dev/zero of=fill bs=1M count=24 2>/dev/null; sync"}'
expect_api "24 MiB written in the sandbox" 200
apitj "$TA" POST /v1/sandboxes/qa/snapshots '{"name": "qsnap"}'
expect_api "a snapshot of it (about 88 of 100 MiB): 201" 201
expect_eq "its size is what the sandbox wrote" "$(bj '24*2**20 <= d["size_bytes"] < 32*2**20')" True
disk_box qb 16777216
expect_api "a 16 MiB sandbox no longer fits, the snapshot counted: 429" 429 policy.limits.disk quota_exceeded
expect_contains "the message names the disk quota and what it sums" "$(bj 'd["error"]["message"]')" "disk quota: owner \"alice\" has"
apitj "$TA" POST /v1/sandboxes/qa/fork '{"count": 1}'
expect_api "nor does a fork with the source's 32 MiB: 429" 429 "" quota_exceeded
apitj "$TA" POST /v1/sandboxes/qa/snapshots '{}'
expect_api "a second snapshot, past --max-snapshots 1: 429" 429 "" quota_exceeded
expect_contains "the message names the snapshot quota" "$(bj 'd["error"]["message"]')" "snapshot quota: owner \"alice\" has 1 of 1 snapshots"
apit "$TA" GET /v1/sandboxes
expect_eq "refused requests made nothing" "$(bj '" ".join(sorted(s["name"] for s in d["sandboxes"]))')" qa
apit "$TA" DELETE /v1/snapshots/qsnap
expect_api "the snapshot deleted" 204
disk_box qb 16777216
expect_api "then the 16 MiB sandbox fits: 201" 201
apij POST /v1/sandboxes '{"name": "qlocal"}'
expect_api "the local owner has no disk quota (the default 10 GiB limit): 201" 201
sv_stop
"$AJ" serve --socket "$SV_DIR/noq.sock" --state-dir "$T/noq/st" --max-disk 1GiB >"$SV_DIR/noq.log" 2>&1
expect_eq "serve --max-disk where disk limits cannot be enforced: exit 125" "$?" 125
expect_contains "and says why" "$(cat "$SV_DIR/noq.log")" "--max-disk: no disk quota on \"$T/noq/st\": quota groups are off"
pj_remove_all
aj_run volume rm qv

# ---- storage init ----------------------------------------------------------------------------

PJ_AT_EXIT+=("umount -l '$T/fresh' 2>/dev/null")
aj_run --state-dir "$T/fresh" storage init --size 1GiB
expect_eq "storage init: exit 0" "$RC" 0
expect_contains "says what it made" "$OUT" "is now a 1 GiB btrfs filesystem in $T/fresh.img"
check "the state directory is a mount of the image" findmnt -n "$T/fresh"
aj_run --state-dir "$T/fresh" --json features
expect_eq "and disk limits are enforceable on it" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["disk"]["enforceable"])')" True
umount "$T/fresh"
aj_run --state-dir "$T/fresh" ls
check "the next command mounts it again (as after a reboot)" findmnt -n "$T/fresh"
aj_run --state-dir "$T/fresh" storage init
expect_eq "storage init again: exit 125" "$RC" 125
expect_contains "a mount point already" "$ERR" "is a mount point already"
mkdir -p "$T/busy" && echo keep >"$T/busy/file"
aj_run --state-dir "$T/busy" storage init
expect_contains "a state directory with data is refused" "$ERR" "holds data"
expect_eq "and kept as it was" "$(cat "$T/busy/file")" keep
aj_run --state-dir "$T/x" storage init --fs zfs
expect_contains "--fs names the choices" "$ERR" '--fs: "zfs" is not a filesystem storage init makes'
aj_run --state-dir "$T/x" storage init --size 1MiB
expect_contains "--size names the minimum" "$ERR" "--size: at least 512MiB"
expect_eq "nothing made for them" "$(ls -d "$T"/x* 2>/dev/null | wc -l)" 0
