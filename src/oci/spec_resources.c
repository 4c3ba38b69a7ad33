/* linux.resources of config.json, read by the field-table engine into struct
 * aj_cgroup_oci_limits (cgroup/oci.h), every field of the runtime spec a row: memory, cpu,
 * pids, the devices allowlist, blockIO, hugepageLimits, network, rdma, unified. What the
 * rows accept, the cgroup module applies, notes or refuses for this host; what no host can
 * take (rdma) is refused here. Errors and paths are config.json's (spec_internal.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "oci/spec_internal.h"

#define L(m) offsetof(struct aj_cgroup_oci_limits, m)
#define NUM(n, m, lo, hi, what)                                                                \
	{.name = (n), .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE, .off = L(m), .min = (lo),       \
	 .max = (hi), .expect = (what)}
#define ANYNUM "an integer"
#define SIZE_OR_UNLIMITED "a size in bytes, or -1 for no limit"
#define NOT_APPLIED(n) {.name = (n), .type = AJ_JF_ANY, .parse = oci_note_not_applied}

/* ---- memory, cpu, pids ------------------------------------------------------------------- */

static const struct aj_jf_field memory_rows[] = {
	NUM("limit", memory, -1, INT64_MAX, SIZE_OR_UNLIMITED),
	NUM("reservation", reservation, -1, INT64_MAX, SIZE_OR_UNLIMITED),
	NUM("swap", swap, -1, INT64_MAX, SIZE_OR_UNLIMITED),
	NUM("kernel", kernel, -1, INT64_MAX, SIZE_OR_UNLIMITED),
	NUM("kernelTCP", kernel_tcp, -1, INT64_MAX, SIZE_OR_UNLIMITED),
	NUM("swappiness", swappiness, 0, 100, "an integer from 0 to 100"),
	{.name = "disableOOMKiller", .type = AJ_JF_BOOL, .off = L(disable_oom),
	 .expect = "a boolean"},
	NOT_APPLIED("useHierarchy"),      /* every v1 hierarchy is hierarchical now */
	NOT_APPLIED("checkBeforeUpdate"), /* an `update` option; agentjail has no update verb */
	OCI_END,
};

/* cpuset lists: "0-3,8", digits, commas and ranges. */
static int check_cpu_list(const char *path, const char *s, struct aj_err *err)
{
	if (strspn(s, "0123456789,-") == strlen(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" is not a list such as \"0-3,8\"",
			  path, s);
}

static const struct aj_jf_field cpu_rows[] = {
	NUM("shares", cpu_shares, 0, INT64_MAX, "a non-negative integer"),
	NUM("quota", cpu_quota, INT64_MIN + 1, INT64_MAX, ANYNUM),
	NUM("burst", cpu_burst, 0, INT64_MAX, "a non-negative integer"),
	NUM("period", cpu_period, 0, INT64_MAX, "a non-negative integer"),
	NUM("realtimeRuntime", rt_runtime, INT64_MIN + 1, INT64_MAX, ANYNUM),
	NUM("realtimePeriod", rt_period, 0, INT64_MAX, "a non-negative integer"),
	{.name = "cpus", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = L(cpus),
	 .check = check_cpu_list},
	{.name = "mems", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = L(mems),
	 .check = check_cpu_list},
	NUM("idle", cpu_idle, INT64_MIN + 1, INT64_MAX, ANYNUM),
	OCI_END,
};

static const struct aj_jf_field pids_rows[] = {
	NUM("limit", pids, INT64_MIN + 1, INT64_MAX, ANYNUM),
	OCI_END,
};

/* ---- devices ---------------------------------------------------------------------------- */

static int check_dev_type(const char *path, const char *s, struct aj_err *err)
{
	if (strcmp(s, "a") == 0 || strcmp(s, "b") == 0 || strcmp(s, "c") == 0)
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" (a, b or c)", path, s);
}

static int check_access(const char *path, const char *s, struct aj_err *err)
{
	if (strspn(s, "rwm") == strlen(s))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" (letters of rwm)", path, s);
}

