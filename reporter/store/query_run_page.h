/*
 * reporter/store/query_run_page.h: one stored run with its processes
 * (model/run_rows.h: struct hl_run_page), for the web UI's run page, the
 * HTML report and speedscope. Part of the one query layer (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_RUN_PAGE_H
#define HL_REPORTER_QUERY_RUN_PAGE_H

#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* run_id's row and its processes in HELLO order (with their summaries,
 * loss record counts and timeline sample counts) into out
 * (hl_run_page_init'ed). -ENOENT with a message when there is no such run. */
int hl_query_run(struct hl_store *s, int64_t run_id, struct hl_run_page *out);
/* Only its processes, appended to out, without their record and sample
 * counts (left 0): the report reads the records themselves, and its
 * header with hl_query_run_header. */
int hl_query_processes(struct hl_store *s, int64_t run_id, struct hl_run_page *out);

#endif /* HL_REPORTER_QUERY_RUN_PAGE_H */
