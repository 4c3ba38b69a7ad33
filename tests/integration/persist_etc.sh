#!/usr/bin/env bash
# Persistent sandboxes share one /etc per distinct content (src/supervisor/etc_share.c): what
# a sandbox sees there is what a one-shot run's own tmpfs holds (names, modes, owners, sizes,
# contents), read-only; sandboxes with the same /etc bind the same files; another hostname
# makes another directory; a directory no running sandbox holds goes when a new one is
# written, with what a crashed writer left; the supervisor's lock never reaches the sandbox.
# rootless: yes
# timeout: 150
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup

# What /etc holds, one line per entry: path, type and mode, owners, size of what is not a
# directory, and a checksum of the files (the bound host directories' sizes are the host's).
LIST='cd /etc && for f in * ssh/*; do
	if [ -L "$f" ]; then echo "$f link $(readlink "$f")"
	elif [ -d "$f" ]; then echo "$f $(stat -c "%A %u %g" "$f")"
	else echo "$f $(stat -c "%A %u %g %s" "$f") $(cksum <"$f" | cut -d" " -f1)"; fi
done'
etc_dirs() { find "$STATE/etc" -mindepth 1 -maxdepth 1 -name '[0-9a-f]*' | wc -l; }

aj_run run $PJ_FLAGS --hostname shared -- sh -c "$LIST"
expect_eq "a one-shot run lists its /etc" "$RC" 0
oneshot=$OUT
aj_run run $PJ_FLAGS -- stat -f -c %T /etc
expect_eq "a one-shot run keeps its own tmpfs /etc" "$OUT" "tmpfs"

