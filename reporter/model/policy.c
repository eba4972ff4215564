/*
 * reporter/model/policy.c: fingerprints and suppressions applied to a finished
 * process's leak groups (policy.h).
 */
#include "policy.h"
#include "from_live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stack_memo.h"
#include "state.h"
#include "suppress.h"
#include "util.h"

/* A loss record's fingerprint, site and suppression. Its stack was
 * symbolized and fingerprinted once for the run (stack_memo.h): a fork
 * child's records, its parent's stacks, cost a lookup each. */
static void apply_group(const struct hl_policy *pol, struct hl_process *p,
			struct hl_leak_group *g, struct hl_symbolizer *sym)
{
	const struct hl_stack_sym *s = hl_stack_memo_get(sym, p, g->stack);

	g->fingerprint[0] = 0;
	g->site_function = NULL;
	g->suppression = NULL;
	if (!s || !s->nframes)
		return;
	memcpy(g->fingerprint, s->fingerprint, sizeof(g->fingerprint));
	g->site_function = s->site_function;
	if (pol && pol->supp) {
		const struct hl_suppression *supp =
			hl_stack_memo_suppression(s, pol->supp, g->leak_class, g->bytes, g->blocks);

		g->suppression = supp ? supp->name : NULL;
	}
}

/* An on-demand check's records get the exit records' treatment, so a
 * suppressed site is suppressed in the checks too; its blocks then count
 * as suppressed in the check's totals, as valgrind's LEAK SUMMARY counts
 * them (once per check, however often this runs). */
static void apply_check(const struct hl_policy *pol, struct hl_process *p, struct hl_check *c,
			struct hl_symbolizer *sym)
{
	for (size_t j = 0; j < c->nrecords; j++) {
		struct hl_leak_group *g = &c->records[j].g;

		apply_group(pol, p, g, sym);
		if (c->suppressions_counted || !g->suppression ||
		    g->leak_class == HL_CLASS_SUPPRESSED || g->leak_class > HL_CLASS_SUPPRESSED)
			continue;
		c->bytes[g->leak_class] -= g->bytes;
		c->blocks[g->leak_class] -= g->blocks;
		c->bytes[HL_CLASS_SUPPRESSED] += g->bytes;
		c->blocks[HL_CLASS_SUPPRESSED] += g->blocks;
	}
	c->suppressions_counted = true;
}

void hl_policy_apply(const struct hl_policy *pol, struct hl_process *p,
		     struct hl_symbolizer *sym)
{
	for (size_t i = 0; i < p->nleaks; i++)
		apply_group(pol, p, &p->leaks[i], sym);
	for (size_t i = 0; i < p->nchecks; i++)
		apply_check(pol, p, &p->checks[i], sym);
	if (pol && pol->gate)
		hl_gate_count_process(pol->gate, &pol->gate_options, p);
}

const char *hl_policy_suppressions_arg(const char *path, void *policy)
{
	struct hl_policy *pol = policy;

	pol->supp_files = hl_xrealloc(pol->supp_files,
				      (pol->nsupp_files + 1) * sizeof(*pol->supp_files));
	pol->supp_files[pol->nsupp_files++] = path;
	return NULL;
}

int hl_policy_load(struct hl_policy *pol, const char *command)
{
	char err[1024];

	pol->supp = hl_xcalloc(1, sizeof(*pol->supp));
	hl_supp_init(pol->supp);
	if (!pol->default_suppressions || strcmp(pol->default_suppressions, "no"))
		hl_supp_add_defaults(pol->supp);
	for (size_t i = 0; i < pol->nsupp_files; i++) {
		if (hl_supp_load(pol->supp, pol->supp_files[i], err, sizeof(err))) {
			fprintf(stderr, "heapledger %s: suppressions: %s\n", command, err);
			return -EINVAL;
		}
	}
	return 0;
}

void hl_policy_destroy(struct hl_policy *pol)
{
	if (pol->supp)
		hl_supp_destroy(pol->supp);
	free(pol->supp);
	free(pol->supp_files);
	pol->supp = NULL;
	pol->supp_files = NULL;
	pol->nsupp_files = 0;
}

bool hl_policy_gen_suppressions(const struct hl_policy *pol)
{
	return pol->gen_suppressions && !strcmp(pol->gen_suppressions, "all");
}

void hl_policy_print_used(const struct hl_policy *pol, FILE *out)
{
	bool any = pol->nsupp_files > 0;

	for (size_t i = 0; pol->supp && i < pol->supp->n && !any; i++)
		any = pol->supp->v[i].matched > 0;
	if (any)
		hl_supp_print_used(pol->supp, out, "heapledger: ");
}
