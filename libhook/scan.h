/*
 * libhook/scan.h: the leak scan's internal interface (threads.c, roots.c,
 * scan.c, leakcheck.c, lossrec.c). The design: doc/design.md, "The leak scan".
 *
 * A scan runs with every allocator lock held and every other thread of the
 * process stopped, from hl_scan_begin to hl_scan_end. In between, nothing
 * may take a lock another thread could hold (no hl_meta_alloc, no dl*
 * function, no malloc): memory comes from hl_scan_map (os.c mappings the
 * scan remembers, so they are never taken for roots).
 */
#ifndef HL_SCAN_H
#define HL_SCAN_H

#include <sys/types.h>

#include "heap.h"

/* General-purpose registers saved per stopped thread (x86-64: all 23 of
 * the signal context's gregs; others: what the context offers). */
#define HL_SCAN_REGS 34

/* One thread of the process, found in /proc/self/task. */
struct hl_scan_thread {
	pid_t tid;
	_Atomic int state;         /* HL_THREAD_* */
	uintptr_t sp;              /* stack pointer where it was stopped */
	uintptr_t regs[HL_SCAN_REGS];
};
enum {
	HL_THREAD_SIGNALLED = 1, /* the stop signal was sent */
	HL_THREAD_STOPPED = 2,   /* in the handler, registers saved, waiting */
	HL_THREAD_LEFT = 3,      /* released and out of the handler */
	HL_THREAD_GONE = 4,      /* exited before it could be signalled */
};

/* The stopped world: every thread but the scanning one. */
struct hl_world {
	_Atomic int release;             /* futex word: 1 lets the threads go */
	_Atomic int stopped;             /* threads in HL_THREAD_STOPPED or later */
	unsigned count, capacity;
	unsigned unstopped;              /* signalled but did not stop in time */
	uint32_t unstopped_tids[HL_WIRE_MAX_UNSTOPPED_TIDS]; /* the first of them */
	struct hl_scan_thread threads[]; /* `capacity` slots */
};

/* One line of /proc/self/maps. */
struct hl_map {
	uintptr_t start, end;
	uint8_t prot;     /* PROT_READ | PROT_WRITE | PROT_EXEC */
	bool shared;
	bool file;        /* backed by a file (a path, not [anon] or [stack]) */
	bool device;      /* /dev/... other than /dev/zero: never read */
};

/* Block states during marking (valgrind's Reachedness), then classes. */
enum {
	HL_MARK_UNREACHED = 0,
	HL_MARK_INDIRECT = 1,
	HL_MARK_POSSIBLE = 2,
	HL_MARK_REACHABLE = 3,
	HL_MARK_STATE = 3,      /* state bits */
	HL_MARK_PENDING = 4,    /* on the mark stack */
};

struct hl_scan_segment;
struct hl_scan_item;

/* A leak scan in progress or done. */
struct hl_scan {
	/* the live program blocks, by address */
	struct hl_range **blocks;
	size_t nblocks;
	uint8_t *mark;           /* HL_MARK_* per block */
	uint64_t *indirect;      /* clique leader: bytes it holds; else clique */
	struct hl_scan_item *stack; /* mark stack */
	size_t top;
	uintptr_t lo, hi;        /* lowest block start, highest block end */
	struct hl_scan_segment *segments; /* hash by segment address */
	size_t segment_mask;
	size_t *large;           /* indexes of large blocks, by address */
	size_t nlarge;
	/* roots */
	struct hl_map *maps;
	size_t nmaps;
	struct hl_world *world;
	uintptr_t own_sp;        /* the scanning thread's stack pointer */
	uintptr_t own_regs[HL_SCAN_REGS]; /* its callee-saved registers (8), or all of an
				     * interrupted context's (a fatal signal) */
	uintptr_t inherited_sp;  /* a clone() child's copy of its parent's stack is read from
				  * here up (hl_exit_frame_inherited), 0 if none */
	bool at_exit;            /* read the exiting thread from hl_exit_frame */
	bool from_caller;        /* own_sp/own_regs given: the API caller's */
	uintptr_t hook_lo[4], hook_hi[4]; /* libheapledger.so's writable data */
	unsigned nhook;
	/* the scan's own mappings (never roots) */
	struct { void *p; size_t bytes; } own[24];
	unsigned nown;
	char *chunk;             /* the mapping smaller buffers are cut from (scan.c) */
	size_t chunk_used;
	unsigned arenas_locked;
	uint64_t scanned_bytes;  /* root and block bytes read */
	unsigned unstopped;      /* threads that did not stop: conservative */
	uint32_t unstopped_tids[HL_WIRE_MAX_UNSTOPPED_TIDS]; /* which (the first of them) */
};

