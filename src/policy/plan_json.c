/* Printing a plan: JSON for reports and tools, a short summary for people. */
#include <stdint.h>
#include <stdio.h>
#include <linux/capability.h>
#include <string.h>

#include "policy/plan.h"
#include "policy/plan_internal.h"
#include "rules/landlock.h"

static const char *op_kind_name(int kind)
{
	switch (kind) {
	case AJ_OP_DIR: return "dir";
	case AJ_OP_BIND: return "bind";
	case AJ_OP_TMPFS: return "tmpfs";
	case AJ_OP_SYMLINK: return "symlink";
	case AJ_OP_FILE: return "file";
	case AJ_OP_PROC: return "proc";
	case AJ_OP_DEVPTS: return "devpts";
	case AJ_OP_MASK: return "mask";
	case AJ_OP_SEAL: return "seal";
	case AJ_OP_OVERLAY: return "overlay";
	case AJ_OP_MOUNT: return "mount";
	case AJ_OP_ALLOW: return "allow";
	case AJ_OP_DENY: return "deny";
	default: return "?";
	}
}

static const char *landlock_name(uint64_t r)
{
	if (!r)
		return NULL;
	if ((r & AJ_LL_RW) == AJ_LL_RW)
		return "read-write";
	if (r & AJ_LL_FS_IOCTL_DEV)
		return "device+ioctl";
	if (r & AJ_LL_FS_WRITE_FILE)
		return "device";
	if (r & AJ_LL_FS_EXECUTE)
		return "read-exec";
	if (r & AJ_LL_FS_READ_FILE)
		return "read";
	return "list";
}

static json_t *op_json(const struct aj_op *op)
{
	json_t *o = json_pack("{s:s, s:s}", "op", op_kind_name(op->kind), "path", op->dst);
	const char *ll = landlock_name(op->landlock);

	if (op->kind == AJ_OP_BIND && !(op->flags & AJ_OPF_SELF))
		json_object_set_new(o, "source", json_string(op->src));
	if (op->kind == AJ_OP_SYMLINK)
		json_object_set_new(o, "target", json_string(op->src));
	if (op->kind == AJ_OP_BIND || op->kind == AJ_OP_MASK || op->kind == AJ_OP_SEAL)
		json_object_set_new(o, "read_only", json_boolean(op->flags & AJ_OPF_RO ||
								 op->kind == AJ_OP_MASK));
	if (op->opts)
		json_object_set_new(o, "options", json_string(op->opts));
	if (op->kind == AJ_OP_MOUNT && op->mtype)
		json_object_set_new(o, "type", json_string(op->mtype));
	if (op->flags & AJ_OPF_FROM_PARENT)
		json_object_set_new(o, "idmapped", json_true());
	if (ll)
		json_object_set_new(o, "landlock", json_string(ll));
	if (op->why)
		json_object_set_new(o, "why", json_string(op->why));
	return o;
}

static json_t *limits_json(const struct aj_limits *l)
{
	json_t *o = json_object();
#define NUM(k, v) json_object_set_new(o, k, (v) ? json_integer((json_int_t)(v)) : json_null())
	NUM("memory_bytes", l->memory);
	NUM("pids", l->pids);
	json_object_set_new(o, "cpus", l->cpu_milli ? json_real((double)l->cpu_milli / 1000.0)
						    : json_null());
	NUM("timeout_ms", l->timeout_ms);
	NUM("file_size_bytes", l->file_size);
	NUM("open_files", l->open_files);
	NUM("output_bytes", l->output_bytes);
	NUM("tmpfs_size_bytes", l->tmpfs_size);
	NUM("disk_bytes", l->disk == AJ_DISK_DEFAULT ? 0 : l->disk);
#undef NUM
	json_object_set_new(o, "output_action",
			    json_string(l->output_action == AJ_OUTPUT_KILL ? "kill" : "truncate"));
	return o;
}

/* The effective policy, without the values of environment.set: they are often tokens, and
 * reports and event logs end up in places the secrets should not. */
