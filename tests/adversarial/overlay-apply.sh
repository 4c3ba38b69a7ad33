#!/usr/bin/env bash
# --overlay apply: the sandbox's changes are merged into the host workspace after the run, by
# agentjail, with its privileges. The attacker arranges its upper layer so that the merge
# writes outside the workspace: a symlink in the host workspace replaced by a directory of
# the same name, links to host files, special files, and changes that should not be applied
# at all because the command failed.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

# run_overlay MODE SCRIPT: the attack under --overlay MODE with a private state directory.
run_overlay() {
	local mode=$1 script=$2
	sandbox --overlay "$mode" --state-dir "$T/state" -- sh -c "$script"
}

setup_victim() {
	adv_setup
	mkdir "$T/victim"
	echo original >"$T/victim/file"
	chmod 777 "$T/victim" "$WS"
	ln -s "$T/victim" "$WS/link"
	ln -s "$T/victim/file" "$WS/filelink"
}

# The workspace's symlink "link" points outside. Inside, the attacker replaces it with a real
# directory holding "evil", and "filelink" with a file: merging must replace the host's
# symlinks, not write through them.
test_symlink_swap() {
	setup_victim
	run_overlay apply 'rm link filelink && mkdir link && echo pwned > link/evil &&
		echo pwned > filelink && echo swapped'
	expect_eq "symlink swap: exit code" "$RC" 0
	expect_contains "symlink swap: the attack ran" "$OUT" swapped
	expect_eq "symlink swap: changes applied" "$(rep 'd["changes"]["action"]')" applied
	check "host: nothing written into the symlink's target directory" test ! -e "$T/victim/evil"
	expect_eq "host: the symlink's target file unchanged" "$(cat "$T/victim/file")" original
	check "host: the workspace's link is now a plain directory" \
		bash -c '[ -d "$1" ] && [ ! -L "$1" ]' _ "$WS/link"
	check "host: the workspace's filelink is now a plain file" \
		bash -c '[ -f "$1" ] && [ ! -L "$1" ]' _ "$WS/filelink"
}

# Writing through the symlinks inside reaches nothing: the targets are not in the sandbox.
test_write_through_symlink() {
	setup_victim
	run_overlay apply 'echo pwned > link/evil; echo "dir $?"; echo pwned >> filelink;
		echo "file $?"; exit 0'
	expect_line "overlay: write through a symlinked directory fails" dir 2
	expect_line "overlay: append through a symlinked file fails" file 2
	check "host: nothing written into the symlink's target" test ! -e "$T/victim/evil"
	expect_eq "host: the target file unchanged" "$(cat "$T/victim/file")" original
}

# A failing command's changes are kept for review, not applied.
test_failed_run_not_applied() {
	setup_victim
	run_overlay apply 'echo planted > planted.txt; exit 3'
	expect_eq "failed run: exit code passed through" "$RC" 3
	expect_eq "failed run: change set kept" "$(rep 'd["changes"]["action"]')" kept
	check "host: the failed run's file is not in the workspace" test ! -e "$WS/planted.txt"
}

# Kept change sets go where every verb looks: AGENTJAIL_STATE_DIR, not the default directory.
test_state_dir_env() {
	setup_victim
	AGENTJAIL_STATE_DIR=$T/envstate sandbox --overlay review -- sh -c 'echo new > env.txt'
	expect_eq "AGENTJAIL_STATE_DIR: the run succeeded" "$RC" 0
	local n
	n=$(AGENTJAIL_STATE_DIR=$T/envstate "$AJ" changes ls --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
	expect_eq "AGENTJAIL_STATE_DIR: changes ls there lists the change set" "$n" 1
	check "AGENTJAIL_STATE_DIR: the change set is stored under it" test -d "$T/envstate"
}

# Special files made inside: a FIFO is applied as a FIFO; nothing becomes a device or a
# set-ID file on the host.
test_special_files() {
	setup_victim
	run_overlay apply 'mkfifo fifo; cp /bin/true prog && chmod 755 prog; echo made'
	expect_eq "special files: exit code" "$RC" 0
	local bad="" f
	for f in "$WS"/*; do
		[ -b "$f" ] || [ -c "$f" ] && bad="$bad ${f##*/}:device"
		[ -u "$f" ] || [ -g "$f" ] && bad="$bad ${f##*/}:setid"
	done
	expect_eq "host: no device or set-ID file applied" "${bad# }" ""
	check "host: the FIFO arrived as a FIFO" test -p "$WS/fifo"
}

test_symlink_swap
test_write_through_symlink
test_failed_run_not_applied
test_special_files
test_state_dir_env
