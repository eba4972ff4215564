/*
 * libhook/fdwrap.c: the calls that make or close a file descriptor, for
 * track_fds= (fdtrack.h).
 *
 * Each wrapper calls libc's own function (found with dlsym(RTLD_NEXT) on
 * first use) and, only when track_fds is on and the call succeeded, tells
 * fdtrack.c. With the option off a wrapper costs one load and a branch
 * more than libc's function (bench/README.md). The set is the one
 * valgrind's syscall wrappers record (syswrap-generic.c, syswrap-linux.c):
 * open, openat, creat, socket, socketpair, accept, pipe, dup, fcntl's
 * F_DUPFD, eventfd, timerfd_create, signalfd, epoll_create, memfd_create,
 * inotify_init, descriptors passed in recvmsg, close and close_range. glibc
 * calls its internal open and close where stdio and dirent make and close
 * descriptors, so fopen, freopen, tmpfile, mkstemp, popen, opendir and
 * their closing calls are wrapped too; what is still not seen (a raw
 * syscall, glibc's own descriptors) is found at exit in /proc/self/fd and
 * listed without a stack.
 *
 * A wrapper records nothing in a vfork child (one there is with the option
 * off, or made by clone with CLONE_VM: with it on vfork runs as fork,
 * vfork.c), nor while the thread is inside the hook
 * (hl_guard_depth): the hook's own transient descriptors are not the
 * program's, and fdtrack.c opens /proc/self/fd under its lock. Errno is the
 * one libc's function left.
 */
#ifndef HL_UNIT_TEST /* a unit test program keeps libc's own functions */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS /* open and open64 are two symbols here, not one name */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "fdtrack.h"

/* libc's `name`, resolved once (a racing first call resolves it twice, to
 * the same address). */
