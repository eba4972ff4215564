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
 * built with -fno-omit-frame-pointer). A later allocation with the same key
 * is the same stack if every remembered slot still holds the same return
 * address: the slots are read, not trusted.
 *
 * Where the slots are: libunwind's unw_backtrace gives only the addresses.
 * On a miss the memo finds each one's slot by scanning up the stack from the
 * previous slot for the first word equal to it (frames are contiguous and
 * ordered, the return address is the word the caller's call pushed at the
 * frame's top). The scan stays below the top of the thread's stack (see
 * memo_create), reads only pages known to be mapped (see readable) and gives
 * up after MEMO_SCAN_BYTES per frame (a frame with a huge local array is not
 * memoized).
 *
 * Size: 64 sets of 4 stacks, 152 bytes each: about 39 KiB of hook memory
 * per thread that allocates (156 KiB under checks=full, which memoizes free
 * stacks too), freed when the thread ends.
 *
 * Limits: a hit is wrong only if a slot the memo reads is not the real one
 * and still holds the old return address. That needs either a frame whose
 * size is not fixed by its code address (alloca, variable-length arrays,
 * stack realignment) placing the same callee at the same slot under another
 * caller, or a stale copy of a return address below its real slot that the
 * scan found first. HEAPLEDGER_OPTIONS=stack_cache=0 turns the memo off;
 * stack_cache=2 checks every hit against libunwind and reports a mismatch
 * (the tests run python3, sqlite3, git, perl, bash and gcc that way).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "track.h"

extern void *__libc_stack_end; /* ld.so: the initial stack pointer */

/* Sets per thread: 64, as 256 took cc1 only 0.75 -> 0.73 s. Under
 * checks=full every free captures a stack too, through the same memo: with
 * twice the stacks, 64 sets thrashed (sqlite3: a fill, a libunwind walk and a
 * stack scan for one capture in six; 256 sets: one in 200). */
#define MEMO_SET_BITS 6u
#define MEMO_SET_BITS_FULL 8u
#define MEMO_WAYS 4u                     /* stacks with the same key hash */
#define MEMO_FRAMES 64u                  /* deeper stacks are not memoized */
#define MEMO_SCAN_BYTES (16u * 1024)     /* between two slots at most: steps fit 16 bits */
#define MEMO_STACK_SPAN (1ull << 30)     /* a thread's stack is smaller */
#define PAGE_BYTES 4096u                 /* smallest page size: protection unit */

struct memo_entry {
	uintptr_t ip0;                  /* return address into malloc's caller */
	uintptr_t slot0;                /* where it is on the stack */
	const struct hl_stack *stack;   /* NULL: empty */
	uint16_t step[MEMO_FRAMES];     /* j >= 1: slot of frame j - slot of frame j-1, in words */
};

struct memo_set {
	struct memo_entry ways[MEMO_WAYS];
	unsigned next;                  /* way to replace next: round robin */
};

struct memo {
	uintptr_t stack_hi;             /* frames of this thread lie below */
	uintptr_t mapped_lo;            /* [mapped_lo, stack_hi) is known to be mapped */
	unsigned set_bits;              /* MEMO_SET_BITS or MEMO_SET_BITS_FULL */
	struct memo_set sets[];         /* 1 << set_bits */
};

static size_t memo_bytes(unsigned set_bits)
{
	return sizeof(struct memo) + ((size_t)1 << set_bits) * sizeof(struct memo_set);
}

static HL_TLS struct memo *tls_memo;
static HL_TLS bool tls_memo_failed;     /* no memo for this thread: don't retry */

static inline struct memo_set *set_of(struct memo *m, uintptr_t ip0, uintptr_t slot0)
{
	uint64_t h = ((uint64_t)ip0 ^ ((uint64_t)slot0 >> 3)) * 0x9e3779b97f4a7c15u;
	return &m->sets[h >> (64 - m->set_bits)];
}

/* True if every remembered slot of `e` still holds its return address. */
static inline bool entry_matches(const struct memo_entry *e, uintptr_t ip0, uintptr_t slot0)
{
	const struct hl_stack *s = e->stack;
	if (s == NULL || e->ip0 != ip0 || e->slot0 != slot0)
		return false;
	const uintptr_t *slot = (const uintptr_t *)slot0;
	for (unsigned j = 1; j < s->depth; j++) {
		slot += e->step[j];
		if (*slot != s->frames[j])
			return false;
	}
	return true;
}

/* Walks the hook's own frame-pointer chain from this function's frame to
 * the first return address outside the hook. False if the chain leaves the
 * thread's stack or is longer than the hook's frames can be. */
HL_NOINLINE static bool find_key(const struct memo *m, uintptr_t *ip0, uintptr_t *slot0)
{
	uintptr_t *fp = __builtin_frame_address(0);
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

uint32_t hl_stack_memo_lookup(struct hl_stack_memo_key *key)
{
	struct memo *m = tls_memo;
	key->valid = false;
	if (hl_unlikely(m == NULL) || !find_key(m, &key->ip0, &key->slot0))
		return 0;
	key->valid = true;
	struct memo_set *set = set_of(m, key->ip0, key->slot0);
	for (unsigned w = 0; w < MEMO_WAYS; w++)
		if (entry_matches(&set->ways[w], key->ip0, key->slot0))
			return set->ways[w].stack->id;
	return 0;
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
	unsigned set_bits = hl_options.checks ? MEMO_SET_BITS_FULL : MEMO_SET_BITS;
	struct memo *m = hl_meta_alloc(memo_bytes(set_bits));
	if (m == NULL)
		return false;
	memset(m, 0, memo_bytes(set_bits));
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

void hl_stack_memo_fill(struct hl_stack_memo_key *key, uint32_t id)
{
	if (id == 0)
		return;
	if (!key->valid) {
		/* The first capture of a thread: learn its stack, then the key. */
		if (tls_memo != NULL || !memo_create() ||
		    !find_key(tls_memo, &key->ip0, &key->slot0))
			return;
	}
	struct memo *m = tls_memo;
	const struct hl_stack *s = hl_stack_get(id);

	if (s == NULL || s->depth == 0 || s->depth > MEMO_FRAMES || s->frames[0] != key->ip0)
		return;
	struct memo_set *set = set_of(m, key->ip0, key->slot0);
	struct memo_entry *e = &set->ways[set->next];
	set->next = (set->next + 1) % MEMO_WAYS;
	uintptr_t slot = key->slot0;
	struct scan sc = { .m = m };
	if (!readable(&sc, slot))
		return;
	e->stack = NULL; /* incomplete until every slot is found */
	for (unsigned j = 1; j < s->depth; j++) {
		uintptr_t next = scan_for(&sc, slot + sizeof(uintptr_t), (uintptr_t)s->frames[j]);
		if (next == 0 || (next - slot) / sizeof(uintptr_t) > UINT16_MAX)
			return;
		e->step[j] = (uint16_t)((next - slot) / sizeof(uintptr_t));
		slot = next;
	}
	e->ip0 = key->ip0;
	e->slot0 = key->slot0;
	e->stack = s;
	/* The scan read every page from slot0 up into the known-mapped part:
	 * they are one mapped stretch now known (a thread's stack only grows). */
	if (key->slot0 < m->mapped_lo && slot >= m->mapped_lo)
		m->mapped_lo = key->slot0 & ~(uintptr_t)(PAGE_BYTES - 1);
}

void hl_stack_memo_thread_exit(void)
{
	struct memo *m = tls_memo;
	tls_memo = NULL;
	tls_memo_failed = true; /* late allocations of this thread: no memo */
	if (m)
		hl_meta_free(m, memo_bytes(m->set_bits));
}
