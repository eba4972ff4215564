/*
 * tests/expect_abort.h: runs a function in a forked child and reports
 * whether the child died of SIGABRT after writing an expected text to its
 * stderr: how the unit tests show that an assertion (the hook's hl_assert,
 * the reporter's hl_invariant) fires when an invariant is broken, without
 * breaking the test process's own state.
 *
 * The child's stderr is a pipe the parent reads to the end; the child runs
 * `violate` and exits 0 if it returns (the assertion did not fire).
 */
#ifndef HL_TEST_EXPECT_ABORT_H
#define HL_TEST_EXPECT_ABORT_H

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static inline bool dies_of_abort_saying(void (*violate)(void), const char *expected)
{
	char text[4096];
	size_t used = 0;
	int pipe_fd[2], status;
	ssize_t n;

	if (pipe(pipe_fd) != 0)
		return false;
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		dup2(pipe_fd[1], 2);
		close(pipe_fd[0]);
		close(pipe_fd[1]);
		violate();
		_exit(0);
	}
	close(pipe_fd[1]);
	while (used < sizeof(text) - 1 &&
	       (n = read(pipe_fd[0], text + used, sizeof(text) - 1 - used)) > 0)
		used += (size_t)n;
	text[used] = '\0';
	close(pipe_fd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(text, expected);
}

#endif
