/*
 * libhook/scan.c: the reachability scan that gives each live block
 * valgrind's leak class (memcheck's mc_leakcheck.c is the model).
 *
 *  - definitely lost: no pointer to the block was found;
 *  - indirectly lost: reached only from lost blocks (each definitely lost
 *    block leads a "clique" and counts the bytes it holds indirectly);
 *  - possibly lost: reached only through interior pointers (or from
 *    possibly lost blocks), none of which a heuristic accepts;
 *  - still reachable: a start pointer (or an interior pointer a heuristic
 *    accepts) from a root or from a reachable block.
 *
 * Blocks: the live program blocks (block.h's hl_block_is_live: allocated,
 * not in a thread cache nor quarantined) in one array sorted by address, built without sorting them:
 * segments (sorted, a few hundred) are walked in order, each one's ranges
 * lie in address order, and the few large blocks are merged in. Scan state
 * is a side array (one byte per block, plus bytes per clique leader), never
 * a header bit. "The block containing X" is O(1) for segment blocks: each
 * segment has a bitmap with one bit per 16-byte granule set at each block
 * start and the count of set bits before each 64-bit word, so the index of
 * the last block starting at or below X is a rank (a popcount); large
 * blocks are found by binary search.
 *
 * The scan itself: roots (roots.c) push the blocks they point to; the mark
 * stack is then drained, reading each pushed block's words; then each block
 * still unreached becomes a clique leader and collects what it reaches, as
 * in valgrind (lc_process_markstack, lc_push_with_clique_if_a_chunk_ptr).
 * Valgrind's default interior-pointer heuristics (--leak-check-heuristics=
 * all) apply: stdstring, length64, newarray, multipleinheritance.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "scan.h"
#include "track.h"

#define GRANULE_SHIFT 4
#define SEGMENT_GRANULES (HL_SEGMENT_SIZE >> GRANULE_SHIFT)
#define SEGMENT_WORDS (SEGMENT_GRANULES / 64)

/* 64 granules of a segment: a bit per live block start, and the number of
 * live blocks before them in the segment, side by side so that a lookup
 * loads one cache line. */
struct hl_scan_word {
	uint64_t bits;
	uint64_t rank;
};

struct hl_scan_segment {
	uintptr_t base;  /* 0: empty slot */
	size_t first;    /* index of its first block in s->blocks */
	struct hl_scan_word *words; /* nwords of SEGMENT_WORDS: no block starts past them */
	size_t nwords;
	size_t count;    /* its live blocks */
};

/* One block on the mark stack: its index and where its bytes start (so
 * draining it does not load s->blocks[index], a likely cache miss). */
struct hl_scan_item {
	uintptr_t start;
	size_t index;
};

/* x86-64's baseline has no popcnt instruction: __builtin_popcountll then
 * calls libgcc, a measurable share of the lookups. */
static inline unsigned popcount64(uint64_t x)
{
#if defined(__POPCNT__)
	return (unsigned)__builtin_popcountll(x);
#else
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* The scan's smaller buffers are cut, page-aligned, from one mapping: a
 * short test's exit scan made ten mappings and unmapped them after, which
 * was a third of the scan's time (the unmaps' splits and TLB flushes). The
 * chunk is never given huge pages: a short process touches a few pages of
 * it, and a 2 MiB page would be zeroed whole. */
#define SCAN_CHUNK_BYTES ((size_t)4 << 20)
#define SCAN_CHUNK_LARGEST (((size_t)1 << 20) + ((size_t)64 << 10))

static bool own_add(struct hl_scan *s, void *p, size_t bytes)
{
	if (s->nown == sizeof(s->own) / sizeof(s->own[0]))
		return false;
	s->own[s->nown].p = p;
	s->own[s->nown++].bytes = bytes;
	return true;
}

