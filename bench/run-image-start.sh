#!/usr/bin/env bash
# Sandboxes on an image (bench/README.md): how long a one-shot command takes to start on an
# image, next to the tools users would otherwise use, then what a persistent sandbox on an
# image costs to create and on disk. One image for all of them: a Debian bookworm minbase root
# (the tests' cached mmdebstrap tarball when there is one, otherwise mmdebstrap from the
# machine's apt sources), imported into agentjail, exported as an OCI layout and loaded from
# that into podman and, unpacked by umoci, into a runc bundle.
#
#   start    `agentjail run --image IMG -- /bin/true` alternated (abtime) with
#            `podman run --rm --network none IMG /bin/true` and `runc run` of the umoci bundle
#            (args /bin/true), plus `agentjail run -- /bin/true` on the host's root as the
#            engine's own reference.
#   create   `agentjail create --image IMG` (the supervisor started, the sandbox ready), then
#            `exec -- /bin/true` into it, then `rm -f`: each timed, CREATE_REPS times.
#   disk     DISK_SANDBOXES persistent sandboxes on the image, each writing DISK_WRITE_KIB of
#            its own into its system (/var/tmp) and stopped: the state directory's size (du,
#            hard links once) against the image alone and against one full copy per sandbox.
#
# usage: bench/run-image-start.sh [SECTION...]       (default: start create disk)
# environment: ROUNDS (100), WARMUP (10); CREATE_REPS (20); DISK_SANDBOXES (100),
#              DISK_WRITE_KIB (1024); BUILD, CC, AGENTJAIL as for the other benchmarks.
# Run as root (podman and runc rootful; agentjail's privileged mode). Nothing touches the
# network; everything lives under the scratch directory and is removed at exit.
set -euo pipefail

ROUNDS=${ROUNDS:-100}
WARMUP=${WARMUP:-10}
CREATE_REPS=${CREATE_REPS:-20}
DISK_SANDBOXES=${DISK_SANDBOXES:-100}
DISK_WRITE_KIB=${DISK_WRITE_KIB:-1024}
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(start create disk)
MINBASE=/var/cache/agentjail-tests/bookworm-minbase.tar

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
[[ $(id -u) == 0 ]] || bench_die "run as root (podman and runc are measured rootful)"
for tool in podman runc umoci skopeo; do
	command -v "$tool" >/dev/null || bench_die "needs $tool"
done
bench_cc abtime
bench_cc timeit

export AGENTJAIL_STATE_DIR="$WORK/aj"
IMG=bench/debian:minbase
pod() { podman --root "$WORK/pod/root" --runroot "$WORK/pod/run" --storage-driver overlay "$@"; }

