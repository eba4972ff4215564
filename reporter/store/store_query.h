/*
 * reporter/store/store_query.h: the query layer. Every SQL statement that the
 * history, diff, gate and baseline commands (and the web UI) run over a
 * stored database is here, parameterised; the commands only format what
 * these functions return. The report of one run is loaded by
 * hl_store_load_report() (store_load.c), part of the same layer.
 *
 * Leak sites are named by their fingerprint (fingerprint.h). Results are
 * handed to a callback row by row, so a large history is never held whole;
 * strings passed to a callback live until it returns.
 */
#ifndef HL_REPORTER_STORE_QUERY_H
#define HL_REPORTER_STORE_QUERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "site_diff.h"
#include "site_history.h"
#include "store.h"

/* Which runs a query covers: every condition given must hold. */
struct hl_run_filter {
	const char *program;          /* runs.program (basename), NULL: any */
	const char *const *label_keys; /* each key=value must be a label of the run */
	const char *const *label_values;
	size_t nlabels;
	int64_t max_run_id;           /* only runs up to this id, 0: all */
};

/* One site in one run: the leaks of every process of the run with that
 * fingerprint and class, suppressed or not, added up. */
struct hl_run_site {
	const char *fingerprint;
	const char *function;         /* innermost program function, NULL if unknown */
	unsigned leak_class;          /* enum hl_leak_class */
	bool suppressed;              /* the row's leaks are suppressed */
	const char *suppression;      /* then the suppression's name, if one matched */
	uint64_t bytes, blocks;
	uint64_t processes;           /* processes that leaked there */
};
typedef int (*hl_run_site_fn)(void *ctx, const struct hl_run_site *site);
/* Calls fn for each (fingerprint, class, suppressed) of run_id, ordered by
 * fingerprint; a non-zero return from fn stops and is returned. */
int hl_query_run_sites(struct hl_store *s, int64_t run_id, hl_run_site_fn fn, void *ctx);
/* The leak sites of run_id (model/site_diff.h: lost, unsuppressed records
 * by fingerprint), finished; 0 or -errno. */
int hl_query_leak_sites(struct hl_store *s, int64_t run_id, struct hl_site_list *out);

/* Calls fn for each site leaked in a run the filter selects (its records
 * no suppression matched: a suppressed leak is no leak to fix), ordered by
 * fingerprint. *nruns_out: how many runs were selected. */
int hl_query_history(struct hl_store *s, const struct hl_run_filter *f,
		     hl_site_history_fn fn, void *ctx, size_t *nruns_out);

/* The newest run the filter selects, or -ENOENT. */
int hl_query_latest_run(struct hl_store *s, const struct hl_run_filter *f, int64_t *run_id);
/* Whether run_id exists: 0, or -ENOENT with a message in hl_store_error(). */
int hl_query_run_exists(struct hl_store *s, int64_t run_id);

/* ---- web UI: runs, one run, stacks, timeline, flame graph, diff, search ---- */

#include "query_page.h"

/* One run: its row, labels and processes (with parent_id for the process
 * tree, summaries and leak/error counts). -ENOENT if there is none. */
int hl_query_run(struct hl_store *s, int64_t run_id, json_t **out);
/* How far a run has been written: its processes so far and whether it has
 * ended (-ENOENT: no such run). Cheap enough to ask several times a second. */
int hl_query_run_progress(struct hl_store *s, int64_t run_id, int64_t *processes, bool *ended);
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
/* A run's on-demand leak checks: *out = {"checks": one row per check and
 * leak class (its bytes and blocks), "records": the loss records each
 * check kept, with what changed since the check before}, in process and
 * check order. */
int hl_query_checks(struct hl_store *s, int64_t run_id, json_t **out);
/* A process's heap in use over time: {"time_ns": [...], "bytes": [...],
 * "blocks": [...]} (column arrays, the shape chart libraries take). */
int hl_query_timeline(struct hl_store *s, int64_t process_id, json_t **out);
/* A process's allocations as a call tree from the outermost frame:
 * {"name", "value", "children": [...]} where value is bytes allocated
 * (leaks=false) or bytes leaked (leaks=true) by the stacks through it.
 * Nodes worth less than a 4,000th of the total are left out (their bytes
 * stay in their caller's value). */
int hl_query_flame(struct hl_store *s, int64_t process_id, bool leaks, json_t **out);
/* A process's stacks as weighted samples, for profile viewers: rows of
 * {"stack_id", "bytes" (allocated), "leaked_bytes", "frames": [{function,
 * file, line, module, offset}, innermost first]}, stacks that allocated
 * nothing left out. */
int hl_query_profile(struct hl_store *s, int64_t process_id, json_t **out);
/* Symbols whose function, file or module contains term, with the runs and
 * bytes leaked through them. *out = {"rows": [...]} (at most limit). */
int hl_query_search(struct hl_store *s, const char *term, int64_t limit, json_t **out);

#endif /* HL_REPORTER_STORE_QUERY_H */
