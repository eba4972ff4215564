/*
 * reporter/store/query_checks.c: on-demand leak checks as rows: the totals
 * by class of each check, the loss records each kept and the threads a
 * scan could not stop (query_run_rows.h): a process's, for the report's
 * loader (the web UI reads them through it too).
 */
#include "query_int.h"
#include "query_run_rows.h"

#define CHECK_COLUMNS \
	"SELECT p.id, p.pid, c.seq, c.time_ns, c.by_signal, c.all_threads_stopped," \
	" c.scanned, c.records_total, c.leak_class, c.bytes, c.blocks" \
	" FROM checks c JOIN processes p ON p.id = c.process_id"
#define RECORD_COLUMNS \
	"SELECT p.id, p.pid, r.seq, r.rank, r.stack_id, r.leak_class, r.bytes," \
	" r.indirect_bytes, r.blocks, r.new_bytes, r.new_indirect_bytes, r.new_blocks," \
	" k.leaf_frame_id, k.truncated, r.suppressed, r.suppression, r.fingerprint" \
	" FROM check_records r JOIN processes p ON p.id = r.process_id" \
	" LEFT JOIN stacks k ON k.id = r.stack_id"

static void read_total(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_check_row *c = row;

	(void)a;
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

static void read_record(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_check_record_row *r = row;

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
	r->leaf_frame_id = hl_col_maybe(st, 12);
	r->truncated = hl_col_maybe(st, 13);
	r->suppressed = sqlite3_column_int(st, 14) != 0;
	r->suppression = hl_col_text_in(a, st, 15);
	r->fingerprint = hl_col_text_in(a, st, 16);
}

static void read_unstopped(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_unstopped_row *u = row;

	(void)a;
	u->seq = sqlite3_column_int64(st, 0);
	u->tid = (uint32_t)sqlite3_column_int64(st, 1);
}

static int read_totals(struct hl_store *s, sqlite3_stmt *st, struct hl_run_rows *out)
{
	return hl_query_rows(s, st, "checks", &out->arena, read_total, (void **)&out->checks,
			     &out->nchecks, &out->checks_cap, sizeof(*out->checks));
}

static int read_records(struct hl_store *s, sqlite3_stmt *st, struct hl_run_rows *out)
{
	return hl_query_rows(s, st, "check records", &out->arena, read_record,
			     (void **)&out->records, &out->nrecords, &out->records_cap,
			     sizeof(*out->records));
}

const char *const hl_process_checks_sql =
	CHECK_COLUMNS " WHERE c.process_id = ?1 ORDER BY c.seq, c.rowid";
const char *const hl_process_records_sql =
	RECORD_COLUMNS " WHERE r.process_id = ?1 ORDER BY r.seq, r.rank";
const char *const hl_process_unstopped_sql =
	"SELECT check_seq, tid FROM unstopped_threads WHERE process_id = ?1"
	" ORDER BY check_seq, rowid";

int hl_process_checks(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out)
{
	int err;

	sqlite3_bind_int64(rd->checks, 1, process_id);
	err = read_totals(rd->s, rd->checks, out);
	sqlite3_bind_int64(rd->records, 1, process_id);
	if (!err)
		err = read_records(rd->s, rd->records, out);
	sqlite3_bind_int64(rd->unstopped, 1, process_id);
	if (!err)
		err = hl_query_rows(rd->s, rd->unstopped, "unstopped threads", &out->arena,
				    read_unstopped, (void **)&out->unstopped, &out->nunstopped,
				    &out->unstopped_cap, sizeof(*out->unstopped));
	return err;
}
