/* config.json through aj_oci_spec_parse() (src/oci/spec.c): a valid bundle's fields, each kind
 * of refusal with the field path its error names and its errno (EINVAL for a malformed field,
 * ENOTSUP for one agentjail will not honour), and the notes for fields accepted but not
 * applied. Each case edits one field of a valid document, so a refusal is that field's own.
 * The spec is freed after every parse, failed or not, as the OCI verbs do. */
#include <errno.h>
#include <jansson.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "oci/spec.h"
#include "unit.h"

static const char *const base_text =
	"{\"ociVersion\": \"1.0.2\", \"hostname\": \"box\","
	" \"root\": {\"path\": \"rootfs\", \"readonly\": true},"
	" \"process\": {\"terminal\": true, \"consoleSize\": {\"height\": 24, \"width\": 80},"
	"   \"args\": [\"sh\", \"-c\", \"true\"], \"env\": [\"PATH=/bin\", \"A=\"],"
	"   \"cwd\": \"/w\","
	"   \"user\": {\"uid\": 1000, \"gid\": 100, \"additionalGids\": [5, 6]},"
	"   \"capabilities\": {\"bounding\": [\"CAP_KILL\", \"CAP_CHOWN\"],"
	"                      \"effective\": [\"CAP_KILL\"]},"
	"   \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": 1024, \"hard\": 4096}],"
	"   \"noNewPrivileges\": true, \"oomScoreAdj\": 100},"
	" \"mounts\": ["
	"   {\"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\"},"
	"   {\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\","
	"    \"options\": [\"nosuid\", \"strictatime\", \"mode=755\", \"size=65536k\"]},"
	"   {\"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": \"devpts\","
	"    \"options\": [\"newinstance\", \"ptmxmode=0666\"]},"
	"   {\"destination\": \"/data\", \"source\": \"/srv/data\","
	"    \"options\": [\"rbind\", \"ro\", \"rw\", \"nodev\", \"rprivate\"]}],"
	" \"annotations\": {\"io.k8s\": \"pod\"},"
	" \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"mount\"},"
	"   {\"type\": \"network\"}, {\"type\": \"uts\", \"path\": \"/proc/1/ns/uts\"},"
	"   {\"type\": \"ipc\", \"path\": \"/proc/1/ns/ipc\"}],"
	"   \"resources\": {\"memory\": {\"limit\": 1048576}, \"pids\": {\"limit\": 64},"
	"                 \"cpu\": {\"quota\": 50000, \"period\": 100000, \"shares\": 512}},"
	"   \"maskedPaths\": [\"/proc/kcore\"], \"readonlyPaths\": [\"/proc/sys\"],"
	"   \"sysctl\": {\"kernel.shmmax\": \"1\", \"net.ipv4.ip_forward\": \"0\"},"
	"   \"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\"},"
	"   \"cgroupsPath\": \"/agentjail/c1\","
	"   \"uidMappings\": [], \"devices\": []}}";

static json_t *base(void)
{
	json_error_t e;
	json_t *j = json_loads(base_text, 0, &e);

	if (!j)
		printf("# the base document does not parse: %s (line %d)\n", e.text, e.line);
	return j;
}

/* The value at a path of "key", ".key" and "[n]" steps; its container and last step. */
static json_t *walk(json_t *j, const char *path, char *last, size_t len, json_t **parent)
{
	const char *p = path;

	*parent = NULL;
	while (j && *p) {
		size_t n = *p == '[' ? strcspn(p, "]") + 1 : strcspn(p + 1, ".[") + 1;
		snprintf(last, len, "%.*s", (int)n, p);
		*parent = j;
		if (last[0] == '[')
			j = json_array_get(j, strtoul(last + 1, NULL, 10));
		else
			j = json_object_get(j, last[0] == '.' ? last + 1 : last);
		p += n;
	}
	return j;
}

