/*
 * reporter/store_int.h: the store's internals, shared by the writer
 * (store.c) and the loader (store_load.c) only.
 */
#ifndef HL_REPORTER_STORE_INT_H
#define HL_REPORTER_STORE_INT_H

#include <sqlite3.h>

#include "table.h"

struct hl_store {
	sqlite3 *db;
	char error[512];         /* last failure, for hl_store_error() */
	int64_t symbols_run;     /* run the symbol and site maps belong to */
	struct hl_table symbols; /* frame_info pointer -> symbols.id */
	struct hl_table sites;   /* fingerprints whose leak_sites row has this run */
	struct hl_store_orphan *orphans; /* stored before their parent (store.c) */
	size_t norphans, orphans_cap;
};

/* Records "what: SQLite's message" in s->error and returns -errno: the
 * system's errno when SQLite has one, else one matching rc (-EBUSY for a
 * lock another connection holds). */
int hl_store_fail(struct hl_store *s, int rc, const char *what);

#endif /* HL_REPORTER_STORE_INT_H */
