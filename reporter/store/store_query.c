/*
 * reporter/store/store_query.c: the query layer (store_query.h). Each statement
 * is built from fixed fragments and takes every value as a bound parameter.
 */
#define _GNU_SOURCE /* asprintf */
#include "store_query.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "report.h"
#include "util.h"

/* The ids of the runs f selects: "SELECT id FROM runs WHERE ..." with its
 * parameters numbered from 1; bind_filter binds them. */
#define FILTER_SQL "SELECT id FROM runs WHERE (?1 IS NULL OR program = ?1)" \
	" AND (?2 = 0 OR id <= ?2)"
#define FILTER_LABEL " AND EXISTS (SELECT 1 FROM run_labels k WHERE k.run_id = runs.id" \
	" AND k.key = ? AND k.value = ?)"

/* head + FILTER_SQL + a label clause per label + tail, malloc'd. */
static char *filter_sql(const struct hl_run_filter *f, const char *head, const char *tail)
{
	size_t nlabels = f ? f->nlabels : 0;
	size_t len = strlen(head) + strlen(FILTER_SQL) + nlabels * strlen(FILTER_LABEL) +
		     strlen(tail) + 1;
	char *sql = hl_xmalloc(len);

	strcpy(sql, head);
	strcat(sql, FILTER_SQL);
	for (size_t i = 0; i < nlabels; i++)
		strcat(sql, FILTER_LABEL);
	strcat(sql, tail);
	return sql;
}

static void bind_filter(sqlite3_stmt *st, const struct hl_run_filter *f)
{
	if (f && f->program)
		sqlite3_bind_text(st, 1, f->program, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, f ? f->max_run_id : 0);
	for (size_t i = 0; f && i < f->nlabels; i++) {
		sqlite3_bind_text(st, 3 + 2 * (int)i, f->label_keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4 + 2 * (int)i, f->label_values[i], -1, SQLITE_STATIC);
	}
}

static int prepare_filtered(struct hl_store *s, const struct hl_run_filter *f,
			    const char *head, const char *tail, sqlite3_stmt **st)
{
	char *sql = filter_sql(f, head, tail);
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);

	free(sql);
	if (rc != SQLITE_OK)
		return hl_query_fail(s, "query");
	bind_filter(*st, f);
	return 0;
}

int hl_query_latest_run(struct hl_store *s, const struct hl_run_filter *f, int64_t *run_id)
{
	sqlite3_stmt *st;
	int err = prepare_filtered(s, f, "SELECT max(id) FROM (", ")", &st);

	if (err)
		return err;
	*run_id = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	if (*run_id > 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "no stored run matches");
	return -ENOENT;
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

int hl_query_run_sites(struct hl_store *s, int64_t run_id, hl_run_site_fn fn, void *ctx)
{
	sqlite3_stmt *st;
	int err = 0, rc;

	if (sqlite3_prepare_v2(s->db,
		"SELECT l.fingerprint, t.function, l.leak_class, max(l.suppression),"
		" sum(l.bytes), sum(l.blocks), count(DISTINCT l.process_id), l.suppressed"
		" FROM processes p JOIN leaks l ON l.process_id = p.id"
		" LEFT JOIN leak_sites t ON t.fingerprint = l.fingerprint"
		" WHERE p.run_id = ?1 AND l.fingerprint IS NOT NULL"
		" GROUP BY l.fingerprint, l.leak_class, l.suppressed"
		" ORDER BY l.fingerprint, l.leak_class, l.suppressed", -1, &st, NULL))
		return hl_query_fail(s, "run sites");
	sqlite3_bind_int64(st, 1, run_id);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hl_run_site site = {
			.fingerprint = hl_col_text(st, 0),
			.function = hl_col_text(st, 1),
			.leak_class = hl_leak_class_from_word(hl_col_text(st, 2)),
			.suppressed = sqlite3_column_int(st, 7) != 0,
			.suppression = hl_col_text(st, 3),
			.bytes = (uint64_t)sqlite3_column_int64(st, 4),
			.blocks = (uint64_t)sqlite3_column_int64(st, 5),
			.processes = (uint64_t)sqlite3_column_int64(st, 6),
		};

		err = fn(ctx, &site);
	}
	if (!err && rc != SQLITE_DONE)
		err = hl_query_fail(s, "run sites");
	sqlite3_finalize(st);
	return err;
}

