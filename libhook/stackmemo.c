/*
 * libhook/stackmemo.c: a per-thread memo of recent stacks, so that an
 * allocation made again from the same place costs a few loads instead of a
 * libunwind walk (7-8 ns a frame here) plus a hash lookup to intern it.
 *
 * A stack is a chain of return addresses, each read by the unwinder from a
 * slot on the thread's stack. The memo remembers, for a stack it captured,
 * where each of those slots was; it is keyed by the first return address
 * (into the caller of malloc) and the address of its slot, which the hook
 * finds in a few loads by walking its own frame-pointer chain (libhook is
 * built with -fno-omit-frame-pointer), and the set is chosen by the next
 * return address too, or more of them for a chain of wrappers (see
 * key_levels). A later allocation with the same key is the same stack if
 * every remembered slot still holds the same return address: the slots are
 * read, not trusted.
 *
 * Where the slots are: libunwind's unw_backtrace gives only the addresses.
 * On the first capture of a stack the memo places each one (learn_steps):
 * where its callee's frame size, learned from earlier stacks, puts it; else
 * where libunwind's cursor says (the stack pointer of the caller's frame,
 * less a word: what the call pushed), walked only as far as it must; else
 * at the first word above the previous slot equal to it. Every place is
 * checked to hold its address. The distances (steps) are kept once per
 * interned stack. Reads stay below the top of the thread's stack (see
 * memo_create), on pages known to be mapped (see readable); the scan gives
 * up after MEMO_SCAN_BYTES per frame (a frame with a local array over
 * 256 KiB is not memoized).
 *
 * Size: 128 sets of 4 entries of 16 bytes, 8 KiB of hook memory per thread
 * that allocates, grown to 1024 sets (64 KiB), then 4096 (256 KiB) in a
 * thread whose stacks do not fit (see hl_stack_memo_window), 4096 from the
 * start under checks=full, which memoizes free stacks too; freed when the
 * thread ends. Up to 128 KiB per process of frame sizes (8 KiB at first),
 * 8 KiB of key levels; 2 bytes per frame of each interned stack for its
 * steps.
 *
 * Limits: a hit is wrong only if a slot the memo reads is not the real one
 * and still holds the old return address. That needs either a frame whose
 * size is not fixed by its code address (alloca, variable-length arrays,
 * stack realignment) placing the same callee at the same slot under another
 * caller, or a stale copy of a return address below its real slot found
 * first by the scan, for a frame the unwinder could not place (after a
 * signal frame).
 * HEAPLEDGER_OPTIONS=stack_cache=0 turns the memo off;
 * stack_cache=2 checks every hit against libunwind and reports a mismatch
 * (the tests run python3, sqlite3, git, perl, bash and gcc that way).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "track.h"

extern void *__libc_stack_end; /* ld.so: the initial stack pointer */

/* Sets per thread. A set is one cache line of 4 entries of 16 bytes: the
 * stack and where to read it (its steps are kept once per stack, in the
 * interned stack itself, see fill), not the stack. cc1 (Debian's, -O2 on
 * bench/real/gen_c.awk's 31 functions) under checks=full, where every free
 * captures a stack too, has ~14.5k distinct stacks: 2048 sets hit 80% of its
 * captures, 4096 (256 KiB) 87%; by default 1024 sets (64 KiB) hit 76%. With
 * frees not captured, 1024 sets left cc1 at 264k libunwind walks, 4096 at
 * 104k (16384: 86k): a thread grows its memo to 4096 sets when its stacks
 * do not fit. */
#define MEMO_SET_BITS 10u
#define MEMO_SET_BITS_MAX 12u
/* A thread starts with 128 sets (8 KiB) and grows to MEMO_SET_BITS, then
 * MEMO_SET_BITS_MAX, as its stacks stop fitting: 1024 sets from the start
 * were 16 page faults in every process and thread, a tenth of what a 2 ms
 * test of a suite pays for its stacks; a longer-lived program outgrows the
 * small memo in its first windows. */
#define MEMO_SET_BITS_FIRST 7u
/* A window (HL_MEMO_WINDOW captures) in which more than this share were
 * fills of stacks already learned (the memo had let them go) grows it. */
