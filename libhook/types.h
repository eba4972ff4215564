/*
 * libhook/types.h: the allocator's data structures and their invariants.
 *
 * Memory layout
 * -------------
 * Small and medium blocks live in *segments*: HL_SEGMENT_SIZE bytes mapped at
 * an HL_SEGMENT_SIZE-aligned address, owned by one arena. A segment starts
 * with struct hl_segment and its block-start map (block.h: one bit per
 * 16-byte granule, set where a range's data starts), then is cut into
 * *ranges* back to back, and ends with a sentinel range header (size 0,
 * allocated) so the right neighbour of any range is found without a bounds
 * check:
 *
 *   | hl_segment | block-start map | range | range | ... | range | sentinel |
 *                                  ^ HL_RANGE_MAPPING_START
 *
 * Every range starts with a 16-byte struct hl_range; the user block follows
 * it, so user pointers are 16-byte aligned. `prev_size` is a boundary tag:
 * the left neighbour starts at (char *)r - r->prev_size, which makes
 * coalescing O(1) in both directions. Free ranges of an arena sit in TLSF
 * size classes (first level: power of two, second level: 8 subdivisions) with
 * a two-level bitmap, so finding a fit is a couple of bit scans.
 *
 * Blocks larger than HL_LARGE_THRESHOLD get their own mapping, with a
 * struct hl_large prefix before the range header; they grow and shrink with
 * mremap.
 *
 * Each thread has a cache of ranges per size class (struct hl_thread_cache).
 * A cached range still has HL_RANGE_ALLOCATED set (its arena treats it as in
 * use) plus HL_RANGE_CACHED; heap walks skip it.
 *
 * A segment registry (one byte per HL_SEGMENT_SIZE of address space) tells
 * whether an address belongs to the allocator at all; the segment's
 * block-start map then tells whether it is a block start, so free() of a
 * foreign or interior pointer is reported instead of corrupting memory.
 *
 * Concurrency: the rules of the whole hook, in one place
 * -------------------------------------------------------
 * Locks are struct hl_lock (lock.h: a futex mutex that never allocates). A
 * thread holding one may take only locks to its right:
 *
 *   loader lock (dl_iterate_phdr, dladdr) -> modules_lock -> meta_lock
 *   write_lock (emit_conn.c) -> modules_lock -> arena locks (LIVE walk, one at a
 *       time) -> large_lock -> meta_lock
 *   intern_lock (stack.c) -> meta_lock
 *   orphan_lock (alloc.c) -> arena lock -> meta_lock
 *   caches_lock (cache.c) -> meta_lock
 *   caches_lock -> a thread's quarantine cache lock (guard.c, one at a
 *       time except in fork's prepare) -> quarantine_lock -> meta_lock
 *   arena lock -> meta_lock; large_lock -> meta_lock
 * Two arena locks are never held together except by fork's prepare, which
 * takes them all in index order. No lock is held across unw_backtrace or a
 * dl* call (they may take the loader lock and call malloc).
 * What each guards: an arena's lock, every range header, bin and segment of
 * that arena (types below); large_lock, the live set and mapping cache of
 * large blocks; meta_lock, the hook's private memory; caches_lock, the list
 * of thread caches; orphan_lock, the shared cache of threads without one;
 * write_lock, the socket, the list of emit buffers and what they sent, and
 * which slots of the shared event-buffer area are taken (shared.c);
 * modules_lock, the module table; intern_lock, the growth of the stack table;
 * a thread cache's quarantine.lock, its batch of freed blocks (taken by the
 * owner on each checks=full free, by sweeps and fork's prepare: almost never
 * contended); quarantine_lock, the global quarantine FIFO (guard.c), taken
 * once per batch, not once per free.
 *
 * Without a lock:
 *  - a range's flags: the thread whose cache holds it flips HL_RANGE_CACHED
 *    while a lock holder may read the byte (block.h, hl_range_flags: relaxed
 *    atomic load and store, the owner is the only writer);
 *  - the remote-free stack of an arena (hl_arena.remote_head): pushed with
 *    compare-and-swap by any thread, taken whole with an exchange by the
 *    arena's threads (cache.c);
 *  - the segment registry and the block-start map (block.h): written under an
 *    arena lock, read relaxed;
 *  - the stack table (stack.c): lookups are lock-free, published ids are
 *    immutable (acquire on next_id); interning a new stack takes intern_lock;
 *  - emit buffers (emit_events.c): the owner thread appends and publishes `used`
 *    with release; a sender under write_lock reads [sent, used) with acquire.
 *    They live in a memfd the reporter maps (shared.c); it reads them only
 *    once the stream has ended, and checks every value it reads;
 *  - the connection state (emit_conn.c hl_emit_state_word): relaxed loads on the event
 *    path, changed under write_lock; on a wipe-on-fork page, so a raw clone
 *    child reads EMIT_OFF and leaves the parent's shared buffers alone;
 *  - counters (stats.c, emit_conn.c's dropped count) are relaxed atomics: sums, not
 *    orderings. A thread's own counters and marks (hl_thread_cache.stats,
 *    alloc_mark, published_bytes; heap.h hl_counter_add) have one writer,
 *    their thread (plus, once, the thread that makes the program
 *    multithreaded), and are read by others under caches_lock: relaxed
 *    loads and stores, no read-modify-write, so the fast path keeps its
 *    plain instructions;
 *  - hl_multithreaded and hl_single_thread_peak (stats.c): written under
 *    caches_lock or by the one running thread, read relaxed anywhere;
 *  - heap walks (walk.c) read live blocks' headers under the arena lock while
 *    their owners may be allocating from their caches: a block taken from a
 *    cache during a walk may be seen either way, and its stack and size may be
 *    the old ones. Walks at exit accept that; the leak scan stops threads.
 *
 * Fork: the atfork prepare handler (init.c hl_fork_prepare) takes, in order,
 * write_lock, modules_lock, intern_lock (track.c), orphan_lock, caches_lock,
 * every arena lock, large_lock and meta_lock; the parent releases them in
 * reverse; the child, the only thread left, resets them all and rebuilds its
 * per-process state (emit_conn.c first maps a memfd of its own over the shared
 * event buffers, whose pages it would otherwise share with the parent, then
 * drops other threads' buffers and reconnects).
 * clone() without CLONE_VM runs the same handlers (exitpath.c). A vfork child
 * shares this memory and must take no lock and change no state (process.c).
 */