/* The base document with the value at path replaced by JSON text v (NULL: removed). */
static json_t *edited(const char *path, const char *v)
{
	json_t *j = base(), *parent = NULL, *val = v ? json_loads(v, JSON_DECODE_ANY, NULL) : NULL;
	char last[64];
	const char *key;

	if (!j || (v && !val)) {
		printf("# bad test edit %s = %s\n", path, v ? v : "(removed)");
		json_decref(val);
		return j;
	}
	walk(j, path, last, sizeof last, &parent);
	key = last[0] == '.' ? last + 1 : last;
	if (parent && last[0] == '[')
		json_array_set_new(parent, strtoul(last + 1, NULL, 10), val);
	else if (parent && val)
		json_object_set_new(parent, key, val);
	else if (parent)
		json_object_del(parent, key);
	return j;
}

/* The error must name `field` (the field path, as the messages write it) and say `word`
 * (what is wrong, in one word or phrase): the rest of the wording is free to change. */
static void refused(const char *path, const char *v, int errnum, const char *field,
		    const char *word)
{
	json_t *j = edited(path, v);
	struct aj_oci_spec s;
	struct aj_err err;
	int r;

	aj_err_clear(&err);
	r = aj_oci_spec_parse(j, &s, &err);
	CHECK(r < 0 && err.errnum == errnum && err.layer == AJ_LAYER_POLICY,
	      "%s = %s is refused (%s)", path, v ? v : "(absent)", strerror(errnum));
	if (r < 0) {
		CHECK_CONTAINS(err.msg, field, "  and the error names the field");
		CHECK_CONTAINS(err.msg, word, "  and says what is wrong");
		CHECK(strncmp(err.msg, "config.json: ", 13) == 0, "  as a field of config.json");
	}
	aj_oci_spec_free(&s);
	json_decref(j);
}

static void accepted(const char *path, const char *v, const char *what)
{
	json_t *j = edited(path, v);
	struct aj_oci_spec s;
	struct aj_err err;

	aj_err_clear(&err);
	CHECK(aj_oci_spec_parse(j, &s, &err) == 0, "%s (%s)", what, err.msg);
	aj_oci_spec_free(&s);
	json_decref(j);
}

