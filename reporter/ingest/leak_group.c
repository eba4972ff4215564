/*
 * reporter/ingest/leak_group.c: loss records by (stack, class) (leak_group.h).
 */
#include "leak_group.h"

#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "util.h"

void hl_grouping_init(struct hl_leak_grouping *g)
{
	memset(g, 0, sizeof(*g));
	hl_map_init(&g->index);
}

void hl_grouping_destroy(struct hl_leak_grouping *g)
{
	hl_map_destroy(&g->index);
	free(g->v);
	memset(g, 0, sizeof(*g));
}

static uint64_t group_key(uint32_t stack, uint8_t leak_class)
{
	return ((uint64_t)stack << 3 | (leak_class & 7u)) + 1;
}

struct hl_leak_group *hl_grouping_find(const struct hl_leak_grouping *g, uint32_t stack,
				       uint8_t leak_class)
{
	const uint64_t *slot = hl_map_find(&g->index, group_key(stack, leak_class));

	return slot ? &g->v[*slot] : NULL;
}

struct hl_leak_group *hl_grouping_get(struct hl_leak_grouping *g, uint32_t stack,
				      uint8_t leak_class)
{
	bool added;
	uint64_t *slot = hl_map_find_or_insert(&g->index, group_key(stack, leak_class), &added);
	struct hl_leak_group *l;

	if (!added)
		return &g->v[*slot];
	*slot = g->n;
	hl_grow((void **)&g->v, &g->cap, g->n, sizeof(*g->v));
	l = &g->v[g->n++];
	memset(l, 0, sizeof(*l));
	l->stack = stack;
	l->leak_class = leak_class;
	return l;
}

/* Where a class sorts among loss records of equal size: valgrind's order
 * (mc_leakcheck.c, Reachedness: reachable, possible, indirect, definite),
 * then the records no scan classified, then suppressed ones. */
static unsigned class_order(uint8_t leak_class)
{
	static const uint8_t order[] = {
		[HL_CLASS_REACHABLE] = 0, [HL_CLASS_POSSIBLE] = 1,
		[HL_CLASS_INDIRECT] = 2, [HL_CLASS_DEFINITE] = 3,
		[HL_CLASS_UNKNOWN] = 4, [HL_CLASS_SUPPRESSED] = 5,
	};
	return leak_class < HL_ARRAY_SIZE(order) ? order[leak_class] : 4;
}

/* valgrind's order of loss records: smallest first, so the largest is
 * printed last, next to the LEAK SUMMARY; then by class, blocks, stack. */
static int leak_group_cmp(const void *a, const void *b)
{
	const struct hl_leak_group *x = a, *y = b;
	uint64_t tx = x->bytes + x->indirect_bytes, ty = y->bytes + y->indirect_bytes;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (class_order(x->leak_class) != class_order(y->leak_class))
		return class_order(x->leak_class) < class_order(y->leak_class) ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks < y->blocks ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void hl_leak_groups_sort(struct hl_leak_group *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), leak_group_cmp);
}

struct hl_leak_group *hl_grouping_sorted(const struct hl_leak_grouping *g, size_t *n)
{
	struct hl_leak_group *v = hl_xcalloc(g->n + 1, sizeof(*v));

	if (g->n)
		memcpy(v, g->v, g->n * sizeof(*v));
	hl_leak_groups_sort(v, g->n);
	*n = g->n;
	return v;
}
