/*
 * libhook/fdtrack.h: the program's open file descriptors, for track_fds=
 * (valgrind's --track-fds).
 *
 * fdwrap.c interposes the calls that make or close a descriptor and tells
 * fdtrack.c, which keeps one entry per open descriptor: where it was made (a
 * stack id), its name (the path a program opened, or the file a dup names)
 * and its place in creation order. At exit the table is checked against the
 * kernel's (/proc/self/fd) and listed as valgrind lists it: standalone on the
 * log (hl_fds_print), or as FD_SUMMARY and FD records to the reporter
 * (hl_fds_send_locked, wire.h).
 *
 * Invariants: nothing is recorded unless track_fds is on (one load and a
 * branch per call otherwise); entries live in hook metadata, never the
 * program's heap; the hook's own descriptors (hl_fd_keep: the reporter
 * socket, the log, the copy of stderr) are never listed; the program's
 * descriptors are only looked at (fstat, getsockname, fcntl F_GETFD),
 * never changed.
 */
#ifndef HL_FDTRACK_H
#define HL_FDTRACK_H

#include "internal.h"

/* track_fds's values (options.h). */
enum { HL_TRACK_FDS_NO = 0, HL_TRACK_FDS_YES = 1, HL_TRACK_FDS_ALL = 2 };

HL_INLINE bool hl_fds_on(void)
{
	return hl_unlikely(hl_options.track_fds != HL_TRACK_FDS_NO);
}

/* How an entry gets its name (valgrind's record_fd_open_*). */
enum hl_fds_naming {
	HL_FDS_NAMELESS, /* a pipe, socket, eventfd...: described at exit */
	HL_FDS_GIVEN,    /* the path the program passed (open, fopen) */
	HL_FDS_RESOLVED, /* the file the descriptor names now, if it has a path (dup) */
};

/* At start, with track_fds on: every descriptor already open, as inherited. */
void hl_fds_init(void);
/* fd was made by the program's call; `path` is read for HL_FDS_GIVEN. An
 * fd already in the table (dup2 onto it) keeps its place, as valgrind's. */
void hl_fds_opened(int fd, enum hl_fds_naming naming, const char *path);
/* fd was closed by the program. */
void hl_fds_closed(int fd);
/* Every descriptor in [low, high] was closed (close_range, closefrom). */
void hl_fds_closed_range(unsigned low, unsigned high);
/* The hook keeps fd for itself (fd.c): never listed, until released. */
void hl_fds_hook_keeps(int fd);
void hl_fds_hook_releases(int fd);

/* The exit listing: the standalone report's lines on fd (valgrind's
 * "FILE DESCRIPTORS: N open (S std) at exit." and one paragraph per
 * descriptor), and the same as records to the reporter (write_lock). */
void hl_fds_print(int fd);
bool hl_fds_send_locked(void);

/* vfork() runs as fork() with the option on, as under valgrind, so a vfork
 * child lists its own descriptors (vfork.c); at start, after the options. */
void hl_vfork_init(void);

/* fork(): the table is copied with the hook's memory; its lock is not held. */
void hl_fds_fork_prepare(void);
void hl_fds_fork_parent(void);
void hl_fds_fork_child(void);

/* ---- for the unit test ---------------------------------------------------- */

/* One open descriptor as the listing describes it. */
struct hl_fds_entry {
	int fd;
	uint32_t stack_id;  /* 0: inherited, unseen or no stack */
	uint32_t flags;     /* HL_FD_INHERITED, HL_FD_UNSEEN (wire.h) */
	uint32_t kind;      /* enum hl_fd_kind (wire.h) */
	uint32_t family;    /* a socket's address family; else 0 */
	char text[HL_WIRE_MAX_PATH]; /* path, or a socket's addresses */
};
/* Calls fn for each descriptor the listing would show, newest first, after
 * the check against /proc/self/fd; returns how many are open and, in *std,
 * how many of them are 0, 1 or 2. */
unsigned hl_fds_visit(void (*fn)(const struct hl_fds_entry *e, void *arg), void *arg,
		      unsigned *std);

#endif /* HL_FDTRACK_H */
