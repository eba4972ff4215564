/*
 * libhook/large.c: blocks above HL_LARGE_THRESHOLD, each in its own mapping.
 *
 * Layout of a large mapping:
 *   | lead (alignment gap) | struct hl_large | struct hl_range | user block ... |
 * The range header has HL_RANGE_LARGE and size 0; the prefix holds the real
 * mapping size. realloc resizes with mremap, so a growing large buffer is
 * never copied by us.
 *
 * Live large blocks sit in a hash set keyed by user pointer, so free() can
 * tell a real large block from a pointer that merely looks like one. Under
 * checks=full a freed one stays in the set, HL_RANGE_QUARANTINED, until it
 * leaves the quarantine (guard.c): a second free is then a double free. A few
 * freed mappings are cached (bounded in count and bytes) and reused whole:
 * programs that allocate and free multi-MiB buffers in a loop would
 * otherwise pay mmap, munmap and a page fault per page every time. Like
 * spare segments, a cached mapping unused for retain_ms goes back to the OS.
 *
 * A guarded block (checks=guard, guard_sample=: guardpage.c) has the same
 * prefix and header in its slot's pages and sits in the same live set, so
 * free, walks and the leak scan treat it as a large block; its pages are its
 * slot's (hl_large_adopt), never cached, resized or unmapped here.
 */
#include <string.h>

#include "heap.h"

#define HL_LARGE_CACHE_SLOTS 32
#define HL_LARGE_PREFIX (sizeof(struct hl_large) + sizeof(struct hl_range))
#define HL_TOMBSTONE ((uintptr_t)1)

struct large_slot {
	void *base;
	size_t bytes;
	uint64_t since_ms; /* when it was cached */
};

static struct hl_lock large_lock = HL_LOCK_INIT;
static uintptr_t *live_set;       /* open addressing, linear probing */
static size_t live_capacity;      /* power of two */
static size_t live_used;          /* keys plus tombstones */
static size_t live_count;         /* keys */
static struct large_slot cached[HL_LARGE_CACHE_SLOTS];
static size_t cached_bytes;
static _Atomic uint64_t large_mapped;
static size_t live_bytes;         /* mapping bytes of live blocks (mallinfo's hblkhd) */
static size_t live_peak_count;    /* most live blocks at once (malloc_stats) */
static size_t live_peak_bytes;    /* most live mapping bytes at once */

static size_t hash_of(uintptr_t key, size_t capacity)
{
	return (size_t)((key >> 12) * 0x9e3779b97f4a7c15ull) & (capacity - 1);
}

static bool live_insert_raw(uintptr_t *table, size_t capacity, uintptr_t key)
{
	for (size_t i = hash_of(key, capacity);; i = (i + 1) & (capacity - 1)) {
		if (table[i] <= HL_TOMBSTONE) {
			bool was_empty = table[i] == 0;
			table[i] = key;
			return was_empty;
		}
	}
}

static bool live_grow_locked(void)
{
	hl_assert_held(&large_lock);
	size_t capacity = live_capacity ? live_capacity : 64;
	if (live_count * 2 >= capacity)
		capacity *= 2;
	uintptr_t *table = hl_meta_alloc(capacity * sizeof(uintptr_t));
	if (table == NULL)
		return false;
	for (size_t i = 0; i < live_capacity; i++)
		if (live_set[i] > HL_TOMBSTONE)
			live_insert_raw(table, capacity, live_set[i]);
	hl_meta_free(live_set, live_capacity * sizeof(uintptr_t));
	live_set = table;
	live_capacity = capacity;
	live_used = live_count;
	return true;
}

static bool live_add_locked(uintptr_t key, size_t map_bytes)
{
	hl_assert_held(&large_lock);
	if ((live_used + 1) * 2 > live_capacity && !live_grow_locked())
		return false;
	if (live_insert_raw(live_set, live_capacity, key))
		live_used++;
	live_count++;
	live_bytes += map_bytes;
	if (live_count > live_peak_count)
		live_peak_count = live_count;
	if (live_bytes > live_peak_bytes)
		live_peak_bytes = live_bytes;
	return true;
}