static int add_leak_site(void *ctx, const struct hl_run_site *site)
{
	hl_site_list_add(ctx, site->fingerprint, site->function, site->leak_class,
			 site->suppressed, site->bytes, site->blocks);
	return 0;
}

int hl_query_leak_sites(struct hl_store *s, int64_t run_id, struct hl_site_list *out)
{
	int err = hl_query_run_sites(s, run_id, add_leak_site, out);

	hl_site_list_finish(out);
	return err;
}

/* The ids f selects, ascending, into a malloc'd array. */
static int selected_runs(struct hl_store *s, const struct hl_run_filter *f,
			 int64_t **ids, size_t *n)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int err = prepare_filtered(s, f, "", " ORDER BY id", &st);

	*ids = NULL;
	*n = 0;
	if (err)
		return err;
	while (sqlite3_step(st) == SQLITE_ROW) {
		hl_grow((void **)ids, &cap, *n, sizeof(**ids));
		(*ids)[(*n)++] = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return 0;
}

static size_t run_index(const int64_t *ids, size_t n, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Hands the site gathered in h to fn and clears it. */
static int emit_site(struct hl_site_history *h, uint64_t *bytes, char **fp, char **function,
		     hl_site_history_fn fn, void *ctx)
{
	int err = 0;

	if (*fp) {
		h->fingerprint = *fp;
		h->function = *function;
		err = fn(ctx, h);
	}
	free(*fp);
	free(*function);
	*fp = *function = NULL;
	memset(bytes, 0, h->nruns * sizeof(*bytes));
	h->runs = 0;
	h->first_run = h->last_run = 0;
	return err;
}

int hl_query_history(struct hl_store *s, const struct hl_run_filter *f,
		     hl_site_history_fn fn, void *ctx, size_t *nruns_out)
{
	struct hl_site_history h = { 0 };
	int64_t *ids;
	uint64_t *bytes;
	char *fp = NULL, *function = NULL;
	sqlite3_stmt *st = NULL;
	int err = selected_runs(s, f, &ids, &h.nruns), rc = SQLITE_DONE;

	*nruns_out = h.nruns;
	if (err)
		return err;
	bytes = hl_xcalloc(h.nruns + 1, sizeof(*bytes));
	h.run_ids = ids;
	h.bytes = bytes;
	err = prepare_filtered(s, f,
		"SELECT l.fingerprint, p.run_id, sum(l.bytes), t.function"
		" FROM processes p JOIN leaks l ON l.process_id = p.id"
		" LEFT JOIN leak_sites t ON t.fingerprint = l.fingerprint"
		" WHERE l.fingerprint IS NOT NULL AND l.suppressed = 0 AND p.run_id IN (",
		") GROUP BY l.fingerprint, p.run_id ORDER BY l.fingerprint, p.run_id", &st);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *row_fp = hl_col_text(st, 0);
		int64_t run = sqlite3_column_int64(st, 1);

		if (!fp || strcmp(fp, row_fp)) {
			err = emit_site(&h, bytes, &fp, &function, fn, ctx);
			fp = hl_xstrdup(row_fp);
			function = hl_col_text(st, 3) ? hl_xstrdup(hl_col_text(st, 3)) : NULL;
			h.first_run = run;
		}
		bytes[run_index(ids, h.nruns, run)] = (uint64_t)sqlite3_column_int64(st, 2);
		h.last_run = run;
		h.runs++;
	}
	if (!err && rc != SQLITE_DONE)
		err = hl_query_fail(s, "history");
	if (!err)
		err = emit_site(&h, bytes, &fp, &function, fn, ctx);
	free(fp);
	free(function);
	sqlite3_finalize(st);
	free(bytes);
	free(ids);
	return err;
}

/* ==== the web UI's section: rows as JSON for its pages ==================== */

/* ---- rows as JSON ----------------------------------------------------------- */

