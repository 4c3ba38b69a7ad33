#!/usr/bin/env bash
# Snapshots and forks of a running sandbox clone its writable layer where the filesystem shares
# extents (docs/storage.md, "Snapshots without copies"). As root, in a private mount namespace
# of its own, the test puts state directories on btrfs and (with mkfs.xfs) XFS loop devices: a
# running sandbox writes 32 MiB, is snapshotted and forked, and the layer's file shares its
# extents with the sandbox's (filefrag's "shared" flag), the filesystem's used space does not
# grow by the data, and the copies stay copies: what the source writes afterwards is not
# seen in the snapshot or the fork, nor the other way round. (On ext4 the layer is copied;
# persist_snapshots.sh covers its contents.)
# timeout: 300
if [ "$(id -u)" = 0 ] && [ -z "${AJ_REFLINK_PRIVATE_NS:-}" ]; then
	exec unshare -m --propagation private env AJ_REFLINK_PRIVATE_NS=1 bash "$0" "$@"
fi
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

if ! is_root; then
	skip "reflinked snapshots" "needs root (loop devices and mounts)"
	exit 0
fi
if ! pj_can_freeze; then
	skip "reflinked snapshots" "snapshots of a running sandbox need a cgroup freezer"
	exit 0
fi
command -v filefrag >/dev/null || {
	skip "reflinked snapshots" "filefrag (e2fsprogs) is missing"
	exit 0
}
T=$(mktmp)
FSES=()
command -v mkfs.btrfs >/dev/null && FSES+=(btrfs) ||
	skip "reflinked snapshots on btrfs" "mkfs.btrfs is missing (btrfs-progs)"
command -v mkfs.xfs >/dev/null && FSES+=(xfs) ||
	skip "reflinked snapshots on XFS" "mkfs.xfs is missing (xfsprogs)"

used_mib() { df -m --output=used "$1" | tail -1 | tr -d ' '; }
# shared_extents FILE: how many of FILE's extents filefrag flags as shared
shared_extents() { filefrag -v "$1" 2>/dev/null | grep -c shared; }

for fs in "${FSES[@]}"; do
	truncate -s 2G "$T/$fs.img"
	"mkfs.$fs" -q "$T/$fs.img" >/dev/null 2>&1
	mkdir "$T/$fs"
	if ! mount -o loop "$T/$fs.img" "$T/$fs"; then
		skip "reflinked snapshots on $fs" "cannot mount a $fs loop device here"
		continue
	fi
	PJ_AT_EXIT+=("umount -l '$T/$fs'")
	st=$T/$fs/st
	PJ_EXTRA_STATES+=("$st")
	A=(--state-dir "$st")
	# shellcheck disable=SC2086
	aj_run create "${A[@]}" $PJ_FLAGS --name src
	expect_eq "$fs: create" "$RC" 0
	aj_run exec "${A[@]}" src -- sh -c 'head -c 32M /dev/urandom >data && echo one >small && sync'
	expect_eq "$fs: 32 MiB written in the running sandbox" "$RC" 0
	sync
	src_sum=$(sha256sum "$st"/sandboxes/*/upper/data | cut -d' ' -f1)
	before=$(used_mib "$T/$fs")
	aj_run snapshot "${A[@]}" src --name snap
	expect_eq "$fs: snapshot of the running sandbox" "$RC" 0
	aj_run fork "${A[@]}" src --name child
	expect_eq "$fs: fork of the running sandbox" "$RC" 0
	sync
	grew=$(($(used_mib "$T/$fs") - before))
	check "$fs: the snapshot and the fork took no space for the data (grew ${grew} MiB)" \
		test "$grew" -lt 16
	layer_files=("$st"/layers/*/data)
	check "$fs: the snapshot's layer holds the file" test -f "${layer_files[0]}"
	check "$fs: its extents are shared with the sandbox's ($(shared_extents "${layer_files[0]}") shared)" \
		test "$(shared_extents "${layer_files[0]}")" -gt 0
	expect_eq "$fs: the layer's file is the sandbox's" \
		"$(sha256sum "${layer_files[0]}" | cut -d' ' -f1)" "$src_sum"
	aj_run exec "${A[@]}" child -- sha256sum data
	expect_eq "$fs: the fork reads the same data" "${OUT%% *}" "$src_sum"
	# Copy-on-write: writes on either side stay there.
	aj_run exec "${A[@]}" src -- sh -c 'head -c 1M /dev/zero | dd of=data conv=notrunc 2>/dev/null; echo two >small'
	aj_run exec "${A[@]}" child -- sh -c 'sha256sum data; cat small'
	expect_eq "$fs: the source's later writes are not in the fork" "$OUT" "$src_sum  data
one"
	expect_eq "$fs: nor in the snapshot's layer" \
		"$(sha256sum "${layer_files[0]}" | cut -d' ' -f1)" "$src_sum"
	aj_run exec "${A[@]}" child -- sh -c 'echo three >small'
	aj_run exec "${A[@]}" src -- cat small
	expect_eq "$fs: the fork's writes are not in the source" "$OUT" two
	aj_run create "${A[@]}" $PJ_FLAGS --name restored --from snap
	aj_run exec "${A[@]}" restored -- sh -c 'sha256sum data; cat small'
	expect_eq "$fs: a sandbox from the snapshot has the data of its moment" "$OUT" "$src_sum  data
one"
done
