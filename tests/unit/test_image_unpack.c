/* Unpacking image layers (src/image/unpack.c): what each kind of entry becomes,
 * the layer's diff_id, and every hostile layer of docs/images.md refused or
 * contained, with the entry named. Layers are crafted here with libarchive's
 * writer; the confined unpacker's Landlock boundary is checked by writing
 * outside it from a confined child. Needs root (owners, whiteouts), as the main
 * pass runs it. */
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "common/tree.h"
#include "image/digest.h"
#include "image/unpack.h"
#include "sandbox/confine.h"
#include "unit.h"

static char tmp[64];

/* One entry of a crafted layer. */
struct ent {
	const char *path;
	mode_t type; /* AE_IF* */
	mode_t perm;
	const char *data; /* regular file content, symlink target or hard link target */
	int64_t sparse;   /* a regular file of this size and no data written; 0: data's */
	int64_t uid, gid;
	unsigned dev_major, dev_minor;
	const char *xattr; /* one attribute name, value "v" */
};

/* A minimal tar writer (ustar headers, pax records for attributes), so that the test can make
 * what no archiver would: the unpacker reads tars with libarchive. */
struct tarbuf {
	char *p;
	size_t n, cap;
};

static void put(struct tarbuf *t, const void *d, size_t n)
{
	if (t->n + n > t->cap) {
		t->cap = (t->n + n) * 2;
		t->p = realloc(t->p, t->cap);
	}
	memcpy(t->p + t->n, d, n);
	t->n += n;
}

static void pad(struct tarbuf *t)
{
	static const char zero[512];

	if (t->n % 512)
		put(t, zero, 512 - t->n % 512);
}

