/*
 * libhook/fd.c: the hook's own file descriptors, kept out of the program's way.
 *
 * The program owns its descriptor table: it may count on open() returning 3,
 * dup2 a file onto any number, or close everything above 2. So every
 * descriptor the hook keeps (the reporter socket, the HEAPLEDGER_LOG file,
 * the copy of stderr) is moved near the top of the soft RLIMIT_NOFILE range,
 * as valgrind does, close-on-exec, and remembered by device and inode. Before
 * each use the hook checks that the number still names the file it opened;
 * one that no longer does belongs to the program and is never written to or
 * closed by the hook.
 *
 * (A program thread could close and reuse the number between the check and
 * the write; the check narrows that to a few instructions, it cannot close it
 * without owning the program's close().)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdtrack.h"
#include "internal.h"

/* The hook's descriptors go into the top HIGH_SPAN numbers below the soft
 * limit, capped at HIGH_CAP: with a limit of 2^20 the kernel would grow the
 * table to a million entries (8 MiB) for one descriptor. */
#define HIGH_SPAN 32
#define HIGH_CAP 1024

static int high_base(void)
{
	struct rlimit lim;
	rlim_t top = HIGH_CAP;
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < top)
		top = lim.rlim_cur;
	return top > 3 + HIGH_SPAN ? (int)(top - HIGH_SPAN) : 3;
}

int hl_fd_move_high(int fd)
{
	int base = high_base();
	if (fd >= base)
		return fd; /* already up there */
	int saved = errno;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (high >= 0)
		close(fd);
	else
		high = fd; /* the top is full: stay where we are */
	errno = saved;
	return high;
}

bool hl_fd_keep(struct hl_fd *h, int fd)
{
	struct stat st;
	int saved = errno;
	h->fd = -1;
	if (fd < 0)
		return false;
	fd = hl_fd_move_high(fd);
	if (fstat(fd, &st) != 0) {
		close(fd);
		errno = saved;
		return false;
	}
	h->fd = fd;
	hl_fds_hook_keeps(fd); /* never listed as the program's */
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	errno = saved;
	return true;
}

bool hl_fd_is_ours(const struct hl_fd *h)
{
	struct stat st;
	if (h->fd < 0)
		return false;
	int saved = errno;
	bool ours = fstat(h->fd, &st) == 0 && st.st_dev == h->dev && st.st_ino == h->ino;
	errno = saved;
	return ours;
}

void hl_fd_release(struct hl_fd *h)
{
	if (hl_fd_is_ours(h)) {
		int saved = errno;
		close(h->fd);
		errno = saved;
	}
	hl_fds_hook_releases(h->fd);
	h->fd = -1;
}
