/*
 * reporter/store/query_views.h: the queries behind the web UI's views of a
 * run that the reports do not ask (which run came before, of the same
 * program), answered as C values; the UI makes its JSON of them (ui/api.c).
 * Part of the one query layer (store_query.h): SQL lives here, never in
 * the UI.
 */
#ifndef HL_REPORTER_STORE_QUERY_VIEWS_H
#define HL_REPORTER_STORE_QUERY_VIEWS_H

#include <stdint.h>

#include "store.h"

/* The newest run of the same program as run_id that started before it
 * (by id), in *out; 0 when there is none. 0, -ENOENT (no such run) or
 * -errno with hl_store_error() set. */
int hl_query_previous_run(struct hl_store *s, int64_t run_id, int64_t *out);

/* Calls fn(ctx, process id, test name) for each process of run_id that a
 * test runner named ($HEAPLEDGER_TEST_NAME, processes.test_name), in
 * process order; a non-zero return from fn stops and is returned. 0 or
 * -errno with hl_store_error() set. */
typedef int (*hl_test_name_fn)(void *ctx, int64_t process_id, const char *test_name);
int hl_query_test_names(struct hl_store *s, int64_t run_id, hl_test_name_fn fn, void *ctx);

#endif /* HL_REPORTER_STORE_QUERY_VIEWS_H */