#define MEMO_GROW_REFILL_PERCENT 8u
#define MEMO_WAYS 4u                     /* entries per set: one cache line */
/* Every stack the hook can capture: a memo of only the innermost 64 made
 * each allocation of a deeper stack a libunwind walk again, 18-27 times the
 * instructions of a hit (bench/README.md, "Stack depth"). */
#define MEMO_FRAMES HL_WIRE_MAX_FRAMES
/* Between two slots at most, so steps fit 16 bits (words). 16 KiB left a
 * frame with a 32 KiB local buffer above malloc's caller unmemoized: every
 * allocation under it a libunwind walk, 21x glibc's time on bench/bigframe
 * (bench/README.md, "Large frames"). */
#define MEMO_SCAN_BYTES (256u * 1024)
_Static_assert(MEMO_SCAN_BYTES / sizeof(uintptr_t) <= UINT16_MAX, "steps fit 16 bits");
#define MEMO_STACK_SPAN (1ull << 30)     /* a thread's stack is smaller */
#define PAGE_BYTES 4096u                 /* smallest page size: protection unit */
#define SIZE_BITS 14u                    /* frame_size: 16k words, 128 KiB per process */
#define SIZE_BITS_FIRST 10u              /* its first 1k words (8 KiB) in use at start */

struct memo_entry {
	uint64_t where;                 /* slot0 << 16 | 16 bits of the key's hash */
	const struct hl_stack *stack;   /* NULL: empty */
};

struct memo_set {
	_Alignas(64) struct memo_entry ways[MEMO_WAYS]; /* a lookup reads one line */
};

struct memo {
	uintptr_t stack_hi;             /* frames of this thread lie below */
	uintptr_t mapped_lo;            /* [mapped_lo, stack_hi) is known to be mapped */
	unsigned set_bits;              /* MEMO_SET_BITS_FIRST, MEMO_SET_BITS or _MAX */
	unsigned refills;               /* in the window: fills of learned stacks */
	bool refilling;                 /* grown in the last window: empty again */
	unsigned clock;                 /* picks the way to replace in a full set */
	struct memo_set sets[];         /* 1 << set_bits */
};

static size_t memo_bytes(unsigned set_bits)
{
	return sizeof(struct memo) + ((size_t)1 << set_bits) * sizeof(struct memo_set);
}

static HL_TLS struct memo *tls_memo;
static HL_TLS bool tls_memo_failed;     /* no memo for this thread: don't retry */

/* The set index: every stack through one wrapper (xmalloc, a pool's
 * allocator) has the same ip0 and, at one depth, the same slot0, so ip0 and
 * slot0 alone put them all in one set, where they pushed each other out (cc1:
 * over half the misses). The index hashes the next return address too, read
 * where frame_size says it is: a process-wide table, return address
 * -> size of its frame in words, learned by fills. Frame sizes belong to the
 * code, so threads share it; a word holds address << 16 | size, written and
 * read whole (relaxed atomics: a racing write leaves one or the other). A
 * wrong or missing size only picks another set, a miss: the index is a hint,
 * what makes a hit is the check of every slot (stack_matches). */
static _Atomic uint64_t frame_size[1u << SIZE_BITS];

/* Only the table's first 1 << (64 - size_shift) words are in use, four
 * times more each time half as many addresses as that were written: a
 * short process (a test of a suite, 2 ms) touches 2 of its 32 pages, where
 * one index spread over all of them faulted nearly every page in (30 of a
 * jansson test's 360 page faults). Growing changes every index, so what was
 * learned reads as unknown: one more miss for each stack, twice in a
 * process's life at most. */
static _Atomic unsigned size_shift = 64 - SIZE_BITS_FIRST; /* 64 - the bits in use */
_Static_assert((SIZE_BITS - SIZE_BITS_FIRST) % 2 == 0, "grown two bits at a time");
static _Atomic uint32_t size_written; /* addresses written at this size */

static inline _Atomic uint64_t *size_word(uintptr_t ret)
{
	unsigned shift = atomic_load_explicit(&size_shift, memory_order_relaxed);
	return &frame_size[((uint64_t)ret * 0x9e3779b97f4a7c15u) >> shift];
}