static json_t *redacted_policy(const struct aj_policy *pol)
{
	json_t *j = aj_policy_to_json(pol);
	json_t *set = json_object_get(json_object_get(j, "environment"), "set");
	const char *k;
	json_t *v;

	json_object_foreach(set, k, v)
		json_object_set_new(set, k, json_string("(redacted)"));
	return j;
}

/* Where the proxy listens and what the sandbox is told; placeholder values stay out (they
 * are worthless outside, but reports need not carry them). */
static json_t *egress_json(const struct aj_plan *p)
{
	json_t *creds;
	char http[64], socks[64];

	if (!p->egress.on)
		return json_null();
	creds = json_array();
	for (size_t i = 0; i < p->policy->n_creds; i++)
		json_array_append_new(creds, json_string(p->policy->creds[i].name));
	snprintf(http, sizeof http, "http://127.0.0.1:%u", p->egress.port);
	snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%u", p->egress.port);
	return json_pack("{s:s, s:s, s:o, s:o}", "http_proxy", http, "all_proxy", socks,
			 "ca_bundle",
			 p->egress.bundle_op != SIZE_MAX ? json_string(AJ_EGRESS_BUNDLE) : json_null(),
			 "credentials", creds);
}

/* The capabilities held, by name (an image's root); empty otherwise. */
json_t *aj_plan_caps_json(uint64_t keep)
{
	static const char *const names[64] = {
		[CAP_CHOWN] = "CAP_CHOWN",
		[CAP_DAC_OVERRIDE] = "CAP_DAC_OVERRIDE",
		[CAP_FOWNER] = "CAP_FOWNER",
		[CAP_FSETID] = "CAP_FSETID",
		[CAP_KILL] = "CAP_KILL",
		[CAP_SETGID] = "CAP_SETGID",
		[CAP_SETUID] = "CAP_SETUID",
		[CAP_SETPCAP] = "CAP_SETPCAP",
		[CAP_NET_BIND_SERVICE] = "CAP_NET_BIND_SERVICE",
		[CAP_SYS_CHROOT] = "CAP_SYS_CHROOT",
		[CAP_AUDIT_WRITE] = "CAP_AUDIT_WRITE",
		[CAP_SETFCAP] = "CAP_SETFCAP",
	};
	json_t *a = json_array();

	for (int c = 0; c < 64; c++)
		if ((keep >> c) & 1)
			json_array_append_new(a, json_string(names[c] ? names[c] : "?"));
	return a;
}

/* The image a root is made of: its name as given, its digest, its layers; null otherwise. */
static json_t *image_json(const struct aj_plan *p)
{
	json_t *layers;

	if (!p->image)
		return json_null();
	layers = json_array();
	for (size_t i = 0; i < p->image->lowers->n; i++)
		json_array_append_new(layers, json_string(p->image->lowers->v[i]));
	return json_pack("{s:s, s:s, s:o, s:s?}", "name", p->image->name, "digest",
			 p->image->digest, "layers", layers, "system_layer", p->image->rw_dir);
}

/* The host id of inside id `id` (a uid, or a gid with `gid`). */
static uint32_t host_id(const struct aj_plan *p, uint32_t id, bool gid)
{
	if (p->privileged)
		return p->id_base + id;
	if (p->subids && id != 0)
		return (gid ? p->image->subids->sub_gid : p->image->subids->sub_uid) + id - 1;
	return gid ? p->host_gid_base : p->id_base;
}

