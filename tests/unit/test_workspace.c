/* The workspace module on trees made in a temporary directory: layer storage (sandbox
 * directories, layers published from an upper by copy and by move, squash, locks, leftovers,
 * the files of an in-place restore, removal that never follows a symlink) and both diff
 * engines (an upper over its lowers, a sandbox's stack over its base), with whiteouts, opaque
 * directories and symlinks that must be entries, never ways out of the tree. Whiteouts need
 * CAP_MKNOD and opaque directories user xattrs: without them those checks are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/strv.h"
#include "common/tree.h"
#include "workspace/diff.h"
#include "workspace/layers.h"
#include "unit.h"

/* Ids as the manager makes them (16 hex digits): aj_ws_dir_ids() knows no others. */
#define SB "5b00000000000001"
#define TMP "7e00000000000001"
#define LCK "10c0000000000001"

static char root[64], stdir[128];
static bool can_whiteout, can_opaque;

static const char *at(const char *rel)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", root, rel);
	return b;
}

static int put(const char *rel, const char *text)
{
	FILE *f = fopen(at(rel), "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static bool has_text(const char *rel, const char *text)
{
	char buf[256] = {0};
	FILE *f = fopen(at(rel), "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

static bool exists(const char *rel)
{
	struct stat st;
	return lstat(at(rel), &st) == 0;
}

static int dir(const char *rel)
{
	return mkdir(at(rel), 0755);
}

static int whiteout(const char *rel)
{
	return mknod(at(rel), S_IFCHR | 0600, makedev(0, 0));
}

static int opaque(const char *rel)
{
	return setxattr(at(rel), AJ_OVL_OPAQUE_XATTR, "y", 1, 0);
}

static void probe(void)
{
	can_whiteout = whiteout("probe-wh") == 0;
	can_opaque = dir("probe-op") == 0 && opaque("probe-op") == 0;
	unlink(at("probe-wh"));
	rmdir(at("probe-op"));
}

/* ---- layer storage ------------------------------------------------------------------- */

static void paths(void)
{
	char buf[64], tiny[8];

	CHECK(aj_ws_path(buf, sizeof buf, "/st", "sandboxes", "abc", "upper") == 0 &&
		      !strcmp(buf, "/st/sandboxes/abc/upper"),
	      "a path below the state directory");
	CHECK(aj_ws_path(buf, sizeof buf, "/st", "layers", "L", NULL) == 0 &&
		      !strcmp(buf, "/st/layers/L"),
	      "a path without a sub-path");
	CHECK(aj_ws_path(tiny, sizeof tiny, "/st", "layers", "L", NULL) < 0,
	      "a path that does not fit is an error, not a truncation");
}

static void sandbox_dirs(const char *st)
{
	struct stat up, wk;
	struct aj_err err;
	uid_t uid = geteuid() == 0 ? 1234 : geteuid();

	CHECK(aj_ws_sandbox_create(st, SB, uid, uid, &err) == 0, "a sandbox's directories");
	CHECK(stat(at("st/sandboxes/" SB "/upper"), &up) == 0 && S_ISDIR(up.st_mode) &&
		      (up.st_mode & 07777) == 0755 && up.st_uid == uid,
	      "its upper: 0755, owned by the sandbox's ids");
	CHECK(stat(at("st/sandboxes/" SB "/work"), &wk) == 0 && (wk.st_mode & 07777) == 0700,
	      "its work directory: 0700");
	CHECK(aj_ws_sandbox_has_upper(st, SB) && !aj_ws_sandbox_has_upper(st, "nope"),
	      "has_upper tells a sandbox with an upper");
	CHECK(aj_ws_sandbox_create(st, SB, uid, uid, &err) < 0 && err.errnum == EEXIST,
	      "made once (EEXIST)");
}

static void publish(const char *st)
{
	struct aj_err err;
	struct stat ls, us;
	uint64_t bytes = 0;
	uid_t uid = geteuid() == 0 ? 1234 : geteuid();

	put("st/sandboxes/" SB "/upper/file", "12345");
	dir("st/sandboxes/" SB "/upper/d");
	put("st/sandboxes/" SB "/upper/d/inner", "abc");
	CHECK(aj_ws_layer_from_upper(st, SB, "L1", false, uid, uid, &bytes, &err) == 0,
	      "a layer copied from a running sandbox's upper");
	CHECK(has_text("st/layers/L1/file", "12345") && has_text("st/layers/L1/d/inner", "abc"),
	      "it holds the upper's files");
	CHECK(bytes == 8, "the bytes copied are counted (%llu)", (unsigned long long)bytes);
	CHECK(has_text("st/sandboxes/" SB "/upper/file", "12345"), "the upper keeps them");
	CHECK(!exists("st/layers/.tmp-L1"), "no .tmp- directory is left");
	CHECK(stat(at("st/layers/L1"), &ls) == 0 &&
		      stat(at("st/sandboxes/" SB "/upper"), &us) == 0 &&
		      ls.st_uid == us.st_uid && (ls.st_mode & 07777) == (us.st_mode & 07777),
	      "the layer's root has the upper's owner and mode");

	CHECK(aj_ws_layer_from_upper(st, SB, "L1", false, uid, uid, NULL, &err) < 0 &&
		      err.layer == AJ_LAYER_STATE,
	      "publishing over an existing layer fails");
	CHECK(!exists("st/layers/.tmp-L1") && has_text("st/layers/L1/file", "12345"),
	      "and removes its .tmp- directory, leaving the layer as it was");

	bytes = 0;
	CHECK(aj_ws_layer_from_upper(st, SB, "L2", true, uid, uid, &bytes, &err) == 0,
	      "a layer moved from a stopped sandbox's upper");
	CHECK(has_text("st/layers/L2/d/inner", "abc"), "it holds the files");
	/* Counted as disk usage (blocks) when moved, as bytes copied when copied. */
	CHECK(bytes >= 8, "its size is counted (%llu)", (unsigned long long)bytes);
	CHECK(stat(at("st/sandboxes/" SB "/upper"), &us) == 0 && us.st_uid == uid &&
		      !exists("st/sandboxes/" SB "/upper/file"),
	      "a fresh empty upper owned by the sandbox takes its place");
}

static void squash(const char *st)
{
	struct aj_strv stack = {0};
	struct aj_err err;

	dir("st/layers/L3");
	put("st/layers/L3/added", "new");
	put("st/layers/L3/file", "changed");
	if (can_whiteout)
		whiteout("st/layers/L3/d");
	aj_strv_push(&stack, "L1");
	aj_strv_push(&stack, "L3");
	CHECK(aj_ws_layer_squash(st, &stack, "S1", &err) == 0, "two layers squashed into one");
	CHECK(has_text("st/layers/S1/added", "new") && has_text("st/layers/S1/file", "changed"),
	      "the upper layer's files win");
	if (can_whiteout)
		CHECK(!exists("st/layers/S1/d"), "a whiteout deletes what is below it");
	else
		printf("ok - a whiteout deletes what is below it # SKIP no CAP_MKNOD\n");
	CHECK(!exists("st/layers/.tmp-S1"), "no .tmp- directory is left");
	aj_strv_clear(&stack);
	aj_strv_push(&stack, "missing");
	CHECK(aj_ws_layer_squash(st, &stack, "S2", &err) < 0 && strstr(err.msg, "missing") &&
		      !exists("st/layers/.tmp-S2") && !exists("st/layers/S2"),
	      "a missing layer fails the squash, naming it, and leaves nothing");
	aj_strv_free(&stack);
}

static void locks(const char *st)
{
	struct aj_err err;
	int a, b;

	a = aj_ws_layer_lock(st, "L1", false, &err);
	CHECK(a >= 0 && exists("st/layers/.lock-L1"), "a layer's lock is taken");
	b = aj_ws_layer_lock(st, "L1", false, &err);
	CHECK(b < 0 && err.errnum == EWOULDBLOCK, "a held lock is not taken again (EWOULDBLOCK)");
	aj_ws_layer_unlock(st, "L1", a);
	CHECK(!exists("st/layers/.lock-L1"), "unlocking removes the lock file");
	b = aj_ws_layer_lock(st, "L1", false, &err);
	CHECK(b >= 0, "then the lock is free");
	aj_ws_layer_unlock(st, "L1", b);
	aj_ws_layer_unlock(st, "L1", -1); /* nothing to do, and no crash */

	a = aj_ws_lock_path(at("st/new/dir/lock"), true, false, &err);
	CHECK(a >= 0 && exists("st/new/dir/lock"), "a lock path's directories are made");
	if (a >= 0)
		close(a);
	CHECK(aj_ws_lock_path(at("st/absent/lock"), false, false, &err) < 0 &&
		      err.errnum == ENOENT && strstr(err.msg, "absent/lock"),
	      "without make_parent a missing directory is an error naming the path");
	symlink("/etc/passwd", at("st/layers/.lock-evil"));
	CHECK(aj_ws_layer_lock(st, "evil", false, &err) < 0 && err.errnum == ELOOP,
	      "a lock file that is a symlink is refused, not followed");
	unlink(at("st/layers/.lock-evil"));
}

static void leftovers(const char *st)
{
	struct aj_strv ids = {0};
	struct aj_err err;
	int fd;

	dir("st/layers/.tmp-" TMP);
	put("st/layers/.tmp-" TMP "/x", "x");
	dir("st/layers/" TMP); /* the same id twice is listed once */
	fd = aj_ws_layer_lock(st, LCK, false, &err);
	CHECK(aj_ws_dir_ids(st, "layers", &ids, &err) == 0 && ids.n == 2 &&
		      aj_strv_contains(&ids, TMP) && aj_strv_contains(&ids, LCK),
	      "the ids named by layers/ entries (<id>, .tmp-<id>, .lock-<id>), once each; "
	      "names that are no ids are left out");
	aj_ws_layer_unlock(st, LCK, fd);
	rmdir(at("st/layers/" TMP));
	aj_strv_clear(&ids);
	CHECK(aj_ws_dir_ids(st, "sandboxes", &ids, &err) == 0 && ids.n == 1 &&
		      !strcmp(ids.v[0], SB),
	      "the ids of sandboxes/");
	aj_strv_free(&ids);
	CHECK(aj_ws_layers_clean_tmp(st, &err) == 0 && !exists("st/layers/.tmp-" TMP) &&
		      exists("st/layers/L1"),
	      "clean_tmp removes .tmp- directories and nothing else");
	dir("st/layers/.tmp-L2");
	CHECK(aj_ws_layer_discard(st, "L2", &err) == 0 && !exists("st/layers/L2") &&
		      !exists("st/layers/.tmp-L2"),
	      "discard removes a layer and its .tmp- directory");
	CHECK(aj_ws_layer_remove(st, "S1", &err) == 0 && !exists("st/layers/S1") &&
		      aj_ws_layer_remove(st, "S1", &err) == 0,
	      "remove removes a layer; a missing one is no error");
}

static void restore_files(const char *st)
{
	struct aj_err err;
	struct stat up;

	put("st/sandboxes/" SB "/upper/old", "o");
	CHECK(aj_ws_upper_set_aside(st, SB, &err) == 0 && aj_ws_upper_aside_exists(st, SB),
	      "the upper is set aside");
	CHECK(has_text("st/sandboxes/" SB "/upper.old/old", "o") &&
		      !exists("st/sandboxes/" SB "/upper/old"),
	      "as upper.old, with a fresh upper in its place");
	CHECK(stat(at("st/sandboxes/" SB "/upper"), &up) == 0 && (up.st_mode & 07777) == 0755,
	      "the fresh upper has the old one's mode");
	rmdir(at("st/sandboxes/" SB "/upper"));
	CHECK(aj_ws_upper_set_aside(st, SB, &err) == 0 && exists("st/sandboxes/" SB "/upper") &&
		      has_text("st/sandboxes/" SB "/upper.old/old", "o"),
	      "run again after a crash, it completes what is missing");
	CHECK(aj_ws_upper_drop_aside(st, SB, &err) == 0 && !aj_ws_upper_aside_exists(st, SB),
	      "the set-aside upper is dropped");

	rmdir(at("st/sandboxes/" SB "/upper"));
	rmdir(at("st/sandboxes/" SB "/work"));
	CHECK(aj_ws_sandbox_repair(st, SB, at("st/layers/L1"), &err) == 0 &&
		      aj_ws_sandbox_has_upper(st, SB) && exists("st/sandboxes/" SB "/work"),
	      "repair makes a missing upper and work directory");
}

static void removal(const char *st)
{
	struct aj_err err;

	dir("outside");
	put("outside/precious", "keep");
	symlink(at("outside"), at("st/sandboxes/" SB "/upper/link"));
	CHECK(aj_ws_sandbox_remove(st, SB, &err) == 0 && !exists("st/sandboxes/" SB),
	      "a sandbox's directories are removed");
	CHECK(has_text("outside/precious", "keep"),
	      "a symlink inside is removed, never followed");
	CHECK(aj_ws_sandbox_remove(st, SB, &err) == 0, "removing it again is no error");
}

/* ---- diff ---------------------------------------------------------------------------- */

static int collect(void *arg, char kind, const char *path)
{
	aj_strv_pushf(arg, "%c %s", kind, path);
	return 0;
}

static int stop_at_first(void *arg, char kind, const char *path)
{
	(*(int *)arg)++;
	return 7;
}

/* "K path" lines joined with ", ". */
static const char *joined(const struct aj_strv *v)
{
	static char buf[1024];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < v->n && o < sizeof buf; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", v->v[i]);
	return buf;
}

/* d1/low under d1/up: an added, a modified and a deleted file, a directory both have, an
 * opaque one, a lower's symlink where the upper has a directory, an upper's symlink out. */
static void diff_upper_tree(void)
{
	dir("d1");
	dir("d1/low");
	put("d1/low/keep", "k");
	put("d1/low/mod", "1");
	put("d1/low/gone", "g");
	dir("d1/low/dir");
	put("d1/low/dir/a", "a");
	dir("d1/low/odir");
	put("d1/low/odir/x", "x");
	put("d1/low/odir/y", "y");
	dir("d1/out");
	put("d1/out/x", "outside");
	symlink(at("d1/out"), at("d1/low/sub"));

	dir("d1/up");
	put("d1/up/new", "n");
	put("d1/up/mod", "2");
	dir("d1/up/dir");
	put("d1/up/dir/c", "c");
	dir("d1/up/sub"); /* a directory where the lower has a symlink */
	put("d1/up/sub/x", "mine");
	symlink(at("d1/out"), at("d1/up/esc"));
	if (can_whiteout) {
		whiteout("d1/up/gone");
		whiteout("d1/up/never");
	}
	if (can_opaque) {
		dir("d1/up/odir");
		opaque("d1/up/odir");
		put("d1/up/odir/z", "z");
	}
}

static void diff_upper(void)
{
	struct aj_strv lowers = {0}, out = {0};
	struct aj_err err;
	int calls = 0;

	diff_upper_tree();
	aj_strv_push(&lowers, at("d1/low"));
	CHECK(aj_ws_diff(at("d1/up"), &lowers, collect, &out, &err) == 0, "an upper is diffed");
	CHECK(aj_strv_contains(&out, "A new") && aj_strv_contains(&out, "M mod") &&
		      aj_strv_contains(&out, "A dir/c") && !aj_strv_contains(&out, "A dir") &&
		      !aj_strv_contains(&out, "M dir") && !aj_strv_contains(&out, "M keep"),
	      "added and modified files; a directory both have is not listed (%s)", joined(&out));
	CHECK(aj_strv_contains(&out, "A sub/x") && !aj_strv_contains(&out, "M sub/x"),
	      "a lower's symlink to a directory is not followed to find sub/x");
	CHECK(aj_strv_contains(&out, "A esc") && !aj_strv_contains(&out, "A esc/x"),
	      "an upper's symlink is an entry; nothing below it is listed");
	if (can_whiteout)
		CHECK(aj_strv_contains(&out, "D gone") && !aj_strv_contains(&out, "D never"),
		      "a whiteout is a deletion of what the lower had, only");
	else
		printf("ok - a whiteout is a deletion # SKIP no CAP_MKNOD\n");
	if (can_opaque)
		CHECK(aj_strv_contains(&out, "D odir/x") && aj_strv_contains(&out, "D odir/y") &&
			      aj_strv_contains(&out, "A odir/z") &&
			      !aj_strv_contains(&out, "M odir"),
		      "an opaque directory deletes the lower's entries below it");
	else
		printf("ok - an opaque directory # SKIP no user xattrs on %s\n", root);
	for (size_t i = 1; i < out.n; i++)
		if (strcmp(out.v[i - 1] + 2, out.v[i] + 2) >= 0) {
			CHECK(0, "paths are sorted (%s)", joined(&out));
			break;
		}
	if (can_whiteout && can_opaque)
		CHECK_STR(joined(&out),
			  "A dir/c, A esc, D gone, M mod, A new, D odir/x, D odir/y, A odir/z, "
			  "A sub/x",
			  "the whole diff, sorted by path");

	CHECK(aj_ws_diff(at("d1/up"), &lowers, stop_at_first, &calls, &err) == 7 && calls == 1,
	      "a non-zero return from the callback stops the diff and is returned");
	symlink(at("d1/up"), at("d1/uplink"));
	CHECK(aj_ws_diff(at("d1/uplink"), &lowers, collect, &out, &err) < 0 &&
		      (err.errnum == ELOOP || err.errnum == ENOTDIR),
	      "an upper that is a symlink is refused");
	CHECK(aj_ws_diff(at("d1/absent"), &lowers, collect, &out, &err) < 0 &&
		      err.errnum == ENOENT && strstr(err.msg, "d1/absent"),
	      "a missing upper is an error naming it");
	aj_strv_free(&lowers);
	aj_strv_free(&out);
}

static void diff_stack(void)
{
	struct aj_strv base = {0}, own = {0}, out = {0};
	struct aj_err err;

	dir("d2");
	dir("d2/b0");
	put("d2/b0/a", "1");
	put("d2/b0/b", "1");
	dir("d2/b0/d");
	put("d2/b0/d/x", "x");
	dir("d2/out");
	put("d2/out/q", "outside");
	symlink(at("d2/out"), at("d2/b0/l"));
	dir("d2/o1");
	put("d2/o1/c", "c");
	dir("d2/up");
	put("d2/up/a", "2");
	put("d2/up/e", "e");
	dir("d2/up/l");
	put("d2/up/l/q", "mine");
	if (can_whiteout) {
		whiteout("d2/o1/b");
		whiteout("d2/up/d");
	}
	aj_strv_push(&base, at("d2/b0"));
	aj_strv_push(&own, at("d2/o1"));
	CHECK(aj_ws_diff_stack(&base, &own, at("d2/up"), collect, &out, &err) == 0,
	      "a stack is diffed against its base");
	CHECK(aj_strv_contains(&out, "M a") && aj_strv_contains(&out, "A c") &&
		      aj_strv_contains(&out, "A e"),
	      "changes of the upper and of an own layer (%s)", joined(&out));
	CHECK(aj_strv_contains(&out, "M l") && aj_strv_contains(&out, "A l/q") &&
		      !aj_strv_contains(&out, "M l/q"),
	      "a base symlink replaced by a directory: not followed into its target");
	if (can_whiteout) {
		CHECK(aj_strv_contains(&out, "D b"), "a whiteout in an own layer is a deletion");
		CHECK(aj_strv_contains(&out, "D d") && !aj_strv_contains(&out, "D d/x"),
		      "a directory gone as a whole is listed alone");
		CHECK_STR(joined(&out), "M a, D b, A c, D d, A e, M l, A l/q",
			  "the whole diff, sorted by path");
	} else {
		printf("ok - whiteouts in a stack # SKIP no CAP_MKNOD\n");
	}
	aj_strv_clear(&out);
	CHECK(aj_ws_diff_stack(&base, &own, at("d2/b0"), collect, &out, &err) == 0,
	      "a base layer as the upper diffs too");
	aj_strv_clear(&own);
	aj_strv_push(&own, at("d2/absent"));
	CHECK(aj_ws_diff_stack(&base, &own, at("d2/up"), collect, &out, &err) < 0 &&
		      strstr(err.msg, "d2/absent"),
	      "a missing layer is an error naming it");
	aj_strv_free(&base);
	aj_strv_free(&own);
	aj_strv_free(&out);
}

int main(void)
{
	char cmd[128];
	const char *st;

	snprintf(root, sizeof root, "/tmp/aj-unit-ws.XXXXXX");
	if (!mkdtemp(root)) {
		printf("not ok - make a temporary directory\n");
		return 1;
	}
	probe();
	snprintf(stdir, sizeof stdir, "%s/st", root);
	st = stdir;
	paths();
	sandbox_dirs(st);
	publish(st);
	squash(st);
	locks(st);
	leftovers(st);
	restore_files(st);
	removal(st);
	diff_upper();
	diff_stack();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	UNIT_EXIT();
}
