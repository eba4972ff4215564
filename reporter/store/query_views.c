/*
 * reporter/store/query_views.c: the web UI's own questions of the database
 * (query_views.h). Every statement binds its parameters; a run's program is
 * runs.program, the basename the history groups by.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

#include "query_views.h"
#include "store_int.h"

int hl_query_previous_run(struct hl_store *s, int64_t run_id, int64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	*out = 0;
	rc = sqlite3_prepare_v2(s->db,
		"SELECT (SELECT max(b.id) FROM runs b WHERE b.program IS r.program AND b.id < r.id)"
		" FROM runs r WHERE r.id = ?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return hl_store_fail(s, rc, "the run before");
	sqlite3_bind_int64(st, 1, run_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return hl_store_fail(s, rc, "the run before");
	snprintf(s->error, sizeof(s->error), "no run %lld", (long long)run_id);
	return -ENOENT;
}

int hl_query_test_names(struct hl_store *s, int64_t run_id, hl_test_name_fn fn, void *ctx)
{
	sqlite3_stmt *st;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(s->db,
		"SELECT id, test_name FROM processes WHERE run_id = ?1 AND test_name IS NOT NULL"
		" ORDER BY serial", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return hl_store_fail(s, rc, "test names");
	sqlite3_bind_int64(st, 1, run_id);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
		err = fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	if (!err && rc != SQLITE_DONE)
		err = hl_store_fail(s, rc, "test names");
	return err;
}
