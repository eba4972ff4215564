/*
 * reporter/store_query.h: the one query layer over the database, shared by
 * the command line and the web UI: every SELECT those commands need lives in
 * store_query.c, with its parameters bound (never spliced into the SQL).
 *
 * This header has one section per consumer; the web UI's section answers in
 * JSON (jansson), the shape its pages read, each row an object keyed by
 * column name.
 */
#ifndef HL_REPORTER_STORE_QUERY_H
#define HL_REPORTER_STORE_QUERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* Opens path strictly read-only (SQLite mode=ro): no file is created, no
 * migration runs, nothing is written, so a database copied from CI stays
 * byte for byte what it was. A file whose schema is older or newer than this
 * binary's is refused with a message that says so (-EPROTO). The caller
 * closes *out with hl_store_close() even on failure. */
int hl_store_open_strict_ro(const char *path, struct hl_store **out);

/* ---- web UI: runs, one run, stacks, timeline, flame graph, diff, search ---- */

/* A page of rows: at most `limit` rows from `offset`; `filter` is a
 * substring that rows must contain (in the fields each query names), or
 * NULL; `leak_class` narrows leak rows to one class, or NULL. */
struct hl_query_page {
	int64_t offset;
	int64_t limit;
	const char *filter;
	const char *leak_class;
};

/* Runs, newest first, with leaks by class, errors and peak heap; filter
 * matches program, argv, git commit, label values or mode.
 * *out = {"total": N, "rows": [...]}. */
int hl_query_runs(struct hl_store *s, const struct hl_query_page *page, json_t **out);
/* One run: its row, labels and processes (with parent_id for the process
 * tree, summaries and leak/error counts). -ENOENT if there is none. */
int hl_query_run(struct hl_store *s, int64_t run_id, json_t **out);
/* A run's leak records (by process, stack and class), largest first, paged;
 * filter matches any frame's function, file or module.
 * *out = {"total": N, "rows": [...]}. */
int hl_query_leaks(struct hl_store *s, int64_t run_id, const struct hl_query_page *page,
		   json_t **out);
/* One stack's frames, innermost first: function, file, line, module,
 * offset, inlined. *out = {"id", "truncated", "frames": [...]}. */
int hl_query_stack(struct hl_store *s, int64_t stack_id, json_t **out);
/* A run's heap errors with their three stack ids. */
int hl_query_errors(struct hl_store *s, int64_t run_id, json_t **out);
/* A process's heap in use over time: {"time_ns": [...], "bytes": [...],
 * "blocks": [...]} (column arrays, the shape chart libraries take). */
int hl_query_timeline(struct hl_store *s, int64_t process_id, json_t **out);
/* A process's allocations as a call tree from the outermost frame:
 * {"name", "value", "children": [...]} where value is bytes allocated
 * (leaks=false) or bytes leaked (leaks=true) by the stacks through it. */
int hl_query_flame(struct hl_store *s, int64_t process_id, bool leaks, json_t **out);
/* Leak sites of run b that run a does not have ("new"), that a had and b
 * has not ("fixed"), and those in both, keyed by each site's leak class and
 * function/file chain. */
int hl_query_diff(struct hl_store *s, int64_t run_a, int64_t run_b, json_t **out);
/* Symbols whose function, file or module contains term, with the runs and
 * bytes leaked through them. *out = {"rows": [...]} (at most limit). */
int hl_query_search(struct hl_store *s, const char *term, int64_t limit, json_t **out);

#endif /* HL_REPORTER_STORE_QUERY_H */
