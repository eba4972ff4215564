/*
 * reporter/store/query_errors.c: a process's heap errors as rows, with the
 * ids of their stacks (query_run_rows.h), for the report's loader (the web
 * UI reads them through it too).
 */
#include "query_int.h"
#include "query_run_rows.h"

#define ERROR_COLUMNS \
	"SELECT e.id, p.id, p.pid, e.kind, e.call, e.detail, e.address," \
	" e.block_address, e.block_size, e.stack_id, e.alloc_stack_id, e.free_stack_id," \
	" e.time_ns FROM errors e JOIN processes p ON p.id = e.process_id"

static void read_error(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_error_row *e = row;

	e->id = sqlite3_column_int64(st, 0);
	e->process_id = sqlite3_column_int64(st, 1);
	e->pid = sqlite3_column_int64(st, 2);
	e->kind = hl_error_kind_parse(hl_col_text(st, 3));
	e->call = hl_col_text_in(a, st, 4);
	e->detail = (uint64_t)sqlite3_column_int64(st, 5);
	e->address = (uint64_t)sqlite3_column_int64(st, 6);
	e->block_address = hl_col_maybe(st, 7);
	e->block_size = hl_col_maybe(st, 8);
	e->stack_id = hl_col_maybe(st, 9);
	e->alloc_stack_id = hl_col_maybe(st, 10);
	e->free_stack_id = hl_col_maybe(st, 11);
	e->time_ns = hl_col_maybe(st, 12);
}

static int read_errors(struct hl_store *s, sqlite3_stmt *st, struct hl_run_rows *out)
{
	return hl_query_rows(s, st, "heap errors", &out->arena, read_error, (void **)&out->errors,
			     &out->nerrors, &out->errors_cap, sizeof(*out->errors));
}

const char *const hl_process_errors_sql = ERROR_COLUMNS " WHERE e.process_id = ?1 ORDER BY e.id";

int hl_process_errors(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out)
{
	sqlite3_bind_int64(rd->errors, 1, process_id);
	return read_errors(rd->s, rd->errors, out);
}
