/* linux.resources of an OCI bundle written into the container's cgroups (see oci.h), one
 * function per resource and mode. Each field is applied where this host can; otherwise it
 * is listed in the notes with the reason (a share, a hint, a grant: nothing bounded is left
 * unbounded by skipping it), or refused when the bundle asks to bound something this host
 * cannot bound (memory and pids limits, CPU quota and pinning, I/O throttles, rdma, cgroup v2
 * files on a v1 host). Errors and notes name the field ("linux.resources.cpu.cpus"). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/oci.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"

#define R "linux.resources."

void aj_cgroup_oci_limits_init(struct aj_cgroup_oci_limits *l)
{
	memset(l, 0, sizeof *l);
	l->memory = l->reservation = l->swap = l->swappiness = l->kernel = l->kernel_tcp =
		AJ_CG_UNSET;
	l->pids = AJ_CG_UNSET;
	l->cpu_shares = l->cpu_quota = l->cpu_period = l->cpu_burst = l->rt_runtime =
		l->rt_period = l->cpu_idle = AJ_CG_UNSET;
	l->blkio_weight = l->blkio_leaf_weight = l->net_classid = AJ_CG_UNSET;
}

void aj_cgroup_oci_limits_free(struct aj_cgroup_oci_limits *l)
{
	free(l->cpus);
	free(l->mems);
	for (size_t i = 0; i < l->n_devices; i++) {
		free(l->devices[i].type);
		free(l->devices[i].access);
	}
	free(l->devices);
	free(l->weight_dev);
	for (int t = 0; t < AJ_CG_THROTTLE__COUNT; t++)
		free(l->throttle[t]);
	for (size_t i = 0; i < l->n_huge; i++)
		free(l->huge[i].size);
	free(l->huge);
	for (size_t i = 0; i < l->n_prio; i++)
		free(l->prio[i].name);
	free(l->prio);
	aj_strv_free(&l->unified);
	aj_cgroup_oci_limits_init(l);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static bool has_file(const char *dir, const char *file)
{
	char path[700];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	return access(path, F_OK) == 0;
}

/* Writes the formatted value to dir/file; an error names the field. */
static int __attribute__((format(printf, 5, 6)))
put(const char *dir, const char *file, const char *field, struct aj_err *err, const char *fmt, ...)
{
	char v[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	if (aj_cgroup_write(dir, file, v, err) < 0)
		return aj_err_prefix(err, R "%s", field);
	return 0;
}

static void note(struct aj_strv *notes, const char *field, const char *why)
{
	aj_strv_pushf(notes, R "%s: not applied: %s", field, why);
}

static int refuse(struct aj_err *err, const char *field, const char *why)
{
	return aj_err_set(err, AJ_LAYER_CGROUP, ENOTSUP, R "%s: %s", field, why);
}

static const char *const throttle_field[AJ_CG_THROTTLE__COUNT] = {
	"blockIO.throttleReadBpsDevice", "blockIO.throttleWriteBpsDevice",
	"blockIO.throttleReadIOPSDevice", "blockIO.throttleWriteIOPSDevice"};

/* ---- cgroup v1 ------------------------------------------------------------------------------ */

static int v1_swap(const char *mem, const struct aj_cgroup_oci_limits *l, struct aj_strv *notes,
		   struct aj_err *err)
{
	bool limit = aj_cg_set(l->memory) && l->memory > 0;

	if (!limit && !(aj_cg_set(l->swap) && l->swap != 0))
		return 0;
	if (!has_file(mem, "memory.memsw.limit_in_bytes")) {
		note(notes, "memory.swap", "this host does not account swap per cgroup (swapaccount=1 "
					   "is off): swap is not bounded");
		return 0;
	}
	/* A limit that can be escaped into swap is not a limit: without memory.swap, memory and
	 * swap together get the memory limit. */
	if (!aj_cg_set(l->swap) || l->swap == 0)
		return put(mem, "memory.memsw.limit_in_bytes", "memory.swap", err, "%lld",
			   (long long)l->memory);
	if (l->swap > 0 && limit && l->swap < l->memory)
		return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL,
				  R "memory.swap: %lld is below memory.limit %lld (it bounds memory "
				    "and swap together)",
				  (long long)l->swap, (long long)l->memory);
	return put(mem, "memory.memsw.limit_in_bytes", "memory.swap", err, "%lld",
		   l->swap < 0 ? -1LL : (long long)l->swap);
}

