#include "build/template.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "image/manifest.h"

#define ARG_MAX_BYTES (256u << 10)

/* E2B's provisioning of an image: its user "user", made with what the image has. */
static const char provision[] =
	"grep -q '^user:' /etc/passwd 2>/dev/null || useradd -m -s /bin/sh user 2>/dev/null || "
	"adduser -D -s /bin/sh user 2>/dev/null || { mkdir -p /home/user && "
	"id=$(awk -F: '$3>=1000 && $3<60000 && $3>=m {m=$3+1} END {print m?m:1000}' /etc/passwd "
	"/etc/group) && echo \"user:x:$id:$id::/home/user:/bin/sh\" >>/etc/passwd && "
	"echo \"user:x:$id:\" >>/etc/group && chown $id:$id /home/user; }; mkdir -p /home/user";

bool aj_template_hash_ok(const char *s)
{
	return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static struct aj_df_insn *add(struct aj_template *t, enum aj_df_kind kind, size_t step)
{
	struct aj_df_insn *in;

	t->df.v = aj_xrealloc(t->df.v, (t->df.n + 1) * sizeof *t->df.v);
	t->step_of = aj_xrealloc(t->step_of, (t->df.n + 1) * sizeof *t->step_of);
	in = &t->df.v[t->df.n];
	memset(in, 0, sizeof *in);
	in->kind = kind;
	in->line = (unsigned)step;
	in->flags = (struct aj_strv)AJ_STRV_INIT;
	in->args = (struct aj_strv)AJ_STRV_INIT;
	t->step_of[t->df.n++] = step;
	return in;
}

/* The instruction's text (messages, history, the cache key): its keyword and arguments. */
static void describe(struct aj_df_insn *in)
{
	size_t len = strlen(aj_df_kind_name(in->kind)) + 1;
	char *s;

	for (size_t i = 0; i < in->flags.n; i++)
		len += strlen(in->flags.v[i]) + 3;
	for (size_t i = 0; i < in->args.n; i++)
		len += strlen(in->args.v[i]) + 1;
	s = aj_xmalloc(len + 1);
	strcpy(s, aj_df_kind_name(in->kind));
	for (size_t i = 0; i < in->flags.n; i++)
		strcat(strcat(s, " --"), in->flags.v[i]);
	for (size_t i = 0; i < in->args.n; i++)
		strcat(strcat(s, " "), in->args.v[i]);
	in->text = s;
}

static int fail(struct aj_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct aj_err *err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "%s", msg);
}

/* args[i] of a step: a string without NUL of at most ARG_MAX_BYTES, "" when absent and
 * optional. */
static int arg(json_t *args, size_t i, bool required, size_t step, const char **out,
	       struct aj_err *err)
{
	json_t *v = json_array_get(args, i);

	*out = "";
	if (!v && !required)
		return 0;
	if (!json_is_string(v))
		return fail(err, "steps[%zu].args[%zu]: expected a string", step - 1, i);
	if (strlen(json_string_value(v)) != json_string_length(v) ||
	    json_string_length(v) > ARG_MAX_BYTES)
		return fail(err, "steps[%zu].args[%zu]: a string of at most %u bytes without NUL",
			    step - 1, i, ARG_MAX_BYTES);
	*out = json_string_value(v);
	if (required && !**out)
		return fail(err, "steps[%zu].args[%zu]: must not be empty", step - 1, i);
	return 0;
}

/* A COPY source: relative, beneath the uploaded context (the builder checks again). */
static bool source_ok(const char *src)
{
	const char *p = src;

	if (src[0] == '/')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && !strncmp(p, "..", 2))
			return false;
		p += n;
		p += *p == '/';
	}
	return true;
}

static int user_ok(const char *u, size_t step, size_t i, struct aj_err *err)
{
	if (strlen(u) <= 256 && !strpbrk(u, " \t\n\r=\"'\\"))
		return 0;
	return fail(err, "steps[%zu].args[%zu]: \"%.64s\" is not a user name (USER[:GROUP])",
		    step - 1, i, u);
}

static int step_copy(struct aj_template *t, json_t *st, json_t *args, size_t step,
		     struct aj_err *err)
{
	const char *src, *dest, *user, *mode, *hash;
	struct aj_df_insn *in;

