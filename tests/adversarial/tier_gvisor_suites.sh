#!/usr/bin/env bash
# The adversarial suites again, on the gvisor tier: filesystem (fs-escape, leftovers),
# processes (host-processes), kernel surface (syscalls), network (host-network, unix-sockets),
# secrets (env-secrets) and resources (bombs). Each suite runs as it is, with AJ_ADV_TIER=gvisor
# (tests/adversarial/common.bash adds --tier gvisor to every sandbox it starts, and `want`
# picks the gvisor tier's exact answer where the Sentry answers with another errno); its lines
# are passed on prefixed with the suite's name. Skipped with the reason where the tier cannot
# run (no runsc, not root). Main pass only: the suites are long, and the sanitize pass of
# tier_gvisor.sh runs the same supervisor and launch code under the sanitizers.
# passes: main
# timeout: 1500
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/tier_gvisor.bash"
if ! is_root; then
	skip "gvisor tier suites" "the gvisor tier needs root"
	exit 0
fi
gv_require

SUITES=(fs-escape leftovers host-processes syscalls host-network unix-sockets env-secrets bombs)
for s in "${SUITES[@]}"; do
	out=$(AJ_ADV_TIER=gvisor bash "$AJ_ROOT/tests/adversarial/$s.sh" </dev/null 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed -n -e "s/^ok - /ok - gvisor $s: /p" -e "s/^not ok - /not ok - gvisor $s: /p" \
		-e 's/^#/#/p'
	printf '%s\n' "$out" | grep -qE '^(not )?ok - ' || not_ok "gvisor $s: no result (exit $rc)"
	[ "$rc" = 0 ] || not_ok "gvisor $s: exit status $rc"
done
