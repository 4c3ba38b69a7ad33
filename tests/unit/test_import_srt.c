/* `agentjail policy import-srt`'s conversion (src/policy/import_srt.c): each srt field's
 * mapping, each refusal naming its field path, and every produced document accepted by the
 * policy parser. The host is made up: home /home/alice, workspace /home/alice/proj, a fixed
 * list of paths that exist, a few symlinks and a few unix sockets. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "policy/import_srt.h"
#include "policy/policy.h"
#include "unit.h"

#define HOME "/home/alice"
#define WS HOME "/proj"

static const char *const existing[] = {
	WS, WS "/.env", WS "/src", WS "/.bashrc", WS "/.vscode", HOME "/.cache/pip",
	"/opt/sdk", "/etc/ssl/private", HOME "/shared-docs", HOME "/.ssh", WS "/.git",
	WS "/.git/hooks", WS "/.git/config", HOME "/other", HOME "/other/.bashrc",
	HOME "/other/.git/hooks", HOME "/other/.claude/agents", HOME "/.claude",
	HOME "/.claude/commands", "/opt/agent", HOME "/big", "/tmp/rv/x/proj",
};

/* Symlinks, resolved as the kernel resolves them: docs -> ../shared-docs, build -> ..,
 * keys -> ~/.ssh, and the home's proj-link -> proj. */
static const char *const links[][2] = {
	{WS "/docs", HOME "/shared-docs"},
	{WS "/build", HOME},
	{WS "/keys", HOME "/.ssh"},
	{HOME "/proj-link", WS},
};

static char notes[8192];

static char *fake_resolve(const char *path, bool *exists, void *opaque)
{
	char buf[512];

	(void)opaque;
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		size_t n = strlen(links[i][0]);
		if (strncmp(path, links[i][0], n) == 0 && (path[n] == '/' || path[n] == '\0')) {
			snprintf(buf, sizeof buf, "%s%s", links[i][1], path + n);
			path = buf;
			break;
		}
	}
	*exists = false;
	for (size_t i = 0; i < sizeof existing / sizeof existing[0]; i++)
		*exists = *exists || strcmp(path, existing[i]) == 0;
	return strdup(path);
}

/* Host unix sockets: one in /opt/agent, and a tree too large to look through in ~/big. */
static enum aj_srt_sock fake_find_socket(const char *path, char *found, size_t len,
					 void *opaque)
{
	(void)opaque;
	if (strcmp(path, "/opt/agent") == 0) {
		snprintf(found, len, "/opt/agent/run/agent.sock");
		return AJ_SRT_SOCK_FOUND;
	}
	if (strcmp(path, HOME "/big") == 0) {
		snprintf(found, len, "more than 200000 entries");
		return AJ_SRT_SOCK_UNCHECKED;
	}
	return AJ_SRT_SOCK_NONE;
}

static void collect_note(const char *msg, void *opaque)
{
	(void)opaque;
	strncat(notes, msg, sizeof notes - strlen(notes) - 2);
	strcat(notes, "\n");
}

static const struct aj_srt_ctx home_ctx = {
	.home = HOME,
	.workspace = WS,
	.resolve = fake_resolve,
	.find_socket = fake_find_socket,
	.note = collect_note,
};
/* A workspace below /tmp, whose parents the sandbox has privately. */
static const struct aj_srt_ctx tmp_ctx = {
	.home = HOME,
	.workspace = "/tmp/rv/x/proj",
	.resolve = fake_resolve,
	.find_socket = fake_find_socket,
	.note = collect_note,
};
static const struct aj_srt_ctx *ctx = &home_ctx;

static json_t *convert(const char *text, struct aj_err *err)
{
	json_error_t je;
	json_t *in = json_loads(text, 0, &je), *out;

	notes[0] = '\0';
	aj_err_clear(err);
	if (!in) {
		printf("# test bug: %s: %s\n", text, je.text);
		return NULL;
	}
	out = aj_policy_import_srt(in, ctx, err);
	json_decref(in);
	return out;
}

/* The document the policy parser accepts, and the field at a.b as compact JSON. */
static char *field(json_t *doc, const char *a, const char *b)
{
	json_t *v = json_object_get(json_object_get(doc, a), b);
	return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(missing)");
}

