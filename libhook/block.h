/*
 * libhook/block.h: where blocks start and what state they are in; the one
 * definition of both, for the free paths, the heap walks, the misuse checks
 * and the leak scan.
 *
 * Block-start map
 * ---------------
 * Every segment keeps one bit per 16-byte granule of itself right after its
 * header (HL_BLOCKMAP_BYTES, 32 KiB per 4 MiB segment; the first range
 * follows it). The bit of granule g is set exactly when a range's user data
 * starts at g, that is, when a range header occupies granule g - 1. So a
 * pointer is a block start if and only if its bit is set, whatever bytes
 * the program wrote in front of it: an interior pointer behind 16 forged
 * header bytes, a pointer into the segment header or the map itself, or one
 * into a range's user data all find a clear bit.
 *
 * Bits change only where ranges are cut and merged (arena.c, segment.c),
 * always under the arena's lock, and one 64-bit word covers 1 KiB of one
 * segment, so a word has one writer at a time: plain stores, no atomic
 * read-modify-write. malloc's fast path never touches the map (a range in a
 * thread cache keeps its bit; its state is in its flags) and free's reads
 * one word. A reader without the lock loads relaxed: a bit that changes
 * under it belongs to a range the reader does not own, which only a program
 * freeing memory it does not hold can ask about.
 *
 * Block state
 * -----------
 * Once the map has proven that a header is a range's, its flags are the
 * allocator's own writing (a program can reach them only by writing out of
 * bounds, which the header check catches): the predicates below read them.
 */
#ifndef HL_BLOCK_H
#define HL_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "types.h"

#define HL_BLOCKMAP_BITS (HL_SEGMENT_SIZE / HL_ALIGN)
#define HL_BLOCKMAP_BYTES (HL_BLOCKMAP_BITS / 8) /* 32 KiB */
_Static_assert(HL_BLOCKMAP_BYTES % HL_ALIGN == 0, "first range stays aligned");

/* ---- range flags: who writes them, who reads them ------------------------- *
 *
 * The holder of an arena's lock writes the flags of that arena's free ranges
 * and of the ranges it cuts, merges or takes back. The thread whose cache
 * holds a range (HL_RANGE_ALLOCATED set: no lock holder writes it) sets and
 * clears HL_RANGE_CACHED without the lock, while a lock holder may be reading
 * that byte: coalescing reads its neighbours' flags, walks read every range's.
 * Those are the only concurrent accesses to a flags byte, and CACHED is the
 * only bit that changes under a reader: both sides use the accessors below,
 * a relaxed atomic load or store of the byte. No read-modify-write
 * instruction (the owner is the byte's only writer while it holds the range),
 * so the fast paths compile to the same plain moves as before, and the race
 * ThreadSanitizer saw is gone. Coalescing only asks "is it free", which the
 * owner never changes. */
HL_INLINE uint8_t hl_range_flags(const struct hl_range *r)
{
	return __atomic_load_n(&r->flags, __ATOMIC_RELAXED);
}

/* The calling thread puts a range it holds into its cache, or takes it out.
 * A cached range stays allocated in its arena's eyes (types.h). */
HL_INLINE void hl_range_mark_cached(struct hl_range *r)
{
	hl_assert(hl_range_flags(r) & HL_RANGE_ALLOCATED);
	__atomic_store_n(&r->flags, (uint8_t)(hl_range_flags(r) | HL_RANGE_CACHED),
			 __ATOMIC_RELAXED);
}
HL_INLINE void hl_range_unmark_cached(struct hl_range *r)
{
	__atomic_store_n(&r->flags, (uint8_t)(hl_range_flags(r) & ~HL_RANGE_CACHED),
			 __ATOMIC_RELAXED);
}

/* The thread that holds a range (the program's block it is freeing or
 * handing out) sets or clears HL_RANGE_CANARY or HL_RANGE_QUARANTINED: the
 * same single-writer rule as CACHED. */
HL_INLINE void hl_range_mark(struct hl_range *r, uint8_t bit)
{
	__atomic_store_n(&r->flags, (uint8_t)(hl_range_flags(r) | bit), __ATOMIC_RELAXED);
}
HL_INLINE void hl_range_unmark(struct hl_range *r, uint8_t bit)
{
	__atomic_store_n(&r->flags, (uint8_t)(hl_range_flags(r) & ~bit), __ATOMIC_RELAXED);
}

/* The owner stores flags it read with hl_range_flags and changed (free's
 * fast path: one load of the byte for its tests and its update). */
HL_INLINE void hl_range_set_flags(struct hl_range *r, uint8_t flags)
{
	__atomic_store_n(&r->flags, flags, __ATOMIC_RELAXED);
}

/* HL_RANGE_CXX for a block of allocation kind `kind` (wire.h), else 0. */
HL_INLINE uint8_t hl_range_family_flag(unsigned kind)
{
	/* One shift and mask on every allocation instead of four compares. */
	enum {
		CXX_KINDS = 1u << HL_KIND_NEW | 1u << HL_KIND_NEW_ARRAY | 1u << HL_KIND_NEW_ALIGNED |
			    1u << HL_KIND_NEW_ARRAY_ALIGNED,
	};
	_Static_assert(HL_RANGE_CXX == 0x80u && HL_KIND_COUNT <= 16, "family flag arithmetic");
	return (uint8_t)(((CXX_KINDS >> (kind & 15u)) & 1u) << 7);
}