	if (arg(args, 0, true, step, &src, err) < 0 || arg(args, 1, true, step, &dest, err) < 0 ||
	    arg(args, 2, false, step, &user, err) < 0 || arg(args, 3, false, step, &mode, err) < 0)
		return -1;
	hash = json_string_value(json_object_get(st, "filesHash"));
	if (!aj_template_hash_ok(hash))
		return fail(err, "steps[%zu].filesHash: expected the 64 hex digits of the files' "
			    "hash (the SDK's)", step - 1);
	if (!source_ok(src))
		return fail(err, "steps[%zu].args[0]: \"%.200s\": the source must be a path "
			    "relative to the template's context, without \"..\"", step - 1, src);
	if (*user && user_ok(user, step, 2, err) < 0)
		return -1;
	if (*mode && (strlen(mode) > 4 || strspn(mode, "01234567") != strlen(mode)))
		return fail(err, "steps[%zu].args[3]: \"%.16s\": expected an octal mode", step - 1,
			    mode);
	in = add(t, AJ_DF_COPY, step);
	if (*user)
		aj_strv_push_owned(&in->flags, aj_xasprintf("chown=%s", user));
	if (*mode)
		aj_strv_push_owned(&in->flags, aj_xasprintf("chmod=%s", mode));
	aj_strv_push_owned(&in->args, aj_xasprintf("%s/%s", hash, src));
	aj_strv_push(&in->args, dest);
	describe(in);
	if (!aj_strv_contains(&t->files, hash))
		aj_strv_push(&t->files, hash);
	return 0;
}

static int step_env(struct aj_template *t, json_t *args, size_t step, struct aj_err *err)
{
	size_t n = json_array_size(args);
	struct aj_df_insn *in;

	if (n == 0 || n % 2)
		return fail(err, "steps[%zu].args: ENV takes pairs of a name and a value", step - 1);
	in = add(t, AJ_DF_ENV, step);
	for (size_t i = 0; i < n; i += 2) {
		const char *k, *v;
		if (arg(args, i, true, step, &k, err) < 0 || arg(args, i + 1, false, step, &v, err) < 0)
			return -1;
		if (strchr(k, '=') || strpbrk(k, " \t\n"))
			return fail(err, "steps[%zu].args[%zu]: \"%.64s\" is not a variable name",
				    step - 1, i, k);
		aj_strv_push_owned(&in->args, aj_xasprintf("%s=%s", k, v));
	}
	describe(in);
	return 0;
}

static int one_step(struct aj_template *t, json_t *st, size_t step, struct aj_err *err)
{
	const char *type = json_string_value(json_object_get(st, "type"));
	json_t *args = json_object_get(st, "args"), *force = json_object_get(st, "force");
	const char *a, *b;
	struct aj_df_insn *in;

	if (!json_is_object(st))
		return fail(err, "steps[%zu]: expected an object {type, args, force, filesHash}",
			    step - 1);
	if (!type)
		return fail(err, "steps[%zu].type: expected a string", step - 1);
	if (args && !json_is_array(args))
		return fail(err, "steps[%zu].args: expected an array of strings", step - 1);
	if (force && !json_is_boolean(force))
		return fail(err, "steps[%zu].force: expected true or false", step - 1);
	t->force = t->force || json_is_true(force);
	if (!strcmp(type, "COPY"))
		return step_copy(t, st, args, step, err);
	if (!strcmp(type, "ENV"))
		return step_env(t, args, step, err);
	if (!strcmp(type, "RUN")) {
		if (arg(args, 0, true, step, &a, err) < 0 || arg(args, 1, false, step, &b, err) < 0 ||
		    (*b && user_ok(b, step, 1, err) < 0))
			return -1;
		in = add(t, AJ_DF_RUN, step);
		aj_strv_push(&in->args, a);
		if (*b)
			aj_strv_push_owned(&in->flags, aj_xasprintf("user=%s", b));
		describe(in);
		return 0;
	}
	if (!strcmp(type, "WORKDIR") || !strcmp(type, "USER")) {
		bool user = type[0] == 'U';
		if (arg(args, 0, true, step, &a, err) < 0 || (user && user_ok(a, step, 0, err) < 0))
			return -1;
		in = add(t, user ? AJ_DF_USER : AJ_DF_WORKDIR, step);
		aj_strv_push(&in->args, a);
		describe(in);
		return 0;
	}
	return fail(err, "steps[%zu].type: \"%.32s\" is not a step agentjail builds (RUN, COPY, "
		    "ENV, WORKDIR, USER)", step - 1, type);
}

