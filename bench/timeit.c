/* timeit: wall time of one command, for the steps of a sequence that cannot be alternated
 * (create, then fill, then snapshot ...). The clock runs from just before posix_spawnp to the
 * return of wait4, as in abtime, so the shell that drives the sequence adds nothing to the
 * figure.
 *
 * usage: timeit CMD [ARGS...]
 * Prints the milliseconds (three decimals) on stdout; the command's stdout goes to /dev/null,
 * its stderr is the caller's. Exits with the command's status (128+N if killed by signal N).
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	double t0, t1;
	pid_t pid;
	int st;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CMD [ARGS...]\n", argv[0]);
		return 2;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	t0 = now_ms();
	if (posix_spawnp(&pid, argv[1], &fa, NULL, &argv[1], environ) != 0) {
		perror(argv[1]);
		return 127;
	}
	if (waitpid(pid, &st, 0) != pid) {
		perror("waitpid");
		return 1;
	}
	t1 = now_ms();
	posix_spawn_file_actions_destroy(&fa);
	printf("%.3f\n", t1 - t0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
