/*
 * reporter/ingest/table.h: the block table, a hash table keyed by address for
 * millions of outstanding blocks, probed 16 slots at a time (the layout of
 * Abseil's SwissTable and Rust's hashbrown).
 *
 * Beside the slots, one control byte per slot: EMPTY, DELETED, or 7 bits
 * of the key's hash. A lookup hashes the address once, picks a group of 16
 * slots from the hash's top bits, compares the group's 16 control bytes with
 * the 7-bit tag in one SSE2 instruction and looks only at slots that match;
 * it stops at the first group with an EMPTY byte, and otherwise goes on to
 * the next group of a triangular sequence (which visits every group). Why:
 * the previous linear-probing table with backward-shift removal cost 33 ns
 * per alloc/free event of the churn benchmark's stream replayed alone (10k
 * live blocks, all in L2): its probe and shift loops end at data-dependent
 * places, and the branch mispredictions, not the memory, were the cost. This
 * layout costs 16 ns on the same stream.
 *
 * Invariants: a slot's control byte says whether it is used (then it holds
 * the key's tag), EMPTY or DELETED, and a slot not in use reads address 0;
 * at most 7/8 of the slots are used or DELETED; capacity is a
 * power of two, at least one group. Keys may repeat (the pending tables of
 * the reconciler keep several blocks per address). A removal marks its slot
 * EMPTY when its group still has an EMPTY byte (such a group has never been
 * full, so no lookup ever went past it), DELETED otherwise; DELETED slots
 * are reused by inserts and dropped when the table is rebuilt.
 *
 * An entry never moves except when the table grows or is rebuilt (on an
 * insert): pointers returned by find/insert are valid until the next insert.
 */
#ifndef HL_REPORTER_TABLE_H
#define HL_REPORTER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "table_group.h"
#include "util.h"

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
#define HL_BLOCK_REALLOC 16u  /* made by realloc (valgrind names realloc as its allocator) */

struct hl_table {
	struct hl_block *slots; /* capacity entries */
	uint8_t *ctrl;          /* capacity control bytes */
	size_t capacity;        /* power of two, 0 before the first insert */
	size_t count;           /* occupied slots */
	size_t growth_left;     /* EMPTY slots that inserts may still fill */
	unsigned shift;         /* 64 - log2(capacity / 16): hash -> group */
	uint32_t generation;    /* bumped whenever entries move (grow, rebuild) */
};

void hl_table_init(struct hl_table *t);
void hl_table_destroy(struct hl_table *t);
/* Empties and frees the slots but keeps the table usable. */
void hl_table_clear(struct hl_table *t);

/* First entry with this address, or NULL (inline below: the reporter asks
 * it for every free). */
static inline struct hl_block *hl_table_find(const struct hl_table *t, uint64_t address);
/* Next entry with this address after `prev` (NULL: start), or NULL. */
struct hl_block *hl_table_find_next(const struct hl_table *t, uint64_t address,
				    struct hl_block *prev);
/* A new slot holding `address` (other fields zero); always adds, even if the
 * address is present. Grows the table as needed. */
struct hl_block *hl_table_insert(struct hl_table *t, uint64_t address);
/* (Inline below, as hl_table_remove: the reporter does one or the other
 * for every event.) The first entry with this address, or else (*added set) a new slot
 * holding it, as hl_table_insert would make, in the same place. One walk:
 * the lookup remembers the first free slot it passes, which is where the
 * insert would go (a lookup then an insert measured the same in time on
 * replayed real event streams, the group being in cache by then, but cost
 * ~110 instructions an allocation against ~40; the reporter shares the
 * program's cores). May grow or rebuild the table even when the address
 * is there (pointers then move, as on an insert). */
static inline struct hl_block *hl_table_find_or_insert(struct hl_table *t, uint64_t address,
							bool *added);
/* Removes the entry `slot` points to. */
static inline void hl_table_remove(struct hl_table *t, struct hl_block *slot);
/* Copies every entry of src into dst (dst must be empty). */
void hl_table_copy(struct hl_table *dst, const struct hl_table *src);

