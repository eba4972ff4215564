/*
 * reporter/store/query_timeline.c: a process's heap in use over time
 * (query_run_rows.h): in time order for the chart's x axis, or as taken
 * for the report (threads do not always sample in time order); one column
 * list and one reader.
 */
#include "query_int.h"
#include "query_run_rows.h"

#define SAMPLE_COLUMNS \
	"SELECT time_ns, in_use_bytes, in_use_blocks FROM timeline WHERE process_id = ?1"

static void read_sample(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	(void)a;
	*(struct hl_report_sample *)row = (struct hl_report_sample){
		(uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
		(uint64_t)sqlite3_column_int64(st, 2) };
}

static int read_samples(struct hl_store *s, sqlite3_stmt *st, int64_t process_id,
			struct hl_run_rows *out)
{
	sqlite3_bind_int64(st, 1, process_id);
	return hl_query_rows(s, st, "timeline", &out->arena, read_sample, (void **)&out->samples,
			     &out->nsamples, &out->samples_cap, sizeof(*out->samples));
}

int hl_query_timeline(struct hl_store *s, int64_t process_id, struct hl_run_rows *out)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, SAMPLE_COLUMNS " ORDER BY time_ns", &st);

	if (err)
		return err;
	err = read_samples(s, st, process_id, out);
	sqlite3_finalize(st);
	return err;
}

const char *const hl_process_timeline_sql = SAMPLE_COLUMNS " ORDER BY rowid";

int hl_process_timeline(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out)
{
	return read_samples(rd->s, rd->timeline, process_id, out);
}