static void expect(const char *text, const char *a, const char *b, const char *want,
		   const char *what)
{
	struct aj_err err;
	struct aj_policy p;
	json_t *doc = convert(text, &err);
	char *got;

	CHECK(doc != NULL, "%s: converted", what);
	if (!doc) {
		printf("#   error: %s\n", err.msg);
		return;
	}
	got = field(doc, a, b);
	CHECK_STR(got, want, "%s: %s.%s", what, a, b);
	free(got);
	aj_policy_init(&p);
	CHECK(aj_policy_apply_json(&p, doc, &err) == 0, "%s: the policy parser accepts it", what);
	aj_policy_free(&p);
	json_decref(doc);
}

static void refused(const char *text, const char *path, const char *says)
{
	struct aj_err err;
	json_t *doc = convert(text, &err);
	char prefix[200];

	snprintf(prefix, sizeof prefix, "%s: ", path);
	CHECK(!doc && strncmp(err.msg, prefix, strlen(prefix)) == 0, "refused naming %s", path);
	if (!doc)
		CHECK_CONTAINS(err.msg, says, "%s: says \"%s\"", path, says);
	json_decref(doc);
}

static void network(void)
{
	expect("{}", "network", "mode", "\"none\"", "no network section: no network");
	expect("{\"network\": {\"allowedDomains\": [], \"deniedDomains\": [\"evil.example\"]}}",
	       "network", "deny", "(missing)", "no allowedDomains: mode none, denies dropped");
	CHECK_CONTAINS(notes, "network.deniedDomains: dropped", "... with a note");
	expect("{\"network\": {\"allowedDomains\": [\"github.com\", \"*.npmjs.org\", "
	       "\"api.example.com:443\", \"[2001:db8::1]\", \"[::1]:8080\", \"192.0.2.7\"], "
	       "\"deniedDomains\": []}}",
	       "network", "allow",
	       "[\"github.com:*\",\"*.npmjs.org:*\",\"api.example.com:443\",\"[2001:db8::1]:*\","
	       "\"[::1]:8080\",\"192.0.2.7:*\"]",
	       "allowedDomains: every port unless one is given");
	CHECK_CONTAINS(notes, "network.allowedDomains[4]: \"[::1]:8080\": agentjail's proxy still "
			      "refuses loopback",
		       "a loopback entry gets a note about the address guard");
	expect("{\"network\": {\"allowedDomains\": [\"a.example\"], \"deniedDomains\": "
	       "[\"*\", \"*:22\", \"admin.a.example\"]}}",
	       "network", "deny", "[\"*:*\",\"*:22\",\"admin.a.example:*\"]",
	       "deniedDomains: \"*\" and every port");
	expect("{\"network\": {\"allowedDomains\": [\"a.example\"], \"deniedDomains\": []}}",
	       "network", "mode", "\"proxy\"", "allowedDomains: mode proxy");
	expect("{\"network\": {\"allowedDomains\": [\"a.example\"], \"deniedDomains\": [], "
	       "\"allowUnixSockets\": [], \"allowLocalBinding\": false, \"allowAllUnixSockets\": "
	       "false, \"strictAllowlist\": true}}",
	       "network", "allow", "[\"a.example:*\"]", "srt's defaults are accepted");
	CHECK_CONTAINS(notes, "network.strictAllowlist: dropped", "strictAllowlist: a note");
	expect("{\"network\": {\"allowLocalBinding\": true}}", "network", "mode", "\"none\"",
	       "allowLocalBinding: servers on the sandbox's own loopback need no setting");
	CHECK_CONTAINS(notes, "network.allowLocalBinding: dropped", "... with a note");
	CHECK_CONTAINS(notes, "its own loopback", "... that says where the sandbox binds");
}

