/*
 * reporter/store/query_flame.h: a process's flame graph (model/run_rows.h:
 * struct hl_flame). Part of the one query layer (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_FLAME_H
#define HL_REPORTER_QUERY_FLAME_H

#include <stdbool.h>
#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* process_id's call tree into out (hl_flame_init'ed): each node's value is
 * the bytes allocated (leaks false) or leaked, not suppressed nor still
 * reachable (leaks true), by the stacks through it. Below the roots, nodes
 * worth less than a 4,000th of the total are left out (their bytes stay in
 * their caller's value). 0 or -errno. */
int hl_query_flame(struct hl_store *s, int64_t process_id, bool leaks, struct hl_flame *out);

#endif /* HL_REPORTER_QUERY_FLAME_H */