static void size_written_one(void)
{
	unsigned shift = atomic_load_explicit(&size_shift, memory_order_relaxed);
	if (shift <= 64 - SIZE_BITS ||
	    atomic_fetch_add_explicit(&size_written, 1, memory_order_relaxed) + 1 < (1u << (64 - shift)) / 2)
		return;
	/* Racing growers: one wins, the others' counts go with the old size. */
	if (atomic_compare_exchange_strong_explicit(&size_shift, &shift, shift - 2, memory_order_relaxed,
						    memory_order_relaxed))
		atomic_store_explicit(&size_written, 0, memory_order_relaxed);
}

static inline unsigned size_of(uintptr_t ret)
{
	uint64_t w = atomic_load_explicit(size_word(ret), memory_order_relaxed);
	return (w >> 16) == ret ? (unsigned)(w & 0xffffu) : 0;
}

static inline void size_learn(uintptr_t ret, unsigned words)
{
	uint64_t w = (uint64_t)ret << 16 | words;
	_Atomic uint64_t *at = size_word(ret);
	uint64_t was = atomic_load_explicit(at, memory_order_relaxed);
	if (was == w) /* no needless write */
		return;
	atomic_store_explicit(at, w, memory_order_relaxed);
	if ((was >> 16) != ret)
		size_written_one();
}

/* The return address `words` above `slot`, if that word is on the known
 * mapped part of the thread's stack; else 0. */
static inline uintptr_t read_above(const struct memo *m, uintptr_t slot, unsigned words)
{
	uintptr_t at = slot + (uintptr_t)words * sizeof(uintptr_t);
	if (words == 0 || slot < m->mapped_lo || at + sizeof(uintptr_t) > m->stack_hi)
		return 0;
	return *(const uintptr_t *)at;
}

/* How many return addresses above ip0 the set index hashes, per ip0, for
 * the process: one by default (with the second and third the memo hit
 * 87.7% of cc1's checks=full captures, with the second alone 86.4%, in
 * fewer instructions a lookup). A chain of wrappers (SQLite: malloc from
 * sqlite3MemMalloc from mallocWithAlarm from sqlite3Malloc, ...) puts
 * every stack through it at one depth under one key, more than a set's
 * ways (the SQLite shell's inserts: 500k misses of 5.9M lookups with one
 * level). A fill of a stack the memo let go that finds the set's ways all
 * holding its key is a strike against ip0; KEY_STRIKES of them hash one
 * level more for it, up to KEY_LEVELS_MAX. Not at the first: a level costs
 * every capture from ip0 two loads, and Debian's sqlite3, which lets a few
 * such stacks go at its start only, ran ~5% slower with every ip0 raised
 * at once. A word as frame_size's: address << 16 | strikes << 8 | levels;
 * a missing or overwritten one means one level and no strikes. */
#define LEVEL_BITS 10u
#define KEY_LEVELS_MAX 8u
#define KEY_STRIKES 32u
static _Atomic uint64_t key_levels[1u << LEVEL_BITS];

static inline _Atomic uint64_t *levels_word(uintptr_t ip0)
{
	return &key_levels[((uint64_t)ip0 * 0xff51afd7ed558ccdu) >> (64 - LEVEL_BITS)];
}

static inline unsigned levels_of(uintptr_t ip0)
{
	uint64_t w = atomic_load_explicit(levels_word(ip0), memory_order_relaxed);
	return (w >> 16) == ip0 ? (unsigned)(w & 0xffu) : 1u;
}

/* One strike against ip0; true when it raised ip0's levels. */
static bool levels_strike(uintptr_t ip0)
{
	_Atomic uint64_t *at = levels_word(ip0);
	uint64_t w = atomic_load_explicit(at, memory_order_relaxed);
	unsigned levels = 1, strikes = 0;
	if ((w >> 16) == ip0)
		levels = w & 0xffu, strikes = (w >> 8) & 0xffu;
	if (levels >= KEY_LEVELS_MAX)
		return false;
	if (++strikes == KEY_STRIKES)
		levels++, strikes = 0;
	atomic_store_explicit(at, (uint64_t)ip0 << 16 | strikes << 8 | levels, memory_order_relaxed);
	return strikes == 0;
}

/* ip0, slot0 and the return addresses `levels` frames above, read where
 * frame_size says each one is. */
