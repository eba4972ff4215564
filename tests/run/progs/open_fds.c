/*
 * tests/run/progs/open_fds.c: a program that leaves descriptors open, for
 * track_fds= against valgrind's --track-fds (check_track_fds.py).
 *
 * It opens a file, a socket pair, a pipe, a stream, a copy and an eventfd;
 * closes one end of the pair and of the pipe, and a file and a stream it
 * opened; and leaves the rest open, beside the descriptor its parent passed.
 * Each call is on a line of its own: the test compares the line valgrind
 * names for each descriptor with heapledger's.
 *
 * usage: open_fds FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static int open_file(const char *path)
{
	return open(path, O_RDONLY);
}

int main(int argc, char **argv)
{
	int pair[2], ends[2];
	if (argc != 2)
		return 2;
	int file = open_file(argv[1]);
	if (file < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0 || pipe(ends) != 0)
		return 1;
	close(pair[1]);
	close(ends[0]);
	FILE *stream = fopen(argv[1], "r");
	int copy = dup(file);
	int gone = open(argv[1], O_RDONLY);
	close(gone);
	FILE *closed = fopen(argv[1], "r");
	if (closed)
		fclose(closed);
	int counter = eventfd(0, 0);
	printf("open: %d %d %d %d %d %d\n", file, pair[0], ends[1], stream ? fileno(stream) : -1,
	       copy, counter);
	return 0;
}
