/*
 * reporter/store/query_leaks.h: a run's loss records for the leak table
 * (model/run_rows.h: struct hl_leak_row). Part of the one query layer
 * (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_LEAKS_H
#define HL_REPORTER_QUERY_LEAKS_H

#include <stdint.h>

#include "query_page.h"
#include "run_rows.h"
#include "store.h"

/* A page of run_id's loss records (by process, stack and class), largest
 * first, into out->leaks, and how many the page's filter matched in
 * out->leaks_total. page->filter matches any frame's function, file or
 * module; page->leak_class the class a record is shown as. Each row comes
 * with its stack (the record is written whole). With page->by_site, a row
 * per leak site and class shown instead: the site's bytes, blocks, records
 * and processes over the run, named and stacked as its largest record.
 * 0 or -errno. */
int hl_query_leaks(struct hl_store *s, int64_t run_id, const struct hl_query_page *page,
		   struct hl_run_rows *out);

#endif /* HL_REPORTER_QUERY_LEAKS_H */