static void valid(void)
{
	json_t *j = base();
	struct aj_oci_spec s;
	struct aj_err err;
	const char *path = "x";
	const struct aj_oci_mount *m;

	CHECK(aj_oci_spec_parse(j, &s, &err) == 0, "a valid config.json parses (%s)", err.msg);
	CHECK_STR(s.oci_version, "1.0.2", "ociVersion");
	CHECK(s.have_proc && s.proc.args.n == 3 && !strcmp(s.proc.args.v[0], "sh") &&
		      s.proc.env.n == 2 && !strcmp(s.proc.cwd, "/w"),
	      "process args, env, cwd");
	CHECK(s.proc.uid == 1000 && s.proc.gid == 100 && s.proc.n_groups == 2 &&
		      s.proc.groups[1] == 6,
	      "process user and additional groups");
	CHECK(s.proc.caps[AJ_CAPSET_BOUNDING] == ((1u << CAP_KILL) | (1u << CAP_CHOWN)) &&
		      s.proc.caps[AJ_CAPSET_EFFECTIVE] == (1u << CAP_KILL) &&
		      !s.proc.caps[AJ_CAPSET_PERMITTED] && !s.proc.caps[AJ_CAPSET_AMBIENT],
	      "capability sets, each its own mask");
	CHECK(s.proc.n_rlimits == 1 && s.proc.rlimits[0].resource == RLIMIT_NOFILE &&
		      s.proc.rlimits[0].soft == 1024 && s.proc.rlimits[0].hard == 4096,
	      "rlimits by name");
	CHECK(s.proc.terminal && s.proc.rows == 24 && s.proc.cols == 80 && s.proc.no_new_privs &&
		      s.proc.have_oom_score && s.proc.oom_score_adj == 100,
	      "terminal, console size, noNewPrivileges, oomScoreAdj");
	CHECK(!strcmp(s.root_path, "rootfs") && s.root_ro && !strcmp(s.hostname, "box"),
	      "root and hostname");
	CHECK(s.n_mounts == 4, "four mounts");
	m = &s.mounts[1];
	CHECK(s.n_mounts == 4 && !strcmp(m->type, "tmpfs") && (m->flags & MS_NOSUID) &&
		      (m->flags & MS_STRICTATIME) && m->data &&
		      !strcmp(m->data, "mode=755,size=65536k") && !m->bind,
	      "a tmpfs: flags apart from filesystem data");
	CHECK(s.n_mounts == 4 && s.mounts[2].data &&
		      !strcmp(s.mounts[2].data, "newinstance,ptmxmode=0666"),
	      "newinstance is filesystem data");
	m = &s.mounts[3];
	CHECK(s.n_mounts == 4 && m->bind && m->recursive && !strcmp(m->type, "bind") &&
		      !strcmp(m->src, "/srv/data") && !(m->flags & MS_RDONLY) &&
		      (m->flags & MS_NODEV),
	      "rbind without a type is a recursive bind; rw after ro clears it");
	CHECK(s.n_ns == 5 && aj_oci_spec_has_ns(&s, CLONE_NEWNET, &path) && path == NULL,
	      "a new network namespace");
	CHECK(aj_oci_spec_has_ns(&s, CLONE_NEWUTS, &path) && path &&
		      !strcmp(path, "/proc/1/ns/uts") &&
		      aj_oci_spec_has_ns(&s, CLONE_NEWIPC, &path) && path &&
		      !aj_oci_spec_has_ns(&s, CLONE_NEWCGROUP, NULL),
	      "joined uts and ipc namespaces, no cgroup one");
	CHECK(s.res.memory == 1048576 && s.res.pids == 64 && s.res.cpu_quota == 50000 &&
		      s.res.cpu_period == 100000 && s.res.cpu_shares == 512,
	      "resources");
	CHECK(s.masked.n == 1 && s.readonly.n == 1 && s.sysctl.n == 2 &&
		      aj_strv_contains(&s.sysctl, "kernel.shmmax=1") &&
		      aj_strv_contains(&s.sysctl, "net.ipv4.ip_forward=0"),
	      "masked and read-only paths, sysctls (net.* with a network namespace of its own)");
	CHECK(json_is_object(s.seccomp) && !strcmp(s.cgroups_path, "/agentjail/c1"),
	      "seccomp kept as JSON, the cgroups path");
	CHECK_STR(aj_oci_annotation(&s, "io.k8s"), "pod", "annotations");
	CHECK(aj_oci_annotation(&s, "nope") == NULL, "a missing annotation is NULL");
	CHECK(s.notes.n == 0, "a plain bundle has no notes");
	aj_oci_spec_free(&s);
	CHECK(s.mounts == NULL && s.seccomp == NULL, "free leaves the spec empty");
	aj_oci_spec_free(&s); /* twice is harmless */
	json_decref(j);
}

static void defaults(void)
{
	struct aj_oci_spec s;
	struct aj_err err;
	json_t *j = edited("linux.resources.cpu", "{\"shares\": 2}");

	CHECK(aj_oci_spec_parse(j, &s, &err) == 0 && s.res.cpu_quota == AJ_CG_UNSET &&
		      s.res.cpu_shares == 2 && s.res.swap == AJ_CG_UNSET,
	      "a value the bundle does not give is unset, not 0");
	aj_oci_spec_free(&s);
	json_decref(j);
	j = edited("annotations", NULL);
	CHECK(aj_oci_spec_parse(j, &s, &err) == 0 && json_is_object(s.annotations) &&
		      aj_oci_annotation(&s, "io.k8s") == NULL,
	      "without annotations, an empty object");
	aj_oci_spec_free(&s);
	json_decref(j);
}

