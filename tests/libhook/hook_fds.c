/* tests/libhook/hook_fds.c MODE [FILE]: a program that gets in the way of the
 * hook's descriptors; check_hook_fds.py runs it.
 *   take FILE  finds the hook's reporter socket in /proc/self/fd, dup2s FILE
 *              onto its number (as `exec N>FILE` would), writes a line, then
 *              allocates enough to make the hook send, and checks the number
 *              is still its file (exit 5 if the hook closed it);
 *   closes-stderr  closes fd 2 at exit, as grep and sort do, after a leak;
 *   churn      allocates and frees 300,000 blocks, leaks one, exits 0;
 *   churn-fork the same, then forks a child that does it again;
 *   euid       prints its effective uid (is the setuid copy really setuid?).
 * Every mode leaks 100 bytes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *volatile p = malloc(16 + (size_t)(i % 64));
		free(p);
	}
}

static int hook_socket(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;
	while (d && (e = readdir(d)) != NULL) {
		char path[300], target[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = '\0', strncmp(target, "socket:", 7) == 0))
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

static void close_stderr(void)
{
	close(2);
}

int main(int argc, char **argv)
{
	void *volatile leak = malloc(100);
	(void)leak;
	if (argc == 3 && strcmp(argv[1], "take") == 0) {
		int sock = hook_socket();
		if (sock < 0)
			return 3;
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, sock) != sock)
			return 4;
		close(fd);
		if (write(sock, "program data\n", 13) != 13)
			return 5;
		churn(300000);
		if (write(sock, "end\n", 4) != 4)
			return 5;
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "closes-stderr") == 0) {
		atexit(close_stderr);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "euid") == 0) {
		printf("%u\n", (unsigned)geteuid());
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "churn-fork") == 0) {
		churn(300000);
		pid_t pid = fork();
		if (pid == 0) {
			churn(300000);
			_exit(0);
		}
		int status;
		return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
				       WEXITSTATUS(status) == 0
			       ? 0
			       : 6;
	}
	if (argc == 2 && strcmp(argv[1], "churn") == 0) {
		churn(300000);
		return 0;
	}
	return 2;
}
