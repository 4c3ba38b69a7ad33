#!/usr/bin/env bash
# The caller's stdin reaches the sandbox. When it is a host file outside the workspace
# (`agentjail run -- cmd < input`) or a host directory, what the sandbox gets is the only handle
# the attacker has on it: it may read through it, nothing more — no reopening for writing
# through /proc/self/fd, no mode, timestamp or xattr changes, no walking from it.
# A file the sandbox's user would own (rootless: every file of the caller's) is not handed in
# at all but relayed through a pipe, since ownership alone allows fchmod, futimens and xattrs.
# rootless: yes
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/adversarial/common.bash"

ON_FILE='
import errno, os, stat
print("kind", "fifo" if stat.S_ISFIFO(os.fstat(0).st_mode) else "file")
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
t("read", lambda: os.read(0, 100).decode().strip())
t("write", lambda: os.write(0, b"pwned"))
t("reopen-write", lambda: open("/proc/self/fd/0", "w").write("pwned"))
t("reopen-append", lambda: open("/dev/stdin", "a").write("pwned"))
t("fchmod", lambda: os.fchmod(0, 0o666))
t("futimens", lambda: os.utime(0, (0, 0)))
t("fsetxattr", lambda: os.setxattr(0, "user.pwned", b"1"))
t("ftruncate", lambda: os.ftruncate(0, 0))
'

# The directory arrives on descriptor 3 (stdin itself is reset, as a shell would need it).
ON_DIR='
import errno, os, stat
isdir = stat.S_ISDIR(os.fstat(3).st_mode)
print("isdir", "yes" if isdir else "no")
if not isdir:
    raise SystemExit(0)
def t(name, fn):
    try:
        r = fn()
        print(name, "OK" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def read_at(p):
    fd = os.open(p, os.O_RDONLY, dir_fd=3)
    try:
        return os.read(fd, 100).decode().strip()
    finally:
        os.close(fd)
t("open-read", lambda: read_at("secret"))
t("open-write", lambda: os.open("secret", os.O_WRONLY | os.O_TRUNC, dir_fd=3))
t("create", lambda: os.open("planted", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=3))
t("mkdir", lambda: os.mkdir("evil", dir_fd=3))
t("unlink", lambda: os.unlink("secret", dir_fd=3))
t("rename-in", lambda: os.rename("victim", "planted2", dst_dir_fd=3))
t("up-read", lambda: read_at("../outside/secret"))
os.fchdir(3)  # allowed: a working directory grants nothing by itself
t("cwd-read", lambda: open("secret").read())
t("cwd-up-read", lambda: open("../outside/secret").read())
t("proc-fd", lambda: os.listdir("/proc/self/fd/3/.."))
'

test_stdin_file() {
	adv_setup
	mkdir "$T/outside"
	echo "caller-input" >"$T/outside/input"
	chmod 600 "$T/outside/input"
	touch -d '2001-01-01 00:00:00' "$T/outside/input"
	local before
	before=$(stat -c '%a %Y %s' "$T/outside/input")
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) -- python3 -c "$ON_FILE" \
		<"$T/outside/input" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	expect_eq "stdin file: exit code" "$RC" 0
	expect_line "stdin file: readable through the descriptor (control)" read caller-input
	if is_rootless_pass; then
		# The caller owns the file and is the sandbox's user: only a relay is safe.
		expect_line "stdin file: the caller's own file arrives relayed, as a pipe" kind fifo
	else
		expect_line "stdin file: the file itself is handed in (not the caller's)" kind file
		expect_line "stdin file: write on the read-only descriptor: EBADF" write EBADF
		expect_line "stdin file: reopen for writing via /proc/self/fd/0: EACCES" \
			reopen-write EACCES
		expect_line "stdin file: reopen for appending via /dev/stdin: EACCES" \
			reopen-append EACCES
		expect_line "stdin file: fchmod refused" fchmod EPERM
		expect_line "stdin file: futimens refused" futimens EPERM
		expect_line_in "stdin file: fsetxattr refused" fsetxattr EPERM EACCES
		expect_line_in "stdin file: ftruncate refused" ftruncate EINVAL EBADF
	fi
	expect_eq "host: mode, mtime and size of the input unchanged" \
		"$(stat -c '%a %Y %s' "$T/outside/input")" "$before"
	expect_eq "host: input content unchanged" "$(cat "$T/outside/input")" caller-input
}

test_stdin_dir() {
	adv_setup
	mkdir "$T/outside" "$T/hostdir"
	echo "host-secret" >"$T/hostdir/secret"
	echo "outside-secret" >"$T/outside/secret"
	echo victim >"$WS/victim"
	chmod 777 "$T/hostdir" "$WS"
	chmod 666 "$T/hostdir/secret"
	"$AJ" run -w "$WS" --report "$REPORT" $(rootless_flags) -- \
		sh -c 'exec 3<&0 0</dev/null; exec python3 -c "$1"' _ "$ON_DIR" \
		<"$T/hostdir" >"$T/out" 2>"$T/err"
	RC=$?
	OUT=$(cat "$T/out")
	ERR=$(cat "$T/err")
	# Refusing such a stdin, or not handing the directory in, is as good as containing it.
	if [ "$RC" = 125 ] && [ -z "$OUT" ]; then
		ok "stdin dir: a directory as stdin is refused (exit 125)"
		expect_contains "stdin dir: the refusal names stdin" "$ERR" "stdin"
	elif [ "$(line_of isdir)" = no ]; then
		expect_eq "stdin dir: exit code" "$RC" 0
		ok "stdin dir: the directory is not handed in as stdin"
	else
		expect_dir_contained
	fi
	expect_eq "host: the directory holds only its secret" "$(ls -A "$T/hostdir")" secret
	expect_eq "host: secret unchanged" "$(cat "$T/hostdir/secret")" host-secret
}

expect_dir_contained() {
	expect_eq "stdin dir: exit code" "$RC" 0
	expect_line "stdin dir: open a file below it for reading: EACCES" open-read EACCES
	expect_line "stdin dir: open a file below it for writing: EACCES" open-write EACCES
	expect_line "stdin dir: create a file in it: EACCES" create EACCES
	expect_line "stdin dir: mkdir in it: EACCES" mkdir EACCES
	expect_line "stdin dir: unlink in it: EACCES" unlink EACCES
	expect_line_in "stdin dir: move a workspace file into it: refused" rename-in EXDEV EACCES
	expect_line "stdin dir: read a sibling through ..: EACCES" up-read EACCES
	expect_line "stdin dir: list its parent through /proc/self/fd: EACCES" proc-fd EACCES
	expect_line "stdin dir: as working directory, read a file in it: EACCES" cwd-read EACCES
	expect_line "stdin dir: as working directory, read through ..: EACCES" cwd-up-read EACCES
}

test_stdin_file
test_stdin_dir
