/*
 * reporter/store/query_sizes.c: the allocation-size histogram of a process
 * or a run (query_sizes.h), from size_bins. Every statement binds its
 * parameters; bins outside 0..64 (a hand-edited file) are skipped, never
 * indexed.
 */
#include "query_sizes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "query_int.h"
#include "store_query.h"

/* The processes of the scope: ?1 the run or the process, ?2 1 for a run. */
#define SCOPE "(CASE WHEN ?2 THEN p.run_id = ?1 ELSE p.id = ?1 END)"

static int bind_scope(struct hl_store *s, const char *sql, bool whole_run, int64_t id,
		      sqlite3_stmt **st)
{
	int err = hl_query_prepare(s, sql, st);

	if (err)
		return err;
	sqlite3_bind_int64(*st, 1, id);
	sqlite3_bind_int(*st, 2, whole_run);
	return 0;
}

/* How many processes the scope has and how many have a histogram. */
static int count_processes(struct hl_store *s, bool whole_run, int64_t id,
			   struct hl_size_histogram *out)
{
	sqlite3_stmt *st;
	int rc, err = bind_scope(s,
		"SELECT count(*), sum(EXISTS (SELECT 1 FROM size_bins b WHERE b.process_id = p.id))"
		" FROM processes p WHERE " SCOPE, whole_run, id, &st);

	if (err)
		return err;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->processes = (uint64_t)sqlite3_column_int64(st, 0);
		out->counted = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : hl_query_fail(s, "size histogram");
}

static int add_bins(struct hl_store *s, bool whole_run, int64_t id, struct hl_size_histogram *out)
{
	sqlite3_stmt *st;
	int rc, err = bind_scope(s,
		"SELECT b.bin, sum(b.allocs), sum(b.bytes) FROM processes p"
		" JOIN size_bins b ON b.process_id = p.id WHERE " SCOPE " GROUP BY b.bin",
		whole_run, id, &st);

	if (err)
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t bin = sqlite3_column_int64(st, 0);

		if (bin < 0 || bin >= HL_SIZE_BINS)
			continue;
		out->bins.allocs[bin] = (uint64_t)sqlite3_column_int64(st, 1);
		out->bins.bytes[bin] = (uint64_t)sqlite3_column_int64(st, 2);
	}
	err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "size histogram");
	sqlite3_finalize(st);
	return err;
}

int hl_query_size_histogram(struct hl_store *s, bool whole_run, int64_t id,
			    struct hl_size_histogram *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	err = whole_run ? hl_query_run_exists(s, id) : 0;
	if (!err)
		err = count_processes(s, whole_run, id, out);
	if (!err && !whole_run && !out->processes) {
		snprintf(s->error, sizeof(s->error), "no process %lld in the database",
			 (long long)id);
		return -ENOENT;
	}
	return err ? err : add_bins(s, whole_run, id, out);
}
