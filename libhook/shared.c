/*
 * libhook/shared.c: the shared event-buffer area, so a killed process's
 * buffered events still reach the reporter.
 *
 * Every thread's emit buffer (emit_events.c) is a slot of one memfd, mapped once
 * per process image and passed to the reporter with HELLO (wire.h, "Shared
 * event buffers", has the layout and the reporter's side). The descriptor
 * lives only from the area's creation to HELLO's send: the program's
 * descriptor table is as before once the hook returns, and the mapping
 * keeps the memory. The memfd is sealed so the reporter's mapping of it can
 * never fault on a shrunk file.
 *
 * The slot bitmap changes only under emit_conn.c's write_lock. A forked child
 * shares the parent's pages (MAP_SHARED survives fork), so its first act is
 * to put a memfd of its own at the same address (hl_shared_fork_child): the
 * forking thread's buffer keeps its address, its contents start over, and
 * the parent's slots are never written by the child. Threads beyond
 * HL_SHARED_SLOTS, or a process where the memfd cannot be made, get
 * private buffers (emit_events.c falls back to hl_meta_alloc): sent as before,
 * not recoverable after a kill. The area's header also tells why the hook
 * went on standalone (wire.h, enum hl_standalone), when the socket cannot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapledger/classes.h"
#include "heapledger/tally.h"
#include "track.h"

static struct hl_shared_area *area;  /* NULL until the first connection */
static size_t area_bytes;
static size_t tally_at;              /* the tally's offset: after the slots */
static uint32_t slot_bytes;
static bool area_shared;             /* backed by a memfd, not private pages */
static bool area_dead;               /* a fork child could not replace it: unused */
static int pending_fd = -1;          /* the memfd until HELLO carries it */
static uint64_t taken[(HL_SHARED_SLOTS + 63) / 64]; /* write_lock */

static void area_header(uint32_t data_offset, uint32_t data_bytes, uint32_t delta_offset)
{
	*area = (struct hl_shared_area){
		.magic = HL_SHARED_MAGIC, .version = HL_SHARED_VERSION,
		.slots = 0, .first_slot = slot_bytes,
		.slot_bytes = slot_bytes, .data_offset = data_offset,
		.data_bytes = data_bytes, .tally_offset = tally_at,
		.tally_bytes = area_bytes - tally_at, .delta_offset = delta_offset,
		.delta_bytes = (uint32_t)sizeof(struct hl_tally_delta) };
}

