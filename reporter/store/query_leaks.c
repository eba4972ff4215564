/*
 * reporter/store/query_leaks.c: a run's loss records as the leak table
 * lists them, largest first, a page at a time (query_leaks.h). A page is
 * chosen by id before anything per record is computed, so a late page
 * costs what the first does.
 */
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "query_leaks.h"
#include "query_run_rows.h"

/* A run's leak records: ?1 run, ?3 class or NULL. */
#define LEAKS_OF_RUN \
	" FROM leaks l JOIN processes p ON p.id = l.process_id" \
	" WHERE p.run_id = ?1 AND " HL_CLASS_MATCH
/* Where a record "is": the innermost frame in the program's own code (a
 * module outside the system's library directories), with a source file if
 * one has it, else by module and offset; only when every frame is the
 * system's, the innermost with a source file. So code built without debug
 * information is named by its module, never by libc's start, which has a
 * file and is outermost. */
#define SYSTEM_MODULE(y) \
	"(" y ".module LIKE '/lib/%' OR " y ".module LIKE '/lib64/%' OR " y ".module LIKE '/usr/lib/%'" \
	" OR " y ".module LIKE '/usr/lib64/%')"
#define LEAK_SITE(column) \
	" (WITH RECURSIVE walk(pos, frame_id) AS (SELECT 0, k.leaf_frame_id UNION ALL" \
	"  SELECT w.pos + 1, f.parent_id FROM walk w JOIN frames f ON f.id = w.frame_id" \
	"  WHERE f.parent_id IS NOT NULL) SELECT " column " FROM walk w" \
	"  JOIN frames f ON f.id = w.frame_id JOIN symbols y ON y.id = f.symbol_id" \
	"  ORDER BY coalesce(" SYSTEM_MODULE("y") ", 1), y.file IS NULL, w.pos LIMIT 1)"
/* A loss record's columns, whoever reads it (then, for the leak table,
 * the frame it is named by: LEAK_SITES). */
#define LEAK_COLUMNS \
	" SELECT l.id, p.id AS process_id, p.pid, l.stack_id, l.leak_class, l.bytes," \
	" l.blocks, l.inherited_blocks, l.rank, l.suppressed, l.suppression," \
	" k.depth, k.truncated, k.leaf_frame_id, l.indirect_bytes, l.fingerprint"
#define LEAK_NCOLUMNS 16
#define LEAK_SITES \
	"," LEAK_SITE("y.function") " AS function," \
	LEAK_SITE("y.file") " AS file," \
	LEAK_SITE("y.line") " AS line," \
	LEAK_SITE("y.module") " AS module," \
	LEAK_SITE("y.module_offset") " AS module_offset"
#define LEAK_STACK " LEFT JOIN stacks k ON k.id = l.stack_id"
/* The records of page(id), and what is shown of each. */
#define LEAKS_ROWS \
	LEAK_COLUMNS LEAK_SITES \
	" FROM page JOIN leaks l ON l.id = page.id AND l.process_id = page.process_id" \
	" JOIN processes p ON p.id = l.process_id" \
	LEAK_STACK " ORDER BY l.bytes DESC, l.id, p.id"

/* Unfiltered: one page chosen by id before anything per record is
 * computed, so a late page costs what the first does (?4 limit, ?5 offset). */
#define LEAKS_COUNT "SELECT count(*)" LEAKS_OF_RUN
#define LEAKS_PAGE \
	"WITH page(id, process_id) AS (SELECT l.id, p.id" LEAKS_OF_RUN \
	" ORDER BY l.bytes DESC, l.id, p.id LIMIT ?4 OFFSET ?5)" LEAKS_ROWS
/* Filtered: the page's records, chosen by stack_filter(), as a JSON array of
 * [leaks.id, processes.id] (?4): a record shared by processes
 * (processes.leaks_from) is a row of each. */
#define LEAKS_PAGE_OF_IDS "WITH page(id, process_id) AS (SELECT json_extract(value, '$[0]')," \
	" json_extract(value, '$[1]')" \
	" FROM json_each(?4))" LEAKS_ROWS

