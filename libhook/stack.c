/*
 * libhook/stack.c: stack capture with libunwind and stack interning.
 *
 * Capture: unw_backtrace (libunwind's local unwinder with its per-thread
 * trace cache: after the first walk through a function it replays cached
 * frame descriptions instead of parsing DWARF) into the caller's buffer
 * (the thread's, capbuf.c); frames inside libheapledger.so itself are dropped: the
 * leading ones (malloc, hl_allocate, hl_track_alloc, this file), so
 * frames[0] is the caller of the allocation function, and any further one
 * (an interposed dlopen between the program and libc's). On a small signal
 * alternate stack the walk runs on a stack of the hook's own (see
 * alt_backtrace).
 *
 * Interning: an open-addressing hash table of pointers to immutable
 * struct hl_stack. Invariants:
 *  - a slot goes from NULL to an entry once and never changes again;
 *  - an entry's id is in id_chunks and next_id covers it (release) before the
 *    entry is put in any table, so whoever finds an id can hl_stack_get it,
 *    and emit_conn.c, which sends ids below hl_stack_next_id() before each batch,
 *    always sends a STACK before the first event naming it;
 *  - readers probe without a lock; a miss is confirmed under intern_lock in
 *    the current table. Growing publishes a new table; old tables stay
 *    mapped (a reader may still be probing one) and cost at most the size of
 *    the current one in total.
 * All memory is hl_meta_alloc'd: never the user heap.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "lock.h"
#include "tally_hook.h"
#include "track.h"

#define CHUNK_IDS 4096u                         /* ids per id_chunks entry */
#define MAX_CHUNKS (HL_DECODE_ID_LIMIT / CHUNK_IDS)
#define HL_DECODE_ID_LIMIT (1u << 24)            /* reporter's HL_DECODE_MAX_ID */
#define FIRST_TABLE_SLOTS 256u  /* grows at half load: a short process touches 2 pages */
#define ARENA_BYTES (256u * 1024)                /* entries are bump-allocated */

/* A slot keeps its stack's hash beside the pointer, so a probe that passes
 * another stack reads only the slot array: comparing s->hash through the
 * pointer was a cache miss per probe, a third of the lookup's time in cc1.
 * The hash is stored before the pointer is published (release) and read
 * after it (acquire), and neither changes again. */
struct stack_slot {
	uint64_t hash;
	_Atomic(struct hl_stack *) stack;
};

struct stack_table {
	size_t mask;                     /* slots - 1, slots a power of two */
	struct stack_slot slots[];
};

static _Atomic(struct stack_table *) table;
static struct hl_lock intern_lock;
static size_t table_count;               /* entries in table; intern_lock */
static _Atomic(struct hl_stack **) id_chunks[MAX_CHUNKS];
static _Atomic uint32_t next_id = 1;
static char *arena_next, *arena_end;     /* bump allocator; intern_lock */
uintptr_t hl_own_lo, hl_own_hi;          /* the hook's mapped range */

/* ---- capture -------------------------------------------------------------- */

struct module_range {
	uintptr_t target, lo, hi;
};

/* dl_iterate_phdr callback: the span of the PT_LOAD segments of the module
 * that contains r->target. */
static int find_module_range(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct module_range *r = arg;
	uintptr_t lo, hi;
	hl_phdr_load_span(info, &lo, &hi);
	if (r->target < lo || r->target >= hi)
		return 0;
	r->lo = lo;
	r->hi = hi;
	return 1;
}

bool hl_stack_module_range(uintptr_t address, uintptr_t *lo, uintptr_t *hi)
{
	struct module_range r = { .target = address };
	if (!hl_walk_begin())
		return false;
	int found = dl_iterate_phdr(find_module_range, &r);
	hl_walk_end();
	if (!found)
		return false;
	*lo = r.lo;
	*hi = r.hi;
	return true;
}

static void cursor_init(void);

void hl_stack_init(void)
{
	static bool done; /* on first use, before our constructor: single-threaded */
	if (done)
		return;
	done = true;
#ifndef HL_UNIT_TEST
	/* In unit tests the hook is linked into the test program: every frame
	 * would be "ours", so nothing is skipped there. */
	hl_stack_module_range((uintptr_t)hl_stack_init, &hl_own_lo, &hl_own_hi);
#endif
	hl_unwind_mask_init((uintptr_t)unw_backtrace);
	cursor_init();
}