/* The scanning thread's callee-saved registers (8 slots). */
void hl_scan_save_registers(uintptr_t *regs);
/* exitframe.c: finds, from inside exit() (or the function named by
 * hl_exit_frame_from: _exit), the stack pointer and callee-saved registers
 * of its caller (call at the start of the exit path, no lock held);
 * hl_exit_frame gives them (HL_SCAN_REGS slots), false if unknown.
 * hl_exit_frame_set gives them directly (a fatal signal's context). */
void hl_exit_frame_from(const void *fn);
void hl_exit_frame_set(uintptr_t sp, const uintptr_t *regs, unsigned nregs);
/* True once a function named itself with hl_exit_frame_from (abort():
 * its SIGABRT's report then walks up to it instead of using the context). */
bool hl_exit_frame_named(void);
void hl_exit_frame_find(void);
void hl_exit_frame_init(void); /* at start: looks up libc's exit() */
bool hl_exit_frame(uintptr_t *sp, uintptr_t *regs);
/* A clone() child runs on a stack of its own, and the copy of its parent's
 * stack below the parent's stack pointer at clone() is dead: stale words
 * there may name blocks the child allocated later at reused addresses. */
void hl_exit_frame_inherited(uintptr_t sp);
uintptr_t hl_exit_frame_inherited_sp(void);

/* ---- threads.c ------------------------------------------------------------ */

/* Stops every other thread of the process (signal-based, see threads.c);
 * NULL only if no memory. Call with the allocator locked. */
struct hl_world *hl_world_stop(struct hl_scan *s);
/* Lets them go and waits (bounded) until each left the handler; false if
 * one may still enter it (the world's memory must then stay mapped). */
bool hl_world_resume(struct hl_world *w);
/* The signal that stops threads: a thread of the hook that blocks the
 * program's signals must leave this one open. */
int hl_world_stop_signal(void);
/* The number of threads in /proc/self/task that run user code (the
 * caller one of them), 0 if unknown. */
unsigned hl_world_thread_count(void);

/* ---- roots.c --------------------------------------------------------------- */

/* Reads /proc/self/maps into s->maps (raw reads into scan memory). */
bool hl_roots_read_maps(struct hl_scan *s);
/* Finds libheapledger.so's writable segments (dl_iterate_phdr: call
 * before stopping the world). */
void hl_roots_find_hook(struct hl_scan *s);
/* Scans every root: writable private mappings that are not the hook's,
 * each stack from its thread's stack pointer, registers. */
void hl_roots_scan(struct hl_scan *s);
/* The map containing address, or NULL. */
const struct hl_map *hl_roots_map_of(const struct hl_scan *s, uintptr_t address);

/* ---- scan.c ---------------------------------------------------------------- */

/* Anonymous memory for the scan, remembered so it is never a root. */
void *hl_scan_map(struct hl_scan *s, size_t bytes);
/* Locks the allocator, stops the world, collects the blocks; false if the
 * scan cannot run (no memory), with nothing held. */
bool hl_scan_begin(struct hl_scan *s);
/* Marks from the roots and classifies every block: after it, hl_scan_class
 * gives each block's enum hl_leak_class. */
void hl_scan_classify(struct hl_scan *s);
/* A range [start, end) read as a root (is_prior_definite true). */
void hl_scan_root_range(struct hl_scan *s, uintptr_t start, uintptr_t end);
/* A single word as a root (a register), and a thread's stack: a pointer to
 * a block's header counts as one to its start there (malloc in flight). */
void hl_scan_root_word(struct hl_scan *s, uintptr_t word);
void hl_scan_root_stack(struct hl_scan *s, uintptr_t start, uintptr_t end);
/* Resumes the world, unlocks and unmaps. */
void hl_scan_end(struct hl_scan *s);

static inline unsigned hl_scan_class(const struct hl_scan *s, size_t i)
{
	switch (s->mark[i] & HL_MARK_STATE) {
	case HL_MARK_UNREACHED: return HL_CLASS_DEFINITE;
	case HL_MARK_INDIRECT: return HL_CLASS_INDIRECT;
	case HL_MARK_POSSIBLE: return HL_CLASS_POSSIBLE;
	default: return HL_CLASS_REACHABLE;
	}
}

/* Bytes a definitely lost block (a clique leader) holds indirectly. */
static inline uint64_t hl_scan_indirect_bytes(const struct hl_scan *s, size_t i)
{
	return (s->mark[i] & HL_MARK_STATE) == HL_MARK_UNREACHED ? s->indirect[i] : 0;
}

#endif /* HL_SCAN_H */