/* A sealed memfd of area_bytes, mapped at `at` (or anywhere); -1 if not. */
static int memfd_map(void *at, void **out)
{
	int saved = errno;
	int fd = memfd_create("heapledger-events", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto out;
	if (ftruncate(fd, (off_t)area_bytes) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (*out = hl_os_map_file_shared(fd, area_bytes, at)) == NULL) {
		close(fd);
		fd = -1;
	}
out:
	errno = saved;
	return fd;
}

int hl_shared_fd_take(size_t buffer_bytes, uint32_t data_offset, uint32_t data_bytes,
		      uint32_t delta_offset)
{
	void *p = NULL;
	int fd = pending_fd;
	pending_fd = -1;
	if (area != NULL)
		return fd; /* a fork child's, made by hl_shared_fork_child */
	size_t page = hl_os_page_size();
	slot_bytes = (uint32_t)((buffer_bytes + page - 1) & ~(page - 1));
	tally_at = (size_t)slot_bytes * (HL_SHARED_SLOTS + 1);
	/* The tally's pages are touched only as counting reaches them. */
	area_bytes = tally_at + ((HL_TALLY_BYTES + page - 1) & ~(page - 1));
	fd = memfd_map(NULL, &p);
	if (fd < 0)
		return -1;
	area = p;
	area_shared = true;
	area_header(data_offset, data_bytes, delta_offset);
	return fd;
}

void *hl_shared_slot_take_locked(void)
{
	hl_assert(hl_emit_lock_is_held());
	if (area == NULL || area_dead)
		return NULL;
	for (uint32_t w = 0; w < sizeof(taken) / sizeof(taken[0]); w++) {
		if (~taken[w] == 0)
			continue;
		uint32_t bit = (uint32_t)__builtin_ctzll(~taken[w]);
		uint32_t i = w * 64 + bit;
		if (i >= HL_SHARED_SLOTS)
			return NULL;
		taken[w] |= 1ull << bit;
		/* The reader looks at slots below `slots` only: one it reads
		 * that was never written is a page the kernel must allocate
		 * and zero in the memfd (255 a process, 1 MiB, at each exec). */
		if (i >= area->slots)
			__atomic_store_n(&area->slots, i + 1, __ATOMIC_RELEASE);
		return (char *)area + area->first_slot + (size_t)i * slot_bytes;
	}
	return NULL;
}

static bool slot_index(const void *p, uint32_t *i)
{
	uintptr_t first = (uintptr_t)area + slot_bytes;
	if (area == NULL || (uintptr_t)p < first ||
	    (uintptr_t)p >= first + (size_t)HL_SHARED_SLOTS * slot_bytes)
		return false;
	*i = (uint32_t)(((uintptr_t)p - first) / slot_bytes);
	return true;
}

bool hl_shared_slot_give_locked(void *slot)
{
	hl_assert(hl_emit_lock_is_held());
	uint32_t i;
	if (!slot_index(slot, &i))
		return false;
	if (area_dead)
		return true; /* the parent's pages: not ours to write */
	/* The pages stay: the next thread reuses them (LIFO keeps few touched). */
	((struct hl_shared_slot *)slot)->tid = 0;
	taken[i / 64] &= ~(1ull << (i % 64));
	return true;
}

bool hl_shared_fork_child(const void *keep)
{
	uint32_t keep_index;
	bool kept = keep != NULL && slot_index(keep, &keep_index);
	void *p = area;
	if (area == NULL || area_dead)
		return true;
	for (size_t w = 0; w < sizeof(taken) / sizeof(taken[0]); w++)
		taken[w] = 0;
	if (kept)
		taken[keep_index / 64] |= 1ull << (keep_index % 64);
	struct hl_shared_area header = *area;
	header.standalone = HL_STANDALONE_NONE; /* the parent's, not ours */
	pending_fd = memfd_map(area, &p);
	if (pending_fd < 0) {
		/* No memfd: private pages, never the parent's. */
		area_shared = false;
		if (!hl_os_map_private_at(area, area_bytes)) {
			area_dead = true; /* still the parent's pages */
			return false;
		}
	}
	header.ending = (struct hl_shared_ending){ 0 }; /* the parent's, were it written */
	header.unsent_inherited = 0;
	*area = header;
	return true;
}

void hl_shared_fd_drop(void)
{
	if (pending_fd >= 0) {
		int saved = errno;
		close(pending_fd);
		errno = saved;
	}
	pending_fd = -1;
}

bool hl_shared_is_shared(void)
{
	return area_shared;
}

void *hl_shared_tally(void)
{
	if (area == NULL || area_dead || !area_shared)
		return NULL;
	return (char *)area + tally_at;
}

_Static_assert(HL_LEAK_CLASS_COUNT <= HL_SHARED_CLASSES, "the ending holds every class");

void hl_shared_end_counts(bool scanned, const uint64_t *bytes, const uint64_t *blocks,
			  unsigned nclasses)
{
	if (area == NULL || area_dead || !area_shared)
		return;
	struct hl_shared_ending *e = &area->ending;
	for (unsigned c = 0; c < nclasses && c < HL_SHARED_CLASSES; c++) {
		e->bytes[c] = bytes[c];
		e->blocks[c] = blocks[c];
	}
	e->scanned = scanned;
	e->counted = 1;
}

void hl_shared_end(unsigned how, int status)
{
	if (area == NULL || area_dead || !area_shared)
		return;
	struct heapledger_stats stats;
	hl_stats_get(&stats);
	area->ending.in_use_bytes = stats.in_use_bytes;
	area->ending.in_use_blocks = stats.in_use_blocks;
	area->ending.allocs = stats.allocs;
	area->ending.frees = stats.frees;
	area->ending.bytes_allocated = stats.bytes_allocated;
	area->ending.peak_bytes = stats.peak_bytes;
	area->ending.how = how;
	area->ending.status = status;
	__atomic_store_n(&area->ending.ended, HL_SHARED_ENDED, __ATOMIC_RELEASE);
}

void hl_shared_note_standalone_locked(uint32_t why)
{
	hl_assert(hl_emit_lock_is_held());
	if (area != NULL && area_shared && !area_dead)
		__atomic_store_n(&area->standalone, why, __ATOMIC_RELEASE);
}

void hl_shared_note_unsent_inherited(uint64_t blocks)
{
	if (area != NULL && area_shared && !area_dead)
		__atomic_store_n(&area->unsent_inherited, blocks, __ATOMIC_RELEASE);
}