static size_t live_index_locked(uintptr_t key)
{
	hl_assert_held(&large_lock);
	if (live_capacity == 0)
		return SIZE_MAX;
	for (size_t i = hash_of(key, live_capacity);; i = (i + 1) & (live_capacity - 1)) {
		if (live_set[i] == key)
			return i;
		if (live_set[i] == 0)
			return SIZE_MAX;
	}
}

static void live_remove_locked(uintptr_t key, size_t map_bytes)
{
	hl_assert_held(&large_lock);
	size_t i = live_index_locked(key);
	if (i != SIZE_MAX) {
		live_set[i] = HL_TOMBSTONE;
		live_count--;
		live_bytes -= map_bytes;
	}
}

/* Takes the smallest cached mapping of at least `bytes`, or NULL. Virtual
 * space a reused mapping has beyond the request costs no memory unless the
 * program touches it. (Growing a too-small cached mapping with mremap was
 * tried: moving page tables cost more than a fresh mmap, 0.81x -> 0.68x of
 * glibc's time on the mixed benchmark without it.) */
static void *cache_take_locked(size_t bytes, size_t *got)
{
	hl_assert_held(&large_lock);
	int best = -1;
	for (int i = 0; i < HL_LARGE_CACHE_SLOTS; i++) {
		size_t have = cached[i].bytes;
		/* (the excess must fit hl_large.slack) */
		if (cached[i].base != NULL && have >= bytes && have - bytes < UINT32_MAX / 2 &&
		    (best < 0 || have < cached[best].bytes))
			best = i;
	}
	if (best < 0)
		return NULL;
	void *base = cached[best].base;
	*got = cached[best].bytes;
	cached[best].base = NULL;
	cached_bytes -= *got;
	return base;
}

static bool cache_put_locked(void *base, size_t bytes)
{
	hl_assert_held(&large_lock);
	if (cached_bytes + bytes > ((size_t)hl_options.large_cache_mib << 20))
		return false;
	for (int i = 0; i < HL_LARGE_CACHE_SLOTS; i++) {
		if (cached[i].base == NULL) {
			cached[i].base = base;
			cached[i].bytes = bytes;
			cached[i].since_ms = hl_os_now_ms();
			cached_bytes += bytes;
			return true;
		}
	}
	return false;
}

/* Takes out of the cache the mappings cached at or before cutoff_ms, into
 * out[]; the caller unmaps them after dropping the lock. */
static int cache_expire_locked(uint64_t cutoff_ms, struct large_slot out[HL_LARGE_CACHE_SLOTS])
{
	hl_assert_held(&large_lock);
	int n = 0;
	if (cached_bytes == 0)
		return 0;
	for (int i = 0; i < HL_LARGE_CACHE_SLOTS; i++) {
		if (cached[i].base != NULL && cached[i].since_ms <= cutoff_ms) {
			out[n++] = cached[i];
			cached_bytes -= cached[i].bytes;
			cached[i].base = NULL;
		}
	}
	return n;
}

static void unmap_expired(struct large_slot *gone, int n)
{
	for (int i = 0; i < n; i++) {
		atomic_fetch_sub_explicit(&large_mapped, gone[i].bytes, memory_order_relaxed);
		hl_os_unmap(gone[i].base, gone[i].bytes);
	}
}

static uint64_t expiry_cutoff(void)
{
	uint64_t now = hl_os_now_ms();
	return now > hl_options.retain_ms ? now - hl_options.retain_ms : 0;
}

void hl_large_trim(void)
{
	struct large_slot gone[HL_LARGE_CACHE_SLOTS];
	hl_lock(&large_lock);
	int n = cache_expire_locked(UINT64_MAX, gone);
	hl_unlock(&large_lock);
	unmap_expired(gone, n);
}

static size_t round_to_pages(size_t bytes)
{
	size_t page = hl_os_page_size();
	return (bytes + page - 1) & ~(page - 1);
}

