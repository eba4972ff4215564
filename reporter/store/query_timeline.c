/*
 * reporter/store/query_timeline.c: a process's heap in use over time
 * (query_run_rows.h), in time order: the chart's x axis. (The report
 * keeps them as taken, store_load.c: threads do not always sample in time
 * order.)
 */
#include "query_int.h"
#include "query_run_rows.h"

int hl_query_timeline(struct hl_store *s, int64_t process_id, struct hl_run_rows *out)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT time_ns, in_use_bytes, in_use_blocks FROM timeline"
		" WHERE process_id = ?1 ORDER BY time_ns", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hl_grow((void **)&out->samples, &out->samples_cap, out->nsamples,
			sizeof(*out->samples));
		out->samples[out->nsamples++] = (struct hl_report_sample){
			(uint64_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1),
			(uint64_t)sqlite3_column_int64(st, 2) };
	}
	err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "timeline");
	sqlite3_finalize(st);
	return err;
}
