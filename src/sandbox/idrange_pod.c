/* One host id range shared by the containers of a pod (a key: the CRI's sandbox id).
 *
 * The slots are those of aj_idrange_acquire() (userns.c): a file per range, held with an
 * exclusive flock by a sandbox that has it alone. A pod's members hold its slot with a
 * shared flock each, for as long as each lives, and the slot file says whose it is (the
 * pod's key written in it). A record, ids/pod-<key>, says which slot the pod has. Under one
 * lock for all pods (ids/pods.lock), a member:
 *   - takes the recorded slot if the slot file still names the pod and can be held shared
 *     (no exclusive holder: no sandbox took the range after the pod's last member ended,
 *     and another pod's members would have written their own key);
 *   - otherwise takes a free slot exclusively, writes the key in it, turns the lock into a
 *     shared one (a sandbox taking the slot between the two loses nothing: the shared lock
 *     then fails and the next slot is tried), and records it.
 * A plain sandbox never shares: its exclusive lock fails on a slot any pod member holds.
 *
 * A container in a pid namespace it joined may leave processes behind its init (exec'd
 * ones, or all of them when init is killed), which the kernel does not end with it: its
 * slot names the container's cgroup ("cgroup DIR"), and a slot whose cgroup still lists
 * processes is not taken, whoever asks, until they are gone (delete ends them). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "sandbox/userns.h"

#define IDS AJ_RUNTIME_DIR "/ids"

static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	return n && n <= 128 && key[0] != '.' &&
	       strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int open_slot(uint32_t slot, struct aj_err *err)
{
	char path[128];
	int fd;

	snprintf(path, sizeof path, IDS "/%u", slot);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		aj_err_sys(err, AJ_LAYER_USERNS, "open \"%s\"", path);
	return fd;
}

/* The recorded slot, held shared, if it is still the pod's; -1 otherwise. */
static int recorded(const char *key, uint32_t *slot)
{
	char path[256], buf[160];
	_cleanup_free_ char *rec = NULL;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof path, IDS "/pod-%s", key);
	rec = aj_read_file(path, 64, NULL);
	if (!rec || sscanf(rec, "%u", slot) != 1 || *slot >= AJ_ID_RANGES)
		return -1;
	fd = open_slot(*slot, NULL);
	if (fd < 0 || flock(fd, LOCK_SH | LOCK_NB) < 0)
		return -1;
	n = pread(fd, buf, sizeof buf - 1, 0);
	if (n < 0 || (buf[n] = '\0', strcmp(buf, key) != 0))
		return -1; /* another pod's now (its members hold it shared too) */
	return aj_steal_fd(&fd);
}

#define CGROUP_MARK "cgroup "

bool aj_idrange_left_behind(int slot_fd)
{
	char buf[640], path[700];
	_cleanup_free_ char *procs = NULL;
	ssize_t n = pread(slot_fd, buf, sizeof buf - 1, 0);

	if (n <= (ssize_t)strlen(CGROUP_MARK))
		return false;
	buf[n] = '\0';
	if (strncmp(buf, CGROUP_MARK, strlen(CGROUP_MARK)) != 0)
		return false;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(path, sizeof path, "%s/cgroup.procs", buf + strlen(CGROUP_MARK));
	procs = aj_read_file(path, 64, NULL);
	return procs && procs[0];
}

int aj_idrange_note_cgroup(int lock_fd, const char *cgroup_dir, struct aj_err *err)
{
	char rec[640];
	int n = snprintf(rec, sizeof rec, CGROUP_MARK "%s\n", cgroup_dir);

	if (n < 0 || (size_t)n >= sizeof rec || ftruncate(lock_fd, 0) < 0 ||
	    pwrite(lock_fd, rec, (size_t)n, 0) != n)
		return aj_err_sys(err, AJ_LAYER_USERNS, "record the cgroup \"%s\" in the id range's slot",
				  cgroup_dir);
	return 0;
}

/* A free slot, taken for the pod and held shared; -1 with err when none is. */
static int fresh(const char *key, uint32_t *slot, struct aj_err *err)
{
	uint32_t start;

	if (getrandom(&start, sizeof start, 0) != sizeof start)
		start = (uint32_t)getpid();
	for (uint32_t i = 0; i < AJ_ID_RANGES; i++) {
		_cleanup_close_ int fd = -1;
		*slot = (start + i) % AJ_ID_RANGES;
		if ((fd = open_slot(*slot, err)) < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0 || aj_idrange_left_behind(fd))
			continue;
		if (ftruncate(fd, 0) < 0 || pwrite(fd, key, strlen(key), 0) != (ssize_t)strlen(key))
			return aj_err_sys(err, AJ_LAYER_USERNS, "write the pod's key to slot %u", *slot);
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return aj_steal_fd(&fd);
	}
	return aj_err_set(err, AJ_LAYER_USERNS, EBUSY, "all %u host id ranges are in use",
			  AJ_ID_RANGES);
}

static int record(const char *key, uint32_t slot, struct aj_err *err)
{
	char path[256], tmp[300], v[16];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, IDS "/pod-%s", key);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	snprintf(v, sizeof v, "%u\n", slot);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || aj_write_all(fd, v, strlen(v)) < 0 || rename(tmp, path) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "record the pod's id range in \"%s\"", path);
	return 0;
}

static int pods_lock(struct aj_err *err)
{
	_cleanup_close_ int fd = -1;

	if (aj_mkdir_p(IDS, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "create \"%s\"", IDS);
	fd = open(IDS "/pods.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		return aj_err_sys(err, AJ_LAYER_USERNS, "lock \"%s\"", IDS "/pods.lock");
	return aj_steal_fd(&fd);
}

int aj_idrange_acquire_shared(const char *key, uint32_t *base, int *lock_fd, struct aj_err *err)
{
	_cleanup_close_ int lock = -1, fd = -1;
	uint32_t slot = 0;

	if (!key_ok(key))
		return aj_err_set(err, AJ_LAYER_USERNS, EINVAL, "\"%s\" is not a pod's id", key);
	if ((lock = pods_lock(err)) < 0)
		return -1;
	fd = recorded(key, &slot);
	if (fd < 0 && ((fd = fresh(key, &slot, err)) < 0 || record(key, slot, err) < 0))
		return -1;
	*base = AJ_ID_BASE + slot * 65536u;
	*lock_fd = aj_steal_fd(&fd);
	return 0;
}

void aj_idrange_forget(const char *key)
{
	_cleanup_close_ int lock = -1;
	char path[256];

	if (!key_ok(key) || (lock = pods_lock(NULL)) < 0)
		return;
	snprintf(path, sizeof path, IDS "/pod-%s", key);
	unlink(path);
}