cleanup() {
	local names
	set +e
	names=$("$AJ" ls --json 2>/dev/null | python3 -c \
		'import json,sys; print("\n".join(s["name"] for s in json.load(sys.stdin)))')
	[[ -n $names ]] && xargs -r -P 16 -n 1 "$AJ" rm -f <<<"$names" >/dev/null 2>&1
	[[ -d $WORK/pod ]] && pod system reset --force >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

if [[ ! -s $MINBASE ]]; then
	command -v mmdebstrap >/dev/null || bench_die "needs $MINBASE or mmdebstrap to make it"
	MINBASE=$WORK/minbase.tar
	mmdebstrap --variant=minbase --quiet bookworm "$MINBASE" >&2
fi
"$AJ" image import --name "$IMG" "$MINBASE" >/dev/null
"$AJ" image export "$IMG" "$WORK/layout.tar"
pod load --quiet -i "$WORK/layout.tar" >/dev/null
pod tag "$(pod images -q | head -1)" "localhost/$IMG" >/dev/null
skopeo copy --quiet "oci-archive:$WORK/layout.tar" "oci:$WORK/oci:minbase"
umoci unpack --image "$WORK/oci:minbase" "$WORK/bundle" >/dev/null
python3 - "$WORK/bundle/config.json" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
json.dump(c, open(p, "w"))
EOF
IMG_KIB=$(du -sk "$AGENTJAIL_STATE_DIR" | cut -f1)

echo "== sandboxes on an image: Debian bookworm minbase ($((IMG_KIB / 1024)) MiB in the store)"
bench_header
echo "podman:     $(podman --version), storage overlay; runc: $(runc --version | head -1)"
echo

# podman asks runc for nofile and nproc limits of its own, which fail where root lacks
# CAP_SYS_RESOURCE (as on the CI machine), even at the caller's own values; 4096 each works
# and does not matter to /bin/true.
POD_ULIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

section_start() {
	local rows json
	rows=(agentjail-image -- "$AJ" run --image "$IMG" -- /bin/true
		::: podman-run-rm -- podman --root "$WORK/pod/root" --runroot "$WORK/pod/run"
		--storage-driver overlay run --rm --network none "${POD_ULIMITS[@]}" "localhost/$IMG" /bin/true
		::: runc-run -- runc --root "$WORK/runc" run --bundle "$WORK/bundle" aj-bench
		::: agentjail-host-root -- "$AJ" run -- /bin/true)
	echo "-- start: a one-shot /bin/true on the image ($ROUNDS rounds after $WARMUP, alternated)"
	json=$("$BIN/abtime" "$ROUNDS" "$WARMUP" "${rows[@]}")
	python3 - "$json" <<'EOF'
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
print("%-22s %10s %10s %14s %5s" % ("", "median ms", "p90 ms", "paired ratio", "fail"))
for r in rows:
    ratio = next(v for k, v in r.items() if k.startswith("paired_ratio_vs_"))
    print("%-22s %10.2f %10.2f %13.3fx %5d" % (r["name"], r["median_ms"], r["p90_ms"], ratio,
                                              r["failures"]))
EOF
	echo "(ratio vs agentjail-image: > 1 means slower than agentjail)"
	bench_print_commands "${rows[@]}"
	echo
}

# ms NAME CMD...: appends the wall time of CMD in ms to $WORK/t.NAME.
ms() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$WORK/t.$name"
}

stats() {
	python3 - "$@" <<'EOF'
import statistics, sys
for name in sys.argv[1:]:
    v = [int(x) for x in open(name)]
    print("  %-28s median %6.0f ms   min %5d   max %5d   (%d runs)" % (
        name.rsplit(".", 1)[1], statistics.median(v), min(v), max(v), len(v)))
EOF
}

section_create() {
	local i
	echo "-- create: a persistent sandbox on the image ($CREATE_REPS times)"
	for i in $(seq "$CREATE_REPS"); do
		ms create "$AJ" create --name "c$i" --image "$IMG"
		ms exec "$AJ" exec "c$i" -- /bin/true
		ms rm "$AJ" rm -f "c$i"
	done
	stats "$WORK/t.create" "$WORK/t.exec" "$WORK/t.rm"
	echo
}

section_disk() {
	local i before after
	echo "-- disk: $DISK_SANDBOXES sandboxes on the image, each with $DISK_WRITE_KIB KiB of its own"
	before=$(du -sk "$AGENTJAIL_STATE_DIR" | cut -f1)
	for i in $(seq "$DISK_SANDBOXES"); do
		"$AJ" create --name "d$i" --image "$IMG" >/dev/null
		"$AJ" exec "d$i" -- sh -c "head -c ${DISK_WRITE_KIB}K /dev/urandom >/var/tmp/own"
		"$AJ" stop "d$i" >/dev/null
	done
	sync
	after=$(du -sk "$AGENTJAIL_STATE_DIR" | cut -f1)
	echo "  the image alone:                $((before / 1024)) MiB"
	echo "  with $DISK_SANDBOXES sandboxes:             $((after / 1024)) MiB" \
		"($(((after - before) / DISK_SANDBOXES)) KiB per sandbox, $DISK_WRITE_KIB KiB of it written)"
	echo "  one copy of the image each:     $(((before * (DISK_SANDBOXES + 1)) / 1024)) MiB"
	echo
}

for s in "${SECTIONS[@]}"; do
	case $s in
	start | create | disk) "section_$s" ;;
	*) bench_die "unknown section $s (start, create, disk)" ;;
	esac
done