static void notes(void)
{
	json_t *j = base();
	struct aj_oci_spec s;
	struct aj_err err;

	json_object_set_new(json_object_get(j, "process"), "apparmorProfile", json_string("x"));
	json_object_set_new(json_object_get(j, "process"), "selinuxLabel", json_string("y"));
	json_object_set_new(json_object_get(json_object_get(json_object_get(j, "linux"), "resources"),
					    "memory"),
			    "useHierarchy", json_true());
	CHECK(aj_oci_spec_parse(j, &s, &err) == 0 && s.notes.n == 3,
	      "fields accepted but not applied are noted (%zu)", s.notes.n);
	for (size_t i = 0; i < s.notes.n; i++)
		printf("# note: %s\n", s.notes.v[i]);
	CHECK(s.notes.n == 3 && strstr(s.notes.v[0], "process.apparmorProfile") &&
		      strstr(s.notes.v[1], "process.selinuxLabel") &&
		      strstr(s.notes.v[2], "linux.resources.memory.useHierarchy"),
	      "each note names its field");
	aj_oci_spec_free(&s);
	json_decref(j);
}

static void document(void)
{
	struct aj_oci_spec s;
	struct aj_err err;
	json_t *j = json_array();

	CHECK(aj_oci_spec_parse(j, &s, &err) < 0 && err.errnum == EINVAL &&
		      strstr(err.msg, "expected a JSON object"),
	      "a document that is no object is refused");
	aj_oci_spec_free(&s);
	json_decref(j);
	refused("ociVersion", "\"2.0.0\"", EINVAL, "ociVersion", "1.x");
	refused("ociVersion", NULL, EINVAL, "ociVersion", "required");
	refused("ociVersion", "1", EINVAL, "ociVersion", "string");
	refused("hooks", "{\"prestart\": [{\"path\": \"/bin/true\"}]}", ENOTSUP, "hooks",
		"does not run them");
	accepted("hooks", "{}", "empty hooks are no hooks");
	refused("root", NULL, EINVAL, "root", "required");
	refused("root.path", "5", EINVAL, "root.path", "string");
	refused("root.readonly", "\"yes\"", EINVAL, "root.readonly", "boolean");
	refused("hostname", "5", EINVAL, "hostname", "string");
	refused("annotations", "[]", EINVAL, "annotations", "object");
	refused("annotations", "{\"k\": 1}", EINVAL, "annotations: \"k\"", "string");
	refused("linux", NULL, EINVAL, "linux", "required");
	refused("linux", "[]", EINVAL, "linux", "required");
}

static void process_fields(void)
{
	refused("process", NULL, EINVAL, "process", "required");
	refused("process", "\"sh\"", EINVAL, "process", "object");
	refused("process.args", "[]", EINVAL, "process.args", "program");
	refused("process.args", "[1]", EINVAL, "process.args: [0]", "string");
	refused("process.args", "\"sh\"", EINVAL, "process.args", "array");
	refused("process.cwd", "\"w\"", EINVAL, "process.cwd", "absolute");
	refused("process.cwd", NULL, EINVAL, "process.cwd", "required");
	refused("process.env", "[\"PATH=/bin\", \"NOEQ\"]", EINVAL, "process.env: [1]",
		"NAME=value");
	refused("process.terminal", "\"yes\"", EINVAL, "process.terminal", "boolean");
	refused("process.noNewPrivileges", "1", EINVAL, "process.noNewPrivileges", "boolean");
	refused("process.user", "5", EINVAL, "process.user", "object");
	refused("process.user.uid", "70000", EINVAL, "process.user", "65536");
	refused("process.user.uid", "-1", EINVAL, "process.user.uid", "non-negative");
	refused("process.user.username", "\"bob\"", EINVAL, "process.user: username",
		"not supported");
	refused("process.user.additionalGids", "[70000]", EINVAL,
		"process.user: additionalGids[0]", "65536");
	refused("process.user.additionalGids", "{}", EINVAL, "process.user: additionalGids",
		"array");
	refused("process.capabilities", "[]", EINVAL, "process.capabilities", "object");
	refused("process.capabilities.bounding", "[\"SYS_ADMIN\"]", EINVAL,
		"process.capabilities: bounding[0]", "not a capability");
	refused("process.capabilities.ambient", "[\"CAP_CHOWN\", \"CAP_FLY\"]", EINVAL,
		"process.capabilities: ambient[1]", "\"CAP_FLY\" is not a capability");
	refused("process.rlimits", "{}", EINVAL, "rlimits", "array");
	refused("process.rlimits[0].type", "\"RLIMIT_BOGUS\"", EINVAL, "process.rlimits[0]",
		"type");
	refused("process.rlimits[0].soft", "\"1\"", EINVAL, "process.rlimits[0]", "integers");
	refused("process.consoleSize.height", "70000", EINVAL, "process.consoleSize", "too large");
	refused("process.consoleSize.width", "-3", EINVAL, "process.consoleSize.width",
		"non-negative");
}