static json_t *column_json(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER: return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT: return json_real(sqlite3_column_double(st, i));
	case SQLITE_NULL: return json_null();
	default: return json_stringn((const char *)sqlite3_column_text(st, i),
				     (size_t)sqlite3_column_bytes(st, i));
	}
}

static json_t *row_json(sqlite3_stmt *st)
{
	json_t *row = json_object();

	for (int i = 0; i < sqlite3_column_count(st); i++)
		json_object_set_new(row, sqlite3_column_name(st, i), column_json(st, i));
	return row;
}

/* Steps st to the end, one object per row, and finalizes it. */
static int rows_json(struct hl_store *s, sqlite3_stmt *st, json_t **out)
{
	int rc;

	*out = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(*out, row_json(st));
	if (rc != SQLITE_DONE) {
		hl_query_fail(s, "query");
		sqlite3_finalize(st);
		json_decref(*out);
		*out = NULL;
		return -EIO;
	}
	sqlite3_finalize(st);
	return 0;
}

static json_t *paged(int64_t total, json_t *rows)
{
	return json_pack("{sIso}", "total", (json_int_t)total, "rows", rows);
}

/* ---- web UI: runs ------------------------------------------------------------ */

/* A record of lost bytes: a lost class, not suppressed. */
#define LOST_RECORD \
	"l.leak_class IN ('definitely', 'indirectly', 'possibly', 'unknown') AND l.suppressed = 0"

/* A suppressed record counts as "suppressed", whatever its class: it is
 * never shown as lost. */
#define SHOWN_CLASS "CASE WHEN l.suppressed THEN 'suppressed' ELSE l.leak_class END"
/* ---- web UI: one run ------------------------------------------------------- */

/* fatal_name ("SIGSEGV") and fatal_fault (valgrind's words for a fault,
 * or null) beside a process's fatal_signal, as the text report words them. */
static void name_fatal_signals(json_t *procs)
{
	size_t i;
	json_t *p;

	json_array_foreach(procs, i, p) {
		json_int_t sig = json_integer_value(json_object_get(p, "fatal_signal"));
		json_int_t code = json_integer_value(json_object_get(p, "fatal_code"));
		const char *fault = hl_wire_fault_words((uint32_t)sig, (int32_t)code);
		char name[24];

		if (!sig)
			continue;
		json_object_set_new(p, "fatal_name",
				    json_string(hl_report_signal_name((int)sig, name, sizeof(name))));
		json_object_set_new(p, "fatal_fault", fault ? json_string(fault) : json_null());
	}
}

