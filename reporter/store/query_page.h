/*
 * reporter/store/query_page.h: which rows of a long answer a query returns
 * (the web UI's pages of runs and of loss records).
 */
#ifndef HL_REPORTER_QUERY_PAGE_H
#define HL_REPORTER_QUERY_PAGE_H

#include <stdbool.h>
#include <stdint.h>

/* At most `limit` rows from `offset`; `filter` is a substring that rows
 * must contain (in the fields each query names), or NULL; `leak_class`
 * narrows loss records to the class they are shown as (its word, or
 * "suppressed"), to "lost" (the lost classes, not suppressed: what leaks),
 * or not at all (NULL); `by_site` groups loss records by site. */
struct hl_query_page {
	int64_t offset;
	int64_t limit;
	const char *filter;
	const char *leak_class;
	/* loss records: one row per leak site and class shown, added up over
	 * the run's processes (hl_query_leaks), not one per record */
	bool by_site;
};

#endif /* HL_REPORTER_QUERY_PAGE_H */
