/* forkbomb SECONDS: every process forks as fast as it can; on EAGAIN it keeps trying until
 * SECONDS have passed since the start. Children never exit on their own before that (they are
 * killed with the sandbox), so the tree grows to whatever the pids limit allows. The first
 * process prints "forked N" (its own successful forks), "refused ERRNO" (the first failure)
 * and "tasks N" (the processes in /proc at the end, the bomb's size when the limit held), then
 * exits 1 as a shell does when fork fails. Every process gives up after
 * SECONDS + 30, so the bomb ends by itself even without a sandbox.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += isdigit((unsigned char)e->d_name[0]) != 0;
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3, end = now() + secs;
	pid_t top = getpid();
	long forked = 0;
	int first_err = 0;

	alarm((unsigned)secs + 30);
	while (now() < end) {
		pid_t p = fork();
		if (p == 0) {
			forked = 0; /* a child: bomb on */
			continue;
		}
		if (p > 0) {
			forked++;
			continue;
		}
		if (!first_err)
			first_err = errno;
		usleep(1000);
	}
	if (getpid() != top) {
		pause();
		return 0;
	}
	printf("forked %ld\nrefused %s\ntasks %d\n", forked,
	       first_err ? strerrorname_np(first_err) : "none", count_processes());
	return first_err ? 1 : 0;
}