#ifndef HL_TYPES_H
#define HL_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "heapledger.h"
#include "lock.h"

#define HL_ALIGN 16u
#define HL_SEGMENT_SHIFT 22
#define HL_SEGMENT_SIZE ((size_t)1 << HL_SEGMENT_SHIFT) /* 4 MiB */
/* Above this a block gets its own mapping. 1 MiB keeps segments from being
 * pinned by a few big blocks while the large-mapping cache makes reuse of
 * 1..8 MiB blocks cheap. */
#define HL_LARGE_THRESHOLD ((size_t)1 << 20)
/* Smallest range: header plus the two free-list links of a free range. */
#define HL_RANGE_MIN 32u

/* struct hl_range.flags */
#define HL_RANGE_ALLOCATED 0x01u     /* in use by the program or a thread cache */
#define HL_RANGE_MAPPING_START 0x02u /* first range of its segment: no left neighbour */
#define HL_RANGE_LARGE 0x04u         /* own mapping; struct hl_large precedes it */
#define HL_RANGE_SENTINEL 0x08u      /* end-of-segment marker, never handed out */
#define HL_RANGE_CACHED 0x10u        /* sits in a thread cache, not the program's */
#define HL_RANGE_QUARANTINED 0x20u   /* freed, held back from reuse (checks=full, guard.c) */
#define HL_RANGE_CANARY 0x40u        /* guard bytes follow the block (checks=full, guard.c) */
#define HL_RANGE_CXX 0x80u           /* allocated by a new or new[]: free() does not take it (the
				      * family test on free's fast path is the live test) */

struct hl_range {
	uint32_t prev_size;  /* bytes of the left neighbour; 0 if MAPPING_START */
	uint32_t size;       /* bytes of this range, header included; 0 if LARGE */
	uint32_t stack_kind; /* stack id << 4 | enum hl_alloc_kind (wire.h) */
	uint16_t slack;      /* usable bytes minus asked-for bytes (not LARGE) */
	uint8_t flags;       /* HL_RANGE_* */
	uint8_t check;       /* hl_range_check_of(): catches foreign or damaged headers */
};
#define HL_STACK_ID_MAX ((1u << 28) - 1)
_Static_assert(sizeof(struct hl_range) == 16, "range header is 16 bytes");

/* Links of a free range, stored in its (unused) user area. */
struct hl_free_links {
	struct hl_range *next;
	struct hl_range *prev;
};

/* Prefix of a large block's mapping, directly before its range header. The
 * set of live large blocks is a hash table (large.c), not a list, so free()
 * can verify that a pointer really is one. */
