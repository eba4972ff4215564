/*
 * reporter/model/run_list.c: the list of stored runs (run_list.h).
 */
#include "run_list.h"

#include <stdlib.h>
#include <string.h>

void hl_run_list_init(struct hl_run_list *l)
{
	memset(l, 0, sizeof(*l));
	hl_bump_init(&l->arena);
}

void hl_run_list_destroy(struct hl_run_list *l)
{
	free(l->rows);
	hl_bump_free(&l->arena);
	hl_run_list_init(l);
}

struct hl_run_row *hl_run_list_add(struct hl_run_list *l)
{
	hl_grow((void **)&l->rows, &l->cap, l->n, sizeof(*l->rows));
	memset(&l->rows[l->n], 0, sizeof(*l->rows));
	return &l->rows[l->n++];
}

void hl_leak_classes_by_word(unsigned order[HL_LEAK_CLASS_COUNT])
{
	for (unsigned i = 0; i < HL_LEAK_CLASS_COUNT; i++) {
		unsigned c = i, k = i;

		/* insertion sort: six words */
		while (k > 0 && strcmp(hl_leak_class_name(order[k - 1]), hl_leak_class_name(c)) > 0) {
			order[k] = order[k - 1];
			k--;
		}
		order[k] = c;
	}
}
