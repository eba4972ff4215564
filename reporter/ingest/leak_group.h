/*
 * reporter/ingest/leak_group.h: loss records: blocks grouped by (allocation stack,
 * leak class), the exit report's and every on-demand check's, by one piece
 * of code so both count and order them alike.
 */
#ifndef HL_REPORTER_LEAK_GROUP_H
#define HL_REPORTER_LEAK_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

struct hl_leak_group;

/* Groups being built: an index from (stack, class) to the group's slot. */
struct hl_leak_grouping {
	struct hl_map index;         /* (stack << 3 | class) + 1 -> index in v */
	struct hl_leak_group *v;     /* the groups, in order of first block */
	size_t n, cap;
};

void hl_grouping_init(struct hl_leak_grouping *g);
void hl_grouping_destroy(struct hl_leak_grouping *g);
/* The group of (stack, class), made empty if it is new. Valid until the
 * next call that adds a group. */
struct hl_leak_group *hl_grouping_get(struct hl_leak_grouping *g, uint32_t stack,
				      uint8_t leak_class);
/* The group of (stack, class), or NULL. */
struct hl_leak_group *hl_grouping_find(const struct hl_leak_grouping *g, uint32_t stack,
				       uint8_t leak_class);
/* A copy of the groups in loss record order (valgrind's: smallest first,
 * the largest last), the grouping left as it is (searchable); *n gets the
 * count. Free with free(). */
struct hl_leak_group *hl_grouping_sorted(const struct hl_leak_grouping *g, size_t *n);
/* Sorts groups in loss record order. */
void hl_leak_groups_sort(struct hl_leak_group *v, size_t n);

#endif /* HL_REPORTER_LEAK_GROUP_H */
