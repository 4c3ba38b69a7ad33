/* libFuzzer harness for the OCI config parser (src/oci/spec.c): arbitrary bytes as config.json
 * through aj_oci_spec_parse(), and the same document's "process" through
 * aj_oci_process_parse() as `oci exec --process` reads one. Any input must end in a spec or an
 * error that names a field of config.json, never a crash or a leak; a spec that parses must
 * keep the promises plan_oci.c relies on. The spec is freed after every parse, failed or not,
 * as the OCI verbs do. Built by `make fuzz`. */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/spec.h"
#include "rules/caps.h"

static void check_spec(const struct aj_oci_spec *s)
{
	if (!s->have_proc || s->proc.args.n == 0 || !s->proc.cwd || s->proc.cwd[0] != '/')
		abort(); /* a container must have a program and an absolute cwd */
	if (!s->root_path || !json_is_object(s->annotations) || s->n_ns > AJ_CONTAINER_MAX_NS ||
	    !aj_oci_spec_has_ns(s, CLONE_NEWNS, NULL))
		abort();
	for (size_t i = 0; i < s->n_mounts; i++) {
		const struct aj_oci_mount *m = &s->mounts[i];
		if (!m->dst || m->dst[0] != '/' || !m->type || strstr(m->dst, "/../"))
			abort();
		if (m->bind && (!m->src || m->src[0] != '/'))
			abort(); /* a bind mount's source is an absolute host path */
	}
	for (size_t i = 0; i < s->proc.env.n; i++)
		if (!strchr(s->proc.env.v[i], '='))
			abort();
	for (int k = 0; k < AJ_CAPSET__COUNT; k++)
		if (s->proc.caps[k] & ~aj_cap_all())
			abort(); /* only capabilities that have a name */
	for (size_t i = 0; i < s->sysctl.n; i++)
		if (!aj_oci_sysctl_ns(s->sysctl.v[i]))
			abort(); /* every sysctl belongs to a namespace the container has */
	for (size_t i = 0; i < s->devices.n; i++)
		if (s->devices.v[i][0] != '/' || !strstr(s->devices.v[i], "=/dev/"))
			abort(); /* linux.devices: an absolute path and a host node of the safe set */
	for (size_t i = 0; i < s->res.n_devices; i++)
		if (s->res.devices[i].type && !strchr("abc", s->res.devices[i].type[0]))
			abort();
	if ((s->res.cpus && strspn(s->res.cpus, "0123456789,-") != strlen(s->res.cpus)) ||
	    (s->res.mems && strspn(s->res.mems, "0123456789,-") != strlen(s->res.mems)))
		abort(); /* cpuset lists are written to cgroupfs as they are */
	for (size_t i = 0; i < s->res.unified.n; i++)
		if (!strchr(s->res.unified.v[i], '='))
			abort();
	(void)aj_oci_annotation(s, "io.kubernetes.cri.container-type");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	struct aj_oci_spec s;
	struct aj_container_process p;
	struct aj_err err;

	if (!root)
		return 0;
	aj_err_clear(&err);
	if (aj_oci_spec_parse(root, &s, &err) == 0)
		check_spec(&s);
	else if (err.errnum != ENOMEM && strncmp(err.msg, "config.json: ", 13) != 0)
		abort(); /* an error must name the field of config.json that was wrong */
	aj_oci_spec_free(&s);

	aj_err_clear(&err);
	if (aj_oci_process_parse(json_object_get(root, "process"), "process.json", &p, NULL,
				 &err) < 0 &&
	    !err.msg[0])
		abort();
	aj_oci_process_free(&p);
	json_decref(root);
	return 0;
}