/* ---- capture on a signal's alternate stack --------------------------------
 *
 * A handler on an alternate stack of SIGSTKSZ (8 KiB, the usual size) has
 * what the kernel's signal frame leaves of it, a few KiB; libunwind's walk
 * takes more, and past the stack's end it writes over what lies below: the
 * program's own heap block that holds the stack (false "Invalid free" and
 * overflow errors under checks=full) or unmapped memory (a crash). There
 * the walk runs on a stack of the hook's own, one per thread that needs it
 * (hl_meta_alloc'd on first use, kept for the thread's life), from a
 * context taken where the capture was asked for. The check costs two
 * compares on a thread's ordinary stack; elsewhere (an alternate stack, a
 * coroutine's) one sigaltstack system call per walk. */
#define ALT_WALK_STACK (64u << 10)   /* the hook's stack for the walk */
#define ALT_STACK_ROOMY (64u << 10)  /* an alternate stack this big needs no switch */
#define ORDINARY_SPAN (8u << 20)     /* below a thread's stack top: its ordinary stack */

struct alt_walk {
	ucontext_t caller, walker;
	unw_context_t context; /* where the capture was asked for */
	void **raw;
	int size, n;
	char stack[ALT_WALK_STACK] __attribute__((aligned(16)));
};

extern void *__libc_stack_end; /* ld.so: the initial stack pointer */

static HL_TLS struct alt_walk *tls_alt_walk;
static HL_TLS uintptr_t tls_stack_top; /* the thread's ordinary stack's top, 0: not yet known */

static bool on_small_alt_stack(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	stack_t alt;
	if (hl_unlikely(tls_stack_top == 0))
		tls_stack_top = syscall(SYS_gettid) == getpid() ? (uintptr_t)__libc_stack_end
							       : (uintptr_t)pthread_self();
	if (hl_likely(sp < tls_stack_top && tls_stack_top - sp < ORDINARY_SPAN))
		return false;
	return sigaltstack(NULL, &alt) == 0 && (alt.ss_flags & SS_ONSTACK) &&
	       alt.ss_size < ALT_STACK_ROOMY;
}

/* Runs on the hook's stack: the walk from the saved context. */
static void alt_walk_main(void)
{
	struct alt_walk *w = tls_alt_walk;
	unw_cursor_t cursor;
	int n = 0;
	if (unw_init_local(&cursor, &w->context) == 0) {
		do {
			unw_word_t ip;
			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
				break;
			w->raw[n++] = (void *)ip;
		} while (n < w->size && unw_step(&cursor) > 0);
	}
	w->n = n;
}

/* unw_backtrace's answer, walked on the hook's stack. swapcontext keeps the
 * signal mask as it is (the handler's) and calls the kernel itself, not the
 * sigprocmask the hook defines. */
static HL_NOINLINE int alt_switch(void)
{
	/* no local lives across getcontext (it returns twice) */
	if (unw_getcontext(&tls_alt_walk->context) != 0 || getcontext(&tls_alt_walk->walker) != 0)
		return 0;
	tls_alt_walk->walker.uc_stack.ss_sp = tls_alt_walk->stack;
	tls_alt_walk->walker.uc_stack.ss_size = sizeof(tls_alt_walk->stack);
	tls_alt_walk->walker.uc_link = &tls_alt_walk->caller;
	makecontext(&tls_alt_walk->walker, alt_walk_main, 0);
	if (swapcontext(&tls_alt_walk->caller, &tls_alt_walk->walker) != 0)
		return 0;
	return tls_alt_walk->n;
}

static HL_NOINLINE int alt_backtrace(void **raw, int size)
{
	struct alt_walk *w = tls_alt_walk;
	if (w == NULL) {
		w = hl_meta_alloc(sizeof(*w));
		if (w == NULL)
			return 0;
		tls_alt_walk = w;
	}
	w->raw = raw;
	w->size = size;
	w->n = 0;
	return alt_switch();
}

/* The main thread's first walks step libunwind's cursor; later ones, and
 * other threads', call unw_backtrace. Its trace cache is 256 KiB a thread, every
 * word of it written at the first call: 64 page faults, a quarter of what
 * a 2 ms test of a suite paid for its stacks, and more to copy at each fork
 * and tear down at exit. It pays once a thread walks through the same
 * frames again and again; until then every frame is new to it, and its
 * first pass through a frame parses the unwind tables as the cursor does. */
