#!/usr/bin/env bash
# Building an image (bench/README.md): the same Dockerfile built by `agentjail build` and by
# `podman build` on this machine, each into its own store, from the same base (a Debian
# bookworm minbase, imported into both). The Dockerfile has the steps builds usually have: a
# context COPY, RUN steps that write files (a few thousand small ones, and one of 64 MiB),
# ENV, WORKDIR, USER and CMD; RUN needs no network.
#
#   cold   the build with an empty cache (agentjail --no-cache; podman --no-cache), REPS
#          times, alternated
#   warm   the same build again, everything cached, REPS times, alternated
#
# usage: bench/run-build.sh             environment: REPS (5); BUILD, AGENTJAIL as for the
#                                       other benchmarks
# Run as root (podman rootful, agentjail privileged). Nothing touches the network (podman
# with --network none --pull=never); everything lives under the scratch directory.
set -euo pipefail

REPS=${REPS:-5}
MINBASE=/var/cache/agentjail-tests/bookworm-minbase.tar

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
bench_setup
[[ $(id -u) == 0 ]] || bench_die "run as root (podman is measured rootful)"
command -v podman >/dev/null || bench_die "needs podman"

export AGENTJAIL_STATE_DIR="$WORK/aj"
pod() { podman --root "$WORK/pod/root" --runroot "$WORK/pod/run" --storage-driver overlay "$@"; }
cleanup() {
	set +e
	[[ -d $WORK/pod ]] && pod system reset --force >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

if [[ ! -s $MINBASE ]]; then
	command -v mmdebstrap >/dev/null || bench_die "needs $MINBASE or mmdebstrap to make it"
	MINBASE=$WORK/minbase.tar
	mmdebstrap --variant=minbase --quiet bookworm "$MINBASE" >&2
fi
"$AJ" image import --name bench/debian:minbase "$MINBASE" >/dev/null
"$AJ" image export bench/debian:minbase "$WORK/layout.tar"
pod load --quiet -i "$WORK/layout.tar" >/dev/null
pod tag "$(pod images -q | head -1)" localhost/bench/debian:minbase >/dev/null

CTX=$WORK/ctx
mkdir -p "$CTX/src"
for i in $(seq 200); do printf 'file %s\n' "$i" >"$CTX/src/f$i.txt"; done
cat >"$CTX/Dockerfile" <<'DF'
FROM bench/debian:minbase
ENV APP=/opt/app
WORKDIR /opt/app
COPY src/ ./src/
RUN for d in $(seq 40); do mkdir -p gen/$d; for f in $(seq 50); do echo "$d $f" > gen/$d/$f; done; done
RUN head -c 67108864 /dev/zero > blob.bin && sha256sum blob.bin > blob.sum
RUN useradd -m -u 1500 app && chown -R app:app /opt/app
USER app
CMD ["cat", "/opt/app/blob.sum"]
DF
POD_ULIMITS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
aj_build() { "$AJ" build -q "$@" -t bench/built:1 "$CTX" >/dev/null 2>&1; }
pod_build() {
	pod build -q --network none --pull=never "${POD_ULIMITS[@]}" "$@" \
		--from localhost/bench/debian:minbase -t bench/built:1 "$CTX" >/dev/null 2>&1
}

ms() { # ms FILE CMD...: the wall time of CMD in ms, appended to FILE
	local f=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@" || bench_die "failed: $*"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$f"
}

echo "== building an image: the same Dockerfile (COPY 200 files, 2,000 generated files, a 64 MiB file, useradd) on a Debian minbase"
bench_header
echo "podman:     $(podman --version), storage overlay, buildah inside"
echo
aj_build --no-cache && pod_build --no-cache # warm the page cache and the tools
for _ in $(seq "$REPS"); do
	ms "$WORK/t.agentjail-cold" aj_build --no-cache
	ms "$WORK/t.podman-cold" pod_build --no-cache
done
for _ in $(seq "$REPS"); do
	ms "$WORK/t.agentjail-warm" aj_build
	ms "$WORK/t.podman-warm" pod_build
done
python3 - "$WORK" <<'PY'
import statistics, sys
w = sys.argv[1]
def med(n): return statistics.median(int(x) for x in open(f"{w}/t.{n}"))
print("%-8s %16s %16s %8s" % ("", "agentjail ms", "podman ms", "ratio"))
for k in ("cold", "warm"):
    a, p = med(f"agentjail-{k}"), med(f"podman-{k}")
    print("%-8s %16.0f %16.0f %7.2fx" % (k, a, p, p / a))
print("(medians; ratio: podman / agentjail, > 1 means podman is slower)")
PY
echo "commands:"
echo "  agentjail build -q [--no-cache] -t bench/built:1 CTX"
echo "  podman build -q --network none --pull=never [--no-cache] -t bench/built:1 CTX"