static void *chunk_take(struct hl_scan *s, size_t bytes)
{
	if (s->chunk == NULL || s->chunk_used + bytes > SCAN_CHUNK_BYTES) {
		if (s->nown == sizeof(s->own) / sizeof(s->own[0]))
			return NULL;
		char *c = hl_os_map(SCAN_CHUNK_BYTES);
		if (c == NULL)
			return NULL;
		madvise(c, SCAN_CHUNK_BYTES, MADV_NOHUGEPAGE);
		own_add(s, c, SCAN_CHUNK_BYTES);
		s->chunk = c;
		s->chunk_used = 0;
	}
	void *p = s->chunk + s->chunk_used;
	s->chunk_used += bytes;
	return p;
}

void *hl_scan_map(struct hl_scan *s, size_t bytes)
{
	size_t page = hl_os_page_size();
	bytes = (bytes + page - 1) & ~(page - 1);
	if (bytes <= SCAN_CHUNK_LARGEST)
		return chunk_take(s, bytes);
	if (s->nown == sizeof(s->own) / sizeof(s->own[0]))
		return NULL;
	void *p = hl_os_map(bytes);
	if (p) {
		/* The block, mark and bitmap arrays of a big heap span hundreds
		 * of MiB read in no particular order: huge pages save most of
		 * their page faults and TLB misses (advice only). */
		if (bytes >= ((size_t)4 << 20))
			madvise(p, bytes, MADV_HUGEPAGE);
		own_add(s, p, bytes);
	}
	return p;
}

static inline uintptr_t block_start(const struct hl_scan *s, size_t i)
{
	return (uintptr_t)(s->blocks[i] + 1);
}

static inline size_t range_requested(struct hl_range *r)
{
	return hl_block_requested(r); /* the one definition (alloc.c) */
}

static inline size_t block_size(const struct hl_scan *s, size_t i)
{
	return range_requested(s->blocks[i]);
}

/* ---- collecting the blocks ------------------------------------------------- */

