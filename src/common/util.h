/* Small helpers with no policy in them: full reads and writes, whole-file I/O, clocks, ids,
 * path hygiene. Returned strings are malloc'd and owned by the caller.
 */
#ifndef AJ_COMMON_UTIL_H
#define AJ_COMMON_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes all of buf, retrying on EINTR and short writes. 0 or -1 (errno). */
int aj_write_all(int fd, const void *buf, size_t len);
/* Reads up to len bytes, retrying short reads until EOF. Returns bytes read or -1. */
ssize_t aj_read_full(int fd, void *buf, size_t len);
/* Writes a small string to an existing file (procfs, cgroupfs). 0 or -1 (errno). */
int aj_write_file_at(int dirfd, const char *path, const char *data);
int aj_write_file(const char *path, const char *data);
/* Reads a small file into a NUL-terminated malloc'd buffer; NULL with errno on failure.
 * Refuses files larger than max bytes (errno = EFBIG). */
char *aj_read_file_at(int dirfd, const char *path, size_t max, size_t *len_out);
char *aj_read_file(const char *path, size_t max, size_t *len_out);
/* The same from an open descriptor, into a buffer of `first` bytes to begin with (the files
 * above: 4096), doubled as needed. */
char *aj_read_fd(int fd, size_t first, size_t max, size_t *len_out);
/* pipe2() into two variables (cleanup variables, typically). 0, or -1 with errno and both
 * left as they were. */
int aj_pipe(int *rd, int *wr, int flags);
/* fdopendir() that always takes fd: closed (errno kept) when no DIR can be made on it, so
 * `_cleanup_closedir_ DIR *d = aj_fdopendir(openat(...))` leaks nothing. A negative fd (a
 * failed open, errno set) gives NULL. */
DIR *aj_fdopendir(int fd);
/* openat2() of `path` beneath `dir` through no symlink at all (nor "..", a magic link or an
 * absolute path out of it): for trees someone else wrote, where a link must not steer an open
 * elsewhere. Leading slashes are dropped and "" is `dir` itself; O_CLOEXEC is always added;
 * `resolve` adds RESOLVE_* flags (RESOLVE_NO_XDEV). With O_PATH | O_NOFOLLOW a trailing link
 * is opened itself. -1 with errno. */
int aj_open_beneath(int dir, const char *path, int flags, uint64_t resolve);
/* mkdir -p with the given mode for each created component. */
int aj_mkdir_p(const char *path, mode_t mode);

/* Ends a process whose work is done, its output said and what it made outside undone: stdio
 * flushed, then _exit(code), without the frees and the libraries' exit handlers. What the
 * process holds goes with it. Once a sandbox has been cloned from the process, every heap page
 * is copy-on-write, and each first write to one after that is a page fault: freeing a run's
 * plan and policy at the end cost 3 % of a one-shot run. Built with the address sanitizer it
 * returns, and the caller frees as before, so that the leak checker still sees everything. */
void aj_exit_done(int code);

uint64_t aj_now_monotonic_us(void);
uint64_t aj_now_realtime_ms(void);
/* RFC 3339 UTC timestamp with milliseconds into buf (>= 32 bytes). */
void aj_format_time_ms(uint64_t ms, char *buf, size_t len);

/* Lower-case hex id of n_bytes random bytes (2*n_bytes chars + NUL into buf). */
int aj_random_hex(char *buf, size_t n_bytes);

/* True if path is absolute, has no "." or ".." components, no "//" and no trailing '/'
 * (except "/" itself). Policies only name clean paths so what is checked is what is mounted. */
bool aj_path_is_clean_abs(const char *path);
/* True if `path` equals `dir` or lies below it (both clean absolute paths). */
bool aj_path_within(const char *path, const char *dir);

/* Start time of a process (clock ticks since boot, /proc/PID/stat field 22), 0 if it does not
 * exist; with the pid it identifies a process across pid reuse. */
uint64_t aj_proc_start_time(pid_t pid);
bool aj_proc_alive(pid_t pid, uint64_t start_time);

/* Sets/clears O_CLOEXEC or O_NONBLOCK on fd. */
int aj_fd_set_cloexec(int fd, bool on);
int aj_fd_set_nonblock(int fd, bool on);
/* Raises the soft RLIMIT_NOFILE to the hard limit (for processes that hold a descriptor or
 * two per connection: the proxy, the daemon, published ports). The soft limit after, or 0
 * when it cannot be read; errno is set when raising failed. */
unsigned long aj_nofile_raise(void);

#endif
