/*
 * reporter/store/query_search.h: symbols by a piece of their name, file or
 * module, with the runs whose stacks pass through them (the web UI's
 * search). Part of the one query layer (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_SEARCH_H
#define HL_REPORTER_QUERY_SEARCH_H

#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* At most limit symbols whose function, file or module contains term, the
 * newest run first, into out->symbols. 0 or -errno. */
int hl_query_search(struct hl_store *s, const char *term, int64_t limit, struct hl_run_rows *out);

#endif /* HL_REPORTER_QUERY_SEARCH_H */