#define CURSOR_WALKS 256u
/* The cursor's walk needs more of the caller's stack than a cached one
 * (libunwind parses the unwind tables on it): only the main thread's, with
 * this much left below its stack pointer; other threads' stacks can be 16
 * KiB (PTHREAD_STACK_MIN), and their first walks go to unw_backtrace. */
#define CURSOR_STACK_ROOM (256u << 10)
static HL_TLS uint32_t tls_walks;
static uintptr_t cursor_stack_low; /* the main thread's lowest stack address, 0: none */

static void cursor_init(void)
{
	struct rlimit lim;
	uintptr_t top = (uintptr_t)__libc_stack_end;
	if (getrlimit(RLIMIT_STACK, &lim) != 0 || top == 0)
		return;
	if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > top / 2)
		lim.rlim_cur = 8u << 20; /* the kernel's default guess for unlimited */
	if (lim.rlim_cur > 2 * CURSOR_STACK_ROOM)
		cursor_stack_low = top - lim.rlim_cur + CURSOR_STACK_ROOM;
}

/* Before a second thread exists: unw_backtrace once, here. libunwind
 * binds its calls lazily, and the first unw_backtrace of the process
 * resolves them on its caller's stack (the resolver saves the vector
 * registers there, ~3 KiB more): a thread on a 16 KiB stack 100 calls deep
 * overflowed when it was the first. This thread then walks with
 * unw_backtrace too: its cache exists now. */
void hl_stack_threads_begin(void)
{
	static _Atomic bool bound;
	void *raw[4];
	tls_walks = CURSOR_WALKS;
	if (hl_options.stack_depth == 0 || atomic_exchange(&bound, true))
		return; /* no walks (stacks=0), or bound already */
	hl_guard_enter(); /* libunwind's own allocations are not the program's */
	hl_unwind_mask_begin();
	(void)unw_backtrace(raw, 4);
	hl_unwind_mask_end();
	hl_guard_leave();
}

/* Whether this walk may step a cursor: one of the thread's first, in the
 * main thread, with room on its stack. */
static inline bool cursor_walk(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (hl_likely(tls_walks >= CURSOR_WALKS))
		return false;
	tls_walks++;
	return cursor_stack_low != 0 && sp > cursor_stack_low && sp < (uintptr_t)__libc_stack_end;
}

static HL_NOINLINE int cursor_backtrace(void **raw, int size)
{
	unw_context_t context;
	unw_cursor_t cursor;
	int n = 0;
	/* unw_init_local2, not unw_init_local: the one the memo's slot walks
	 * (stackmemo.c) do not call, so tests can count capture walks. */
	if (unw_getcontext(&context) != 0 || unw_init_local2(&cursor, &context, 0) != 0)
		return 0;
	do {
		unw_word_t ip;
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		raw[n++] = (void *)ip;
	} while (n < size && unw_step(&cursor) > 0);
	return n;
}

HL_NOINLINE unsigned hl_stack_capture(uint64_t *frames, void **raw, unsigned max, bool *truncated)
{
	if (max > HL_WIRE_MAX_FRAMES)
		max = HL_WIRE_MAX_FRAMES;
	/* One frame more than needed tells whether the stack was truncated. */
	hl_unwind_mask_begin();
	int n = hl_unlikely(on_small_alt_stack()) ? alt_backtrace(raw, (int)HL_CAPTURE_RAW(max))
		: hl_unlikely(cursor_walk()) ? cursor_backtrace(raw, (int)HL_CAPTURE_RAW(max))
		: unw_backtrace(raw, (int)HL_CAPTURE_RAW(max));
	hl_unwind_mask_end();
	int skip = 0;
	while (skip < n && skip < HL_OWN_FRAMES_MAX && hl_stack_is_own((uintptr_t)raw[skip]))
		skip++;
	/* Further frames of ours are the wrappers the hook interposes between
	 * the program and libc (dlopen, exec, thread start): the program's
	 * stack never shows them (they read as "dlopen (modules.c:249)" of
	 * libheapledger.so in python3's stacks). One range check a frame, on
	 * the unwind path only (a stack memo hit never gets here). */
	unsigned depth = 0;
	*truncated = n == (int)HL_CAPTURE_RAW(max); /* the walk was cut */
	for (int i = skip; i < n; i++) {
		uintptr_t ip = (uintptr_t)raw[i];
		if (hl_stack_is_own(ip))
			continue;
		if (depth == max) {
			*truncated = true;
			break;
		}
		frames[depth++] = ip;
	}
	return depth;
}

