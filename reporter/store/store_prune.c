/*
 * reporter/store/store_prune.c: `heapledger db prune`: keeps the newest runs of a
 * database and removes everything only the others referenced (store.h).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

/* Every table below a run, by the run ids in temp table doomed. Deleted
 * child tables first, through their process (or stack) index, with foreign
 * keys off: cascading from runs would look up leaks.stack_id, errors'
 * stacks and frames.symbol_id, which have no index, once per deleted row. */
static const char *const prune_sql[] = {
	"CREATE TEMP TABLE doomed_processes AS SELECT id FROM processes"
	" WHERE run_id IN (SELECT id FROM temp.doomed)",
	"DELETE FROM stack_aggregate_rows WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM stacks WHERE run_id IN (SELECT id FROM temp.doomed)",
	"DELETE FROM frames WHERE run_id IN (SELECT id FROM temp.doomed)",
	"DELETE FROM leak_records WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM errors WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM open_fds WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM fd_summaries WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM timeline WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM stack_series WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM size_bins WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM checks WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM check_records WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM unstopped_threads WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM module_rows WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM summaries WHERE process_id IN (SELECT id FROM temp.doomed_processes)",
	"DELETE FROM processes WHERE id IN (SELECT id FROM temp.doomed_processes)",
	/* symbols are shared by all runs: those no frame names any more */
	"DELETE FROM symbols WHERE id NOT IN (SELECT symbol_id FROM frames"
	" WHERE symbol_id IS NOT NULL)",
	"DELETE FROM run_labels WHERE run_id IN (SELECT id FROM temp.doomed)",
	"DELETE FROM runs WHERE id IN (SELECT id FROM temp.doomed)",
	/* Leak sites: gone with their last run, else their first run is the
	 * oldest remaining run that leaked there (one pass over the leaks of
	 * the runs whose first run went). */
	"DELETE FROM leak_sites WHERE last_run_id NOT IN (SELECT id FROM runs)",
	"CREATE TEMP TABLE first_runs AS SELECT l.fingerprint, min(p.run_id) AS run_id"
	" FROM leaks l JOIN processes p ON p.id = l.process_id"
	" WHERE l.fingerprint IN (SELECT fingerprint FROM leak_sites"
	"  WHERE first_run_id NOT IN (SELECT id FROM runs))"
	" GROUP BY l.fingerprint",
	"UPDATE leak_sites SET first_run_id = (SELECT run_id FROM temp.first_runs f"
	" WHERE f.fingerprint = leak_sites.fingerprint)"
	" WHERE first_run_id NOT IN (SELECT id FROM runs)"
	" AND fingerprint IN (SELECT fingerprint FROM temp.first_runs)",
	"DELETE FROM leak_sites WHERE first_run_id NOT IN (SELECT id FROM runs)",
};

static int prune_fail(struct hl_store *s, int rc, const char *what)
{
	return hl_store_fail(s, rc, what);
}

int hl_store_prune(struct hl_store *s, uint64_t keep, bool vacuum, struct hl_prune_result *out)
{
	sqlite3_stmt *st;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sqlite3_exec(s->db, "PRAGMA foreign_keys=OFF; BEGIN IMMEDIATE;"
			  " DROP TABLE IF EXISTS temp.doomed; DROP TABLE IF EXISTS temp.doomed_processes;"
			  " DROP TABLE IF EXISTS temp.first_runs;", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
		return prune_fail(s, rc, "prune");
	}
	/* the newest runs are the highest ids, as `report` takes the latest */
	rc = sqlite3_prepare_v2(s->db, "CREATE TEMP TABLE doomed AS SELECT id FROM runs"
				" ORDER BY id DESC LIMIT -1 OFFSET ?", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, keep > INT64_MAX ? INT64_MAX : (int64_t)keep);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, "SELECT (SELECT count(*) FROM temp.doomed),"
					" (SELECT count(*) FROM processes WHERE run_id IN"
					"  (SELECT id FROM temp.doomed)), (SELECT count(*) FROM runs)",
					-1, &st, NULL);
	if (rc == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			out->runs_removed = (uint64_t)sqlite3_column_int64(st, 0);
			out->processes_removed = (uint64_t)sqlite3_column_int64(st, 1);
			out->runs_kept = (uint64_t)sqlite3_column_int64(st, 2) - out->runs_removed;
		}
		sqlite3_finalize(st);
	}
	for (size_t i = 0; rc == SQLITE_OK && out->runs_removed &&
	     i < sizeof(prune_sql) / sizeof(prune_sql[0]); i++)
		rc = sqlite3_exec(s->db, prune_sql[i], NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "DROP TABLE IF EXISTS temp.doomed;"
				  " DROP TABLE IF EXISTS temp.doomed_processes;"
				  " DROP TABLE IF EXISTS temp.first_runs; COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int err = prune_fail(s, rc, "prune");

		sqlite3_exec(s->db, "ROLLBACK; PRAGMA foreign_keys=ON", NULL, NULL, NULL);
		memset(out, 0, sizeof(*out));
		return err;
	}
	sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
	/* the store's per-run maps name rows of the runs it writes, never of
	 * pruned ones; VACUUM gives the freed pages back to the file system */
	if (vacuum && (rc = sqlite3_exec(s->db, "VACUUM", NULL, NULL, NULL)) != SQLITE_OK)
		return prune_fail(s, rc, "vacuum");
	return 0;
}