static inline uint64_t key_hash(const struct memo *m, uintptr_t ip0, uintptr_t slot0)
{
	unsigned levels = levels_of(ip0);
	uintptr_t ip = ip0, slot = slot0;
	uint64_t h = (uint64_t)ip0 + ((uint64_t)slot0 << 21);
	for (unsigned k = 1;; k++) {
		unsigned words = size_of(ip);
		uintptr_t next = read_above(m, slot, words);
		h += ((uint64_t)next << 7) + (next >> 29);
		if (k >= levels || next == 0)
			break;
		h *= 0x9e3779b97f4a7c15u;
		slot += (uintptr_t)words * sizeof(uintptr_t);
		ip = next;
	}
	/* One multiply: the set index and the tag are its top bits, which
	 * depend on every bit of the sum. */
	return h * 0x9e3779b97f4a7c15u;
}

static inline struct memo_set *set_of(struct memo *m, uint64_t hash)
{
	return &m->sets[hash >> (64 - m->set_bits)];
}

/* slot0 and the 16 hash bits below the set index, in one word: a user
 * address has at most 47 bits. */
static inline uint64_t where_of(const struct memo *m, uint64_t hash, uintptr_t slot0)
{
	return (uint64_t)slot0 << 16 | ((hash >> (48 - m->set_bits)) & 0xffffu);
}

/* True if stack s is the current one: ip0 is its first return address and
 * every further one is still in the slot its steps say, counting up from
 * slot0. Only entries whose slots this thread found readable get here. */
static inline bool stack_matches(const struct hl_stack *s, uintptr_t ip0, uintptr_t slot0)
{
	if (s == NULL || s->frames[0] != ip0)
		return false;
	const uint16_t *step = hl_stack_steps(s);
	const uintptr_t *slot = (const uintptr_t *)slot0;
	for (unsigned j = 1; j < s->depth; j++) {
		slot += step[j];
		if (*slot != s->frames[j])
			return false;
	}
	return true;
}

/* Walks the hook's own frame-pointer chain from `frame`, a frame of the
 * hook's (the caller's, not this function's: two links fewer a capture), to
 * the first return address outside the hook. False if the chain leaves the
 * thread's stack or is longer than the hook's frames can be. */
static inline bool find_key(const struct memo *m, void *frame, uintptr_t *ip0, uintptr_t *slot0)
{
	uintptr_t *fp = frame;
	for (int i = 0; i < HL_OWN_FRAMES_MAX; i++) {
		uintptr_t at = (uintptr_t)fp;
		if (at + 2 * sizeof(uintptr_t) > m->stack_hi || (at & 7))
			return false;
		uintptr_t ret = fp[1];
		if (!hl_stack_is_own(ret)) {
			*ip0 = ret;
			*slot0 = (uintptr_t)&fp[1];
			return true;
		}
		uintptr_t *up = (uintptr_t *)fp[0];
		if (up <= fp)
			return false;
		fp = up;
	}
	return false;
}

uint32_t hl_stack_memo_lookup(struct hl_stack_memo_key *key, void *frame)
{
	struct memo *m = tls_memo;
	key->valid = false;
	if (hl_unlikely(m == NULL) || !find_key(m, frame, &key->ip0, &key->slot0))
		return 0;
	key->valid = true;
	key->hash = key_hash(m, key->ip0, key->slot0);
	struct memo_set *set = set_of(m, key->hash);
	uint64_t where = where_of(m, key->hash, key->slot0);
	for (unsigned w = 0; w < MEMO_WAYS; w++) {
		const struct memo_entry *e = &set->ways[w];
		if (e->where == where && stack_matches(e->stack, key->ip0, key->slot0))
			return e->stack->id;
	}
	return 0;
}

uintptr_t hl_stack_memo_caller(void *frame)
{
	uintptr_t ip0, slot0;
	struct memo *m = tls_memo;
	return m != NULL && find_key(m, frame, &ip0, &slot0) ? ip0 : 0;
}

/* Where this thread's stack ends, once per thread, without allocating
 * (pthread_getattr_np would, and the program's heap counters must stay
 * exact): the main thread's frames lie below __libc_stack_end; another
 * thread's below its descriptor, which glibc puts at the top of its stack.
 * A stack pointer far below that (a thread made by a bare clone, a
 * coroutine stack) gets no memo. */
