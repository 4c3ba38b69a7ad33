#!/usr/bin/env bash
# Snapshots and forks of a running sandbox against the filesystem under the state directory
# (bench/README.md): the writable layer is cloned (FICLONE) where the filesystem shares
# extents (btrfs, XFS), copied where it cannot (ext4). One state directory per filesystem, in
# a private mount namespace of this script's: ext4 (the host's, where $TMPDIR is), btrfs and
# XFS on loop devices (sparse files; XFS when mkfs.xfs is installed). In each, one running
# sandbox writes SIZE_MIB of random data in FILES files; then REPS rounds, the filesystems
# alternating within a round: `snapshot` of the running sandbox, then `fork` of it (which
# starts the fork), each timed from spawn to exit. The space the filesystem lost to each round
# says whether data was copied.
#
# usage: bench/run-clone.sh        environment: SIZE_MIB (1024), FILES (16), REPS (5),
#                                  FILESYSTEMS ("ext4 btrfs xfs"); BUILD, AGENTJAIL as for
#                                  the other benchmarks
# As root (loop devices and mounts). Needs mkfs.btrfs; mkfs.xfs for the XFS row.
set -euo pipefail

if [[ $(id -u) != 0 ]]; then
	echo "${0##*/}: needs root (loop devices)" >&2
	exit 1
fi
if [[ -z ${AJ_BENCH_PRIVATE_NS:-} ]]; then
	exec unshare -m --propagation private env AJ_BENCH_PRIVATE_NS=1 bash "$0" "$@"
fi
SIZE_MIB=${SIZE_MIB:-1024}
FILES=${FILES:-16}
REPS=${REPS:-5}

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
command -v mkfs.btrfs >/dev/null || bench_die "needs mkfs.btrfs (btrfs-progs)"
if [[ -n ${FILESYSTEMS:-} ]]; then
	read -ra FSES <<<"$FILESYSTEMS"
else
	FSES=(ext4 btrfs)
	command -v mkfs.xfs >/dev/null && FSES+=(xfs)
fi
IMG_GIB=$(((SIZE_MIB * (REPS * 2 + 4)) / 1024 + 4)) # room for ext4's copies, were it there

cleanup() {
	local fs n
	for fs in "${FSES[@]}"; do
		for n in $("$AJ" ls -q --state-dir "$WORK/$fs/st" 2>/dev/null); do
			"$AJ" rm -f --state-dir "$WORK/$fs/st" "$n" >/dev/null 2>&1 || true
		done
		[[ $fs == ext4 ]] || umount -l "$WORK/$fs" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

for fs in "${FSES[@]}"; do
	mkdir -p "$WORK/$fs"
	[[ $fs == ext4 ]] && continue
	truncate -s "${IMG_GIB}G" "$WORK/$fs.img"
	"mkfs.$fs" -q "$WORK/$fs.img" >/dev/null
	mount -o loop "$WORK/$fs.img" "$WORK/$fs"
done
[[ $(df -T "$WORK/ext4" | awk 'NR == 2 {print $2}') == ext4 ]] ||
	echo "note: \$TMPDIR is not on ext4 here; the ext4 row is $(df -T "$WORK/ext4" | awk 'NR == 2 {print $2}')"

echo "== snapshot and fork of a running sandbox holding $SIZE_MIB MiB in $FILES files"
bench_header
echo

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
ms_of() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}
used_mib() { df -m --output=used "$1" | tail -1 | tr -d ' '; }

per=$((SIZE_MIB / FILES))
for fs in "${FSES[@]}"; do
	"$AJ" create --state-dir "$WORK/$fs/st" --name src >/dev/null
	"$AJ" exec --state-dir "$WORK/$fs/st" src -- sh -c \
		"for i in \$(seq 1 $FILES); do head -c ${per}M /dev/urandom >f\$i; done; sync"
done
sync

declare -A snap fork grew
for ((i = 0; i < REPS; i++)); do
	for fs in "${FSES[@]}"; do
		st="$WORK/$fs/st"
		before=$(used_mib "$WORK/$fs")
		snap[$fs]+=" $(ms_of "$AJ" snapshot --state-dir "$st" src --name "s$i")"
		fork[$fs]+=" $(ms_of "$AJ" fork --state-dir "$st" src --name "f$i")"
		sync
		grew[$fs]+=" $(($(used_mib "$WORK/$fs") - before))"
		"$AJ" rm -f --state-dir "$st" "f$i" >/dev/null
	done
done

printf '%-8s %14s %14s %22s\n' "" "snapshot ms" "fork ms" "MiB used per round"
for fs in "${FSES[@]}"; do
	# shellcheck disable=SC2086  # the lists split on purpose
	printf '%-8s %14s %14s %22s\n' "$fs" "$(median ${snap[$fs]})" "$(median ${fork[$fs]})" \
		"$(median ${grew[$fs]})"
done
echo
echo "medians of $REPS rounds (snapshot, then fork, of the same running sandbox; each fork removed"
echo "after its round); raw ms:"
for fs in "${FSES[@]}"; do
	echo "  $fs snapshot:${snap[$fs]}  fork:${fork[$fs]}  MiB per round:${grew[$fs]}"
done