/* Fibonacci hashing; the low 4 bits of heap addresses carry no
 * information. The group comes from the top bits, the tag from bits below
 * them. */
static inline uint64_t hl_table_hash(uint64_t address)
{
	return (address >> 4) * 0x9e3779b97f4a7c15ull;
}

/* ---- the probe, inline (table.c holds the rest) ---------------------- */

#define HL_TABLE_GROUP 16u
#define HL_TABLE_CTRL_EMPTY 0x80u   /* free, in a group not full since the table was built */
#define HL_TABLE_CTRL_DELETED 0xfeu /* removed from a group that had been full */

/* Control byte of a used slot: 7 bits of the hash below the group's. */
static inline uint8_t hl_table_tag(uint64_t h)
{
	return (uint8_t)((h >> 24) & 0x7f);
}

/* The group after g in the probe sequence (triangular: visits them all). */
static inline size_t hl_table_next_group(const struct hl_table *t, size_t g, size_t *step)
{
	return (g + ++*step) & ((t->capacity / HL_TABLE_GROUP) - 1);
}

/* The first entry with this address after `prev` (NULL: the first) along
 * the address's probe sequence, or NULL. The table has slots. */
static inline struct hl_block *hl_table_search(const struct hl_table *t, uint64_t address,
					       const struct hl_block *prev)
{
	uint64_t h = hl_table_hash(address);
	uint8_t tag = hl_table_tag(h);
	size_t g = (size_t)(h >> t->shift), step = 0;

	for (;;) {
		const uint8_t *group = t->ctrl + g * HL_TABLE_GROUP;
		unsigned m = hl_group_match(group, tag);

		for (; m; m &= m - 1) {
			struct hl_block *b = &t->slots[g * HL_TABLE_GROUP + (unsigned)__builtin_ctz(m)];

			if (b->address != address)
				continue;
			if (!prev)
				return b;
			if (b == prev)
				prev = NULL; /* the next one is the answer */
		}
		if (hl_group_match(group, HL_TABLE_CTRL_EMPTY))
			return NULL;
		g = hl_table_next_group(t, g, &step);
	}
}

static inline struct hl_block *hl_table_find(const struct hl_table *t, uint64_t address)
{
	return t->count ? hl_table_search(t, address, NULL) : NULL;
}

/* Puts address in slot i, free (EMPTY or DELETED), with the tag of its
 * hash h; its other fields are zero (a slot not in use reads 0). */
static inline struct hl_block *hl_table_claim(struct hl_table *t, size_t i, uint64_t h,
					      uint64_t address)
{
	/* a slot not in use reads address 0; the 7/8 bound leaves room */
	hl_invariant(t->slots[i].address == 0);
	hl_invariant(t->ctrl[i] != HL_TABLE_CTRL_EMPTY || t->growth_left > 0);
	if (t->ctrl[i] == HL_TABLE_CTRL_EMPTY)
		t->growth_left--;
	t->ctrl[i] = hl_table_tag(h);
	t->count++;
	t->slots[i].address = address;
	return &t->slots[i];
}

static inline struct hl_block *hl_table_find_or_insert(struct hl_table *t, uint64_t address,
							bool *added)
{
	uint64_t h = hl_table_hash(address);
	uint8_t tag = hl_table_tag(h);
	size_t g, step = 0, free_at = SIZE_MAX;
	struct hl_block *b;

	*added = true;
	if (!t->capacity)
		return hl_table_insert(t, address);
	for (g = (size_t)(h >> t->shift);; g = hl_table_next_group(t, g, &step)) {
		const uint8_t *group = t->ctrl + g * HL_TABLE_GROUP;
		unsigned m = hl_group_match(group, tag);

		for (; m; m &= m - 1) {
			b = &t->slots[g * HL_TABLE_GROUP + (unsigned)__builtin_ctz(m)];
			if (b->address == address) {
				*added = false;
				return b;
			}
		}
		/* where an insert would go: the first free slot of the walk */
		if (free_at == SIZE_MAX && (m = hl_group_top_bits(group)))
			free_at = g * HL_TABLE_GROUP + (unsigned)__builtin_ctz(m);
		if (hl_group_match(group, HL_TABLE_CTRL_EMPTY))
			break; /* a group with an EMPTY byte is free too: free_at is set */
	}
	if (t->growth_left == 0)
		return hl_table_insert(t, address); /* a rebuild first, as an insert does */
	b = hl_table_claim(t, free_at, h, address);
	/* as hl_table_insert leaves them (stores a caller that fills the
	 * block inline makes dead) */
	*b = (struct hl_block){ .address = address };
	return b;
}