static int v1_memory(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		     struct aj_strv *notes, struct aj_err *err)
{
	const char *mem = o->cg.used[AJ_CG_MEMORY] ? o->cg.path[AJ_CG_MEMORY] : NULL;

	if (!mem) {
		if (aj_cg_set(l->memory) && l->memory > 0)
			return refuse(err, "memory.limit", "this host has no memory controller");
		if (aj_cg_set(l->reservation) || aj_cg_set(l->swappiness) || l->disable_oom)
			note(notes, "memory", "this host has no memory controller");
		return 0;
	}
	if (aj_cg_set(l->memory) && l->memory != 0 &&
	    put(mem, "memory.limit_in_bytes", "memory.limit", err, "%lld",
		l->memory < 0 ? -1LL : (long long)l->memory) < 0)
		return -1;
	if (v1_swap(mem, l, notes, err) < 0)
		return -1;
	if (aj_cg_set(l->reservation) && l->reservation != 0 &&
	    put(mem, "memory.soft_limit_in_bytes", "memory.reservation", err, "%lld",
		l->reservation < 0 ? -1LL : (long long)l->reservation) < 0)
		return -1;
	if (aj_cg_set(l->swappiness) &&
	    put(mem, "memory.swappiness", "memory.swappiness", err, "%lld",
		(long long)l->swappiness) < 0)
		return -1;
	if (l->disable_oom && put(mem, "memory.oom_control", "memory.disableOOMKiller", err, "1") < 0)
		return -1;
	if (aj_cg_set(l->kernel) && l->kernel != 0)
		note(notes, "memory.kernel", "Linux no longer has a kernel-memory limit "
					     "(memory.kmem.limit_in_bytes); kernel memory counts in "
					     "memory.limit");
	if (aj_cg_set(l->kernel_tcp) && l->kernel_tcp != 0) {
		if (!has_file(mem, "memory.kmem.tcp.limit_in_bytes"))
			note(notes, "memory.kernelTCP", "this kernel has no TCP buffer limit per cgroup");
		else if (put(mem, "memory.kmem.tcp.limit_in_bytes", "memory.kernelTCP", err, "%lld",
			     (long long)l->kernel_tcp) < 0)
			return -1;
	}
	return 0;
}

static int v1_pids(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		   struct aj_err *err)
{
	const char *dir = o->cg.used[AJ_CG_PIDS] ? o->cg.path[AJ_CG_PIDS] : NULL;

	if (!aj_cg_set(l->pids) || l->pids == 0)
		return 0;
	if (!dir)
		return l->pids > 0 ? refuse(err, "pids.limit", "this host has no pids controller") : 0;
	if (l->pids < 0)
		return put(dir, "pids.max", "pids.limit", err, "max");
	return put(dir, "pids.max", "pids.limit", err, "%lld", (long long)l->pids);
}

static int v1_cpu_extra(const char *cpu, const struct aj_cgroup_oci_limits *l,
			struct aj_strv *notes, struct aj_err *err)
{
	static const struct {
		const char *field, *file;
		size_t off;
	} opt[] = {
		{"cpu.burst", "cpu.cfs_burst_us", offsetof(struct aj_cgroup_oci_limits, cpu_burst)},
		{"cpu.realtimePeriod", "cpu.rt_period_us",
		 offsetof(struct aj_cgroup_oci_limits, rt_period)},
		{"cpu.realtimeRuntime", "cpu.rt_runtime_us",
		 offsetof(struct aj_cgroup_oci_limits, rt_runtime)},
		{"cpu.idle", "cpu.idle", offsetof(struct aj_cgroup_oci_limits, cpu_idle)},
	};

	/* Grants and hints, not bounds: where the kernel has no file for one, a note. */
	for (size_t i = 0; i < AJ_ARRAY_SIZE(opt); i++) {
		int64_t v = *(const int64_t *)((const char *)l + opt[i].off);
		if (!aj_cg_set(v))
			continue;
		if (!cpu || !has_file(cpu, opt[i].file))
			note(notes, opt[i].field, "this kernel has no such CPU setting per cgroup");
		else if (put(cpu, opt[i].file, opt[i].field, err, "%lld", (long long)v) < 0)
			return -1;
	}
	return 0;
}

