#!/usr/bin/env bash
# make install PREFIX=/usr/local DESTDIR=tree: the binary, the manual pages, the completions
# where bash-completion, zsh and fish look, the systemd unit of agentjail serve (its ExecStart
# the installed binary), the tmpfiles.d entry and the demo; the installed binary works, man
# finds its pages by name, bash-completion's loader finds its completion; make uninstall takes
# it all away again. Nothing outside the temporary tree is written.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"

if ! command -v make >/dev/null || ! command -v install >/dev/null; then
	skip "make install" "make or install(1) is not installed"
	exit 0
fi
T=$(mktmp)
D=$T/dest
MK=(make -s -C "$AJ_ROOT" BUILD="$AJ_BUILD")
[ "$AJ_PASS" = sanitize ] && MK+=(SAN=1)
# The tree is built already; make install must not need to build anything (the rootless pass
# cannot write to the build directory).
BUILT=("$AJ_BUILD/agentjail" "$AJ_BUILD/man/.stamp" "$AJ_BUILD/completions/agentjail.bash"
	"$AJ_BUILD/completions/_agentjail" "$AJ_BUILD/completions/agentjail.fish")
if ! "${MK[@]}" -q "${BUILT[@]}" 2>/dev/null; then
	if [ "$AJ_PASS" = rootless ]; then
		skip "make install" "the build in $AJ_BUILD is not up to date (make all first)"
		exit 0
	fi
	"${MK[@]}" man completions >/dev/null 2>&1
fi

out=$("${MK[@]}" install PREFIX=/usr/local DESTDIR="$D" 2>&1)
expect_eq "make install DESTDIR: exit 0" "$?" 0
P=$D/usr/local
for f in bin/agentjail share/man/man1/agentjail.1 share/man/man1/agentjail-run.1 \
	share/man/man1/agentjail-logs.1 share/bash-completion/completions/agentjail \
	share/zsh/vendor-completions/_agentjail share/fish/vendor_completions.d/agentjail.fish \
	lib/systemd/system/agentjail.service lib/tmpfiles.d/agentjail.conf share/agentjail/demo; do
	check "installed: $f" test -f "$P/$f"
done
expect_eq "the binary is executable, the rest not" \
	"$(stat -c %a "$P/bin/agentjail") $(stat -c %a "$P/share/man/man1/agentjail-run.1") $(stat -c %a "$P/lib/systemd/system/agentjail.service")" \
	"755 644 644"
expect_eq "nothing outside PREFIX" "$(cd "$D" && ls)" usr
expect_eq "the installed binary is the build's" "$(cmp -s "$P/bin/agentjail" "$AJ_BUILD/agentjail" && echo same)" same
expect_eq "a page per command" "$(ls "$P/share/man/man1" | wc -l)" "$(ls "$AJ_BUILD/man"/*.1 | wc -l)"

U=$P/lib/systemd/system/agentjail.service
expect_contains "the unit runs the installed binary" "$(cat "$U")" "ExecStart=/usr/local/bin/agentjail serve"
expect_contains "the unit leaves the sandboxes' supervisors running" "$(cat "$U")" "KillMode=process"
expect_not_contains "no placeholder is left" "$(cat "$U")" "@"
if command -v systemd-analyze >/dev/null; then
	# Installed without DESTDIR under a prefix of the test's, so that ExecStart exists.
	"${MK[@]}" install PREFIX="$T/pfx" >/dev/null 2>&1
	v=$(systemd-analyze verify --man=no "$T/pfx/lib/systemd/system/agentjail.service" 2>&1)
	expect_eq "systemd-analyze verify: the unit is valid" "$v" ""
else
	skip "systemd-analyze verify" "systemd-analyze is not installed"
fi
expect_contains "tmpfiles.d: the state directory" "$(cat "$P/lib/tmpfiles.d/agentjail.conf")" "d /var/lib/agentjail 0700 root root"
expect_contains "tmpfiles.d: the runtime directory" "$(cat "$P/lib/tmpfiles.d/agentjail.conf")" "d /run/agentjail 0700 root root"

aj_run version
V=$OUT
expect_eq "the installed binary runs" "$("$P/bin/agentjail" version)" "$V"
"$P/bin/agentjail" features --json >"$T/f.json"
V=${V#agentjail }
expect_eq "the installed binary: features --json" "$(json "$T/f.json" 'd["agentjail"]')" "${V%% *}"

if command -v man >/dev/null; then
	expect_contains "man finds agentjail-run by name in the installed tree" \
		"$(MANPATH=$P/share/man MANWIDTH=100 LC_ALL=C man agentjail-run 2>&1)" "agentjail-run - run a command in a new sandbox"
	expect_contains "man -l of an installed page" "$(MANWIDTH=100 LC_ALL=C man -l "$P/share/man/man1/agentjail-logs.1" 2>&1)" "--follow"
else
	skip "man of the installed pages" "man (man-db) is not installed"
fi
if [ -f /usr/share/bash-completion/bash_completion ]; then
	expect_eq "bash-completion's loader finds the installed completion" \
		"$(XDG_DATA_DIRS=$P/share bash --norc --noprofile -c '. /usr/share/bash-completion/bash_completion; _completion_loader agentjail; complete -p agentjail' 2>&1)" \
		"complete -F _agentjail agentjail"
else
	skip "bash-completion's loader" "bash-completion is not installed"
fi

out=$("${MK[@]}" uninstall PREFIX=/usr/local DESTDIR="$D" 2>&1)
expect_eq "make uninstall: exit 0" "$?" 0
expect_eq "make uninstall: no file left" "$(find "$D" -type f | sed "s|^$D||" | grep -v '^/usr/local/bin/$')" ""

# PREFIX=/usr, as the Debian package installs.
"${MK[@]}" install PREFIX=/usr DESTDIR="$T/usr-tree" >/dev/null 2>&1
expect_contains "PREFIX=/usr: the unit runs /usr/bin/agentjail" \
	"$(cat "$T/usr-tree/usr/lib/systemd/system/agentjail.service" 2>&1)" "ExecStart=/usr/bin/agentjail serve"
