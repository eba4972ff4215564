/*
 * reporter/store_query.h: the query layer. Every SQL statement that the
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	const char *leak_class;       /* leaks.leak_class */
	const char *suppression;      /* a suppression's name if every leak of the row was suppressed */
	uint64_t bytes, blocks;
	uint64_t processes;           /* processes that leaked there */
};
typedef int (*hl_run_site_fn)(void *ctx, const struct hl_run_site *site);
/* Calls fn for each (fingerprint, class, suppressed) of run_id, ordered by
 * fingerprint; a non-zero return from fn stops and is returned. */
int hl_query_run_sites(struct hl_store *s, int64_t run_id, hl_run_site_fn fn, void *ctx);

/* One site across the runs a filter selects. */
struct hl_site_history {
	const char *fingerprint;
	const char *function;
	int64_t first_run, last_run;  /* first and last selected run that leaked there */
	uint64_t runs;                /* selected runs that leaked there */
	const int64_t *run_ids;       /* the selected runs, oldest first (nruns) */
	const uint64_t *bytes;        /* bytes leaked there in each of them (0: none) */
	size_t nruns;
};
typedef int (*hl_site_history_fn)(void *ctx, const struct hl_site_history *h);
/* Calls fn for each site leaked (suppressed or not) in a run the filter
 * selects, ordered by fingerprint. *nruns_out: how many runs were selected. */
int hl_query_history(struct hl_store *s, const struct hl_run_filter *f,
		     hl_site_history_fn fn, void *ctx, size_t *nruns_out);

/* The newest run the filter selects, or -ENOENT. */
int hl_query_latest_run(struct hl_store *s, const struct hl_run_filter *f, int64_t *run_id);
/* Whether run_id exists: 0, or -ENOENT with a message in hl_store_error(). */
int hl_query_run_exists(struct hl_store *s, int64_t run_id);

#endif /* HL_REPORTER_STORE_QUERY_H */
