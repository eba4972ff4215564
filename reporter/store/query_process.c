/*
 * reporter/store/query_process.c: the statements that read one process of
 * a run at a time (query_run_rows.h: struct hl_process_rows), prepared once
 * for a reader of every process, and a stored argv as strings. Each
 * statement is the run-wide query of its file (query_leaks.c,
 * query_errors.c, query_checks.c, query_timeline.c) scoped to a process:
 * the report and the web UI read the same columns through the same row
 * readers.
 */
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "query_run_rows.h"

int hl_process_rows_open(struct hl_process_rows *rd, struct hl_store *s)
{
	sqlite3_stmt **st[] = { &rd->leaks, &rd->errors, &rd->checks, &rd->records,
				&rd->unstopped, &rd->timeline, &rd->fd_summary, &rd->fds };
	const char *sql[] = { hl_process_leaks_sql, hl_process_errors_sql, hl_process_checks_sql,
			      hl_process_records_sql, hl_process_unstopped_sql,
			      hl_process_timeline_sql, hl_process_fd_summary_sql,
			      hl_process_fds_sql };
	int err = 0;

	memset(rd, 0, sizeof(*rd));
	rd->s = s;
	for (size_t i = 0; !err && i < sizeof(st) / sizeof(st[0]); i++)
		err = hl_query_prepare(s, sql[i], st[i]);
	return err;
}

void hl_process_rows_close(struct hl_process_rows *rd)
{
	sqlite3_finalize(rd->leaks);
	sqlite3_finalize(rd->errors);
	sqlite3_finalize(rd->checks);
	sqlite3_finalize(rd->records);
	sqlite3_finalize(rd->unstopped);
	sqlite3_finalize(rd->timeline);
	sqlite3_finalize(rd->fd_summary);
	sqlite3_finalize(rd->fds);
	memset(rd, 0, sizeof(*rd));
}

static void read_arg(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	*(const char **)row = hl_col_text_in(a, st, 0);
}

void hl_query_argv(struct hl_store *s, struct hl_bump *a, const char *text, const char ***argv,
		   uint32_t *argc)
{
	const char **v = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;

	if (text && sqlite3_prepare_v2(s->db,
		"SELECT coalesce(" HL_SQL_ARGV_WORD("a") ", '') FROM json_each(coalesce("
		" CASE WHEN json_valid(?1) THEN CASE WHEN json_type(?1) = 'array' THEN ?1 END END,"
		" '[]')) a", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
		hl_query_rows(s, st, "argv", a, read_arg, (void **)&v, &n, &cap, sizeof(*v));
	}
	sqlite3_finalize(st);
	*argv = hl_bump_alloc(a, (n + 1) * sizeof(**argv));
	if (n)
		memcpy(*argv, v, n * sizeof(*v));
	free(v);
	*argc = (uint32_t)n;
}
