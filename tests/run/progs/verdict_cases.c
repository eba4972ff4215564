/* tests/run/progs/verdict_cases.c: one program per leak verdict, chosen by
 * its argument, for the gate's fail-closed tests and the consistency matrix
 * (every output asked the same question):
 *   clean       frees everything
 *   definite    64 bytes definitely lost (leak_definite)
 *   indirect    a lost 32-byte node holding the only pointer to 48 bytes:
 *               32 definitely and 48 indirectly lost (leak_indirect)
 *   possible    a global points 8 bytes into a 40-byte block: possibly lost
 *   reachable   a global points to 24 bytes: still reachable
 *   suppressed  72 bytes definitely lost from leak_suppressed (the test
 *               suppresses fun:leak_suppressed)
 *   zero        malloc(0) lost: "0 bytes in 1 blocks are definitely lost"
 *   heaperror   a double free (a heap error), no leak
 *   _exit       64 bytes definitely lost, then _exit(0)
 *   closefds    closes every descriptor above 2 (heapledger's too), then
 *               leaks 100 bytes heapledger cannot see
 *   dup2fds     dup2()s /dev/null over every descriptor from 3 to 4095
 *               (heapledger's too), then leaks 100 bytes unseen
 *   forkunseen  points HEAPLEDGER_SOCKET nowhere, then forks: the child
 *               never connects (its parent's FORK names it), leaks 100
 *               bytes and exits; the parent waits for it and exits clean
 *   spawnunseen posix_spawn()s itself as `definite` with an environment
 *               holding PATH alone (no LD_PRELOAD): the child leaks 64
 *               bytes unseen; the parent waits for it and exits clean
 *   vforkunseen the same through vfork() and execve()
 *   vforkfail   vfork()s a child whose execve() fails (it _exits 127):
 *               no image started, nothing is missing
 *   stall FILE  creates FILE.ready (its hook is connected by then), waits
 *               for FILE, then allocates and frees until its hook gives up
 *               on a stopped reporter, then leaks 100 bytes */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile global_reachable;
char *volatile global_interior;

struct node {
	void *child;
	char pad[24];
};

__attribute__((noinline)) static void leak_definite(void)
{
	void *volatile p = malloc(64); /* VERDICT-DEFINITE */

	p = NULL;
	(void)p;
}

__attribute__((noinline)) static void leak_indirect(void)
{
	struct node *volatile n = malloc(sizeof(*n)); /* VERDICT-INDIRECT-ROOT */

	n->child = malloc(48); /* VERDICT-INDIRECT-CHILD */
	n = NULL;
	(void)n;
}

__attribute__((noinline)) static void leak_possible(void)
{
	global_interior = (char *)malloc(40) + 8; /* VERDICT-POSSIBLE */
}

__attribute__((noinline)) static void keep_reachable(void)
{
	global_reachable = malloc(24); /* VERDICT-REACHABLE */
}

__attribute__((noinline)) void leak_suppressed(void);
__attribute__((noinline)) void leak_suppressed(void)
{
	void *volatile p = malloc(72); /* VERDICT-SUPPRESSED */

	p = NULL;
	(void)p;
}

__attribute__((noinline)) static void leak_zero(void)
{
	void *volatile p = malloc(0); /* VERDICT-ZERO */

	p = NULL;
	(void)p;
}

__attribute__((noinline)) static void double_free(void)
{
	void *volatile p = malloc(16);

	free(p);
	free(p); /* VERDICT-DOUBLE-FREE */
}

__attribute__((noinline)) static void leak_unseen(void)
{
	void *volatile p = malloc(100); /* VERDICT-UNSEEN */

	p = NULL;
	(void)p;
}

/* Enough churn to fill the socket and the hook's buffers many times over
 * while the reporter is stopped: the hook waits wait_ms, then goes on
 * standalone. */
static void churn(void)
{
	for (long i = 0; i < 1000000; i++)
		free(malloc(16 + (size_t)(i & 63)));
}

/* spawnunseen, vforkunseen, vforkfail: a child started with an
 * environment that lost LD_PRELOAD (or, vforkfail, a failed exec). */
static int start_unseen(const char *mode)
{
	char *child_argv[] = { "verdict_cases", "definite", NULL };
	char *bare_env[] = { "PATH=/usr/bin:/bin", NULL };
	char *volatile argv_copy = strdup("allocated before the child starts");
	pid_t pid = -1;
	int status = 0;

	if (!strcmp(mode, "spawnunseen")) {
		if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, bare_env))
			return 3;
	} else {
		pid = vfork();
		if (pid == 0) {
			execve(strcmp(mode, "vforkfail") ? "/proc/self/exe" : "/nonexistent/program",
			       child_argv, bare_env);
			_exit(127);
		}
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 3;
	free(argv_copy);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clean";

	if (!strcmp(mode, "definite")) {
		leak_definite();
	} else if (!strcmp(mode, "indirect")) {
		leak_indirect();
	} else if (!strcmp(mode, "possible")) {
		leak_possible();
	} else if (!strcmp(mode, "reachable")) {
		keep_reachable();
	} else if (!strcmp(mode, "suppressed")) {
		leak_suppressed();
	} else if (!strcmp(mode, "zero")) {
		leak_zero();
	} else if (!strcmp(mode, "heaperror")) {
		double_free();
	} else if (!strcmp(mode, "_exit")) {
		leak_definite();
		_exit(0);
	} else if (!strcmp(mode, "closefds")) {
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
		leak_unseen();
	} else if (!strcmp(mode, "dup2fds")) {
		int null = open("/dev/null", O_RDONLY);

		for (int fd = 3; null >= 0 && fd < 4096; fd++)
			if (fd != null)
				dup2(null, fd);
		leak_unseen();
	} else if (!strcmp(mode, "forkunseen")) {
		pid_t child;

		setenv("HEAPLEDGER_SOCKET", "/nonexistent/heapledger.sock", 1);
		child = fork();
		if (child == 0) {
			leak_unseen();
			exit(0);
		}
		if (child > 0)
			waitpid(child, NULL, 0);
	} else if (!strcmp(mode, "spawnunseen") || !strcmp(mode, "vforkunseen") ||
		   !strcmp(mode, "vforkfail")) {
		return start_unseen(mode);
	} else if (!strcmp(mode, "stall") && argc > 2) {
		char ready[4096];
		FILE *f;

		snprintf(ready, sizeof(ready), "%s.ready", argv[2]);
		f = fopen(ready, "w");
		if (f)
			fclose(f);
		while (access(argv[2], F_OK) != 0)
			usleep(10000);
		churn();
		leak_unseen();
	} else if (strcmp(mode, "clean")) {
		fprintf(stderr, "verdict_cases: unknown case %s\n", mode);
		return 2;
	}
	return 0;
}
