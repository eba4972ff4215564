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
 * definitely lost. So each thread holds its last reuse_delay frees of blocks
 * below 1 KiB back (ranges below HL_TLSF_SMALL: a ring of that many slots,
 * rounded up to a power of two), and its last reuse_delay / 8 frees of blocks
 * of 1 KiB up to HL_DELAY_BLOCK_MAX bytes (a second ring): the block freed
 * takes the oldest one's slot, and the oldest goes on to its bin, or home
 * to its arena, as a free does without the delay. A thread holds at most
 * slots x (1 KiB + 8 KiB / 8) bytes: 512 KiB at the default of 256. Bigger
 * blocks held as long cost as much more memory: one ring for all sizes up
 * to 8 KiB made the realloc benchmark's peak RSS 18% higher (its finished
 * string builders, 2-6 KiB each, waited in it), the two 1.5% (bench/README.md).
 *
 * Free's inline path (fastpath.h) picks the ring by size and does the swap
 * itself: about 20 instructions, no call. A FIFO bounded in bytes cost more
 * (the sizes summed and compared on every free, and calls out to fill and
 * trim it): churn's instructions grew 6% with stacks, 15% without; this
 * ring's figures are in bench/README.md.
 *
 * Held ranges are already freed for everything else: counted, marked
 * HL_RANGE_CACHED (not live for walks, scans and free: a second free is a
 * double free), still allocated for their arena. Bigger blocks, realloc's
 * moves (to the arena, as before) and large blocks are not held. checks=full
 * has its quarantine instead, which fills and checks as well.
 *
 * The ring is the thread's own (no lock). It is emptied into the bins when
 * the thread's cache is destroyed, and by malloc_trim in the calling thread
 * (which asks for memory back: held ranges of other arenas would keep their
 * segments mapped). In a fork child this thread's ring stays (its ranges are
 * this process's too); the other threads' are abandoned with their caches,
 * as their bins are.
 */
#include "heap.h"

#define HL_DELAY_SLOTS_MAX 65536u

static uint32_t delay_slots; /* of the ring for small ranges; 0: off */

void hl_delay_init(void)
{
	if (hl_checks_redzone != 0 || hl_options.reuse_delay == 0)
		return; /* checks=full: the quarantine holds freed blocks back */
	uint32_t slots = 1;
	while (slots < hl_options.reuse_delay && slots < HL_DELAY_SLOTS_MAX)
		slots *= 2;
	delay_slots = slots;
}

static void ring_attach(struct hl_reuse_delay *d, uint32_t slots)
{
	if (d->ring != NULL)
		return;
	struct hl_range **ring = hl_meta_alloc((size_t)slots * sizeof(*ring));
	if (ring == NULL)
		return; /* no memory for it: blocks are reused at once */
	__builtin_memset(ring, 0, (size_t)slots * sizeof(*ring));
	d->mask = slots - 1;
	d->pos = 0;
	d->ring = ring;
}

void hl_delay_attach(struct hl_thread_cache *tc)
{
	if (delay_slots == 0)
		return;
	ring_attach(&tc->delay[0], delay_slots);
	uint32_t big = delay_slots / HL_DELAY_BIG_SHARE;
	ring_attach(&tc->delay[1], big ? big : 1);
}

void hl_delay_push(struct hl_thread_cache *tc, struct hl_range *r)
{
	struct hl_reuse_delay *d = &tc->delay[r->size >= HL_TLSF_SMALL];
	struct hl_range *old = d->ring[d->pos];
	d->ring[d->pos] = r;
	d->pos = (d->pos + 1) & d->mask;
	if (old != NULL)
		hl_cache_put(tc, old);
}

void hl_delay_flush(struct hl_thread_cache *tc)
{
	for (unsigned k = 0; k < 2; k++) {
		struct hl_reuse_delay *d = &tc->delay[k];
		for (uint32_t i = 0; d->ring != NULL && i <= d->mask; i++) {
			struct hl_range *r = d->ring[i];
			d->ring[i] = NULL;
			if (r != NULL)
				hl_cache_put(tc, r);
		}
	}
}

void hl_delay_free_ring(struct hl_thread_cache *tc)
{
	for (unsigned k = 0; k < 2; k++) {
		struct hl_reuse_delay *d = &tc->delay[k];
		if (d->ring != NULL)
			hl_meta_free(d->ring, (size_t)(d->mask + 1) * sizeof(*d->ring));
		d->ring = NULL;
	}
}

void hl_delay_each(struct hl_thread_cache *tc, void (*fn)(struct hl_range *r, void *arg), void *arg)
{
	for (unsigned k = 0; k < 2; k++) {
		struct hl_reuse_delay *d = &tc->delay[k];
		for (uint32_t i = 0; d->ring != NULL && i <= d->mask; i++)
			if (d->ring[i] != NULL)
				fn(d->ring[i], arg);
	}
}