static void network_refused(void)
{
	refused("{\"network\": {\"allowUnixSockets\": [\"/var/run/docker.sock\"]}}",
		"network.allowUnixSockets", "no equivalent in agentjail (agentjail keeps no list");
	refused("{\"network\": {\"allowAllUnixSockets\": true}}", "network.allowAllUnixSockets",
		"no equivalent");
	refused("{\"network\": {\"httpProxyPort\": 8080}}", "network.httpProxyPort",
		"its own egress proxy");
	refused("{\"network\": {\"socksProxyPort\": 1080}}", "network.socksProxyPort",
		"its own egress proxy");
	refused("{\"network\": {\"mitmProxy\": {\"socketPath\": \"/s\", \"domains\": [\"a.b\"]}}}",
		"network.mitmProxy", "no equivalent");
	refused("{\"network\": {\"tlsTerminate\": {}}}", "network.tlsTerminate", "no equivalent");
	refused("{\"network\": {\"parentProxy\": {}}}", "network.parentProxy", "directly");
	refused("{\"network\": {\"allowMachLookup\": [\"com.x.*\"]}}", "network.allowMachLookup",
		"macOS");
	refused("{\"network\": {\"allowedDomains\": [\"ok.example\", \"*\"]}}",
		"network.allowedDomains[1]", "not a domain entry srt accepts");
	refused("{\"network\": {\"allowedDomains\": [\"*.com\"]}}", "network.allowedDomains[0]",
		"two labels");
	refused("{\"network\": {\"allowedDomains\": [\"https://a.example\"]}}",
		"network.allowedDomains[0]", "not a domain entry");
	refused("{\"network\": {\"allowedDomains\": [\"2001:db8::1\"]}}",
		"network.allowedDomains[0]", "in brackets");
	refused("{\"network\": {\"allowedDomains\": [\"intranet\"]}}", "network.allowedDomains[0]",
		"a name with a dot");
	refused("{\"network\": {\"allowedDomains\": [\"a.example:0\"]}}",
		"network.allowedDomains[0]", "PORT");
	refused("{\"network\": {\"allowedDomains\": [\"a b.example\"]}}",
		"network.allowedDomains[0]", "neither a host name");
	refused("{\"network\": {\"allowedDomains\": \"a.example\"}}", "network.allowedDomains",
		"expected an array");
	refused("{\"network\": {\"allowedDomains\": [7]}}", "network.allowedDomains[0]",
		"expected a string");
	refused("{\"network\": {\"deniedDomains\": [\"203.0.113.9\"]}}", "network.deniedDomains[0]",
		"every name resolving to it");
	refused("{\"network\": {\"bogus\": 1}}", "network.bogus", "unknown field");
}

static void filesystem_writes(void)
{
	expect("{}", "filesystem", "workspace_mode", "\"ro\"", "no allowWrite: read-only workspace");
	expect("{}", "filesystem", "workspace", "\"" WS "\"", "the workspace is pinned");
	expect("{\"filesystem\": {\"allowWrite\": [\".\"]}}", "filesystem", "workspace_mode",
	       "\"rw\"", "allowWrite \".\": writable workspace");
	expect("{\"filesystem\": {\"allowWrite\": [\"src/\"]}}", "filesystem", "read_write",
	       "[\"" WS "/src\"]", "allowWrite inside a read-only workspace: a grant");
	expect("{\"filesystem\": {\"allowWrite\": [\"src/\", \".\"]}}", "filesystem", "read_write",
	       "[]", "a grant the writable workspace holds is dropped");
	expect("{\"filesystem\": {\"allowWrite\": [\"~/.cache/pip\"]}}", "filesystem", "read_write",
	       "[\"" HOME "/.cache/pip\"]", "\"~/\" is the home");
	expect("{\"filesystem\": {\"allowWrite\": [\"/tmp\", \"/dev/null\"]}}", "filesystem",
	       "read_write", "[]", "/tmp and /dev/null: the sandbox's own");
	CHECK_CONTAINS(notes, "filesystem.allowWrite[0]: \"/tmp\" dropped", "... with a note");
	expect("{\"filesystem\": {\"allowWrite\": [\".\"], \"denyWrite\": [\".env\"]}}",
	       "filesystem", "read_only", "[\"" WS "/.env\",\"" WS "/.bashrc\",\"" WS "/.vscode\"]",
	       "denyWrite in the writable workspace: read-only, with srt's existing dotfiles");
	CHECK_CONTAINS(notes, "cannot stop those that are missing", "srt's built-in protections: a note");
	expect("{\"filesystem\": {\"denyWrite\": [\".env\"]}}", "filesystem", "read_only", "[]",
	       "denyWrite where nothing is writable: dropped");
	CHECK_CONTAINS(notes, "filesystem.denyWrite[0]: \"" WS "/.env\" dropped", "... with a note");
	expect("{\"filesystem\": {\"allowWrite\": [\".\"], \"denyWrite\": [\"~\"]}}", "filesystem",
	       "workspace_mode", "\"ro\"", "denyWrite of a parent: the workspace is read-only");
	expect("{\"filesystem\": {\"allowWrite\": [\"src\"], \"denyWrite\": [\"src\"]}}",
	       "filesystem", "read_write", "[]", "denyWrite of a grant removes it");
	expect("{\"filesystem\": {\"allowWrite\": [\".\"], \"denyWrite\": [\"missing.json\"]}}",
	       "filesystem", "read_only",
	       "[\"" WS "/missing.json\",\"" WS "/.bashrc\",\"" WS "/.vscode\"]",
	       "a missing denyWrite path is kept (the run refuses until it exists)");
	CHECK_CONTAINS(notes, "does not exist now", "... with a note");
}

