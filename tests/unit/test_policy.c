/* Policy files: parsing (every error names the field path and what was expected), presets,
 * JSON null as "no limit", whole-policy validation, and the round trip through
 * aj_policy_to_json(). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"
#include "unit.h"

static char tmpdir[64];

/* Applies a JSON text on top of the defaults. Returns the result of aj_policy_apply_json. */
static int apply_text(struct aj_policy *p, const char *text, struct aj_err *err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	int r;

	aj_err_clear(err);
	if (!j) {
		printf("# test bug: cannot parse %s: %s\n", text, je.text);
		return -2;
	}
	r = aj_policy_apply_json(p, j, err);
	json_decref(j);
	return r;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The document must be refused with a policy-layer error whose message starts with
 * "<path>: " and contains `expect`. */
static void refused(const char *text, const char *path, const char *expect)
{
	struct aj_policy p;
	struct aj_err err;
	char prefix[128];
	int r;

	aj_policy_init(&p);
	r = apply_text(&p, text, &err);
	snprintf(prefix, sizeof prefix, "%s: ", path);
	CHECK(r == -1 && err.layer == AJ_LAYER_POLICY, "refused: %s", text);
	if (r != -1) {
		aj_policy_free(&p);
		return;
	}
	CHECK(starts_with(err.msg, prefix), "error names the field \"%s\": %s", path, text);
	if (!starts_with(err.msg, prefix))
		printf("#   message: %s\n", err.msg);
	CHECK_CONTAINS(err.msg, expect, "error for %s says what was expected (%s)", path, expect);
	aj_policy_free(&p);
}

static void unknown_fields(void)
{
	refused("{\"bogus\": 1}", "bogus",
		"unknown field (expected one of: version, preset, filesystem, rootfs, process, cwd, "
		"user, hostname, environment, network, credentials, limits, syscalls, "
		"allow_degraded");
	refused("{\"filesystem\": {\"workspace_mod\": \"rw\"}}", "filesystem.workspace_mod",
		"unknown field (expected one of: workspace, workspace_mode, ");
	refused("{\"filesystem\": {\"workspace_mod\": \"rw\"}}", "filesystem.workspace_mod",
		"read_only, read_write, mask");
	refused("{\"user\": {\"id\": 1}}", "user.id",
		"expected one of: uid, gid, name, home, shell");
	refused("{\"environment\": {\"pass\": []}}", "environment.pass",
		"expected one of: allow, set");
	refused("{\"network\": {\"allow_hosts\": []}}", "network.allow_hosts",
		"expected one of: mode, allow, deny, allow_private, max_connections, max_bytes");
	refused("{\"limits\": {\"memroy\": 1}}", "limits.memroy",
		"unknown field (expected one of: memory, pids, cpus, timeout, file_size, disk, "
		"open_files, output_bytes, output_action, tmpfs_size)");
	refused("{\"syscalls\": {\"deny\": []}}", "syscalls.deny", "expected one of: allow");
	/* A later unknown field is found even after valid ones were applied. */
	refused("{\"hostname\": \"ok\", \"limits\": {\"pids\": 10, \"x\": 1}}", "limits.x",
		"unknown field");
}

static void wrong_types(void)
{
	refused("{\"filesystem\": []}", "filesystem", "expected an object, got an array");
	refused("{\"limits\": 5}", "limits", "expected an object, got an integer");
	refused("{\"filesystem\": {\"read_only\": \"/opt\"}}", "filesystem.read_only",
		"expected an array of strings, got a string");
	refused("{\"filesystem\": {\"read_only\": [\"/opt\", 7]}}", "filesystem.read_only[1]",
		"expected a string, got an integer");
	refused("{\"filesystem\": {\"mask\": [\"relative/path\"]}}", "filesystem.mask[0]",
		"expected an absolute path");
	refused("{\"filesystem\": {\"read_write\": [\"/srv/../etc\"]}}",
		"filesystem.read_write[0]", "without \".\", \"..\"");
	refused("{\"filesystem\": {\"protect_git\": \"yes\"}}", "filesystem.protect_git",
		"expected true or false, got a string");
	refused("{\"filesystem\": {\"workspace_mode\": \"rwx\"}}", "filesystem.workspace_mode",
		"expected one of rw, ro, got \"rwx\"");
	refused("{\"filesystem\": {\"workspace\": 1}}", "filesystem.workspace",
		"expected a string, got an integer");
	refused("{\"network\": {\"mode\": \"bridge\"}}", "network.mode",
		"expected one of none, host, proxy, got \"bridge\"");
	refused("{\"network\": {\"mode\": true}}", "network.mode",
		"expected one of none, host, proxy, got a boolean");
	refused("{\"user\": {\"uid\": \"1000\"}}", "user.uid",
		"expected a whole number from 0 to 65535, got a string");
	refused("{\"user\": {\"uid\": 70000}}", "user.uid", "from 0 to 65535");
	refused("{\"user\": {\"gid\": -1}}", "user.gid", "from 0 to 65535");
	refused("{\"user\": {\"name\": \"a b\"}}", "user.name",
		"expected 1-64 characters from [A-Za-z0-9._-], got \"a b\"");
	refused("{\"user\": {\"home\": \"home/user\"}}", "user.home", "expected an absolute path");
	refused("{\"hostname\": \"\"}", "hostname", "expected 1-64 characters");
	refused("{\"hostname\": null}", "hostname", "expected a string, got null");
	refused("{\"cwd\": \"src\"}", "cwd", "expected an absolute path");
	refused("{\"environment\": {\"allow\": [\"A-B\"]}}", "environment.allow[0]",
		"expected a variable name or a prefix ending in '*', got \"A-B\"");
	refused("{\"environment\": {\"set\": [\"A=1\"]}}", "environment.set",
		"expected an object mapping variable names to strings, got an array");
	refused("{\"environment\": {\"set\": {\"A\": 1}}}", "environment.set.A",
		"expected a string, got an integer");
	refused("{\"environment\": {\"set\": {\"1A\": \"x\"}}}", "environment.set",
		"\"1A\" is not a valid variable name");
	refused("{\"syscalls\": {\"allow\": [\"pt race\"]}}", "syscalls.allow[0]",
		"expected 1-64 characters");
	refused("{\"allow_degraded\": \"landlock\"}", "allow_degraded",
		"expected an array of strings, got a string");
	refused("{\"preset\": 3}", "preset", "expected a string, got an integer");
	refused("{\"limits\": {\"output_action\": \"drop\"}}", "limits.output_action",
		"expected one of truncate, kill, got \"drop\"");
	refused("{\"tier\": \"vm\"}", "tier", "expected one of namespaces, landlock, gvisor, got \"vm\"");
}

/* rootfs.image and process.user: the forms docker's --user takes, nothing else. */
static void image_fields(void)
{
	static const char *const users[] = {"root", "app", "1000", "1000:1000", "app:staff",
					    "0:50", "www-data", "65535:65535"};
	struct aj_policy p;
	struct aj_err err;
	char text[128];

	for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) {
		aj_policy_init(&p);
		snprintf(text, sizeof text, "{\"process\": {\"user\": \"%s\"}}", users[i]);
		CHECK(apply_text(&p, text, &err) == 0 && p.process_user &&
			      strcmp(p.process_user, users[i]) == 0,
		      "process.user \"%s\" accepted", users[i]);
		aj_policy_free(&p);
	}
	refused("{\"process\": {\"user\": \"a b\"}}", "process.user", "expected USER[:GROUP]");
	refused("{\"process\": {\"user\": \"65536\"}}", "process.user", "an id 0-65535");
	refused("{\"process\": {\"user\": \"app:\"}}", "process.user", "expected USER[:GROUP]");
	refused("{\"process\": {\"user\": \":50\"}}", "process.user", "expected USER[:GROUP]");
	refused("{\"process\": {\"user\": 0}}", "process.user", "expected a string");
	refused("{\"rootfs\": {\"image\": \"\"}}", "rootfs.image", "expected an image reference");
	refused("{\"rootfs\": {\"image\": \"a b\"}}", "rootfs.image", "expected an image reference");
	refused("{\"rootfs\": {\"path\": \"/x\"}}", "rootfs.path", "expected one of: image");
}

