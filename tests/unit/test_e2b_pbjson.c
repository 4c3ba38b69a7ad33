/* The E2B front end's protobuf-JSON helpers (src/e2b/pbjson.c), through e2b/internal.h, their
 * only way in: EntryInfo of files, Go's strings for file modes and process ends, and the
 * unsigned integer fields of requests as proto3 JSON allows them (a number or a string of
 * digits), with what a client may send instead. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "e2b/internal.h"
#include "unit.h"

static void permissions(void)
{
	static const struct {
		mode_t mode;
		const char *want;
	} cases[] = {
		{S_IFREG | 0644, "-rw-r--r--"},
		{S_IFDIR | 0755, "drwxr-xr-x"},
		{S_IFLNK | 0777, "Lrwxrwxrwx"},
		{S_IFIFO | 0600, "prw-------"},
		{S_IFSOCK | 0700, "Srwx------"},
		{S_IFBLK | 0660, "Drw-rw----"},
		{S_IFCHR | 0666, "Dcrw-rw-rw-"},
		{S_IFREG | S_ISUID | 0755, "urwxr-xr-x"},
		{S_IFDIR | S_ISVTX | 0777, "dtrwxrwxrwx"},
		{S_IFREG | 0, "----------"},
		/* every letter a mode can have at once: the longest string */
		{S_IFCHR | S_ISUID | S_ISGID | S_ISVTX | 0777, "Dugctrwxrwxrwx"},
	};
	char out[16];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(out, 'X', sizeof out);
		e2b_permissions(cases[i].mode, out);
		CHECK_STR(out, cases[i].want, "mode %06o is %s, as Go writes it",
			  (unsigned)cases[i].mode, cases[i].want);
	}
}

static void exit_status(void)
{
	char out[64];

	e2b_exit_status(false, 3, out, sizeof out);
	CHECK_STR(out, "exit status 3", "an exit code");
	e2b_exit_status(false, 0, out, sizeof out);
	CHECK_STR(out, "exit status 0", "exit code 0");
	e2b_exit_status(true, 9, out, sizeof out);
	CHECK_STR(out, "signal: killed", "SIGKILL by Go's name");
	e2b_exit_status(true, 15, out, sizeof out);
	CHECK_STR(out, "signal: terminated", "SIGTERM by Go's name");
	e2b_exit_status(true, 1, out, sizeof out);
	CHECK_STR(out, "signal: hangup", "the first signal");
	e2b_exit_status(true, 16, out, sizeof out);
	CHECK_STR(out, "signal: signal 16", "a signal past the table by number");
	e2b_exit_status(true, 0, out, sizeof out);
	CHECK_STR(out, "signal: signal 0", "signal 0 by number, not the table's hole");
	e2b_exit_status(true, -5, out, sizeof out);
	CHECK_STR(out, "signal: signal -5", "a negative number by number");
	e2b_exit_status(false, 255, out, 8);
	CHECK(strlen(out) == 7, "a short buffer is cut, not overrun");
}

static struct stat a_stat(mode_t mode, uid_t uid, gid_t gid, off_t size)
{
	struct stat st;

	memset(&st, 0, sizeof st);
	st.st_mode = mode;
	st.st_uid = uid;
	st.st_gid = gid;
	st.st_size = size;
	st.st_mtim.tv_sec = 1700000000; /* 2023-11-14T22:13:20Z */
	st.st_mtim.tv_nsec = 123456789;
	return st;
}

static const char *str(json_t *j, const char *key)
{
	return json_string_value(json_object_get(j, key));
}