static void filesystem_reads(void)
{
	expect("{\"filesystem\": {\"denyRead\": [\"~/.ssh\"]}}", "filesystem", "mask", "[]",
	       "denyRead of what the sandbox does not see: dropped");
	CHECK_CONTAINS(notes, "filesystem.denyRead[0]: \"" HOME "/.ssh\" dropped", "... with a note");
	expect("{\"filesystem\": {\"denyRead\": [\".env\", \"/etc/ssl/private\"]}}", "filesystem",
	       "mask", "[\"" WS "/.env\",\"/etc/ssl/private\"]",
	       "denyRead in the workspace and a system directory: masks");
	expect("{\"filesystem\": {\"denyRead\": [\"/home\"]}}", "filesystem", "mask",
	       "[\"" WS "\"]", "denyRead of a parent of the workspace hides the workspace");
	expect("{\"filesystem\": {\"denyRead\": [\"/home\"], \"allowRead\": [\".\"]}}",
	       "filesystem", "mask", "[]", "... unless allowRead re-opens it");
	expect("{\"filesystem\": {\"denyRead\": [\"/home\"], \"allowRead\": [\".\"], "
	       "\"allowWrite\": [\".\"]}}",
	       "filesystem", "workspace_mode", "\"rw\"", "srt's workspace-only recipe");
	expect("{\"filesystem\": {\"denyRead\": [\".\", \".env\"]}}", "filesystem", "mask",
	       "[\"" WS "\"]", "a mask inside another is dropped");
	expect("{\"filesystem\": {\"allowRead\": [\"/opt/sdk\"]}}", "filesystem", "read_only",
	       "[\"/opt/sdk\"]", "allowRead outside the sandbox's view: a read-only grant");
	expect("{\"filesystem\": {\"denyRead\": [\".env\"], \"allowRead\": [\".env\"]}}",
	       "filesystem", "mask", "[]", "allowRead wins over an equal denyRead");
	expect("{\"filesystem\": {\"denyRead\": [\"src/**\"]}}", "filesystem", "mask",
	       "[\"" WS "/src\"]", "a trailing /** is the directory");
	expect("{\"credentials\": {\"files\": [{\"path\": \".env\", \"mode\": \"deny\"}]}}",
	       "filesystem", "mask", "[\"" WS "/.env\"]", "credentials.files deny: a mask");
	expect("{\"credentials\": {\"envVars\": [{\"name\": \"LANG\", \"mode\": \"deny\"}]}}",
	       "environment", "allow", "[\"TERM\",\"COLORTERM\",\"NO_COLOR\",\"LANGUAGE\",\"LC_*\",\"TZ\"]",
	       "credentials.envVars deny of a passed variable: taken out of environment.allow");
	expect("{\"credentials\": {\"envVars\": [{\"name\": \"GH_TOKEN\", \"mode\": \"deny\"}]}}",
	       "environment", "allow", "(missing)", "... of one never passed: nothing to do");
}