static void quantities(void)
{
	struct aj_policy p;
	struct aj_err err;

	refused("{\"limits\": {\"memory\": \"12 parsecs\"}}", "limits.memory",
		"expected a size such as 512MiB, 2GiB or a number of bytes, got \"12 parsecs\"");
	refused("{\"limits\": {\"memory\": -1}}", "limits.memory", "expected a size");
	refused("{\"limits\": {\"memory\": true}}", "limits.memory", "got a boolean");
	refused("{\"limits\": {\"memory\": 1.5}}", "limits.memory", "got a number");
	refused("{\"limits\": {\"file_size\": \"1MiBx\"}}", "limits.file_size", "expected a size");
	refused("{\"limits\": {\"memory\": \"99999999999999999999\"}}", "limits.memory",
		"expected a size");
	refused("{\"limits\": {\"timeout\": \"soon\"}}", "limits.timeout",
		"expected a duration such as 30s, 5m, 250ms or a number of seconds, got \"soon\"");
	refused("{\"limits\": {\"timeout\": -5}}", "limits.timeout", "expected a duration");
	refused("{\"limits\": {\"cpus\": \"lots\"}}", "limits.cpus",
		"expected a number of CPUs such as 1 or 0.5, got \"lots\"");
	refused("{\"limits\": {\"pids\": \"10\"}}", "limits.pids",
		"expected a non-negative whole number, or null, got a string");
	refused("{\"limits\": {\"pids\": 1.5}}", "limits.pids", "got a number");
	refused("{\"limits\": {\"pids\": -1}}", "limits.pids", "got an integer");

	aj_policy_init(&p);
	CHECK(apply_text(&p,
			 "{\"limits\": {\"memory\": \"512MiB\", \"pids\": 64, \"cpus\": 1.5, "
			 "\"timeout\": \"250ms\", \"file_size\": 4096, \"output_bytes\": \"1k\", "
			 "\"tmpfs_size\": \"2GiB\", \"open_files\": 100}}",
			 &err) == 0,
	      "limits with units apply");
	CHECK(p.limits.memory == 512ULL << 20, "memory \"512MiB\" is 512 * 2^20 bytes");
	CHECK(p.limits.pids == 64, "pids 64");
	CHECK(p.limits.cpu_milli == 1500, "cpus 1.5 is 1500 milli-CPUs");
	CHECK(p.limits.timeout_ms == 250, "timeout \"250ms\"");
	CHECK(p.limits.file_size == 4096, "file_size as a JSON number is bytes");
	CHECK(p.limits.output_bytes == 1024, "output_bytes \"1k\"");
	CHECK(p.limits.tmpfs_size == 2ULL << 30, "tmpfs_size \"2GiB\"");
	CHECK(p.limits.open_files == 100, "open_files 100");
	CHECK(apply_text(&p, "{\"limits\": {\"timeout\": 1.5, \"cpus\": \"0.5\"}}", &err) == 0 &&
		      p.limits.timeout_ms == 1500 && p.limits.cpu_milli == 500,
	      "a number of seconds may be fractional; cpus may be a string");
	CHECK(apply_text(&p, "{\"limits\": {\"timeout\": 30}}", &err) == 0 &&
		      p.limits.timeout_ms == 30000,
	      "timeout 30 is 30 seconds");
	aj_policy_free(&p);
}

