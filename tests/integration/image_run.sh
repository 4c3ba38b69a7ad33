#!/usr/bin/env bash
# Images as sandbox roots (docs/images.md, "Image roots"): `run --image` with the image's
# process defaults (Entrypoint, Cmd, Env, User, WorkingDir) and --user; root inside with its
# capabilities over the sandbox's own ids only; the workspace bound in; writes landing in a
# system layer that a one-shot run drops and a persistent sandbox keeps (stop and start, fork,
# diff); an image in use kept by `image rm`; bad input. Images are built with umoci from
# busybox and imported.
# rootless: yes
# timeout: 300
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/image.bash"

img_require
S=$IMG/state
WS=$(mktmp)
RF=$(rootless_flags)
ai() { aj_run --state-dir "$S" image "$@"; }
# shellcheck disable=SC2086
ar() { aj_run --state-dir "$S" run $RF -w "$WS" "$@"; }
# shellcheck disable=SC2086
as() { aj_run --state-dir "$S" "$@"; }

build() {
	img_rich "$IMG/$1" v1 "${@:3}" || { not_ok "image $2 is built"; exit 1; }
	ai import --name "$2" "$IMG/$1"
	[ "$RC" = 0 ] || { not_ok "image $2 is imported ($ERR)"; exit 1; }
}
build plain plain:1
build echo echo:1 --config.entrypoint /bin/echo --config.cmd default-arg
build user user:1 --config.user app --config.workingdir /home/app --config.env GREETING=hello

test_defaults() {
	ar --image echo:1
	expect_eq "no command: the image's Entrypoint and Cmd run" "$OUT" "default-arg"
	ar --image echo:1 -- one two
	expect_eq "a command replaces the Cmd, after the Entrypoint" "$OUT" "one two"
	ar --image plain:1 -- sh -c 'echo "$PATH|$HOME|$(id -u):$(id -g)|$(pwd)"'
	expect_eq "plain image: its PATH, root's home, root, the workspace as cwd" "$OUT" \
		"/bin|/root|0:0|$WS"
	ar --image user:1 -- sh -c 'echo "$(id -u):$(id -g)|$(pwd)|$HOME|$GREETING"'
	expect_eq "the image's User, WorkingDir and Env" "$OUT" "1000:1000|/home/app|/home/app|hello"
	ar --image user:1 -- id -G
	if is_root; then
		expect_eq "the image user's supplementary groups from its /etc/group" "$OUT" "1000 50"
	else
		expect_eq "rootless: no supplementary groups (setgroups is denied there)" "$OUT" "1000"
	fi
	ar --image user:1 -u root -- id -u
	expect_eq "--user root overrides the image's User" "$OUT" 0
	ar --image plain:1 -u 1234:5 -- sh -c 'echo $(id -u):$(id -g) $HOME $(id -un); stat -c %u $HOME'
	expect_eq "--user UID:GID the image lacks: added to its passwd as user, with a home" "$OUT" \
		"$(printf '1234:5 /home/user user\n1234')"
	ar --image plain:1 -u user -- sh -c 'echo $(id -u):$(id -g) $HOME; grep ^user: /etc/passwd'
	expect_eq "--user user (the sandbox user, as E2B asks): added with user.uid" "$OUT" \
		"$(printf '1000:1000 /home/user\nuser:x:1000:1000::/home/user:/bin/sh')"
	ar --image plain:1 -u 4321 -- id -g
	expect_eq "a uid alone the image lacks: its own group" "$OUT" 4321
	ar --image plain:1 -u nobody -- id -u
	expect_eq "--user NAME from the image's /etc/passwd" "$OUT" 65534
	ar --image plain:1 -u ghost -- true
	expect_eq "an unknown user: refused (125)" "$RC" 125
	expect_contains "naming the user and the image" "$ERR" '"ghost" is not a user of image plain:1'
	ar --image plain:1 -u app:wheel -- true
	expect_contains "an unknown group: refused, named" "$ERR" '"wheel" is not a group of image'
	ar --image plain:1 -u 'a b' -- true
	expect_contains "a malformed --user: refused, the flag named" "$ERR" "--user"
	ar --image plain:1 -- sh -c 'exit 7'
	expect_eq "the command's exit status" "$RC" 7
	ar --image plain:1 -- /bin/nonexistent
	expect_eq "a command the image lacks: 127" "$RC" 127
	ar --image plain:1
	expect_eq "no command and none in the image: refused (125)" "$RC" 125
	expect_contains "saying so" "$ERR" "neither an Entrypoint nor a Cmd"
	ar --image nope:1 -- true
	expect_eq "an image the store lacks: refused (125)" "$RC" 125
	expect_contains "named, with a hint" "$ERR" 'no image "nope:1"'
	ar --tier landlock --image plain:1 -- true
	expect_eq "the landlock tier with an image: refused (125)" "$RC" 125
	expect_contains "naming what it lacks" "$ERR" "rootfs.image needs a root of its own"
}