static int v1_cpu(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		  struct aj_strv *notes, struct aj_err *err)
{
	const char *cpu = o->cg.used[AJ_CG_CPU] ? o->cg.path[AJ_CG_CPU] : NULL;
	const char *cpuset = aj_cgroup_oci_dir(o, "cpuset");
	bool quota = aj_cg_set(l->cpu_quota) && l->cpu_quota > 0;

	if (quota && !cpu)
		return refuse(err, "cpu.quota", "this host has no cpu controller");
	if (aj_cg_set(l->cpu_shares) && l->cpu_shares > 0) {
		if (!cpu)
			note(notes, "cpu.shares", "this host has no cpu controller");
		else if (put(cpu, "cpu.shares", "cpu.shares", err, "%lld",
			     (long long)l->cpu_shares) < 0)
			return -1;
	}
	if (cpu && aj_cg_set(l->cpu_period) && l->cpu_period > 0 &&
	    put(cpu, "cpu.cfs_period_us", "cpu.period", err, "%lld", (long long)l->cpu_period) < 0)
		return -1;
	if (quota && put(cpu, "cpu.cfs_quota_us", "cpu.quota", err, "%lld",
			 (long long)l->cpu_quota) < 0)
		return -1;
	if ((l->cpus || l->mems) && !cpuset)
		return refuse(err, l->cpus ? "cpu.cpus" : "cpu.mems", "this host has no cpuset "
								     "controller");
	if (l->cpus && l->cpus[0] && put(cpuset, "cpuset.cpus", "cpu.cpus", err, "%s", l->cpus) < 0)
		return -1;
	if (l->mems && l->mems[0] && put(cpuset, "cpuset.mems", "cpu.mems", err, "%s", l->mems) < 0)
		return -1;
	return v1_cpu_extra(cpu, l, notes, err);
}

static void dev_num(int64_t v, char *buf, size_t len)
{
	if (aj_cg_set(v) && v >= 0)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "*");
}

/* The rule as the devices controller (and `a` for every device) writes it. */
static void dev_rule(const struct aj_cgroup_oci_device *d, char *buf, size_t len)
{
	char maj[24], min[24];
	const char *type = d->type ? d->type : "a", *acc = d->access && d->access[0] ? d->access : "rwm";

	dev_num(d->major, maj, sizeof maj);
	dev_num(d->minor, min, sizeof min);
	if (strcmp(type, "a") == 0 && !strcmp(maj, "*") && !strcmp(min, "*") && !strcmp(acc, "rwm"))
		snprintf(buf, len, "a");
	else
		snprintf(buf, len, "%s %s:%s %s", type, maj, min, acc);
}

static int v1_devices(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		      struct aj_strv *notes, struct aj_err *err)
{
	const char *dir = aj_cgroup_oci_dir(o, "devices");
	char rule[96], field[48];

	if (!l->n_devices)
		return 0;
	if (!dir) {
		note(notes, "devices", "this host has no devices controller; the container can make "
				       "no device nodes and opens only those bound into it");
		return 0;
	}
	/* In order: a later rule refines an earlier one, as the spec says. */
	for (size_t i = 0; i < l->n_devices; i++) {
		dev_rule(&l->devices[i], rule, sizeof rule);
		snprintf(field, sizeof field, "devices[%zu]", i);
		if (put(dir, l->devices[i].allow ? "devices.allow" : "devices.deny", field, err, "%s",
			rule) < 0)
			return -1;
	}
	return 0;
}

static int v1_blkio_weights(const char *dir, const struct aj_cgroup_oci_limits *l,
			    struct aj_strv *notes, struct aj_err *err)
{
	const char *w = has_file(dir, "blkio.weight") ? "blkio.weight" : "blkio.bfq.weight";
	const char *wd = has_file(dir, "blkio.weight_device") ? "blkio.weight_device"
							       : "blkio.bfq.weight_device";

	/* Weights are shares of the disk, and only an I/O scheduler with them (BFQ, CFQ)
	 * reads them. */
	if (aj_cg_set(l->blkio_weight) && l->blkio_weight > 0) {
		if (!has_file(dir, w))
			note(notes, "blockIO.weight", "no I/O scheduler with weights on this host");
		else if (put(dir, w, "blockIO.weight", err, "%lld", (long long)l->blkio_weight) < 0)
			return -1;
	}
	if (aj_cg_set(l->blkio_leaf_weight) && l->blkio_leaf_weight > 0)
		note(notes, "blockIO.leafWeight", "Linux no longer has leaf weights");
	for (size_t i = 0; i < l->n_weight_dev; i++) {
		const struct aj_cgroup_oci_blkdev *d = &l->weight_dev[i];
		if (!aj_cg_set(d->weight))
			continue;
		if (!has_file(dir, wd))
			note(notes, "blockIO.weightDevice", "no I/O scheduler with weights on this host");
		else if (put(dir, wd, "blockIO.weightDevice", err, "%lld:%lld %lld",
			     (long long)d->major, (long long)d->minor, (long long)d->weight) < 0)
			return -1;
	}
	return 0;
}

