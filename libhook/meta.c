/*
 * libhook/meta.c: the hook's private memory (stack tables, event buffers).
 *
 * Never the user heap: the program's leaks, counters and heap walks must not
 * see the hook's own data, and the hook must work while the user heap is
 * locked (fork, exit). Power-of-two classes from 16 bytes to
 * HL_META_SMALL_MAX, carved from 1 MiB chunks and recycled through per-class
 * free lists under one lock; bigger requests are mapped directly. Callers pass
 * the size back to hl_meta_free, so blocks need no header.
 */
#include <string.h>

#include "internal.h"
#include "lock.h"

#define HL_META_SMALL_MAX ((size_t)64 << 10)
#define HL_META_CHUNK ((size_t)1 << 20)
#define HL_META_CLASSES 13 /* 16 .. 64 KiB */

static struct hl_lock meta_lock = HL_LOCK_INIT;
static void *meta_free_lists[HL_META_CLASSES];
/* Every mapping meta memory lives in, so the leak scan never takes the
 * hook's tables for roots. Past HL_META_MAPS mappings the rest go
 * unlisted (the scan then reads them: more may look reachable). */
#define HL_META_MAPS 1024
static struct { void *p; size_t bytes; } meta_maps[HL_META_MAPS];
static char *meta_bump;
static size_t meta_bump_left;

static unsigned meta_class_of(size_t bytes)
{
	unsigned cls = 0;
	while (((size_t)16 << cls) < bytes)
		cls++;
	return cls;
}

static size_t meta_round_to_pages(size_t bytes)
{
	size_t page = hl_os_page_size();
	return (bytes + page - 1) & ~(page - 1);
}

static void meta_maps_add_locked(void *p, size_t bytes)
{
	hl_assert_held(&meta_lock);
	for (unsigned i = 0; p && i < HL_META_MAPS; i++) {
		if (meta_maps[i].p == NULL) {
			meta_maps[i].p = p;
			meta_maps[i].bytes = bytes;
			return;
		}
	}
}

static void meta_maps_remove_locked(void *p)
{
	hl_assert_held(&meta_lock);
	for (unsigned i = 0; i < HL_META_MAPS; i++)
		if (meta_maps[i].p == p)
			meta_maps[i].p = NULL;
}

void hl_meta_visit_locked(void (*fn)(void *p, size_t bytes, void *arg), void *arg)
{
	hl_assert_held(&meta_lock);
	for (unsigned i = 0; i < HL_META_MAPS; i++)
		if (meta_maps[i].p)
			fn(meta_maps[i].p, meta_maps[i].bytes, arg);
}

static void *meta_carve_locked(size_t bytes)
{
	hl_assert_held(&meta_lock);
	if (meta_bump_left < bytes) {
		char *chunk = hl_os_map(HL_META_CHUNK);
		if (chunk == NULL)
			return NULL;
		meta_maps_add_locked(chunk, HL_META_CHUNK);
		/* The tail of the old chunk is abandoned: at most 64 KiB per MiB. */
		meta_bump = chunk;
		meta_bump_left = HL_META_CHUNK;
	}
	void *p = meta_bump;
	meta_bump += bytes;
	meta_bump_left -= bytes;
	return p;
}

void *hl_meta_alloc(size_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	if (bytes > HL_META_SMALL_MAX) {
		void *big = hl_os_map(meta_round_to_pages(bytes)); /* zeroed by the kernel */
		hl_lock(&meta_lock);
		meta_maps_add_locked(big, meta_round_to_pages(bytes));
		hl_unlock(&meta_lock);
		return big;
	}
	unsigned cls = meta_class_of(bytes);
	size_t class_bytes = (size_t)16 << cls;
	hl_lock(&meta_lock);
	void *p = meta_free_lists[cls];
	bool reused = p != NULL;
	if (reused)
		meta_free_lists[cls] = *(void **)p;
	else
		p = meta_carve_locked(class_bytes);
	hl_unlock(&meta_lock);
	/* A carved block is untouched memory of a fresh mapping, zero already:
	 * writing its zeros faulted in every page of it (a 32 KiB table of
	 * stack ids filled 8 pages in a process that used one). */
	if (reused)
		memset(p, 0, bytes);
	return p;
}

void hl_meta_free(void *p, size_t bytes)
{
	if (p == NULL)
		return;
	if (bytes == 0)
		bytes = 1;
	if (bytes > HL_META_SMALL_MAX) {
		hl_lock(&meta_lock);
		meta_maps_remove_locked(p);
		hl_unlock(&meta_lock);
		hl_os_unmap(p, meta_round_to_pages(bytes));
		return;
	}
	unsigned cls = meta_class_of(bytes);
	hl_lock(&meta_lock);
	*(void **)p = meta_free_lists[cls];
	meta_free_lists[cls] = p;
	hl_unlock(&meta_lock);
}

/* fork() and the leak scan: hold the lock so the lists stay consistent. */
void hl_meta_fork_prepare(void)
{
	hl_lock(&meta_lock);
}

void hl_meta_fork_parent(void)
{
	hl_unlock(&meta_lock);
}

void hl_meta_fork_child(void)
{
	hl_lock_reset(&meta_lock);
}