static void nulls(void)
{
	struct aj_policy p;
	struct aj_err err;

	aj_policy_init(&p);
	CHECK(p.limits.memory != 0 && p.limits.pids != 0 && p.limits.output_bytes != 0,
	      "defaults limit memory, pids and output");
	CHECK(apply_text(&p,
			 "{\"limits\": {\"memory\": null, \"pids\": null, \"cpus\": null, "
			 "\"timeout\": null, \"file_size\": null, \"output_bytes\": null}}",
			 &err) == 0,
	      "null is accepted for every limit that can be off");
	CHECK(p.limits.memory == 0 && p.limits.pids == 0 && p.limits.cpu_milli == 0 &&
		      p.limits.timeout_ms == 0 && p.limits.file_size == 0 &&
		      p.limits.output_bytes == 0,
	      "null means no limit (0)");
	aj_policy_free(&p);

	/* open_files and tmpfs_size always have a limit: null parses, validation refuses. */
	aj_policy_init(&p);
	free(p.workspace);
	p.workspace = strdup(tmpdir);
	CHECK(apply_text(&p, "{\"limits\": {\"open_files\": null}}", &err) == 0 &&
		      aj_policy_validate(&p, &err) < 0,
	      "open_files null is refused by validation");
	CHECK(starts_with(err.msg, "limits.open_files: "), "the open_files error names the field");
	aj_policy_free(&p);
}

