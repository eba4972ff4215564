/*
 * libhook/bins.c: an arena's free ranges in TLSF size classes.
 *
 * Classes below 1 KiB are exact 16-byte steps; above, each power of two is
 * split into 8 (types.h). A free range is filed under the class its size
 * rounds down to; a request looks from the class its size rounds up to, so
 * the first range found always fits. The bitmap makes that search two or
 * three bit scans instead of a list walk (the seeds' weakness).
 */
#include "heap.h"

static struct hl_free_links *links_of(struct hl_range *r)
{
	return (struct hl_free_links *)hl_range_data(r);
}

/* A range about to be filed is free, whole, and has no free neighbour (free
 * coalesces both ways, so two free ranges never touch). */
static bool range_is_fileable(struct hl_range *r)
{
	return hl_block_is_free(r) && r->size >= HL_RANGE_MIN && r->size % HL_ALIGN == 0 &&
	       hl_range_check_ok(r) && !hl_block_is_free(hl_range_next(r)) &&
	       ((hl_range_flags(r) & HL_RANGE_MAPPING_START) || !hl_block_is_free(hl_range_prev(r)));
}

void hl_bins_insert_locked(struct hl_arena *a, struct hl_range *r)
{
	hl_assert_held(&a->lock);
	hl_assert(range_is_fileable(r));
	unsigned cls = hl_class_floor(r->size);
	struct hl_range *head = a->free_heads[cls];
	links_of(r)->next = head;
	links_of(r)->prev = NULL;
	if (head)
		links_of(head)->prev = r;
	a->free_heads[cls] = r;
	a->bitmap[cls / 64] |= 1ull << (cls % 64);
}

void hl_bins_remove_locked(struct hl_arena *a, struct hl_range *r)
{
	hl_assert_held(&a->lock);
	unsigned cls = hl_class_floor(r->size);
	struct hl_range *next = links_of(r)->next;
	struct hl_range *prev = links_of(r)->prev;
	/* filed: free, and either first of its class or linked from its prev */
	hl_assert(hl_block_is_free(r) && (prev ? links_of(prev)->next == r : a->free_heads[cls] == r));
	if (next)
		links_of(next)->prev = prev;
	if (prev) {
		links_of(prev)->next = next;
	} else {
		a->free_heads[cls] = next;
		if (next == NULL)
			a->bitmap[cls / 64] &= ~(1ull << (cls % 64));
	}
}

/* Smallest class whose every member is at least `size` bytes. */
static unsigned class_ceil(size_t size)
{
	return hl_class_floor(hl_class_round_up(size));
}

/* First non-empty class >= cls, or HL_TLSF_CLASSES. */
static unsigned first_nonempty(struct hl_arena *a, unsigned cls)
{
	unsigned word = cls / 64;
	if (word >= HL_TLSF_WORDS)
		return HL_TLSF_CLASSES;
	uint64_t bits = a->bitmap[word] & (~0ull << (cls % 64));
	while (bits == 0) {
		if (++word == HL_TLSF_WORDS)
			return HL_TLSF_CLASSES;
		bits = a->bitmap[word];
	}
	return word * 64 + (unsigned)__builtin_ctzll(bits);
}

struct hl_range *hl_bins_take_locked(struct hl_arena *a, size_t size)
{
	hl_assert_held(&a->lock);
	unsigned cls = first_nonempty(a, class_ceil(size));
	if (cls >= HL_TLSF_CLASSES)
		return NULL;
	struct hl_range *r = a->free_heads[cls];
	hl_assert(r != NULL && r->size >= size);
	hl_bins_remove_locked(a, r);
	return r;
}