test_root() {
	ar --image plain:1 -- sh -c 'grep -E "^Cap(Eff|Bnd)" /proc/self/status'
	expect_eq "root inside keeps the container set but SETFCAP and FSETID (the workspace is the host's)" \
		"$OUT" "$(printf 'CapEff:\t00000000200405eb\nCapBnd:\t00000000200405eb')"
	ar --image plain:1 --preset read-only -- grep CapEff /proc/self/status
	expect_eq "with a read-only workspace: the whole set" "$OUT" "$(printf 'CapEff:\t00000000a00405fb')"
	ar --image user:1 -- grep CapEff /proc/self/status
	expect_eq "a non-root image user holds none" "$OUT" "$(printf 'CapEff:\t0000000000000000')"
	ar --image plain:1 -- sh -c 'echo changed >/etc/motd && cat /etc/motd && rm /bin/vi'
	expect_eq "root writes the image's files (into the run's system layer)" "$OUT" changed
	ar --image plain:1 -- sh -c 'cat /etc/motd; test -e /bin/vi && echo vi'
	expect_eq "the next run starts from the image again" "$OUT" "$(printf 'from the image\nvi')"
	check "the run's system layer is gone" test -z "$(ls -A "$S/images/runs")"
	ar --image plain:1 -- sh -c 'ls /; test -e /usr || echo no-usr'
	expect_eq "the root holds the image and the sandbox's mount points, nothing of the host" \
		"$OUT" "$(printf 'bin\ndev\netc\nhome\nproc\nroot\nsys\ntmp\nno-usr')"
	ar --image plain:1 -- cat /etc/resolv.conf
	expect_contains "the image's resolv.conf symlink: the sandbox's file instead" "$OUT" "no DNS"
	ar --image plain:1 -- sh -c "echo hi >$WS/out"
	expect_eq "the workspace is bound in, writable by the image's root" "$(cat "$WS/out")" hi
	expect_eq "what it writes there is the workspace owner's on the host" \
		"$(stat -c %u "$WS/out")" "$(id -u)"
	if is_root; then
		ar --image plain:1 -- sh -c 'touch /tmp/f && chown 1000:50 /tmp/f && stat -c %u:%g /tmp/f'
		expect_eq "chown to the image's ids works (they are the sandbox's own)" "$OUT" "1000:50"
	else
		ar --image plain:1 -- sh -c 'touch /tmp/f && chown 1000 /tmp/f'
		expect_eq "rootless: one id mapped, chown to another refused" "$RC" 1
	fi
}

