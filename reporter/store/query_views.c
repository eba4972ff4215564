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
