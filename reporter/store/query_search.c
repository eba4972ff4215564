/*
 * reporter/store/query_search.c: symbols by a piece of their name, file or
 * module (query_search.h); the term is matched as LIKE text, its own % and
 * _ escaped.
 */
#include <stdlib.h>

#include "query_int.h"
#include "query_search.h"

static void read_symbol(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_symbol_row *y = row;

	y->function = hl_col_text_in(a, st, 0);
	y->file = hl_col_text_in(a, st, 1);
	y->line = hl_col_maybe(st, 2);
	y->module = hl_col_text_in(a, st, 3);
	y->runs = sqlite3_column_int64(st, 4);
	y->last_run = sqlite3_column_int64(st, 5);
	y->first_run = sqlite3_column_int64(st, 6);
}

int hl_query_search(struct hl_store *s, const char *term, int64_t limit, struct hl_run_rows *out)
{
	char *like = hl_like_pattern(term);
	sqlite3_stmt *st;
	int err = hl_query_prepare(s,
		"SELECT y.function, y.file, y.line, y.module, count(DISTINCT f.run_id),"
		" max(f.run_id) AS last_run, min(f.run_id)"
		" FROM symbols y JOIN frames f ON f.symbol_id = y.id"
		" WHERE y.function LIKE ?1 ESCAPE '\\' OR y.file LIKE ?1 ESCAPE '\\'"
		" OR y.module LIKE ?1 ESCAPE '\\'"
		" GROUP BY y.function, y.file, y.line, y.module"
		" ORDER BY last_run DESC, y.function LIMIT ?2", &st);

	if (!err) {
		sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, limit);
		err = hl_query_rows(s, st, "search", &out->arena, read_symbol, (void **)&out->symbols,
				    &out->nsymbols, &out->symbols_cap, sizeof(*out->symbols));
		sqlite3_finalize(st);
	}
	free(like);
	return err;
}
