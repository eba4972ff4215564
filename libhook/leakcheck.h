/*
 * libhook/leakcheck.h: running the leak scan (leakcheck.c) for its users:
 * the exit path (init.c, track.c), the event stream (emit_*.c) and the
 * public heapledger_check_leaks().
 */
#ifndef HL_LEAKCHECK_H
#define HL_LEAKCHECK_H

#include "internal.h"

struct hl_scan;
/* Called with the world stopped and the scan's classes ready: no
 * allocation, no lock, no dl* call. */
typedef void (*hl_leakcheck_fn)(struct hl_scan *s, void *arg);

/* Where the calling thread's stack is read from: the frame and callee-saved
 * registers of the public entry point, so the hook's own frames (laid over
 * the program's dead ones, whose stale pointers they may still hold) are
 * skipped. sp 0: the scan's own frame. */
struct hl_scan_origin {
	uintptr_t sp;
	uintptr_t regs[8];
};

/* The threads that did not stop for a scan: how many, and the first
 * HL_WIRE_MAX_UNSTOPPED_TIDS of them by kernel thread id. */
struct hl_unstopped {
	unsigned count;
	uint32_t tids[HL_WIRE_MAX_UNSTOPPED_TIDS];
};
static inline unsigned hl_unstopped_named(const struct hl_unstopped *u)
{
	return u->count < HL_WIRE_MAX_UNSTOPPED_TIDS ? u->count : HL_WIRE_MAX_UNSTOPPED_TIDS;
}

/* Scans and hands the result to consume; false if the scan could not run.
 * *unstopped: the threads that did not stop for it. Caller holds
 * hl_leakcheck_lock and no allocator lock. */
bool hl_leakcheck_run(const struct hl_scan_origin *origin, hl_leakcheck_fn consume, void *arg,
		      struct hl_unstopped *unstopped);
/* One scan at a time: taken before emit_conn.c's write lock. */
void hl_leakcheck_lock(void);
void hl_leakcheck_unlock(void);
/* True if a process ending so (enum hl_exit_how) gets the exit scan. */
static inline bool hl_leakcheck_scans_at(unsigned how)
{
	return hl_options.scan &&
	       (how == HL_EXIT_NORMAL || how == HL_EXIT_UNDERSCORE || how == HL_EXIT_SIGNAL);
}
/* Before the exit scan (no lock held): where the exiting thread's stack
 * starts, then glibc's and libstdc++'s freeres (freeres=1). */
void hl_leakcheck_exit_prepare(unsigned how);
/* Standalone: scans (normal exit) or walks, then prints the report. */
void hl_leakcheck_print_exit(int fd, unsigned how);
/* check_signal=: installs the handler and its helper thread. */
void hl_leakcheck_init(void);
void hl_leakcheck_fork_child(void);

/* emit_live.c: an on-demand check's LIVE set and CHECK record to the reporter;
 * false if not connected or the scan could not run. */
bool hl_emit_check(const struct hl_scan_origin *origin, uint32_t seq, uint32_t flags);

#endif /* HL_LEAKCHECK_H */
