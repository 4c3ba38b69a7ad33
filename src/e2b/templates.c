/* Templates. An E2B template is a disk image built from a Dockerfile; agentjail sandboxes are
 * not made from images: every sandbox sees the host's system directories read-only under its
 * policy (docs/policy.md). A template name here therefore stands for a policy: "base" (what
 * the SDK asks for by default) is the workspace-write preset unless --e2b-templates says
 * otherwise, and --e2b-templates FILE, a JSON object {"NAME": POLICY, ...} with policies as
 * POST /v1/sandboxes takes them (a "preset" inside them included), adds or redefines names.
 * Any other name is refused when a sandbox is created. Every policy is checked at start, so a
 * typo fails the daemon's start, not a client's create. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "e2b/internal.h"
#include "policy/policy.h"

/* Parses the policy the way create will; the caller's error names the template. */
static int check_policy(const char *name, json_t *pol, struct aj_err *err)
{
	struct aj_policy p;
	const char *preset = NULL;
	int r;

	if (!json_is_object(pol))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "template \"%s\": expected a policy object", name);
	aj_policy_init(&p);
	r = aj_policy_json_preset(pol, &preset, err) < 0 ||
			    aj_policy_apply_preset(&p, preset ? preset : "workspace-write", err) < 0 ||
			    aj_policy_apply_json(&p, pol, err) < 0
		    ? -1
		    : 0;
	aj_policy_free(&p);
	return r < 0 ? aj_err_prefix(err, "template \"%s\"", name) : 0;
}

static bool name_ok(const char *n)
{
	size_t len = strlen(n);

	return len > 0 && len <= 128 &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/-") ==
		       len;
}

int e2b_templates_load(struct aj_e2b *e, const char *path, struct aj_err *err)
{
	_cleanup_json_ json_t *t = NULL;
	json_error_t jerr;
	const char *name;
	json_t *pol;

	e->templates = json_pack("{s:{}}", "base");
	if (!path)
		return 0;
	t = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!t)
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "--e2b-templates \"%s\": line %d: %s",
				  path, jerr.line, jerr.text);
	if (!json_is_object(t))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				  "--e2b-templates \"%s\": expected an object of NAME: POLICY", path);
	json_object_foreach(t, name, pol) {
		if (!name_ok(name))
			aj_err_set(err, AJ_LAYER_USAGE, EINVAL,
				   "template \"%s\": a name is 1-128 of A-Za-z0-9_.:/-", name);
		if (!name_ok(name) || check_policy(name, pol, err) < 0)
			return aj_err_prefix(err, "--e2b-templates \"%s\"", path);
	}
	json_object_update(e->templates, t);
	return 0;
}

json_t *e2b_template(const struct aj_e2b *e, const char *name)
{
	return name ? json_object_get(e->templates, name) : NULL;
}
