/*
 * reporter/store/query_runs.h: stored runs as rows (model/run_list.h): the
 * run list, one run's row, a program's runs. Part of the one query layer
 * (store_query.h); the web UI, the HTML report and speedscope render what
 * these return.
 */
#ifndef HL_REPORTER_QUERY_RUNS_H
#define HL_REPORTER_QUERY_RUNS_H

#include <stdint.h>

#include "query_page.h"
#include "run_list.h"
#include "store.h"

/* Runs, newest first, a page of them, into out (hl_run_list_init'ed);
 * out->total counts every run the filter matches. The filter matches the
 * program, argv, git commit, mode or a label (key=value). 0 or -errno.
 * Every query here fills every field of its rows. */
int hl_query_runs(struct hl_store *s, const struct hl_query_page *page, struct hl_run_list *out);
/* The run run_id as the one row of out; -ENOENT with a message when there
 * is none. */
int hl_query_run_row(struct hl_store *s, int64_t run_id, struct hl_run_list *out);
/* The run's own columns only, its labels in the order they were given:
 * the report's header (what its processes add up to is left 0). */
int hl_query_run_header(struct hl_store *s, int64_t run_id, struct hl_run_list *out);
/* The runs of a program (runs.program), oldest first. */
int hl_query_program_runs(struct hl_store *s, const char *program, struct hl_run_list *out);
/* The newest `limit` runs of a program up to run upto (by id), oldest first:
 * a program's trend beside a run of a page of runs, whatever the page and
 * its filter hold. 0 or -errno. */
int hl_query_program_trend(struct hl_store *s, const char *program, int64_t upto, int64_t limit,
			   struct hl_run_list *out);

#endif /* HL_REPORTER_QUERY_RUNS_H */
