/*
 * bench/fdchurn.c: open("/dev/null") and close it N times, at one call
 * site: what the hook's descriptor wrappers cost per pair, with track_fds
 * off (the default) and on (bench/README.md, "Descriptor tracking";
 * measured by instruction counts under callgrind, N and 2N apart).
 *
 * usage: fdchurn N
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	for (long i = 0; i < n; i++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			return 1;
		close(fd);
	}
	return 0;
}
