/*
 * reporter/cli/stored_verdict.h: the gate's inputs for a stored run, shared
 * by `heapledger gate` and `heapledger report` (junit, sarif).
 */
#ifndef HL_REPORTER_STORED_VERDICT_H
#define HL_REPORTER_STORED_VERDICT_H

#include "gate.h"
#include "policy.h"
#include "report.h"
#include "store.h"

/* --baseline RUN|FILE into b: a stored run's sites, or a baseline file (a
 * name that is a number and no file is a run id). 0, or an error said on
 * stderr as "heapledger COMMAND: --baseline ...". */
int hl_baseline_from_arg(struct hl_store *s, const char *command, const char *arg,
			 struct hl_baseline *b);
/* Marks suppressed the leaks of r that pol's suppressions match and the
 * stored run did not already mark. */
void hl_suppress_stored(struct hl_report *r, const struct hl_policy *pol);

#endif /* HL_REPORTER_STORED_VERDICT_H */
