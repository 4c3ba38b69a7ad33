/* agentjail volume create|ls|inspect|rm|cp: the local owner's volumes of the state directory
 * (storage/volumes.h, docs/storage.md "Volumes"), which `run` and `create` mount with
 * --volume NAME:/path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/units.h"
#include "common/util.h"
#include "storage/volumes.h"

struct volume_cli {
	uint64_t size;
	bool force;
};

#define VC(field) .off = offsetof(struct volume_cli, field)
static const struct aj_option create_options[] = {
	{AJ_OPT("size", 0, AJ_OPT_SIZE), VC(size), .metavar = "SIZE",
	 .help = "a disk quota on the volume's files (needs a quota-capable state directory)"},
	AJ_OPT_END,
};
static const struct aj_option rm_options[] = {
	{AJ_OPT("force", 'f', AJ_OPT_SWITCH), VC(force),
	 .help = "remove it even while running sandboxes mount it"},
	AJ_OPT_END,
};
static const struct aj_option no_options[] = {
	AJ_OPT_END,
};
#undef VC

/* What `inspect` and --json show: the record with what its files take and whether a running
 * sandbox mounts it. */
static json_t *volume_json(const struct aj_volume *v)
{
	json_t *j = aj_volume_json(v);

	json_object_set_new(j, "used_bytes", json_integer((json_int_t)aj_volume_used(v)));
	json_object_set_new(j, "in_use", json_boolean(aj_volume_in_use(v)));
	return j;
}

static int cmd_create(const struct aj_verb *v, int argc, char **argv)
{
	struct volume_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_volume vol;
	struct aj_err err;
	char **args;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_volume_create(m.state, "", args[0], c.size, &vol, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(volume_json(&vol));
	else
		printf("%s\n", vol.name);
	return 0;
}

static int cmd_ls(const struct aj_verb *v, int argc, char **argv)
{
	struct volume_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_volume *list = NULL;
	struct aj_err err;
	size_t n = 0;
	char **args;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 0, 0, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_volume_list(m.state, "", &list, &n, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, volume_json(&list[i]));
		aj_cli_print_json(a);
	} else {
		printf("%-24s %-20s %10s %10s  %s\n", "NAME", "ID", "SIZE", "USED", "IN USE");
		for (size_t i = 0; i < n; i++) {
			char size[32] = "-", used[32];
			if (list[i].size)
				aj_format_size(list[i].size, size, sizeof size);
			aj_format_size(aj_volume_used(&list[i]), used, sizeof used);
			printf("%-24s %-20s %10s %10s  %s\n", list[i].name, list[i].id, size, used,
			       aj_volume_in_use(&list[i]) ? "yes" : "no");
		}
	}
	free(list);
	return 0;
}