static bool memo_create(void)
{
	if (tls_memo_failed)
		return false;
	/* On a signal's alternate stack the stack pointer says nothing about
	 * the thread's stack: wait for a capture in ordinary context. */
	stack_t alt;
	if (sigaltstack(NULL, &alt) != 0 || (alt.ss_flags & SS_ONSTACK))
		return false;
	tls_memo_failed = true; /* until it works */
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t hi = syscall(SYS_gettid) == getpid() ? (uintptr_t)__libc_stack_end
						       : (uintptr_t)pthread_self();
	if (hi <= sp || hi - sp > MEMO_STACK_SPAN)
		return false;
	unsigned set_bits = hl_options.checks ? MEMO_SET_BITS_MAX : MEMO_SET_BITS_FIRST;
	struct memo *m = hl_meta_alloc(memo_bytes(set_bits)); /* zeroed */
	if (m == NULL)
		return false;
	m->set_bits = set_bits;
	m->stack_hi = hi;
	m->mapped_lo = sp & ~(uintptr_t)(PAGE_BYTES - 1);
	tls_memo = m;
	tls_memo_failed = false;
	return true;
}

/* Scans read only memory known to be readable: the thread's stack above
 * mapped_lo, and pages below it that a one-byte process_vm_readv of our own
 * memory confirms one by one (it fails instead of faulting on an unmapped or
 * PROT_NONE page). Below mapped_lo are a signal handler's alternate stack or
 * a coroutine's stack in the heap: the scan must not run off their end into
 * a guard page. Where the kernel refuses process_vm_readv, such stacks are
 * just not memoized. */
struct scan {
	struct memo *m;
	uintptr_t readable_end; /* [.., readable_end) checked */
};

static bool readable(struct scan *sc, uintptr_t at)
{
	if (at < sc->readable_end)
		return true;
	if (at >= sc->m->mapped_lo) {
		sc->readable_end = sc->m->stack_hi;
		return at < sc->readable_end;
	}
	uintptr_t page = at & ~(uintptr_t)(PAGE_BYTES - 1);
	unsigned char byte;
	struct iovec local = { &byte, 1 }, remote = { (void *)page, 1 };
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1)
		return false;
	sc->readable_end = page + PAGE_BYTES;
	return true;
}

/* The first slot above `from` holding `value`, or 0. */
static uintptr_t scan_for(struct scan *sc, uintptr_t from, uintptr_t value)
{
	uintptr_t end = from + MEMO_SCAN_BYTES;
	if (end > sc->m->stack_hi || end < from)
		end = sc->m->stack_hi;
	for (uintptr_t at = from; at + sizeof(uintptr_t) <= end; at += sizeof(uintptr_t)) {
		if (!readable(sc, at))
			return 0;
		if (*(const uintptr_t *)at == value)
			return at;
	}
	return 0;
}

/* readable() for every page from those already checked up to at's, so the
 * checked part stays one stretch (fill relies on it) when a step jumps. */
static bool readable_through(struct scan *sc, uintptr_t at)
{
	while (at >= sc->readable_end) {
		uintptr_t next = sc->readable_end >= sc->m->mapped_lo ? at : sc->readable_end;
		if (!readable(sc, next))
			return false;
	}
	return true;
}

/* Does the word at `at` hold value? Reads only what readable_through allows. */
static bool holds(struct scan *sc, uintptr_t at, uintptr_t value)
{
	return at < sc->m->stack_hi && readable_through(sc, at) && *(const uintptr_t *)at == value;
}

/* Learning a stack's steps: frames[1..j) are placed, frames[j - 1] at slot. */
struct learning {
	struct scan *sc;
	const struct hl_stack *s;
	uint16_t *steps;
	uintptr_t slot0, slot;
	unsigned j;
};

/* Places frames[j] at `at` if that word holds it; an exact place (the
 * unwinder's) teaches frame_size its callee's size. */
static bool place(struct learning *l, uintptr_t at, bool exact)
{
	uintptr_t words = (at - l->slot) / sizeof(uintptr_t);
	if (at <= l->slot || words > UINT16_MAX || !holds(l->sc, at, (uintptr_t)l->s->frames[l->j]))
		return false;
	l->steps[l->j] = (uint16_t)words;
	if (exact)
		size_learn((uintptr_t)l->s->frames[l->j - 1], (unsigned)words);
	l->slot = at;
	l->j++;
	return true;
}

/* Places frames while frame_size knows their callees' sizes; true once all
 * are placed. */
