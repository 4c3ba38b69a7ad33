/* Persistent sandboxes as E2B shows them: the Sandbox, SandboxDetail and ListedSandbox objects
 * (docs/e2b-protocol.md 4.2-4.4), and E2B metadata kept as labels.
 *
 * Metadata keys may be any string ("odd key&=" included) while a label key ends at its first
 * '=': keys are stored percent-encoded (everything but A-Za-z0-9_.- as %XX), so they round
 * trip and never contain '/', which keeps them apart from the module's own labels
 * ("e2b/template"). `agentjail ls` and the /v1 API show the encoded form. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "e2b/internal.h"
#include "storage/volumes.h"

#define META_MAX 64
#define META_KEY_MAX 64
#define META_VALUE_MAX 1024

bool e2b_id_ok(const char *id)
{
	return strlen(id) == 16 && strspn(id, "0123456789abcdef") == 16;
}

const char *e2b_label(const struct aj_sandbox_rec *rec, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < rec->labels.n; i++)
		if (!strncmp(rec->labels.v[i], key, n) && rec->labels.v[i][n] == '=')
			return rec->labels.v[i] + n + 1;
	return NULL;
}

bool e2b_is_ours(const struct aj_sandbox_rec *rec)
{
	return e2b_label(rec, E2B_LABEL_TEMPLATE) != NULL;
}

/* ---- metadata ------------------------------------------------------------------------------ */

static void encode_key(const char *k, char *out, size_t len)
{
	static const char hexd[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *c = (const unsigned char *)k; *c && o + 4 < len; c++) {
		if (isalnum(*c) || *c == '_' || *c == '.' || *c == '-') {
			out[o++] = (char)*c;
		} else {
			out[o++] = '%';
			out[o++] = hexd[*c >> 4];
			out[o++] = hexd[*c & 15];
		}
	}
	out[o] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
		: c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void decode_key(const char *k, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		int hi, lo;
		if (k[i] == '%' && i + 2 < n && (hi = hexval(k[i + 1])) >= 0 &&
		    (lo = hexval(k[i + 2])) >= 0) {
			out[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			out[o++] = k[i];
		}
	}
	out[o] = '\0';
}

int e2b_metadata_labels(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_strv *labels = dst;
	char enc[META_KEY_MAX * 3 + 8];
	const char *k;
	json_t *val;

	if (!json_is_object(v) || json_object_size(v) > META_MAX)
		return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
				  "metadata: expected an object of at most %d string values", META_MAX);
	json_object_foreach(v, k, val) {
		if (!k[0] || strlen(k) > META_KEY_MAX || !json_is_string(val) ||
		    json_string_length(val) > META_VALUE_MAX ||
		    strlen(json_string_value(val)) != json_string_length(val))
			return aj_jf_fail(e, AJ_JF_VALUE, f, path, v,
					  "metadata \"%.64s\": keys are 1-%d bytes, values strings of "
					  "at most %d bytes without NUL",
					  k, META_KEY_MAX, META_VALUE_MAX);
		encode_key(k, enc, sizeof enc);
		aj_strv_pushf(labels, "%s=%s", enc, json_string_value(val));
	}
	return 0;
}

json_t *e2b_metadata_json(const struct aj_sandbox_rec *rec)
{
	json_t *o = json_object();
	char key[META_KEY_MAX * 3 + 8];

	for (size_t i = 0; i < rec->labels.n; i++) {
		const char *l = rec->labels.v[i], *eq = strchr(l, '=');
		if (!eq || memchr(l, '/', (size_t)(eq - l)))
			continue; /* the module's own */
		decode_key(l, (size_t)(eq - l), key, sizeof key);
		json_object_set_new(o, key, json_string(eq + 1));
	}
	return o;
}

/* ---- times ----------------------------------------------------------------------------------- */

json_t *e2b_time_json(int64_t ms)
{
	char buf[40];

	aj_format_time_ms((uint64_t)(ms > 0 ? ms : 0), buf, sizeof buf);
	return json_string(buf);
}

/* A paused E2B sandbox has no lifetime (it does not expire, as E2B's): its end is when it was
 * paused, the record's last change. */
int64_t e2b_end_ms(const struct aj_sandbox_rec *rec)
{
	if (!rec->max_lifetime_ms)
		return rec->updated_ms;
	return rec->started_ms + rec->max_lifetime_ms;
}

/* ---- objects --------------------------------------------------------------------------------- */

static json_t *template_json(const struct aj_sandbox_rec *rec)
{
	const char *t = e2b_label(rec, E2B_LABEL_TEMPLATE);

	return json_string(t ? t : "base");
}

/* getHost(port) is PORT-ID.domain: the daemon's preview listener (--preview-listen), or
 * null (the SDK's default domain) without one. */
static json_t *domain_json(void)
{
	const char *d = aj_srv_preview_domain();

	return d ? json_string(d) : json_null();
}

