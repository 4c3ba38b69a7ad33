#!/usr/bin/env bash
# Images: how long a pull and an import take, next to the tools users would otherwise use,
# from the same local registry (Debian's docker-registry on 127.0.0.1) and the same image
# (a Debian minbase root made with mmdebstrap from the machine's apt sources, pushed gzipped
# with skopeo), in one run, alternating (A B C A B C ...):
#
#   pull:   agentjail image pull            (fetch, verify, unpack, register)
#           skopeo copy + umoci unpack       (fetch into an OCI layout, then unpack it)
#           podman pull                      (into a fresh storage root, overlay driver)
#   import: agentjail image import          (an OCI layout tar of the same image)
#           podman load                      (the same tar)
#
# Every round starts from an empty store (so every layer is fetched and unpacked). Prints the
# median and the spread of each, and the ratios. ROUNDS (default 5).
set -euo pipefail
. "$(dirname "$0")/common.sh"
bench_setup
for tool in docker-registry skopeo umoci podman mmdebstrap curl; do
	command -v "$tool" >/dev/null || bench_die "needs $tool"
done
ROUNDS=${ROUNDS:-5}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
REG=127.0.0.1:$PORT
REF=$REG/bench/debian:minbase

cat >"$WORK/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $WORK/registry
http:
  addr: $REG
log:
  level: error
EOF
docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
REG_PID=$!
trap 'kill $REG_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "http://$REG/v2/" && break; sleep 0.1; done

echo "# image: Debian bookworm minbase (mmdebstrap), pushed gzipped to $REG" >&2
mmdebstrap --variant=minbase --quiet bookworm "$WORK/rootfs.tar" >&2
"$AJ" --state-dir "$WORK/seed" image import --name bench/debian:minbase "$WORK/rootfs.tar" >/dev/null
"$AJ" --state-dir "$WORK/seed" image export bench/debian:minbase "$WORK/layout.tar"
skopeo copy --quiet --dest-compress --dest-tls-verify=false "oci-archive:$WORK/layout.tar" \
	"docker://$REF"
skopeo copy --quiet --src-tls-verify=false "docker://$REF" "oci-archive:$WORK/pushed.tar:$REF"
rm -rf "$WORK/seed" "$WORK/rootfs.tar" "$WORK/layout.tar"

# ms of one run of "$@" (its output discarded), after `prep` cleared its state.
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; echo -1; return; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

aj_pull() { "$AJ" --state-dir "$WORK/aj" image pull --insecure -q "$REF"; }
skopeo_umoci() {
	skopeo copy --quiet --src-tls-verify=false "docker://$REF" "oci:$WORK/oci:minbase" &&
		umoci unpack --image "$WORK/oci:minbase" "$WORK/bundle"
}
pod() { podman --root "$WORK/pod/root" --runroot "$WORK/pod/run" --storage-driver overlay "$@"; }
podman_pull() { pod pull --quiet --tls-verify=false "$REF"; }
aj_import() { "$AJ" --state-dir "$WORK/aj" image import "$WORK/pushed.tar"; }
podman_load() { pod load --quiet -i "$WORK/pushed.tar"; }
clear_all() {
	rm -rf "$WORK/aj" "$WORK/oci" "$WORK/bundle"
	[ -d "$WORK/pod" ] && pod system reset --force >/dev/null 2>&1 || true
	rm -rf "$WORK/pod"
	mkdir -p "$WORK/aj"
}

declare -A T
names=(aj_pull skopeo_umoci podman_pull aj_import podman_load)
for r in $(seq "$ROUNDS"); do
	for n in "${names[@]}"; do
		clear_all
		T[$n]+="$(ms "$n") "
	done
	echo "# round $r of $ROUNDS done" >&2
done
clear_all

python3 - "$ROUNDS" "${T[aj_pull]}" "${T[skopeo_umoci]}" "${T[podman_pull]}" "${T[aj_import]}" \
	"${T[podman_load]}" <<'EOF'
import statistics, sys
rounds = int(sys.argv[1])
labels = ["agentjail image pull", "skopeo copy + umoci unpack", "podman pull",
          "agentjail image import", "podman load"]
vals = [[int(x) for x in a.split()] for a in sys.argv[2:]]
med = [statistics.median(v) for v in vals]
print("%-30s %8s %8s %8s   (ms, %d rounds)" % ("", "median", "min", "max", rounds))
for l, v, m in zip(labels, vals, med):
    print("%-30s %8.0f %8d %8d" % (l, m, min(v), max(v)))
print("pull:   agentjail / skopeo+umoci %.2f, agentjail / podman %.2f" % (med[0] / med[1], med[0] / med[2]))
print("import: agentjail / podman load  %.2f" % (med[3] / med[4]))
EOF