static bool place_known(struct learning *l)
{
	while (l->j < l->s->depth) {
		unsigned size = size_of((uintptr_t)l->s->frames[l->j - 1]);
		if (size == 0 || !place(l, l->slot + (uintptr_t)size * sizeof(uintptr_t), false))
			return false;
	}
	return true;
}

/* The first word above the previous slot that holds frames[j]. */
static bool place_scanned(struct learning *l)
{
	uintptr_t at = scan_for(l->sc, l->slot + sizeof(uintptr_t), (uintptr_t)l->s->frames[l->j]);
	return at != 0 && place(l, at, false);
}

/* hl_stack_slots's visitor: walks on to the next frame the sizes cannot
 * place. */
static bool place_unwound(void *arg, unsigned j, uintptr_t slot)
{
	struct learning *l = arg;
	if (j == 0)
		return slot == l->slot0; /* the walk and the key agree on slot0 */
	if (j < l->j)
		return true;
	hl_assert(j == l->j);
	if (!(slot != 0 && place(l, slot, true)) && !place_scanned(l))
		return false;
	return !place_known(l);
}

/* Steps from slot0 to each return address of s on the current stack. A
 * frame's slot is where the size frame_size knows for its callee puts it,
 * if that word holds it; else where the unwinder says (a walk only as far
 * as the last frame the sizes cannot place), whose size is then learned;
 * else the first word above the previous slot that equals it. That scan
 * alone learned wrong steps where a frame still held a stale copy of its
 * caller's return address, left there by a deeper call: every later
 * capture of that stack then failed steps_hold, a libunwind walk each (the
 * SQLite shell's inserts, in one run of two, 2.6 s -> 4.8 s). False if one
 * is not found. */
static bool learn_steps(struct scan *sc, const struct hl_stack *s, uintptr_t slot0,
			uint16_t *steps)
{
	struct learning l = { .sc = sc, .s = s, .steps = steps, .slot0 = slot0, .slot = slot0, .j = 1 };
	if (place_known(&l))
		return true;
	hl_stack_slots(s->frames, s->depth, place_unwound, &l);
	while (l.j < s->depth)
		if (!place_scanned(&l))
			return false;
	return true;
}

/* True if the current stack holds s's return addresses where its steps say,
 * reading only what `readable` allows. */
static bool steps_hold(struct scan *sc, const struct hl_stack *s, uintptr_t slot0,
		       const uint16_t *steps)
{
	uintptr_t slot = slot0;
	for (unsigned j = 1; j < s->depth; j++) {
		slot += (uintptr_t)steps[j] * sizeof(uintptr_t);
		if (!holds(sc, slot, (uintptr_t)s->frames[j]))
			return false;
	}
	return true;
}

/* A stack's steps are the same wherever and by whichever thread it is
 * captured, as long as its frames have sizes fixed by their code: they are
 * kept once, in the interned stack (written once, published with release),
 * so a memo entry is 16 bytes instead of a copy of them. A capture of the
 * stack whose slots are elsewhere (a frame with alloca, a variable-length
 * array or realignment) is not memoized: its steps would not hold. */
