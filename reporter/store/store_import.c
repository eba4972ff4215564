/*
 * reporter/store/store_import.c: `heapledger import`: merges the runs of another
 * heapledger database into this one (store.h). A run is known by its UUID,
 * so a run already present is skipped and importing twice adds nothing.
 *
 * Rows are copied table by table with INSERT ... SELECT from the attached
 * file, every row id moved past the largest id of its table here (so the
 * copies never collide) and every reference moved with its target table.
 * The columns come from the table itself (PRAGMA table_info), so a column
 * added by a later migration is copied without a change here.
 *
 * The other file is foreign, maybe crafted: it is checked whole (a truncated
 * file is refused, not half imported), opened read-only and never upgraded
 * (import never writes to its input), every view and trigger in it must be
 * ours word for word (a view named like one of our tables, or a recursive
 * one, could run forever while this file's write lock is held, and every
 * `run` storing here meanwhile would give up), and the import as a whole
 * is interrupted after IMPORT_MAX_MS.
 *
 * A run read from a JSON report is written by the store's own functions
 * (hl_store_run_begin, hl_store_process), as `run` and `daemon` write, in
 * one transaction around them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"
#include "store.h"
#include "store_int.h"
#include "util.h"

/* The longest an import of a database may take, its reads of the foreign
 * file included (a legitimate one of 1,000 runs takes seconds). */
#define IMPORT_MAX_MS 60000

/* A copied table: which rows, and the table each id column points into. */
struct import_table {
	const char *name;
	const char *where;        /* rows of the imported runs (temp.imp_runs, imp_processes) */
	const char *remap[7][2];  /* column -> table whose ids it holds */
};

