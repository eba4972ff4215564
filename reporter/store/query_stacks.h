/*
 * reporter/store/query_stacks.h: a stored stack by its id, frames innermost
 * first, as the report model holds one (struct hl_report_stack): the
 * loader of `heapledger report` and the web UI's stack answers read it
 * with the same statement (query_stacks.c). Part of the one query layer
 * (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_STACKS_H
#define HL_REPORTER_QUERY_STACKS_H

#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* stack_id's frames into out, their strings in a; a stack that does not
 * exist has no frames. 0 or -errno. */
int hl_query_stack(struct hl_store *s, int64_t stack_id, struct hl_bump *a,
		   struct hl_stack_row *out);

#endif /* HL_REPORTER_QUERY_STACKS_H */
