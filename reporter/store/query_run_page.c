/*
 * reporter/store/query_run_page.c: one stored run with its processes
 * (query_run_page.h). A process's summary columns come from the one list
 * in model/run_rows.h (HL_SUMMARY_COLUMNS), so the query, the struct and
 * the JSON cannot disagree on them.
 */
#include "query_run_page.h"

#include "query_int.h"
#include "query_runs.h"

#define SUMMARY_COLUMN(column) " m." #column ","
/* What a process leaked, bytes and records alike: HL_LOST_RECORD. */
#define LOST_RECORD HL_LOST_RECORD
#define PROCESS_COLUMNS \
	"SELECT p.id, p.serial, p.pid, p.ppid, p.parent_id, p.origin, p.exe, p.argv," \
	" p.started_ns, p.ended_ns, p.exit_how, p.exit_status, p.exit_signal, p.scanned," \
	" p.no_exit_record, p.recovered_events, p.fatal_signal, p.fatal_code," \
	" p.fatal_address, p.fatal_stack_id, p.test_name, p.all_threads_stopped, p.standalone," \
	HL_SUMMARY_COLUMNS(SUMMARY_COLUMN)
/* What the run page counts of each process (not the report: it reads
 * the records themselves). */
#define PROCESS_COUNTS \
	" (SELECT count(*) FROM leaks l WHERE l.process_id = p.id)," \
	" (SELECT coalesce(sum(l.bytes), 0) FROM leaks l WHERE l.process_id = p.id" \
	"  AND " LOST_RECORD ")," \
	" (SELECT count(*) FROM leaks l WHERE l.process_id = p.id AND " LOST_RECORD ")," \
	" (SELECT count(*) FROM timeline t WHERE t.process_id = p.id)"
#define PROCESS_FROM \
	" FROM processes p LEFT JOIN summaries m ON m.process_id = p.id" \
	" WHERE p.run_id = ?1 ORDER BY p.serial"
#define PROCESS_ROWS PROCESS_COLUMNS PROCESS_COUNTS PROCESS_FROM
/* The same without the counts: the summary's last column ends the list. */
#define PROCESS_ROWS_UNCOUNTED PROCESS_COLUMNS " NULL" PROCESS_FROM

/* Where the columns after the summary's start. */
#define FIRST_SUMMARY 23
#define AFTER_SUMMARY (FIRST_SUMMARY + HL_SUMMARY_COUNT)

static void read_process(struct hl_bump *a, sqlite3_stmt *st, struct hl_process_row *p)
{
	p->id = sqlite3_column_int64(st, 0);
	p->serial = sqlite3_column_int64(st, 1);
	p->pid = sqlite3_column_int64(st, 2);
	p->ppid = sqlite3_column_int64(st, 3);
	p->parent_id = hl_col_maybe(st, 4);
	p->origin = hl_col_text_in(a, st, 5);
	p->exe = hl_col_text_in(a, st, 6);
	p->argv = hl_col_text_in(a, st, 7);
	p->started_ns = hl_col_maybe(st, 8);
	p->ended_ns = hl_col_maybe(st, 9);
	p->exit_how = hl_col_text_in(a, st, 10);
	p->exit_status = hl_col_maybe(st, 11);
	p->exit_signal = hl_col_maybe(st, 12);
	p->scanned = sqlite3_column_int(st, 13) != 0;
	p->no_exit_record = sqlite3_column_int(st, 14) != 0;
	p->recovered_events = hl_col_maybe(st, 15);
	p->fatal_signal = hl_col_maybe(st, 16);
	p->fatal_code = hl_col_maybe(st, 17);
	p->fatal_address = hl_col_maybe(st, 18);
	p->fatal_stack_id = hl_col_maybe(st, 19);
	p->test_name = hl_col_text_in(a, st, 20);
	p->all_threads_stopped = sqlite3_column_int(st, 21) != 0;
	p->standalone = hl_col_text_in(a, st, 22);
	for (int i = 0; i < HL_SUMMARY_COUNT; i++)
		p->summary[i] = hl_col_maybe(st, FIRST_SUMMARY + i);
	if (sqlite3_column_count(st) <= AFTER_SUMMARY + 1)
		return; /* PROCESS_ROWS_UNCOUNTED */
	p->leak_records = (uint64_t)sqlite3_column_int64(st, AFTER_SUMMARY);
	p->leaked_bytes = (uint64_t)sqlite3_column_int64(st, AFTER_SUMMARY + 1);
	p->leaked_records = (uint64_t)sqlite3_column_int64(st, AFTER_SUMMARY + 2);
	p->samples = (uint64_t)sqlite3_column_int64(st, AFTER_SUMMARY + 3);
}

static void read_process_row(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	read_process(a, st, row);
}

static int query_processes(struct hl_store *s, int64_t run_id, const char *sql,
			   struct hl_run_page *out)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, sql, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	err = hl_query_rows(s, st, "processes", &out->run.arena, read_process_row,
			    (void **)&out->procs, &out->nprocs, &out->procs_cap, sizeof(*out->procs));
	sqlite3_finalize(st);
	return err;
}

int hl_query_processes(struct hl_store *s, int64_t run_id, struct hl_run_page *out)
{
	return query_processes(s, run_id, PROCESS_ROWS_UNCOUNTED, out);
}

int hl_query_run(struct hl_store *s, int64_t run_id, struct hl_run_page *out)
{
	int err = hl_query_run_row(s, run_id, &out->run);

	return err ? err : query_processes(s, run_id, PROCESS_ROWS, out);
}
