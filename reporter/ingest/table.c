/*
 * reporter/ingest/table.c: the block table, probed 16 slots at a time (see
 * table.h).
 */
#include "table.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define GROUP HL_TABLE_GROUP
#define CTRL_EMPTY HL_TABLE_CTRL_EMPTY
#define CTRL_DELETED HL_TABLE_CTRL_DELETED
#define MIN_CAPACITY 1024u

/* Every invariant of table.h, by a walk of the whole table (HL_DEBUG=2,
 * where the table is rebuilt or copied: a walk already):
 * the count is the number of used control bytes, a slot not in use reads
 * address 0, and growth_left is what the 7/8 bound leaves after the used
 * and DELETED slots. */
bool hl_table_is_valid(const struct hl_table *t)
{
	size_t used = 0, deleted = 0;

	if (t->capacity == 0)
		return t->count == 0 && t->slots == NULL;
	if ((t->capacity & (t->capacity - 1)) || t->capacity < GROUP)
		return false;
	for (size_t i = 0; i < t->capacity; i++) {
		if (t->ctrl[i] < CTRL_EMPTY)
			used++;
		else if (t->ctrl[i] == CTRL_DELETED)
			deleted++;
		else if (t->ctrl[i] != CTRL_EMPTY)
			return false;
		if (t->ctrl[i] >= CTRL_EMPTY && t->slots[i].address != 0)
			return false;
	}
	return used == t->count && used + deleted + t->growth_left == t->capacity / 8 * 7;
}

void hl_table_init(struct hl_table *t)
{
	memset(t, 0, sizeof(*t));
}

void hl_table_destroy(struct hl_table *t)
{
	free(t->slots);
	free(t->ctrl);
	hl_table_init(t);
}

void hl_table_clear(struct hl_table *t)
{
	hl_table_destroy(t);
}

static inline uint8_t tag_of(uint64_t h)
{
	return hl_table_tag(h);
}

static inline size_t next_group(const struct hl_table *t, size_t g, size_t *step)
{
	return hl_table_next_group(t, g, step);
}

/* Bit i set: control byte i of the group equals byte. */
static inline unsigned group_match(const uint8_t *group, uint8_t byte)
{
	return hl_group_match(group, byte);
}

/* Bit i set: slot i of the group is EMPTY or DELETED (the only control
 * bytes with the top bit set). */
static inline unsigned group_free(const uint8_t *group)
{
	return hl_group_top_bits(group);
}

/* Out of line on purpose: inlined into the events loop, gcc 12 dropped the
 * prefetch instruction (none was left in hl_state_events) and the reporter
 * took 1.4x the CPU on 8 threads' events (bench-ingest --threads 8), its
 * slot loads missing the cache, for fewer instructions. */
void hl_table_prefetch(const struct hl_table *t, uint64_t address)
{
	uint64_t h = hl_table_hash(address);
	const uint8_t *group;
	unsigned m;
	size_t g;

	if (!t->capacity)
		return;
	g = (size_t)(h >> t->shift);
	group = t->ctrl + g * GROUP;
	m = group_match(group, tag_of(h));
	if (!m)
		m = group_free(group);
	if (m)
		__builtin_prefetch(&t->slots[g * GROUP + (unsigned)__builtin_ctz(m)]);
}

struct hl_block *hl_table_find_next(const struct hl_table *t, uint64_t address,
				    struct hl_block *prev)
{
	return t->count ? hl_table_search(t, address, prev) : NULL;
}

static inline struct hl_block *claim(struct hl_table *t, size_t i, uint64_t h, uint64_t address)
{
	return hl_table_claim(t, i, h, address);
}

/* Puts address in the first EMPTY or DELETED slot of its probe sequence.
 * (The lowest free slot of the group, so a group's entries stay packed at
 * its start, in fewer cache lines: starting from a slot picked by the hash
 * instead, for prefetching, made lookups 10-40% slower.) The table has
 * room. */
static struct hl_block *place(struct hl_table *t, uint64_t address)
{
	uint64_t h = hl_table_hash(address);
	size_t g = (size_t)(h >> t->shift), step = 0;
	unsigned m;

	while (!(m = group_free(t->ctrl + g * GROUP)))
		g = next_group(t, g, &step);
	return claim(t, g * GROUP + (unsigned)__builtin_ctz(m), h, address);
}