static void header(struct tarbuf *t, const char *name, char type, mode_t perm, int64_t size,
		   const struct ent *x, const char *link)
{
	char h[512] = {0};
	unsigned sum = 0;

	snprintf(h, 100, "%s", name);
	snprintf(h + 100, 8, "%07o", (unsigned)perm);
	snprintf(h + 108, 8, "%07o", (unsigned)(x ? x->uid : 0) & 07777777);
	snprintf(h + 116, 8, "%07o", (unsigned)(x ? x->gid : 0) & 07777777);
	snprintf(h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf(h + 136, 12, "%011o", 1700000000u);
	memset(h + 148, ' ', 8);
	h[156] = type;
	if (link)
		snprintf(h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar\0" "00", 8);
	snprintf(h + 329, 8, "%07o", x ? x->dev_major : 0);
	snprintf(h + 337, 8, "%07o", x ? x->dev_minor : 0);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	put(t, h, 512);
}

/* Owners of more than 7 octal digits and attributes go in a pax header before the entry. */
static void pax(struct tarbuf *t, const struct ent *x)
{
	char rec[512], body[1024] = "";
	size_t n = 0;

	if (x->xattr) {
		snprintf(rec, sizeof rec, " SCHILY.xattr.%s=v\n", x->xattr);
		n += (size_t)snprintf(body + n, sizeof body - n, "%zu%s",
				      strlen(rec) + (strlen(rec) + 3 >= 100 ? 3 : 2), rec);
	}
	if (x->uid > 07777777) {
		snprintf(rec, sizeof rec, " uid=%lld\n", (long long)x->uid);
		n += (size_t)snprintf(body + n, sizeof body - n, "%zu%s", strlen(rec) + 2, rec);
	}
	if (!n)
		return;
	header(t, "PaxHeader", 'x', 0644, (int64_t)n, NULL, NULL);
	put(t, body, n);
	pad(t);
}

static char type_flag(mode_t type)
{
	switch (type) {
	case AE_IFDIR: return '5';
	case AE_IFLNK: return '2';
	case AE_IFIFO: return '6';
	case AE_IFCHR: return '3';
	case AE_IFBLK: return '4';
	case 0: return '1';
	default: return '0';
	}
}

/* The layer as a tar (gzip when gz) in a memory file; its descriptor, and the tar's digest. */
static int layer(const struct ent *es, size_t n, bool gz, char digest[AJ_DIGEST_SIZE])
{
	struct tarbuf t = {0};
	int fd = memfd_create("layer", MFD_CLOEXEC);
	static const char zero[1024];

	for (size_t i = 0; i < n; i++) {
		const struct ent *x = &es[i];
		bool data = x->type == AE_IFREG && x->data && !x->sparse;
		int64_t size = x->sparse ? x->sparse : data ? (int64_t)strlen(x->data) : 0;
		const char *link = x->type == AE_IFLNK || x->type == 0 ? x->data : NULL;

		pax(&t, x);
		header(&t, x->path, type_flag(x->type), x->perm ? x->perm : 0644, size, x, link);
		if (data) {
			put(&t, x->data, (size_t)size);
			pad(&t);
		}
	}
	put(&t, zero, sizeof zero);
	if (digest)
		aj_digest_of(t.p, t.n, digest);
	if (gz) {
		gzFile g = gzdopen(dup(fd), "wb");
		gzwrite(g, t.p, (unsigned)t.n);
		gzclose(g);
	} else if (write(fd, t.p, t.n) != (ssize_t)t.n) {
		abort();
	}
	lseek(fd, 0, SEEK_SET);
	free(t.p);
	return fd;
}

/* A fresh empty directory for a layer; its descriptor. */
static int fresh_dir(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmp, name);
	mkdir(path, 0700);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int unpack(const struct ent *es, size_t n, const char *name, char *dir,
		  struct aj_unpack_result *res, struct aj_err *err, uint64_t max_bytes)
{
	struct aj_unpack_opts o = {.set_owners = true, .max_bytes = max_bytes, .what = "layer L"};
	int fd = layer(es, n, false, NULL);
	int dfd = fresh_dir(name, dir, 256);
	int r = aj_image_unpack_here(fd, dfd, &o, res, err);

	close(fd);
	close(dfd);
	return r;
}

static bool exists(const char *dir, const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

static void normal(void)
{
	const struct ent es[] = {
		{.path = "./usr/", .type = AE_IFDIR, .perm = 0755},
		{.path = "usr/bin/tool", .type = AE_IFREG, .perm = 04755, .data = "#!/bin/sh\n"},
		{.path = "usr/share/doc",
		 .type = AE_IFREG,
		 .perm = 0640,
		 .data = "doc",
		 .uid = 1000,
		 .gid = 100},
		{.path = "usr/bin/sh", .type = AE_IFLNK, .perm = 0777, .data = "tool"},
		{.path = "usr/bin/tool2", .type = 0, .data = "usr/bin/tool"},
		{.path = "run/fifo", .type = AE_IFIFO, .perm = 0600},
		{.path = "etc/x",
		 .type = AE_IFREG,
		 .perm = 0644,
		 .data = "x",
		 .xattr = "user.mine"},
		{.path = "etc/y",
		 .type = AE_IFREG,
		 .perm = 0644,
		 .data = "y",
		 .xattr = "trusted.overlay.opaque"},
		{.path = "/abs/path", .type = AE_IFREG, .perm = 0644, .data = "a"},
	};
	struct aj_unpack_result res;
	struct aj_err err = {0};
	char dir[256], p[512], want[AJ_DIGEST_SIZE], val[8];
	struct stat st, st2;
	int fd = layer(es, AJ_ARRAY_SIZE(es), false, want),
	    dfd = fresh_dir("normal", dir, sizeof dir);
	struct aj_unpack_opts o = {.set_owners = true};

	CHECK(aj_image_unpack_here(fd, dfd, &o, &res, &err) == 0, "a plain layer unpacks (%s)",
	      err.msg);
	CHECK_STR(res.diff_id, want, "its diff_id is the digest of the tar");
	snprintf(p, sizeof p, "%s/usr/bin/tool", dir);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 04755 && st.st_size == 10,
	      "a file with its setuid mode and size");
	snprintf(p, sizeof p, "%s/usr/share/doc", dir);
	CHECK(stat(p, &st) == 0 && st.st_uid == 1000 && st.st_gid == 100 &&
		      st.st_mtime == 1700000000,
	      "owner and time as the layer has them");
	snprintf(p, sizeof p, "%s/usr/bin/tool", dir);
	stat(p, &st2);
	snprintf(p, sizeof p, "%s/usr/bin/tool2", dir);
	CHECK(stat(p, &st) == 0 && st.st_ino == st2.st_ino && st.st_nlink == 2,
	      "a hard link to an earlier file");
	snprintf(p, sizeof p, "%s/usr/bin/sh", dir);
	CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "a symlink, not followed");
	snprintf(p, sizeof p, "%s/run/fifo", dir);
	CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode), "a FIFO");
	snprintf(p, sizeof p, "%s/etc/x", dir);
	CHECK(lgetxattr(p, "user.mine", val, sizeof val) == 1, "a user.* attribute is kept");
	snprintf(p, sizeof p, "%s/etc/y", dir);
	CHECK(lgetxattr(p, "trusted.overlay.opaque", val, sizeof val) < 0 &&
		      res.dropped_xattrs == 1,
	      "a trusted.* attribute is dropped, and counted");
	CHECK(exists(dir, "abs/path"), "an absolute path lands inside the layer");
	close(fd);
	close(dfd);

	fd = layer(es, AJ_ARRAY_SIZE(es), true, NULL);
	dfd = fresh_dir("gzip", dir, sizeof dir);
	CHECK(aj_image_unpack_here(fd, dfd, &o, &res, &err) == 0, "the same layer gzipped");
	CHECK_STR(res.diff_id, want, "same diff_id: the digest of the uncompressed tar");
	close(fd);
	close(dfd);
}

