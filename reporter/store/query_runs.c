/*
 * reporter/store/query_runs.c: stored runs as rows (query_runs.h), and
 * whether a run exists and how far it has been written (store_query.h). Every
 * query reads the same columns (RUN_COLUMNS) through one reader, then each
 * row's labels and leaked bytes by class with two statements prepared once
 * per query: a run's labels and classes are a handful of rows.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "query_int.h"
#include "query_runs.h"
#include "store_query.h"

/* A run's own columns (all the report's header needs), then what its
 * processes add up to (the lists'). */
#define RUN_HEADER_COLUMNS \
	"SELECT r.id, r.mode, r.program, r.argv, r.cwd, r.hostname, r.git_commit," \
	" r.started_ns, r.ended_ns, r.exit_code, r.uuid, r.git_branch"
#define RUN_HEADER_NCOLUMNS 12
#define RUN_COLUMNS \
	RUN_HEADER_COLUMNS "," \
	" (SELECT count(*) FROM processes p WHERE p.run_id = r.id)," \
	" (SELECT coalesce(sum(m.errors), 0) FROM summaries m JOIN processes p" \
	"  ON p.id = m.process_id WHERE p.run_id = r.id)," \
	" (SELECT coalesce(max(m.peak_bytes), 0) FROM summaries m JOIN processes p" \
	"  ON p.id = m.process_id WHERE p.run_id = r.id)"

/* What the run list's filter matches (?1: a LIKE pattern, or NULL: all). */
#define RUNS_MATCH \
	" FROM runs r WHERE (?1 IS NULL OR r.program LIKE ?1 ESCAPE '\\'" \
	" OR r.argv LIKE ?1 ESCAPE '\\' OR r.git_commit LIKE ?1 ESCAPE '\\'" \
	" OR r.mode LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM run_labels b" \
	" WHERE b.run_id = r.id AND (b.key || '=' || coalesce(b.value, '')) LIKE ?1 ESCAPE '\\'))"

/* A run's labels by key (the lists), or as given (the report's header). */
#define RUN_LABELS "SELECT key, value FROM run_labels WHERE run_id = ?1 ORDER BY key"
#define RUN_LABELS_AS_GIVEN "SELECT key, value FROM run_labels WHERE run_id = ?1 ORDER BY rowid"
/* One pass over the run's loss records, by the class each is shown as (a
 * sum per class was five passes, 0.4 s for a run of 100,000 records). */
#define RUN_LEAKED \
	"SELECT " HL_SHOWN_CLASS " AS c," \
	" sum(l.bytes), count(*) FROM leaks l JOIN processes p ON p.id = l.process_id" \
	" WHERE p.run_id = ?1 GROUP BY c"

struct run_reader {
	struct hl_store *s;
	struct hl_run_list *out;
	sqlite3_stmt *labels, *leaked;
};

static int reader_open(struct run_reader *rd, struct hl_store *s, struct hl_run_list *out,
		       const char *labels_sql)
{
	int err;

	rd->s = s;
	rd->out = out;
	rd->labels = rd->leaked = NULL;
	err = hl_query_prepare(s, labels_sql, &rd->labels);
	if (!err)
		err = hl_query_prepare(s, RUN_LEAKED, &rd->leaked);
	return err;
}

static void reader_close(struct run_reader *rd)
{
	sqlite3_finalize(rd->labels);
	sqlite3_finalize(rd->leaked);
}

static int read_labels(struct run_reader *rd, struct hl_run_row *row)
{
	sqlite3_stmt *st = rd->labels;
	size_t cap = 0;
	int rc;

	sqlite3_bind_int64(st, 1, row->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hl_run_label *grown;

		if (row->nlabels == cap) {
			cap = cap ? 2 * cap : 4;
			grown = hl_bump_alloc(&rd->out->arena, cap * sizeof(*grown));
			for (size_t i = 0; i < row->nlabels; i++)
				grown[i] = row->labels[i];
			row->labels = grown;
		}
		row->labels[row->nlabels++] = (struct hl_run_label){
			hl_col_text_in(&rd->out->arena, st, 0), hl_col_text_in(&rd->out->arena, st, 1) };
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(rd->s, "run labels");
}

static int read_leaked(struct run_reader *rd, struct hl_run_row *row)
{
	sqlite3_stmt *st = rd->leaked;
	int rc;

	sqlite3_bind_int64(st, 1, row->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		unsigned c = hl_leak_class_from_word(hl_col_text(st, 0));

		row->leaked.bytes[c] += (uint64_t)sqlite3_column_int64(st, 1);
		row->leaked.records[c] += (uint64_t)sqlite3_column_int64(st, 2);
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(rd->s, "leaked by class");
}

/* One row of RUN_COLUMNS, with its labels and leaked bytes. */
static int read_run(struct run_reader *rd, sqlite3_stmt *st)
{
	struct hl_bump *a = &rd->out->arena;
	struct hl_run_row *row = hl_run_list_add(rd->out);
	int err;

	row->id = sqlite3_column_int64(st, 0);
	row->mode = hl_col_text_in(a, st, 1);
	row->program = hl_col_text_in(a, st, 2);
	row->argv = hl_col_text_in(a, st, 3);
	row->cwd = hl_col_text_in(a, st, 4);
	row->hostname = hl_col_text_in(a, st, 5);
	row->git_commit = hl_col_text_in(a, st, 6);
	row->started_ns = sqlite3_column_int64(st, 7);
	row->ended_ns = hl_col_maybe(st, 8);
	row->exit_code = hl_col_maybe(st, 9);
	row->uuid = hl_col_text_in(a, st, 10);
	row->git_branch = hl_col_text_in(a, st, 11);
	err = read_labels(rd, row);
	if (err || sqlite3_column_count(st) == RUN_HEADER_NCOLUMNS)
		return err; /* a header: no totals */
	row->processes = (uint64_t)sqlite3_column_int64(st, 12);
	row->errors = (uint64_t)sqlite3_column_int64(st, 13);
	row->peak_bytes = (uint64_t)sqlite3_column_int64(st, 14);
	return read_leaked(rd, row);
}

/* Every row of st (bound), then st finalized. */
static int read_runs_labelled(struct hl_store *s, sqlite3_stmt *st, struct hl_run_list *out,
			      const char *labels_sql)
{
	struct run_reader rd;
	int rc = SQLITE_DONE, err = reader_open(&rd, s, out, labels_sql);

	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
		err = read_run(&rd, st);
	if (!err && rc != SQLITE_DONE)
		err = hl_query_fail(s, "runs");
	reader_close(&rd);
	sqlite3_finalize(st);
	return err;
}

static int read_runs(struct hl_store *s, sqlite3_stmt *st, struct hl_run_list *out)
{
	return read_runs_labelled(s, st, out, RUN_LABELS);
}

int hl_query_runs(struct hl_store *s, const struct hl_query_page *page, struct hl_run_list *out)
{
	char *like = page->filter && *page->filter ? hl_like_pattern(page->filter) : NULL;
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, "SELECT count(*)" RUNS_MATCH, &st);

	if (!err) {
		sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
		out->total = hl_query_count(st);
		err = hl_query_prepare(s, RUN_COLUMNS RUNS_MATCH
				       " ORDER BY r.id DESC LIMIT ?2 OFFSET ?3", &st);
	}
	if (!err) {
		sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, page->limit);
		sqlite3_bind_int64(st, 3, page->offset);
		err = read_runs(s, st, out);
	}
	free(like);
	return err;
}

