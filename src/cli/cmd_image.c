/* agentjail image pull|import|export|ls|inspect|rm|prune: the image store (docs/images.md).
 * Each subcommand opens the state directory's store, does its one thing, and prints what it
 * did (a name or digest per line, or JSON with --json). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/config.h"
#include "common/cleanup.h"
#include "common/units.h"
#include "common/util.h"
#include "image/import.h"
#include "image/ref.h"
#include "image/pull.h"
#include "image/root.h"
#include "image/store.h"

struct image_cli {
	const char *platform, *authfile, *ca_file, *name;
	bool insecure, quiet, all, force;
};

/* The manager's store and the image store on it, for the local owner. */
struct opened {
	struct aj_mgr m;
	struct aj_images im;
};

/* Nothing open yet: what close_store() may be given before open_store() ran. */
#define OPENED_INIT {.im = {.layers_dir = -1, .lock_fd = -1, .blobs = {.dir = -1}}}

static int open_store(struct opened *o, struct aj_err *err)
{
	memset(o, 0, sizeof *o);
	o->im.layers_dir = o->im.lock_fd = o->im.blobs.dir = -1;
	if (aj_cli_open(&o->m, err) < 0)
		return -1;
	return aj_images_open(o->m.state, o->m.store, &o->im, err);
}

static void close_store(struct opened *o)
{
	aj_images_close(&o->im);
	aj_mgr_close(&o->m);
}
#define _cleanup_opened_ __attribute__((cleanup(close_store)))

/* A stored (canonical) name as users type it: "busybox:latest", not docker.io/library/... */
static void short_name(const char *canonical, char *buf, size_t len)
{
	struct aj_image_ref ref;
	char why[128];

	if (aj_image_ref_parse(canonical, &ref, why, sizeof why) == 0)
		aj_image_ref_short(&ref, buf, len);
	else
		snprintf(buf, len, "%s", canonical);
}

static json_t *image_json(const struct aj_image_rec *r)
{
	char created[40], name[700];
	json_t *names = json_array(), *layers = json_array();

	for (size_t i = 0; i < r->names.n; i++) {
		short_name(r->names.v[i], name, sizeof name);
		json_array_append_new(names, json_string(name));
	}
	for (size_t i = 0; i < r->layers.n; i++)
		json_array_append_new(layers, json_string(r->layers.v[i]));
	aj_format_time_ms((uint64_t)r->created_ms, created, sizeof created);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o}", "id", r->digest, "config",
			 r->config, "platform", r->platform, "source", r->source, "created",
			 created, "size_bytes", (json_int_t)r->size_bytes, "names", names, "layers",
			 layers);
}

/* One line of `image ls`, or the image as JSON. */
static void print_image(const struct aj_image_rec *r, const struct image_cli *c)
{
	char size[32], created[40], name[700];

	if (aj_cli.json) {
		aj_cli_print_json(image_json(r));
		return;
	}
	if (c->quiet) {
		printf("%s\n", r->digest);
		return;
	}
	aj_format_size((uint64_t)r->size_bytes, size, sizeof size);
	aj_format_time_ms((uint64_t)r->created_ms, created, sizeof created);
	created[19] = '\0';
	short_name(r->names.n ? r->names.v[0] : "<none>", name, sizeof name);
	printf("%-48s %.12s  %-12s %-10s %s\n", name, r->digest + 7, r->platform, size,
	       created);
	for (size_t i = 1; i < r->names.n; i++) {
		short_name(r->names.v[i], name, sizeof name);
		printf("%-48s %.12s\n", name, r->digest + 7);
	}
}

static int expect_args(const char *sub, int nargs, int min, int max, const char *what,
		       struct aj_err *err)
{
	if (nargs >= min && nargs <= max)
		return 0;
	return aj_err_set(err, AJ_LAYER_USAGE, 0, "image %s: %s %s", sub,
			  nargs < min ? "missing" : "too many arguments: expected", what);
}

static int parse(const struct aj_verb *v, struct image_cli *c, int argc, char **argv, char ***args,
		 int *nargs, struct aj_err *err)
{
	memset(c, 0, sizeof *c);
	return aj_verb_parse(v, c, argc, argv, args, nargs, err);
}