struct hl_large {
	uint64_t map_bytes;  /* length of the whole mapping */
	uint32_t lead_bytes; /* mapping start to this prefix (alignment gap) */
	uint32_t slack;      /* usable bytes minus asked-for bytes */
};
_Static_assert(sizeof(struct hl_large) == 16, "large prefix is 16 bytes");

/* TLSF geometry: sizes below HL_TLSF_SMALL map linearly in 16-byte steps to
 * class indexes; above, each power of two splits in HL_TLSF_SUB classes. */
#define HL_TLSF_SUB_SHIFT 3
#define HL_TLSF_SUB (1u << HL_TLSF_SUB_SHIFT)
#define HL_TLSF_SMALL 1024u /* sizes < this: exact 16-byte classes */
#define HL_TLSF_FIRST_SHIFT 10 /* log2(HL_TLSF_SMALL) */
#define HL_TLSF_FL_COUNT (HL_SEGMENT_SHIFT - HL_TLSF_FIRST_SHIFT + 1)
#define HL_TLSF_LINEAR (HL_TLSF_SMALL / HL_ALIGN) /* 64 */
#define HL_TLSF_CLASSES (HL_TLSF_LINEAR + HL_TLSF_FL_COUNT * HL_TLSF_SUB)
#define HL_TLSF_WORDS ((HL_TLSF_CLASSES + 63) / 64)

struct hl_segment;
struct hl_remote_packet;

struct hl_arena {
	struct hl_lock lock;
	uint64_t bitmap[HL_TLSF_WORDS];          /* bit c set: free_heads[c] non-empty */
	struct hl_range *free_heads[HL_TLSF_CLASSES];
	struct hl_segment *segments;             /* every segment of this arena */
	struct hl_segment *spares;               /* wholly free segments kept for reuse, newest first */
	bool last_fresh;                         /* last hl_arena_alloc_locked result is zero */
	bool remote_frees;                       /* a thread of another arena gave blocks to this one */
	_Atomic uint32_t threads;                /* threads using this arena now */
	uint32_t segment_count;                  /* on `segments`: mapped now */
	uint32_t segment_peak;                   /* most segment_count has been (malloc_info) */
	/* Blocks of this arena that threads of other arenas freed, pushed in
	 * chains without the lock; this arena's threads take them back into
	 * their caches at refill (cache.c). Own cache line: the pushers do not
	 * touch the lock's. */
	_Alignas(64) _Atomic(struct hl_remote_packet *) remote_head;
	_Atomic int64_t remote_bytes;            /* range bytes on remote_head (transiently off) */
} __attribute__((aligned(64)));

struct hl_segment {
	uint64_t magic;             /* HL_SEGMENT_MAGIC ^ address */
	struct hl_arena *arena;     /* owner: its lock guards every range here */
	struct hl_segment *next;    /* arena's segment list */
	struct hl_segment *prev;
	char *untouched;            /* memory from here on was never handed out: it is zero */
	struct hl_segment *spare_next; /* arena's spare list, while wholly free */
	uint64_t spare_since_ms;    /* when it became spare (coarse clock + 1); 0: in use */
	uint32_t spare_trimmed;     /* spare whose pages past the first MiB went back */
	uint32_t reserved;          /* pad to 64 bytes: first range stays aligned */
};
_Static_assert(sizeof(struct hl_segment) == 64, "segment header is 64 bytes");
#define HL_SEGMENT_MAGIC 0x68656170ULL /* "heap" */

/* Thread cache: exact classes for small ranges, TLSF classes above. Sized to
 * cover ranges up to HL_CACHE_MAX bytes. */
#define HL_CACHE_MAX 32768u
#define HL_CACHE_CLASSES (HL_TLSF_LINEAR + (15 - HL_TLSF_FIRST_SHIFT + 1) * HL_TLSF_SUB)

struct hl_cache_bin {
	struct hl_range *head; /* singly linked through hl_free_links.next */
	int32_t room;          /* limit minus ranges held: below 0, the bin must flush
				* (a countdown is one instruction on free's fast path,
				* a count compared with the limit three) */
	uint32_t limit;
};
/* A bin is as big as a class step, so the bin of an exact class is at byte
 * offset `range size` into bins[] (fastpath.h): no shift to find it. */
_Static_assert(sizeof(struct hl_cache_bin) == HL_ALIGN, "one bin per 16-byte class step");

