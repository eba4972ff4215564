/*
 * timeit: run a command and record its wall time and peak RSS, with no
 * dependency on GNU time. The child's ru_maxrss from wait4 already covers
 * the descendants it waited for (cc1 under gcc, the program under
 * `heapledger run`), which is the peak we want.
 *
 * usage: timeit OUTFILE prog [args...]
 * Writes "WALL_SECONDS MAXRSS_KIB STATUS" to OUTFILE, where STATUS is the
 * exit code, or 128 + the signal that killed the child. Exits with STATUS.
 */
#include <errno.h>
#include <stdio.h>
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

static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

int main(int argc, char **argv)
{
	struct rusage usage;
	double start, wall;
	int status, code;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: timeit OUTFILE prog [args...]\n");
		return 2;
	}
	start = now_seconds();
	pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "timeit: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &usage) < 0) {
		if (errno != EINTR) {
			perror("timeit: wait4");
			return 2;
		}
	}
	wall = now_seconds() - start;
	code = status_code(status);
	out = fopen(argv[1], "w");
	if (!out) {
		perror("timeit: fopen");
		return 2;
	}
	fprintf(out, "%.3f %ld %d\n", wall, usage.ru_maxrss, code);
	fclose(out);
	return code;
}