/* Writes the prefix and header of a large block at `base`. */
static void *large_format(char *base, size_t map_bytes, size_t lead, size_t n)
{
	struct hl_large *l = (struct hl_large *)(base + lead);
	struct hl_range *r = (struct hl_range *)(l + 1);
	l->map_bytes = map_bytes;
	l->lead_bytes = (uint32_t)lead;
	r->prev_size = 0;
	r->size = 0;
	r->flags = HL_RANGE_ALLOCATED | HL_RANGE_LARGE;
	r->check = hl_range_check_of(r, 0);
	l->slack = (uint32_t)(hl_large_usable(r) - n);
	return hl_range_data(r);
}

static size_t lead_for(uintptr_t base, size_t alignment)
{
	uintptr_t user = (base + HL_LARGE_PREFIX + alignment - 1) & ~(uintptr_t)(alignment - 1);
	return user - HL_LARGE_PREFIX - base;
}

void *hl_large_alloc(size_t n, size_t alignment, bool *fresh)
{
	size_t page = hl_os_page_size();
	/* The alignment gap in front of the prefix is shorter than alignment. */
	size_t gap = alignment > HL_ALIGN ? alignment : 0;
	if (gap > SIZE_MAX / 4 || n > SIZE_MAX / 2 - gap - page)
		return NULL;
	size_t map_bytes = round_to_pages(n + HL_LARGE_PREFIX + gap);
	char *base = NULL;
	struct large_slot gone[HL_LARGE_CACHE_SLOTS];
	hl_lock(&large_lock);
	int expired = cache_expire_locked(expiry_cutoff(), gone);
	size_t got = 0;
	if (alignment <= page) /* a cached mapping is only page-aligned */
		base = cache_take_locked(map_bytes, &got);
	hl_unlock(&large_lock);
	unmap_expired(gone, expired);
	if (base != NULL) {
		map_bytes = got;
		*fresh = false;
	} else {
		base = hl_os_map(map_bytes);
		if (base == NULL)
			return NULL;
		*fresh = true;
		atomic_fetch_add_explicit(&large_mapped, map_bytes, memory_order_relaxed);
		hl_registry_mark(base, map_bytes, HL_REGION_LARGE);
	}
	void *p = large_format(base, map_bytes, lead_for((uintptr_t)base, alignment), n);
	hl_lock(&large_lock);
	bool ok = live_add_locked((uintptr_t)p, map_bytes);
	hl_unlock(&large_lock);
	if (!ok) {
		hl_os_unmap(base, map_bytes);
		atomic_fetch_sub_explicit(&large_mapped, map_bytes, memory_order_relaxed);
		return NULL;
	}
	return p;
}

void *hl_large_adopt(char *base, size_t map_bytes, size_t lead, size_t n)
{
	void *p = large_format(base, map_bytes, lead, n);
	hl_lock(&large_lock);
	bool ok = live_add_locked((uintptr_t)p, map_bytes);
	hl_unlock(&large_lock);
	return ok ? p : NULL;
}

void hl_large_forget(struct hl_range *r)
{
	size_t bytes = hl_large_of(r)->map_bytes;
	hl_lock(&large_lock);
	live_remove_locked((uintptr_t)hl_range_data(r), bytes);
	hl_unlock(&large_lock);
}

void hl_large_free(struct hl_range *r)
{
	if (hl_unlikely(hl_guard_owns(r))) {
		hl_large_forget(r);
		hl_guard_release(r); /* its slot goes PROT_NONE */
		return;
	}
	struct hl_large *l = hl_large_of(r);
	char *base = (char *)l - l->lead_bytes;
	size_t bytes = l->map_bytes;
	struct large_slot gone[HL_LARGE_CACHE_SLOTS];
	hl_lock(&large_lock);
	live_remove_locked((uintptr_t)hl_range_data(r), bytes);
	r->flags = 0; /* a second free of this pointer now fails the checks */
	int expired = cache_expire_locked(expiry_cutoff(), gone);
	bool kept = l->lead_bytes == 0 && cache_put_locked(base, bytes);
	hl_unlock(&large_lock);
	unmap_expired(gone, expired);
	if (!kept) {
		/* The registry mark stays: another large mapping may share the
		 * 4 MiB region, and the live set is the exact check anyway. */
		atomic_fetch_sub_explicit(&large_mapped, bytes, memory_order_relaxed);
		hl_os_unmap(base, bytes);
	}
}