static inline void hl_table_remove(struct hl_table *t, struct hl_block *slot)
{
	size_t i = (size_t)(slot - t->slots);

	/* slot is one of this table's, in use: removing twice, or a pointer
	 * kept across an insert that moved the entries, breaks the count */
	hl_invariant(slot >= t->slots && i < t->capacity && t->ctrl[i] < HL_TABLE_CTRL_EMPTY &&
		     t->count > 0);
	/* A group with an EMPTY byte has never been full (a removal from a
	 * full group leaves DELETED; EMPTY bytes come from a rebuild, or from
	 * this rule, which needs one already there), so no lookup went on past
	 * it: the slot can be EMPTY again. */
	if (hl_group_match(t->ctrl + (i & ~(size_t)(HL_TABLE_GROUP - 1)), HL_TABLE_CTRL_EMPTY)) {
		t->ctrl[i] = HL_TABLE_CTRL_EMPTY;
		t->growth_left++;
	} else {
		t->ctrl[i] = HL_TABLE_CTRL_DELETED;
	}
	memset(slot, 0, sizeof(*slot));
	t->count--;
}

/* Starts loading the slot a lookup or insertion of address will read (a
 * hint only): the first slot of its group whose control byte matches, else
 * the first free one. The control bytes (one a slot) mostly stay in cache;
 * the 16 slots of a group span 8 cache lines, so guessing the group's first
 * line, as this did before, missed most of the time. */
void hl_table_prefetch(const struct hl_table *t, uint64_t address);

/* Every invariant above, by a walk of the whole table: for tests, and at
 * HL_DEBUG=2 where the table is rebuilt or copied (a walk already). */
bool hl_table_is_valid(const struct hl_table *t);

/* Iteration: for (b = hl_table_next(t, NULL); b; b = hl_table_next(t, b)).
 * Removing the entry b during iteration is fine (nothing moves on removal;
 * its slot reads address 0 afterwards); inserting is not. */
struct hl_block *hl_table_next(const struct hl_table *t, struct hl_block *prev);

/* ---- maps: 64-bit keys to 64-bit values, on the same probing ------------- *
 *
 * The reporter's other lookups (an index, a database id or a pointer by a
 * hash, an address or an offset) are maps of their own type: a map's value
 * is never a block's `size` read as something else. Keys may repeat, as in
 * the block table (hl_map_find_next walks the entries of one key, for maps
 * keyed by a hash whose callers compare the values' identities). A value is
 * returned as a pointer to it, valid until the next insert; 0 is a key like
 * any other. Inside, an entry is a table slot whose address is the key and
 * whose size is the value: that correspondence is written in table.c only. */
struct hl_map {
	struct hl_table table;
};

void hl_map_init(struct hl_map *m);
void hl_map_destroy(struct hl_map *m);
size_t hl_map_count(const struct hl_map *m);
/* The value of the first entry with this key, or NULL. */
uint64_t *hl_map_find(const struct hl_map *m, uint64_t key);
/* The value of the next entry with this key after `prev` (NULL: the first). */
uint64_t *hl_map_find_next(const struct hl_map *m, uint64_t key, const uint64_t *prev);
/* A new entry for key (always added), its value set. */
void hl_map_insert(struct hl_map *m, uint64_t key, uint64_t value);
/* The first entry's value, or else (*added set) a new entry's, value 0. */
uint64_t *hl_map_find_or_insert(struct hl_map *m, uint64_t key, bool *added);

/* Pointers as map values. */
static inline uint64_t hl_map_of_ptr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}
static inline void *hl_map_ptr(uint64_t value)
{
	return (void *)(uintptr_t)value;
}

#endif /* HL_REPORTER_TABLE_H */
