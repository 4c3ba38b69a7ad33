/* A process of an OCI bundle (runtime-spec "process"), read by the field-table engine: the
 * bundle's own (config.json's "process", from spec.c) and `exec --process`'s process.json
 * (aj_oci_process_parse). The user, the console size and each rlimit are read into a struct
 * of their own and checked as a whole (ids below 65536, a size a terminal can have); the
 * capability sets become masks, every name checked. Errors and paths are config.json's
 * (spec_internal.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/cleanup.h"
#include "oci/spec_internal.h"

/* ---- process: user, capabilities, rlimits, console size -------------------------------- */

struct user_doc {
	int64_t uid, gid;
	gid_t groups[AJ_CONTAINER_MAX_GROUPS];
	size_t n_groups;
};

static int refuse_username(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			   const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	return OCI_REFUSE(path, "not supported (Windows only)");
}

/* The ids, each checked by the element's row; dst is the user's. */
static int store_groups(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct user_doc *u = dst;
	size_t i;
	json_t *g;

	if (json_array_size(v) > AJ_CONTAINER_MAX_GROUPS)
		return OCI_REFUSE(path, "more than %d", AJ_CONTAINER_MAX_GROUPS);
	json_array_foreach(v, i, g)
		u->groups[u->n_groups++] = (gid_t)json_integer_value(g);
	return 0;
}

static const struct aj_jf_field gid_el = {.name = "", .type = AJ_JF_INT, .min = 0, .max = 65535,
					  .expect = "an id below 65536"};

static const struct aj_jf_field user_rows[] = {
	{.name = "uid", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct user_doc, uid), OCI_NONNEG},
	{.name = "gid", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct user_doc, gid), OCI_NONNEG},
	{.name = "username", .type = AJ_JF_ANY, .flags = AJ_JF_NAMED_APART,
	 .parse = refuse_username},
	{.name = "additionalGids", .type = AJ_JF_ARRAY, .flags = AJ_JF_NAMED_APART, .off = 0,
	 .sub = &gid_el, .parse = store_groups, .expect = "an array"},
	OCI_END,
};

/* Required: absent or null is refused as a value that is no object. */
static int read_user(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		     const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_container_process *p = OCI_CTX(o)->p;
	struct user_doc u = {0};

	if (!v)
		return OCI_REFUSE(path, "expected an object with uid and gid");
	if (oci_read_sub(user_rows, v, &u, path, o, e) < 0)
		return -1;
	if (u.uid > 65535 || u.gid > 65535)
		return OCI_REFUSE(path, "uid and gid must be below 65536 (each container has "
					"65536 ids)");
	p->uid = (uint32_t)u.uid;
	p->gid = (uint32_t)u.gid;
	memcpy(p->groups, u.groups, sizeof p->groups);
	p->n_groups = u.n_groups;
	return 0;
}

static int check_cap_name(const char *path, const char *s, struct aj_err *err)
{
	if (aj_cap_from_name(s) >= 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL,
			  "%s: \"%s\" is not a capability (CAP_CHOWN, CAP_NET_BIND_SERVICE, ...)",
			  path, s);
}

/* A set's names into its mask; dst is the set's. */
static int add_caps(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	uint64_t *set = dst;
	size_t i;
	json_t *c;

	json_array_foreach(v, i, c)
		*set |= UINT64_C(1) << aj_cap_from_name(json_string_value(c));
	return 0;
}

#define CAP_SET(n, s)                                                                          \
	{.name = (n), .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE | AJ_JF_NAMED_APART,          \
	 .off = offsetof(struct aj_container_process, caps) + (s) * sizeof(uint64_t),           \
	 .check = check_cap_name, .parse = add_caps}

static const struct aj_jf_field caps_rows[] = {
	CAP_SET("bounding", AJ_CAPSET_BOUNDING),       CAP_SET("effective", AJ_CAPSET_EFFECTIVE),
	CAP_SET("inheritable", AJ_CAPSET_INHERITABLE), CAP_SET("permitted", AJ_CAPSET_PERMITTED),
	CAP_SET("ambient", AJ_CAPSET_AMBIENT),	      OCI_END,
};

static const char *const rlimit_names[] = {
	"RLIMIT_AS",	"RLIMIT_CORE",	   "RLIMIT_CPU",     "RLIMIT_DATA",	  "RLIMIT_FSIZE",
	"RLIMIT_LOCKS", "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE",	  "RLIMIT_NOFILE",
	"RLIMIT_NPROC", "RLIMIT_RSS",	   "RLIMIT_RTPRIO",  "RLIMIT_RTTIME", "RLIMIT_SIGPENDING",
	"RLIMIT_STACK", NULL,
};
/* In the order of rlimit_names. */
static const int rlimit_resources[] = {
	RLIMIT_AS,    RLIMIT_CORE,  RLIMIT_CPU,	 RLIMIT_DATA,	RLIMIT_FSIZE,	   RLIMIT_LOCKS,
	RLIMIT_MEMLOCK, RLIMIT_MSGQUEUE, RLIMIT_NICE, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_RSS,
	RLIMIT_RTPRIO, RLIMIT_RTTIME, RLIMIT_SIGPENDING, RLIMIT_STACK,
};
_Static_assert(AJ_ARRAY_SIZE(rlimit_resources) + 1 == AJ_ARRAY_SIZE(rlimit_names),
	       "a resource per rlimit name");

struct rlimit_doc {
	int type; /* index in rlimit_names */
	int64_t soft, hard;
};

#define RLIMIT_VALUE(n, m)                                                                     \
	{.name = (n), .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED,                                \
	 .off = offsetof(struct rlimit_doc, m),                                                 \
	 .expect = "an integer (soft and hard must be integers)"}