void *hl_large_resize(struct hl_range *r, size_t n)
{
	struct hl_large *l = hl_large_of(r);
	if (l->lead_bytes != 0 || n > SIZE_MAX / 2)
		return NULL; /* over-aligned: mremap would not keep the alignment */
	size_t old_bytes = l->map_bytes;
	size_t new_bytes = round_to_pages(n + HL_LARGE_PREFIX);
	void *old_p = hl_range_data(r);
	char *base = hl_os_remap(l, old_bytes, new_bytes);
	if (base == NULL)
		return NULL;
	hl_registry_mark(base, new_bytes, HL_REGION_LARGE);
	void *p = large_format(base, new_bytes, 0, n);
	atomic_fetch_add_explicit(&large_mapped, new_bytes - old_bytes, memory_order_relaxed);
	hl_lock(&large_lock);
	live_remove_locked((uintptr_t)old_p, old_bytes);
	bool ok = live_add_locked((uintptr_t)p, new_bytes);
	hl_unlock(&large_lock);
	if (!ok)
		hl_warn("cannot record a resized large block; it will be reported as foreign", p);
	return p;
}

bool hl_large_owns(const void *p)
{
	hl_lock(&large_lock);
	bool found = live_index_locked((uintptr_t)p) != SIZE_MAX;
	hl_unlock(&large_lock);
	return found;
}

void hl_large_walk(hl_walk_fn fn, void *arg)
{
	hl_lock(&large_lock);
	for (size_t i = 0; i < live_capacity; i++) {
		if (live_set[i] <= HL_TOMBSTONE)
			continue;
		struct hl_range *r = hl_range_of((void *)live_set[i]);
		if (!hl_block_is_live(r))
			continue; /* quarantined (checks=full): the program freed it */
		fn((void *)live_set[i], hl_block_requested(r), hl_range_stack_id(r),
		   hl_range_kind(r), arg);
	}
	hl_unlock(&large_lock);
}

void *hl_large_find(const void *address, size_t *size)
{
	void *found = NULL;
	hl_lock(&large_lock);
	for (size_t i = 0; i < live_capacity && !found; i++) {
		if (live_set[i] <= HL_TOMBSTONE)
			continue;
		char *p = (char *)live_set[i];
		size_t usable = hl_large_usable(hl_range_of(p));
		if ((const char *)address >= p && (const char *)address < p + usable) {
			found = p;
			*size = hl_block_requested(hl_range_of(p));
		}
	}
	hl_unlock(&large_lock);
	return found;
}

/* For the leak scan, with large_lock held (hl_large_fork_prepare): every
 * mapping this file holds, live (fn gets its block's header) or cached
 * (header NULL). */
void hl_large_visit_locked(hl_large_visit_fn fn, void *arg)
{
	hl_assert_held(&large_lock);
	for (size_t i = 0; i < live_capacity; i++) {
		if (live_set[i] <= HL_TOMBSTONE)
			continue;
		struct hl_range *r = hl_range_of((void *)live_set[i]);
		struct hl_large *l = hl_large_of(r);
		fn((char *)l - l->lead_bytes, l->map_bytes, r, arg);
	}
	for (int i = 0; i < HL_LARGE_CACHE_SLOTS; i++)
		if (cached[i].base != NULL)
			fn(cached[i].base, cached[i].bytes, NULL, arg);
}

void hl_large_census(struct hl_large_census *out)
{
	hl_lock(&large_lock);
	out->live_count = live_count;
	out->live_bytes = live_bytes;
	out->peak_count = live_peak_count;
	out->peak_bytes = live_peak_bytes;
	out->cached_count = 0;
	for (int i = 0; i < HL_LARGE_CACHE_SLOTS; i++)
		out->cached_count += cached[i].base != NULL;
	out->cached_bytes = cached_bytes;
	hl_unlock(&large_lock);
}

uint64_t hl_large_mapped_bytes(void)
{
	return atomic_load_explicit(&large_mapped, memory_order_relaxed);
}

void hl_large_fork_prepare(void)
{
	hl_lock(&large_lock);
}

void hl_large_fork_parent(void)
{
	hl_unlock(&large_lock);
}

void hl_large_fork_child(void)
{
	hl_lock_reset(&large_lock);
}