/* The run run_id: columns (RUN_COLUMNS or RUN_HEADER_COLUMNS), its labels
 * read by labels_sql. */
static int run_row(struct hl_store *s, int64_t run_id, struct hl_run_list *out,
		   const char *columns, const char *labels_sql)
{
	char sql[1024];
	sqlite3_stmt *st;
	int err;

	snprintf(sql, sizeof(sql), "%s FROM runs r WHERE r.id = ?1", columns);
	err = hl_query_prepare(s, sql, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	err = read_runs_labelled(s, st, out, labels_sql);
	if (!err && !out->n) {
		snprintf(s->error, sizeof(s->error), "no run %lld", (long long)run_id);
		err = -ENOENT;
	}
	out->total = (int64_t)out->n;
	return err;
}

int hl_query_run_row(struct hl_store *s, int64_t run_id, struct hl_run_list *out)
{
	return run_row(s, run_id, out, RUN_COLUMNS, RUN_LABELS);
}

int hl_query_run_header(struct hl_store *s, int64_t run_id, struct hl_run_list *out)
{
	return run_row(s, run_id, out, RUN_HEADER_COLUMNS, RUN_LABELS_AS_GIVEN);
}

int hl_store_latest_run(struct hl_store *s, int64_t *run_id)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, "SELECT max(id) FROM runs", &st);

	if (err)
		return err;
	*run_id = hl_query_count(st);
	if (*run_id > 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "the database holds no runs");
	return -ENOENT;
}

int hl_query_program_runs(struct hl_store *s, const char *program, struct hl_run_list *out)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, RUN_COLUMNS " FROM runs r WHERE r.program = ?1 ORDER BY r.id",
				   &st);

	if (err)
		return err;
	sqlite3_bind_text(st, 1, program, -1, SQLITE_STATIC);
	err = read_runs(s, st, out);
	out->total = (int64_t)out->n;
	return err;
}

int hl_query_program_trend(struct hl_store *s, const char *program, int64_t upto, int64_t limit,
			   struct hl_run_list *out)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, "SELECT * FROM (" RUN_COLUMNS " FROM runs r"
				   " WHERE r.program = ?1 AND r.id <= ?2 ORDER BY r.id DESC LIMIT ?3)"
				   " ORDER BY 1", &st);

	if (err)
		return err;
	sqlite3_bind_text(st, 1, program, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, upto);
	sqlite3_bind_int64(st, 3, limit);
	err = read_runs(s, st, out);
	out->total = (int64_t)out->n;
	return err;
}

int hl_query_run_exists(struct hl_store *s, int64_t run_id)
{
	sqlite3_stmt *st;
	bool found;

	if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM runs WHERE id = ?", -1, &st, NULL))
		return hl_query_fail(s, "run");
	sqlite3_bind_int64(st, 1, run_id);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (found)
		return 0;
	snprintf(s->error, sizeof(s->error), "no run %lld in the database", (long long)run_id);
	return -ENOENT;
}

int hl_query_run_progress(struct hl_store *s, int64_t run_id, int64_t *processes, bool *ended)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT r.ended_ns IS NOT NULL,"
		" (SELECT count(*) FROM processes p WHERE p.run_id = r.id)"
		" FROM runs r WHERE r.id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ended = sqlite3_column_int(st, 0) != 0;
		*processes = sqlite3_column_int64(st, 1);
	} else if (rc == SQLITE_DONE) {
		snprintf(s->error, sizeof(s->error), "no run %lld", (long long)run_id);
		err = -ENOENT;
	} else {
		err = hl_query_fail(s, "query");
	}
	sqlite3_finalize(st);
	return err;
}
