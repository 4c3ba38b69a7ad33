#!/usr/bin/env bash
# The Debian package: built from the tree by `make deb` (dpkg-buildpackage on debian/, in a copy
# of the tracked files), its contents checked with dpkg-deb -c, installed with dpkg --root into
# an empty directory tree (a dpkg database of its own: the machine's stays as it was), and run
# from there: features, run -- true, its manual pages, its bash completion, and the package's
# own test (debian/tests/smoke: the demo included). Removed again with dpkg --root -r.
# Main pass only: the package is built from the sources whatever binary a pass tests, and
# dpkg --root must run as root to install files owned by root.
# passes: main
# timeout: 1500
. "$AJ_ROOT/tests/lib.sh"

for t in dpkg-buildpackage dpkg-deb dh fakeroot git; do
	if ! command -v "$t" >/dev/null; then
		skip "the Debian package" "$t is not installed (scripts/install-deps installs it)"
		exit 0
	fi
done
if ! is_root; then
	skip "the Debian package" "dpkg --root needs root"
	exit 0
fi
if ! git -C "$AJ_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	skip "the Debian package" "make deb packages the tracked files: $AJ_ROOT is not a git checkout"
	exit 0
fi

T=$(mktmp)
HOST_DB=$(md5sum /var/lib/dpkg/status | cut -d' ' -f1)
nice make -s -C "$AJ_ROOT" deb BUILD="$T/b" >"$T/build.log" 2>&1
rc=$?
expect_eq "make deb: exit 0" "$rc" 0
DEB=$(ls "$T"/b/deb/agentjail_*.deb 2>/dev/null | head -1)
if [ "$rc" != 0 ] || [ -z "$DEB" ]; then
	not_ok "make deb made no package: $(tail -20 "$T/build.log" | tr '\n' ' ' | head -c 1500)"
	exit 0
fi
ok "the package: $(basename "$DEB")"

# ---- its contents ------------------------------------------------------------------------------

C=$(dpkg-deb -c "$DEB" | awk '{print $1, $6}')
for f in ./usr/bin/agentjail ./usr/share/man/man1/agentjail.1.gz ./usr/share/man/man1/agentjail-run.1.gz \
	./usr/share/man/man1/agentjail-logs.1.gz ./usr/share/bash-completion/completions/agentjail \
	./usr/share/zsh/vendor-completions/_agentjail ./usr/share/fish/vendor_completions.d/agentjail.fish \
	./usr/lib/systemd/system/agentjail.service ./usr/lib/tmpfiles.d/agentjail.conf \
	./usr/share/agentjail/demo ./usr/share/doc/agentjail/copyright ./usr/share/doc/agentjail/cli.md.gz; do
	expect_contains "dpkg-deb -c: $f" "$C" " $f"
done
expect_contains "dpkg-deb -c: the binary is executable" "$C" "-rwxr-xr-x ./usr/bin/agentjail"
expect_eq "dpkg-deb -c: a page per command" "$(printf '%s\n' "$C" | grep -c 'man1/agentjail-.*\.1\.gz$')" \
	"$("$AJ" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' | wc -l)"
expect_eq "dpkg-deb -c: nothing outside /usr" "$(printf '%s\n' "$C" | awk '{print $2}' | grep -v '^\./$' | grep -v '^\./usr/')" ""
I=$(dpkg-deb -I "$DEB")
expect_contains "dpkg-deb -I: the package's name" "$I" "Package: agentjail"
# The libraries linked in add nothing; OpenSSL and libcurl are loaded at their first use.
D=$(printf '%s\n' "$I" | grep '^ Depends:')
expect_eq "dpkg-deb -I: its dependencies: the C library, libssl3 and libcurl4 ($D)" \
	"$(printf '%s' "$D" | sed -E 's/ \([^)]*\)//g')" \
	" Depends: libc6, libssl3 | libssl3t64, libcurl4 | libcurl4t64"
expect_eq "the package has no maintainer scripts" "$(dpkg-deb -I "$DEB" | grep -cE '^ +[0-9]+ bytes, +[0-9]+ lines +\*? *(pre|post)(inst|rm)')" 0
expect_contains "the unit runs /usr/bin/agentjail" "$(dpkg-deb --fsys-tarfile "$DEB" | tar -xOf - ./usr/lib/systemd/system/agentjail.service)" \
	"ExecStart=/usr/bin/agentjail serve"

# ---- installed into an empty tree ----------------------------------------------------------------

R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates"
touch "$R/var/lib/dpkg/status"
# The tree has no libc6 package (only its own database is used): its dependency is forced.
out=$(dpkg --root="$R" --force-depends --log=/dev/null -i "$DEB" 2>&1)
expect_eq "dpkg --root -i: exit 0 ($(printf '%s' "$out" | tail -1))" "$?" 0
expect_contains "the tree's database has it installed" "$(dpkg --root="$R" -l agentjail 2>&1)" "ii  agentjail"
expect_eq "the machine's package database is untouched" "$(md5sum /var/lib/dpkg/status | cut -d' ' -f1)" "$HOST_DB"
check "the machine has no agentjail package" sh -c '! dpkg -s agentjail >/dev/null 2>&1'

"$R/usr/bin/agentjail" features --json >"$T/f.json" 2>"$T/f.err"
expect_eq "the installed agentjail features: exit 0" "$?" 0
expect_eq "the installed agentjail features --json: its mode" "$(json "$T/f.json" 'd["mode"]')" privileged
"$R/usr/bin/agentjail" features >"$T/f.txt" 2>&1
expect_contains "the installed agentjail features: text" "$(cat "$T/f.txt")" "landlock"
W=$(mktmp)
(cd "$W" && "$R/usr/bin/agentjail" run -- true)
expect_eq "the installed agentjail run -- true: exit 0" "$?" 0
(cd "$W" && "$R/usr/bin/agentjail" run -- sh -c 'exit 7')
expect_eq "the installed agentjail run: the command's exit code" "$?" 7
if command -v man >/dev/null; then
	expect_contains "man -l of an installed page (gzip)" \
		"$(MANWIDTH=100 LC_ALL=C man -l "$R/usr/share/man/man1/agentjail-run.1.gz" 2>&1)" "agentjail-run - run a command in a new sandbox"
	expect_contains "man finds it by name in the tree" \
		"$(MANPATH=$R/usr/share/man MANWIDTH=100 LC_ALL=C man agentjail-top 2>&1)" "agentjail-top - list a running sandbox's processes"
fi
expect_eq "its bash completion loads" \
	"$(bash --norc --noprofile -c ". '$R/usr/share/bash-completion/completions/agentjail'; complete -p agentjail")" \
	"complete -F _agentjail agentjail"

# The package's own test, as autopkgtest runs it (here against the tree).
out=$(cd "$W" && AGENTJAIL_ROOT=$R "$AJ_ROOT/debian/tests/smoke" 2>&1)
rc=$?
expect_eq "debian/tests/smoke (run, features, the demo): exit 0" "$rc" 0
expect_contains "... the demo ran the installed binary to the end" "$out" "== agentjail exited with 0; the report says:"
expect_not_contains "... every breach blocked" "$out" "ALLOWED"

out=$(dpkg --root="$R" --log=/dev/null -r agentjail 2>&1)
expect_eq "dpkg --root -r: exit 0" "$?" 0
expect_eq "dpkg --root -r: its files are gone" "$(find "$R" -path "$R/var/lib/dpkg" -prune -o -type f -print)" ""
expect_eq "the machine's package database is still untouched" "$(md5sum /var/lib/dpkg/status | cut -d' ' -f1)" "$HOST_DB"