#define REAL(name, type)                                                                \
	static __typeof__(type) real_##name;                                             \
	if (hl_unlikely(__atomic_load_n(&real_##name, __ATOMIC_RELAXED) == NULL))        \
		__atomic_store_n(&real_##name, (__typeof__(type))dlsym(RTLD_NEXT, #name),  \
				 __ATOMIC_RELAXED)

/* Should this call be recorded? Not in a vfork child, which runs in its
 * parent's memory: its dup2 onto 0, 1, 2 and its closes before exec are not
 * the parent's (a getpid, paid only with the option on). */
HL_INLINE bool tracking(void)
{
	return hl_fds_on() && hl_guard_depth == 0 && hl_process_is_owner();
}

static int opened(int fd, enum hl_fds_naming naming, const char *path)
{
	if (fd >= 0 && tracking())
		hl_fds_opened(fd, naming, path);
	return fd;
}

static void closed(int fd)
{
	if (tracking())
		hl_fds_closed(fd);
}

/* The mode argument of open's family: there only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, last)                                   \
	mode_t mode = 0;                                         \
	if ((flags) & (O_CREAT | __O_TMPFILE)) {                 \
		va_list ap;                                      \
		va_start(ap, last);                              \
		mode = (mode_t)va_arg(ap, int);                  \
		va_end(ap);                                      \
	}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

HL_API int open(const char *path, int flags, ...)
{
	REAL(open, open_fn);
	OPEN_MODE(flags, flags);
	return opened(real_open(path, flags, mode), HL_FDS_GIVEN, path);
}

HL_API int open64(const char *path, int flags, ...)
{
	REAL(open64, open_fn);
	OPEN_MODE(flags, flags);
	return opened(real_open64(path, flags, mode), HL_FDS_GIVEN, path);
}

HL_API int openat(int dir, const char *path, int flags, ...)
{
	REAL(openat, openat_fn);
	OPEN_MODE(flags, flags);
	return opened(real_openat(dir, path, flags, mode), HL_FDS_GIVEN, path);
}

HL_API int openat64(int dir, const char *path, int flags, ...)
{
	REAL(openat64, openat_fn);
	OPEN_MODE(flags, flags);
	return opened(real_openat64(dir, path, flags, mode), HL_FDS_GIVEN, path);
}

/* _FORTIFY_SOURCE's checked forms, which programs built with it call
 * (declared by glibc's headers only under _FORTIFY_SOURCE). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dir, const char *path, int flags);
int __openat64_2(int dir, const char *path, int flags);

HL_API int __open_2(const char *path, int flags)
{
	REAL(__open_2, int (*)(const char *, int));
	return opened(real___open_2(path, flags), HL_FDS_GIVEN, path);
}

HL_API int __open64_2(const char *path, int flags)
{
	REAL(__open64_2, int (*)(const char *, int));
	return opened(real___open64_2(path, flags), HL_FDS_GIVEN, path);
}

HL_API int __openat_2(int dir, const char *path, int flags)
{
	REAL(__openat_2, int (*)(int, const char *, int));
	return opened(real___openat_2(dir, path, flags), HL_FDS_GIVEN, path);
}

HL_API int __openat64_2(int dir, const char *path, int flags)
{
	REAL(__openat64_2, int (*)(int, const char *, int));
	return opened(real___openat64_2(dir, path, flags), HL_FDS_GIVEN, path);
}

HL_API int creat(const char *path, mode_t mode)
{
	REAL(creat, int (*)(const char *, mode_t));
	return opened(real_creat(path, mode), HL_FDS_GIVEN, path);
}

HL_API int creat64(const char *path, mode_t mode)
{
	REAL(creat64, int (*)(const char *, mode_t));
	return opened(real_creat64(path, mode), HL_FDS_GIVEN, path);
}

HL_API int close(int fd)
{
	REAL(close, int (*)(int));
	int r = real_close(fd);
	/* Closed even when close failed with EINTR or EIO (Linux frees the
	 * number first); not when it was never open. */
	if (r == 0 || errno != EBADF)
		closed(fd);
	return r;
}

HL_API int close_range(unsigned low, unsigned high, int flags)
{
	REAL(close_range, int (*)(unsigned, unsigned, int));
	int r = real_close_range(low, high, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && tracking())
		hl_fds_closed_range(low, high);
	return r;
}

HL_API void closefrom(int low)
{
	REAL(closefrom, void (*)(int));
	real_closefrom(low);
	if (low >= 0 && tracking())
		hl_fds_closed_range((unsigned)low, ~0u);
}

/* ---- sockets, pipes and the kernel's other descriptors ------------------- */

HL_API int socket(int domain, int type, int protocol)
{
	REAL(socket, int (*)(int, int, int));
	return opened(real_socket(domain, type, protocol), HL_FDS_NAMELESS, NULL);
}

HL_API int socketpair(int domain, int type, int protocol, int sv[2])
{
	REAL(socketpair, int (*)(int, int, int, int[2]));
	int r = real_socketpair(domain, type, protocol, sv);
	if (r == 0) {
		opened(sv[0], HL_FDS_NAMELESS, NULL);
		opened(sv[1], HL_FDS_NAMELESS, NULL);
	}
	return r;
}

HL_API int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	REAL(accept, int (*)(int, struct sockaddr *, socklen_t *));
	return opened(real_accept(fd, addr, len), HL_FDS_NAMELESS, NULL);
}

HL_API int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	REAL(accept4, int (*)(int, struct sockaddr *, socklen_t *, int));
	return opened(real_accept4(fd, addr, len, flags), HL_FDS_NAMELESS, NULL);
}

/* A pipe made inside the hook is the hook's: libunwind's, which it makes at
 * its first unwind to check addresses, used to take the program's 4 and 5
 * (its socketpair then got 6 where valgrind's run gave 4). It is moved up
 * with the hook's other descriptors (fd.c) and never listed. */
static int pipe_opened(int r, int fds[2])
{
	if (r == 0 && hl_guard_depth > 0) {
		for (int i = 0; i < 2; i++) {
			fds[i] = hl_fd_move_high(fds[i]);
			hl_fds_hook_keeps(fds[i]);
		}
	} else if (r == 0) {
		opened(fds[0], HL_FDS_NAMELESS, NULL);
		opened(fds[1], HL_FDS_NAMELESS, NULL);
	}
	return r;
}