void hl_stack_memo_fill(struct hl_stack_memo_key *key, uint32_t id)
{
	if (id == 0)
		return;
	if (!key->valid) {
		/* The first capture of a thread: learn its stack, then the key. */
		if (tls_memo != NULL || !memo_create() ||
		    !find_key(tls_memo, __builtin_frame_address(0), &key->ip0, &key->slot0))
			return;
	}
	struct memo *m = tls_memo;
	struct hl_stack *s = (struct hl_stack *)hl_stack_get(id);

	if (s == NULL || s->depth == 0 || s->depth > MEMO_FRAMES || s->frames[0] != key->ip0)
		return;
	struct scan sc = { .m = m };
	if (!readable(&sc, key->slot0))
		return;
	uint16_t *steps = hl_stack_steps(s);
	unsigned state = atomic_load_explicit(&s->memo_steps, memory_order_acquire);
	bool refill = false; /* a stack this memo had and let go */
	if (state == HL_MEMO_STEPS_READY) {
		if (!steps_hold(&sc, s, key->slot0, steps))
			return;
		m->refills++;
		refill = true;
	} else {
		uint16_t learned[s->depth]; /* at most MEMO_FRAMES, checked above */
		if (!learn_steps(&sc, s, key->slot0, learned))
			return;
		unsigned char none = HL_MEMO_STEPS_NONE;
		if (state != HL_MEMO_STEPS_NONE ||
		    !atomic_compare_exchange_strong_explicit(&s->memo_steps, &none,
							     HL_MEMO_STEPS_WRITING,
							     memory_order_relaxed,
							     memory_order_relaxed))
			return; /* another thread writes them: memoize it next time */
		memcpy(steps + 1, learned + 1, (s->depth - 1) * sizeof(steps[0]));
		atomic_store_explicit(&s->memo_steps, HL_MEMO_STEPS_READY, memory_order_release);
	}
	uintptr_t top = key->slot0;
	for (unsigned j = 1; j < s->depth; j++)
		top += (uintptr_t)steps[j] * sizeof(uintptr_t);
	/* The checks read every page from slot0 up into the known-mapped part:
	 * they are one mapped stretch now known (a thread's stack only grows). */
	if (key->slot0 < m->mapped_lo && top >= m->mapped_lo)
		m->mapped_lo = key->slot0 & ~(uintptr_t)(PAGE_BYTES - 1);
	/* The frame sizes the set index reads by, then the index as a lookup
	 * of this stack will compute it. */
	unsigned levels = levels_of(key->ip0);
	for (unsigned j = 1; j < s->depth && j <= levels; j++)
		size_learn(s->frames[j - 1], steps[j]);
	uint64_t hash = key_hash(m, key->ip0, key->slot0);
	struct memo_set *set = set_of(m, hash);
	unsigned same_key = 0;
	for (unsigned w = 0; w < MEMO_WAYS; w++)
		same_key += set->ways[w].where == where_of(m, hash, key->slot0);
	if (same_key == MEMO_WAYS && refill && levels_strike(key->ip0)) {
		levels++;
		if (levels < s->depth)
			size_learn(s->frames[levels - 1], steps[levels]);
		hash = key_hash(m, key->ip0, key->slot0);
		set = set_of(m, hash);
	}
	struct memo_entry *e = NULL;
	for (unsigned w = 0; w < MEMO_WAYS && e == NULL; w++)
		if (set->ways[w].stack == NULL)
			e = &set->ways[w];
	if (e == NULL)
		e = &set->ways[m->clock++ % MEMO_WAYS];
	e->where = where_of(m, hash, key->slot0);
	e->stack = s;
}

/* A new, empty memo of the next size in place of this thread's: its
 * entries are let go, a miss each. Only under the hook's guard, which
 * keeps any capture of this thread's (a signal handler's) from running
 * while the old memo is read. */
static bool memo_grow(void)
{
	struct memo *m = tls_memo;
	hl_assert(hl_guard_depth > 0);
	if (m == NULL || m->set_bits >= MEMO_SET_BITS_MAX)
		return false;
	unsigned set_bits = m->set_bits < MEMO_SET_BITS ? MEMO_SET_BITS : MEMO_SET_BITS_MAX;
	struct memo *bigger = hl_meta_alloc(memo_bytes(set_bits)); /* zeroed */
	if (bigger == NULL)
		return false; /* keeps the memo it has: a window later, again */
	bigger->set_bits = set_bits;
	bigger->stack_hi = m->stack_hi;
	bigger->mapped_lo = m->mapped_lo;
	bigger->refilling = true;
	tls_memo = bigger;
	hl_meta_free(m, memo_bytes(m->set_bits));
	return true;
}

void hl_stack_memo_window(struct hl_memo_policy *p)
{
	struct memo *m = tls_memo;
	unsigned refills = m ? m->refills : 0;
	bool refilling = m && m->refilling;
	if (m)
		m->refills = 0, m->refilling = false;
	/* A grown memo's first window measures its filling, not its hits. */
	if (refills * 100u > p->captures * MEMO_GROW_REFILL_PERCENT && memo_grow())
		refilling = true;
	if (!refilling && p->hits * 100u < p->captures * HL_MEMO_MIN_HIT_PERCENT)
		p->paused = HL_MEMO_PAUSE;
	p->captures = p->hits = 0;
}

void hl_stack_memo_thread_exit(void)
{
	struct memo *m = tls_memo;
	tls_memo = NULL;
	tls_memo_failed = true; /* late allocations of this thread: no memo */
	if (m)
		hl_meta_free(m, memo_bytes(m->set_bits));
}
