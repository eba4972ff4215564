/*
 * reporter/ingest/state_int.h: what the reconciler's files (state.c,
 * lifecycle.c, finish.c) share with each other and no other file: never
 * included outside reporter/ingest/.
 */
#ifndef HL_REPORTER_STATE_INT_H
#define HL_REPORTER_STATE_INT_H

#include "state.h"

/* state.c */
struct hl_process_stack *hl_state_stack_add(struct hl_process *p);
struct hl_module *hl_state_module_add(struct hl_process *p);
/* A block enters the table by the reconciliation rules (state.h). */
void hl_state_block_alloc(struct hl_process *p, const struct hl_block *nb);
/* A block leaves the live set (its counters and its stack's). */
void hl_state_live_remove(struct hl_process *p, const struct hl_block *b);
void hl_state_sample_take(struct hl_process *p, uint64_t ticks);

/* lifecycle.c */
void hl_state_inherit_from(struct hl_process *child, const struct hl_process *parent);
struct hl_process *hl_state_on_hello(struct hl_run *run, const struct hl_rec_hello *r);

#endif /* HL_REPORTER_STATE_INT_H */