int hl_query_run(struct hl_store *s, int64_t run_id, json_t **out)
{
	sqlite3_stmt *st;
	json_t *runs, *procs;
	int err = hl_query_prepare(s,
		"SELECT r.id, r.mode, r.program, r.argv, r.cwd, r.hostname, r.git_commit,"
		" r.started_ns, r.ended_ns, r.exit_code,"
		" (SELECT json_group_object(b.key, b.value) FROM run_labels b"
		"  WHERE b.run_id = r.id) AS labels FROM runs r WHERE r.id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	if ((err = rows_json(s, st, &runs)))
		return err;
	if (!json_array_size(runs)) {
		json_decref(runs);
		snprintf(s->error, sizeof(s->error), "no run %lld", (long long)run_id);
		return -ENOENT;
	}
	err = hl_query_prepare(s,
		"SELECT p.id, p.serial, p.pid, p.ppid, p.parent_id, p.origin, p.exe, p.argv,"
		" p.started_ns, p.ended_ns, p.exit_how, p.exit_status, p.exit_signal, p.scanned,"
		" p.no_exit_record, p.recovered_events, p.fatal_signal, p.fatal_code,"
		" p.fatal_address, p.fatal_stack_id, m.in_use_bytes, m.in_use_blocks, m.allocs, m.frees, m.bytes_allocated,"
		" m.peak_bytes, m.inherited_bytes, m.inherited_blocks, m.dropped_events,"
		" m.unmatched_frees, m.unfreed_superseded, m.live_mismatch, m.errors,"
		" (SELECT count(*) FROM leaks l WHERE l.process_id = p.id) AS leak_records,"
		/* What a process leaked, bytes and records alike: the lost
		 * classes, not suppressed (reachable and suppressed apart). */
		" (SELECT coalesce(sum(l.bytes), 0) FROM leaks l WHERE l.process_id = p.id"
		"  AND " LOST_RECORD ") AS leaked_bytes,"
		" (SELECT count(*) FROM leaks l WHERE l.process_id = p.id"
		"  AND " LOST_RECORD ") AS leaked_records,"
		" (SELECT count(*) FROM timeline t WHERE t.process_id = p.id) AS samples"
		" FROM processes p LEFT JOIN summaries m ON m.process_id = p.id"
		" WHERE p.run_id = ?1 ORDER BY p.serial", &st);
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		err = rows_json(s, st, &procs);
	}
	if (err) {
		json_decref(runs);
		return err;
	}
	name_fatal_signals(procs);
	*out = json_incref(json_array_get(runs, 0));
	json_decref(runs);
	json_object_set_new(*out, "processes", procs);
	return 0;
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

/* A run's leak records: ?1 run, ?3 class or NULL. */
#define LEAKS_OF_RUN \
	" FROM leaks l JOIN processes p ON p.id = l.process_id" \
	" WHERE p.run_id = ?1 AND (?3 IS NULL OR " SHOWN_CLASS " = ?3)"
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
/* The records of page(id), and what is shown of each. */
#define LEAKS_ROWS \
	" SELECT l.id, p.id AS process_id, p.pid, l.stack_id, l.leak_class, l.bytes," \
	" l.blocks, l.inherited_blocks, l.rank, l.suppressed, l.suppression," \
	" k.depth, k.truncated," \
	LEAK_SITE("y.function") " AS function," \
	LEAK_SITE("y.file") " AS file," \
	LEAK_SITE("y.line") " AS line," \
	LEAK_SITE("y.module") " AS module," \
	LEAK_SITE("y.module_offset") " AS module_offset" \
	" FROM page JOIN leaks l ON l.id = page.id AND l.process_id = page.process_id" \
	" JOIN processes p ON p.id = l.process_id" \
	" LEFT JOIN stacks k ON k.id = l.stack_id ORDER BY l.bytes DESC, l.id, p.id"

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

/* The text filter. A record passes when a frame of its stack has a
 * function, file or module containing the text. Frames form a call tree
 * per run (frames.parent_id), so whether a frame passes is decided
 * once per frame of the run, whatever the number of stacks through it:
 * the names are matched once per frame (FILTER_FRAMES), the tree is walked
 * here with each node's answer remembered, and the records are then one
 * pass in page order (FILTER_RECORDS). Walking every record's stack in SQL
 * instead took 1.0-1.5 s for 100,000 records. */
#define FILTER_FRAMES \
	"SELECT f.id, f.parent_id, y.id IS NOT NULL AND (y.function LIKE ?2 ESCAPE '\\'" \
	" OR y.file LIKE ?2 ESCAPE '\\' OR y.module LIKE ?2 ESCAPE '\\')" \
	" FROM frames f LEFT JOIN symbols y ON y.id = f.symbol_id WHERE f.run_id = ?1" \
	" ORDER BY f.id"
#define FILTER_RECORDS \
	"SELECT l.id, k.leaf_frame_id, p.id FROM leaks l JOIN processes p ON p.id = l.process_id" \
	" JOIN stacks k ON k.id = l.stack_id" \
	" WHERE p.run_id = ?1 AND (?3 IS NULL OR " SHOWN_CLASS " = ?3)" \
	" ORDER BY l.bytes DESC, l.id, p.id"

enum { FRAME_UNKNOWN, FRAME_PASSES, FRAME_FAILS };

struct frame_node {
	int64_t id, parent;
	unsigned char state;
};

struct frame_tree {
	struct frame_node *v;
	size_t n, cap;
};

static struct frame_node *frame_find(const struct frame_tree *t, int64_t id)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->v[lo].id == id ? &t->v[lo] : NULL;
}

