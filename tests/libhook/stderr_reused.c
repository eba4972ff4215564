/* tests/libhook/stderr_reused.c FILE: a daemon-like program that closes its
 * stderr, opens FILE (which takes fd 2) as its data file, writes one line to
 * it, leaks a block and exits. The hook's exit summary must not end up in
 * FILE. check_stderr_reused.sh runs it. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	close(2);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != 2)
		return 3;
	static const char line[] = "program data\n";
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line))
		return 4;
	void *volatile leak = malloc(100);
	(void)leak;
	return 0;
}