/* srt keeps an allow path spelled as written when it resolves outside itself
 * (isSymlinkOutsideBoundary), and skips such write paths: granting the target instead would
 * open what the file never named (a cloned repository's "build -> ../.." is the whole home). */
static void filesystem_symlinks(void)
{
	refused("{\"filesystem\": {\"allowWrite\": [\"./build\"]}}", "filesystem.allowWrite[0]",
		"\"./build\" is a symlink to \"" HOME "\"; srt ignores such entries");
	refused("{\"filesystem\": {\"allowWrite\": [\"src\", \"docs/sub\"]}}",
		"filesystem.allowWrite[1]",
		"\"docs/sub\" lies below a symlink and resolves to \"" HOME "/shared-docs/sub\"");
	refused("{\"filesystem\": {\"allowWrite\": [\"~/proj-link\"]}}", "filesystem.allowWrite[0]",
		"is a symlink to \"" WS "\"");
	refused("{\"filesystem\": {\"allowRead\": [\"docs\"]}}", "filesystem.allowRead[0]",
		"\"docs\" is a symlink to \"" HOME "/shared-docs\"");
	/* A denyRead reached again through a symlink: the key would be readable. */
	refused("{\"filesystem\": {\"denyRead\": [\"~/.ssh\"], \"allowRead\": [\"./keys\"]}}",
		"filesystem.allowRead[0]", "is a symlink to \"" HOME "/.ssh\"");
	/* srt decides "allowRead re-opens a denyRead" on spellings: a denyRead through a
	 * symlink hides its target, and an allowRead of the target spelled directly does not
	 * re-open it. */
	expect("{\"filesystem\": {\"denyRead\": [\"./keys\"], \"allowRead\": [\"~/.ssh\"]}}",
	       "filesystem", "mask", "[\"" HOME "/.ssh\"]",
	       "a denyRead through a symlink is not re-opened by another spelling");
	CHECK(strstr(notes, "re-opens") == NULL, "... and no note says it is re-opened");
	expect("{\"filesystem\": {\"denyRead\": [\"./keys\"]}}", "filesystem", "mask", "[]",
	       "a denyRead through a symlink to what the sandbox does not see: dropped");
	expect("{\"filesystem\": {\"allowWrite\": [\".\"], \"denyWrite\": [\"docs\"]}}",
	       "filesystem", "workspace_mode", "\"rw\"",
	       "denyWrite through a symlink applies to its target (as srt resolves deny paths)");
}

/* srt keeps .git/hooks, .git/config, .vscode, .idea, .claude/commands, .claude/agents and its
 * dotfiles read-only inside whatever is writable, not only in a writable workspace. */
static void filesystem_builtin_denies(void)
{
	expect("{\"filesystem\": {\"allowWrite\": [\"./.git\"]}}", "filesystem", "read_only",
	       "[\"" WS "/.git/hooks\",\"" WS "/.git/config\"]",
	       "read-only workspace, allowWrite .git: its hooks and config stay read-only");
	CHECK_CONTAINS(notes, "2 existing", "... and the note counts them");
	expect("{\"filesystem\": {\"allowWrite\": [\"./.git\"]}}", "filesystem", "read_write",
	       "[\"" WS "/.git\"]", "... while .git itself is granted");
	expect("{\"filesystem\": {\"allowWrite\": [\"~/other\"]}}", "filesystem", "read_only",
	       "[\"" HOME "/other/.bashrc\",\"" HOME "/other/.claude/agents\",\"" HOME
	       "/other/.git/hooks\"]",
	       "a grant outside the workspace: its protected names are read-only");
	expect("{\"filesystem\": {\"allowWrite\": [\"~/.claude\"]}}", "filesystem", "read_only",
	       "[\"" HOME "/.claude/commands\"]", "a grant of .claude: .claude/commands read-only");
	expect("{\"filesystem\": {\"allowWrite\": [\".\", \"~/other\"]}}", "filesystem",
	       "read_only",
	       "[\"" WS "/.bashrc\",\"" WS "/.vscode\",\"" HOME "/other/.bashrc\",\"" HOME
	       "/other/.claude/agents\",\"" HOME "/other/.git/hooks\"]",
	       "a writable workspace and a grant: both protected (the workspace's .git by "
	       "protect_git)");
	refused("{\"filesystem\": {\"allowWrite\": [\"./.git\", \".vscode\"]}}",
		"filesystem.allowWrite[1]",
		"\".vscode\" is inside \".vscode\", which srt keeps read-only");
	refused("{\"filesystem\": {\"allowWrite\": [\".git/hooks\"]}}", "filesystem.allowWrite[0]",
		"inside \".git/hooks\"");
	refused("{\"filesystem\": {\"allowWrite\": [\"~/other/.claude/commands/x\"]}}",
		"filesystem.allowWrite[0]", "inside \".claude/commands\"");
	refused("{\"filesystem\": {\"allowWrite\": [\"~/.BashRC\"]}}", "filesystem.allowWrite[0]",
		"inside \".bashrc\"");
	expect("{\"filesystem\": {\"allowWrite\": [\"~/other/.git/objects\"]}}", "filesystem",
	       "read_write", "[\"" HOME "/other/.git/objects\"]",
	       "the rest of a .git directory may be granted");
}