static void whiteouts(void)
{
	const struct ent es[] = {
		{.path = "a/.wh.gone", .type = AE_IFREG, .perm = 0644, .data = ""},
		{.path = "b/.wh..wh..opq", .type = AE_IFREG, .perm = 0644, .data = ""},
		{.path = "c", .type = AE_IFCHR, .perm = 0644},
		{.path = ".wh...", .type = AE_IFREG, .perm = 0644, .data = ""},
	};
	struct aj_unpack_result res;
	struct aj_err err = {0};
	char dir[256], p[512], v[4];
	struct stat st;

	CHECK(unpack(es, 3, "wh", dir, &res, &err, 0) == 0, "whiteouts unpack (%s)", err.msg);
	snprintf(p, sizeof p, "%s/a/gone", dir);
	CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0),
	      ".wh.NAME becomes an overlay whiteout at NAME");
	CHECK(!exists(dir, "a/.wh.gone"), "and the marker itself is not kept");
	snprintf(p, sizeof p, "%s/b", dir);
	CHECK(getxattr(p, AJ_OVL_OPAQUE_XATTR, v, sizeof v) == 1 && v[0] == 'y',
	      "the opaque marker marks its directory");
	snprintf(p, sizeof p, "%s/c", dir);
	CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && res.whiteouts == 3,
	      "a 0/0 device is a whiteout too (%llu)", (unsigned long long)res.whiteouts);
	CHECK(unpack(es + 3, 1, "wh2", dir, &res, &err, 0) < 0, "a whiteout of \"..\" is refused");
	CHECK_CONTAINS(err.msg, "a whiteout of no valid name", "and says so");
}

/* Each attack, with the entry that must be named and what must not exist
 * afterwards. */
static void hostile(void)
{
	char canary[256], dir[256], p[512];
	struct aj_unpack_result res;
	struct aj_err err;
	struct stat st;

	snprintf(canary, sizeof canary, "%s/outside", tmp);
	mkdir(canary, 0755);

	const struct ent dotdot[] = {
		{.path = "../outside/pwned", .type = AE_IFREG, .perm = 0644, .data = "x"}};
	CHECK(unpack(dotdot, 1, "h1", dir, &res, &err, 0) < 0, "\"..\" refused");
	CHECK_CONTAINS(err.msg, "layer L: entry \"../outside/pwned\": a \"..\" component",
		       "naming the layer and the entry");

	const struct ent through[] = {
		{.path = "evil", .type = AE_IFLNK, .perm = 0777, .data = canary},
		{.path = "evil/pwned", .type = AE_IFREG, .perm = 0644, .data = "x"}};
	CHECK(unpack(through, 2, "h2", dir, &res, &err, 0) < 0,
	      "a write through a symlink the layer made: refused");
	CHECK_CONTAINS(err.msg, "entry \"evil/pwned\": a path through the symlink \"evil\"",
		       "naming the entry and the symlink");

	snprintf(p, sizeof p, "%s/pwned", canary);
	CHECK(lstat(p, &st) < 0, "nothing was written outside the layer");

	const struct ent hard[] = {{.path = "l1", .type = 0, .data = "../outside"},
				   {.path = "l2", .type = 0, .data = "/etc/passwd"}};
	CHECK(unpack(hard, 1, "h3", dir, &res, &err, 0) < 0, "a hard link to \"..\": refused");
	CHECK_CONTAINS(err.msg, "outside the layer", "says so");
	CHECK(unpack(hard + 1, 1, "h4", dir, &res, &err, 0) < 0,
	      "a hard link to /etc/passwd: refused (not an entry of the layer)");
	CHECK_CONTAINS(err.msg, "entry \"l2\": a hard link to \"/etc/passwd\"", "naming both");
	CHECK(!exists(dir, "l2"), "no link made");

	const struct ent devs[] = {
		{.path = "dev/mem", .type = AE_IFCHR, .perm = 0666, .dev_major = 1, .dev_minor = 1},
		{.path = "dev/sda", .type = AE_IFBLK, .perm = 0666, .dev_major = 8}};
	CHECK(unpack(devs, 2, "h5", dir, &res, &err, 0) == 0 && res.skipped_devices == 2,
	      "device nodes are skipped and counted");
	CHECK(!exists(dir, "dev/mem") && !exists(dir, "dev/sda"), "none was made");

	const struct ent sparse[] = {{.path = "big",
				      .type = AE_IFREG,
				      .perm = 0644,
				      .data = "",
				      .sparse = (int64_t)2 << 30}};
	CHECK(unpack(sparse, 1, "h6", dir, &res, &err, 1 << 20) < 0,
	      "a 2 GiB (sparse) file past a 1 MiB limit: refused");
	CHECK(err.errnum == EFBIG && strstr(err.msg, "entry \"big\""), "EFBIG, naming it (%s)",
	      err.msg);

	const struct ent ids[] = {
		{.path = "f", .type = AE_IFREG, .perm = 0644, .data = "x", .uid = 100000}};
	CHECK(unpack(ids, 1, "h7", dir, &res, &err, 0) < 0, "uid 100000: refused");
	CHECK_CONTAINS(err.msg, "a sandbox maps the ids 0-65535", "says why");

	const struct ent replace[] = {{.path = "d/f", .type = AE_IFREG, .perm = 0644, .data = "x"},
				      {.path = "d", .type = AE_IFLNK, .perm = 0777, .data = canary},
				      {.path = "d/g", .type = AE_IFREG, .perm = 0644, .data = "y"}};
	CHECK(unpack(replace, 3, "h8", dir, &res, &err, 0) < 0,
	      "a directory replaced by a symlink, then written through: refused");
	snprintf(p, sizeof p, "%s/g", canary);
	CHECK(lstat(p, &st) < 0, "nothing written outside");

	int junk = memfd_create("junk", MFD_CLOEXEC), dfd = fresh_dir("h9", dir, sizeof dir);
	struct aj_unpack_opts o = {0};
	if (write(junk, "not a tar at all, not at all\n", 29) != 29)
		abort();
	lseek(junk, 0, SEEK_SET);
	CHECK(aj_image_unpack_here(junk, dfd, &o, &res, &err) < 0, "garbage: refused");
	CHECK_CONTAINS(err.msg, "layer: ", "as not a layer (%s)", err.msg);
	close(junk);
	close(dfd);
}