#define D(m) offsetof(struct aj_cgroup_oci_device, m)
static const struct aj_jf_field device_rows[] = {
	{.name = "allow", .type = AJ_JF_BOOL, .flags = AJ_JF_REQUIRED, .off = D(allow),
	 .expect = "a boolean"},
	{.name = "type", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = D(type),
	 .check = check_dev_type},
	{.name = "major", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE, .off = D(major), .min = -1,
	 .max = UINT32_MAX, .expect = "a device number"},
	{.name = "minor", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE, .off = D(minor), .min = -1,
	 .max = UINT32_MAX, .expect = "a device number"},
	{.name = "access", .type = AJ_JF_STRING, .flags = AJ_JF_NULLABLE, .off = D(access),
	 .check = check_access},
	OCI_END,
};
#undef D

/* Grows an array of `size`-byte elements by one zeroed element (counted before it is read,
 * so that the limits' free releases what a failed read left). */
static void *grow(void **v, size_t *n, size_t size)
{
	char *p;

	*v = aj_xrealloc(*v, (*n + 1) * size);
	p = (char *)*v + *n * size;
	memset(p, 0, size);
	(*n)++;
	return p;
}

static int add_device(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		      const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;
	struct aj_cgroup_oci_device *d = grow((void **)&l->devices, &l->n_devices, sizeof *d);

	d->major = d->minor = AJ_CG_UNSET;
	return oci_read_sub(device_rows, v, d, path, o, e);
}

static const struct aj_jf_field device_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_device};

/* ---- blockIO ------------------------------------------------------------------------------ */

#define B(m) offsetof(struct aj_cgroup_oci_blkdev, m)
#define DEVNUM(n)                                                                              \
	{.name = #n, .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED, .off = B(n), .min = 0,           \
	 .max = UINT32_MAX, .expect = "a device number"}
static const struct aj_jf_field weight_dev_rows[] = {
	DEVNUM(major), DEVNUM(minor),
	{.name = "weight", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE, .off = B(weight), .min = 0,
	 .max = 10000, .expect = "a weight"},
	{.name = "leafWeight", .type = AJ_JF_INT, .flags = AJ_JF_NULLABLE, .off = B(leaf_weight),
	 .min = 0, .max = 10000, .expect = "a weight"},
	OCI_END,
};
static const struct aj_jf_field throttle_rows[] = {
	DEVNUM(major), DEVNUM(minor),
	{.name = "rate", .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED, .off = B(rate), .min = 0,
	 .max = INT64_MAX, .expect = "a non-negative integer"},
	OCI_END,
};
#undef DEVNUM
#undef B

static int add_weight_dev(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			  const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;
	struct aj_cgroup_oci_blkdev *d = grow((void **)&l->weight_dev, &l->n_weight_dev, sizeof *d);

	d->weight = d->leaf_weight = AJ_CG_UNSET;
	return oci_read_sub(weight_dev_rows, v, d, path, o, e);
}

/* The row's name says which list (the rows below are in enum aj_cg_throttle's order). */
static const char *const throttle_names[AJ_CG_THROTTLE__COUNT] = {
	"throttleReadBpsDevice", "throttleWriteBpsDevice", "throttleReadIOPSDevice",
	"throttleWriteIOPSDevice"};

static int add_throttle(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;
	int t = 0;

	while (t + 1 < AJ_CG_THROTTLE__COUNT && !strstr(path, throttle_names[t]))
		t++;
	return oci_read_sub(throttle_rows, v,
			    grow((void **)&l->throttle[t], &l->n_throttle[t], sizeof *l->throttle[t]),
			    path, o, e);
}

static const struct aj_jf_field weight_dev_el = {.name = "", .type = AJ_JF_OBJECT,
						 .parse = add_weight_dev};
static const struct aj_jf_field throttle_el = {.name = "", .type = AJ_JF_OBJECT,
					       .parse = add_throttle};

#define LIST(n, el)                                                                            \
	{.name = (n), .type = AJ_JF_ARRAY, .flags = AJ_JF_NULLABLE, .off = 0, .sub = &(el),       \
	 .expect = "an array"}
static const struct aj_jf_field blkio_rows[] = {
	NUM("weight", blkio_weight, 0, 10000, "a weight"),
	NUM("leafWeight", blkio_leaf_weight, 0, 10000, "a weight"),
	LIST("weightDevice", weight_dev_el),
	LIST("throttleReadBpsDevice", throttle_el),
	LIST("throttleWriteBpsDevice", throttle_el),
	LIST("throttleReadIOPSDevice", throttle_el),
	LIST("throttleWriteIOPSDevice", throttle_el),
	OCI_END,
};