static void version_field(void)
{
	struct aj_policy p;
	struct aj_err err;

	refused("{\"version\": 2}", "version", "reads policy version 1");
	refused("{\"version\": \"1\"}", "version", "reads policy version 1");
	refused("{\"version\": 1.0}", "version", "reads policy version 1");
	aj_policy_init(&p);
	CHECK(apply_text(&p, "{\"version\": 1}", &err) == 0, "version 1 is accepted");
	aj_policy_free(&p);

	aj_policy_init(&p);
	json_t *arr = json_array();
	CHECK(aj_policy_apply_json(&p, arr, &err) < 0 &&
		      strcmp(err.msg, "policy: expected a JSON object at the top level, got an "
				      "array") == 0,
	      "a top level that is not an object is refused");
	json_decref(arr);
	aj_policy_free(&p);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void files_and_presets(void)
{
	struct aj_policy p;
	struct aj_err err;
	char path[128], want[192];
	const char *const *names = aj_policy_preset_names();

	CHECK(names && names[0] && strcmp(names[0], "workspace-write") == 0 && names[1] &&
		      strcmp(names[1], "read-only") == 0 && !names[2],
	      "presets are workspace-write and read-only");

	aj_policy_init(&p);
	CHECK(p.workspace_mode == AJ_WS_RW && p.protect_git && strcmp(p.preset, "workspace-write") == 0,
	      "the default is workspace-write with .git protected");
	CHECK(aj_policy_apply_preset(&p, "read-only", &err) == 0 && p.workspace_mode == AJ_WS_RO &&
		      strcmp(p.preset, "read-only") == 0,
	      "read-only preset makes the workspace read-only");
	CHECK(aj_policy_apply_preset(&p, "yolo", &err) < 0 && err.layer == AJ_LAYER_POLICY,
	      "unknown preset is refused");
	CHECK_STR(err.msg, "preset: unknown preset \"yolo\" (expected workspace-write or read-only)",
		  "unknown preset error lists the presets");
	aj_policy_free(&p);

	/* Duplicate keys are refused when a file is read (JSON_REJECT_DUPLICATES). */
	snprintf(path, sizeof path, "%s/dup.json", tmpdir);
	write_file(path, "{\"limits\": {\"memory\": \"1GiB\",\n \"memory\": \"2GiB\"}}\n");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) < 0 && err.layer == AJ_LAYER_POLICY,
	      "duplicate keys are refused");
	snprintf(want, sizeof want, "policy file \"%s\", line 2", path);
	CHECK_CONTAINS(err.msg, want, "duplicate key error names the file and line");
	CHECK_CONTAINS(err.msg, "duplicate object key", "duplicate key error says what is wrong");
	aj_policy_free(&p);

	snprintf(path, sizeof path, "%s/syntax.json", tmpdir);
	write_file(path, "{\"limits\": {\"memory\": 1}\n");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) < 0, "malformed JSON is refused");
	snprintf(want, sizeof want, "policy file \"%s\", line ", path);
	CHECK_CONTAINS(err.msg, want, "malformed JSON error names the file and the line");
	aj_policy_free(&p);

	snprintf(path, sizeof path, "%s/field.json", tmpdir);
	write_file(path, "{\"limits\": {\"memroy\": 1}}");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) < 0, "unknown field in a file is refused");
	snprintf(want, sizeof want, "policy file \"%s\": limits.memroy: unknown field", path);
	CHECK(starts_with(err.msg, want), "file errors carry the file name and the field path");
	if (!starts_with(err.msg, want))
		printf("#   message: %s\n", err.msg);
	aj_policy_free(&p);

	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, "/nonexistent/policy.json", NULL, &err) < 0 &&
		      strstr(err.msg, "/nonexistent/policy.json"),
	      "a missing policy file is refused, naming it");
	aj_policy_free(&p);

	/* A preset named in the file is applied first, its fields on top; --preset overrides
	 * the file's preset, and the file's fields still apply on top of it. */
	snprintf(path, sizeof path, "%s/preset.json", tmpdir);
	write_file(path, "{\"version\": 1, \"preset\": \"read-only\", \"hostname\": \"p1\"}");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) == 0 && p.workspace_mode == AJ_WS_RO &&
		      strcmp(p.preset, "read-only") == 0 && strcmp(p.hostname, "p1") == 0,
	      "the file's preset applies");
	aj_policy_free(&p);
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, "workspace-write", &err) == 0 &&
		      p.workspace_mode == AJ_WS_RW && strcmp(p.hostname, "p1") == 0,
	      "a preset override beats the file's preset");
	aj_policy_free(&p);

	snprintf(path, sizeof path, "%s/preset2.json", tmpdir);
	write_file(path, "{\"preset\": \"read-only\", \"filesystem\": {\"workspace_mode\": \"rw\"}}");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) == 0 && p.workspace_mode == AJ_WS_RW,
	      "the file's fields override its preset");
	aj_policy_free(&p);

	snprintf(path, sizeof path, "%s/preset3.json", tmpdir);
	write_file(path, "{\"preset\": \"yolo\"}");
	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, path, NULL, &err) < 0 &&
		      strstr(err.msg, "preset: unknown preset \"yolo\""),
	      "an unknown preset in a file is refused");
	aj_policy_free(&p);

	aj_policy_init(&p);
	CHECK(aj_policy_load(&p, NULL, "read-only", &err) == 0 && p.workspace_mode == AJ_WS_RO,
	      "no file: defaults plus the preset");
	aj_policy_free(&p);
}

