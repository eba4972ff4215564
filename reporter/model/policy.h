/*
 * reporter/model/policy.h: what the user's options make of a finished process's
 * leaks before they are reported and stored: each leak group gets its site's
 * fingerprint and, when a suppression matches its stack, that suppression's
 * name. The leak keeps its class; suppression is a separate mark, so a
 * report can show the class of a suppressed leak and a later gate can apply
 * other suppressions to the same stored run.
 */
#ifndef HL_REPORTER_POLICY_H
#define HL_REPORTER_POLICY_H

#include "gate.h"
#include "state.h"
#include "symbolize.h"

#include <stdio.h>

struct hl_suppressions;

struct hl_policy {
	struct hl_suppressions *supp; /* NULL: no suppressions at all */
	/* from the command line (HL_POLICY_ARGS) */
	const char **supp_files;      /* --suppressions FILE, in order */
	size_t nsupp_files;
	const char *default_suppressions; /* "yes" (NULL) or "no" */
	const char *gen_suppressions;     /* "no" (NULL) or "all" */
	struct hl_gate_options gate_options; /* HL_GATE_ARGS */
	struct hl_gate *gate;         /* counts each process applied, NULL: none */
};

/* The suppression options of run, daemon and gate, for their args.h tables. */
#define HL_POLICY_ARGS(pol) \
	HL_ARG_CALL("suppressions", 0, "FILE", hl_policy_suppressions_arg, (pol), \
		    "suppress the leaks FILE describes (valgrind or LSan format; repeatable)"), \
	HL_ARG_CHOICE("default-suppressions", 0, "yes|no", &(pol)->default_suppressions, \
		      "suppress glibc's and libstdc++'s runtime memory (default yes)"), \
	HL_ARG_CHOICE("gen-suppressions", 0, "no|all", &(pol)->gen_suppressions, \
		      "print a suppression for each leak (default no)")

/* args.h callback of --suppressions: adds the file to the policy. */
const char *hl_policy_suppressions_arg(const char *path, void *policy);
/* Reads the built-in set (unless --default-suppressions=no) and every file.
 * A file that cannot be read or is malformed: "heapledger COMMAND: FILE:LINE:
 * what" on stderr and -EINVAL; the command then runs nothing. */
int hl_policy_load(struct hl_policy *pol, const char *command);
void hl_policy_destroy(struct hl_policy *pol);
bool hl_policy_gen_suppressions(const struct hl_policy *pol);
/* The used (and unused) suppressions, if there are any to tell. */
void hl_policy_print_used(const struct hl_policy *pol, FILE *out);

/* Sets fingerprint, site_function and suppression of every leak group of p
 * (finished), from its stacks symbolized through sym, and counts p in
 * pol->gate. */
void hl_policy_apply(const struct hl_policy *pol, struct hl_process *p,
		     struct hl_symbolizer *sym);

#endif /* HL_REPORTER_POLICY_H */