static void entries(void)
{
	struct e2b_user u = {.name = "user", .uid = 1000, .gid = 1000};
	struct stat st = a_stat(S_IFREG | 0640, 1000, 65534, 12345), tst;
	json_t *j;

	j = e2b_entry_json("/home/user/notes.txt", &st, NULL, NULL, &u);
	CHECK(j != NULL, "an entry for a file");
	CHECK_STR(str(j, "name"), "notes.txt", "its name is the last component");
	CHECK_STR(str(j, "path"), "/home/user/notes.txt", "its path as given");
	CHECK_STR(str(j, "type"), "FILE_TYPE_FILE", "type by enum name");
	CHECK_STR(str(j, "size"), "12345", "size is an int64, so a string");
	CHECK(json_integer_value(json_object_get(j, "mode")) == 0640,
	      "mode is the permission bits");
	CHECK_STR(str(j, "permissions"), "-rw-r-----", "permissions as Go writes them");
	CHECK_STR(str(j, "owner"), "user", "the sandbox user by name");
	CHECK_STR(str(j, "group"), "nogroup", "gid 65534 is nogroup");
	CHECK_STR(str(j, "modifiedTime"), "2023-11-14T22:13:20.123456Z",
		  "modifiedTime in RFC 3339, microseconds, UTC");
	CHECK(!json_object_get(j, "symlinkTarget"), "a file has no symlinkTarget");
	json_decref(j);

	st = a_stat(S_IFDIR | 0755, 0, 0, 4096);
	j = e2b_entry_json("/", &st, NULL, NULL, &u);
	CHECK_STR(str(j, "name"), "/", "the root's name is /");
	CHECK_STR(str(j, "type"), "FILE_TYPE_DIRECTORY", "a directory");
	CHECK_STR(str(j, "owner"), "root", "uid 0 is root");
	CHECK_STR(str(j, "group"), "root", "gid 0 is root");
	json_decref(j);

	st = a_stat(S_IFREG | 0600, 4242, 65534, 0);
	j = e2b_entry_json("/tmp/x", &st, NULL, NULL, &u);
	CHECK_STR(str(j, "owner"), "4242", "an unknown uid by number");
	json_decref(j);
	st = a_stat(S_IFREG | 0600, 65534, 4343, 0);
	j = e2b_entry_json("/tmp/x", &st, NULL, NULL, &u);
	CHECK_STR(str(j, "owner"), "nobody", "uid 65534 is nobody");
	CHECK_STR(str(j, "group"), "4343", "an unknown gid by number");
	json_decref(j);

	st = a_stat(S_IFLNK | 0777, 1000, 1000, 11);
	tst = a_stat(S_IFDIR | 0755, 1000, 1000, 4096);
	j = e2b_entry_json("/home/user/link", &st, "/home/user/dir", &tst, &u);
	CHECK_STR(str(j, "type"), "FILE_TYPE_DIRECTORY", "a symlink shows as what it points to");
	CHECK_STR(str(j, "size"), "4096", "with its target's size");
	CHECK_STR(str(j, "permissions"), "Lrwxrwxrwx", "but the link's own permissions");
	CHECK_STR(str(j, "symlinkTarget"), "/home/user/dir", "and where it points");
	json_decref(j);
	j = e2b_entry_json("/home/user/dangling", &st, "/nowhere", NULL, &u);
	CHECK_STR(str(j, "type"), "FILE_TYPE_SYMLINK", "a dangling symlink is a symlink");
	CHECK_STR(str(j, "size"), "11", "with its own size");
	CHECK_STR(str(j, "symlinkTarget"), "/nowhere", "and its target");
	json_decref(j);

	st = a_stat(S_IFSOCK | 0755, 0, 0, 0);
	j = e2b_entry_json("/run/s", &st, NULL, NULL, &u);
	CHECK_STR(str(j, "type"), "FILE_TYPE_UNSPECIFIED", "a socket has no type of its own");
	json_decref(j);
	st = a_stat(S_IFREG | 0644, 0, 0, 0);
	j = e2b_entry_json("/a/b/", &st, NULL, NULL, &u);
	CHECK_STR(str(j, "name"), "/a/b/", "a path ending in / is its own name");
	json_decref(j);
}

static bool pb_uint(const char *json, uint64_t max, uint64_t *out)
{
	json_t *v = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	bool r = e2b_pb_uint(v, max, out);

	json_decref(v);
	return r;
}