/* The calling thread hands a range it holds (out of its cache, or fresh)
 * to the program as a block of `kind`: not cached, its family flag set. */
HL_INLINE void hl_range_hand_out(struct hl_range *r, unsigned kind)
{
	hl_range_set_flags(r, (uint8_t)((hl_range_flags(r) & ~(HL_RANGE_CACHED | HL_RANGE_CXX)) |
					hl_range_family_flag(kind)));
}

/* ---- block state: the one spelling of each -------------------------------- */

#define HL_RANGE_NOT_LIVE (HL_RANGE_CACHED | HL_RANGE_QUARANTINED | HL_RANGE_SENTINEL)

/* The program holds it: handed out, not given back in any way. */
HL_INLINE bool hl_block_flags_live(uint8_t flags)
{
	return (flags & (HL_RANGE_ALLOCATED | HL_RANGE_NOT_LIVE)) == HL_RANGE_ALLOCATED;
}
HL_INLINE bool hl_block_is_live(const struct hl_range *r)
{
	return hl_block_flags_live(hl_range_flags(r));
}

/* Live, and of the C family (malloc, calloc, realloc, memalign, ...): a
 * block free() takes. One test of the flags. */
HL_INLINE bool hl_block_flags_live_c(uint8_t flags)
{
	return (flags & (HL_RANGE_ALLOCATED | HL_RANGE_NOT_LIVE | HL_RANGE_CXX)) ==
	       HL_RANGE_ALLOCATED;
}

/* Free in its arena, filed in a size class (or a spare segment's range). */
HL_INLINE bool hl_block_is_free(const struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_ALLOCATED) == 0;
}

/* Ready for reuse in a thread cache: the arena counts it allocated. */
HL_INLINE bool hl_block_is_cached(const struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_CACHED) != 0;
}

/* Freed by the program and held back from reuse. */
HL_INLINE bool hl_block_is_quarantined(const struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_QUARANTINED) != 0;
}

/* Guard bytes (checks=full) fill the range from the block's end to its
 * usable end: a live block allocated under checks=full. */
HL_INLINE bool hl_block_is_guarded(const struct hl_range *r)
{
	return (hl_range_flags(r) & HL_RANGE_CANARY) != 0;
}

/* ---- block-start map ------------------------------------------------------ */

HL_INLINE uint64_t *hl_blockmap_of(uintptr_t segment)
{
	return (uint64_t *)(segment + sizeof(struct hl_segment));
}

/* Granule index of address p in its segment. */
HL_INLINE uintptr_t hl_blockmap_granule(const void *p)
{
	return ((uintptr_t)p & (HL_SEGMENT_SIZE - 1)) / HL_ALIGN;
}

/* Whether a range's user data starts at p, which lies in a segment. */
HL_INLINE bool hl_blockmap_test(const void *p)
{
	uintptr_t g = hl_blockmap_granule(p);
	const uint64_t *map = hl_blockmap_of((uintptr_t)p & ~(uintptr_t)(HL_SEGMENT_SIZE - 1));
	return (__atomic_load_n(&map[g / 64], __ATOMIC_RELAXED) >> (g % 64)) & 1u;
}

/* Range r now starts where it is (it was cut from a larger one); arena lock
 * held. No range started there before: the bit was clear. */
HL_INLINE void hl_blockmap_set_locked(const struct hl_range *r)
{
	hl_assert(!hl_blockmap_test(r + 1));
	uintptr_t g = hl_blockmap_granule(r + 1);
	uint64_t *word = &hl_blockmap_of((uintptr_t)r & ~(uintptr_t)(HL_SEGMENT_SIZE - 1))[g / 64];
	__atomic_store_n(word, *word | (uint64_t)1 << (g % 64), __ATOMIC_RELAXED);
}

/* Range r was merged into its left neighbour; arena lock held. A range
 * started there: the bit was set. */
HL_INLINE void hl_blockmap_clear_locked(const struct hl_range *r)
{
	hl_assert(hl_blockmap_test(r + 1));
	uintptr_t g = hl_blockmap_granule(r + 1);
	uint64_t *word = &hl_blockmap_of((uintptr_t)r & ~(uintptr_t)(HL_SEGMENT_SIZE - 1))[g / 64];
	__atomic_store_n(word, *word & ~((uint64_t)1 << (g % 64)), __ATOMIC_RELAXED);
}

/* The range whose bytes (header included) contain `address`, which lies in a
 * segment past its map, or NULL if none does (the address is in the segment
 * header or the map). A search down the map: for the leak scan's "which
 * block holds this pointer" and for misuse reports. Exact with the arena's
 * lock held. */
struct hl_range *hl_blockmap_find(const void *address);

#endif /* HL_BLOCK_H */