/* srt's sandbox cannot create a unix socket (seccomp), so it reaches no host socket; an
 * agentjail sandbox can connect to one it sees. */
static void filesystem_sockets(void)
{
	refused("{\"filesystem\": {\"allowRead\": [\"/opt/agent\"]}}", "filesystem.allowRead[0]",
		"\"/opt/agent\" holds a unix socket, \"/opt/agent/run/agent.sock\"");
	refused("{\"filesystem\": {\"allowWrite\": [\"src\", \"~/big\"]}}",
		"filesystem.allowWrite[1]",
		"\"" HOME "/big\" could not be checked for unix sockets (more than 200000 entries)");
	expect("{\"filesystem\": {\"allowWrite\": [\".\", \"~/big\"], \"denyWrite\": [\"~/big\"]}}",
	       "filesystem", "read_write", "[]", "a grant taken back by denyWrite is not checked");
	expect("{\"filesystem\": {\"allowRead\": [\"/opt/sdk\"], "
	       "\"allowWrite\": [\"~/.cache/pip\"]}}",
	       "filesystem", "read_only", "[\"/opt/sdk\"]", "grants without sockets pass");
}

/* An allowRead above a denied path does not re-open what is below it (srt re-binds only
 * allowRead paths inside the denied directory). */
static void filesystem_deny_below_allow(void)
{
	ctx = &tmp_ctx;
	expect("{\"filesystem\": {\"denyRead\": [\"/tmp/rv/x\"], \"allowRead\": [\"/tmp\"]}}",
	       "filesystem", "mask", "[\"/tmp/rv/x/proj\"]",
	       "allowRead above a denyRead does not re-open the workspace below it");
	CHECK_CONTAINS(notes, "hides \"/tmp/rv/x/proj\"", "... with a note");
	expect("{\"filesystem\": {\"denyRead\": [\"/tmp/rv\"], \"allowRead\": [\"/tmp/rv/x\"]}}",
	       "filesystem", "mask", "[]", "allowRead inside the denyRead re-opens it");
	CHECK_CONTAINS(notes, "dropped: allowRead re-opens what the sandbox sees in it",
		       "... and the note says so");
	ctx = &home_ctx;
}

