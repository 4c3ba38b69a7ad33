#!/usr/bin/env bash
# agentjail cp against a hostile sandbox: symlinks inside it that point at /etc/shadow, at host
# paths (absolute and by ../ climbing), at a host file the test watches, links swapped in while
# a copy runs, and special files (a FIFO). cp must never read or write a host path through
# them: the host canaries keep their contents, no host symlink is created, and the copy
# neither hangs nor leaves the sandbox unable to serve the next request.
# rootless: yes
# timeout: 240
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

H=$(mktmp)
SECRET=$H/host-secret
VICTIM=$H/host-victim
echo "HOST-SECRET-$RANDOM$RANDOM" >"$SECRET"
echo "victim-untouched" >"$VICTIM"
chmod 644 "$SECRET" "$VICTIM"
SECRET_SUM=$(sha256sum <"$SECRET")
VICTIM_SUM=$(sha256sum <"$VICTIM")
SHADOW_SUM=$(sha256sum </etc/shadow 2>/dev/null || echo unreadable)
UP=$(echo "$H" | sed 's|[^/]*|..|g; s|^/||') # enough ../ to climb from any depth of $H

victim_intact() {
	expect_eq "$1: the host victim file is untouched" "$(sha256sum <"$VICTIM")" "$VICTIM_SUM"
}
no_host_links() {
	expect_eq "$1: no symlink was created on the host" "$(find "$H" -type l | wc -l)" 0
}
no_secret_in() {
	if grep -rqs "HOST-SECRET" "$2" 2>/dev/null; then
		not_ok "$1: a host secret was read into $2"
	else
		ok "$1: no host secret was read"
	fi
}

pj_create hostile
pj_x hostile sh -c "
	ln -s /etc/shadow shadow
	ln -s '$SECRET' secret-abs
	ln -s '../../$UP$SECRET' secret-climb
	ln -s '$VICTIM' victim-abs
	ln -s '../../$UP$VICTIM' victim-climb
	ln -s /proc/1/root/etc/shadow proc-shadow
	mkdir tree && echo plain >tree/plain
	ln -s '$SECRET' tree/secret
	ln -s '$H' tree/hostdir
	ln -s '../../$UP$H' tree/hostdir-climb
	mkdir -p '$H' 2>/dev/null; true"
expect_eq "the attacker's links are in place" "$RC" 0

# ---- copying out through links -------------------------------------------------------------

for l in shadow secret-abs secret-climb proc-shadow; do
	rm -f "$H/out-$l"
	aj_run cp "hostile:/home/user/$l" "$H/out-$l"
	if [ -e "$H/out-$l" ]; then
		no_secret_in "cp out of a link ($l)" "$H/out-$l"
		check "cp out of a link ($l): not the host's /etc/shadow" \
			[ "$(sha256sum <"$H/out-$l")" != "$SHADOW_SUM" ]
	else
		ok "cp out of a link ($l): nothing copied (the target does not exist inside)"
		expect_contains "cp out of a link ($l): says so" "$ERR" "No such file"
	fi
done
no_host_links "cp out of links"

aj_run cp hostile:/home/user/tree "$H/tree-out"
no_secret_in "cp out of a directory with hostile links" "$H/tree-out"
no_host_links "cp out of a directory with hostile links"
expect_eq "cp out of a directory: the plain file came" "$(cat "$H/tree-out/plain" 2>/dev/null)" plain
check "cp out of a directory: the link to the host directory named nothing on the host" \
	[ ! -e "$H/tree-out/hostdir/host-secret" ]

# ---- copying in through links --------------------------------------------------------------

echo "payload" >"$H/payload"
for l in victim-abs victim-climb; do
	aj_run cp "$H/payload" "hostile:/home/user/$l"
	victim_intact "cp in onto a link ($l)"
done
aj_run cp "$H/payload" hostile:/home/user/shadow
if is_root; then
	expect_eq "cp in onto a link to /etc/shadow: the host's shadow is untouched" \
		"$(sha256sum </etc/shadow)" "$SHADOW_SUM"
fi
mkdir -p "$H/dir-in/sub"
echo payload >"$H/dir-in/sub/victim-abs"
LIST_BEFORE=$(find "$H" -printf '%p %s %T@\n' | sort)
for l in hostdir hostdir-climb; do
	aj_run cp "$H/dir-in" "hostile:/home/user/tree/$l"
	victim_intact "cp in of a directory onto a link to a host directory ($l)"
	expect_eq "cp in onto a link to a host directory ($l): nothing changed in it on the host" \
		"$(find "$H" -printf '%p %s %T@\n' | sort)" "$LIST_BEFORE"
done

# The destination on the host is a symlink (made by the host user): never followed.
ln -s "$VICTIM" "$H/dest-link"
pj_x hostile sh -c 'echo overwritten >plainfile'
aj_run cp hostile:/home/user/plainfile "$H/dest-link"
check "cp out onto a host symlink: refused" [ "$RC" != 0 ]
victim_intact "cp out onto a host symlink"
rm -f "$H/dest-link"

# ---- links swapped in while a copy runs ----------------------------------------------------

# The attacker flips each file of a directory between a regular file and a link to the host
# secret, for a bounded time, while the host copies the directory out and in repeatedly.
pj_x hostile sh -c 'mkdir race; for i in $(seq 1 40); do echo r$i >race/f$i; done'
"$AJ" exec hostile -- sh -c "end=\$((\$(date +%s) + 6)); while [ \$(date +%s) -lt \$end ]; do
	for i in \$(seq 1 40); do ln -sfn '$SECRET' race/f\$i.l; mv -f race/f\$i.l race/f\$i 2>/dev/null;
	echo r\$i >race/f\$i.t; mv -f race/f\$i.t race/f\$i; done; done" >/dev/null 2>&1 &
FLIP=$!
for round in 1 2 3 4 5; do
	rm -rf "$H/race-$round"
	"$AJ" cp hostile:/home/user/race "$H/race-$round" >/dev/null 2>&1
	"$AJ" cp "$H/payload" "hostile:/home/user/race/f$round" >/dev/null 2>&1
done
wait "$FLIP"
no_secret_in "copies out during a link-flipping race" "$H"/race-*
no_host_links "copies during a link-flipping race"
victim_intact "copies during a link-flipping race"
expect_eq "the host secret itself is unchanged" "$(sha256sum <"$SECRET")" "$SECRET_SUM"

# ---- special files -------------------------------------------------------------------------

pj_x hostile sh -c 'mkfifo fifo-out fifo-in'
t0=$(date +%s)
timeout 40 "$AJ" cp hostile:/home/user/fifo-out "$H/fifo-copy" >/dev/null 2>&1
t1=$(date +%s)
check "cp out of a FIFO: returns within 10 s" [ $((t1 - t0)) -lt 10 ]
check "cp out of a FIFO: no FIFO or file on the host" [ ! -p "$H/fifo-copy" ]
t0=$(date +%s)
timeout 40 "$AJ" cp "$H/payload" hostile:/home/user/fifo-in >/dev/null 2>&1
t1=$(date +%s)
check "cp in onto a FIFO nobody reads: returns within 10 s" [ $((t1 - t0)) -lt 10 ]
t0=$(date +%s%N)
aj_run exec --timeout 20s hostile -- echo still-serving
t1=$(date +%s%N)
expect_eq "after cp onto a FIFO: the sandbox still runs commands" "$OUT" still-serving
check "after cp onto a FIFO: the next exec is answered within 5 s" [ $(((t1 - t0) / 1000000)) -lt 5000 ]