/* Sandboxes without allowPublicTraffic need the token on requests to their ports. */
static json_t *traffic_token_json(const struct aj_sandbox_rec *rec)
{
	_cleanup_json_ json_t *p = json_loads(rec->policy ? rec->policy : "{}", 0, NULL);
	const char *mode =
		json_string_value(json_object_get(json_object_get(p, "network"), "preview"));
	char token[AJ_PREVIEW_TOKEN_LEN + 1];

	if (!aj_srv_preview_domain() || (mode && !strcmp(mode, "public")))
		return json_null();
	aj_srv_preview_sandbox_token(rec->id, token);
	return json_string(token);
}

json_t *e2b_sandbox_json(const struct aj_e2b *e, const struct aj_sandbox_rec *rec)
{
	char token[E2B_TOKEN_LEN + 1];

	e2b_access_token(e, rec->id, token);
	return json_pack("{s:s, s:o, s:o, s:s, s:s, s:s, s:o, s:o}", "sandboxID", rec->id,
			 "templateID", template_json(rec), "alias", template_json(rec), "clientID",
			 "agentjail", "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", token,
			 "trafficAccessToken", traffic_token_json(rec), "domain", domain_json());
}

struct shape {
	long cpus;
	long memory_mb;
	long disk_mb; /* limits.disk, 0: none */
	bool internet;
};

/* CPUs and memory of the policy's limits, the host's where the policy sets none. */
static void shape_of(const struct aj_sandbox_rec *rec, struct shape *sh)
{
	json_t *p = json_loads(rec->policy ? rec->policy : "{}", 0, NULL);
	json_t *lim = json_object_get(p, "limits");
	json_t *cpus = json_object_get(lim, "cpus"), *mem = json_object_get(lim, "memory");
	json_t *disk = json_object_get(lim, "disk");
	const char *net = json_string_value(json_object_get(json_object_get(p, "network"), "mode"));
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

	sh->cpus = json_is_number(cpus) ? (long)(json_number_value(cpus) + 0.999)
					: sysconf(_SC_NPROCESSORS_ONLN);
	if (sh->cpus < 1)
		sh->cpus = 1;
	sh->memory_mb = json_is_integer(mem) ? (long)(json_integer_value(mem) >> 20)
					     : (pages > 0 && psz > 0 ? pages / (1048576 / psz) : 0);
	sh->disk_mb = json_is_integer(disk) ? (long)(json_integer_value(disk) >> 20) : 0;
	sh->internet = net && strcmp(net, "none") != 0;
	json_decref(p);
}

/* The policy's volumes (by name) as E2B's [{name, path}]. */
static json_t *volume_mounts_json(const struct aj_sandbox_rec *rec)
{
	_cleanup_json_ json_t *p = json_loads(rec->policy ? rec->policy : "{}", 0, NULL);
	json_t *a = json_array(), *v;
	struct aj_volume_entry e;
	char why[200];
	size_t i;

	json_array_foreach(json_object_get(json_object_get(p, "filesystem"), "volumes"), i, v)
		if (aj_volume_entry_parse(json_string_value(v) ? json_string_value(v) : "", &e, why,
					  sizeof why) == 0 &&
		    !e.host)
			json_array_append_new(a, json_pack("{s:s, s:s}", "name", e.source, "path",
							   e.target));
	return a;
}

json_t *e2b_detail_json(const struct aj_e2b *e, const struct aj_sandbox_rec *rec, bool detail)
{
	struct shape sh;
	char token[E2B_TOKEN_LEN + 1];
	bool pause = !strcmp(rec->lifetime_action, "pause");
	json_t *j;

	shape_of(rec, &sh);
	j = json_pack("{s:o, s:o, s:s, s:s, s:o, s:o, s:i, s:i, s:i, s:o, s:s, s:s}", "templateID",
		      template_json(rec), "alias", template_json(rec), "sandboxID", rec->id,
		      "clientID", "agentjail", "startedAt", e2b_time_json(rec->started_ms), "endAt",
		      e2b_time_json(e2b_end_ms(rec)), "cpuCount", (int)sh.cpus, "memoryMB",
		      (int)sh.memory_mb, "diskSizeMB", (int)sh.disk_mb, "metadata", e2b_metadata_json(rec),
		      "state", rec->state != AJ_ST_PAUSED ? "running" : "paused",
		      "envdVersion", E2B_ENVD_VERSION);
	if (!j || !detail)
		return j;
	e2b_access_token(e, rec->id, token);
	json_object_set_new(j, "envdAccessToken", json_string(token));
	json_object_set_new(j, "domain", domain_json());
	json_object_set_new(j, "allowInternetAccess", json_boolean(sh.internet));
	json_object_set_new(j, "lifecycle", json_pack("{s:s, s:b}", "onTimeout",
						      pause ? "pause" : "kill", "autoResume", 0));
	json_object_set_new(j, "volumeMounts", volume_mounts_json(rec));
	return j;
}