static const struct import_table tables[] = {
	{ "runs", "id IN (SELECT id FROM temp.imp_runs)", { { "id", "runs" } } },
	{ "run_labels", "run_id IN (SELECT id FROM temp.imp_runs)", { { "run_id", "runs" } } },
	{ "processes", "run_id IN (SELECT id FROM temp.imp_runs)",
	  { { "id", "processes" }, { "run_id", "runs" }, { "parent_id", "processes" },
	    { "leaks_from", "processes" }, { "aggregates_from", "processes" },
	    { "modules_from", "processes" }, { "fatal_stack_id", "stacks" } } },
	{ "summaries", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
	{ "module_rows", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "id", "module_rows" }, { "process_id", "processes" } } },
	/* the symbols the imported frames name; those we have are merged after */
	{ "symbols", "id IN (SELECT symbol_id FROM src.frames WHERE run_id IN"
	  " (SELECT id FROM temp.imp_runs))", { { "id", "symbols" } } },
	{ "frames", "run_id IN (SELECT id FROM temp.imp_runs)",
	  { { "id", "frames" }, { "run_id", "runs" }, { "parent_id", "frames" },
	    { "symbol_id", "symbols" } } },
	{ "stacks", "run_id IN (SELECT id FROM temp.imp_runs)",
	  { { "id", "stacks" }, { "run_id", "runs" }, { "leaf_frame_id", "frames" } } },
	{ "stack_aggregate_rows", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" }, { "stack_id", "stacks" } } },
	{ "leak_records", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "id", "leak_records" }, { "process_id", "processes" }, { "stack_id", "stacks" } } },
	{ "errors", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "id", "errors" }, { "process_id", "processes" }, { "stack_id", "stacks" },
	    { "alloc_stack_id", "stacks" }, { "free_stack_id", "stacks" } } },
	{ "fd_summaries", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
	{ "open_fds", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" }, { "stack_id", "stacks" } } },
	{ "timeline", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
	{ "stack_series", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" }, { "stack_id", "stacks" } } },
	{ "size_bins", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
	{ "checks", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
	{ "check_records", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" }, { "stack_id", "stacks" } } },
	{ "unstopped_threads", "process_id IN (SELECT id FROM temp.imp_processes)",
	  { { "process_id", "processes" } } },
};

static size_t symbols_table(void)
{
	size_t i = 0;

	while (strcmp(tables[i].name, "symbols"))
		i++;
	return i;
}

static int import_fail(struct hl_store *s, int rc, const char *what)
{
	return hl_store_fail(s, rc, what);
}

static int64_t query_i64(struct hl_store *s, const char *sql, int *rc)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if ((*rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		*rc = sqlite3_errcode(s->db);
	sqlite3_finalize(st);
	return v;
}

/* How far the ids of `table` move: past the largest id here. */
static int64_t offset_of(struct hl_store *s, const char *table, int *rc)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM main.%s", table);
	return query_i64(s, sql, rc);
}

static int64_t table_offset(struct hl_store *s, const char *table, int *rc)
{
	static const char *const with_ids[] = { "runs", "processes", "module_rows", "symbols",
						"frames", "stacks", "leak_records", "errors" };

	for (size_t i = 0; i < HL_ARRAY_SIZE(with_ids); i++)
		if (!strcmp(with_ids[i], table))
			return offset_of(s, table, rc);
	return 0;
}

/* INSERT INTO main.T(every column) SELECT (each moved as remap says) FROM src.T. */
static int copy_table(struct hl_store *s, const struct import_table *t, const int64_t *offsets)
{
	char *sql = NULL, *cols = NULL, *exprs = NULL;
	size_t sql_len = 0, cols_len = 0, exprs_len = 0;
	FILE *fs = open_memstream(&sql, &sql_len), *fc = open_memstream(&cols, &cols_len);
	FILE *fe = open_memstream(&exprs, &exprs_len);
	sqlite3_stmt *st;
	char pragma[96];
	int rc, n = 0;

	if (!fs || !fc || !fe)
		abort();
	snprintf(pragma, sizeof(pragma), "PRAGMA main.table_info(%s)", t->name);
	rc = sqlite3_prepare_v2(s->db, pragma, -1, &st, NULL);
	while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		const char *col = (const char *)sqlite3_column_text(st, 1);
		int64_t off = 0;

		for (size_t i = 0; i < HL_ARRAY_SIZE(t->remap) && t->remap[i][0]; i++)
			if (!strcmp(t->remap[i][0], col))
				for (size_t j = 0; j < HL_ARRAY_SIZE(tables); j++)
					if (!strcmp(tables[j].name, t->remap[i][1]))
						off = offsets[j];
		fprintf(fc, "%s\"%s\"", n ? "," : "", col);
		if (off)
			fprintf(fe, "%s\"%s\" + %lld", n ? "," : "", col, (long long)off);
		else
			fprintf(fe, "%s\"%s\"", n ? "," : "", col);
		n++;
	}
	if (rc == SQLITE_OK)
		sqlite3_finalize(st);
	fclose(fc);
	fclose(fe);
	fprintf(fs, "INSERT INTO main.%s(%s) SELECT %s FROM src.%s WHERE %s", t->name, cols,
		exprs, t->name, t->where);
	fclose(fs);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	free(sql);
	free(cols);
	free(exprs);
	return rc;
}

/* Every column of src's table must be one of ours, or the copy would lose it. */
static int same_columns(struct hl_store *s, const char *table, int *rc)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_info('%s', 'src') s"
		 " WHERE s.name NOT IN (SELECT name FROM pragma_table_info('%s', 'main'))",
		 table, table);
	return query_i64(s, sql, rc) == 0;
}

/* A table this file does not name (added by a later migration): copied
 * when its only reference is process_id (the shape of per-process data),
 * else refused, so that nothing is left behind silently. 0, 1 (refused), or
 * an SQLite error. */
static int copy_other_tables(struct hl_store *s, const int64_t *offsets, char *refused,
			     size_t len)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "SELECT m.name, (SELECT count(*) FROM"
		" pragma_table_info(m.name, 'src') c WHERE c.name = 'process_id'),"
		" (SELECT count(*) FROM pragma_table_info(m.name, 'src') c"
		"  WHERE c.name = 'id' OR (c.name LIKE '%\\_id' ESCAPE '\\' AND c.name <> 'process_id'))"
		" FROM src.sqlite_master m WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
		" AND m.name <> 'leak_sites'", -1, &st, NULL);
	int result = 0;

	while (rc == SQLITE_OK && !result && sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		bool known = false;

		for (size_t i = 0; i < HL_ARRAY_SIZE(tables); i++)
			known |= !strcmp(tables[i].name, name);
		if (known)
			continue;
		if (sqlite3_column_int(st, 1) == 1 && sqlite3_column_int(st, 2) == 0) {
			const struct import_table t = {
				name, "process_id IN (SELECT id FROM temp.imp_processes)",
				{ { "process_id", "processes" } },
			};

			rc = copy_table(s, &t, offsets);
		} else {
			snprintf(refused, len, "%s", name);
			result = 1;
		}
	}
	if (st)
		sqlite3_finalize(st);
	return rc != SQLITE_OK ? rc : result ? -1 : 0;
}

static int import_attached(struct hl_store *s, struct hl_import_result *out)
{
	int64_t offsets[HL_ARRAY_SIZE(tables)];
	int rc = sqlite3_exec(s->db,
		"CREATE TEMP TABLE imp_runs AS SELECT id FROM src.runs WHERE uuid IS NOT NULL"
		" AND uuid NOT IN (SELECT uuid FROM main.runs WHERE uuid IS NOT NULL);"
		"CREATE TEMP TABLE imp_processes AS SELECT id FROM src.processes"
		" WHERE run_id IN (SELECT id FROM temp.imp_runs)", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		out->runs_imported = (uint64_t)query_i64(s, "SELECT count(*) FROM temp.imp_runs", &rc);
	if (rc == SQLITE_OK)
		out->processes_imported = (uint64_t)query_i64(s,
			"SELECT count(*) FROM temp.imp_processes", &rc);
	if (rc == SQLITE_OK)
		out->runs_present = (uint64_t)query_i64(s, "SELECT count(*) FROM src.runs"
			" WHERE uuid IN (SELECT uuid FROM main.runs)", &rc);
	if (rc == SQLITE_OK)
		out->runs_without_uuid = (uint64_t)query_i64(s, "SELECT count(*) FROM src.runs"
			" WHERE uuid IS NULL", &rc);
	for (size_t i = 0; rc == SQLITE_OK && i < HL_ARRAY_SIZE(tables); i++)
		offsets[i] = table_offset(s, tables[i].name, &rc);
	for (size_t i = 0; rc == SQLITE_OK && out->runs_imported && i < HL_ARRAY_SIZE(tables); i++)
		rc = copy_table(s, &tables[i], offsets);
	if (rc == SQLITE_OK && out->runs_imported) {
		char refused[128];

		rc = copy_other_tables(s, offsets, refused, sizeof(refused));
		if (rc == -1) {
			snprintf(s->error, sizeof(s->error), "table %s: import does not know how"
				 " to copy its rows; nothing was imported", refused);
			return -1;
		}
	}
	/* Symbols are shared by all runs: an imported one we had already is
	 * replaced by ours in the imported frames. */
	if (rc == SQLITE_OK && out->runs_imported) {
		const int64_t sym = offsets[symbols_table()], runs = offsets[0];
		char sql[1536];

		snprintf(sql, sizeof(sql),
			 "CREATE TEMP TABLE imp_symbols(copy INTEGER PRIMARY KEY, keep INTEGER);"
			 "INSERT INTO temp.imp_symbols SELECT n.id, (SELECT min(o.id) FROM main.symbols o"
			 " WHERE o.key = n.key AND o.id <= %lld AND o.module IS n.module"
			 " AND o.module_offset IS n.module_offset AND o.function IS n.function"
			 " AND o.file IS n.file AND o.line IS n.line) FROM main.symbols n WHERE n.id > %lld;"
			 "DELETE FROM temp.imp_symbols WHERE keep IS NULL;"
			 "UPDATE main.frames SET symbol_id = (SELECT keep FROM temp.imp_symbols"
			 " WHERE copy = frames.symbol_id) WHERE run_id > %lld"
			 " AND symbol_id IN (SELECT copy FROM temp.imp_symbols);"
			 "DELETE FROM main.symbols WHERE id IN (SELECT copy FROM temp.imp_symbols);"
			 "DROP TABLE temp.imp_symbols",
			 (long long)sym, (long long)sym, (long long)runs);
		rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	}
	/* Leak sites: the first and last imported run of each, merged with ours. */
	if (rc == SQLITE_OK && out->runs_imported) {
		char sql[1024];

		snprintf(sql, sizeof(sql),
			 "INSERT INTO main.leak_sites(fingerprint, function, first_run_id, last_run_id)"
			 " SELECT l.fingerprint, (SELECT function FROM src.leak_sites t"
			 "  WHERE t.fingerprint = l.fingerprint), min(p.run_id) + %lld,"
			 "  max(p.run_id) + %lld FROM src.leaks l JOIN src.processes p"
			 "  ON p.id = l.process_id WHERE p.run_id IN (SELECT id FROM temp.imp_runs)"
			 "  AND l.fingerprint IS NOT NULL GROUP BY l.fingerprint"
			 " ON CONFLICT(fingerprint) DO UPDATE SET"
			 " first_run_id = min(first_run_id, excluded.first_run_id),"
			 " last_run_id = max(last_run_id, excluded.last_run_id)",
			 (long long)offsets[0], (long long)offsets[0]);
		rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	}
	sqlite3_exec(s->db, "DROP TABLE IF EXISTS temp.imp_runs;"
		     " DROP TABLE IF EXISTS temp.imp_processes", NULL, NULL, NULL);
	return rc;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Whether path is a whole SQLite file: its header, at least one page, a
 * whole number of pages, and (when the header's count is valid) at least
 * the pages the header counts. 0, or -EINVAL with why in s->error. */
static int check_whole(struct hl_store *s, const char *path)
{
	unsigned char h[100];
	struct stat st;
	uint32_t page, pages;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, h, sizeof(h), 0) : -1;

	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(s->error, sizeof(s->error), "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16)) {
		snprintf(s->error, sizeof(s->error), "%s: %s; nothing imported", path,
			 st.st_size == 0 ? "empty file" : n == (ssize_t)sizeof(h) ?
			 "neither a heapledger database nor a JSON report" : "truncated");
		return -EINVAL;
	}
	page = (uint32_t)h[16] << 8 | h[17];
	page = page == 1 ? 65536 : page;
	pages = be32(h + 28);
	if (page < 512 || (page & (page - 1)) || st.st_size < (off_t)page ||
	    st.st_size % page || (be32(h + 24) == be32(h + 92) &&
				  (uint64_t)st.st_size < (uint64_t)pages * page)) {
		snprintf(s->error, sizeof(s->error), "%s: truncated (%lld bytes, not the whole"
			 " database its header describes); nothing imported", path,
			 (long long)st.st_size);
		return -EINVAL;
	}
	return 0;
}

/* Every view and trigger of src is one of ours, word for word. */
static int check_schema(struct hl_store *s, const char *path)
{
	int rc = SQLITE_OK;
	int64_t foreign = query_i64(s, "SELECT count(*) FROM src.sqlite_master o"
		" WHERE o.type IN ('view', 'trigger') AND NOT EXISTS (SELECT 1 FROM"
		" main.sqlite_master m WHERE m.type = o.type AND m.name = o.name AND m.sql IS o.sql)",
		&rc);

	if (rc != SQLITE_OK)
		return import_fail(s, rc, "reading its schema");
	if (foreign) {
		snprintf(s->error, sizeof(s->error), "%s has %lld views or triggers this heapledger"
			 " did not write; it is not imported", path, (long long)foreign);
		return -EPROTO;
	}
	return 0;
}

/* sqlite3_progress_handler: interrupts past the deadline. */
static int past_deadline(void *deadline)
{
	return hl_now_monotonic_ns() > *(uint64_t *)deadline;
}

/* Attaches path read-only as src: never a byte written to it. */
static int attach_read_only(struct hl_store *s, const char *path)
{
	char *uri = hl_store_file_uri(path, "mode=ro");
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "ATTACH DATABASE ? AS src", -1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(s->db);
		sqlite3_finalize(st);
	}
	free(uri);
	return rc;
}

static int import_read_only(struct hl_store *s, const char *path, struct hl_import_result *out);

int hl_store_import_db(struct hl_store *s, const char *path, struct hl_import_result *out)
{
	struct hl_store *src = NULL;
	uint64_t deadline;
	int err;

	memset(out, 0, sizeof(*out));
	err = check_whole(s, path);
	if (err)
		return err;
	/* Ours, and of this schema; read-only, so an older one is refused
	 * rather than upgraded in place. */
	err = hl_store_open_strict_ro(path, &src);
	if (err) {
		snprintf(s->error, sizeof(s->error), "%s", hl_store_error(src));
		hl_store_close(src);
		return err;
	}
	hl_store_close(src);
	deadline = hl_now_monotonic_ns() + IMPORT_MAX_MS * 1000000ull;
	sqlite3_progress_handler(s->db, 10000, past_deadline, &deadline);
	err = import_read_only(s, path, out);
	sqlite3_progress_handler(s->db, 0, NULL, NULL);
	if (err && hl_now_monotonic_ns() > deadline)
		snprintf(s->error, sizeof(s->error), "%s: the import took over %d s and was stopped;"
			 " nothing was imported", path, IMPORT_MAX_MS / 1000);
	return err;
}

static int import_read_only(struct hl_store *s, const char *path, struct hl_import_result *out)
{
	int err = 0, rc, version;

	rc = attach_read_only(s, path);
	if (rc != SQLITE_OK)
		return import_fail(s, rc, "attaching the database");
	err = check_schema(s, path);
	if (err) {
		sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
		return err;
	}
	version = (int)query_i64(s, "PRAGMA src.user_version", &rc);
	if (rc == SQLITE_OK && version != hl_store_schema_version()) {
		sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
		snprintf(s->error, sizeof(s->error), "%s has schema version %d, this heapledger %d:"
			 " import it with the heapledger that wrote it", path, version,
			 hl_store_schema_version());
		return -EPROTO;
	}
	for (size_t i = 0; rc == SQLITE_OK && i < HL_ARRAY_SIZE(tables); i++) {
		if (!same_columns(s, tables[i].name, &rc) && rc == SQLITE_OK) {
			sqlite3_exec(s->db, "DETACH DATABASE src", NULL, NULL, NULL);
			snprintf(s->error, sizeof(s->error), "%s: table %s has columns this"
				 " heapledger does not know", path, tables[i].name);
			return -EPROTO;
		}
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "PRAGMA foreign_keys=OFF; BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		rc = import_attached(s, out);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			err = rc == -1 ? -EPROTO : import_fail(s, rc, "import");
			sqlite3_progress_handler(s->db, 0, NULL, NULL); /* the cleanup must run */
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
			memset(out, 0, sizeof(*out));
		}
	} else {
		err = import_fail(s, rc, "import");
	}
	sqlite3_progress_handler(s->db, 0, NULL, NULL);
	sqlite3_exec(s->db, "PRAGMA foreign_keys=ON; DETACH DATABASE src", NULL, NULL, NULL);
	if (!err && !out->runs_imported && !out->runs_present) {
		snprintf(s->error, sizeof(s->error), "%s holds no run to import", path);
		err = -ENODATA;
	}
	return err;
}

/* Is a run with this UUID here? 1, 0, or an SQLite error (negative). */
static int run_present(struct hl_store *s, const char *uuid)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "SELECT 1 FROM runs WHERE uuid = ?", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return -rc;
	sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -rc;
}