static int cmd_pull(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	struct aj_err err;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("pull", nargs, 1, 1, "the image reference (REF)", &err) < 0 ||
	    open_store(&o, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	struct aj_pull_opts po = {
		.registry = {.authfile = c.authfile,
			     .insecure = c.insecure,
			     .ca_file = c.ca_file,
			     .mirror = aj_cli_config()->registry_mirror,
			     .progress = c.quiet || aj_cli.json ? NULL : stderr,
			     .progress_tty = isatty(2)},
		.platform = c.platform,
		.owner = "",
	};
	if (aj_image_pull(&o.im, args[0], &po, &rec, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(image_json(&rec));
	else
		printf("%s\n", rec.digest);
	return 0;
}

static int cmd_import(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	struct aj_err err;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("import", nargs, 1, 1, "the file or directory (FILE|DIR)", &err) < 0 ||
	    open_store(&o, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	struct aj_import_opts io = {.name = c.name, .platform = c.platform, .owner = ""};
	if (aj_image_import(&o.im, args[0], &io, &rec, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json)
		aj_cli_print_json(image_json(&rec));
	else if (rec.names.n) {
		char name[700];
		short_name(rec.names.v[0], name, sizeof name);
		printf("%s\n", name);
	} else {
		printf("%s\n", rec.digest);
	}
	return 0;
}

static int cmd_export(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	struct aj_err err;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("export", nargs, 2, 2, "the image and the file (NAME FILE)", &err) < 0 ||
	    open_store(&o, &err) < 0 || aj_image_export(&o.im, "", args[0], args[1], &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	return 0;
}

static int cmd_ls(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	struct aj_image_rec *recs = NULL;
	struct aj_err err;
	size_t n = 0;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("ls", nargs, 0, 0, "nothing", &err) < 0 || open_store(&o, &err) < 0 ||
	    aj_store_image_list(o.m.store, c.all ? NULL : "", &recs, &n, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	if (aj_cli.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, image_json(&recs[i]));
		aj_cli_print_json(a);
	} else {
		if (!c.quiet)
			printf("%-48s %-12s  %-12s %-10s %s\n", "NAME", "ID", "PLATFORM", "SIZE",
			       "CREATED");
		for (size_t i = 0; i < n; i++)
			print_image(&recs[i], &c);
	}
	aj_image_recs_free(recs, n);
	return 0;
}

static int cmd_inspect(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	_cleanup_image_rec_ struct aj_image_rec rec = {0};
	_cleanup_image_config_ struct aj_image_config cfg = {0};
	struct aj_err err;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("inspect", nargs, 1, 1, "the image (NAME)", &err) < 0 ||
	    open_store(&o, &err) < 0 || aj_images_find(&o.im, "", args[0], &rec, &cfg, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	json_t *j = image_json(&rec), *env = json_array(), *ep = json_array(), *cmd = json_array();
	for (size_t i = 0; i < cfg.env.n; i++)
		json_array_append_new(env, json_string(cfg.env.v[i]));
	for (size_t i = 0; i < cfg.entrypoint.n; i++)
		json_array_append_new(ep, json_string(cfg.entrypoint.v[i]));
	for (size_t i = 0; i < cfg.cmd.n; i++)
		json_array_append_new(cmd, json_string(cfg.cmd.v[i]));
	json_object_set_new(j, "config",
			    json_pack("{s:o, s:o, s:o, s:s, s:s}", "env", env, "entrypoint", ep,
				      "cmd", cmd, "user", cfg.user ? cfg.user : "", "workdir",
				      cfg.workdir ? cfg.workdir : ""));
	aj_cli_print_json(j);
	return 0;
}

/* A name goes (given an id, every name of the image); the image goes with its last name (its
 * layers at the next prune). */
static int remove_one(struct opened *o, const char *ref, struct aj_err *err)
{
	struct aj_image_rec rec;
	struct aj_image_ref parsed;
	char canon[700], why[128];
	bool by_id = aj_digest_valid(ref) || (strspn(ref, "0123456789abcdef") == strlen(ref) &&
					      strlen(ref) >= 12);
	int r = 0;

	/* The lock first: what is found is then what is removed. */
	if (aj_images_lock(&o->im, err) < 0)
		return -1;
	if (aj_images_find(&o->im, "", ref, &rec, NULL, err) < 0) {
		aj_images_unlock(&o->im);
		return -1;
	}
	if (!by_id && aj_image_ref_parse(ref, &parsed, why, sizeof why) == 0) {
		parsed.digest[0] = '\0';
		aj_image_ref_format(&parsed, canon, sizeof canon);
	}
	for (size_t i = 0; r == 0 && i < rec.names.n; i++)
		if (by_id || !strcmp(rec.names.v[i], canon))
			r = aj_store_image_untag(o->m.store, "", rec.names.v[i], err);
	if (r == 0) {
		struct aj_strv left = AJ_STRV_INIT;
		char who[200] = "";
		r = aj_store_image_names_all(o->m.store, rec.digest, &left, err);
		/* An image a sandbox uses stays, unnamed, until that sandbox goes; prune then
		 * takes it. */
		if (r == 0 && left.n == 0)
			r = aj_images_used_by(&o->im, rec.digest, who, sizeof who, err);
		if (r == 0 && left.n == 0 && !who[0])
			r = aj_store_image_delete(o->m.store, rec.digest, err);
		else if (r == 0 && left.n == 0)
			fprintf(stderr, "agentjail: image %s is used by %s: kept, without a name, "
					"until nothing uses it\n",
				ref, who);
		aj_strv_free(&left);
	}
	aj_images_unlock(&o->im);
	if (r == 0)
		printf("%s\n", ref);
	aj_image_rec_free(&rec);
	return r;
}

static int cmd_rm(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	struct aj_err err;
	char **args;
	int nargs, rc, failed = 0;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("rm", nargs, 1, 1 << 20, "the image (NAME...)", &err) < 0 ||
	    open_store(&o, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	for (int i = 0; i < nargs; i++)
		if (remove_one(&o, args[i], &err) < 0)
			failed = aj_cli_fail(aj_cli.json, &err);
	return failed;
}

static int cmd_prune(const struct aj_verb *v, int argc, char **argv)
{
	struct image_cli c;
	_cleanup_opened_ struct opened o = OPENED_INIT;
	struct aj_err err;
	unsigned removed = 0;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (expect_args("prune", nargs, 0, 0, "nothing", &err) < 0 || open_store(&o, &err) < 0 ||
	    aj_images_drop_unnamed(&o.im, &removed, &err) < 0 ||
	    aj_images_gc(&o.im, true, &removed, NULL, &err) < 0)
		rc = aj_cli_fail(aj_cli.json, &err);
	else if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:i}", "removed", (int)removed));
	else
		printf("removed %u unused blobs and layers\n", removed);
	return rc;
}

#define IC(m) .to = AJ_TO_CTX, .off = offsetof(struct image_cli, m)
static const struct aj_option pull_options[] = {
	{AJ_OPT("platform", 0, AJ_OPT_STRING), IC(platform), .metavar = "OS/ARCH[/VARIANT]",
	 .help = "the image of an index for this platform (default: this host's)"},
	{AJ_OPT("authfile", 0, AJ_OPT_STRING), IC(authfile), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "credentials (docker's and podman's auth.json format)"},
	{AJ_OPT("insecure", 0, AJ_OPT_SWITCH), IC(insecure),
	 .help = "allow plain HTTP and unverified TLS for this registry"},
	{AJ_OPT("ca-file", 0, AJ_OPT_STRING), IC(ca_file), .metavar = "FILE",
	 .complete = AJ_COMP_FILE, .help = "CA certificates for the registry's TLS"},
	{AJ_OPT("quiet", 'q', AJ_OPT_SWITCH), IC(quiet), .help = "no progress"},
	AJ_OPT_END,
};
static const struct aj_option import_options[] = {
	{AJ_OPT("name", 0, AJ_OPT_STRING), IC(name), .metavar = "NAME",
	 .help = "the image's name (needed for a root filesystem tarball)"},
	{AJ_OPT("platform", 0, AJ_OPT_STRING), IC(platform), .metavar = "OS/ARCH[/VARIANT]",
	 .help = "the image of a layout's index for this platform"},
	AJ_OPT_END,
};
static const struct aj_option ls_options[] = {
	{AJ_OPT("quiet", 'q', AJ_OPT_SWITCH), IC(quiet), .help = "only the image ids"},
	{AJ_OPT("all", 'a', AJ_OPT_SWITCH), IC(all), .help = "images without a name too"},
	AJ_OPT_END,
};
static const struct aj_option no_options[] = {AJ_OPT_END};

static const struct aj_arg ref_arg[] = {AJ_ARG("REF", AJ_COMP_NONE), AJ_ARG_END};
static const struct aj_arg image_arg[] = {AJ_ARG("IMAGE", AJ_COMP_IMAGE), AJ_ARG_END};
static const struct aj_arg file_arg[] = {AJ_ARG("FILE|DIR", AJ_COMP_FILE), AJ_ARG_END};
static const struct aj_arg export_args[] = {AJ_ARG("NAME", AJ_COMP_IMAGE),
					    AJ_ARG("FILE", AJ_COMP_FILE), AJ_ARG_END};
static const struct aj_arg names_arg[] = {AJ_ARG_REST("NAME", AJ_COMP_IMAGE), AJ_ARG_END};

static const struct aj_verb subs[] = {
	{.name = "pull",
	 .fn = cmd_pull,
	 .summary = "pull an image from a registry",
	 .synopsis = "image pull [OPTIONS] REF",
	 .help = "Pull REF ([REGISTRY/]REPOSITORY[:TAG][@DIGEST]) into the store and name it "
		 "so; prints its id.",
	 .options = pull_options,
	 .args = ref_arg},
	{.name = "import",
	 .fn = cmd_import,
	 .summary = "import an OCI layout, a docker save archive or a root filesystem tarball",
	 .synopsis = "image import [--name NAME] FILE|DIR",
	 .help = "Import an image from an OCI layout (a directory or a tar), a `docker save` "
		 "archive or a root filesystem tarball (which needs --name); prints its name.",
	 .options = import_options,
	 .args = file_arg},
	{.name = "export",
	 .fn = cmd_export,
	 .summary = "write an image as an OCI layout tar",
	 .synopsis = "image export NAME FILE",
	 .help = "Write the image as an OCI layout tar (\"-\": standard output).",
	 .options = no_options,
	 .args = export_args},
	{.name = "ls",
	 .fn = cmd_ls,
	 .summary = "list the images",
	 .synopsis = "image ls [-a] [-q] [--json]",
	 .help = "List the images of the store.",
	 .options = ls_options},
	{.name = "inspect",
	 .fn = cmd_inspect,
	 .summary = "show an image and its config",
	 .synopsis = "image inspect NAME",
	 .help = "The image and its config, as JSON.",
	 .options = no_options,
	 .args = image_arg},
	{.name = "rm",
	 .fn = cmd_rm,
	 .summary = "remove images' names",
	 .synopsis = "image rm NAME...",
	 .help = "Remove the names (or, given an id, every name of the image); an image without "
		 "a name is gone, its layers at the next prune.",
	 .options = no_options,
	 .args = names_arg},
	{.name = "prune",
	 .fn = cmd_prune,
	 .summary = "remove unused blobs and layers",
	 .synopsis = "image prune",
	 .help = "Remove the blobs and layers no image uses, and what interrupted pulls left.",
	 .options = no_options},
};
static const struct aj_verb *const sub_list[] = {&subs[0], &subs[1], &subs[2], &subs[3],
						 &subs[4], &subs[5], &subs[6], NULL};

static int cmd_image(const struct aj_verb *v, int argc, char **argv)
{
	return aj_verb_run_sub(v, "docs/images.md describes the store.", argc, argv);
}

static const char *const image_words[] = {"pull",    "import", "export", "ls",
					  "inspect", "rm",     "prune",  NULL};
static const struct aj_arg image_args[] = {AJ_ARG_WORDS("SUBCOMMAND", image_words), AJ_ARG_END};
const struct aj_verb aj_verb_image = {
	.name = "image",
	.fn = cmd_image,
	.summary = "images: pull, import, export, list, inspect, remove, prune",
	.synopsis = "image SUBCOMMAND [OPTIONS]",
	.help = "The image store of the state directory (docs/images.md).",
	.args = image_args,
	.flags = AJ_VERB_OWN_ARGS,
	.subs = sub_list,
};
