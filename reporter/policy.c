/*
 * reporter/policy.c: fingerprints and suppressions applied to a finished
 * process's leak groups (policy.h).
 */
#include "policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
#include "suppress.h"
#include "util.h"

size_t hl_policy_stack_frames(const struct hl_process *p, uint32_t ref,
			      struct hl_symbolizer *sym, struct hl_frame_info **buf,
			      size_t *cap)
{
	const struct hl_stack *s = hl_process_stack(p, ref);
	size_t n = 0;

	for (uint32_t i = 0; s && i < s->depth; i++) {
		const struct hl_module *m = hl_process_module_for(p, s->frames[i], s->seq);
		size_t count;
		const struct hl_frame_info *f = hl_symbolize(sym, m, s->frames[i], &count);

		if (n + count > *cap) {
			*cap = (n + count) * 2;
			*buf = hl_xrealloc(*buf, *cap * sizeof(**buf));
		}
		memcpy(*buf + n, f, count * sizeof(*f));
		n += count;
	}
	return n;
}

void hl_policy_apply(const struct hl_policy *pol, struct hl_process *p,
		     struct hl_symbolizer *sym)
{
	struct hl_frame_info *frames = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < p->nleaks; i++) {
		struct hl_leak_group *g = &p->leaks[i];
		size_t n = hl_policy_stack_frames(p, g->stack, sym, &frames, &cap);

		g->fingerprint[0] = 0;
		g->site_function = NULL;
		g->suppression = NULL;
		if (!n)
			continue;
		hl_fingerprint(frames, n, g->fingerprint);
		g->site_function = frames[hl_fingerprint_first_frame(frames, n)].function;
		if (pol && pol->supp) {
			const struct hl_suppression *s =
				hl_supp_match(pol->supp, frames, n, hl_leak_class_name(g->leak_class),
					      g->bytes, g->blocks);

			g->suppression = s ? s->name : NULL;
		}
	}
	free(frames);
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