/* libunwind's cursor, not unw_backtrace: only it gives each frame's stack
 * pointer. A frame's return address is the word its caller's call pushed
 * just below the stack pointer the caller has once it returns, which is the
 * stack pointer libunwind gives for the caller's frame; after a signal frame
 * the interrupted pc was pushed by no call. A step costs ~900 cycles: the
 * visitor stops the walk as soon as it knows the rest. */
void hl_stack_slots(const uint64_t *frames, unsigned depth,
		    bool (*visit)(void *arg, unsigned j, uintptr_t slot), void *arg)
{
	unw_context_t context;
	unw_cursor_t cursor;
	if (depth == 0 || on_small_alt_stack() || !hl_walk_begin())
		return;
	hl_unwind_mask_begin();
	if (unw_getcontext(&context) == 0 && unw_init_local(&cursor, &context) == 0) {
		bool after_signal = false;
		for (unsigned j = 0; j < depth;) {
			bool signal_frame = unw_is_signal_frame(&cursor) > 0;
			if (unw_step(&cursor) <= 0)
				break;
			after_signal = after_signal || signal_frame;
			unw_word_t ip = 0, sp = 0;
			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 ||
			    unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0)
				break;
			if (hl_stack_is_own(ip))
				continue;
			if (ip != frames[j] ||
			    !visit(arg, j, after_signal ? 0 : (uintptr_t)sp - sizeof(uintptr_t)))
				break;
			after_signal = false;
			j++;
		}
	}
	hl_unwind_mask_end();
	hl_walk_end();
}

/* ---- interning ----------------------------------------------------------- */