/* Rebuilds the table at this capacity: drops DELETED slots. */
static void rebuild(struct hl_table *t, size_t capacity)
{
	struct hl_block *old = t->slots;
	uint8_t *old_ctrl = t->ctrl;
	size_t old_capacity = t->capacity;
	unsigned log2_groups = 0;

	hl_invariant(capacity >= MIN_CAPACITY && (capacity & (capacity - 1)) == 0);
	while (((size_t)GROUP << log2_groups) < capacity)
		log2_groups++;
	t->slots = hl_xcalloc(capacity, sizeof(*t->slots));
	t->ctrl = hl_xmalloc(capacity);
	memset(t->ctrl, CTRL_EMPTY, capacity);
	t->capacity = capacity;
	t->generation++;
	t->shift = 64 - log2_groups; /* < 64: MIN_CAPACITY has 64 groups */
	t->count = 0;
	t->growth_left = capacity / 8 * 7;
	for (size_t i = 0; i < old_capacity; i++)
		if (old_ctrl[i] < CTRL_EMPTY)
			*place(t, old[i].address) = old[i];
	free(old);
	free(old_ctrl);
	hl_invariant_expensive(hl_table_is_valid(t));
}

/* Room for one more entry: grows when over 7/16 of the slots are live,
 * otherwise rebuilds at the same size to drop DELETED slots. */
static void reserve_one(struct hl_table *t)
{
	if (t->growth_left > 0)
		return;
	if (t->capacity == 0)
		rebuild(t, MIN_CAPACITY);
	else
		rebuild(t, t->count * 16 > t->capacity * 7 ? t->capacity * 2 : t->capacity);
}

static void clear_fields(struct hl_block *b)
{
	b->size = 0;
	b->ticks = 0;
	b->stack_id = 0;
	b->kind = 0;
	b->leak_class = 0;
	b->flags = 0;
}

struct hl_block *hl_table_insert(struct hl_table *t, uint64_t address)
{
	struct hl_block *b;

	reserve_one(t);
	b = place(t, address);
	clear_fields(b);
	return b;
}

void hl_table_copy(struct hl_table *dst, const struct hl_table *src)
{
	hl_table_destroy(dst);
	if (!src->capacity)
		return;
	*dst = *src;
	dst->slots = hl_xmalloc(src->capacity * sizeof(*src->slots));
	memcpy(dst->slots, src->slots, src->capacity * sizeof(*src->slots));
	dst->ctrl = hl_xmalloc(src->capacity);
	memcpy(dst->ctrl, src->ctrl, src->capacity);
	hl_invariant_expensive(hl_table_is_valid(dst));
}

struct hl_block *hl_table_next(const struct hl_table *t, struct hl_block *prev)
{
	size_t i = prev ? (size_t)(prev - t->slots) + 1 : 0;

	hl_invariant(i <= t->capacity);
	for (; i < t->capacity; i++)
		if (t->ctrl[i] < CTRL_EMPTY)
			return &t->slots[i];
	return NULL;
}

/* ---- maps: a slot's address is the key, its size the value ----------------- */

static struct hl_block *slot_of_value(const uint64_t *value)
{
	return (struct hl_block *)((uintptr_t)value - offsetof(struct hl_block, size));
}

static uint64_t *value_of(struct hl_block *b)
{
	return b ? &b->size : NULL;
}

void hl_map_init(struct hl_map *m)
{
	hl_table_init(&m->table);
}

void hl_map_destroy(struct hl_map *m)
{
	hl_table_destroy(&m->table);
}

size_t hl_map_count(const struct hl_map *m)
{
	return m->table.count;
}

uint64_t *hl_map_find(const struct hl_map *m, uint64_t key)
{
	return value_of(hl_table_find(&m->table, key));
}

uint64_t *hl_map_find_next(const struct hl_map *m, uint64_t key, const uint64_t *prev)
{
	return value_of(hl_table_find_next(&m->table, key, prev ? slot_of_value(prev) : NULL));
}

void hl_map_insert(struct hl_map *m, uint64_t key, uint64_t value)
{
	hl_table_insert(&m->table, key)->size = value;
}

uint64_t *hl_map_find_or_insert(struct hl_map *m, uint64_t key, bool *added)
{
	return value_of(hl_table_find_or_insert(&m->table, key, added));
}
