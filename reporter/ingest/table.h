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

/* First entry with this address, or NULL. */
struct hl_block *hl_table_find(const struct hl_table *t, uint64_t address);
/* Next entry with this address after `prev` (NULL: start), or NULL. */
struct hl_block *hl_table_find_next(const struct hl_table *t, uint64_t address,
				    struct hl_block *prev);
/* A new slot holding `address` (other fields zero); always adds, even if the
 * address is present. Grows the table as needed. */
struct hl_block *hl_table_insert(struct hl_table *t, uint64_t address);
/* The first entry with this address, or else (*added set) a new slot
 * holding it, as hl_table_insert would make. (A lookup then an insert:
 * remembering the free slot the lookup passed, to skip the second walk,
 * measured the same on replayed real event streams, the group being in
 * cache by then.) */
struct hl_block *hl_table_find_or_insert(struct hl_table *t, uint64_t address, bool *added);
/* Removes the entry `slot` points to. */
void hl_table_remove(struct hl_table *t, struct hl_block *slot);
/* Copies every entry of src into dst (dst must be empty). */
void hl_table_copy(struct hl_table *dst, const struct hl_table *src);

/* Fibonacci hashing; the low 4 bits of heap addresses carry no
 * information. The group comes from the top bits, the tag from bits below
 * them. */
static inline uint64_t hl_table_hash(uint64_t address)
{
	return (address >> 4) * 0x9e3779b97f4a7c15ull;
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