HL_API int pipe(int fds[2])
{
	REAL(pipe, int (*)(int[2]));
	return pipe_opened(real_pipe(fds), fds);
}

HL_API int pipe2(int fds[2], int flags)
{
	REAL(pipe2, int (*)(int[2], int));
	return pipe_opened(real_pipe2(fds, flags), fds);
}

HL_API int eventfd(unsigned count, int flags)
{
	REAL(eventfd, int (*)(unsigned, int));
	return opened(real_eventfd(count, flags), HL_FDS_NAMELESS, NULL);
}

HL_API int timerfd_create(int clock, int flags)
{
	REAL(timerfd_create, int (*)(int, int));
	return opened(real_timerfd_create(clock, flags), HL_FDS_NAMELESS, NULL);
}

HL_API int signalfd(int fd, const sigset_t *mask, int flags)
{
	REAL(signalfd, int (*)(int, const sigset_t *, int));
	int r = real_signalfd(fd, mask, flags);
	return fd == -1 ? opened(r, HL_FDS_NAMELESS, NULL) : r; /* else a new mask */
}

HL_API int epoll_create(int size)
{
	REAL(epoll_create, int (*)(int));
	return opened(real_epoll_create(size), HL_FDS_NAMELESS, NULL);
}

HL_API int epoll_create1(int flags)
{
	REAL(epoll_create1, int (*)(int));
	return opened(real_epoll_create1(flags), HL_FDS_NAMELESS, NULL);
}

HL_API int memfd_create(const char *name, unsigned flags)
{
	REAL(memfd_create, int (*)(const char *, unsigned));
	return opened(real_memfd_create(name, flags), HL_FDS_NAMELESS, NULL);
}

HL_API int inotify_init(void)
{
	REAL(inotify_init, int (*)(void));
	return opened(real_inotify_init(), HL_FDS_NAMELESS, NULL);
}

HL_API int inotify_init1(int flags)
{
	REAL(inotify_init1, int (*)(int));
	return opened(real_inotify_init1(flags), HL_FDS_NAMELESS, NULL);
}

/* Descriptors another process passed (SCM_RIGHTS), as valgrind's
 * check_cmsg_for_fds. */
HL_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	REAL(recvmsg, ssize_t (*)(int, struct msghdr *, int));
	ssize_t r = real_recvmsg(fd, msg, flags);
	if (r < 0 || !tracking())
		return r;
	int saved = errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int passed;
			memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			opened(passed, HL_FDS_RESOLVED, NULL);
		}
	}
	errno = saved;
	return r;
}

/* ---- copies ----------------------------------------------------------------- */

HL_API int dup(int fd)
{
	REAL(dup, int (*)(int));
	return opened(real_dup(fd), HL_FDS_RESOLVED, NULL);
}

HL_API int dup2(int fd, int to)
{
	REAL(dup2, int (*)(int, int));
	return opened(real_dup2(fd, to), HL_FDS_RESOLVED, NULL);
}

HL_API int dup3(int fd, int to, int flags)
{
	REAL(dup3, int (*)(int, int, int));
	return opened(real_dup3(fd, to, flags), HL_FDS_RESOLVED, NULL);
}

/* fcntl passes its third argument on as it came (a long is as wide as a
 * pointer on every target the hook builds for). */
static int fcntl_done(int r, int cmd)
{
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		opened(r, HL_FDS_RESOLVED, NULL);
	return r;
}

HL_API int fcntl(int fd, int cmd, ...)
{
	REAL(fcntl, int (*)(int, int, ...));
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	return fcntl_done(real_fcntl(fd, cmd, arg), cmd);
}

HL_API int fcntl64(int fd, int cmd, ...)
{
	REAL(fcntl64, int (*)(int, int, ...));
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	return fcntl_done(real_fcntl64(fd, cmd, arg), cmd);
}

