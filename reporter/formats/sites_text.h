/*
 * reporter/formats/sites_text.h: a stored run's leak sites, every process
 * added up (store/query_leaks.h with page.by_site: the rows the web UI's
 * leak table shows by default), as the end of `heapledger report`'s text:
 * a suite's site that leaks in 99 tests is one line "in 99 processes".
 */
#ifndef HL_REPORTER_SITES_TEXT_H
#define HL_REPORTER_SITES_TEXT_H

#include <stdint.h>
#include <stdio.h>

#include "run_rows.h"

/* "heapledger: LEAK SITES ..." then a line per row of sites (total: how
 * many the query matched), nothing if it has none. */
void hl_leak_sites_print_text(const struct hl_run_rows *sites, int64_t total, FILE *out);

#endif /* HL_REPORTER_SITES_TEXT_H */