static void sort_addresses(uintptr_t *v, size_t n)
{
	for (size_t gap = n / 2; gap > 0; gap /= 2)
		for (size_t i = gap; i < n; i++)
			for (size_t j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
				uintptr_t t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

struct large_list {
	uintptr_t *items;
	size_t count;
};

static void add_large(void *base, size_t bytes, struct hl_range *r, void *arg)
{
	(void)base;
	(void)bytes;
	struct large_list *l = arg;
	if (r == NULL || !hl_block_is_live(r))
		return; /* cached, or quarantined (checks=full) */
	if (l->items)
		l->items[l->count] = (uintptr_t)r;
	l->count++;
}

static struct hl_scan_segment *segment_slot(const struct hl_scan *s, uintptr_t base)
{
	size_t i = (size_t)((base >> HL_SEGMENT_SHIFT) * 0x9e3779b97f4a7c15ull) & s->segment_mask;
	for (;; i = (i + 1) & s->segment_mask)
		if (s->segments[i].base == base || s->segments[i].base == 0)
			return &s->segments[i];
}

/* Appends the program blocks of one segment and indexes them. The ranges
 * come from the segment's block-start map (block.h), not from a walk from
 * header to header: each header's address is known without reading the
 * previous one, so the processor overlaps their cache misses. */
/* Every range that ever held a block ends at or below the segment's
 * `untouched` (arena.c hand_out_locked): the block map has no live block's
 * start from word `from` on. */
static bool no_live_start_from(struct hl_segment *seg, const uint64_t *map, size_t from)
{
	for (size_t w = from; w < SEGMENT_WORDS; w++)
		for (uint64_t starts = map[w]; starts; starts &= starts - 1) {
			unsigned b = (unsigned)__builtin_ctzll(starts);
			if (hl_block_is_live((struct hl_range *)((uintptr_t)seg +
								 ((w * 64 + b) << GRANULE_SHIFT)) - 1))
				return false;
		}
	return true;
}

static void collect_segment(struct hl_scan *s, struct hl_segment *seg, struct hl_scan_word *words)
{
	struct hl_scan_segment *slot = segment_slot(s, (uintptr_t)seg);
	/* Only the words below `untouched`, where blocks were ever handed
	 * out: a short-lived process's one segment touched 16 pages of words
	 * and 8 of its block map for a few hundred blocks (each page a fault,
	 * a tenth of its exit scan). */
	size_t used = (size_t)(seg->untouched - (char *)seg) >> GRANULE_SHIFT;
	size_t nwords = used / 64 + 1 < SEGMENT_WORDS ? used / 64 + 1 : SEGMENT_WORDS;
	*slot = (struct hl_scan_segment){ (uintptr_t)seg, s->nblocks, words, nwords, 0 };
	const uint64_t *map = hl_blockmap_of((uintptr_t)seg);
	size_t before = 0;
	for (size_t w = 0; w < nwords; w++) {
		uint64_t starts = __atomic_load_n(&map[w], __ATOMIC_RELAXED), live = 0;
		while (starts) {
			unsigned b = (unsigned)__builtin_ctzll(starts);
			starts &= starts - 1;
			struct hl_range *r =
				(struct hl_range *)((uintptr_t)seg + ((w * 64 + b) << GRANULE_SHIFT)) - 1;
			if (!hl_block_is_live(r))
				continue;
			live |= 1ull << b;
			s->blocks[s->nblocks++] = r;
		}
		words[w].bits = live;
		words[w].rank = before;
		before += popcount64(live);
	}
	slot->count = before;
	hl_assert_expensive(no_live_start_from(seg, map, nwords));
}

static size_t count_segments(struct hl_scan *s, uintptr_t *out)
{
	size_t n = 0;
	for (unsigned i = 0; i < HL_MAX_ARENAS; i++) {
		if (!(s->arenas_locked & (1ull << i)))
			continue;
		for (struct hl_segment *seg = hl_arenas[i].segments; seg; seg = seg->next) {
			if (hl_segment_is_spare(seg))
				continue;
			if (out)
				out[n] = (uintptr_t)seg;
			n++;
		}
	}
	return n;
}

static bool collect_blocks(struct hl_scan *s)
{
	size_t nseg = count_segments(s, NULL);
	struct large_list large = { 0 };
	hl_large_visit_locked(add_large, &large);
	uintptr_t *segs = hl_scan_map(s, (nseg + large.count + 1) * sizeof(uintptr_t));
	if (segs == NULL)
		return false;
	count_segments(s, segs);
	large.items = segs + nseg;
	large.count = 0;
	hl_large_visit_locked(add_large, &large);
	sort_addresses(segs, nseg);
	sort_addresses(large.items, large.count);

	size_t bound = large.count;
	for (size_t i = 0; i < nseg; i++)
		bound += HL_SEGMENT_SIZE / HL_RANGE_MIN;
	size_t slots = 16;
	while (slots < 2 * nseg + 2)
		slots *= 2;
	s->segment_mask = slots - 1;
	s->segments = hl_scan_map(s, slots * sizeof(struct hl_scan_segment));
	struct hl_scan_word *words = hl_scan_map(s, nseg * SEGMENT_WORDS * sizeof(*words) + 8);
	s->blocks = hl_scan_map(s, bound * sizeof(*s->blocks) + 8);
	s->large = hl_scan_map(s, large.count * sizeof(size_t) + 8);
	if (!s->segments || !words || !s->blocks || !s->large)
		return false;
	size_t si = 0, li = 0;
	while (si < nseg || li < large.count) {
		if (li < large.count && (si == nseg || large.items[li] < segs[si])) {
			s->large[s->nlarge++] = s->nblocks;
			s->blocks[s->nblocks++] = (struct hl_range *)large.items[li++];
		} else {
			collect_segment(s, (struct hl_segment *)segs[si], words + si * SEGMENT_WORDS);
			si++;
		}
	}
	if (s->nblocks) {
		s->lo = block_start(s, 0);
		size_t last = s->nblocks - 1;
		s->hi = block_start(s, last) + block_size(s, last) + 1;
	}
	s->mark = hl_scan_map(s, s->nblocks + 8);
	s->stack = hl_scan_map(s, s->nblocks * sizeof(*s->stack) + 8);
	return s->mark && s->stack;
}

/* ---- finding the block that contains an address ----------------------------- */

static inline bool contains(const struct hl_scan *s, size_t i, uintptr_t p)
{
	uintptr_t start = block_start(s, i);
	size_t size = block_size(s, i);
	return p >= start && p < start + (size ? size : 1); /* size 0: its start only */
}

static HL_NOINLINE ssize_t find_large(const struct hl_scan *s, uintptr_t p)
{
	size_t lo = 0, hi = s->nlarge;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (block_start(s, s->large[mid]) <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !contains(s, s->large[lo - 1], p))
		return -1;
	return (ssize_t)s->large[lo - 1];
}

/* The last live block starting at or below p, whether or not it contains
 * p (contains_at tells), and its start; -1 if none. A block starting in
 * p's word of the bitmap (blocks under 1 KiB mostly do) gives its start
 * without loading s->blocks. */
static inline ssize_t candidate(const struct hl_scan *s, uintptr_t p, uintptr_t *start)
{
	if (p - s->lo >= s->hi - s->lo)
		return -1;
	enum hl_region region = hl_registry_lookup((void *)p);
	if (region == HL_REGION_LARGE) {
		ssize_t i = find_large(s, p);
		if (i >= 0)
			*start = block_start(s, (size_t)i);
		return i;
	}
	if (region != HL_REGION_SEGMENT)
		return -1;
	const struct hl_scan_segment *seg = segment_slot(s, p & ~(uintptr_t)(HL_SEGMENT_SIZE - 1));
	if (seg->base == 0)
		return -1; /* spare, or an arena the scan could not lock */
	size_t g = (p - seg->base) >> GRANULE_SHIFT;
	if (hl_unlikely(g / 64 >= seg->nwords)) { /* past every block start: the last one */
		if (seg->count == 0)
			return -1;
		size_t i = seg->first + seg->count - 1;
		*start = block_start(s, i);
		return (ssize_t)i;
	}
	const struct hl_scan_word *word = &seg->words[g / 64];
	uint64_t upto = word->bits & (~0ull >> (63 - g % 64));
	if (upto) {
		size_t i = seg->first + word->rank + popcount64(upto) - 1;
		*start = seg->base + (((g & ~(size_t)63) + 63 - (size_t)__builtin_clzll(upto)) << GRANULE_SHIFT);
		return (ssize_t)i;
	}
	if (word->rank == 0)
		return -1;
	size_t i = seg->first + word->rank - 1;
	*start = block_start(s, i);
	return (ssize_t)i;
}

/* Whether the block starting at start contains p (size 0: its start only). */
static inline bool contains_at(uintptr_t start, uintptr_t p)
{
	size_t size = range_requested((struct hl_range *)start - 1);
	return p >= start && p < start + (size ? size : 1);
}

static inline ssize_t find_block(const struct hl_scan *s, uintptr_t p)
{
	uintptr_t start;
	ssize_t i = candidate(s, p, &start);
	return i >= 0 && contains_at(start, p) ? i : -1;
}

/* ---- interior-pointer heuristics (valgrind's heuristic_reachedness) --------- */

static uintptr_t word_at(uintptr_t address)
{
	uintptr_t v;
	memcpy(&v, (const void *)address, sizeof(v));
	return v;
}

/* A vtable: in a readable file mapping, and among its next 20 words at
 * least two non-null ones, each pointing into executable file mappings,
 * before any that does not. */
static bool is_vtable(const struct hl_scan *s, uintptr_t address)
{
	const struct hl_map *m = hl_roots_map_of(s, address);
	if (m == NULL || !m->file || !(m->prot & PROT_READ))
		return false;
	uintptr_t last = address + 20 * sizeof(uintptr_t);
	if (last > m->end - sizeof(uintptr_t))
		last = m->end - sizeof(uintptr_t);
	unsigned functions = 0;
	for (uintptr_t at = address; at <= last; at += sizeof(uintptr_t)) {
		uintptr_t fn = word_at(at);
		if (fn == 0)
			continue;
		const struct hl_map *code = hl_roots_map_of(s, fn);
		if (code == NULL || !code->file || !(code->prot & PROT_EXEC))
			return false;
		if (++functions == 2)
			return true;
	}
	return false;
}

/* heuristics= bits (options.h), valgrind's --leak-check-heuristics */
#define HEURISTIC_STDSTRING 1u
#define HEURISTIC_LENGTH64 2u
#define HEURISTIC_NEWARRAY 4u
#define HEURISTIC_MULTIPLEINHERITANCE 8u

static bool heuristic_reaches(const struct hl_scan *s, uintptr_t p, size_t i)
{
	uintptr_t start = block_start(s, i);
	size_t size = block_size(s, i);
	const size_t word = sizeof(uintptr_t);
	unsigned use = hl_options.heuristics;
	/* stdstring: length, capacity, refcount, then the characters and NUL */
	if ((use & HEURISTIC_STDSTRING) && p == start + 3 * word && size > 3 * word) {
		uintptr_t capacity = word_at(start + word);
		if (3 * word + capacity + 1 == size && word_at(start) <= capacity)
			return true;
	}
	if (p == start + 8 && size > 8) {
		uint64_t head = word_at(start);
		/* length64: a 64-bit length of the rest of the block */
		if ((use & HEURISTIC_LENGTH64) && head > 0 && size - 8 == head)
			return true;
		/* newarray: new[] of objects with a destructor, after the count */
		if ((use & HEURISTIC_NEWARRAY) && head > 0 && (size - 8) % head == 0)
			return true;
	}
	/* multipleinheritance: a vtable pointer at p and at the start */
	if ((use & HEURISTIC_MULTIPLEINHERITANCE) && p % word == 0 && p + word <= start + size && size >= word) {
		uintptr_t inner = word_at(p), first = word_at(start);
		if (inner % word == 0 && inner >= 4096 && first % word == 0 && first >= 4096 &&
		    is_vtable(s, inner) && is_vtable(s, first))
			return true;
	}
	return false;
}

/* ---- marking ---------------------------------------------------------------- */

static inline void push(struct hl_scan *s, size_t i, uintptr_t start)
{
	if (s->mark[i] & HL_MARK_PENDING)
		return;
	s->mark[i] |= HL_MARK_PENDING;
	s->stack[s->top++] = (struct hl_scan_item){ start, i };
}

static inline void set_state(struct hl_scan *s, size_t i, unsigned state)
{
	s->mark[i] = (uint8_t)((s->mark[i] & ~HL_MARK_STATE) | state);
}

/* Valgrind's lc_push_without_clique_if_a_chunk_ptr. */
static HL_NOINLINE void reach(struct hl_scan *s, uintptr_t p, bool prior_definite)
{
	uintptr_t start;
	ssize_t found = candidate(s, p, &start);
	if (found < 0)
		return;
	size_t i = (size_t)found;
	unsigned state = s->mark[i] & HL_MARK_STATE;
	if (state == HL_MARK_REACHABLE || !contains_at(start, p))
		return;
	bool as_start = p == start || heuristic_reaches(s, p, i);
	if (as_start && prior_definite) {
		set_state(s, i, HL_MARK_REACHABLE);
		push(s, i, start);
	} else if (state == HL_MARK_UNREACHED) {
		set_state(s, i, HL_MARK_POSSIBLE);
		push(s, i, start);
	}
}

/* Valgrind's lc_push_with_clique_if_a_chunk_ptr. */
static HL_NOINLINE void gather(struct hl_scan *s, uintptr_t p, size_t clique)
{
	uintptr_t start;
	ssize_t found = candidate(s, p, &start);
	if (found < 0 || (size_t)found == clique)
		return;
	size_t i = (size_t)found;
	if ((s->mark[i] & HL_MARK_STATE) != HL_MARK_UNREACHED || !contains_at(start, p))
		return;
	push(s, i, start);
	s->indirect[clique] += range_requested((struct hl_range *)start - 1) + s->indirect[i];
	set_state(s, i, HL_MARK_INDIRECT);
}

#define NO_CLIQUE SIZE_MAX

static void scan_words(struct hl_scan *s, uintptr_t start, uintptr_t end, bool prior_definite,
		       size_t clique)
{
	uintptr_t lo = s->lo, span = s->hi - s->lo;
	start = (start + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
	end &= ~(uintptr_t)(sizeof(uintptr_t) - 1);
	if (end > start)
		s->scanned_bytes += end - start;
	for (uintptr_t at = start; at < end; at += sizeof(uintptr_t)) {
		uintptr_t v = *(const uintptr_t *)at;
		if (hl_likely(v - lo >= span))
			continue;
		if (clique == NO_CLIQUE)
			reach(s, v, prior_definite);
		else
			gather(s, v, clique);
	}
}

void hl_scan_root_range(struct hl_scan *s, uintptr_t start, uintptr_t end)
{
	if (s->nblocks)
		scan_words(s, start, end, true, NO_CLIQUE);
}

/* A thread stopped inside malloc or free holds the block's header address,
 * not its start: counted as a start pointer, or a block being handed out
 * would show as lost for an instant. Registers and stacks only. */
static void reach_from_thread(struct hl_scan *s, uintptr_t word)
{
	if (word - s->lo + sizeof(struct hl_range) < s->hi - s->lo + sizeof(struct hl_range) &&
	    find_block(s, word) < 0) {
		ssize_t i = find_block(s, word + sizeof(struct hl_range));
		if (i >= 0 && block_start(s, (size_t)i) == word + sizeof(struct hl_range))
			word += sizeof(struct hl_range);
	}
	reach(s, word, true);
}

void hl_scan_root_word(struct hl_scan *s, uintptr_t word)
{
	if (s->nblocks)
		reach_from_thread(s, word);
}

void hl_scan_root_stack(struct hl_scan *s, uintptr_t start, uintptr_t end)
{
	if (s->nblocks == 0)
		return;
	start = (start + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
	end &= ~(uintptr_t)(sizeof(uintptr_t) - 1);
	if (end > start)
		s->scanned_bytes += end - start;
	for (uintptr_t at = start; at < end; at += sizeof(uintptr_t)) {
		uintptr_t v = *(const uintptr_t *)at;
		if (v - s->lo + sizeof(struct hl_range) < s->hi - s->lo + sizeof(struct hl_range))
			reach_from_thread(s, v);
	}
}

static void drain(struct hl_scan *s, size_t clique)
{
	while (s->top) {
		struct hl_scan_item item = s->stack[--s->top];
		size_t i = item.index;
		s->mark[i] &= (uint8_t)~HL_MARK_PENDING;
		bool prior_definite = (s->mark[i] & HL_MARK_STATE) != HL_MARK_POSSIBLE;
		uintptr_t start = item.start;
		scan_words(s, start, start + range_requested((struct hl_range *)start - 1), prior_definite,
			   clique == NO_CLIQUE ? NO_CLIQUE : clique);
	}
}

void hl_scan_classify(struct hl_scan *s)
{
	if (s->nblocks == 0)
		return;
	hl_roots_scan(s);
	drain(s, NO_CLIQUE);
	bool any_lost = false;
	for (size_t i = 0; i < s->nblocks && !any_lost; i++)
		any_lost = (s->mark[i] & HL_MARK_STATE) == HL_MARK_UNREACHED;
	if (!any_lost)
		return;
	s->indirect = hl_scan_map(s, s->nblocks * sizeof(uint64_t));
	if (s->indirect == NULL)
		return; /* every unreached block stays definitely lost, none indirect */
	for (size_t i = 0; i < s->nblocks; i++) {
		if ((s->mark[i] & HL_MARK_STATE) != HL_MARK_UNREACHED)
			continue;
		push(s, i, block_start(s, i));
		drain(s, i);
	}
}

/* ---- begin and end ---------------------------------------------------------- */

/* The scanning thread's callee-saved registers: a caller may keep the only
 * pointer to a block in one of them. */
HL_NOINLINE void hl_scan_save_registers(uintptr_t *regs)
{
#if defined(__x86_64__)
	__asm__ volatile("movq %%rbx, 0(%0)\n\tmovq %%rbp, 8(%0)\n\tmovq %%r12, 16(%0)\n\t"
			 "movq %%r13, 24(%0)\n\tmovq %%r14, 32(%0)\n\tmovq %%r15, 40(%0)"
			 : : "r"(regs) : "memory");
#elif defined(__aarch64__)
	__asm__ volatile("stp x19, x20, [%0]\n\tstp x21, x22, [%0, #16]\n\t"
			 "stp x23, x24, [%0, #32]\n\tstp x25, x26, [%0, #48]"
			 : : "r"(regs) : "memory");
#else
	(void)regs;
#endif
}

static void lock_arenas(struct hl_scan *s)
{
	unsigned count = hl_arena_count;
	for (unsigned i = 0; i < count; i++) {
		hl_lock(&hl_arenas[i].lock);
		s->arenas_locked |= 1ull << i;
	}
}

/* An arena created after lock_arenas: taken if free, else its blocks are
 * left out (its creator was stopped holding it). */
static void lock_late_arenas(struct hl_scan *s)
{
	for (unsigned i = 0; i < hl_arena_count && i < HL_MAX_ARENAS; i++)
		if (!(s->arenas_locked & (1ull << i)) && hl_trylock(&hl_arenas[i].lock))
			s->arenas_locked |= 1ull << i;
}

bool hl_scan_begin(struct hl_scan *s)
{
	if (!s->from_caller) {
		hl_scan_save_registers(s->own_regs);
		s->own_sp = (uintptr_t)__builtin_frame_address(0);
	}
	if (s->at_exit)
		hl_exit_frame(&s->own_sp, s->own_regs);
	s->inherited_sp = hl_exit_frame_inherited_sp();
	hl_roots_find_hook(s);
	lock_arenas(s);
	hl_large_fork_prepare();
	hl_meta_fork_prepare();
	s->world = hl_world_stop(s);
	lock_late_arenas(s);
	if (s->world == NULL || !hl_roots_read_maps(s) || !collect_blocks(s)) {
		hl_scan_end(s);
		return false;
	}
	s->unstopped = s->world->unstopped;
	memcpy(s->unstopped_tids, s->world->unstopped_tids, sizeof(s->unstopped_tids));
	return true;
}

void hl_scan_end(struct hl_scan *s)
{
	bool world_free = hl_world_resume(s->world);
	hl_meta_fork_parent();
	hl_large_fork_parent();
	for (unsigned i = 0; i < HL_MAX_ARENAS; i++)
		if (s->arenas_locked & (1ull << i))
			hl_unlock(&hl_arenas[i].lock);
	s->arenas_locked = 0;
	/* At exit the kernel takes the buffers with the rest of the address
	 * space, for less than their unmaps cost. A world whose late handlers
	 * may still run stays, with the mapping it is in. */
	for (unsigned i = 0; i < s->nown && !s->at_exit; i++) {
		char *p = s->own[i].p;
		bool holds_world = (char *)s->world >= p && (char *)s->world < p + s->own[i].bytes;
		if (world_free || !holds_world)
			hl_os_unmap(p, s->own[i].bytes);
	}
	s->nown = 0;
	s->chunk = NULL;
	s->chunk_used = 0;
	s->world = NULL;
}
