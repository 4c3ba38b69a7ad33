/* agentjail storage init: a quota-capable filesystem for the state directory, in an image file
 * next to it (storage/backing.h, docs/storage.md), for hosts whose own filesystem cannot bound
 * a sandbox's disk (limits.disk). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/units.h"
#include "storage/backing.h"
#include "storage/quota.h"

struct storage_cli {
	uint64_t size;
	const char *fs;
};

#define SC(field) .off = offsetof(struct storage_cli, field)
static const struct aj_option init_options[] = {
	{AJ_OPT("size", 0, AJ_OPT_SIZE), SC(size), .metavar = "SIZE",
	 .help = "the filesystem's size (default 20GiB; a sparse file: only what is written "
		 "takes the host's disk)"},
	{AJ_OPT("fs", 0, AJ_OPT_STRING), SC(fs), .metavar = "FS",
	 .help = "btrfs (quota groups; the default), ext4 or xfs (project quotas; need a kernel "
		 "with CONFIG_QUOTA)"},
	AJ_OPT_END,
};
#undef SC

static int cmd_init(const struct aj_verb *v, int argc, char **argv)
{
	struct storage_cli c = {.size = AJ_BACKING_DEFAULT, .fs = "btrfs"};
	struct aj_quota_probe q;
	struct aj_err err;
	char state[4096], image[4200], size[32];
	char **args;
	int nargs, r;

	if ((r = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return r > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs > 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "storage init: unexpected argument \"%s\"",
			   args[0]);
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_cli_state_path(state, sizeof state) < 0) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "storage init: no state directory");
		aj_err_hint(&err, "set HOME or pass --state-dir");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (aj_backing_init(state, c.size, c.fs, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	aj_quota_probe(state, &q);
	aj_format_size(c.size, size, sizeof size);
	snprintf(image, sizeof image, "%s.img", state);
	if (aj_cli.json) {
		aj_cli_print_json(json_pack("{s:s, s:s, s:s, s:I, s:s}", "state_dir", state, "image",
					    image, "fs", c.fs, "size_bytes", (json_int_t)c.size,
					    "mechanism", aj_quota_kind_name(q.kind)));
		return 0;
	}
	printf("%s is now a %s %s filesystem in %s (sparse); disk limits use %ss.\n"
	       "agentjail mounts it again when it next opens the state directory; to mount it at "
	       "boot, see docs/storage.md.\n",
	       state, size, c.fs, image, aj_quota_kind_name(q.kind));
	return 0;
}

static const struct aj_verb subs[] = {
	{.name = "init",
	 .fn = cmd_init,
	 .summary = "make the state directory a quota-capable filesystem",
	 .synopsis = "storage init [--size SIZE] [--fs btrfs|ext4|xfs]",
	 .help = "Creates STATE.img, a filesystem on which disk limits (limits.disk, --disk) are "
		 "enforceable, and mounts it on the state directory, which must be missing or "
		 "empty. As root.",
	 .options = init_options},
};
static const struct aj_verb *const sub_list[] = {&subs[0], NULL};

static int cmd_storage(const struct aj_verb *v, int argc, char **argv)
{
	return aj_verb_run_sub(v, "docs/storage.md says how disk limits work.", argc, argv);
}

static const char *const storage_words[] = {"init", NULL};
static const struct aj_arg storage_args[] = {AJ_ARG_WORDS("SUBCOMMAND", storage_words),
					     AJ_ARG_END};
const struct aj_verb aj_verb_storage = {
	.name = "storage",
	.fn = cmd_storage,
	.summary = "the state directory's filesystem, for disk limits",
	.synopsis = "storage SUBCOMMAND [OPTIONS]",
	.help = "The filesystem under the state directory, on which limits.disk is enforced "
		"(docs/storage.md).",
	.args = storage_args,
	.flags = AJ_VERB_OWN_ARGS,
	.subs = sub_list,
};
