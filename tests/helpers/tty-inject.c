/* tty-inject [N]: tries to push a command line into the input of a terminal, the way a
 * TIOCSTI attack types commands into the user's shell. Prints one "STEP RESULT" line per step,
 * RESULT being "OK" or the errno name:
 *
 *   isatty      stdin is a terminal (the caller's, if agentjail handed it over)
 *   sctty       TIOCSCTTY on stdin: make it our controlling terminal (we lead a session)
 *   sti         TIOCSTI of each byte of the payload on stdin (first failure reported)
 *   devtty      open /dev/tty (our controlling terminal, if any)
 *   devtty-sti  TIOCSTI through /dev/tty, when it opened
 *   own-sti     TIOCSTI into a pseudo-terminal of the sandbox's own, from a session leader
 *               whose controlling terminal it is: only the seccomp filter can refuse that
 *   wrote N     with an argument N: bytes of N written to stdin (a terminal would show them
 *               without passing agentjail's output pipes)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

static const char payload[] = "echo INJECTED-BY-SANDBOX\n";

static void report(const char *step, int r)
{
	const char *n = r < 0 ? strerrorname_np(errno) : "OK";
	printf("%s %s\n", step, n ? n : "E?");
	fflush(stdout);
}

static int inject(int fd)
{
	for (size_t i = 0; i < sizeof payload - 1; i++)
		if (ioctl(fd, TIOCSTI, &payload[i]) < 0)
			return -1;
	return 0;
}

/* A new pty; a child leads a session, opens the slave (so it becomes its controlling
 * terminal) and injects into it. The child's errno comes back as its exit status. */
static int own_pty_inject(void)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), st;
	const char *name;
	pid_t pid;

	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || !(name = ptsname(m)))
		return -1;
	pid = fork();
	if (pid == 0) {
		int s;
		if (setsid() < 0 || (s = open(name, O_RDWR)) < 0)
			_exit(errno);
		_exit(inject(s) < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	close(m);
	errno = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	return errno ? -1 : 0;
}

static long flood(int fd, long n)
{
	char buf[4096];
	long done = 0;

	memset(buf, 'A', sizeof buf);
	while (done < n) {
		ssize_t w = write(fd, buf, (size_t)(n - done < 4096 ? n - done : 4096));
		if (w <= 0)
			break;
		done += w;
	}
	return done;
}

int main(int argc, char **argv)
{
	int fd;

	report("isatty", isatty(0) ? 0 : -1);
	report("sctty", ioctl(0, TIOCSCTTY, 0));
	report("sti", inject(0));
	fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	report("devtty", fd);
	if (fd >= 0) {
		report("devtty-sti", inject(fd));
		close(fd);
	}
	report("own-sti", own_pty_inject());
	if (argc > 1)
		printf("wrote %ld\n", flood(0, atol(argv[1])));
	return 0;
}