static const struct aj_jf_field rlimit_rows[] = {
	{.name = "type", .type = AJ_JF_ENUM, .flags = AJ_JF_REQUIRED | AJ_JF_NAMED_APART,
	 .off = offsetof(struct rlimit_doc, type), .values = rlimit_names,
	 .expect = "one of RLIMIT_NOFILE, RLIMIT_NPROC, ..."},
	RLIMIT_VALUE("soft", soft),
	RLIMIT_VALUE("hard", hard),
	OCI_END,
};

static int add_rlimit(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_container_process *p = OCI_CTX(o)->p;
	struct rlimit_doc r = {0};

	if (oci_read_sub(rlimit_rows, v, &r, path, o, e) < 0)
		return -1;
	if (p->n_rlimits == AJ_CONTAINER_MAX_RLIMITS)
		return OCI_REFUSE(path, "too many rlimits");
	p->rlimits[p->n_rlimits++] = (struct aj_container_rlimit){
		rlimit_resources[r.type], (uint64_t)r.soft, (uint64_t)r.hard};
	return 0;
}

static const struct aj_jf_field rlimit_el = {.name = "", .type = AJ_JF_OBJECT,
					     .parse = add_rlimit};

struct console_doc {
	int64_t height, width;
};

static const struct aj_jf_field console_rows[] = {
	{.name = "height", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct console_doc, height), OCI_NONNEG},
	{.name = "width", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE,
	 .off = offsetof(struct console_doc, width), OCI_NONNEG},
	OCI_END,
};

/* A value that is no object gives no size, as it always did. */
static int read_console(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct console_doc c = {0, 0};

	if (!json_is_object(v))
		return 0;
	if (oci_read_sub(console_rows, v, &c, path, o, e) < 0)
		return -1;
	if (c.height > 65535 || c.width > 65535)
		return OCI_REFUSE(path, "too large");
	OCI_CTX(o)->p->rows = (unsigned)c.height;
	OCI_CTX(o)->p->cols = (unsigned)c.width;
	return 0;
}

/* ---- process ---------------------------------------------------------------------------- */

static int check_env(const char *path, const char *s, struct aj_err *err)
{
	if (strchr(s, '='))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" is not NAME=value", path, s);
}

static int check_cwd(const char *path, const char *s, struct aj_err *err)
{
	if (s[0] == '/')
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" is not an absolute path", path,
			  s);
}

/* Anything but an integer is ignored, as it always was. */
static int read_oom_score(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (json_is_integer(v)) {
		OCI_CTX(o)->p->have_oom_score = true;
		OCI_CTX(o)->p->oom_score_adj = (int)json_integer_value(v);
	}
	return 0;
}

static int note_apparmor(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			 const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	oci_note(o, path, "not applied; Landlock and seccomp confine the container");
	return 0;
}

#define P(m) offsetof(struct aj_container_process, m)
static const struct aj_jf_field process_rows[] = {
	{.name = "terminal", .type = AJ_JF_BOOL, .off = P(terminal), .expect = "a boolean"},
	{.name = "args", .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE | AJ_JF_ELEMS_APART,
	 .off = P(args)},
	{.name = "env", .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE | AJ_JF_ELEMS_APART,
	 .off = P(env), .check = check_env},
	{.name = "cwd", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED | AJ_JF_NULLABLE,
	 .off = P(cwd), .check = check_cwd},
	{.name = "user", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE | AJ_JF_SEES_ABSENT,
	 .parse = read_user, .expect = "an object with uid and gid"},
	{.name = "capabilities", .type = AJ_JF_OBJECT, .sub = caps_rows},
	{.name = "rlimits", .type = AJ_JF_ARRAY, .sub = &rlimit_el, .expect = "an array"},
	{.name = "consoleSize", .type = AJ_JF_ANY, .parse = read_console},
	{.name = "noNewPrivileges", .type = AJ_JF_BOOL, .off = P(no_new_privs),
	 .expect = "a boolean"},
	{.name = "oomScoreAdj", .type = AJ_JF_ANY, .parse = read_oom_score},
	{.name = "apparmorProfile", .type = AJ_JF_ANY, .parse = note_apparmor},
	{.name = "selinuxLabel", .type = AJ_JF_ANY, .parse = oci_note_not_applied},
	OCI_END,
};
#undef P

int oci_read_process(json_t *obj, const char *path, struct oci_read *ctx, struct aj_jf_error *e)
{
	struct aj_jf_opts o = {AJ_LAYER_POLICY, OCI_READ_FLAGS, path, ctx};
	const struct aj_jf_field *f = NULL;
	json_t *v = obj;
	char args[AJ_JF_PATH_MAX];

	if (aj_jf_read(process_rows, obj, ctx->p, &o, e) < 0)
		return -1;
	snprintf(args, sizeof args, "%s.args", path);
	return ctx->p->args.n ? 0 : OCI_REFUSE(args, "at least the program is required");
}

int aj_oci_process_parse(json_t *obj, const char *where, struct aj_container_process *p,
			 struct aj_strv *notes, struct aj_err *err)
{
	struct oci_read ctx = {NULL, p, notes};
	struct aj_jf_error e;

	memset(p, 0, sizeof *p);
	if (!json_is_object(obj))
		return OCI_BAD(where, "expected an object");
	return oci_read_process(obj, where, &ctx, &e) < 0 ? oci_error(&e, err) : 0;
}

void aj_oci_process_free(struct aj_container_process *p)
{
	aj_strv_free(&p->args);
	aj_strv_free(&p->env);
	free(p->cwd);
	p->cwd = NULL;
}

