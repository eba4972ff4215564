/*
 * reporter/store/query_run_rows.h: a process's heap errors, on-demand
 * checks and heap timeline as rows (model/run_rows.h: struct
 * hl_run_rows), each query in a file of its own (query_errors.c,
 * query_checks.c, query_timeline.c). Part of the one query layer
 * (store_query.h). Each fills out (hl_run_rows_init'ed) and returns 0 or
 * -errno; a run or process that does not exist has no rows.
 */
#ifndef HL_REPORTER_QUERY_RUN_ROWS_H
#define HL_REPORTER_QUERY_RUN_ROWS_H

#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* At most this many rows of each kind: a page lists them all at once. */
#define HL_QUERY_ROWS_MAX 10000

/* A process's heap in use over time, in time order: out->samples. */
int hl_query_timeline(struct hl_store *s, int64_t process_id, struct hl_run_rows *out);

/* The same rows of one process at a time, for a reader of every process
 * of a run (the report's loader, store_load.c): the statements are the
 * run's queries scoped to a process and prepared once. Each appends to
 * out and returns 0 or -errno. */
struct hl_process_rows {
	struct hl_store *s;
	struct sqlite3_stmt *leaks, *errors, *checks, *records, *unstopped, *timeline;
	struct sqlite3_stmt *fd_summary, *fds;
};
int hl_process_rows_open(struct hl_process_rows *rd, struct hl_store *s);
void hl_process_rows_close(struct hl_process_rows *rd);
/* Its loss records in loss record order (out->leaks, no frame named). */
int hl_process_leaks(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out);
/* Its heap errors as they came (out->errors). */
int hl_process_errors(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out);
/* Its descriptors open at exit (out->fds, in listing order; out->fds_tracked
 * and the counts from its summary). */
int hl_process_fds(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out);
/* Its checks (out->checks, by seq), their records (out->records) and the
 * threads its scans could not stop (out->unstopped). */
int hl_process_checks(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out);
/* Its timeline as taken (threads do not always sample in time order). */
int hl_process_timeline(struct hl_process_rows *rd, int64_t process_id,
			struct hl_run_rows *out);

#endif /* HL_REPORTER_QUERY_RUN_ROWS_H */