/* Whether the stack whose innermost frame is id passes: up the tree to the
 * first node already decided (or past the root: fails), then that answer
 * given to every node of the path walked, so each node is walked once. */
static bool frame_passes(struct frame_tree *t, int64_t id, int64_t **path, size_t *cap)
{
	size_t n = 0;
	unsigned char answer = FRAME_FAILS;
	struct frame_node *f;

	for (f = frame_find(t, id); f; f = frame_find(t, f->parent)) {
		if (f->state != FRAME_UNKNOWN) {
			answer = f->state;
			break;
		}
		if (n == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			*path = hl_xrealloc(*path, *cap * sizeof(**path));
		}
		(*path)[n++] = f->id;
		if (f->parent == 0 || n > t->n) /* root; or a cycle, which a tree has not */
			break;
	}
	while (n)
		frame_find(t, (*path)[--n])->state = answer;
	return answer == FRAME_PASSES;
}

static int load_frames(struct hl_store *s, int64_t run_id, const char *like,
		       struct frame_tree *t)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s, FILTER_FRAMES, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, like, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 1024;
			t->v = hl_xrealloc(t->v, t->cap * sizeof(*t->v));
		}
		t->v[t->n++] = (struct frame_node){
			.id = sqlite3_column_int64(st, 0),
			.parent = sqlite3_column_int64(st, 1), /* NULL reads as 0 */
			.state = sqlite3_column_int(st, 2) ? FRAME_PASSES : FRAME_UNKNOWN,
		};
	}
	err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "query");
	sqlite3_finalize(st);
	return err;
}

/* The filtered records' count, and the ids of the page asked for. */
static int stack_filter(struct hl_store *s, int64_t run_id, const char *like, const char *cls,
			const struct hl_query_page *page, int64_t *total, json_t **ids)
{
	struct frame_tree t = { 0 };
	int64_t *path = NULL;
	size_t path_cap = 0;
	sqlite3_stmt *st;
	int rc, err = load_frames(s, run_id, like, &t);

	*total = 0;
	*ids = json_array();
	if (!err)
		err = hl_query_prepare(s, FILTER_RECORDS, &st);
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (sqlite3_column_type(st, 1) == SQLITE_NULL ||
			    !frame_passes(&t, sqlite3_column_int64(st, 1), &path, &path_cap))
				continue;
			if (*total >= page->offset && *total - page->offset < page->limit)
				json_array_append_new(*ids, json_pack("[II]",
					(json_int_t)sqlite3_column_int64(st, 0),
					(json_int_t)sqlite3_column_int64(st, 2)));
			++*total;
		}
		err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "query");
		sqlite3_finalize(st);
	}
	free(path);
	free(t.v);
	return err;
}

int hl_query_leaks(struct hl_store *s, int64_t run_id, const struct hl_query_page *page,
		   json_t **out)
{
	char *like = page->filter && *page->filter ? hl_like_pattern(page->filter) : NULL;
	const char *cls = page->leak_class && *page->leak_class ? page->leak_class : NULL;
	sqlite3_stmt *st;
	int64_t total = 0;
	json_t *rows, *ids = NULL;
	char *ids_text = NULL;
	int err;

	if (like) {
		err = stack_filter(s, run_id, like, cls, page, &total, &ids);
		ids_text = err ? NULL : json_dumps(ids, JSON_COMPACT);
		json_decref(ids);
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
		err = rows_json(s, st, &rows);
	}
	free(ids_text);
	free(like);
	if (!err)
		*out = paged(total, rows);
	return err;
}