/* ---- hugepageLimits, network, rdma, unified ------------------------------------------------ */

/* "2MB", "1GB", "64KB": what the kernel's file names say. */
static int check_page_size(const char *path, const char *s, struct aj_err *err)
{
	size_t n = strspn(s, "0123456789");

	if (n && n < 8 && (!strcmp(s + n, "KB") || !strcmp(s + n, "MB") || !strcmp(s + n, "GB")))
		return 0;
	return aj_err_set(err, AJ_LAYER_POLICY, EINVAL, "%s: \"%s\" is not a page size such as 2MB",
			  path, s);
}

#define H(m) offsetof(struct aj_cgroup_oci_huge, m)
static const struct aj_jf_field huge_rows[] = {
	{.name = "pageSize", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = H(size),
	 .check = check_page_size},
	{.name = "limit", .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED, .off = H(limit), .min = 0,
	 .max = INT64_MAX, .expect = "a size in bytes"},
	OCI_END,
};
#undef H

static int add_huge(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;

	return oci_read_sub(huge_rows, v, grow((void **)&l->huge, &l->n_huge, sizeof *l->huge), path,
			    o, e);
}

static const struct aj_jf_field huge_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_huge};

#define PR(m) offsetof(struct aj_cgroup_oci_prio, m)
static const struct aj_jf_field prio_rows[] = {
	{.name = "name", .type = AJ_JF_STRING, .flags = AJ_JF_REQUIRED, .off = PR(name), .min = 1,
	 .max = 15, .expect = "an interface name"},
	{.name = "priority", .type = AJ_JF_INT, .flags = AJ_JF_REQUIRED, .off = PR(prio), .min = 0,
	 .max = UINT32_MAX, .expect = "a priority"},
	OCI_END,
};
#undef PR

static int add_prio(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		    const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;

	return oci_read_sub(prio_rows, v, grow((void **)&l->prio, &l->n_prio, sizeof *l->prio), path,
			    o, e);
}

static const struct aj_jf_field prio_el = {.name = "", .type = AJ_JF_OBJECT, .parse = add_prio};

static const struct aj_jf_field network_rows[] = {
	NUM("classID", net_classid, 0, UINT32_MAX, "a class id"),
	LIST("priorities", prio_el),
	OCI_END,
};

static int refuse_rdma(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
		       const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	if (!json_is_object(v) || !json_object_size(v))
		return 0;
	return aj_err_set(&e->err, AJ_LAYER_POLICY, ENOTSUP, "%s: not supported by agentjail", path);
}

static int keep_unified(const struct aj_jf_field *f, const char *path, json_t *v, void *dst,
			const struct aj_jf_opts *o, struct aj_jf_error *e)
{
	struct aj_cgroup_oci_limits *l = dst;
	const char *k;
	json_t *val;

	json_object_foreach(v, k, val)
		aj_strv_pushf(&l->unified, "%s=%s", k, json_string_value(val));
	return 0;
}

static const struct aj_jf_field unified_value = {.name = "", .type = AJ_JF_STRING,
						 .expect = "a string value"};

static const struct aj_jf_field resources_rows[] = {
	{.name = "memory", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE, .sub = memory_rows},
	{.name = "cpu", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE, .sub = cpu_rows},
	{.name = "pids", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE, .sub = pids_rows},
	LIST("devices", device_el),
	{.name = "blockIO", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE, .sub = blkio_rows},
	LIST("hugepageLimits", huge_el),
	{.name = "network", .type = AJ_JF_OBJECT, .flags = AJ_JF_NULLABLE, .sub = network_rows},
	{.name = "rdma", .type = AJ_JF_ANY, .flags = AJ_JF_NULLABLE, .parse = refuse_rdma},
	{.name = "unified", .type = AJ_JF_MAP, .flags = AJ_JF_NULLABLE | AJ_JF_ELEMS_APART,
	 .sub = &unified_value, .parse = keep_unified},
	OCI_END,
};

int oci_read_resources(json_t *v, const char *path, const struct aj_jf_opts *o,
		       struct aj_jf_error *e)
{
	/* A value that is no object limits nothing, as it always did. */
	if (!json_is_object(v))
		return 0;
	return oci_read_sub(resources_rows, v, &OCI_CTX(o)->s->res, path, o, e);
}