static int base(struct aj_template *t, json_t *body, struct aj_err *err)
{
	json_t *image = json_object_get(body, "fromImage"), *tpl = json_object_get(body,
									       "fromTemplate");
	const char *name;
	struct aj_df_insn *in;

	if (json_object_get(body, "fromImageRegistry") &&
	    !json_is_null(json_object_get(body, "fromImageRegistry")))
		return fail(err, "fromImageRegistry: registry credentials in a template are not "
			    "supported: the daemon's store pulls with its own registry settings "
			    "(docs/e2b.md)");
	if (image && tpl)
		return fail(err, "fromImage and fromTemplate: a template has one base");
	if (!image && !tpl)
		return fail(err, "fromImage: a template needs a base (fromImage or fromTemplate)");
	name = json_string_value(image ? image : tpl);
	if (!name || !*name || strlen(name) > 512 || strpbrk(name, " \t\n\r"))
		return fail(err, "%s: expected an image or template name",
			    image ? "fromImage" : "fromTemplate");
	in = add(t, AJ_DF_FROM, 0);
	aj_strv_push(&in->args, name);
	describe(in);
	if (tpl)
		return 0; /* a template is provisioned already */
	in = add(t, AJ_DF_RUN, 0);
	aj_strv_push(&in->args, provision);
	aj_strv_push(&in->flags, "user=root");
	describe(in);
	in = add(t, AJ_DF_USER, 0);
	aj_strv_push(&in->args, "user");
	describe(in);
	in = add(t, AJ_DF_WORKDIR, 0);
	aj_strv_push(&in->args, "/home/user");
	describe(in);
	return 0;
}

static int command(struct aj_template *t, json_t *body, const char *member, const char *label,
		   struct aj_err *err)
{
	json_t *v = json_object_get(body, member);

	if (!v || json_is_null(v) || (json_is_string(v) && !json_string_length(v)))
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
	    json_string_length(v) > 65536)
		return fail(err, "%s: expected a command line (a string of at most 64 KiB)", member);
	aj_strv_push_owned(&t->labels, aj_xasprintf("%s=%s", label, json_string_value(v)));
	return 0;
}

int aj_template_parse(json_t *body, struct aj_template *t, struct aj_err *err)
{
	json_t *steps = json_object_get(body, "steps"), *force = json_object_get(body, "force");
	size_t i;
	json_t *st;

	memset(t, 0, sizeof *t);
	t->files = (struct aj_strv)AJ_STRV_INIT;
	t->labels = (struct aj_strv)AJ_STRV_INIT;
	t->df.escape = '\\';
	if (!json_is_object(body))
		return fail(err, "the template: expected an object {fromImage, steps, ...}");
	if (steps && !json_is_array(steps) && !json_is_null(steps))
		return fail(err, "steps: expected an array of steps");
	if (json_array_size(steps) > AJ_TEMPLATE_MAX_STEPS)
		return fail(err, "steps: at most %d steps", AJ_TEMPLATE_MAX_STEPS);
	if (force && !json_is_boolean(force))
		return fail(err, "force: expected true or false");
	t->force = json_is_true(force);
	if (base(t, body, err) < 0)
		goto bad;
	json_array_foreach(steps, i, st) if (one_step(t, st, i + 1, err) < 0) goto bad;
	if (command(t, body, "startCmd", AJ_LABEL_START, err) < 0 ||
	    command(t, body, "readyCmd", AJ_LABEL_READY, err) < 0)
		goto bad;
	return 0;
bad:
	aj_template_free(t);
	return -1;
}

void aj_template_free(struct aj_template *t)
{
	for (size_t i = 0; i < t->df.n; i++) {
		aj_strv_free(&t->df.v[i].flags);
		aj_strv_free(&t->df.v[i].args);
		free(t->df.v[i].text);
	}
	free(t->df.v);
	free(t->step_of);
	aj_strv_free(&t->files);
	aj_strv_free(&t->labels);
	memset(t, 0, sizeof *t);
}
