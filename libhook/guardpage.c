/*
 * libhook/guardpage.c: checks=guard, guard_sample=N and guard_first=N, blocks that fault
 * at the instruction that misuses them (Electric Fence's idea; the pool,
 * slot records and sampling as LLVM's GWP-ASan and mimalloc's guarded mode).
 *
 * The pool is one reservation of address space, PROT_NONE, cut into slots
 * of the same size: data pages for a block of up to guard_max bytes and its
 * 32-byte header, then one guard page. A guarded block is right-aligned
 * against its slot's guard page: its start is aligned to guard_align (16,
 * malloc's promise, by default) and it ends as close to the guard page as
 * that allows. The gap, up to guard_align - 1 bytes, holds HL_GUARD_CANARY
 * and the block has HL_RANGE_CANARY: the gap is checks=full's guard bytes,
 * read back by guard.c at free, delete, realloc, exit and each leak check
 * (a write into it is reported there; a read of it is never seen).
 * guard_align=1 leaves no gap: every overflow faults at once,
 * but a block's start is then aligned only as its size allows (the largest
 * power of two dividing n: right for an array, wrong for a header followed
 * by an odd number of bytes: CPython's bytes objects then hold misaligned
 * code). An explicit alignment (memalign, aligned new) is always honoured.
 * Only the pages from the header's to the guard page are made
 * accessible, so the pages before them stay PROT_NONE too (a far underflow
 * faults). The block has a large block's prefix and header and sits in
 * large.c's live set: free, realloc, walks and the leak scan treat it as a
 * large block.
 *
 * Freed, its pages are given back and left PROT_NONE (one mmap) and its
 * slot joins a FIFO of freed slots. A slot is reused oldest first, only
 * once the FIFO holds more than quarantine= MiB of freed pages or when no
 * slot was never used; until then, a read or write through a stale pointer
 * faults. A slot's record (block, size, kind, allocation and free stacks,
 * state) lives in a side array, not in the slot, so it survives the pages.
 *
 * The fault. SIGSEGV (sigchain.c: before the program's handler) at an
 * address in the pool is ours: the nearest block in the slot and its two
 * neighbours tells overflow ("N bytes after a block of size M alloc'd"),
 * underflow ("before") or use after free ("inside a block ... free'd"); the
 * page-fault error code tells read from write and insn.c the access size.
 * It is reported as a heap error (misuse.c) with the faulting stack. Then
 * on_error=abort aborts; on_error=continue makes the faulting page
 * accessible (a freed block's pages: they read as zero) and retires the
 * slot, so the instruction completes and the program goes on, as under
 * valgrind: later accesses through that page are no longer seen. A fault
 * in the pool near no block is reported and then goes on as any fault.
 *
 * guard_first=N guards every allocation until N were guarded, then one in
 * guard_sample (none if 0): heapledger valgrind's, so a short program has
 * each block guarded as under memcheck, and an allocation-heavy one pays
 * three system calls for N blocks only (every block of a 200,000-allocation
 * loop guarded took 8x valgrind's CPU).
 *
 * Limits. One slot per guarded block: a program with more live blocks
 * than slots (checks=guard: 2^19; guard_sample: 2^14) gets the rest
 * unguarded, said once. Each live slot is a mapping of its own for the
 * kernel: past vm.max_map_count (65530 by default, about 32,000 live
 * slots) mprotect fails and the rest are unguarded, said once. Blocks above
 * guard_max are not guarded. A read of the alignment gap, or an access
 * before a block's start within its first page, is not seen.
 *
 * Locks: guard_lock (a leaf) guards the FIFO, the fresh-slot counter and
 * the state of slots; syscalls run with it dropped. The fault handler takes
 * no lock: it reads records whose fields are written before the state that
 * publishes them.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ucontext.h>

#include "heap.h"
#include "sigchain.h"

#define PREFIX_BYTES (sizeof(struct hl_large) + sizeof(struct hl_range))
#define SLOTS_ALL (1u << 19)     /* checks=guard */
#define SLOTS_SAMPLED (1u << 14) /* guard_sample= */
#define SLOTS_MIN 64u

enum slot_state {
	SLOT_FRESH = 0, /* never used: all PROT_NONE */
	SLOT_LIVE,      /* the program's block */
	SLOT_FREED,     /* in the FIFO, PROT_NONE */
	SLOT_RETIRED,   /* made accessible after a reported fault: never reused */
};

