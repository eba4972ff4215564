/*
 * reporter/policy.h: what the user's options make of a finished process's
 * leaks before they are reported and stored: each leak group gets its site's
 * fingerprint and, when a suppression matches its stack, that suppression's
 * name. The leak keeps its class; suppression is a separate mark, so a
 * report can show the class of a suppressed leak and a later gate can apply
 * other suppressions to the same stored run.
 */
#ifndef HL_REPORTER_POLICY_H
#define HL_REPORTER_POLICY_H

#include "state.h"
#include "symbolize.h"

struct hl_suppressions;

struct hl_policy {
	struct hl_suppressions *supp; /* NULL: no suppressions at all */
};

/* Sets fingerprint, site_function and suppression of every leak group of p
 * (finished), from its stacks symbolized through sym. */
void hl_policy_apply(const struct hl_policy *pol, struct hl_process *p,
		     struct hl_symbolizer *sym);

/* The frames of stack reference ref of p, innermost first, inlined frames
 * expanded, into *buf (grown with realloc; *cap its capacity). Returns the
 * count. */
size_t hl_policy_stack_frames(const struct hl_process *p, uint32_t ref,
			      struct hl_symbolizer *sym, struct hl_frame_info **buf,
			      size_t *cap);

#endif /* HL_REPORTER_POLICY_H */
