/*
 * reporter/table.c: open-addressing block table (see table.h).
 */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_table_init(struct hl_table *t)
{
	memset(t, 0, sizeof(*t));
}

void hl_table_destroy(struct hl_table *t)
{
	free(t->slots);
	hl_table_init(t);
}

void hl_table_clear(struct hl_table *t)
{
	hl_table_destroy(t);
}

/* From slot i on: the first entry with this address, or else the empty slot
 * that ends the run (where an insert of it belongs). The table has slots. */
static inline struct hl_block *probe(const struct hl_table *t, size_t i, uint64_t address)
{
	size_t mask = t->capacity - 1;

	for (;; i = (i + 1) & mask) {
		struct hl_block *b = &t->slots[i];

		if (b->address == address || b->address == 0)
			return b;
	}
}

struct hl_block *hl_table_find_next(const struct hl_table *t, uint64_t address,
				    struct hl_block *prev)
{
	struct hl_block *b;

	if (t->count == 0)
		return NULL;
	b = probe(t, prev ? ((size_t)(prev - t->slots) + 1) & (t->capacity - 1)
			  : hl_table_home_slot(t, address), address);
	return b->address ? b : NULL;
}

struct hl_block *hl_table_find(const struct hl_table *t, uint64_t address)
{
	return hl_table_find_next(t, address, NULL);
}

static struct hl_block *insert_slot(struct hl_table *t, uint64_t address)
{
	size_t mask = t->capacity - 1;
	size_t i = hl_table_home_slot(t, address);

	while (t->slots[i].address != 0)
		i = (i + 1) & mask;
	t->slots[i].address = address;
	t->count++;
	return &t->slots[i];
}

static void rehash(struct hl_table *t, size_t capacity)
{
	struct hl_block *old = t->slots;
	size_t old_capacity = t->capacity;
	unsigned log2 = 0;

	while (((size_t)1 << log2) < capacity)
		log2++;
	t->slots = hl_xcalloc(capacity, sizeof(*t->slots));
	t->capacity = capacity;
	t->shift = 64 - log2;
	t->count = 0;
	for (size_t i = 0; i < old_capacity; i++)
		if (old[i].address)
			*insert_slot(t, old[i].address) = old[i];
	free(old);
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

	if ((t->count + 1) * 8 > t->capacity * 5)
		rehash(t, t->capacity ? t->capacity * 2 : 1024);
	b = insert_slot(t, address);
	clear_fields(b);
	return b;
}

struct hl_block *hl_table_find_or_insert(struct hl_table *t, uint64_t address, bool *added)
{
	struct hl_block *b;

	*added = false;
	if (t->count == 0 || (t->count + 1) * 8 > t->capacity * 5) {
		/* empty, or the insert will grow it: the two steps */
		b = hl_table_find(t, address);
		if (b)
			return b;
		*added = true;
		return hl_table_insert(t, address);
	}
	b = probe(t, hl_table_home_slot(t, address), address);
	if (b->address)
		return b;
	/* The run ended here: where insert_slot would have put it. */
	*added = true;
	b->address = address;
	t->count++;
	clear_fields(b);
	return b;
}

/* Backward-shift deletion: walk the run after the hole and move back every
 * entry whose home slot does not lie cyclically in (hole, its position]. */
void hl_table_remove(struct hl_table *t, struct hl_block *slot)
{
	size_t mask = t->capacity - 1;
	size_t hole = (size_t)(slot - t->slots);
	size_t i = hole;

	for (;;) {
		size_t home;

		i = (i + 1) & mask;
		if (t->slots[i].address == 0)
			break;
		home = hl_table_home_slot(t, t->slots[i].address);
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			t->slots[hole] = t->slots[i];
			hole = i;
		}
	}
	memset(&t->slots[hole], 0, sizeof(t->slots[hole]));
	t->count--;
}

void hl_table_copy(struct hl_table *dst, const struct hl_table *src)
{
	hl_table_destroy(dst);
	if (!src->capacity)
		return;
	dst->slots = hl_xmalloc(src->capacity * sizeof(*src->slots));
	memcpy(dst->slots, src->slots, src->capacity * sizeof(*src->slots));
	dst->capacity = src->capacity;
	dst->count = src->count;
	dst->shift = src->shift;
}

struct hl_block *hl_table_next(const struct hl_table *t, struct hl_block *prev)
{
	size_t i = prev ? (size_t)(prev - t->slots) + 1 : 0;

	for (; i < t->capacity; i++)
		if (t->slots[i].address)
			return &t->slots[i];
	return NULL;
}