/* ---- stdio and dirent, which open and close through glibc's internals ------ */

static FILE *stream_opened(FILE *f, enum hl_fds_naming naming, const char *path)
{
	if (f && tracking())
		opened(fileno(f), naming, path);
	return f;
}

/* The stream's descriptor is forgotten before it closes: afterwards the
 * FILE is gone (and its number may already be another thread's). */
static void stream_closing(FILE *f)
{
	if (f && tracking()) {
		int saved = errno;
		int fd = fileno(f);
		errno = saved;
		if (fd >= 0)
			hl_fds_closed(fd);
	}
}

HL_API FILE *fopen(const char *path, const char *mode)
{
	REAL(fopen, FILE *(*)(const char *, const char *));
	return stream_opened(real_fopen(path, mode), HL_FDS_GIVEN, path);
}

HL_API FILE *fopen64(const char *path, const char *mode)
{
	REAL(fopen64, FILE *(*)(const char *, const char *));
	return stream_opened(real_fopen64(path, mode), HL_FDS_GIVEN, path);
}

HL_API FILE *freopen(const char *path, const char *mode, FILE *f)
{
	REAL(freopen, FILE *(*)(const char *, const char *, FILE *));
	stream_closing(f);
	return stream_opened(real_freopen(path, mode, f), path ? HL_FDS_GIVEN : HL_FDS_RESOLVED,
			     path);
}

HL_API FILE *freopen64(const char *path, const char *mode, FILE *f)
{
	REAL(freopen64, FILE *(*)(const char *, const char *, FILE *));
	stream_closing(f);
	return stream_opened(real_freopen64(path, mode, f),
			     path ? HL_FDS_GIVEN : HL_FDS_RESOLVED, path);
}

HL_API FILE *tmpfile(void)
{
	REAL(tmpfile, FILE *(*)(void));
	return stream_opened(real_tmpfile(), HL_FDS_RESOLVED, NULL);
}

HL_API FILE *tmpfile64(void)
{
	REAL(tmpfile64, FILE *(*)(void));
	return stream_opened(real_tmpfile64(), HL_FDS_RESOLVED, NULL);
}

HL_API FILE *popen(const char *command, const char *mode)
{
	REAL(popen, FILE *(*)(const char *, const char *));
	return stream_opened(real_popen(command, mode), HL_FDS_NAMELESS, NULL);
}

HL_API int fclose(FILE *f)
{
	REAL(fclose, int (*)(FILE *));
	stream_closing(f);
	return real_fclose(f);
}

HL_API int pclose(FILE *f)
{
	REAL(pclose, int (*)(FILE *));
	stream_closing(f);
	return real_pclose(f);
}

/* mkstemp's family: the name is the template as filled in. */
HL_API int mkstemp(char *template)
{
	REAL(mkstemp, int (*)(char *));
	return opened(real_mkstemp(template), HL_FDS_GIVEN, template);
}

HL_API int mkstemp64(char *template)
{
	REAL(mkstemp64, int (*)(char *));
	return opened(real_mkstemp64(template), HL_FDS_GIVEN, template);
}

HL_API int mkostemp(char *template, int flags)
{
	REAL(mkostemp, int (*)(char *, int));
	return opened(real_mkostemp(template, flags), HL_FDS_GIVEN, template);
}

HL_API int mkostemp64(char *template, int flags)
{
	REAL(mkostemp64, int (*)(char *, int));
	return opened(real_mkostemp64(template, flags), HL_FDS_GIVEN, template);
}

HL_API DIR *opendir(const char *path)
{
	REAL(opendir, DIR *(*)(const char *));
	DIR *d = real_opendir(path);
	if (d && tracking())
		opened(dirfd(d), HL_FDS_GIVEN, path);
	return d;
}

HL_API int closedir(DIR *d)
{
	REAL(closedir, int (*)(DIR *));
	if (tracking())
		hl_fds_closed(dirfd(d));
	return real_closedir(d);
}

#endif /* HL_UNIT_TEST */
