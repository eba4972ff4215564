/*
 * libhook/delay.c: reuse_delay, freed blocks held back from reuse in the
 * default mode.
 *
 * valgrind hands a freed block out again only after --freelist-vol (20 MB)
 * of frees, so a stale pointer the program keeps (in a buffer it still
 * reaches, or in one it lost) points at freed memory and reaches nothing. A
 * thread cache that hands the block just freed to the next malloc of its
 * size puts a new block under the stale pointer, and the leak scan then
 * calls a lost block still reachable or indirectly lost where valgrind says
 * definitely lost. So each thread holds its last frees back: a FIFO ring of
 * ranges bounded in range bytes (reuse_delay KiB) and in count (one block
 * per HL_DELAY_BYTES_PER_SLOT bytes of the bound); a range pushed out goes
 * on to its bin, or home to its arena, as a free does without the delay.
 *
 * Held ranges are already freed for everything else: counted, marked
 * HL_RANGE_CACHED (not live for walks, scans and free: a second free is a
 * double free), still allocated for their arena. Only ranges the thread
 * caches serve (up to HL_CACHE_MAX bytes) are held; realloc's moves go to
 * the arena as before, and bigger blocks to the arena or the mapping cache.
 * checks=full has its quarantine instead, which fills and checks as well.
 *
 * The ring is the thread's own (no lock); it is emptied into the bins when
 * the thread's cache is destroyed, and by malloc_trim in the calling thread
 * (which asks for memory back: held ranges of other arenas would keep their
 * segments mapped). In a fork child this thread's ring stays
 * (its ranges are this process's too); the other threads' are abandoned with
 * their caches, as their bins are.
 */
#include "heap.h"

/* The ring's capacity: one slot per this many bytes of the bound (blocks
 * smaller on average are held by count, not by bytes), within the limits. */
#define HL_DELAY_BYTES_PER_SLOT 64u
#define HL_DELAY_SLOTS_MIN 16u
#define HL_DELAY_SLOTS_MAX 65536u

static uint64_t delay_bytes; /* the bound; 0: off */
static uint32_t delay_slots;

void hl_delay_init(void)
{
	if (hl_checks_redzone != 0 || hl_options.reuse_delay_kib == 0)
		return; /* checks=full: the quarantine holds freed blocks back */
	delay_bytes = (uint64_t)hl_options.reuse_delay_kib << 10;
	uint64_t want = delay_bytes / HL_DELAY_BYTES_PER_SLOT;
	uint32_t slots = HL_DELAY_SLOTS_MIN;
	while (slots < want && slots < HL_DELAY_SLOTS_MAX)
		slots *= 2;
	delay_slots = slots;
}

void hl_delay_attach(struct hl_thread_cache *tc)
{
	struct hl_reuse_delay *d = &tc->delay;
	if (delay_bytes == 0 || d->ring != NULL)
		return;
	struct hl_range **ring = hl_meta_alloc((size_t)delay_slots * sizeof(*ring));
	if (ring == NULL)
		return; /* no memory for it: blocks are reused at once */
	d->mask = delay_slots - 1;
	d->head = d->count = 0;
	d->bytes = 0;
	d->ring = ring;
}

/* The oldest held range, taken out. */
static struct hl_range *ring_pop(struct hl_reuse_delay *d)
{
	struct hl_range *r = d->ring[d->head];
	d->head = (d->head + 1) & d->mask;
	d->count--;
	d->bytes -= r->size;
	return r;
}

void hl_delay_push(struct hl_thread_cache *tc, struct hl_range *r)
{
	struct hl_reuse_delay *d = &tc->delay;
	if (d->count > d->mask)
		hl_cache_put(tc, ring_pop(d));
	d->ring[(d->head + d->count) & d->mask] = r;
	d->count++;
	d->bytes += r->size;
	while (d->bytes > delay_bytes)
		hl_cache_put(tc, ring_pop(d));
}

void hl_delay_flush(struct hl_thread_cache *tc)
{
	struct hl_reuse_delay *d = &tc->delay;
	while (d->count != 0)
		hl_cache_put(tc, ring_pop(d));
}

void hl_delay_detach(struct hl_thread_cache *tc)
{
	struct hl_reuse_delay *d = &tc->delay;
	if (d->ring == NULL)
		return;
	hl_delay_flush(tc);
	hl_meta_free(d->ring, (size_t)(d->mask + 1) * sizeof(*d->ring));
	d->ring = NULL;
}
