/*
 * libhook/procfs.c: the process's own files in /proc, opened through
 * /proc/thread-self.
 *
 * /proc/self names the thread group's leader. Once the leader has ended
 * while other threads run on (a main that called pthread_exit), its maps
 * read empty, its exe link and its fd directory are gone: the exit scan
 * found no roots at all and reported every block as lost, and the report
 * named no executable. /proc/thread-self (Linux 3.17) names the calling
 * thread, which shares the same memory and descriptors; before 3.17 the
 * leader's files are what there is.
 *
 * System calls only: these run with the allocator's locks held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

static const char *const roots[] = { "/proc/thread-self/", "/proc/self/" };

/* roots[i] followed by name in buf; false if it does not fit. */
static bool join(char *buf, size_t size, unsigned i, const char *name)
{
	size_t a = strlen(roots[i]), b = strlen(name);
	if (a + b + 1 > size)
		return false;
	memcpy(buf, roots[i], a);
	memcpy(buf + a, name, b + 1);
	return true;
}

int hl_proc_open(const char *name, int flags)
{
	char path[HL_PROC_PATH_MAX];
	int fd = -1;
	for (unsigned i = 0; i < 2 && fd < 0; i++) {
		if (!join(path, sizeof(path), i, name))
			return -1;
		fd = open(path, flags | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT)
			return -1; /* there, and not to be read */
	}
	return fd;
}

ssize_t hl_proc_readlink(const char *name, char *buf, size_t size)
{
	char path[HL_PROC_PATH_MAX];
	ssize_t n = -1;
	for (unsigned i = 0; i < 2 && n < 0; i++) {
		if (!join(path, sizeof(path), i, name))
			return -1;
		n = readlink(path, buf, size);
		if (n < 0 && errno != ENOENT)
			return -1;
	}
	return n;
}