int hl_query_stack(struct hl_store *s, int64_t stack_id, json_t **out)
{
	sqlite3_stmt *st;
	json_t *frames;
	int err = hl_query_prepare(s,
		"WITH RECURSIVE walk(position, frame_id) AS ("
		" SELECT 0, leaf_frame_id FROM stacks WHERE id = ?1"
		" UNION ALL SELECT w.position + 1, f.parent_id FROM walk w"
		" JOIN frames f ON f.id = w.frame_id WHERE f.parent_id IS NOT NULL)"
		" SELECT f.address, f.inlined, y.module, y.module_offset AS offset, y.function,"
		" y.file, y.line FROM walk w JOIN frames f ON f.id = w.frame_id"
		" LEFT JOIN symbols y ON y.id = f.symbol_id ORDER BY w.position", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, stack_id);
	if ((err = rows_json(s, st, &frames)))
		return err;
	if ((err = hl_query_prepare(s, "SELECT truncated FROM stacks WHERE id = ?1", &st))) {
		json_decref(frames);
		return err;
	}
	sqlite3_bind_int64(st, 1, stack_id);
	*out = json_pack("{sIsbso}", "id", (json_int_t)stack_id,
			 "truncated", hl_query_count(st) != 0, "frames", frames);
	return 0;
}

int hl_query_errors(struct hl_store *s, int64_t run_id, json_t **out)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s,
		"SELECT e.id, p.id AS process_id, p.pid, e.kind, e.call, e.detail, e.address,"
		" e.block_address, e.block_size, e.stack_id, e.alloc_stack_id, e.free_stack_id, e.time_ns"
		" FROM errors e JOIN processes p ON p.id = e.process_id"
		" WHERE p.run_id = ?1 ORDER BY p.serial, e.id LIMIT 10000", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	return rows_json(s, st, out);
}

int hl_query_checks(struct hl_store *s, int64_t run_id, json_t **out)
{
	json_t *checks = NULL, *records = NULL;
	sqlite3_stmt *st;
	int err = hl_query_prepare(s,
		"SELECT p.id AS process_id, p.pid, c.seq, c.time_ns, c.by_signal,"
		" c.all_threads_stopped, c.scanned, c.records_total, c.leak_class, c.bytes, c.blocks"
		" FROM checks c JOIN processes p ON p.id = c.process_id"
		" WHERE p.run_id = ?1 ORDER BY p.serial, c.seq, c.leak_class LIMIT 10000", &st);

	*out = NULL;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	if ((err = rows_json(s, st, &checks)))
		return err;
	err = hl_query_prepare(s,
		"SELECT p.id AS process_id, p.pid, r.seq, r.rank, r.stack_id, r.leak_class,"
		" r.bytes, r.indirect_bytes, r.blocks, r.new_bytes, r.new_indirect_bytes, r.new_blocks"
		" FROM check_records r JOIN processes p ON p.id = r.process_id"
		" WHERE p.run_id = ?1 ORDER BY p.serial, r.seq, r.rank LIMIT 10000", &st);
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		err = rows_json(s, st, &records);
	}
	if (err) {
		json_decref(checks);
		return err;
	}
	*out = json_pack("{soso}", "checks", checks, "records", records);
	return 0;
}

/* ---- web UI: timeline and flame graph -------------------------------------- */

int hl_query_timeline(struct hl_store *s, int64_t process_id, json_t **out)
{
	json_t *times = json_array(), *bytes = json_array(), *blocks = json_array();
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT time_ns, in_use_bytes, in_use_blocks FROM timeline"
		" WHERE process_id = ?1 ORDER BY time_ns", &st);

	if (!err) {
		sqlite3_bind_int64(st, 1, process_id);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			json_array_append_new(times, json_integer(sqlite3_column_int64(st, 0)));
			json_array_append_new(bytes, json_integer(sqlite3_column_int64(st, 1)));
			json_array_append_new(blocks, json_integer(sqlite3_column_int64(st, 2)));
		}
		err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "timeline");
		sqlite3_finalize(st);
	}
	*out = json_pack("{sososo}", "time_ns", times, "bytes", bytes, "blocks", blocks);
	if (err) {
		json_decref(*out);
		*out = NULL;
	}
	return err;
}

/* A node of the flame tree while it is built: frames rows indexed by
 * position in the array, children as index lists. */
struct flame_node {
	int64_t id, parent;     /* frames.id, parent's frames.id (0: none) */
	int64_t value;          /* bytes of the stacks through this node */
	char *name;
	size_t first_child, next_sibling; /* indices + 1, 0: none */
};

struct flame {
	struct flame_node *nodes; /* sorted by id */
	size_t n, cap;
};

