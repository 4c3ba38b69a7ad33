#!/usr/bin/env bash
# Storage (bench/README.md): on one btrfs with quota groups (a loop device, mounted in a
# private mount namespace of this script's), an --overlay run's write throughput (dd, 512 MiB,
# fsync'd) and file-creation rate (20,000 empty files) with a disk quota (--disk) and without,
# alternated; `agentjail storage init` end to end; and what mounting a volume adds to a
# one-shot run (`run -- true` with and without --volume, alternated).
#
# usage: bench/run-storage.sh           environment: REPS (5), START_REPS (20); BUILD,
#                                       AGENTJAIL as for the other benchmarks
# As root (quotas need it). Needs mkfs.btrfs (btrfs-progs).
set -euo pipefail

if [[ $(id -u) != 0 ]]; then
	echo "${0##*/}: needs root (disk quotas are set as root)" >&2
	exit 1
fi
if [[ -z ${AJ_BENCH_PRIVATE_NS:-} ]]; then
	exec unshare -m --propagation private env AJ_BENCH_PRIVATE_NS=1 bash "$0" "$@"
fi
REPS=${REPS:-5}
START_REPS=${START_REPS:-20}

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
command -v mkfs.btrfs >/dev/null || bench_die "needs mkfs.btrfs (btrfs-progs)"
truncate -s 8G "$WORK/fs.img"
mkfs.btrfs -q "$WORK/fs.img" >/dev/null
mkdir "$WORK/fs"
mount -o loop "$WORK/fs.img" "$WORK/fs"
btrfs quota enable "$WORK/fs"
cleanup() {
	"$AJ" rm -f --state-dir "$WORK/fs/st" bench-v >/dev/null 2>&1 || true
	umount -l "$WORK/fs" "$WORK/init" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
export AGENTJAIL_STATE_DIR="$WORK/fs/st"
echo "agentjail: $AJ ($(sha256sum "$AJ" | cut -c1-12)); $(uname -r); btrfs on a loop device (an 8 GiB sparse file on $(df -T "$WORK" | awk 'NR == 2 {print $2}'))"

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# MB/s of dd inside an --overlay run, with the extra flags given
write_rate() {
	"$AJ" run --overlay discard "$@" -- sh -c \
		'dd if=/dev/zero of=big bs=1M count=512 conv=fsync 2>&1 | sed -n "s/.*copied, \([0-9.]*\) s.*/\1/p"' 2>/dev/null |
		awk '{printf "%d\n", 512 / $1}'
}
# files per second created inside an --overlay run
file_rate() {
	"$AJ" run --overlay discard "$@" -- python3 -c '
import os, time
t = time.monotonic()
for i in range(20000):
    os.close(os.open("f%d" % i, os.O_CREAT | os.O_WRONLY, 0o644))
print(int(20000 / (time.monotonic() - t)))' 2>/dev/null
}
wq=() wn=() fq=() fn=()
for ((i = 0; i < REPS; i++)); do
	wq+=("$(write_rate --disk 2GiB)")
	wn+=("$(write_rate)")
	fq+=("$(file_rate --disk 2GiB)")
	fn+=("$(file_rate)")
done
printf 'write 512 MiB (fsync)   with --disk 2GiB: median %s MB/s   without: %s MB/s   (%d runs each, alternated)\n' \
	"$(median "${wq[@]}")" "$(median "${wn[@]}")" "$REPS"
printf 'create 20,000 files     with --disk 2GiB: median %s/s   without: %s/s\n' \
	"$(median "${fq[@]}")" "$(median "${fn[@]}")"

init=()
for ((i = 0; i < REPS; i++)); do
	s=$(date +%s%N)
	"$AJ" --state-dir "$WORK/init" storage init --size 2GiB >/dev/null
	e=$(date +%s%N)
	init+=($(((e - s) / 1000000)))
	umount "$WORK/init"
	rm -rf "$WORK/init" "$WORK/init.img" "$WORK/init.img.fs"
done
printf 'storage init --size 2GiB (mkfs.btrfs, mount, quotas on, probe): median %s ms over %d\n' \
	"$(median "${init[@]}")" "$REPS"

"$AJ" volume create bench-vol >/dev/null
with=() without=()
for ((i = 0; i < START_REPS; i++)); do
	s=$(date +%s%N)
	"$AJ" run --volume bench-vol:/data -- true
	e=$(date +%s%N)
	with+=($(((e - s) / 1000)))
	s=$(date +%s%N)
	"$AJ" run -- true
	e=$(date +%s%N)
	without+=($(((e - s) / 1000)))
done
printf 'run -- true  with --volume: median %s us   without: %s us   (%d each, alternated)\n' \
	"$(median "${with[@]}")" "$(median "${without[@]}")" "$START_REPS"
s=$(date +%s%N)
"$AJ" create --name bench-v --volume bench-vol:/data >/dev/null
e=$(date +%s%N)
printf 'create --volume (a persistent sandbox, started): %s ms\n' $(((e - s) / 1000000))
