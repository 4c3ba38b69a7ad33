#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"

int aj_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t aj_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int aj_write_file_at(int dirfd, const char *path, const char *data)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -1;
	/* procfs and cgroupfs want the value in a single write() */
	return write(fd, data, strlen(data)) < 0 ? -1 : 0;
}

int aj_write_file(const char *path, const char *data)
{
	return aj_write_file_at(AT_FDCWD, path, data);
}

char *aj_read_fd(int fd, size_t first, size_t max, size_t *len_out)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = first, len = 0;

	buf = aj_xmalloc(cap + 1);
	for (;;) {
		ssize_t n;
		if (len == cap) {
			if (cap >= max) {
				errno = EFBIG;
				return NULL;
			}
			cap = cap * 2 > max ? max : cap * 2;
			buf = aj_xrealloc(buf, cap + 1);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return NULL;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return aj_steal_ptr(&buf);
}

char *aj_read_file_at(int dirfd, const char *path, size_t max, size_t *len_out)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	return fd < 0 ? NULL : aj_read_fd(fd, 4096, max, len_out);
}

int aj_pipe(int *rd, int *wr, int flags)
{
	int p[2];

	if (pipe2(p, flags) < 0)
		return -1;
	*rd = p[0];
	*wr = p[1];
	return 0;
}

DIR *aj_fdopendir(int fd)
{
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		aj_closep(&fd);
	return d;
}

char *aj_read_file(const char *path, size_t max, size_t *len_out)
{
	return aj_read_file_at(AT_FDCWD, path, max, len_out);
}

/* The common case is that only the last component is missing: try it first, and walk up
 * only on ENOENT. */
int aj_mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);
	char *slash;

	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -1;
	if (len == 0 || len >= sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return -1;
	*slash = '\0';
	if (aj_mkdir_p(buf, mode) < 0)
		return -1;
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* The address sanitizer's builds (gcc says so one way, clang another). */
#if defined(__SANITIZE_ADDRESS__)
#define AJ_LEAKS_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AJ_LEAKS_CHECKED 1
#endif
#endif

void aj_exit_done(int code)
{
#ifndef AJ_LEAKS_CHECKED
	fflush(NULL);
	_exit(code);
#else
	(void)code;
#endif
}

uint64_t aj_now_monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t aj_now_realtime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void aj_format_time_ms(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ms % 1000));
}

int aj_random_hex(char *buf, size_t n_bytes)
{
	unsigned char raw[64];
	static const char hex[] = "0123456789abcdef";

	if (n_bytes > sizeof raw) {
		errno = EINVAL;
		return -1;
	}
	if (getrandom(raw, n_bytes, 0) != (ssize_t)n_bytes)
		return -1;
	for (size_t i = 0; i < n_bytes; i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 15];
	}
	buf[2 * n_bytes] = '\0';
	return 0;
}

bool aj_path_is_clean_abs(const char *path)
{
	const char *p = path;

	if (!path || path[0] != '/')
		return false;
	if (strcmp(path, "/") == 0)
		return true;
	while (*p == '/') {
		const char *seg = p + 1, *end = strchr(seg, '/');
		size_t n = end ? (size_t)(end - seg) : strlen(seg);
		if (n == 0)
			return false; /* "//" or trailing '/' */
		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return false;
		p = seg + n;
	}
	return *p == '\0';
}

bool aj_path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int aj_fd_set_cloexec(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return -1;
	fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
	return fcntl(fd, F_SETFD, fl);
}

unsigned long aj_nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit up = {rl.rlim_max, rl.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	return (unsigned long)rl.rlim_cur;
}

int aj_fd_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl);
}

/* Start time (field 22 of /proc/PID/stat) and state letter; 0 if there is no such process. */
static uint64_t proc_stat(pid_t pid, char *state)
{
	char path[64], *s, *p;
	unsigned long long start = 0;

	*state = '?';
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	s = aj_read_file(path, 4096, NULL);
	if (!s)
		return 0;
	/* comm may contain spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(s, ')');
	if (p && sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			       "%*d %*d %*d %llu",
			state, &start) != 2)
		start = 0;
	free(s);
	return start;
}

uint64_t aj_proc_start_time(pid_t pid)
{
	char state;

	return proc_stat(pid, &state);
}

bool aj_proc_alive(pid_t pid, uint64_t start_time)
{
	char state;

	/* A zombie (killed, not reaped yet by whoever adopted it) is not alive. */
	return pid > 0 && start_time && proc_stat(pid, &state) == start_time && state != 'Z' &&
	       state != 'X';
}

int aj_open_beneath(int dir, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | resolve};

	while (*path == '/')
		path++;
	return (int)syscall(SYS_openat2, dir, *path ? path : ".", &how, sizeof how);
}
