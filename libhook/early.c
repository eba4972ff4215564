/*
 * libhook/early.c: allocations made before the hook's constructor runs.
 *
 * Library constructors that run before ours (libstdc++'s exception pool,
 * libraries of tar, mkdir, jq...) allocate through our malloc already. They
 * used to be untracked until our constructor, then sent as a walk of the
 * heap: their blocks had no stack ("(no stack captured)"), and blocks they
 * allocated and freed before it were not counted at all. Now tracking is on
 * from the first call: stack capture is initialised on first use (with the
 * option defaults: the environment is read by the constructor, and getenv
 * is not reliable before libc's own initialisation), each block gets its
 * stack in its header, and every event is written to a fixed log in the
 * hook's static memory. Once connected, the constructor sends the log as
 * ordinary events, then ALLOCs for the heap's blocks the log does not hold
 * live (served re-entrantly, untracked): so the reporter counts every early
 * allocation and free and still starts from the exact heap.
 *
 * Bounds: HL_EARLY_EVENTS events. Beyond them the log is dropped and the
 * constructor sends the heap walk alone, as before (the blocks still carry
 * their stacks; early frees go uncounted). Threads made before our
 * constructor are rare; the log takes an index atomically all the same.
 */
#include <stdatomic.h>
#include <string.h>

#include "tally_hook.h"
#include "track.h"

#define HL_EARLY_EVENTS 4096u
#define HL_EARLY_SET (2 * HL_EARLY_EVENTS) /* open addressing, power of two */

enum early_op { EARLY_ALLOC = 1, EARLY_FREE, EARLY_REALLOC };

struct early_event {
	uint64_t address;     /* the block (the old one for a realloc) */
	uint64_t new_address; /* realloc: where it is now */
	uint64_t size;
	uint32_t stack_id;
	uint8_t op;           /* enum early_op */
	uint8_t kind;         /* enum hl_alloc_kind */
	_Atomic uint8_t done; /* written in full */
};

static struct early_event early_log[HL_EARLY_EVENTS];
static _Atomic uint32_t early_count; /* above HL_EARLY_EVENTS: overflowed */
static _Atomic uint64_t early_past; /* events past the bound */
static uint64_t early_live[HL_EARLY_SET]; /* live per the log; 0 = empty slot */

void hl_early_record(unsigned op, uint64_t address, uint64_t new_address, uint64_t size,
		     uint32_t stack_id, unsigned kind)
{
	uint32_t i = atomic_fetch_add(&early_count, 1);
	if (i >= HL_EARLY_EVENTS) {
		atomic_store(&early_count, HL_EARLY_EVENTS + 1);
		atomic_fetch_add(&early_past, 1);
		return;
	}
	struct early_event *e = &early_log[i];
	e->address = address;
	e->new_address = new_address;
	e->size = size;
	e->stack_id = stack_id;
	e->op = (uint8_t)op;
	e->kind = (uint8_t)kind;
	atomic_store_explicit(&e->done, 1, memory_order_release);
}

static size_t live_slot(uint64_t address)
{
	size_t i = (size_t)((address >> 4) * 0x9e3779b97f4a7c15u >> 40) & (HL_EARLY_SET - 1);
	while (early_live[i] != 0 && early_live[i] != address)
		i = (i + 1) & (HL_EARLY_SET - 1);
	return i;
}

/* Removal in linear probing: re-place the entries after the hole. */
static void live_remove(uint64_t address)
{
	size_t i = live_slot(address);
	if (early_live[i] == 0)
		return;
	early_live[i] = 0;
	for (size_t j = (i + 1) & (HL_EARLY_SET - 1); early_live[j] != 0;
	     j = (j + 1) & (HL_EARLY_SET - 1)) {
		uint64_t a = early_live[j];
		early_live[j] = 0;
		early_live[live_slot(a)] = a;
	}
}

static void live_add(uint64_t address)
{
	early_live[live_slot(address)] = address;
}

static bool logged_live(uint64_t address)
{
	return early_live[live_slot(address)] == address;
}

/* The size and stack of the block the log's event i frees (the latest
 * allocation or realloc before it that made `address`); false: none. */
static bool logged_block(uint32_t i, uint64_t address, uint64_t *size, uint32_t *stack_id)
{
	while (i-- > 0) {
		const struct early_event *e = &early_log[i];
		if ((e->op == EARLY_ALLOC && e->address == address) ||
		    (e->op == EARLY_REALLOC && e->new_address == address)) {
			*size = e->size;
			*stack_id = e->stack_id;
			return true;
		}
	}
	return false;
}

/* Event i counted by the tally; false once the tally has ended (the
 * event is then sent). */
static bool early_counted(uint32_t i, const struct early_event *e)
{
	uint64_t size = 0;
	uint32_t stack_id = 0;
	if (!hl_tally_counts())
		return false;
	switch (e->op) {
	case EARLY_ALLOC:
		return hl_tally_take_alloc(e->address, e->size, e->stack_id, e->kind);
	case EARLY_FREE:
		if (!logged_block(i, e->address, &size, &stack_id))
			stack_id = HL_TALLY_STACKS; /* no block to take away */
		return hl_tally_take_free(e->address, size, stack_id);
	case EARLY_REALLOC:
		if (!logged_block(i, e->address, &size, &stack_id))
			stack_id = HL_TALLY_STACKS; /* no block to take away */
		return hl_tally_take_realloc(e->address, size, stack_id, e->new_address, e->size,
					     e->stack_id);
	}
	return true;
}

bool hl_early_send(void)
{
	uint32_t n = atomic_load(&early_count);
	if (n > HL_EARLY_EVENTS) {
		/* The heap walk still gives the exact live set, but the log's
		 * allocations and frees go uncounted: say how many. */
		hl_emit_count_dropped(HL_EARLY_EVENTS + atomic_load(&early_past));
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct early_event *e = &early_log[i];
		if (!atomic_load_explicit(&e->done, memory_order_acquire))
			continue; /* a thread is still writing it: the walk has its block */
		bool counted = early_counted(i, e);
		switch (e->op) {
		case EARLY_ALLOC:
			if (!counted)
				hl_emit_alloc(e->address, e->size, e->stack_id, e->kind);
			live_add(e->address);
			break;
		case EARLY_FREE:
			if (!counted)
				hl_emit_free(e->address, e->kind);
			live_remove(e->address);
			break;
		case EARLY_REALLOC:
			if (!counted)
				hl_emit_realloc(e->address, e->new_address, e->size, e->stack_id);
			live_remove(e->address);
			live_add(e->new_address);
			break;
		}
	}
	/* The log's events go first, then the blocks it does not know. */
	hl_emit_flush_all();
	hl_emit_send_heap_blocks_except(logged_live);
	return true;
}
