/* syscall-loop: times tight loops of cheap system calls from inside the process, so the
 * figure excludes process and sandbox start-up and shows only what the kernel adds per call:
 * the seccomp filter on every syscall, Landlock on every open, the mount and pid namespaces on
 * path walks and pid translation.
 *
 * usage: syscall-loop ITERATIONS PATH
 * Output: one JSON object with nanoseconds per call for each loop and the sum of the loop
 * times in milliseconds.
 *
 * getppid   the cheapest syscall there is: pure entry/exit cost, i.e. the seccomp filter.
 * stat      a path walk without an open: Landlock has no hook on it; mounts do.
 * openclose open(O_RDONLY) + close: the Landlock file_open hook walks the path to the root.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double loop_getppid(long n)
{
	double t0 = now_ns();
	/* The raw syscall: glibc does not cache getppid, but make it explicit. */
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return now_ns() - t0;
}

static double loop_stat(long n, const char *path)
{
	struct stat st;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (stat(path, &st) != 0) {
			perror(path);
			exit(1);
		}
	return now_ns() - t0;
}

static double loop_openclose(long n, const char *path)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			perror(path);
			exit(1);
		}
		close(fd);
	}
	return now_ns() - t0;
}

int main(int argc, char **argv)
{
	double g, s, o;
	long n;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: %s ITERATIONS PATH\n", argv[0]);
		return 2;
	}
	g = loop_getppid(n);
	s = loop_stat(n, argv[2]);
	o = loop_openclose(n, argv[2]);
	printf("{\"getppid_ns\": %.1f, \"stat_ns\": %.1f, \"openclose_ns\": %.1f, "
	       "\"total_ms\": %.3f}\n",
	       g / (double)n, s / (double)n, o / (double)n, (g + s + o) / 1e6);
	return 0;
}