/* What is known of a slot's block. */
struct slot {
	_Atomic uint8_t state; /* enum slot_state, stored last */
	uint8_t kind;          /* enum hl_alloc_kind */
	uint16_t pages;        /* pages made accessible, the header's to the guard page */
	uint32_t alloc_stack;  /* FREED: from the header at free */
	uint32_t free_stack;
	uintptr_t block;       /* the block's start */
	size_t size;           /* bytes asked for */
};

uintptr_t hl_guard_lo, hl_guard_hi;
bool hl_guard_all, hl_guard_on;

static struct hl_lock guard_lock = HL_LOCK_INIT;
static size_t slot_bytes, data_bytes, page_bytes;
static uint32_t slot_count;
static struct slot *slots;
static uint32_t *fifo;                     /* guard_lock: freed slots, oldest at head */
static uint32_t fifo_head, fifo_count;     /* guard_lock */
static uint64_t fifo_pages, fifo_bound;    /* guard_lock: pages held; quarantine= in pages */
static uint32_t next_fresh;                /* guard_lock: slots below it were used */
static size_t block_align;                 /* guard_align=, a power of two */
static _Atomic uint64_t sample_seed = 0x9e3779b97f4a7c15u;
static _Atomic int64_t first_left;          /* guard_first= allocations still to guard */

static char *slot_base(uint32_t i)
{
	return (char *)hl_guard_lo + (size_t)i * slot_bytes;
}

static char *data_end(uint32_t i)
{
	return slot_base(i) + data_bytes;
}

/* ---- sampling ---------------------------------------------------------------- */

/* Uniform in [1, 2N - 1]: one in N on average, never in step with a
 * program's own period (GWP-ASan draws the same way). */
static uint64_t next_countdown(void)
{
	uint64_t rate = hl_options.guard_sample;
	/* guard_first: every allocation while the budget lasts (one unit per
	 * countdown drawn, and each countdown of 1 guards the next one) */
	if (atomic_load_explicit(&first_left, memory_order_relaxed) > 0 &&
	    atomic_fetch_sub_explicit(&first_left, 1, memory_order_relaxed) > 0)
		return 1;
	if (rate == 0)
		return UINT64_MAX;
	if (rate == 1)
		return 1;
	uint64_t x = atomic_fetch_add_explicit(&sample_seed, 0x9e3779b97f4a7c15u,
					       memory_order_relaxed);
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9u;
	x ^= x >> 29;
	return 1 + x % (2 * rate - 1);
}

uint64_t hl_guard_countdown_start(void)
{
	return hl_guard_on && !hl_guard_all ? next_countdown() : UINT64_MAX;
}

void hl_guard_sampled(struct hl_thread_cache *tc)
{
	tc->guard_countdown = next_countdown();
}

/* ---- slots --------------------------------------------------------------------- */

static void say_once(_Atomic bool *said, const char *message)
{
	if (!atomic_exchange(said, true))
		hl_warn(message, NULL);
}

/* A slot for a new block, FRESH or FREED, or UINT32_MAX. */
static uint32_t slot_take_locked(void)
{
	hl_assert_held(&guard_lock);
	bool fresh_left = next_fresh < slot_count;
	if (fifo_count != 0 && (fifo_pages > fifo_bound || !fresh_left)) {
		uint32_t i = fifo[fifo_head];
		fifo_head = (fifo_head + 1) % slot_count;
		fifo_count--;
		fifo_pages -= slots[i].pages;
		return i;
	}
	return fresh_left ? next_fresh++ : UINT32_MAX;
}

static void slot_put_locked(uint32_t i)
{
	hl_assert_held(&guard_lock);
	fifo[(fifo_head + fifo_count) % slot_count] = i;
	fifo_count++;
	fifo_pages += slots[i].pages;
}

static uint32_t slot_of(uintptr_t address)
{
	return (uint32_t)((address - hl_guard_lo) / slot_bytes);
}