test_persistent() {
	as create $RF --name img-p --image user:1
	expect_eq "create --image: exit 0 ($ERR)" "$RC" 0
	as exec img-p -- sh -c 'echo "$(id -u)|$(pwd)"; echo k >/workspace/k && echo s >/tmp/sys'
	expect_eq "exec runs as the image's user in its WorkingDir" "$OUT" "1000|/home/app"
	expect_eq "the workspace is a directory of the sandbox user's" "$RC" 0
	as exec -u root img-p -- sh -c 'echo "$(id -u)|$HOME|$USER"; grep CapEff /proc/self/status'
	if is_root; then
		expect_eq "exec -u root: the image's root, its HOME, the whole set" "$OUT" \
			"$(printf '0|/root|root\nCapEff:\t00000000a00405fb')"
		as exec -u nobody img-p -- id -u
		expect_eq "exec -u NAME: another user of the image" "$OUT" 65534
	else
		expect_contains "rootless: exec -u root refused, one id is mapped" "$ERR" \
			"rootless: one id is mapped"
	fi
	as exec -u ghost img-p -- true
	expect_eq "exec -u an unknown user: refused (125)" "$RC" 125
	expect_contains "naming it" "$ERR" "\"ghost\" is not in the sandbox's /etc/passwd"
	as exec -u 'x y' img-p -- true
	expect_contains "exec -u malformed: refused, the field named" "$ERR" "user: expected USER[:GROUP]"
	as stop img-p
	as start img-p
	as exec img-p -- cat /workspace/k /tmp/sys
	expect_eq "stop and start: the workspace and the system changes are kept" "$OUT" \
		"$(printf 'k\ns')"
	as inspect img-p --json
	check "the policy names the image by digest" \
		sh -c "printf '%s' '$OUT' | grep -q '\"image\": \"sha256:'"
	as stop img-p
	as fork img-p --name img-q
	as exec img-q -- cat /tmp/sys
	expect_eq "a fork has the source's system changes" "$OUT" s
	as diff img-p
	expect_contains "diff: the system change" "$OUT" "A tmp/sys"
	expect_contains "diff: the workspace file" "$OUT" "A workspace/k"
	expect_not_contains "diff: no mount point of agentjail's" "$OUT" "etc/hosts"
	expect_not_contains "diff: nothing from the image" "$OUT" "bin/"
	# A snapshot records the image its layers are the system changes of.
	as snapshot -n img-snap img-p
	as snapshots --json
	check "the snapshot names the image by digest" \
		sh -c "printf '%s' '$OUT' | grep -q '\"image\": \"sha256:'"
	# shellcheck disable=SC2086
	as create $RF --from img-snap --name img-r
	expect_eq "create --from an image sandbox's snapshot, no --image: exit 0 ($ERR)" "$RC" 0
	as exec img-r -- sh -c 'cat /tmp/sys; cat /workspace/k'
	expect_eq "it runs on the snapshot's image, with its system and workspace changes" "$OUT" \
		"$(printf 's\nk')"
	# shellcheck disable=SC2086
	as create $RF --from img-snap --image echo:1 --name img-bad
	expect_eq "create --from it on another image: refused (125)" "$RC" 125
	expect_contains "naming both" "$ERR" "holds the system changes of a sandbox on image sha256:"
	as rm -f img-p img-q img-r
	as create $RF --name host-p
	as restore host-p img-snap
	expect_eq "restore of a host-root sandbox to an image snapshot: refused (125)" "$RC" 125
	expect_contains "saying why" "$ERR" "this sandbox runs on the host's root"
	as snapshots rm img-snap
	as exec -u root host-p -- id -u
	expect_contains "exec -u root in a sandbox on the host's root: refused, it has one user" \
		"$ERR" "this sandbox has one user"
	as exec -u user host-p -- id -u
	expect_eq "exec -u naming its own user: runs" "$OUT" 1000
	as rm -f host-p
}

test_in_use() {
	local layer digest
	ai inspect plain:1
	layer=$(printf '%s' "$OUT" | json /dev/stdin 'd["layers"][-1].split(":")[1]')
	digest=$(printf '%s' "$OUT" | json /dev/stdin 'd["id"]')
	# shellcheck disable=SC2086
	"$AJ" --state-dir "$S" run $RF -w "$WS" --image plain:1 -- sleep 60 >/dev/null 2>&1 &
	local pid=$!
	wait_until 20 sh -c "ls -A '$S/images/runs' | grep -q ."
	ai rm plain:1
	expect_eq "rm of an image a run uses: the name goes (exit 0)" "$RC" 0
	expect_contains "the image stays while the run uses it" "$ERR" "used by a running agentjail run"
	ai prune
	ai inspect "$digest"
	expect_eq "prune keeps an image a run uses" "$RC" 0
	check "and its layer" test -d "$S/images/layers/$layer"
	kill "$pid"
	wait "$pid" 2>/dev/null
	ai prune
	ai inspect "$digest"
	expect_eq "once the run is gone, prune takes the image (inspect: 1, not found)" "$RC" 1
	ai ls --json
	if [ "$(printf '%s' "$OUT" | json /dev/stdin "sum('$layer' in str(i['layers']) for i in d)")" = 0 ]; then
		check "and its layer, which no other image stacks" test ! -e "$S/images/layers/$layer"
	else
		check "and keeps its layer, which another image stacks" test -d "$S/images/layers/$layer"
	fi
}

test_defaults
test_root
test_persistent
test_in_use