/* The confined unpacker's boundary is the kernel's: a confined child cannot
 * create a file outside its directory even when it tries directly. */
static void confinement(void)
{
	char inside[256], outside[256];
	pid_t pid;
	int status;
	const struct ent es[] = {{.path = "ok", .type = AE_IFREG, .perm = 04755, .data = "fine",
				  .gid = 42}};
	struct aj_unpack_result res;
	struct aj_err err = {0};
	struct aj_unpack_opts o = {.set_owners = true};
	int fd;

	snprintf(inside, sizeof inside, "%s/conf-in", tmp);
	snprintf(outside, sizeof outside, "%s/conf-out", tmp);
	mkdir(inside, 0700);
	mkdir(outside, 0700);
	pid = fork();
	if (pid == 0) {
		char p[512];
		if (aj_confine_writer(inside, AJ_CONFINE_CAPS_UNPACK, &err) < 0)
			_exit(2);
		snprintf(p, sizeof p, "%s/x", outside);
		if (open(p, O_WRONLY | O_CREAT, 0600) >= 0 || errno != EACCES)
			_exit(3);
		snprintf(p, sizeof p, "%s/x", inside);
		_exit(open(p, O_WRONLY | O_CREAT, 0600) >= 0 ? 0 : 4);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a confined writer: EACCES outside its directory, allowed inside (exit "
	      "%d)",
	      WEXITSTATUS(status));
	fd = layer(es, 1, false, NULL);
	snprintf(inside, sizeof inside, "%s/conf-layer", tmp);
	mkdir(inside, 0700);
	CHECK(aj_image_unpack(fd, inside, &o, &res, &err) == 0 && res.entries == 1 &&
		      res.diff_id[0] == 's',
	      "the confined unpacker unpacks and reports (%s)", err.msg);
	{
		char p[512];
		struct stat st;
		snprintf(p, sizeof p, "%s/ok", inside);
		CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 04755 && st.st_gid == 42,
		      "a setuid file keeps its bit through the confined unpacker (0%o)",
		      (unsigned)(st.st_mode & 07777));
	}
	close(fd);
}

int main(void)
{
	char dir[] = "/tmp/ajunit-unpack.XXXXXX";
	struct aj_err err;

	if (geteuid() != 0) {
		printf("ok - unpacking # SKIP needs root (owners, whiteouts)\n");
		return 0;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(tmp, sizeof tmp, "%s", dir);
	normal();
	whiteouts();
	hostile();
	confinement();
	{
		int d = open("/tmp", O_RDONLY | O_DIRECTORY);
		aj_tree_remove_at(d, strrchr(tmp, '/') + 1, &err);
		close(d);
	}
	UNIT_EXIT();
}
