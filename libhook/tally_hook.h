/*
 * libhook/tally_hook.h: counting in the hook ("Counting in the hook",
 * wire.h): the tracking calls' inline path while a connected process has
 * one thread, in place of the ALLOC, FREE and REALLOC events. tally.c has
 * the rest. Never installed.
 *
 * Only the process's one thread counts, so the tally needs no lock and no
 * atomic: it ends (hl_tally_hand_over) before a second thread exists, and a
 * thread that starts unseen ends it at its first allocation (cache.c).
 */
#ifndef HL_TALLY_HOOK_H
#define HL_TALLY_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "heapledger/tally.h"
#include "internal.h"

/* What each event reads, on the process's wipe-on-fork page (process.c):
 * a copy of the process made by a raw clone, which shares the area's
 * pages with us but runs no fork handler, finds mode OFF and sends events,
 * as a fork child does. A vfork child runs in our memory and on our heap:
 * what it allocates and frees is counted with ours, as its events would
 * have gone into our buffers. */
enum hl_tally_mode {
	HL_TALLY_MODE_OFF, /* events are sent */
	HL_TALLY_MODE_ON,  /* the tally counts */
};
struct hl_tally_hot {
	uint32_t mode;   /* enum hl_tally_mode */
	uint32_t logged; /* stack ids below this have their frames in the log */
	struct hl_tally_view view;
};
_Static_assert(sizeof(struct hl_tally_hot) <= HL_PROCESS_OWN_PAGE_BYTES, "fits the page");
/* A zeroed default until counting begins (hidden: read directly). */
extern __attribute__((visibility("hidden"))) struct hl_tally_hot *hl_tally_hot;
#define hl_tally_on (hl_tally_hot->mode == HL_TALLY_MODE_ON)
#define hl_tally_view (hl_tally_hot->view)
#define hl_tally_logged (hl_tally_hot->logged)

/* The tracking calls' test: count this event? */
HL_INLINE bool hl_tally_counts(void)
{
	return hl_tally_hot->mode == HL_TALLY_MODE_ON;
}
/* Counting stops for good (the connection is gone). */
void hl_tally_stop(void);

/* Starts counting into the shared area's tally for a connection that is
 * about to say HELLO; false: events are sent (a fork child, threads, the
 * option off, no shared area). */
bool hl_tally_begin(uint32_t origin);
/* Ends counting before a second thread exists, or when the tally is full:
 * TALLY (HANDED), then the heap's blocks, then events. No-op when off. */
void hl_tally_hand_over(void);
/* Right after HELLO: TALLY (COUNTING), whose batch is the reporter's first
 * clock reading. */
void hl_tally_started(void);
/* At exit, before the LIVE set: TALLY (FINAL), in the buffers the exit
 * sends first. */
void hl_tally_finish(void);
/* A thread the hook did not see start allocates while the tally counts. */
void hl_tally_unseen_thread(void);
/* A fork child counts nothing (its area is new). */
void hl_tally_fork_child(void);

/* A stack just interned (the stack table's lock held): its frames into
 * the tally's stack log when events are sent, so a process killed before
 * its STACK record went out is reported with it (while the tally counts, a
 * stack is logged at its first count instead). */
struct hl_stack;
void hl_tally_log_interned(const struct hl_stack *s);

/* The slow paths: new stack ids (their frames logged; false: handed over,
 * send the event), a timeline sample due. */
bool hl_tally_new_stacks(uint32_t id);
void hl_tally_sample_due(void);

/* One allocation counted; false when the tally ended (the caller sends it). */
HL_INLINE bool hl_tally_take_alloc(uint64_t address, uint64_t size, uint32_t id, unsigned kind)
{
	if (hl_unlikely(id >= hl_tally_logged) && !hl_tally_new_stacks(id))
		return false;
	hl_tally_alloc(&hl_tally_view, address, size, id, kind, false);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
	return true;
}

/* A block of size bytes from stack id was counted: one made while tracking
 * was suspended (by a nested call) was not, nor is a stack id the tally
 * never counted (HL_TALLY_STACKS: none). */
HL_INLINE bool hl_tally_holds(uint32_t id, uint64_t size)
{
	return id < hl_tally_logged && ((hl_tally_view.stacks[id].live_blocks != 0) &
					(hl_tally_view.stacks[id].live_bytes >= size));
}

/* The block at address freed; one the tally does not hold has nothing to
 * take away: the free alone is counted, as the reporter counts a free
 * whose allocation it never saw (finish.c finds it unmatched from the
 * totals). */
HL_INLINE void hl_tally_block_freed(uint64_t address, uint64_t size, uint32_t id)
{
	if (hl_likely(hl_tally_holds(id, size))) {
		hl_tally_free(&hl_tally_view, address, size, id);
	} else {
		hl_tally_view.t->frees++;
		hl_tally_view.t->last_alloc = 0;
	}
}

/* One free of the block at address, size bytes from stack id. */
HL_INLINE void hl_tally_take_free(uint64_t address, uint64_t size, uint32_t id)
{
	hl_tally_block_freed(address, size, id);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
}

/* The heap's blocks for which known(address) is false (NULL: all), each
 * counted as an allocation: the blocks from before the connection. */
void hl_tally_heap_blocks(bool (*known)(uint64_t address));

/* A realloc: the old block (old_size bytes from old_id) freed and the new
 * one made by realloc, one event; false when the tally ended. */
HL_INLINE bool hl_tally_take_realloc(uint64_t old_address, uint64_t old_size, uint32_t old_id,
				     uint64_t address, uint64_t size, uint32_t id)
{
	if (hl_unlikely(id >= hl_tally_logged) && !hl_tally_new_stacks(id))
		return false;
	hl_tally_block_freed(old_address, old_size, old_id);
	hl_tally_alloc(&hl_tally_view, address, size, id, HL_KIND_MALLOC, true);
	if (hl_unlikely(hl_tally_counted(hl_tally_view.t)))
		hl_tally_sample_due();
	return true;
}

#endif