static void mounts(void)
{
	refused("mounts", "{}", EINVAL, "mounts", "array");
	refused("mounts[0]", "\"proc\"", EINVAL, "mounts[0]", "object");
	refused("mounts[1].options", "[\"bogus\"]", EINVAL,
		"mounts[1]: options[0]", "unknown mount option \"bogus\"");
	refused("mounts[1].options", "[5]", EINVAL, "mounts[1]: options[0]", "string");
	refused("mounts[1].options", "\"ro\"", EINVAL, "mounts[1]: options", "array");
	refused("mounts[0].destination", NULL, EINVAL, "mounts[0].destination", "required");
	refused("mounts[0].destination", "\"proc\"", EINVAL,
		"mounts[0]: destination", "absolute");
	refused("mounts[0].destination", "\"/a/../b\"", EINVAL, "mounts[0]: destination",
		"\"..\" component");
	refused("mounts[0].destination", "\"/a/..\"", EINVAL, "mounts[0]: destination",
		"\"..\" component");
	refused("mounts[3].source", "\"data\"", EINVAL,
		"mounts[3]: source", "absolute");
	refused("mounts[3].source", NULL, EINVAL, "mounts[3]: source", "absolute");
	refused("mounts[0].type", "\"overlay\"", EINVAL, "mounts[0]: type", "not supported");
	refused("mounts[0].type", NULL, EINVAL, "mounts[0]: type", "not supported");
	accepted("mounts[3].type", "\"bind\"", "a type of bind with an absolute source is a bind");
	refused("mounts[0].type", "\"bind\"", EINVAL, "mounts[0]: source", "absolute");
}