int hl_store_import_begin(struct hl_store *s, const struct hl_report *r,
			  struct hl_store_import *imp)
{
	int err, present;

	memset(imp, 0, sizeof(*imp));
	imp->s = s;
	imp->run = r;
	imp->ended_ns = r->ended_ns;
	imp->exit_code = r->exit_code;
	if (!r->uuid) {
		snprintf(s->error, sizeof(s->error), "the run has no UUID");
		return -EINVAL;
	}
	/* The batch's write lock is taken before the UUID is looked up, so two
	 * imports of one file cannot both add it; a process that fails fails
	 * the whole run (not only its savepoint). */
	if ((err = hl_store_batch_begin(s)))
		return err;
	imp->begun = true;
	if ((present = run_present(s, r->uuid)) < 0) {
		err = import_fail(s, -present, "import");
		hl_store_import_abort(imp);
		return err;
	}
	imp->present = present;
	return 0;
}

int hl_store_import_process(struct hl_store_import *imp, struct hl_process *p,
			    struct hl_symbolizer *sym)
{
	int err = 0;

	imp->nprocs++;
	if (imp->present)
		return 0;
	/* The run's row with its first process: a run without any is not
	 * stored (run and daemon do not store one either). */
	if (!imp->run_id)
		err = hl_store_run_begin(imp->s, imp->run, &imp->run_id);
	return err ? err : hl_store_process(imp->s, imp->run_id, p, sym);
}

int hl_store_import_end(struct hl_store_import *imp, struct hl_import_result *out)
{
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!imp->present && !imp->nprocs) {
		hl_store_import_abort(imp);
		out->runs_empty = 1;
		return 0;
	}
	if (!imp->present)
		err = hl_store_run_end(imp->s, imp->run_id, imp->ended_ns, imp->exit_code);
	if (err) {
		hl_store_import_abort(imp);
		return err;
	}
	imp->begun = false;
	if ((err = hl_store_batch_end(imp->s)))
		return err;
	out->runs_present = imp->present ? 1 : 0;
	out->runs_imported = imp->present ? 0 : 1;
	out->processes_imported = imp->present ? 0 : imp->nprocs;
	return 0;
}

void hl_store_import_abort(struct hl_store_import *imp)
{
	if (imp->begun)
		hl_store_batch_abort(imp->s);
	imp->begun = false;
}