static int cmd_inspect(const struct aj_verb *v, int argc, char **argv)
{
	struct volume_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_volume vol;
	struct aj_err err;
	char **args;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0 || aj_volume_get(m.state, "", args[0], &vol, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	aj_cli_print_json(volume_json(&vol));
	return 0;
}

static int cmd_rm(const struct aj_verb *v, int argc, char **argv)
{
	struct volume_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_err err;
	char **args;
	int nargs, failed = 0, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 1, 1 << 20, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (aj_cli_open(&m, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	for (int i = 0; i < nargs; i++) {
		if (aj_volume_remove(m.state, "", args[i], c.force, &err) < 0)
			failed = aj_cli_fail(aj_cli.json, &err);
		else if (!aj_cli.json)
			printf("%s\n", args[i]);
	}
	return failed;
}

/* "NAME:PATH" names a place in a volume (a volume's name has no '/'); anything else is a host
 * path. */
static bool volume_side(const char *arg, char *name, size_t len, const char **path)
{
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || memchr(arg, '/', (size_t)(colon - arg)) ||
	    (size_t)(colon - arg) >= len)
		return false;
	snprintf(name, len, "%.*s", (int)(colon - arg), arg);
	*path = colon + 1;
	return true;
}

static int cmd_cp(const struct aj_verb *v, int argc, char **argv)
{
	struct volume_cli c = {0};
	_cleanup_mgr_ struct aj_mgr m = {0};
	struct aj_volume vol;
	struct aj_err err;
	char **args, name[AJ_VOLUME_NAME_MAX + 2];
	const char *vpath;
	unsigned files = 0;
	bool in;
	int nargs, r = aj_verb_parse_n(v, &c, argc, argv, &args, &nargs, 2, 2, &err);

	if (r)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	in = volume_side(args[1], name, sizeof name, &vpath);
	if (in == volume_side(args[0], name, sizeof name, &vpath)) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0,
			   "volume cp: exactly one side is VOLUME:PATH (got \"%s\" and \"%s\")",
			   args[0], args[1]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (!in)
		volume_side(args[0], name, sizeof name, &vpath);
	if (aj_cli_open(&m, &err) < 0 || aj_volume_get(m.state, "", name, &vol, &err) < 0 ||
	    aj_volume_copy(&vol, vpath, in ? args[0] : args[1], in, &files, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:i}", "files", (int)files));
	return 0;
}

static const struct aj_arg name_arg[] = {AJ_ARG("NAME", AJ_COMP_NONE), AJ_ARG_END};
static const struct aj_arg names_arg[] = {AJ_ARG_REST("NAME", AJ_COMP_NONE), AJ_ARG_END};
static const struct aj_arg cp_args[] = {AJ_ARG("SRC", AJ_COMP_FILE), AJ_ARG("DST", AJ_COMP_FILE),
					AJ_ARG_END};

static const struct aj_verb subs[] = {
	{.name = "create",
	 .fn = cmd_create,
	 .summary = "create a volume",
	 .synopsis = "volume create [--size SIZE] NAME",
	 .help = "Create the volume NAME (1 to 63 letters, digits, '_', '-' and '.'): a directory "
		 "that outlives sandboxes and that several may mount at once (--volume NAME:/path). "
		 "--size bounds its files with a disk quota.",
	 .options = create_options,
	 .args = name_arg},
	{.name = "ls",
	 .fn = cmd_ls,
	 .summary = "list the volumes",
	 .synopsis = "volume ls [--json]",
	 .help = "The volumes' names, ids, sizes, what their files take, and whether a running "
		 "sandbox mounts them.",
	 .options = no_options},
	{.name = "inspect",
	 .fn = cmd_inspect,
	 .summary = "show a volume as JSON",
	 .synopsis = "volume inspect NAME",
	 .help = "A volume's id, name, size, creation time, bytes used and use, as JSON.",
	 .options = no_options,
	 .args = name_arg},
	{.name = "rm",
	 .fn = cmd_rm,
	 .summary = "remove volumes and their files",
	 .synopsis = "volume rm [-f] NAME...",
	 .help = "Remove the volumes (by name or id) with their files; refused while a running "
		 "sandbox mounts one, unless -f.",
	 .options = rm_options,
	 .args = names_arg},
	{.name = "cp",
	 .fn = cmd_cp,
	 .summary = "copy files between the host and a volume",
	 .synopsis = "volume cp SRC NAME:PATH\nvolume cp NAME:PATH DST",
	 .help = "Copy a file or a tree into or out of a volume, like cp -r. Inside the volume no "
		 "link is followed (links are copied as links); copied in, files belong to the "
		 "sandbox user.",
	 .options = no_options,
	 .args = cp_args},
};
static const struct aj_verb *const sub_list[] = {&subs[0], &subs[1], &subs[2], &subs[3],
						 &subs[4], NULL};

static int cmd_volume(const struct aj_verb *v, int argc, char **argv)
{
	return aj_verb_run_sub(v, "docs/storage.md (\"Volumes\") says how sandboxes mount them.",
			       argc, argv);
}

static const char *const volume_words[] = {"create", "ls", "inspect", "rm", "cp", NULL};
static const struct aj_arg volume_args[] = {AJ_ARG_WORDS("SUBCOMMAND", volume_words),
					    AJ_ARG_END};
const struct aj_verb aj_verb_volume = {
	.name = "volume",
	.fn = cmd_volume,
	.summary = "volumes: directories sandboxes share, that outlive them",
	.synopsis = "volume SUBCOMMAND [OPTIONS]",
	.help = "The state directory's volumes, mounted by `run` and `create` with --volume "
		"NAME:/path[:ro] (docs/storage.md).",
	.args = volume_args,
	.flags = AJ_VERB_OWN_ARGS,
	.subs = sub_list,
};