static void linux_fields(void)
{
	refused("linux.namespaces", "[{\"type\": \"pid\"}]", EINVAL,
		"linux.namespaces", "mount namespace is required");
	refused("linux.namespaces", "{}", EINVAL, "linux.namespaces", "array");
	refused("linux.namespaces", "[{\"type\": \"mount\"}, {\"type\": \"mount\"}]", EINVAL,
		"linux.namespaces[1]", "twice");
	refused("linux.namespaces", "[{\"type\": \"mount\"}, {\"type\": \"time\"}]", EINVAL,
		"linux.namespaces[1]", "type");
	refused("linux.namespaces", "[{\"type\": \"mount\"}, {\"type\": \"user\", \"path\": "
				    "\"/proc/1/ns/user\"}]",
		EINVAL, "linux.namespaces[1]", "joining an existing user namespace");
	refused("linux.namespaces", "[{\"type\": \"mount\", \"path\": \"/proc/1/ns/mnt\"}]",
		EINVAL, "linux.namespaces[0]", "joining an existing mount namespace");
	accepted("linux.namespaces",
		 "[{\"type\": \"pid\"}, {\"type\": \"network\"}, {\"type\": \"mount\"}, {\"type\": "
		 "\"ipc\"}, {\"type\": \"uts\"}, {\"type\": \"user\"}, {\"type\": \"cgroup\"}]",
		 "every namespace type once");
	refused("linux.uidMappings", "[{\"containerID\": 0, \"hostID\": 0, \"size\": 1}]", ENOTSUP,
		"linux.uidMappings", "not supported");
	refused("linux.gidMappings", "[{\"containerID\": 0, \"hostID\": 0, \"size\": 1}]", ENOTSUP,
		"linux.gidMappings", "not supported");
	refused("linux.intelRdt", "{\"closID\": \"x\"}", ENOTSUP, "linux.intelRdt",
		"not supported");
	refused("linux.personality", "{\"domain\": \"LINUX\"}", ENOTSUP, "linux.personality",
		"not supported");
	accepted("linux.intelRdt", "null", "a null field is an absent one");
	refused("linux.devices", "[{\"path\": \"/dev/sda\", \"type\": \"b\"}]", EINVAL,
		"linux.devices[0]", "only character devices");
	refused("linux.devices",
		"[{\"path\": \"/dev/null\", \"type\": \"c\", \"major\": 1, \"minor\": 3},"
		" {\"path\": \"/dev/mem\", \"type\": \"c\", \"major\": 1, \"minor\": 1}]",
		ENOTSUP, "linux.devices[1]", "c 1:1 (\"/dev/mem\") is not a device agentjail passes");
	refused("linux.devices", "[{\"path\": \"dev/x\", \"type\": \"c\"}]", EINVAL,
		"linux.devices[0].path", "absolute");
	accepted("linux.devices",
		 "[{\"path\": \"/dev/fuse\", \"type\": \"c\", \"major\": 10, \"minor\": 229,"
		 "  \"fileMode\": 438, \"uid\": 0, \"gid\": 0}]",
		 "a safe character device (fuse) is passed");
	refused("linux.sysctl", "{\"kernel.panic\": \"1\"}", EINVAL,
		"linux.sysctl", "\"kernel.panic\" is not a namespaced sysctl");
	refused("linux.namespaces", "[{\"type\": \"pid\"}, {\"type\": \"mount\"}]", EINVAL,
		"linux.sysctl", "\"kernel.shmmax\" is not a namespaced sysctl");
	refused("linux.sysctl", "{\"kernel.shmmax\": 5}", EINVAL,
		"linux.sysctl", "string");
	refused("linux.sysctl", "{\"fs.mqueue/../../x\": \"1\"}", EINVAL, "linux.sysctl",
		"fs.mqueue/../../x");
	refused("linux.sysctl", "[]", EINVAL, "linux.sysctl", "object");
	refused("linux.namespaces[2]", "{\"type\": \"cgroup\"}", EINVAL, "linux.sysctl",
		"\"net.ipv4.ip_forward\" is not a namespaced sysctl");
	refused("linux.maskedPaths", "[\"proc/kcore\"]", EINVAL,
		"linux.maskedPaths: [0]", "absolute");
	refused("linux.readonlyPaths", "[\"/ok\", \"sys\"]", EINVAL,
		"linux.readonlyPaths: [1]", "absolute");
	refused("linux.maskedPaths", "[1]", EINVAL, "linux.maskedPaths: [0]", "string");
	refused("linux.seccomp", "\"x\"", EINVAL, "linux.seccomp", "object");
	refused("linux.cgroupsPath", "5", EINVAL, "linux.cgroupsPath", "string");
	refused("linux.resources.memory", "5", EINVAL,
		"linux.resources.memory", "object");
	refused("linux.resources.memory.limit", "-2", EINVAL,
		"linux.resources.memory.limit", "-1 for no limit");
	refused("linux.resources.cpu.quota", "1.5", EINVAL, "linux.resources.cpu.quota",
		"integer");
	refused("linux.resources.pids.limit", "\"64\"", EINVAL, "linux.resources.pids.limit",
		"integer");
}