static int v1_blkio(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		    struct aj_strv *notes, struct aj_err *err)
{
	static const char *const file[AJ_CG_THROTTLE__COUNT] = {
		"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
		"blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"};
	const char *dir = aj_cgroup_oci_dir(o, "blkio");

	for (int t = 0; t < AJ_CG_THROTTLE__COUNT; t++) {
		if (l->n_throttle[t] && (!dir || !has_file(dir, file[t])))
			return refuse(err, throttle_field[t], "this host cannot throttle I/O per cgroup "
							      "(no blkio throttling)");
		for (size_t i = 0; i < l->n_throttle[t]; i++)
			if (put(dir, file[t], throttle_field[t], err, "%lld:%lld %lld",
				(long long)l->throttle[t][i].major, (long long)l->throttle[t][i].minor,
				(long long)l->throttle[t][i].rate) < 0)
				return -1;
	}
	if (!dir) {
		if (aj_cg_set(l->blkio_weight) || l->n_weight_dev)
			note(notes, "blockIO", "this host has no blkio controller");
		return 0;
	}
	return v1_blkio_weights(dir, l, notes, err);
}

/* hugetlb.SIZE.<suffix>: limit_in_bytes (v1) or max (v2). */
static int hugetlb(const char *dir, const char *suffix, const struct aj_cgroup_oci_limits *l,
		   struct aj_strv *notes, struct aj_err *err)
{
	char file[96];

	for (size_t i = 0; i < l->n_huge; i++) {
		snprintf(file, sizeof file, "hugetlb.%s.%s", l->huge[i].size, suffix);
		if (!dir) {
			note(notes, "hugepageLimits", "this host has no hugetlb controller where the "
						      "container's cgroups are");
			return 0;
		}
		if (!has_file(dir, file))
			return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL,
					  R "hugepageLimits: page size \"%s\" is not one this host has",
					  l->huge[i].size);
		if (put(dir, file, "hugepageLimits", err, "%lld", (long long)l->huge[i].limit) < 0)
			return -1;
	}
	return 0;
}

static int v1_network(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
		      struct aj_strv *notes, struct aj_err *err)
{
	const char *cls = aj_cgroup_oci_dir(o, "net_cls"), *prio = aj_cgroup_oci_dir(o, "net_prio");

	/* Tags and priorities for the host's traffic control, not bounds. */
	if (aj_cg_set(l->net_classid)) {
		if (!cls)
			note(notes, "network.classID", "this host has no net_cls controller");
		else if (put(cls, "net_cls.classid", "network.classID", err, "%lld",
			     (long long)l->net_classid) < 0)
			return -1;
	}
	for (size_t i = 0; i < l->n_prio; i++) {
		if (!prio) {
			note(notes, "network.priorities", "this host has no net_prio controller");
			return 0;
		}
		if (put(prio, "net_prio.ifpriomap", "network.priorities", err, "%s %lld",
			l->prio[i].name, (long long)l->prio[i].prio) < 0)
			return -1;
	}
	return 0;
}

int aj_cgroup_oci_v1_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
			    struct aj_strv *notes, struct aj_err *err)
{
	if (l->unified.n)
		return refuse(err, "unified", "these are cgroup v2 files, and this host's "
					      "controllers are cgroup v1");
	if (l->rdma)
		return refuse(err, "rdma", "not supported by agentjail");
	if (v1_memory(o, l, notes, err) < 0 || v1_pids(o, l, err) < 0 ||
	    v1_cpu(o, l, notes, err) < 0 || v1_devices(o, l, notes, err) < 0 ||
	    v1_blkio(o, l, notes, err) < 0 ||
	    hugetlb(aj_cgroup_oci_dir(o, "hugetlb"), "limit_in_bytes", l, notes, err) < 0)
		return -1;
	return v1_network(o, l, notes, err);
}