static void filesystem_refused(void)
{
	refused("{\"filesystem\": {\"denyRead\": [\"**/.env\"]}}", "filesystem.denyRead[0]",
		"glob pattern");
	refused("{\"filesystem\": {\"allowWrite\": [\"src/*.ts\"]}}", "filesystem.allowWrite[0]",
		"glob pattern");
	refused("{\"filesystem\": {\"denyWrite\": [\"a?\"]}}", "filesystem.denyWrite[0]", "glob");
	refused("{\"filesystem\": {\"allowWrite\": [\"/usr/local\"]}}", "filesystem.allowWrite[0]",
		"never makes those writable");
	refused("{\"filesystem\": {\"allowWrite\": [\"/\"]}}", "filesystem.allowWrite[0]",
		"never makes those writable");
	refused("{\"filesystem\": {\"allowWrite\": [\"~bob/x\"]}}", "filesystem.allowWrite[0]",
		"expands only");
	refused("{\"filesystem\": {\"allowWrite\": [\"\"]}}", "filesystem.allowWrite[0]",
		"empty path");
	refused("{\"filesystem\": {\"denyRead\": [\"/proc/self/environ\"]}}",
		"filesystem.denyRead[0]", "/proc and a /dev of its own");
	refused("{\"filesystem\": {\"denyRead\": [\"/home\"], \"allowRead\": [\"src\"]}}",
		"filesystem.allowRead[0]", "cannot be re-opened below");
	refused("{\"filesystem\": {\"denyRead\": [\".env\"], \"allowRead\": [\".env/x\"]}}",
		"filesystem.allowRead[0]", "cannot be re-opened below");
	refused("{\"filesystem\": {\"allowRead\": [\"/\"]}}", "filesystem.allowRead[0]",
		"whole host");
	refused("{\"filesystem\": {\"disabled\": true}}", "filesystem.disabled", "always confines");
	refused("{\"filesystem\": {\"allowGitConfig\": true}}", "filesystem.allowGitConfig",
		"protect_git");
	refused("{\"filesystem\": {\"denyRead\": [3]}}", "filesystem.denyRead[0]",
		"expected a string");
	refused("{\"filesystem\": {\"readOnly\": []}}", "filesystem.readOnly", "unknown field");
	refused("{\"credentials\": {\"files\": [{\"path\": \"~/.npmrc\", \"mode\": \"mask\"}]}}",
		"credentials.files[0].mode", "write them by hand");
	refused("{\"credentials\": {\"files\": [{\"mode\": \"deny\"}]}}", "credentials.files[0].path",
		"missing");
	refused("{\"credentials\": {\"envVars\": [{\"name\": \"LC_ALL\", \"mode\": \"deny\"}]}}",
		"credentials.envVars[0].name", "\"LC_*\"");
	refused("{\"credentials\": {\"awsPairs\": [{}]}}", "credentials.awsPairs", "SigV4");
}

static void top_level(void)
{
	struct aj_err err;
	json_t *doc;

	expect("{\"ignoreViolations\": {\"*\": [\"/usr/bin\"]}, \"ripgrep\": {\"command\": \"rg\"}, "
	       "\"enableWeakerNestedSandbox\": false, \"allowPty\": true}",
	       "network", "mode", "\"none\"", "settings without permissions are dropped");
	CHECK_CONTAINS(notes, "ignoreViolations: dropped", "ignoreViolations: a note");
	CHECK_CONTAINS(notes, "ripgrep: dropped", "ripgrep: a note");
	expect("{\"ignoreViolations\": {}, \"allowPty\": false, \"allowAppleEvents\": false, "
	       "\"filesystem\": {\"disabled\": false, \"allowGitConfig\": false}}",
	       "network", "mode", "\"none\"", "srt's defaults");
	CHECK_STR(notes, "", "srt's defaults are accepted without a note");
	refused("{\"enableWeakerNestedSandbox\": true}", "enableWeakerNestedSandbox",
		"--tier landlock");
	refused("{\"enableWeakerNetworkIsolation\": true}", "enableWeakerNetworkIsolation", "macOS");
	refused("{\"allowAppleEvents\": true}", "allowAppleEvents", "macOS");
	refused("{\"enableWeakerNestedSandbox\": \"yes\"}", "enableWeakerNestedSandbox",
		"true or false");
	refused("{\"sandbox\": {}}", "sandbox", "unknown field");
	refused("{\"network\": []}", "network", "expected an object");
	doc = convert("[]", &err);
	CHECK(!doc && strstr(err.msg, "a JSON object at the top level"), "a top-level array is refused");
	json_decref(doc);
}

int main(void)
{
	network();
	network_refused();
	filesystem_writes();
	filesystem_reads();
	filesystem_symlinks();
	filesystem_builtin_denies();
	filesystem_sockets();
	filesystem_deny_below_allow();
	filesystem_refused();
	top_level();
	UNIT_EXIT();
}