/* Index + 1 of frames.id id, 0 if absent (binary search: rows are loaded
 * in id order). */
static size_t flame_find(struct flame *f, int64_t id)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->nodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n && f->nodes[lo].id == id ? lo + 1 : 0;
}

static char *frame_name(sqlite3_stmt *st)
{
	const char *fn = (const char *)sqlite3_column_text(st, 2);
	const char *module = (const char *)sqlite3_column_text(st, 3);
	const char *base = module ? strrchr(module, '/') : NULL;
	char *name;

	if (fn)
		return hl_xstrdup(fn);
	if (asprintf(&name, "%s+0x%llx", base ? base + 1 : module ? module : "?",
		     (unsigned long long)sqlite3_column_int64(st, 4)) < 0)
		abort();
	return name;
}

static int flame_load_frames(struct hl_store *s, struct flame *f, int64_t process_id)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s,
		"SELECT f.id, f.parent_id, y.function, y.module, y.module_offset FROM frames f"
		" LEFT JOIN symbols y ON y.id = f.symbol_id"
		" WHERE f.run_id = (SELECT run_id FROM processes WHERE id = ?1)"
		" ORDER BY f.id", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct flame_node *n;

		hl_grow((void **)&f->nodes, &f->cap, f->n, sizeof(*f->nodes));
		n = &f->nodes[f->n++];
		memset(n, 0, sizeof(*n));
		n->id = sqlite3_column_int64(st, 0);
		n->parent = sqlite3_column_int64(st, 1);
		n->name = frame_name(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(s, "frames");
}

/* Adds each stack's bytes to its leaf and every caller up to the root. */
static int flame_add_values(struct hl_store *s, struct flame *f, int64_t process_id, bool leaks)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s, leaks ?
		"SELECT k.leaf_frame_id, sum(l.bytes) FROM leaks l JOIN stacks k"
		" ON k.id = l.stack_id WHERE l.process_id = ?1 AND l.suppressed = 0"
		" AND l.leak_class <> 'reachable' GROUP BY k.leaf_frame_id" :
		"SELECT k.leaf_frame_id, a.bytes FROM stack_aggregates a JOIN stacks k"
		" ON k.id = a.stack_id WHERE a.process_id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t bytes = sqlite3_column_int64(st, 1);
		size_t i = flame_find(f, sqlite3_column_int64(st, 0));

		for (size_t hops = 0; i && hops <= f->n; hops++) {
			f->nodes[i - 1].value += bytes;
			i = f->nodes[i - 1].parent ? flame_find(f, f->nodes[i - 1].parent) : 0;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(s, "flame values");
}

/* Nodes below min_value (a 4,000th of the whole: under a pixel in any
 * window) are left out; their bytes stay in their caller's value, so the
 * caller is drawn as wide as before. 100,000 leak sites made a 3.4 MB tree
 * that took the browser seconds to draw, almost all of it invisible. */
static json_t *flame_json(struct flame *f, size_t i, int64_t min_value)
{
	struct flame_node *n = &f->nodes[i - 1];
	json_t *children = json_array();

	for (size_t c = n->first_child; c; c = f->nodes[c - 1].next_sibling)
		if (f->nodes[c - 1].value > 0 && f->nodes[c - 1].value >= min_value)
			json_array_append_new(children, flame_json(f, c, min_value));
	return json_pack("{sssIso}", "name", n->name, "value", (json_int_t)n->value,
			 "children", children);
}

