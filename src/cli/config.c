/* The configuration file (config.h) and `agentjail config show`. */
#include "cli/config.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "policy/policy.h"
#include "state/store.h"

static struct aj_cli_config cfg;
static json_t *doc; /* owns the strings cfg points at */
static bool loaded;

enum field_kind { F_PATH, F_STRING, F_PRESET, F_LOG_LEVEL, F_LIMITS };

/* The fields of the file: one row each, read by load_field() and printed by config show. */
static const struct field {
	const char *name;
	enum field_kind kind;
	size_t off; /* in struct aj_cli_config */
	const char *help;
} fields[] = {
	{"state_dir", F_PATH, offsetof(struct aj_cli_config, state_dir),
	 "the state directory (--state-dir and AGENTJAIL_STATE_DIR win over it)"},
	{"policy", F_PATH, offsetof(struct aj_cli_config, policy),
	 "policy file of run, create and mcp --create when no --policy is given"},
	{"preset", F_PRESET, offsetof(struct aj_cli_config, preset),
	 "preset of run, create and mcp --create when no --preset is given"},
	{"limits", F_LIMITS, offsetof(struct aj_cli_config, limits),
	 "default limits, as the policy's \"limits\" (under the policy file and the flags)"},
	{"registry_mirror", F_STRING, offsetof(struct aj_cli_config, registry_mirror),
	 "registry mirror for images (accepted and shown; nothing uses it yet)"},
	{"log_level", F_LOG_LEVEL, offsetof(struct aj_cli_config, log_level),
	 "error, warn, info or debug (--log-level wins over it)"},
};

static int config_path(char *buf, size_t len)
{
	const char *env = getenv("AGENTJAIL_CONFIG"), *xdg = getenv("XDG_CONFIG_HOME"),
		   *home = getenv("HOME");

	if (env) {
		snprintf(buf, len, "%s", strcmp(env, "none") ? env : "");
		return 0;
	}
	if (geteuid() == 0)
		snprintf(buf, len, "/etc/agentjail/config.json");
	else if (xdg && xdg[0] == '/')
		snprintf(buf, len, "%s/agentjail/config.json", xdg);
	else if (home && home[0] == '/')
		snprintf(buf, len, "%s/.config/agentjail/config.json", home);
	else
		buf[0] = '\0';
	return 0;
}

/* A relative path in the file means relative to the file's directory. */
static const char *resolve(const char *v, json_t *holder, const char *key)
{
	char dir[4096], path[8300];

	if (v[0] == '/')
		return v;
	snprintf(dir, sizeof dir, "%s", cfg.path);
	snprintf(path, sizeof path, "%s/%s", dirname(dir), v);
	json_object_set_new(holder, key, json_string(path));
	return json_string_value(json_object_get(holder, key));
}

static bool one_of(const char *v, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(v, *names) == 0)
			return true;
	return false;
}

static int load_field(const struct field *f, json_t *v, struct aj_err *err)
{
	static const char *const levels[] = {"error", "warn", "info", "debug", NULL};
	void *dst = (char *)&cfg + f->off;
	const char *s = json_string_value(v);

	if (f->kind == F_LIMITS) {
		struct aj_policy p;
		json_t *wrap;
		int r;
		if (!json_is_object(v))
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "limits: expected an object");
		aj_policy_init(&p);
		wrap = json_pack("{s:O}", "limits", v);
		r = aj_policy_apply_json(&p, wrap, err);
		json_decref(wrap);
		aj_policy_free(&p);
		*(json_t **)dst = v;
		return r;
	}
	if (!s)
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s: expected a string", f->name);
	if (f->kind == F_PRESET && !one_of(s, aj_policy_preset_names()))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "preset: unknown preset \"%s\" (expected workspace-write or read-only)",
				  s);
	if (f->kind == F_LOG_LEVEL && !one_of(s, levels))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "log_level: expected error, warn, info or debug, got \"%s\"", s);
	*(const char **)dst = f->kind == F_PATH ? resolve(s, doc, f->name) : s;
	return 0;
}

static int load_doc(struct aj_err *err)
{
	struct stat st;
	json_error_t jerr;
	const char *key;
	json_t *v;

	/* A file that cannot even be looked up (missing, or below a directory this user may not
	 * search, as another user's HOME) is no configuration; one that is there must be read. */
	if (stat(cfg.path, &st) < 0) {
		snprintf(cfg.why, sizeof cfg.why, "%s", errno == ENOENT ? "not found" : strerror(errno));
		aj_cli_log(AJ_LOG_DEBUG, "configuration file \"%s\": %s", cfg.path, cfg.why);
		return 0;
	}
	doc = json_load_file(cfg.path, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		if (jerr.line < 1)
			return aj_err_set(err, AJ_LAYER_USAGE, 0, "%s", jerr.text);
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "line %d column %d: %s", jerr.line,
				  jerr.column, jerr.text);
	}
	cfg.found = true;
	if (!json_is_object(doc))
		return aj_err_set(err, AJ_LAYER_USAGE, 0, "expected a JSON object");
	json_object_foreach(doc, key, v)
	{
		const struct field *f = NULL;
		for (size_t i = 0; i < AJ_ARRAY_SIZE(fields) && !f; i++)
			if (strcmp(fields[i].name, key) == 0)
				f = &fields[i];
		if (!f)
			return aj_err_set(err, AJ_LAYER_USAGE, 0,
					  "%s: unknown field (expected one of: state_dir, policy, "
					  "preset, limits, registry_mirror, log_level)",
					  key);
		if (load_field(f, v, err) < 0)
			return -1;
	}
	return 0;
}