/* Per-thread counters, folded into the global ones by stats.c. Blocks and
 * bytes in use are differences (allocs - frees, bytes_allocated -
 * bytes_freed): two counters fewer to bump on every call. A thread that
 * frees blocks another thread allocated has negative in-use figures; only
 * sums over all threads mean anything. */
struct hl_thread_stats {
	uint64_t allocs;
	uint64_t frees;
	uint64_t bytes_allocated;
	uint64_t bytes_freed;
};

/* Blocks of one arena freed by a thread of another, on their way home. The
 * freeing thread fills a packet (its own cache lines); the arena's threads
 * read the block pointers and classes from it side by side, so taking a
 * packet back is a run of independent accesses, not a walk down a list of
 * blocks that sit in another CPU's cache, one miss after the other (that
 * walk took a third of a 2-thread ring's time). 512 bytes: a meta class. */
#define HL_REMOTE_PACKET_BYTES 512u
#define HL_REMOTE_PACKET_BLOCKS ((HL_REMOTE_PACKET_BYTES - 16u) / (sizeof(void *) + 1u))
struct hl_remote_packet {
	struct hl_remote_packet *next; /* arena's remote stack, or a thread's spares */
	uint32_t count;
	uint32_t bytes;                /* range bytes of the blocks */
	struct hl_range *blocks[HL_REMOTE_PACKET_BLOCKS];
	uint8_t classes[HL_REMOTE_PACKET_BLOCKS]; /* cache class of each block */
};
_Static_assert(sizeof(struct hl_remote_packet) <= HL_REMOTE_PACKET_BYTES, "packet fits its class");

#define HL_MAX_ARENAS 64

/* checks=full: a thread's freed blocks on their way into the global
 * quarantine FIFO (guard.c), moved there in one batch when it holds
 * HL_QCACHE_BLOCKS blocks or HL_QCACHE_BYTES range bytes. */
#define HL_QCACHE_BLOCKS 64u
#define HL_QCACHE_BYTES (64u << 10)
struct hl_quarantine_cache {
	struct hl_lock lock;        /* the owner, sweeps and fork (guard.c) */
	uint32_t count;
	uint64_t bytes;             /* range bytes of the blocks */
	struct hl_range *blocks[HL_QCACHE_BLOCKS]; /* oldest first */
};

/* reuse_delay: a thread's most recent frees, held back from reuse (delay.c).
 * A ring of ranges (NULL: an empty slot), the oldest at ring[pos], the next
 * free's slot; ring is NULL when the delay is off. A thread has two: one
 * for ranges below HL_TLSF_SMALL bytes, one (HL_DELAY_BIG_SHARE times
 * fewer slots) for those up to HL_DELAY_BLOCK_MAX bytes. */
#define HL_DELAY_BLOCK_MAX 8192u
#define HL_DELAY_BIG_SHARE 8u
struct hl_reuse_delay {
	struct hl_range **ring;
	uint32_t mask;              /* slots - 1, slots a power of two */
	uint32_t pos;
};

struct hl_thread_cache {
	struct hl_arena *arena;     /* where this thread refills from */
	struct hl_thread_cache *next, *prev; /* all live caches, for fork/stats */
	struct hl_thread_stats stats;
	int64_t published_bytes;    /* in-use bytes as last added to the global total */
	int64_t alloc_mark;         /* in-use bytes past which an allocation does bookkeeping
				     * (stats.c): the peak while single-threaded, else
				     * published_bytes + HL_PUBLISH_STEP */
	uint64_t free_mark;         /* freed bytes past which a free tests whether to publish
				     * (heap.h hl_stats_free_publish_due); UINT64_MAX while
				     * single-threaded */
	uint32_t initialised;
	struct hl_cache_bin bins[HL_CACHE_CLASSES];
	struct hl_remote_packet *remote[HL_MAX_ARENAS]; /* filling, by arena index */
	struct hl_remote_packet *inbox;                /* taken from the arena, not yet filed */
	struct hl_remote_packet *spare_packets;        /* emptied, for reuse */
	uint32_t spare_packet_count;
	bool borrows;               /* has filed packets: an empty exact bin borrows (cache.c) */
	struct hl_quarantine_cache quarantine; /* checks=full only */
	struct hl_reuse_delay delay[3]; /* default mode: frees not yet reusable, by
					 * size: below HL_TLSF_SMALL, up to
					 * HL_DELAY_BLOCK_MAX; [2] is never used */
	uint64_t guard_countdown;   /* guard_sample=: allocations until the next guarded one
				     * (guardpage.c; UINT64_MAX when off: never reaches 0) */
};

#endif /* HL_TYPES_H */