static void uints(void)
{
	uint64_t v = 99;

	CHECK(pb_uint("42", 100, &v) && v == 42, "a number");
	CHECK(pb_uint("\"42\"", 100, &v) && v == 42, "a string of digits");
	CHECK(pb_uint("100", 100, &v) && v == 100, "the maximum itself");
	CHECK(pb_uint("\"100\"", 100, &v) && v == 100, "the maximum as a string");
	CHECK(pb_uint(NULL, 100, &v) && v == 0, "absent is 0");
	CHECK(pb_uint("null", 100, &v) && v == 0, "null is 0");
	CHECK(pb_uint("\"0\"", 100, &v) && v == 0, "\"0\"");
	CHECK(pb_uint("\"007\"", 100, &v) && v == 7, "leading zeros are digits");
	CHECK(pb_uint("\"18446744073709551615\"", UINT64_MAX, &v) && v == UINT64_MAX,
	      "the largest uint64 as a string");
	CHECK(!pb_uint("101", 100, &v) && v == 0, "past the maximum: refused, and 0");
	CHECK(!pb_uint("\"101\"", 100, &v), "past the maximum as a string");
	CHECK(!pb_uint("-1", 100, &v), "a negative number");
	CHECK(!pb_uint("\"-1\"", 100, &v), "a negative string");
	CHECK(!pb_uint("\"+1\"", 100, &v), "a sign");
	CHECK(!pb_uint("\" 1\"", 100, &v), "a space");
	CHECK(!pb_uint("\"1 \"", 100, &v), "a trailing space");
	CHECK(!pb_uint("\"\"", 100, &v), "an empty string");
	CHECK(!pb_uint("\"0x10\"", 100, &v), "hex");
	CHECK(!pb_uint("\"1e2\"", 1000, &v), "an exponent");
	CHECK(!pb_uint("\"18446744073709551616\"", UINT64_MAX, &v), "past uint64 (ERANGE)");
	CHECK(!pb_uint("\"99999999999999999999999999\"", UINT64_MAX, &v), "far past uint64");
	CHECK(!pb_uint("1.5", 100, &v), "a fraction");
	CHECK(!pb_uint("2.0", 100, &v), "a real, even a whole one");
	CHECK(!pb_uint("true", 100, &v), "a boolean");
	CHECK(!pb_uint("[1]", 100, &v), "an array");
	CHECK(!pb_uint("{}", 100, &v), "an object");
}

static bool pty(const char *json, unsigned *rows, unsigned *cols)
{
	json_t *v = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	bool r = e2b_pty_size(v, rows, cols);

	json_decref(v);
	return r;
}

static void pty_sizes(void)
{
	unsigned r = 9, c = 9;

	CHECK(pty("{\"rows\": 24, \"cols\": 80}", &r, &c) && r == 24 && c == 80, "rows and cols");
	CHECK(pty("{\"rows\": \"30\", \"cols\": \"100\"}", &r, &c) && r == 30 && c == 100,
	      "as strings of digits");
	CHECK(pty(NULL, &r, &c) && r == 0 && c == 0, "absent: the default (0)");
	CHECK(pty("null", &r, &c) && r == 0 && c == 0, "null: the default");
	CHECK(pty("{}", &r, &c) && r == 0 && c == 0, "an empty size: 0 and 0");
	CHECK(pty("{\"rows\": 65535, \"cols\": 1}", &r, &c) && r == 65535, "65535 rows");
	CHECK(!pty("{\"rows\": 65536, \"cols\": 80}", &r, &c), "65536 rows is too many");
	CHECK(!pty("{\"rows\": 24, \"cols\": -1}", &r, &c), "negative cols");
	CHECK(!pty("{\"rows\": 24, \"cols\": \"wide\"}", &r, &c), "cols that are no number");
	CHECK(!pty("[24, 80]", &r, &c), "an array is no size");
	CHECK(!pty("\"24x80\"", &r, &c), "a string is no size");
}

int main(void)
{
	permissions();
	exit_status();
	entries();
	uints();
	pty_sizes();
	UNIT_EXIT();
}
