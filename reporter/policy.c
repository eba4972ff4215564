/*
 * reporter/policy.c: fingerprints and suppressions applied to a finished
 * process's leak groups (policy.h).
 */
#include "policy.h"

#include <stdlib.h>
#include <string.h>

#include "fingerprint.h"
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

	(void)pol;
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
	}
	free(frames);
}
