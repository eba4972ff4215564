/*
 * reporter/store/query_int.h: what the query layer's files share (never
 * included outside reporter/store/): preparing a statement, reading a
 * column into a model value, a LIKE pattern from a user's filter text.
 *
 * Every statement takes its values as bound parameters; a failure records
 * "what: SQLite's message" in hl_store_error() and returns -EIO.
 */
#ifndef HL_REPORTER_QUERY_INT_H
#define HL_REPORTER_QUERY_INT_H

#include <sqlite3.h>
#include <stdint.h>

#include "run_list.h"
#include "store_int.h"

/* "what: message" in s->error; -EIO. */
int hl_query_fail(struct hl_store *s, const char *what);
/* sqlite3_prepare_v2 of sql, or hl_query_fail(s, "prepare"). */
int hl_query_prepare(struct hl_store *s, const char *sql, sqlite3_stmt **st);
/* Steps a statement that yields one count and finalizes it (0 if none). */
int64_t hl_query_count(sqlite3_stmt *st);

/* Column i as text, NULL for NULL, valid until the next step. */
const char *hl_col_text(sqlite3_stmt *st, int i);
/* The same, copied into a (NULL stays NULL). */
const char *hl_col_text_in(struct hl_bump *a, sqlite3_stmt *st, int i);
/* Column i as a value that may be NULL. */
struct hl_maybe hl_col_maybe(sqlite3_stmt *st, int i);

/* "%filter%" for LIKE ... ESCAPE '\', with the filter's own %, _ and \
 * escaped; malloc'd. */
char *hl_like_pattern(const char *filter);

#endif /* HL_REPORTER_QUERY_INT_H */
