/*
 * reporter/store/store_int.h: the store's internals, shared by the writer
 * (store.c) and the loader (store_load.c) only.
 */
#ifndef HL_REPORTER_STORE_INT_H
#define HL_REPORTER_STORE_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "frame_tree.h"
#include "table.h"

struct hl_store {
	sqlite3 *db;
	char error[512];         /* last failure, for hl_store_error() */
	/* What the run being written already has, so the next process of the
	 * run names it instead of storing it again (store.c). */
	int64_t symbols_run;     /* run these maps belong to */
	struct hl_map symbols;   /* frame_info pointer -> symbols.id */
	struct hl_map sites;     /* fingerprints whose leak_sites row has this run (keys) */
	struct hl_map stacks;    /* stack hash -> stacks.id */
	bool batch;              /* in hl_store_batch_begin's transaction */
#define HL_STORE_STATEMENTS 32
	sqlite3_stmt *statements[HL_STORE_STATEMENTS]; /* the writer's, prepared on first use */
	/* a process's modules, aggregates, loss records by the hash of their
	 * rows -> the processes.id that has them (processes.*_from) */
#define HL_STORE_SET_MODULES 0
#define HL_STORE_SET_AGGREGATES 1
#define HL_STORE_SET_LEAKS 2
#define HL_STORE_SETS 3
	struct hl_map sets[HL_STORE_SETS];
	struct hl_frame_tree tree; /* the run's call tree; node n is frames.id frame_ids[n - 1] */
	int64_t *frame_ids;
	size_t frame_ids_cap;
	struct hl_store_orphan *orphans; /* stored before their parent (store.c) */
	size_t norphans, orphans_cap;
};

/* Records "what: SQLite's message" in s->error and returns -errno: the
 * system's errno when SQLite has one, else one matching rc (-EBUSY for a
 * lock another connection holds). */
int hl_store_fail(struct hl_store *s, int rc, const char *what);
/* "file:PATH?QUERY" with PATH %-escaped (malloc'd); QUERY may be "". */
char *hl_store_file_uri(const char *path, const char *query);

/* symbols.key: a hash of a symbol row's content (module and offset NULL
 * when no module, function, file, line NULL or 0 when unknown), the same
 * in C and, registered on every connection, in SQL (migrate 12). */
int64_t hl_symbol_key(const char *module, bool has_offset, uint64_t offset,
		      const char *function, const char *file, uint32_t line);
/* An argv word of a stored JSON array (the row `a` of json_each over it) as
 * its bytes: a string is itself, an array of byte values 1-255 (a word that
 * is not UTF-8, text_bytes.h) the bytes it lists, via the aggregate
 * hl_bytes() registered on every connection; anything else NULL. */
#define HL_SQL_ARGV_WORD(a) \
	"CASE " a ".type WHEN 'text' THEN " a ".value WHEN 'array' THEN" \
	" (SELECT hl_bytes(byte.value) FROM json_each(" a ".value) byte) END"
/* Forgets the maps of the run being written (a new run, or a rollback took
 * their rows away). */
void hl_store_forget_run(struct hl_store *s);

#endif /* HL_REPORTER_STORE_INT_H */