/* By site: the records of one leak site (its fingerprint; a record
 * without one is a site of its own) shown as one class, added up over the
 * run's processes, the largest first; a row names the site by its largest
 * record (SQLite's bare columns beside max()). ?1 run, ?3 class, ?4 limit,
 * ?5 offset, ?6 NULL or the text filter's records (hl_leak_filter_page's
 * JSON). The same site shown as two classes (lost here, still reachable
 * there) is two rows. */
#define SITE_KEY "coalesce(l.fingerprint, 'stack ' || l.stack_id, 'record ' || l.id), " HL_SHOWN_CLASS
#define SITES_OF_RUN \
	LEAKS_OF_RUN " AND (?6 IS NULL OR l.id IN (SELECT json_extract(value, '$[0]') FROM json_each(?6)))" \
	" GROUP BY " SITE_KEY
#define SITES_COUNT "SELECT count(*) FROM (SELECT 1" SITES_OF_RUN ")"
#define SITES_PAGE \
	"WITH page(id, process_id, top, bytes, blocks, inherited, indirect, records, processes, tests) AS (" \
	" SELECT l.id, p.id, max(l.bytes), sum(l.bytes), sum(l.blocks), sum(l.inherited_blocks)," \
	" sum(l.indirect_bytes), count(*), count(DISTINCT p.id), count(DISTINCT p.test_name)" SITES_OF_RUN \
	" ORDER BY 4 DESC, 5 DESC, 1 LIMIT ?4 OFFSET ?5)" \
	LEAK_COLUMNS LEAK_SITES ", page.bytes, page.blocks, page.inherited, page.indirect," \
	" page.records, page.processes, page.tests" \
	" FROM page JOIN leaks l ON l.id = page.id AND l.process_id = page.process_id" \
	" JOIN processes p ON p.id = l.process_id" \
	LEAK_STACK " ORDER BY page.bytes DESC, page.blocks DESC, l.id"
#define SITE_COLUMN (LEAK_NCOLUMNS + 5)

static void read_leak(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_leak_row *l = row;

	memset(l, 0, sizeof(*l));
	l->id = sqlite3_column_int64(st, 0);
	l->process_id = sqlite3_column_int64(st, 1);
	l->pid = sqlite3_column_int64(st, 2);
	l->stack_id = hl_col_maybe(st, 3);
	l->leak_class = hl_leak_class_from_word(hl_col_text(st, 4));
	l->bytes = (uint64_t)sqlite3_column_int64(st, 5);
	l->blocks = (uint64_t)sqlite3_column_int64(st, 6);
	l->inherited_blocks = (uint64_t)sqlite3_column_int64(st, 7);
	l->rank = sqlite3_column_int64(st, 8);
	l->suppressed = sqlite3_column_int(st, 9) != 0;
	l->suppression = hl_col_text_in(a, st, 10);
	l->depth = hl_col_maybe(st, 11);
	l->truncated = hl_col_maybe(st, 12);
	l->leaf_frame_id = hl_col_maybe(st, 13);
	l->indirect_bytes = (uint64_t)sqlite3_column_int64(st, 14);
	l->fingerprint = hl_col_text_in(a, st, 15);
	if (sqlite3_column_count(st) == LEAK_NCOLUMNS)
		return;
	l->function = hl_col_text_in(a, st, LEAK_NCOLUMNS);
	l->file = hl_col_text_in(a, st, LEAK_NCOLUMNS + 1);
	l->line = hl_col_maybe(st, LEAK_NCOLUMNS + 2);
	l->module = hl_col_text_in(a, st, LEAK_NCOLUMNS + 3);
	l->module_offset = hl_col_maybe(st, LEAK_NCOLUMNS + 4);
	if (sqlite3_column_count(st) == SITE_COLUMN)
		return;
	l->bytes = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN);
	l->blocks = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 1);
	l->inherited_blocks = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 2);
	l->indirect_bytes = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 3);
	l->records = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 4);
	l->processes = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 5);
	l->tests = (uint64_t)sqlite3_column_int64(st, SITE_COLUMN + 6);
}