int aj_cli_config_load(struct aj_err *err)
{
	if (loaded)
		return 0;
	loaded = true;
	config_path(cfg.path, sizeof cfg.path);
	if (cfg.path[0] && load_doc(err) < 0)
		return aj_err_prefix(err, "configuration file \"%s\"", cfg.path),
		       aj_err_hint(err, "docs/cli.md describes the file; AGENTJAIL_CONFIG=none "
					"ignores it");
	if (cfg.log_level && !aj_cli.log_level_given)
		for (const struct aj_opt_choice *c = aj_cli_log_levels; c->name; c++)
			if (strcmp(c->name, cfg.log_level) == 0)
				aj_cli.log_level = (enum aj_log_level)c->value;
	return 0;
}

const struct aj_cli_config *aj_cli_config(void)
{
	return &cfg;
}

const char *aj_cli_state_dir(const char **source)
{
	const char *env = getenv("AGENTJAIL_STATE_DIR"), *src = "default", *dir = NULL;

	if (aj_cli.state_dir)
		dir = aj_cli.state_dir, src = "command line";
	else if (env && *env)
		dir = env, src = "AGENTJAIL_STATE_DIR";
	else if (cfg.state_dir)
		dir = cfg.state_dir, src = cfg.path;
	if (source)
		*source = src;
	return dir;
}

/* ---- agentjail config show ----------------------------------------------------------------- */

static void show_row(json_t *out, const char *name, json_t *value, const char *source)
{
	char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);

	if (out)
		json_object_set_new(out, name, json_pack("{s:O, s:s}", "value", value, "source",
							 source));
	else
		printf("%-22s %-40s %s\n", name,
		       json_is_string(value) ? json_string_value(value) : text ? text : "?", source);
	free(text);
	json_decref(value);
}

/* Each limit with its default or the file's value. */
static void show_limits(json_t *out)
{
	struct aj_policy p;
	json_t *all, *v, *pol, *wrap;
	const char *key;
	char name[64];

	aj_policy_init(&p);
	if (cfg.limits) {
		wrap = json_pack("{s:O}", "limits", cfg.limits);
		aj_policy_apply_json(&p, wrap, NULL);
		json_decref(wrap);
	}
	pol = aj_policy_to_json(&p);
	all = json_incref(json_object_get(pol, "limits"));
	json_decref(pol);
	json_object_foreach(all, key, v)
	{
		snprintf(name, sizeof name, "limits.%s", key);
		show_row(out, name, json_incref(v),
			 cfg.limits && json_object_get(cfg.limits, key) ? cfg.path : "default");
	}
	json_decref(all);
	aj_policy_free(&p);
}

static void config_show(void)
{
	json_t *out = aj_cli.json ? json_object() : NULL;
	const char *src, *dir = aj_cli_state_dir(&src), *lvl;
	char def[4096];

	if (!out)
		printf("configuration file: %s (%s)\n\n", cfg.path[0] ? cfg.path : "none",
		       !cfg.path[0] ? "AGENTJAIL_CONFIG=none" : cfg.found ? "read" : cfg.why);
	if (!dir && aj_state_dir_default(def, sizeof def) == 0)
		dir = def;
	show_row(out, "state_dir", dir ? json_string(dir) : json_null(), src);
	show_row(out, "policy", cfg.policy ? json_string(cfg.policy) : json_null(),
		 cfg.policy ? cfg.path : "default");
	show_row(out, "preset", json_string(cfg.preset ? cfg.preset : "workspace-write"),
		 cfg.preset ? cfg.path : "default");
	show_limits(out);
	show_row(out, "registry_mirror",
		 cfg.registry_mirror ? json_string(cfg.registry_mirror) : json_null(),
		 cfg.registry_mirror ? cfg.path : "default");
	lvl = aj_args_choice_name(aj_cli_log_levels, (int)aj_cli.log_level);
	show_row(out, "log_level", json_string(lvl ? lvl : "warn"),
		 aj_cli.log_level_given ? "command line" : cfg.log_level ? cfg.path : "default");
	if (out)
		aj_cli_print_json(json_pack("{s:s?, s:b, s:o}", "file", cfg.path[0] ? cfg.path : NULL,
					    "found", cfg.found, "values", out));
}

static int cmd_config(const struct aj_verb *v, int argc, char **argv)
{
	struct aj_err err;
	char **args;
	int nargs, r;

	aj_err_clear(&err);
	if ((r = aj_verb_parse(v, NULL, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs > 1 || (nargs == 1 && strcmp(args[0], "show"))) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "config: expected show, got \"%s\"",
			   args[nargs > 1 ? 1 : 0]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	config_show();
	return 0;
}

static const char *const config_words[] = {"show", NULL};
static const struct aj_arg config_args[] = {
	AJ_ARG_WORDS("show", config_words),
	AJ_ARG_END,
};
static const struct aj_option config_options[] = {AJ_OPT_END};
const struct aj_verb aj_verb_config = {
	.name = "config",
	.fn = cmd_config,
	.summary = "show the configuration in effect and where each value came from",
	.synopsis = "config [show] [OPTIONS]",
	.help = "Print the defaults in effect: those of the configuration file (docs/cli.md) and "
		"the built-in ones, with where each value came from.",
	.options = config_options,
	.args = config_args,
};
