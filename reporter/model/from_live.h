/*
 * reporter/model/from_live.h: the one way from the live state of ingest/
 * (state.h: a finished process's blocks, leak groups, stacks) into the
 * model: its loss records marked with fingerprints and suppressions, its
 * place in a report, its count in the gate. Only this header of model/
 * includes state.h, so everything that renders or judges a report (formats,
 * store readers, the gate over a stored run, the UI) is built from the model
 * alone and cannot depend on how ingest keeps its data.
 */
#ifndef HL_REPORTER_FROM_LIVE_H
#define HL_REPORTER_FROM_LIVE_H

#include "gate.h"
#include "policy.h"
#include "report.h"
#include "state.h"
#include "symbolize.h"

/* Sets fingerprint, site_function and suppression of every leak group of p
 * (finished), from its stacks symbolized through sym, and counts p in
 * pol->gate (policy.c). */
void hl_policy_apply(const struct hl_policy *pol, struct hl_process *p,
		     struct hl_symbolizer *sym);

/* Counts a finished live process's leaks and errors into g (gate.c). */
void hl_gate_count_process(struct hl_gate *g, const struct hl_gate_options *o,
			   const struct hl_process *p);

/* Adds a finished process, symbolizing its leak and error stacks; at most
 * max_frames frames per stack (0 = all). Its stacks' frames are the ones
 * sym's memo keeps for the run (stack_memo.h): the report must not outlive
 * sym (their strings are sym's anyway) (report.c). */
struct hl_report_process *hl_report_add_process(struct hl_report *r,
						 struct hl_process *p,
						 struct hl_symbolizer *sym,
						 unsigned max_frames);

#endif /* HL_REPORTER_FROM_LIVE_H */