/* ---- cgroup v2 ------------------------------------------------------------------------------ */

static int v2_memory(const char *p, const struct aj_cgroup_oci_limits *l, struct aj_strv *notes,
		     struct aj_err *err)
{
	bool limit = aj_cg_set(l->memory) && l->memory > 0;

	if (limit && put(p, "memory.max", "memory.limit", err, "%lld", (long long)l->memory) < 0)
		return -1;
	/* swap.max is swap alone: memory.swap (memory and swap together) less the limit. */
	if (aj_cg_set(l->swap) && l->swap != 0 && has_file(p, "memory.swap.max")) {
		if (l->swap > 0 && limit && l->swap < l->memory)
			return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL,
					  R "memory.swap: %lld is below memory.limit %lld",
					  (long long)l->swap, (long long)l->memory);
		if (l->swap < 0 ? put(p, "memory.swap.max", "memory.swap", err, "max") < 0
				: put(p, "memory.swap.max", "memory.swap", err, "%lld",
				      (long long)(l->swap - (limit ? l->memory : 0))) < 0)
			return -1;
	} else if (limit) {
		aj_cgroup_write(p, "memory.swap.max", "0", NULL); /* absent without swap */
	}
	if (aj_cg_set(l->reservation) && l->reservation > 0 &&
	    put(p, "memory.low", "memory.reservation", err, "%lld", (long long)l->reservation) < 0)
		return -1;
	if (aj_cg_set(l->swappiness))
		note(notes, "memory.swappiness", "cgroup v2 has no swappiness per cgroup");
	if (l->disable_oom)
		note(notes, "memory.disableOOMKiller", "cgroup v2 has no switch for it");
	if ((aj_cg_set(l->kernel) && l->kernel) || (aj_cg_set(l->kernel_tcp) && l->kernel_tcp))
		note(notes, "memory.kernel", "cgroup v2 counts kernel memory in memory.max");
	return 0;
}

static int v2_cpu(const char *p, const struct aj_cgroup_oci_limits *l, struct aj_strv *notes,
		  struct aj_err *err)
{
	if (aj_cg_set(l->cpu_shares) && l->cpu_shares > 0 && /* runc's shares-to-weight */
	    put(p, "cpu.weight", "cpu.shares", err, "%lld",
		1 + (((long long)l->cpu_shares - 2) * 9999) / 262142) < 0)
		return -1;
	if (aj_cg_set(l->cpu_quota) && l->cpu_quota > 0 &&
	    put(p, "cpu.max", "cpu.quota", err, "%lld %lld", (long long)l->cpu_quota,
		aj_cg_set(l->cpu_period) && l->cpu_period > 0 ? (long long)l->cpu_period
							      : 100000LL) < 0)
		return -1;
	if (aj_cg_set(l->cpu_burst) && put(p, "cpu.max.burst", "cpu.burst", err, "%lld",
					   (long long)l->cpu_burst) < 0)
		return -1;
	if (aj_cg_set(l->cpu_idle) &&
	    put(p, "cpu.idle", "cpu.idle", err, "%lld", (long long)l->cpu_idle) < 0)
		return -1;
	if (aj_cg_set(l->rt_runtime) && l->rt_runtime > 0)
		note(notes, "cpu.realtimeRuntime", "cgroup v2 has no realtime budget per cgroup");
	if ((l->cpus || l->mems) && !has_file(p, "cpuset.cpus"))
		return refuse(err, l->cpus ? "cpu.cpus" : "cpu.mems", "the cpuset controller is not "
								     "enabled for this cgroup");
	if (l->cpus && l->cpus[0] && put(p, "cpuset.cpus", "cpu.cpus", err, "%s", l->cpus) < 0)
		return -1;
	if (l->mems && l->mems[0] && put(p, "cpuset.mems", "cpu.mems", err, "%s", l->mems) < 0)
		return -1;
	return 0;
}

/* io.max for one device: every throttle given for it on one line. */
static int v2_io_max(const char *p, const struct aj_cgroup_oci_limits *l, struct aj_err *err)
{
	static const char *const key[AJ_CG_THROTTLE__COUNT] = {"rbps", "wbps", "riops", "wiops"};

	if (!has_file(p, "io.max")) {
		for (int t = 0; t < AJ_CG_THROTTLE__COUNT; t++)
			if (l->n_throttle[t])
				return refuse(err, throttle_field[t], "the io controller is not enabled "
								      "for this cgroup");
		return 0;
	}
	for (int t = 0; t < AJ_CG_THROTTLE__COUNT; t++)
		for (size_t i = 0; i < l->n_throttle[t]; i++)
			if (put(p, "io.max", throttle_field[t], err, "%lld:%lld %s=%lld",
				(long long)l->throttle[t][i].major, (long long)l->throttle[t][i].minor,
				key[t], (long long)l->throttle[t][i].rate) < 0)
				return -1;
	return 0;
}

