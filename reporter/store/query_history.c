/*
 * reporter/store/query_history.c: leak sites across the runs a filter
 * selects (store_query.h): the sites of one run, each site's history, the
 * newest run selected. What history, diff, gate and baselines ask. Each
 * statement is built from fixed fragments and takes every value as a bound
 * parameter.
 */
#define _GNU_SOURCE /* asprintf */
#include "store_query.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
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

/* Hands the site gathered in h to fn and clears it. A site whose leaks were
 * suppressed in every selected run is no leak site of the history. */
static int emit_site(struct hl_site_history *h, uint64_t *bytes, unsigned char *suppressed,
		     char **fp, char **function, hl_site_history_fn fn, void *ctx)
{
	int err = 0;

	if (*fp && h->runs) {
		h->fingerprint = *fp;
		h->function = *function;
		err = fn(ctx, h);
	}
	free(*fp);
	free(*function);
	*fp = *function = NULL;
	memset(bytes, 0, h->nruns * sizeof(*bytes));
	memset(suppressed, 0, h->nruns);
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
	unsigned char *suppressed;
	char *fp = NULL, *function = NULL;
	sqlite3_stmt *st = NULL;
	int err = selected_runs(s, f, &ids, &h.nruns), rc = SQLITE_DONE;

	*nruns_out = h.nruns;
	if (err)
		return err;
	bytes = hl_xcalloc(h.nruns + 1, sizeof(*bytes));
	suppressed = hl_xcalloc(h.nruns + 1, 1);
	h.run_ids = ids;
	h.bytes = bytes;
	h.suppressed = suppressed;
	/* Suppressed leaks come too, so that a site suppressed in later runs
	 * reads as suppressed there rather than as fixed; only unsuppressed
	 * bytes count, as the gate and diff count them. */
	err = prepare_filtered(s, f,
		"SELECT l.fingerprint, p.run_id, sum(CASE WHEN l.suppressed = 0 THEN l.bytes ELSE 0 END),"
		" t.function, min(l.suppressed)"
		" FROM processes p JOIN leaks l ON l.process_id = p.id"
		" LEFT JOIN leak_sites t ON t.fingerprint = l.fingerprint"
		" WHERE l.fingerprint IS NOT NULL AND p.run_id IN (",
		") GROUP BY l.fingerprint, p.run_id ORDER BY l.fingerprint, p.run_id", &st);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *row_fp = hl_col_text(st, 0);
		int64_t run = sqlite3_column_int64(st, 1);
		size_t i = run_index(ids, h.nruns, run);

		if (!fp || strcmp(fp, row_fp)) {
			err = emit_site(&h, bytes, suppressed, &fp, &function, fn, ctx);
			fp = hl_xstrdup(row_fp);
			function = hl_col_text(st, 3) ? hl_xstrdup(hl_col_text(st, 3)) : NULL;
		}
		if (sqlite3_column_int(st, 4)) {
			suppressed[i] = 1;
			continue;
		}
		bytes[i] = (uint64_t)sqlite3_column_int64(st, 2);
		if (!h.runs)
			h.first_run = run;
		h.last_run = run;
		h.runs++;
	}
	if (!err && rc != SQLITE_DONE)
		err = hl_query_fail(s, "history");
	if (!err)
		err = emit_site(&h, bytes, suppressed, &fp, &function, fn, ctx);
	free(fp);
	free(function);
	sqlite3_finalize(st);
	free(suppressed);
	free(bytes);
	free(ids);
	return err;
}
