/*
 * libhook/segment.c: 4 MiB segments, the mappings that ranges are cut from.
 *
 * A segment belongs to one arena for life. When all its ranges are free
 * again it is either kept as the arena's one spare (so a program that
 * frees and re-allocates a burst does not pay for mmap and page faults each
 * time) or unmapped, so the program's RSS falls after it frees.
 */
#include "heap.h"

/* Bytes of the sentinel header that closes every segment. */
#define HL_SENTINEL_BYTES sizeof(struct hl_range)
#define HL_SPARE_RESIDENT ((size_t)1 << 20)

static struct hl_range *first_range(struct hl_segment *seg)
{
	return (struct hl_range *)(seg + 1);
}

static void segment_link_locked(struct hl_arena *a, struct hl_segment *seg)
{
	seg->prev = NULL;
	seg->next = a->segments;
	if (a->segments)
		a->segments->prev = seg;
	a->segments = seg;
}

static void segment_unlink_locked(struct hl_arena *a, struct hl_segment *seg)
{
	if (seg->prev)
		seg->prev->next = seg->next;
	else
		a->segments = seg->next;
	if (seg->next)
		seg->next->prev = seg->prev;
}

/* Cuts a fresh or spare segment into one free range and a sentinel. */
static struct hl_range *segment_format(struct hl_segment *seg)
{
	struct hl_range *r = first_range(seg);
	uint32_t size = (uint32_t)(HL_SEGMENT_SIZE - sizeof(*seg) - HL_SENTINEL_BYTES);
	struct hl_range *sentinel = (struct hl_range *)((char *)r + size);
	sentinel->size = 0;
	sentinel->flags = HL_RANGE_ALLOCATED | HL_RANGE_SENTINEL;
	r->prev_size = 0;
	r->flags = HL_RANGE_MAPPING_START;
	hl_range_set_size(r, size);
	return r;
}

struct hl_range *hl_segment_new_locked(struct hl_arena *a)
{
	struct hl_segment *seg = a->spare;
	if (seg != NULL) {
		a->spare = NULL;
		return segment_format(seg);
	}
	seg = hl_os_map_aligned(HL_SEGMENT_SIZE, HL_SEGMENT_SIZE);
	if (seg == NULL)
		return NULL;
	seg->magic = HL_SEGMENT_MAGIC ^ (uintptr_t)seg;
	seg->untouched = (char *)(seg + 1);
	seg->arena = a;
	segment_link_locked(a, seg);
	atomic_fetch_add_explicit(&hl_mapped_bytes, HL_SEGMENT_SIZE, memory_order_relaxed);
	hl_registry_mark(seg, HL_SEGMENT_SIZE, HL_REGION_SEGMENT);
	return segment_format(seg);
}

bool hl_segment_is_whole(struct hl_range *r)
{
	return (r->flags & HL_RANGE_MAPPING_START) &&
	       (hl_range_next(r)->flags & HL_RANGE_SENTINEL);
}

void hl_segment_release_locked(struct hl_arena *a, struct hl_range *r)
{
	struct hl_segment *seg = hl_segment_of(r);
	if (a->spare == NULL) {
		/* Kept outside the bins until needed; its first MiB stays
		 * resident for the next burst, the rest goes back to the OS. */
		a->spare = seg;
		hl_os_discard((char *)seg + HL_SPARE_RESIDENT, HL_SEGMENT_SIZE - HL_SPARE_RESIDENT);
		if (seg->untouched > (char *)seg + HL_SPARE_RESIDENT)
			seg->untouched = (char *)seg + HL_SPARE_RESIDENT;
		return;
	}
	segment_unlink_locked(a, seg);
	hl_registry_clear(seg, HL_SEGMENT_SIZE);
	atomic_fetch_sub_explicit(&hl_mapped_bytes, HL_SEGMENT_SIZE, memory_order_relaxed);
	hl_os_unmap(seg, HL_SEGMENT_SIZE);
}