static uint64_t hash_frames(const uint64_t *frames, unsigned depth, bool truncated)
{
	uint64_t h = 0x9e3779b97f4a7c15u ^ (depth * 2u + truncated);
	for (unsigned i = 0; i < depth; i++) {
		h ^= frames[i];
		h *= 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

static bool stack_equals(const struct hl_stack *s, uint64_t hash, const uint64_t *frames,
			 unsigned depth, bool truncated)
{
	return s->hash == hash && s->depth == depth && s->truncated == truncated &&
	       memcmp(s->frames, frames, depth * sizeof(frames[0])) == 0;
}

/* Probes `t` for the frames: the entry, or NULL at the first empty slot. */
static struct hl_stack *table_find(struct stack_table *t, uint64_t hash,
				   const uint64_t *frames, unsigned depth, bool truncated)
{
	for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
		struct hl_stack *s = atomic_load_explicit(&t->slots[i].stack, memory_order_acquire);
		if (s == NULL ||
		    (t->slots[i].hash == hash && stack_equals(s, hash, frames, depth, truncated)))
			return s;
	}
}

static void table_put(struct stack_table *t, struct hl_stack *s)
{
	size_t i = s->hash & t->mask;
	while (atomic_load_explicit(&t->slots[i].stack, memory_order_relaxed))
		i = (i + 1) & t->mask;
	t->slots[i].hash = s->hash;
	atomic_store_explicit(&t->slots[i].stack, s, memory_order_release);
}

static struct stack_table *table_new(size_t slots)
{
	struct stack_table *t = hl_meta_alloc(sizeof(*t) + slots * sizeof(t->slots[0]));
	if (t)
		t->mask = slots - 1;
	return t;
}

/* Keeps the load at most one half; false if there is no room. */
static bool table_reserve_locked(void)
{
	hl_assert_held(&intern_lock);
	struct stack_table *t = atomic_load_explicit(&table, memory_order_relaxed);
	if (t && (table_count + 1) * 2 <= t->mask + 1)
		return true;
	struct stack_table *bigger = table_new(t ? (t->mask + 1) * 2 : FIRST_TABLE_SLOTS);
	if (bigger == NULL)
		return false;
	for (size_t i = 0; t && i <= t->mask; i++) {
		struct hl_stack *s = atomic_load_explicit(&t->slots[i].stack, memory_order_relaxed);
		if (s)
			table_put(bigger, s);
	}
	atomic_store_explicit(&table, bigger, memory_order_release);
	return true;
}

static struct hl_stack *entry_new_locked(size_t bytes)
{
	hl_assert_held(&intern_lock);
	bytes = (bytes + 15) & ~(size_t)15;
	if ((size_t)(arena_end - arena_next) < bytes) {
		arena_next = hl_meta_alloc(ARENA_BYTES);
		if (arena_next == NULL) {
			arena_end = NULL;
			return NULL;
		}
		arena_end = arena_next + ARENA_BYTES;
	}
	struct hl_stack *s = (struct hl_stack *)arena_next;
	arena_next += bytes;
	return s;
}

/* Makes id `id` resolvable by hl_stack_get; false when out of ids/memory. */
static bool id_slot_set_locked(uint32_t id, struct hl_stack *s)
{
	hl_assert_held(&intern_lock);
	uint32_t chunk = id / CHUNK_IDS;
	if (chunk >= MAX_CHUNKS)
		return false;
	struct hl_stack **ids = atomic_load_explicit(&id_chunks[chunk], memory_order_relaxed);
	if (ids == NULL) {
		ids = hl_meta_alloc(CHUNK_IDS * sizeof(ids[0]));
		if (ids == NULL)
			return false;
		atomic_store_explicit(&id_chunks[chunk], ids, memory_order_release);
	}
	ids[id % CHUNK_IDS] = s;
	return true;
}

/* Captures that could not be kept (no memory, no id left): their events
 * carry stack 0, and DROPPED says how many (emit_conn.c). */
static _Atomic uint64_t lost;
#ifdef HL_UNIT_TEST
bool hl_stack_test_refuse;
#endif

static HL_NOINLINE uint32_t intern_slow(const uint64_t *frames, unsigned depth, bool truncated,
					uint64_t hash)
{
	uint32_t id = 0;
	hl_lock(&intern_lock);
	struct stack_table *t = atomic_load_explicit(&table, memory_order_relaxed);
	struct hl_stack *s = t ? table_find(t, hash, frames, depth, truncated) : NULL;
	if (s) {
		id = s->id;
		goto out_unlock;
	}
	if (hl_stack_refused() || !table_reserve_locked())
		goto out_unlock;
	s = entry_new_locked(sizeof(*s) + depth * (sizeof(frames[0]) + sizeof(uint16_t)));
	uint32_t new_id = atomic_load_explicit(&next_id, memory_order_relaxed);
	if (s == NULL || !id_slot_set_locked(new_id, s))
		goto out_unlock;
	s->hash = hash;
	s->id = new_id;
	s->depth = (uint16_t)depth;
	s->truncated = truncated;
	atomic_store_explicit(&s->memo_steps, HL_MEMO_STEPS_NONE, memory_order_relaxed);
	memcpy(s->frames, frames, depth * sizeof(frames[0]));
	atomic_store_explicit(&next_id, new_id + 1, memory_order_release);
	table_put(atomic_load_explicit(&table, memory_order_relaxed), s);
	table_count++;
	id = new_id;
	hl_tally_log_interned(s);
out_unlock:
	hl_unlock(&intern_lock);
	if (id == 0)
		atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
	return id;
}

uint32_t hl_stack_intern(const uint64_t *frames, unsigned depth, bool truncated)
{
	uint64_t hash = hash_frames(frames, depth, truncated);
	struct stack_table *t = atomic_load_explicit(&table, memory_order_acquire);
	struct hl_stack *s = t ? table_find(t, hash, frames, depth, truncated) : NULL;
	if (hl_likely(s != NULL))
		return s->id;
	return intern_slow(frames, depth, truncated, hash);
}

const struct hl_stack *hl_stack_get(uint32_t id)
{
	if (id == 0 || id >= atomic_load_explicit(&next_id, memory_order_acquire))
		return NULL;
	struct hl_stack **ids = atomic_load_explicit(&id_chunks[id / CHUNK_IDS],
						     memory_order_acquire);
	return ids ? ids[id % CHUNK_IDS] : NULL;
}

void hl_stack_note_lost(void)
{
	atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
}

uint64_t hl_stack_lost(void)
{
	return atomic_load_explicit(&lost, memory_order_relaxed);
}

uint32_t hl_stack_next_id(void)
{
	return atomic_load_explicit(&next_id, memory_order_acquire);
}

/* The child keeps every stack: its live blocks name them, and emit_live.c sends
 * them again on the child's own connection. */
void hl_stack_fork_prepare(void)
{
	hl_lock(&intern_lock);
}

void hl_stack_fork_parent(void)
{
	hl_unlock(&intern_lock);
}

void hl_stack_fork_child(void)
{
	hl_lock_reset(&intern_lock);
}
