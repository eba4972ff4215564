/* tests/run/progs/vfork_clone.c MODE: processes made without fork().
 *   vfork  a vfork child _exit(9)s; the parent then leaks 48 bytes and exits 0:
 *          the parent's tracking must go on, its status stay 0;
 *   clone  a child made by glibc's clone(fn, stack, SIGCHLD, arg) leaks 24 bytes
 *          and returns 5 (glibc ends it with the exit system call); the parent
 *          leaks 48 bytes and exits 0: two processes, each with its own leak;
 *   vfork-alloc  the vfork child allocates and frees 30,000 blocks (past its
 *          parent's buffer, which it must not send) before _exit(0): the
 *          events that do not fit are dropped, and counted;
 *   rawclone  the same with the clone system call itself (no wrapper the hook
 *          could see): the child leaks 24 bytes and calls exit(5). */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void *parent_leak(void);
__attribute__((noinline)) void *parent_leak(void)
{
	return malloc(48); /* LEAK-AFTER-CHILD */
}

void *clone_leak(void);
__attribute__((noinline)) void *clone_leak(void)
{
	return malloc(24); /* LEAK-CLONE-CHILD */
}

static int clone_main(void *arg)
{
	void *volatile p = clone_leak();
	(void)p;
	return 5;
}

static char clone_stack[256 * 1024] __attribute__((aligned(16)));

int main(int argc, char **argv)
{
	int status = 0;
	pid_t pid;
	if (argc != 2)
		return 2;
	for (int i = 0; i < 1000; i++)
		free(malloc(64)); /* something in the buffers before the child */
	if (strcmp(argv[1], "vfork") == 0) {
		pid = vfork();
		if (pid == 0)
			_exit(9);
	} else if (strcmp(argv[1], "vfork-alloc") == 0) {
		pid = vfork();
		if (pid == 0) {
			for (int i = 0; i < 30000; i++)
				free(malloc(32));
			_exit(0);
		}
	} else if (strcmp(argv[1], "clone") == 0) {
		pid = clone(clone_main, clone_stack + sizeof(clone_stack), SIGCHLD, NULL);
	} else if (strcmp(argv[1], "rawclone") == 0) {
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
		if (pid == 0) {
			void *volatile p = clone_leak();
			(void)p;
			for (int i = 0; i < 20000; i++)
				free(malloc(64)); /* enough to fill the copied buffer */
			exit(5);
		}
	} else {
		return 2;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 3;
	void *volatile p = parent_leak();
	(void)p;
	for (int i = 0; i < 1000; i++)
		free(malloc(64));
	return 0;
}