static struct aj_policy validated(const char *text, int *r, struct aj_err *err)
{
	struct aj_policy p;

	aj_policy_init(&p);
	free(p.workspace);
	p.workspace = strdup(tmpdir);
	*r = apply_text(&p, text, err);
	if (*r == 0)
		*r = aj_policy_validate(&p, err);
	return p;
}

static void invalid(const char *text, const char *prefix, const char *expect)
{
	struct aj_err err;
	int r;
	struct aj_policy p = validated(text, &r, &err);

	CHECK(r < 0 && err.layer == AJ_LAYER_POLICY, "validation refuses %s", text);
	if (r >= 0) {
		aj_policy_free(&p);
		return;
	}
	CHECK(starts_with(err.msg, prefix), "the error names %s", prefix);
	if (!starts_with(err.msg, prefix))
		printf("#   message: %s\n", err.msg);
	CHECK_CONTAINS(err.msg, expect, "the error for %s says %s", prefix, expect);
	aj_policy_free(&p);
}

static void validation(void)
{
	struct aj_policy p;
	struct aj_err err;
	char file[128], text[256];
	int r;

	p = validated("{}", &r, &err);
	CHECK(r == 0 && p.workspace[0] == '/', "a directory in /tmp is a valid workspace");
	aj_policy_free(&p);

	invalid("{\"filesystem\": {\"workspace\": \"rel/dir\"}}", "filesystem.workspace: ",
		"expected an absolute path, got \"rel/dir\"");
	invalid("{\"filesystem\": {\"workspace\": \"/\"}}", "filesystem.workspace: ",
		"is a system directory");
	invalid("{\"filesystem\": {\"workspace\": \"/etc\"}}", "filesystem.workspace: ",
		"is a system directory");
	invalid("{\"filesystem\": {\"workspace\": \"/usr\"}}", "filesystem.workspace: ",
		"is a system directory");
	invalid("{\"filesystem\": {\"workspace\": \"/proc/self\"}}", "filesystem.workspace: ",
		"system directory");
	/* Inside a host system directory: handing it over writable is handing over the host. */
	invalid("{\"filesystem\": {\"workspace\": \"/usr/share\"}}", "filesystem.workspace: ",
		"system directory");
	invalid("{\"filesystem\": {\"workspace\": \"/nonexistent-aj\"}}", "filesystem.workspace: ",
		"cannot resolve \"/nonexistent-aj\"");
	snprintf(file, sizeof file, "%s/a-file", tmpdir);
	write_file(file, "x");
	snprintf(text, sizeof text, "{\"filesystem\": {\"workspace\": \"%s\"}}", file);
	p = validated(text, &r, &err);
	CHECK(r < 0 && err.errnum == ENOTDIR && starts_with(err.msg, "filesystem.workspace: "),
	      "a file as the workspace is ENOTDIR naming filesystem.workspace");
	aj_policy_free(&p);

	invalid("{\"filesystem\": {\"read_write\": [\"/usr\"]}}", "filesystem.read_write[0]: ",
		"cannot be made writable");
	snprintf(text, sizeof text, "{\"filesystem\": {\"read_write\": [\"%s\", \"/etc\"]}}",
		 tmpdir);
	invalid(text, "filesystem.read_write[1]: ", "\"/etc\" is");
	invalid("{\"filesystem\": {\"read_write\": [\"/tmp\"]}}", "filesystem.read_write[0]: ",
		"cannot be made writable");
	invalid("{\"filesystem\": {\"read_write\": [\"/usr/local/bin\"]}}",
		"filesystem.read_write[0]: ", "cannot be made writable");
	invalid("{\"filesystem\": {\"read_only\": [\"/\"]}}", "filesystem.read_only[0]: ",
		"\"/\" would expose the whole host");
	invalid("{\"filesystem\": {\"read_only\": [\"/proc/1\"]}}", "filesystem.read_only[0]: ",
		"is a kernel interface");
	invalid("{\"filesystem\": {\"read_only\": [\"/nonexistent-aj\"]}}",
		"filesystem.read_only[0]: ", "cannot resolve \"/nonexistent-aj\"");
	p = validated("{\"filesystem\": {\"mask\": [\"/nonexistent-aj/secret\"], "
		      "\"read_only\": [\"/usr/share\"]}}",
		      &r, &err);
	CHECK(r == 0, "masks may name missing paths; system paths may be read-only");
	aj_policy_free(&p);

	invalid("{\"limits\": {\"memory\": \"1MiB\"}}", "limits.memory: ", "at least 8MiB");
	invalid("{\"limits\": {\"pids\": 2}}", "limits.pids: ", "at least 4");
	invalid("{\"limits\": {\"cpus\": 0.001}}", "limits.cpus: ", "between 0.01 and 1024");
	invalid("{\"limits\": {\"cpus\": 5000}}", "limits.cpus: ", "between 0.01 and 1024");
	invalid("{\"limits\": {\"open_files\": 8}}", "limits.open_files: ", "between 16 and 1048576");
	invalid("{\"limits\": {\"tmpfs_size\": 1000}}", "limits.tmpfs_size: ", "at least 1MiB");
	invalid("{\"allow_degraded\": [\"memory\", \"network\"]}", "allow_degraded[1]: ",
		"\"network\" is not a layer that may be degraded");
	invalid("{\"user\": {\"home\": \"/\"}}", "user.home: ", "other than \"/\"");

	/* The namespaces can be missing only in the landlock tier, which has none; pid-namespace
	 * is never needed there (Landlock scoping and the subreaper hold its boundary). */
	invalid("{\"allow_degraded\": [\"pid-namespace\"]}", "allow_degraded[0]: ",
		"\"pid-namespace\" is not a layer that may be degraded");
	p = validated("{\"allow_degraded\": [\"landlock\", \"landlock-net\", \"landlock-scope\", "
		      "\"seccomp\", \"cgroup\", \"memory\", \"cpu\", \"pids\", "
		      "\"uts-namespace\", \"mount-namespace\", \"network-namespace\"]}",
		      &r, &err);
	CHECK(r == 0, "every degradable layer is accepted in allow_degraded");
	aj_policy_free(&p);

	CHECK(aj_policy_env_name_ok("PATH") && aj_policy_env_name_ok("_x1") &&
		      !aj_policy_env_name_ok("1X") && !aj_policy_env_name_ok("A-B") &&
		      !aj_policy_env_name_ok("") && !aj_policy_env_name_ok("A=B"),
	      "variable names: letters, digits, '_', not starting with a digit");
}

