/*
 * reporter/table.h: the block table, an open-addressing hash table keyed by
 * address with linear probing, for millions of outstanding blocks.
 *
 * Invariants: address 0 marks an empty slot (the decoder rejects blocks at
 * address 0); the load factor stays at or below 5/8, so probe runs are short;
 * capacity is a power of two. Keys may repeat (the pending tables of the
 * reconciler keep several blocks per address); removal shifts the following
 * run back (no tombstones), which stays correct with repeated keys because
 * it only reasons about each entry's home slot.
 *
 * Pointers returned by find/insert are valid until the next insert.
 */
#ifndef HL_REPORTER_TABLE_H
#define HL_REPORTER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One block, 32 bytes. */
struct hl_block {
	uint64_t address;   /* key; 0 = empty slot */
	uint64_t size;      /* bytes asked for */
	uint64_t ticks;     /* when it was allocated (or freed, in pending frees) */
	uint32_t stack_id;  /* allocation stack, 0 = none */
	uint8_t kind;       /* enum hl_alloc_kind */
	uint8_t leak_class; /* enum hl_leak_class, from LIVE records */
	uint16_t flags;     /* HL_BLOCK_* */
};
_Static_assert(sizeof(struct hl_block) == 32, "hl_block");

#define HL_BLOCK_INHERITED 1u /* copied from the parent at fork */
#define HL_BLOCK_LIVE_SEEN 2u /* named by a LIVE record at exit */
#define HL_BLOCK_LIVE_ONLY 4u /* known only from a LIVE record */
#define HL_BLOCK_FREED 8u     /* tombstone: the address was freed at ticks */

struct hl_table {
	struct hl_block *slots; /* capacity entries */
	size_t capacity;        /* power of two, 0 before the first insert */
	size_t count;           /* occupied slots */
	unsigned shift;         /* 64 - log2(capacity), for the hash */
};

void hl_table_init(struct hl_table *t);
void hl_table_destroy(struct hl_table *t);
/* Empties and frees the slots but keeps the table usable. */
void hl_table_clear(struct hl_table *t);

/* First entry with this address, or NULL. */
struct hl_block *hl_table_find(const struct hl_table *t, uint64_t address);
/* Next entry with this address after `prev` (NULL: start), or NULL. */
struct hl_block *hl_table_find_next(const struct hl_table *t, uint64_t address,
				    struct hl_block *prev);
/* A new slot holding `address` (other fields zero); always adds, even if the
 * address is present. Grows the table as needed. */
struct hl_block *hl_table_insert(struct hl_table *t, uint64_t address);
/* The first entry with this address, or else (*added set) a new slot
 * holding it, as hl_table_insert would make: one probe instead of two. */
struct hl_block *hl_table_find_or_insert(struct hl_table *t, uint64_t address, bool *added);
/* Removes the entry `slot` points to. */
void hl_table_remove(struct hl_table *t, struct hl_block *slot);
/* Copies every entry of src into dst (dst must be empty). */
void hl_table_copy(struct hl_table *dst, const struct hl_table *src);

/* The slot where a lookup of address begins. Fibonacci hashing; the low 4
 * bits of heap addresses carry no information. */
static inline size_t hl_table_home_slot(const struct hl_table *t, uint64_t address)
{
	return (size_t)(((address >> 4) * 0x9e3779b97f4a7c15ull) >> t->shift);
}

/* Starts loading the slot where a lookup of address begins (a hint only). */
/* (always_inline: gcc 12 outlines the body as a part function, deems that
 * const, and deletes the calls.) */
static inline __attribute__((always_inline)) void
hl_table_prefetch(const struct hl_table *t, uint64_t address)
{
	if (t->capacity)
		__builtin_prefetch(&t->slots[hl_table_home_slot(t, address)]);
}

/* Iteration: for (b = hl_table_next(t, NULL); b; b = hl_table_next(t, b)).
 * The table must not change during iteration. */
struct hl_block *hl_table_next(const struct hl_table *t, struct hl_block *prev);

#endif /* HL_REPORTER_TABLE_H */