int hl_query_flame(struct hl_store *s, int64_t process_id, bool leaks, json_t **out)
{
	struct flame f = { 0 };
	json_t *roots = json_array();
	int64_t total = 0;
	int err;

	err = flame_load_frames(s, &f, process_id);
	if (!err)
		err = flame_add_values(s, &f, process_id, leaks);
	/* Link children in reverse so each list keeps frames.id order; a
	 * parent always has a smaller id than its children (rows are written
	 * outermost first), so recursion depth is the stack depth. */
	for (size_t i = f.n; !err && i > 0; i--) {
		size_t parent = f.nodes[i - 1].parent ? flame_find(&f, f.nodes[i - 1].parent) : 0;

		if (parent && parent != i) {
			f.nodes[i - 1].next_sibling = f.nodes[parent - 1].first_child;
			f.nodes[parent - 1].first_child = i;
		}
	}
	for (size_t i = 1; !err && i <= f.n; i++)
		if (!f.nodes[i - 1].parent && f.nodes[i - 1].value > 0)
			total += f.nodes[i - 1].value;
	for (size_t i = 1; !err && i <= f.n; i++)
		if (!f.nodes[i - 1].parent && f.nodes[i - 1].value > 0)
			json_array_append_new(roots, flame_json(&f, i, total / 4000));
	for (size_t i = 0; i < f.n; i++)
		free(f.nodes[i].name);
	free(f.nodes);
	if (err) {
		json_decref(roots);
		return err;
	}
	*out = json_pack("{sssIso}", "name", leaks ? "all leaks" : "all allocations",
			 "value", (json_int_t)total, "children", roots);
	return 0;
}

int hl_query_profile(struct hl_store *s, int64_t process_id, json_t **out)
{
	sqlite3_stmt *st;
	json_t *row = NULL, *frames = NULL;
	int64_t stack = -1;
	int rc, err = hl_query_prepare(s,
		"WITH RECURSIVE walk(stack_id, pos, frame_id) AS ("
		" SELECT k.id, 0, k.leaf_frame_id FROM stacks k JOIN stack_aggregates a"
		" ON a.stack_id = k.id WHERE a.process_id = ?1 AND a.bytes > 0"
		" UNION ALL SELECT w.stack_id, w.pos + 1, f.parent_id FROM walk w"
		" JOIN frames f ON f.id = w.frame_id WHERE f.parent_id IS NOT NULL)"
		" SELECT w.stack_id, a.bytes, a.leaked_bytes, y.function, y.file, y.line,"
		" y.module, y.module_offset FROM walk w JOIN stack_aggregates a"
		" ON a.process_id = ?1 AND a.stack_id = w.stack_id JOIN frames f ON f.id = w.frame_id"
		" LEFT JOIN symbols y ON y.id = f.symbol_id ORDER BY w.stack_id, w.pos", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	*out = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != stack) {
			stack = sqlite3_column_int64(st, 0);
			frames = json_array();
			row = json_pack("{sIsIsIso}", "stack_id", (json_int_t)stack,
					"bytes", (json_int_t)sqlite3_column_int64(st, 1),
					"leaked_bytes", (json_int_t)sqlite3_column_int64(st, 2),
					"frames", frames);
			json_array_append_new(*out, row);
		}
		json_array_append_new(frames, json_pack("{sosososo sI}",
			"function", column_json(st, 3), "file", column_json(st, 4),
			"line", column_json(st, 5), "module", column_json(st, 6),
			"offset", (json_int_t)sqlite3_column_int64(st, 7)));
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
	json_decref(*out);
	*out = NULL;
	return hl_query_fail(s, "profile");
}

/* ---- web UI: diff and search --------------------------------------------- */

int hl_query_search(struct hl_store *s, const char *term, int64_t limit, json_t **out)
{
	char *like = hl_like_pattern(term);
	sqlite3_stmt *st;
	json_t *rows;
	int err = hl_query_prepare(s,
		"SELECT y.function, y.file, y.line, y.module, count(DISTINCT f.run_id) AS runs,"
		" max(f.run_id) AS last_run, min(f.run_id) AS first_run"
		" FROM symbols y JOIN frames f ON f.symbol_id = y.id"
		" WHERE y.function LIKE ?1 ESCAPE '\\' OR y.file LIKE ?1 ESCAPE '\\'"
		" OR y.module LIKE ?1 ESCAPE '\\'"
		" GROUP BY y.function, y.file, y.line, y.module"
		" ORDER BY last_run DESC, y.function LIMIT ?2", &st);

	if (!err) {
		sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, limit);
		err = rows_json(s, st, &rows);
	}
	free(like);
	if (!err)
		*out = json_pack("{sssIso}", "term", term, "limit", (json_int_t)limit, "rows", rows);
	return err;
}