static const char *full_policy =
	"{\"version\": 1, \"preset\": \"read-only\","
	" \"filesystem\": {\"workspace\": \"/srv/project\", \"workspace_mode\": \"ro\","
	"   \"protect_git\": false, \"read_only\": [\"/opt\", \"/srv/data\"],"
	"   \"read_write\": [\"/srv/out\"], \"mask\": [\"/srv/project/.env\"]},"
	" \"cwd\": \"/srv/project/src\","
	" \"user\": {\"uid\": 0, \"gid\": 10, \"name\": \"agent\", \"home\": \"/home/agent\","
	"   \"shell\": \"/bin/sh\"},"
	" \"hostname\": \"box-1\","
	" \"environment\": {\"allow\": [\"FOO\", \"LC_*\"], \"set\": {\"A\": \"1\", \"B\": \"x=y\"}},"
	" \"network\": {\"mode\": \"host\"},"
	" \"limits\": {\"memory\": \"256MiB\", \"pids\": null, \"cpus\": 0.5, \"timeout\": \"1.5s\","
	"   \"file_size\": 1024, \"open_files\": 64, \"output_bytes\": null,"
	"   \"output_action\": \"kill\", \"tmpfs_size\": \"2MiB\"},"
	" \"syscalls\": {\"allow\": [\"ptrace\"]},"
	" \"allow_degraded\": [\"memory\"]}";