static int read_leaks(struct hl_store *s, sqlite3_stmt *st, struct hl_run_rows *out)
{
	return hl_query_rows(s, st, "leak records", &out->arena, read_leak, (void **)&out->leaks,
			     &out->nleaks, &out->leaks_cap, sizeof(*out->leaks));
}

/* Each row's stack (a page is written record by record, whole). */
static int read_page_stacks(struct hl_store *s, struct hl_run_rows *out)
{
	struct hl_stack_reader r;
	int err = hl_stack_reader_open(&r, s);

	for (size_t i = 0; !err && i < out->nleaks; i++)
		if (out->leaks[i].stack_id.known)
			err = hl_stack_read(&r, &out->arena, out->leaks[i].stack_id.value,
					    &out->leaks[i].stack);
	hl_stack_reader_close(&r);
	return err;
}

/* The page of sites (SITES_PAGE), the text filter's records first. */
static int query_sites(struct hl_store *s, int64_t run_id, const char *like, const char *cls,
		       const struct hl_query_page *page, struct hl_run_rows *out)
{
	struct hl_query_page every = { 0, INT64_MAX, NULL, cls, false };
	sqlite3_stmt *st;
	int64_t ignored;
	char *ids_text = NULL;
	int err = like ? hl_leak_filter_page(s, run_id, like, cls, &every, &ignored, &ids_text) : 0;

	if (!err)
		err = hl_query_prepare(s, SITES_COUNT, &st);
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 6, ids_text, -1, SQLITE_STATIC);
		out->leaks_total = hl_query_count(st);
		err = hl_query_prepare(s, SITES_PAGE, &st);
	}
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, page->limit);
		sqlite3_bind_int64(st, 5, page->offset);
		sqlite3_bind_text(st, 6, ids_text, -1, SQLITE_STATIC);
		err = read_leaks(s, st, out);
		sqlite3_finalize(st);
	}
	free(ids_text);
	return err;
}

int hl_query_leaks(struct hl_store *s, int64_t run_id, const struct hl_query_page *page,
		   struct hl_run_rows *out)
{
	char *like = page->filter && *page->filter ? hl_like_pattern(page->filter) : NULL;
	const char *cls = page->leak_class && *page->leak_class ? page->leak_class : NULL;
	sqlite3_stmt *st;
	int64_t total = 0;
	char *ids_text = NULL;
	int err;

	if (page->by_site) {
		err = query_sites(s, run_id, like, cls, page, out);
		if (!err)
			err = read_page_stacks(s, out);
		free(like);
		return err;
	}
	if (like) {
		err = hl_leak_filter_page(s, run_id, like, cls, page, &total, &ids_text);
		if (!err)
			err = hl_query_prepare(s, LEAKS_PAGE_OF_IDS, &st);
	} else {
		err = hl_query_prepare(s, LEAKS_COUNT, &st);
		if (!err) {
			sqlite3_bind_int64(st, 1, run_id);
			sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
			total = hl_query_count(st);
			err = hl_query_prepare(s, LEAKS_PAGE, &st);
		}
	}
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
		if (like) {
			sqlite3_bind_text(st, 4, ids_text, -1, SQLITE_STATIC);
		} else {
			sqlite3_bind_int64(st, 4, page->limit);
			sqlite3_bind_int64(st, 5, page->offset);
		}
		err = read_leaks(s, st, out);
		sqlite3_finalize(st);
	}
	if (!err)
		err = read_page_stacks(s, out);
	free(ids_text);
	free(like);
	out->leaks_total = total;
	return err;
}

/* A process's records for the report: loss record order, no frame named
 * (the report prints whole stacks). */
const char *const hl_process_leaks_sql =
	LEAK_COLUMNS " FROM leaks l JOIN processes p ON p.id = l.process_id" LEAK_STACK
	" WHERE l.process_id = ?1 ORDER BY l.rank";

int hl_process_leaks(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out)
{
	sqlite3_bind_int64(rd->leaks, 1, process_id);
	return read_leaks(rd->s, rd->leaks, out);
}