void *hl_guard_alloc(size_t n, size_t alignment, unsigned kind)
{
	static _Atomic bool said_full, said_refused;
	if (n > hl_options.guard_max || alignment > page_bytes)
		return NULL;
	if ((kind != HL_KIND_ALIGNED && kind != HL_KIND_NEW_ALIGNED &&
	     kind != HL_KIND_NEW_ARRAY_ALIGNED) || alignment < block_align)
		alignment = block_align;
	hl_lock(&guard_lock);
	uint32_t i = slot_take_locked();
	hl_unlock(&guard_lock);
	if (i == UINT32_MAX) {
		say_once(&said_full, "guard pool full: further blocks are not guarded");
		return NULL;
	}
	uintptr_t block = ((uintptr_t)data_end(i) - n) & ~(uintptr_t)(alignment - 1);
	uintptr_t first = (block - PREFIX_BYTES) & ~(uintptr_t)(page_bytes - 1);
	struct slot *s = &slots[i];
	s->pages = (uint16_t)(((uintptr_t)data_end(i) - first) / page_bytes);
	void *p = NULL;
	if (hl_os_protect((void *)first, (size_t)s->pages * page_bytes, true))
		p = hl_large_adopt((char *)first, (uintptr_t)data_end(i) - first,
				   block - PREFIX_BYTES - first, n);
	if (p == NULL) {
		/* The kernel's mapping limit (vm.max_map_count) or no memory:
		 * the slot is left out for good, the block allocated as usual. */
		hl_os_protect((void *)first, (size_t)s->pages * page_bytes, false);
		atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
		say_once(&said_refused, "the kernel refused a guarded block's pages "
					"(vm.max_map_count?): further blocks may not be guarded");
		return NULL;
	}
	/* The alignment gap: checks=full's guard bytes, read back by the same
	 * checks at free, realloc, exit and each leak check. */
	memset((char *)p + n, HL_GUARD_CANARY, (uintptr_t)data_end(i) - block - n);
	hl_range_mark(hl_range_of(p), HL_RANGE_CANARY);
	s->block = block;
	s->size = n;
	s->kind = (uint8_t)kind;
	s->alloc_stack = s->free_stack = 0;
	atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
	return p;
}

void hl_guard_release(struct hl_range *r)
{
	uint32_t i = slot_of((uintptr_t)r);
	struct slot *s = &slots[i];
	/* free, delete and realloc read the gap first, naming their call; this
	 * is for any other way out */
	hl_checks_check_release(r, HL_CALL_FREE);
	s->alloc_stack = hl_range_stack_id(r);
	s->kind = (uint8_t)hl_range_kind(r);
	s->free_stack = hl_track_free_stack();
	if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_RETIRED)
		return; /* its pages stay as the reported fault left them */
	atomic_store_explicit(&s->state, SLOT_FREED, memory_order_release);
	char *first = data_end(i) - (size_t)s->pages * page_bytes;
	if (!hl_os_discard_inaccessible(first, (size_t)s->pages * page_bytes)) {
		hl_os_protect(first, (size_t)s->pages * page_bytes, false);
		hl_os_discard(first, (size_t)s->pages * page_bytes);
	}
	hl_lock(&guard_lock);
	slot_put_locked(i);
	hl_unlock(&guard_lock);
}

bool hl_guard_describe_freed(const void *p, struct hl_misuse *m)
{
	if (!hl_guard_owns(p))
		return false;
	struct slot *s = &slots[slot_of((uintptr_t)p)];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_FREED ||
	    s->block != (uintptr_t)p)
		return false;
	m->block = p;
	m->block_size = s->size;
	m->alloc_kind = s->kind;
	m->alloc_stack = s->alloc_stack;
	m->free_stack = s->free_stack;
	return true;
}

/* ---- the fault ---------------------------------------------------------------- */

/* How far address is from slot i's block (0 inside it), if it has one. */
static bool distance_to(uint32_t i, uintptr_t address, uintptr_t *distance)
{
	if (i >= slot_count)
		return false;
	struct slot *s = &slots[i];
	unsigned state = atomic_load_explicit(&s->state, memory_order_acquire);
	if (state != SLOT_LIVE && state != SLOT_FREED)
		return false;
	uintptr_t end = s->block + s->size;
	*distance = address < s->block ? s->block - address : address >= end ? address - end + 1 : 0;
	return true;
}

/* The slot whose block is nearest address: its own or a neighbour's. */
static uint32_t nearest_slot(uintptr_t address)
{
	uint32_t here = slot_of(address), best = UINT32_MAX;
	uintptr_t best_distance = UINTPTR_MAX, d;
	for (uint32_t i = here ? here - 1 : here; i <= here + 1; i++)
		if (distance_to(i, address, &d) && d < best_distance) {
			best = i;
			best_distance = d;
		}
	return best;
}