static int v2_io(const char *p, const struct aj_cgroup_oci_limits *l, struct aj_strv *notes,
		 struct aj_err *err)
{
	const char *w = has_file(p, "io.bfq.weight") ? "io.bfq.weight" : "io.weight";

	if (v2_io_max(p, l, err) < 0)
		return -1;
	if (aj_cg_set(l->blkio_weight) && l->blkio_weight > 0) {
		if (!has_file(p, w))
			note(notes, "blockIO.weight", "no I/O weights for this cgroup on this host");
		else if (put(p, w, "blockIO.weight", err, "default %lld",
			     (long long)l->blkio_weight) < 0)
			return -1;
	}
	for (size_t i = 0; i < l->n_weight_dev; i++)
		if (aj_cg_set(l->weight_dev[i].weight) && has_file(p, w) &&
		    put(p, w, "blockIO.weightDevice", err, "%lld:%lld %lld",
			(long long)l->weight_dev[i].major, (long long)l->weight_dev[i].minor,
			(long long)l->weight_dev[i].weight) < 0)
			return -1;
	return 0;
}

/* "file=value" pairs of linux.resources.unified, each a file of the container's own cgroup
 * (no path, no hidden name). */
static int v2_unified(const char *p, const struct aj_cgroup_oci_limits *l, struct aj_err *err)
{
	for (size_t i = 0; i < l->unified.n; i++) {
		const char *kv = l->unified.v[i], *eq = strchr(kv, '=');
		char file[128];

		snprintf(file, sizeof file, "%.*s", (int)(eq - kv), kv);
		if (strchr(file, '/') || file[0] == '.' || !strchr(file, '.'))
			return aj_err_set(err, AJ_LAYER_CGROUP, EINVAL,
					  R "unified: \"%s\" is not a cgroup file name", file);
		if (aj_cgroup_write(p, file, eq + 1, err) < 0)
			return aj_err_prefix(err, R "unified: \"%s\"", file);
	}
	return 0;
}

/* Whether the cgroup has the controller (its cgroup.controllers lists it). */
static bool v2_has(const char *p, const char *ctl)
{
	char path[600];
	_cleanup_free_ char *s = NULL;
	size_t n = strlen(ctl);

	snprintf(path, sizeof path, "%s/cgroup.controllers", p);
	s = aj_read_file(path, 4096, NULL);
	for (char *w = s; w && *w; w += strcspn(w, " \n"), w += strspn(w, " \n"))
		if (strncmp(w, ctl, n) == 0 && (w[n] == ' ' || w[n] == '\n' || !w[n]))
			return true;
	return false;
}

int aj_cgroup_oci_v2_limits(struct aj_cgroup_oci *o, const struct aj_cgroup_oci_limits *l,
			    struct aj_strv *notes, struct aj_err *err)
{
	const char *p = o->cg.path[0];

	if (l->rdma)
		return refuse(err, "rdma", "not supported by agentjail");
	if (aj_cg_set(l->pids) && l->pids != 0 &&
	    (l->pids < 0 ? put(p, "pids.max", "pids.limit", err, "max")
			 : put(p, "pids.max", "pids.limit", err, "%lld", (long long)l->pids)) < 0)
		return -1;
	if (l->n_devices)
		note(notes, "devices", "on cgroup v2 the allowlist is a BPF program agentjail does not "
				       "load; the container can make no device nodes and opens only "
				       "those bound into it");
	if (aj_cg_set(l->net_classid) || l->n_prio)
		note(notes, "network", "cgroup v2 has no net_cls or net_prio controller");
	if (v2_memory(p, l, notes, err) < 0 || v2_cpu(p, l, notes, err) < 0 ||
	    v2_io(p, l, notes, err) < 0 ||
	    hugetlb(v2_has(p, "hugetlb") ? p : NULL, "max", l, notes, err) < 0)
		return -1;
	return v2_unified(p, l, err);
}