pj_create a1 --hostname shared
pj_create a2 --hostname shared
pj_x a1 sh -c "$LIST"
expect_eq "a persistent sandbox's /etc: the same entries, modes, owners and contents as a one-shot run's" "$OUT" "$oneshot"
check "... and it is not empty" [ "$(printf '%s\n' "$OUT" | grep -c ' -rw-r--r-- ')" -ge 5 ]
pj_x a1 stat -f -c %T /etc
check "... no tmpfs of its own ($OUT)" [ "$RC" = 0 ] && [ "$OUT" != tmpfs ]
# The directory a supervisor holds (its lock), as a path.
held_dir() {
	local f
	for f in /proc/"$1"/fd/*; do
		case "$(readlink "$f")" in "$STATE"/etc/*) readlink "$f" ;; esac
	done
}
d1=$(held_dir "$(pj_field a1 'd["supervisor_pid"]')")
d2=$(held_dir "$(pj_field a2 'd["supervisor_pid"]')")
check "two sandboxes with the same /etc use the same directory ($d1)" [ -n "$d1" ] && [ "$d1" = "$d2" ]
expect_eq "one directory for both" "$(etc_dirs)" 1
pj_x a1 sh -c 'grep " /etc " /proc/self/mountinfo'
check "/etc is one mount ($OUT)" [ "$(printf '%s\n' "$OUT" | grep -c .)" = 1 ]
expect_not_contains "... whose line in the mount table does not name the state directory" "$OUT" "$STATE"
pj_x a1 cat /etc/hostname
expect_eq "the hostname file is the policy's" "$OUT" "shared"

# Read-only, to the sandbox's root too where it has one.
pj_x a1 sh -c 'echo x >/etc/passwd; echo x >/etc/new; rm -f /etc/hostname; ls /etc/new'
check "nothing in /etc can be written, made or removed" [ "$RC" != 0 ]
expect_eq "... each refused" "$(printf '%s\n' "$ERR" | grep -c 'Read-only file system')" 3
pj_x a2 sh -c 'grep -c x /etc/hostname; cat /etc/hostname'
expect_eq "... and the other sandbox's /etc is as it was" "$OUT" "0
shared"
check "... nor can the host's copy be written by the sandbox's user" \
	[ "$(stat -c %a "$(find "$STATE/etc" -mindepth 1 -maxdepth 1 -name '[0-9a-f]*')")" = 755 ]

# The lock on the directory is the supervisor's: no descriptor of the host's state reaches
# the sandbox.
init=$(pj_init_pid a1)
sup=$(pj_field a1 'd["supervisor_pid"]')
held() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c -- "$STATE/etc"; }
expect_eq "the supervisor holds the directory it uses" "$(held "$sup")" 1
check "... the sandbox's init holds nothing of it (pid ${init:-none})" \
	[ -n "$init" ] && [ "$(held "$init")" = 0 ]

# Masks and grants below /etc are made over the shared directory as over a tmpfs.
pj_create m1 --hostname shared --mask /etc/gitconfig --mask /etc/debian_version
pj_x m1 sh -c 'cat /etc/gitconfig; cat /etc/debian_version; cat /etc/hostname'
expect_eq "masks below the shared /etc hide the files (they cannot be read, as in a tmpfs)" \
	"$(printf '%s\n' "$ERR" | grep -c 'Permission denied')" 2
expect_eq "... and the rest is there" "$OUT" "shared"
expect_eq "... in the same directory as the others" "$(etc_dirs)" 1

# Another /etc, another directory; one nobody holds goes when a new one is written, with a
# crashed writer's leftovers.
pj_create b1 --hostname other
pj_x b1 cat /etc/hostname
expect_eq "another hostname: its own file" "$OUT" "other"
expect_eq "... in a directory of its own" "$(etc_dirs)" 2
aj_run stop b1
expect_eq "stop b1" "$RC" 0
mkdir -p "$STATE/etc/.tmp-999999-crashed/sub"
touch -d '1 hour ago' "$STATE/etc/.tmp-999999-crashed"
mkdir -p "$STATE/etc/.tmp-999998-writing"
pj_create c1 --hostname third
expect_eq "writing a new one removed the one no running sandbox held" "$(etc_dirs)" 2
check "... and a crashed writer's leftovers" [ ! -e "$STATE/etc/.tmp-999999-crashed" ]
check "... but not a write that may still be going on" [ -d "$STATE/etc/.tmp-999998-writing" ]
pj_x a2 cat /etc/hostname
expect_eq "the held one stays, and its sandboxes read it" "$OUT" "shared"
aj_run start b1
expect_eq "start b1 again" "$RC" 0
pj_x b1 cat /etc/hostname /etc/passwd
expect_contains "... its /etc is written again" "$OUT" "other"
expect_eq "three directories, each held" "$(etc_dirs)" 3


# gc removes what no running sandbox holds; a start writes it again.
aj_run stop c1
expect_eq "stop c1" "$RC" 0
aj_run gc
expect_eq "gc" "$RC" 0
expect_eq "gc removed the directory of the stopped sandbox alone" "$(etc_dirs)" 2
pj_x a2 cat /etc/hostname
expect_eq "... the others' sandboxes still read theirs" "$OUT" "shared"
aj_run start c1
pj_x c1 cat /etc/hostname
expect_eq "a start after gc writes it again" "$OUT" "third"

# A directory just written is locked before it has its name: creates racing with gc (and with
# each other's prunes) all share, none falls back to a tmpfs of its own.
gc_loop() { for _ in $(seq 200); do "$AJ" gc --state-dir "$STATE" >/dev/null 2>&1; done; }
gc_loop &
GC_PID=$!
pids=()
for i in $(seq 12); do
	"$AJ" create --name "r$i" --hostname "race$i" $PJ_FLAGS >"$STATE/../race$i.out" \
		2>"$STATE/../race$i.err" </dev/null &
	pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
kill "$GC_PID" 2>/dev/null
wait "$GC_PID" 2>/dev/null
expect_eq "12 creates racing with gc: all started" "$fails" 0
expect_eq "... none fell back to an /etc of its own" \
	"$(cat "$STATE"/../race*.err | grep -c "its own /etc")" 0
own=0
for i in $(seq 12); do
	pj_x "r$i" sh -c 'grep " /etc " /proc/self/mountinfo | grep -c overlay'
	[ "$OUT" = 1 ] || own=$((own + 1))
	aj_run rm -f "r$i"
done
expect_eq "... each one's /etc is the shared overlay" "$own" 0
check "the state directory's etc is the owner's alone (0700)" \
	[ "$(stat -c %a "$STATE/etc")" = 700 ]