static void round_trip(void)
{
	struct aj_policy a, b;
	struct aj_err err;
	json_t *ja, *jb, *l;

	aj_policy_init(&a);
	CHECK(apply_text(&a, full_policy, &err) == 0, "a policy using every field applies");
	if (err.msg[0])
		printf("#   %s\n", err.msg);
	ja = aj_policy_to_json(&a);
	CHECK(json_integer_value(json_object_get(ja, "version")) == 1, "printed version is 1");
	l = json_object_get(ja, "limits");
	CHECK(json_integer_value(json_object_get(l, "memory")) == 256 << 20,
	      "printed memory is in bytes");
	CHECK(json_is_null(json_object_get(l, "pids")) &&
		      json_is_null(json_object_get(l, "output_bytes")),
	      "limits that are off print as null");
	CHECK(json_real_value(json_object_get(l, "cpus")) == 0.5, "cpus print as a number");
	CHECK(json_number_value(json_object_get(l, "timeout")) == 1.5,
	      "a timeout of 1500 ms prints as 1.5 seconds");
	CHECK_STR(json_string_value(json_object_get(json_object_get(ja, "network"), "mode")), "host",
		  "enums print as their names");
	CHECK_STR(json_string_value(json_object_get(
			  json_object_get(json_object_get(ja, "environment"), "set"), "B")),
		  "x=y", "environment.set prints as a map, values may hold '='");

	aj_policy_init(&b);
	CHECK(aj_policy_apply_json(&b, ja, &err) == 0, "the printed policy reads back");
	jb = aj_policy_to_json(&b);
	CHECK(json_equal(ja, jb), "printing, reading and printing again gives the same document");
	if (!json_equal(ja, jb)) {
		char *sa = json_dumps(ja, JSON_SORT_KEYS | JSON_COMPACT);
		char *sb = json_dumps(jb, JSON_SORT_KEYS | JSON_COMPACT);
		printf("#   first:  %s\n#   second: %s\n", sa, sb);
		free(sa);
		free(sb);
	}
	CHECK(b.limits.memory == a.limits.memory && b.limits.pids == 0 &&
		      b.limits.cpu_milli == 500 && b.limits.timeout_ms == 1500 &&
		      b.limits.output_bytes == 0 && b.limits.output_action == AJ_OUTPUT_KILL &&
		      b.limits.tmpfs_size == 2ULL << 20 && b.limits.open_files == 64,
	      "limits survive the round trip");
	CHECK(b.workspace_mode == AJ_WS_RO && !b.protect_git && b.read_only.n == 2 &&
		      b.read_write.n == 1 && b.mask.n == 1 && b.uid == 0 && b.gid == 10 &&
		      b.net_mode == AJ_NET_HOST && b.env_set.n == 2 && b.syscalls_allow.n == 1 &&
		      b.allow_degraded.n == 1 && strcmp(b.cwd, "/srv/project/src") == 0,
	      "filesystem, user, network, environment and syscalls survive the round trip");
	json_decref(ja);
	json_decref(jb);
	aj_policy_free(&a);
	aj_policy_free(&b);

	/* The defaults round-trip too (nothing printed that the parser refuses). */
	aj_policy_init(&a);
	aj_policy_init(&b);
	ja = aj_policy_to_json(&a);
	CHECK(aj_policy_apply_json(&b, ja, &err) == 0, "the default policy's document reads back");
	jb = aj_policy_to_json(&b);
	CHECK(json_equal(ja, jb), "the default policy round-trips");
	json_decref(ja);
	json_decref(jb);
	aj_policy_free(&a);
	aj_policy_free(&b);
}

int main(void)
{
	char dir[] = "/tmp/ajunit-policy.XXXXXX";
	char cmd[128];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(tmpdir, sizeof tmpdir, "%s", dir);
	unknown_fields();
	wrong_types();
	image_fields();
	quantities();
	nulls();
	version_field();
	files_and_presets();
	validation();
	round_trip();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmpdir);
	UNIT_EXIT();
}
