/*
 * tests/run/progs/vfork_fds.c MODE PARENT_FILE CHILD_FILE: a vfork child
 * that opens a descriptor of its own, for track_fds= against valgrind's
 * --track-fds (check_track_fds_vfork.py).
 *
 * The parent opens PARENT_FILE and vforks; the child opens CHILD_FILE and
 *   exit  _exit(3)s with both open;
 *   exec  execs /bin/true, which inherits both;
 *   fail  execs a program that does not exist, then _exit(127)s.
 * The parent waits for it and exits 0 with PARENT_FILE open. Each open is
 * on a line of its own: the test compares the line valgrind names.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int status;
	if (argc != 4)
		return 2;
	const char *mode = argv[1];
	int parent = open(argv[2], O_RDONLY);
	pid_t pid = vfork();
	if (pid == 0) {
		int child = open(argv[3], O_RDONLY);
		if (child < 0 || strcmp(mode, "exit") == 0)
			_exit(3);
		if (strcmp(mode, "exec") == 0)
			execl("/bin/true", "true", (char *)NULL);
		else
			execl("/nonexistent/program", "program", (char *)NULL);
		_exit(127);
	}
	if (parent < 0 || pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	return 0;
}
