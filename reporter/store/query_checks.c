/*
 * reporter/store/query_checks.c: a run's on-demand leak checks as rows: the
 * totals by class of each check and the loss records each kept
 * (query_run_rows.h).
 */
#include "query_int.h"
#include "query_run_rows.h"

static int read_totals(struct hl_store *s, int64_t run_id, struct hl_run_rows *out)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT p.id, p.pid, c.seq, c.time_ns, c.by_signal, c.all_threads_stopped,"
		" c.scanned, c.records_total, c.leak_class, c.bytes, c.blocks"
		" FROM checks c JOIN processes p ON p.id = c.process_id"
		" WHERE p.run_id = ?1 ORDER BY p.serial, c.seq, c.leak_class LIMIT ?2", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int64(st, 2, HL_QUERY_ROWS_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hl_check_row *c;

		hl_grow((void **)&out->checks, &out->checks_cap, out->nchecks, sizeof(*out->checks));
		c = &out->checks[out->nchecks++];
		c->process_id = sqlite3_column_int64(st, 0);
		c->pid = sqlite3_column_int64(st, 1);
		c->seq = sqlite3_column_int64(st, 2);
		c->time_ns = sqlite3_column_int64(st, 3);
		c->by_signal = sqlite3_column_int(st, 4) != 0;
		c->all_threads_stopped = sqlite3_column_int(st, 5) != 0;
		c->scanned = sqlite3_column_int(st, 6) != 0;
		c->records_total = sqlite3_column_int64(st, 7);
		c->leak_class = hl_leak_class_from_word(hl_col_text(st, 8));
		c->bytes = (uint64_t)sqlite3_column_int64(st, 9);
		c->blocks = (uint64_t)sqlite3_column_int64(st, 10);
	}
	err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "checks");
	sqlite3_finalize(st);
	return err;
}

static int read_records(struct hl_store *s, int64_t run_id, struct hl_run_rows *out)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT p.id, p.pid, r.seq, r.rank, r.stack_id, r.leak_class, r.bytes,"
		" r.indirect_bytes, r.blocks, r.new_bytes, r.new_indirect_bytes, r.new_blocks"
		" FROM check_records r JOIN processes p ON p.id = r.process_id"
		" WHERE p.run_id = ?1 ORDER BY p.serial, r.seq, r.rank LIMIT ?2", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int64(st, 2, HL_QUERY_ROWS_MAX);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hl_check_record_row *r;

		hl_grow((void **)&out->records, &out->records_cap, out->nrecords,
			sizeof(*out->records));
		r = &out->records[out->nrecords++];
		r->process_id = sqlite3_column_int64(st, 0);
		r->pid = sqlite3_column_int64(st, 1);
		r->seq = sqlite3_column_int64(st, 2);
		r->rank = sqlite3_column_int64(st, 3);
		r->stack_id = hl_col_maybe(st, 4);
		r->leak_class = hl_leak_class_from_word(hl_col_text(st, 5));
		r->bytes = (uint64_t)sqlite3_column_int64(st, 6);
		r->indirect_bytes = (uint64_t)sqlite3_column_int64(st, 7);
		r->blocks = (uint64_t)sqlite3_column_int64(st, 8);
		r->new_bytes = sqlite3_column_int64(st, 9);
		r->new_indirect_bytes = sqlite3_column_int64(st, 10);
		r->new_blocks = sqlite3_column_int64(st, 11);
	}
	err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "check records");
	sqlite3_finalize(st);
	return err;
}

int hl_query_checks(struct hl_store *s, int64_t run_id, struct hl_run_rows *out)
{
	int err = read_totals(s, run_id, out);

	return err ? err : read_records(s, run_id, out);
}
