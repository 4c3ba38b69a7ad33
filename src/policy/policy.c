/* Defaults and presets. Every default here is documented in docs/policy.md; change both. */
#include "policy/policy.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/units.h"

/* Variables that carry no secret and that ordinary tools need to behave (locale, terminal,
 * time zone). Everything else from the host environment is dropped unless granted. */
static const char *const default_env_allow[] = {
	"TERM", "COLORTERM", "NO_COLOR", "LANG", "LANGUAGE", "LC_*", "TZ",
};

void aj_policy_init(struct aj_policy *p)
{
	memset(p, 0, sizeof *p);
	p->preset = aj_xstrdup("workspace-write");
	p->workspace_mode = AJ_WS_RW;
	p->protect_git = true;
	p->uid = 1000;
	p->gid = 1000;
	p->user_name = aj_xstrdup("user");
	p->home = aj_xstrdup("/home/user");
	p->shell = aj_xstrdup("/bin/bash");
	p->hostname = aj_xstrdup("agentjail");
	p->net_mode = AJ_NET_NONE;
	/* Each proxied connection costs the supervisor two descriptors and two buffers. */
	p->net_max_connections = AJ_DEFAULT_MAX_CONNECTIONS;
	for (size_t i = 0; i < sizeof default_env_allow / sizeof default_env_allow[0]; i++)
		aj_strv_push(&p->env_allow, default_env_allow[i]);
	p->limits = (struct aj_limits){
		.memory = 4ULL << 30,
		.pids = AJ_DEFAULT_PIDS,
		.cpu_milli = 0,
		.timeout_ms = 0,
		.file_size = 0,
		.open_files = 4096,
		.output_bytes = 64ULL << 20,
		.tmpfs_size = 1ULL << 30,
		.disk = AJ_DISK_DEFAULT,
		.output_action = AJ_OUTPUT_TRUNCATE,
	};
}

void aj_policy_free(struct aj_policy *p)
{
	free(p->preset);
	free(p->workspace);
	free(p->workspace_mount);
	free(p->cwd);
	free(p->user_name);
	free(p->home);
	free(p->shell);
	free(p->hostname);
	free(p->rootfs_image);
	free(p->process_user);
	aj_strv_free(&p->read_only);
	aj_strv_free(&p->read_write);
	aj_strv_free(&p->mask);
	aj_strv_free(&p->volumes);
	aj_strv_free(&p->env_allow);
	aj_strv_free(&p->env_set);
	aj_strv_free(&p->syscalls_allow);
	aj_strv_free(&p->allow_degraded);
	aj_strv_free(&p->net_allow);
	aj_strv_free(&p->net_deny);
	aj_strv_free(&p->net_allow_private);
	aj_strv_free(&p->net_publish);
	aj_policy_creds_free(p);
	memset(p, 0, sizeof *p);
}

struct preset {
	const char *name;
	enum aj_ws_mode workspace_mode;
	bool protect_git;
};

/* Codex's sandbox modes, by meaning: read-only lets the agent look but not touch;
 * workspace-write lets it edit the project but not the parts of .git that run code on the
 * host later (hooks, and config, which can name hooks and filters). */
static const struct preset presets[] = {
	{"workspace-write", AJ_WS_RW, true},
	{"read-only", AJ_WS_RO, true},
};

static const char *const preset_names[] = {"workspace-write", "read-only", NULL};

const char *const *aj_policy_preset_names(void)
{
	return preset_names;
}

int aj_policy_apply_preset(struct aj_policy *p, const char *name, struct aj_err *err)
{
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		if (strcmp(presets[i].name, name) != 0)
			continue;
		free(p->preset);
		p->preset = aj_xstrdup(name);
		p->workspace_mode = presets[i].workspace_mode;
		p->protect_git = presets[i].protect_git;
		return 0;
	}
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "preset: unknown preset \"%s\" (expected workspace-write or read-only)",
			  name);
}

int aj_policy_parse_size(const char *what, const char *s, uint64_t *out, struct aj_err *err)
{
	if (aj_parse_size(s, out) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected a size such as 512MiB, 2GiB or a number of bytes, got \"%s\"",
			  what, s);
}

int aj_policy_parse_duration(const char *what, const char *s, uint64_t *out, struct aj_err *err)
{
	if (aj_parse_duration_ms(s, out) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected a duration such as 30s, 5m, 250ms or a number of seconds, "
			  "got \"%s\"",
			  what, s);
}

int aj_policy_parse_cpus(const char *what, const char *s, uint64_t *out, struct aj_err *err)
{
	if (aj_parse_cpus_milli(s, out) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected a number of CPUs such as 1 or 0.5, got \"%s\"", what, s);
}

int aj_policy_parse_count(const char *what, const char *s, uint64_t *out, struct aj_err *err)
{
	if (aj_parse_u64(s, out) == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, 0,
			  "%s: expected a non-negative whole number, got \"%s\"", what, s);
}

bool aj_policy_env_name_ok(const char *name)
{
	if (!name[0] || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			return false;
	return true;
}

bool aj_policy_hostname_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 64 || name[0] == '-' || name[0] == '.')
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '.'))
			return false;
	return true;
}

char *aj_policy_text_image(const char *text)
{
	_cleanup_json_ json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	const char *v = json_string_value(json_object_get(json_object_get(doc, "rootfs"), "image"));

	return v ? aj_xstrdup(v) : NULL;
}