json_t *aj_plan_to_json(const struct aj_plan *p)
{
	json_t *root = json_object(), *ops = json_array(), *layers = json_array();
	json_t *env = json_array();

	for (size_t i = 0; i < p->n_ops; i++)
		json_array_append_new(ops, op_json(&p->ops[i]));
	for (int i = 0; i < AJ_PL__COUNT; i++)
		json_array_append_new(layers,
				      json_pack("{s:s, s:s, s:s}", "layer", aj_plan_layer_name(i),
						"state", aj_plan_layer_state_name(p->layers[i].state),
						"detail", p->layers[i].detail));
	for (size_t i = 0; i < p->env.n; i++) {
		const char *eq = strchr(p->env.v[i], '=');
		json_array_append_new(env, json_stringn(p->env.v[i], eq ? (size_t)(eq - p->env.v[i])
									 : strlen(p->env.v[i])));
	}
	json_object_set_new(root, "sandbox", json_string(p->id));
	json_object_set_new(root, "mode", json_string(p->privileged ? "privileged" : "rootless"));
	json_object_set_new(root, "ids", json_string(aj_plan_maps_range(p)
							   ? (p->subids ? "subids" : "range")
							   : "single"));
	json_object_set_new(root, "tier", json_string(aj_plan_tier_name(p->tier)));
	json_object_set_new(root, "scratch", p->scratch ? json_string(p->scratch) : json_null());
	/* As root the host range is allocated at launch: null before that (--dry-run). */
	bool known = !p->privileged || p->id_base;
	json_object_set_new(root, "user",
			    json_pack("{s:I, s:I, s:o, s:o}", "uid", (json_int_t)p->uid, "gid",
				      (json_int_t)p->gid, "host_uid",
				      known ? json_integer((json_int_t)host_id(p, p->uid, false))
					    : json_null(),
				      "host_gid",
				      known ? json_integer((json_int_t)host_id(p, p->gid, true))
					    : json_null()));
	json_object_set_new(json_object_get(root, "user"), "name", json_string(p->user_name));
	json_object_set_new(json_object_get(root, "user"), "capabilities",
			    aj_plan_caps_json(p->caps_keep));
	json_object_set_new(root, "image", image_json(p));
	json_object_set_new(root, "policy", redacted_policy(p->policy));
	json_object_set_new(root, "workspace", json_string(p->policy->workspace));
	json_object_set_new(root, "cwd", json_string(p->cwd));
	json_object_set_new(root, "layers", layers);
	json_object_set_new(root, "rootfs", ops);
	json_object_set_new(root, "limits", limits_json(&p->policy->limits));
	json_object_set_new(root, "seccomp", json_pack("{s:s, s:I, s:I}", "profile",
						       aj_plan_tier_of(p->tier)->seccomp_profile(p),
						       "rules", (json_int_t)p->sc_rules,
						       "bpf_instructions", (json_int_t)p->sc_len));
	json_object_set_new(root, "landlock_abi", json_integer(p->landlock_abi));
	json_object_set_new(root, "environment", env);
	json_object_set_new(root, "egress", egress_json(p));
	if (p->tier == AJ_TIER_GVISOR)
		json_object_set_new(root, "gvisor", aj_plan_gvisor_json(p));
	return root;
}

void aj_plan_print(const struct aj_plan *p, FILE *f)
{
	aj_plan_tier_of(p->tier)->print_header(p, f);
	fprintf(f, "  workspace %s (%s), cwd %s\n", p->policy->workspace,
		p->policy->workspace_mode == AJ_WS_RO ? "read-only" : "read-write", p->cwd);
	for (int i = 0; i < AJ_PL__COUNT; i++) {
		const struct aj_layer_status *l = &p->layers[i];
		fprintf(f, "  %-18s %-11s %s\n", aj_plan_layer_name(i),
			aj_plan_layer_state_name(l->state), l->detail);
	}
}

/* Both tiers' usability, and what the landlock tier keeps and loses, layer by layer. */
static json_t *tiers_json(const struct aj_features *f)
{
	json_t *tiers = json_object(), *rows = json_array();
	char detail[600];
	size_t n;
	const struct aj_tier_row *r = aj_plan_tier_rows(&n);

	for (int t = AJ_TIER_NAMESPACES; t <= AJ_TIER_GVISOR; t++) {
		bool usable = aj_plan_tier_usable(f, t, detail, sizeof detail);
		json_object_set_new(tiers, aj_plan_tier_name(t),
				    json_pack("{s:b, s:s}", "usable", usable, "detail", detail));
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s}", "layer",
						      aj_plan_layer_name(r[i].layer), "namespaces",
						      r[i].namespaces, "landlock", r[i].landlock));
	json_object_set_new(json_object_get(tiers, "landlock"), "compared", rows);
	return tiers;
}

json_t *aj_plan_features_json(const struct aj_features *f, const char *version)
{
	json_t *j = aj_features_json(f, version);

	if (j)
		json_object_set_new(j, "tiers", tiers_json(f));
	return j;
}
