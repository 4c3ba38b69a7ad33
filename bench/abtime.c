/* abtime: runs several commands alternately (A B C A B C ...) and reports, per command, the
 * median and p90 wall time and peak RSS of the command's process tree, and the median of the
 * paired ratios against the first command of each round. Spawning is posix_spawn + wait4, so
 * the harness adds the same few microseconds to every command.
 *
 * usage: abtime ROUNDS WARMUP NAME1 -- CMD1... ::: NAME2 -- CMD2... [::: ...]
 * Output: one JSON object per command on stdout.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct cmd {
	const char *name;
	char **argv;
	double *t;
	long maxrss_kb;
	int failures;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double run_once(struct cmd *c)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	double t0, t1;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01, 0);
	t0 = now_ms();
	if (posix_spawnp(&pid, c->argv[0], &fa, NULL, c->argv, environ) != 0) {
		perror(c->argv[0]);
		exit(1);
	}
	wait4(pid, &st, 0, &ru);
	t1 = now_ms();
	posix_spawn_file_actions_destroy(&fa);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		c->failures++;
	if (ru.ru_maxrss > c->maxrss_kb)
		c->maxrss_kb = ru.ru_maxrss;
	return t1 - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	double *s = malloc(sizeof *s * (size_t)n);
	double r;
	memcpy(s, v, sizeof *s * (size_t)n);
	qsort(s, (size_t)n, sizeof *s, cmp);
	r = s[(int)(p * (n - 1) + 0.5)];
	free(s);
	return r;
}

int main(int argc, char **argv)
{
	struct cmd cmds[16];
	int n = 0, rounds, warmup;

	if (argc < 5) {
		fprintf(stderr, "usage: %s ROUNDS WARMUP NAME -- CMD... [::: NAME -- CMD...]\n",
			argv[0]);
		return 2;
	}
	rounds = atoi(argv[1]);
	warmup = atoi(argv[2]);
	for (int i = 3; i < argc && n < 16;) {
		struct cmd *c = &cmds[n++];
		memset(c, 0, sizeof *c);
		c->name = argv[i++];
		if (i >= argc || strcmp(argv[i], "--") != 0) {
			fprintf(stderr, "expected -- after %s\n", c->name);
			return 2;
		}
		c->argv = &argv[++i];
		while (i < argc && strcmp(argv[i], ":::") != 0)
			i++;
		if (i < argc)
			argv[i++] = NULL;
		c->t = calloc((size_t)rounds, sizeof(double));
	}
	for (int r = 0; r < warmup; r++)
		for (int k = 0; k < n; k++)
			run_once(&cmds[k]);
	for (int k = 0; k < n; k++)
		cmds[k].failures = 0;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < n; k++)
			cmds[k].t[r] = run_once(&cmds[k]);
	for (int k = 0; k < n; k++) {
		double *ratio = calloc((size_t)rounds, sizeof(double));
		for (int r = 0; r < rounds; r++)
			ratio[r] = cmds[k].t[r] / cmds[0].t[r];
		printf("{\"name\": \"%s\", \"median_ms\": %.3f, \"p90_ms\": %.3f, "
		       "\"paired_ratio_vs_%s\": %.3f, \"max_rss_kb\": %ld, \"failures\": %d, "
		       "\"rounds\": %d}\n",
		       cmds[k].name, pct(cmds[k].t, rounds, 0.5), pct(cmds[k].t, rounds, 0.9),
		       cmds[0].name, pct(ratio, rounds, 0.5), cmds[k].maxrss_kb, cmds[k].failures,
		       rounds);
		free(ratio);
	}
	return 0;
}