/* linux.resources: every field of the spec read, bad values refused by field. */
static void resources(void)
{
	struct aj_oci_spec s;
	struct aj_err err;
	json_t *j = edited("linux.resources",
			   "{\"memory\": {\"limit\": 100, \"reservation\": 50, \"swap\": -1,"
			   " \"swappiness\": 10, \"disableOOMKiller\": true},"
			   " \"cpu\": {\"cpus\": \"0-1\", \"mems\": \"0\", \"realtimeRuntime\": 5},"
			   " \"devices\": [{\"allow\": false, \"access\": \"rwm\"},"
			   "  {\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 3, \"access\": \"rw\"}],"
			   " \"blockIO\": {\"weight\": 300, \"throttleWriteIOPSDevice\":"
			   "  [{\"major\": 8, \"minor\": 0, \"rate\": 100}]},"
			   " \"hugepageLimits\": [{\"pageSize\": \"2MB\", \"limit\": 4194304}],"
			   " \"network\": {\"classID\": 1048577, \"priorities\": [{\"name\": \"eth0\", \"priority\": 5}]},"
			   " \"unified\": {\"memory.high\": \"1000000\"}}");

	CHECK(aj_oci_spec_parse(j, &s, &err) == 0, "every resource field reads (%s)", err.msg);
	CHECK(s.res.memory == 100 && s.res.reservation == 50 && s.res.swap == -1 &&
		      s.res.swappiness == 10 && s.res.disable_oom,
	      "memory: limit, reservation, swap, swappiness, disableOOMKiller");
	CHECK(s.res.cpus && !strcmp(s.res.cpus, "0-1") && s.res.mems && !strcmp(s.res.mems, "0") &&
		      s.res.rt_runtime == 5,
	      "cpu: cpus, mems, realtimeRuntime");
	CHECK(s.res.n_devices == 2 && !s.res.devices[0].allow && s.res.devices[0].type == NULL &&
		      s.res.devices[0].major == AJ_CG_UNSET && s.res.devices[1].allow &&
		      !strcmp(s.res.devices[1].type, "c") && s.res.devices[1].major == 1 &&
		      s.res.devices[1].minor == 3 && !strcmp(s.res.devices[1].access, "rw"),
	      "devices: the allowlist in order, a missing number is any");
	CHECK(s.res.blkio_weight == 300 && s.res.n_throttle[AJ_CG_THROTTLE_WRITE_IOPS] == 1 &&
		      s.res.throttle[AJ_CG_THROTTLE_WRITE_IOPS][0].rate == 100 &&
		      !s.res.n_throttle[AJ_CG_THROTTLE_READ_BPS],
	      "blockIO: weight and each throttle list on its own");
	CHECK(s.res.n_huge == 1 && !strcmp(s.res.huge[0].size, "2MB") && s.res.n_prio == 1 &&
		      s.res.net_classid == 1048577 && s.res.unified.n == 1 &&
		      !strcmp(s.res.unified.v[0], "memory.high=1000000"),
	      "hugepageLimits, network, unified");
	aj_oci_spec_free(&s);
	json_decref(j);
	refused("linux.resources.memory.swappiness", "101", EINVAL,
		"linux.resources.memory.swappiness", "0 to 100");
	refused("linux.resources.cpu", "{\"cpus\": \"all\"}", EINVAL,
		"linux.resources.cpu.cpus", "\"all\"");
	refused("linux.resources.devices", "[{\"allow\": true, \"type\": \"x\"}]", EINVAL,
		"linux.resources.devices[0].type", "a, b or c");
	refused("linux.resources.devices", "[{\"type\": \"c\"}]", EINVAL,
		"linux.resources.devices[0].allow", "required");
	refused("linux.resources.hugepageLimits", "[{\"pageSize\": \"2M\", \"limit\": 1}]",
		EINVAL, "linux.resources.hugepageLimits[0].pageSize", "page size");
	refused("linux.resources.rdma", "{\"mlx5_0\": {\"hcaHandles\": 3}}", ENOTSUP,
		"linux.resources.rdma", "not supported");
}

int main(void)
{
	valid();
	defaults();
	notes();
	document();
	process_fields();
	mounts();
	linux_fields();
	resources();
	UNIT_EXIT();
}
