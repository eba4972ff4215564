/*
 * exittime: run a command and measure how long the tool under test works
 * after the program's main has returned (its exit leak scan and report).
 *
 * usage: exittime OUTFILE prog [args...]
 * Opens a pipe and names its write end in HL_BENCH_EXIT_FD; scanheap writes
 * the CLOCK_MONOTONIC nanoseconds at which main returns there. Writes
 * "WALL_SECONDS AFTER_EXIT_SECONDS MAXRSS_KIB STATUS" to OUTFILE, where
 * AFTER_EXIT_SECONDS is the time from that instant until the command (and
 * everything it waited for) ended, -1 if the program never wrote it, and
 * STATUS is the exit code or 128 + the signal. Exits with STATUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rusage usage;
	int status, code, fds[2];
	char fdname[16], line[64];
	double start, end, after = -1;
	ssize_t got = 0, n;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: exittime OUTFILE prog [args...]\n");
		return 2;
	}
	if (pipe(fds) != 0) {
		perror("exittime: pipe");
		return 2;
	}
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	snprintf(fdname, sizeof(fdname), "%d", fds[1]);
	setenv("HL_BENCH_EXIT_FD", fdname, 1);
	start = now_seconds();
	pid = fork();
	if (pid < 0) {
		perror("exittime: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "exittime: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	/* The pipe reaches EOF when every process holding its write end is gone. */
	while ((n = read(fds[0], line + got, sizeof(line) - 1 - (size_t)got)) != 0) {
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (got += n) == (ssize_t)sizeof(line) - 1)
			break;
	}
	while (wait4(pid, &status, 0, &usage) < 0) {
		if (errno != EINTR) {
			perror("exittime: wait4");
			return 2;
		}
	}
	end = now_seconds();
	line[got] = '\0';
	if (got > 0)
		after = end - (double)strtoull(line, NULL, 10) / 1e9;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
	out = fopen(argv[1], "w");
	if (!out) {
		perror("exittime: fopen");
		return 2;
	}
	fprintf(out, "%.3f %.3f %ld %d\n", end - start, after, usage.ru_maxrss, code);
	fclose(out);
	return code;
}