static void describe_fault(struct hl_misuse *m, uint32_t i)
{
	struct slot *s = &slots[i];
	m->block = (const void *)s->block;
	m->block_size = s->size;
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_FREED) {
		m->kind = HL_ERROR_USE_AFTER_FREE;
		m->alloc_stack = s->alloc_stack;
		m->free_stack = s->free_stack;
		m->alloc_kind = s->kind;
	} else {
		struct hl_range *r = hl_range_of((void *)s->block); /* live: readable */
		m->kind = HL_ERROR_OVERFLOW;
		m->alloc_stack = hl_range_stack_id(r);
		m->alloc_kind = hl_range_kind(r);
	}
}

/* on_error=continue: lets the access complete, retiring the slot. */
static void open_up(uint32_t i, uintptr_t address)
{
	struct slot *s = &slots[i];
	char *page = (char *)(address & ~(uintptr_t)(page_bytes - 1));
	if (atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_FREED)
		hl_os_protect(data_end(i) - (size_t)s->pages * page_bytes,
			      (size_t)s->pages * page_bytes, true);
	else /* an overrun reported here is not reported again from its gap */
		hl_range_unmark(hl_range_of((void *)s->block), HL_RANGE_CANARY);
	hl_os_protect(page, page_bytes, true);
	atomic_store_explicit(&s->state, SLOT_RETIRED, memory_order_release);
}

static bool on_fault(int sig, siginfo_t *info, void *context)
{
	uintptr_t address = (uintptr_t)info->si_addr;
	if (sig != SIGSEGV || info->si_code != SEGV_ACCERR || !hl_guard_owns((void *)address))
		return false;
	const ucontext_t *uc = context;
	struct hl_misuse m = { .kind = HL_ERROR_INVALID_FREE, .address = (const void *)address };
#if defined(__x86_64__)
	m.call = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? HL_CALL_WRITE : HL_CALL_READ;
	m.fault_pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	m.detail = hl_insn_access_size((const void *)m.fault_pc);
#else
	(void)uc;
	m.call = HL_CALL_READ;
#endif
	uint32_t i = nearest_slot(address);
	if (i != UINT32_MAX)
		describe_fault(&m, i);
	hl_misuse_report(&m); /* on_error=abort does not return */
	if (i == UINT32_MAX)
		return false; /* a wild access: the program's handler or the crash */
	open_up(i, address);
	return true;
}

/* ---- setup and fork ----------------------------------------------------------- */

static bool pool_reserve(uint32_t want)
{
	for (uint32_t n = want; n >= SLOTS_MIN; n /= 2) {
		void *base = hl_os_reserve((size_t)n * slot_bytes);
		if (base == NULL)
			continue;
		/* Hook metadata, so the leak scan never reads the slot records'
		 * block addresses as roots (every guarded leak looked reachable). */
		slots = hl_meta_alloc((size_t)n * sizeof(*slots));
		fifo = hl_meta_alloc((size_t)n * sizeof(*fifo));
		if (slots == NULL || fifo == NULL)
			return false;
		slot_count = n;
		hl_guard_lo = (uintptr_t)base;
		hl_guard_hi = hl_guard_lo + (size_t)n * slot_bytes;
		hl_registry_mark(base, (size_t)n * slot_bytes, HL_REGION_LARGE);
		return true;
	}
	return false;
}

void hl_guard_init(void)
{
	bool all = hl_options.checks == HL_CHECKS_GUARD;
	if (!all && hl_options.guard_sample == 0 && hl_options.guard_first == 0)
		return;
	atomic_store_explicit(&first_left, (int64_t)hl_options.guard_first, memory_order_relaxed);
	page_bytes = hl_os_page_size();
	data_bytes = (hl_options.guard_max + PREFIX_BYTES + page_bytes - 1) & ~(page_bytes - 1);
	slot_bytes = data_bytes + page_bytes;
	fifo_bound = ((uint64_t)hl_options.quarantine_mib << 20) / page_bytes;
	block_align = (size_t)1 << (31 - __builtin_clz(hl_options.guard_align)); /* a power of two */
	if (!pool_reserve(all ? SLOTS_ALL : SLOTS_SAMPLED) ||
	    !hl_sigchain_add(SIGSEGV, HL_SIGCHAIN_FIRST, on_fault)) {
		hl_warn("cannot set up guard pages: no block is guarded", NULL);
		hl_guard_lo = hl_guard_hi = 0;
		return;
	}
	hl_guard_all = all;
	hl_guard_on = true;
}

void hl_guard_fork_prepare(void)
{
	hl_lock(&guard_lock);
}

void hl_guard_fork_parent(void)
{
	hl_unlock(&guard_lock);
}

void hl_guard_fork_child(void)
{
	hl_lock_reset(&guard_lock);
}
