/*
 * reporter/store/store_query.h: the query layer. Every SQL statement that
 * report, history, diff, gate, baseline, the web UI, the HTML report and
 * speedscope run over a stored database is in reporter/store/, one file per
 * question (query_*.c; store_load.c assembles the report of one run from
 * them and holds no SQL), parameterised, and returns model structs
 * (reporter/model/), never JSON: the commands and the UI render what these
 * functions return with reporter/formats/.
 *
 * Leak sites are named by their fingerprint (fingerprint.h). Results are
 * handed to a callback row by row, so a large history is never held whole;
 * strings passed to a callback live until it returns.
 */
#ifndef HL_REPORTER_STORE_QUERY_H
#define HL_REPORTER_STORE_QUERY_H

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

/* How far a run has been written: its processes so far and whether it has
 * ended (-ENOENT: no such run). Cheap enough to ask several times a second. */
int hl_query_run_progress(struct hl_store *s, int64_t run_id, int64_t *processes, bool *ended);

/* The rest of the layer, one file each: the run list and a program's runs
 * (query_runs.h), one run with its processes (query_run_page.h), its heap
 * errors, checks and timelines (query_run_rows.h), its loss records
 * (query_leaks.h), stacks (query_stacks.h), flame graphs (query_flame.h),
 * profiles (query_profile.h), the symbol search (query_search.h) and the
 * web UI's own questions (query_views.h). */
#include "query_flame.h"
#include "query_leaks.h"
#include "query_page.h"
#include "query_profile.h"
#include "query_run_page.h"
#include "query_run_rows.h"
#include "query_runs.h"
#include "query_search.h"
#include "query_stacks.h"
#include "query_views.h"

#endif /* HL_REPORTER_STORE_QUERY_H */
