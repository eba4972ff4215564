/*
 * reporter/model/site_diff.c: leak sites of a run, and the diff of two runs
 * by site (site_diff.h has the rule).
 */
#include "site_diff.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_site_list_add(struct hl_site_list *l, const char *fingerprint, const char *function,
		      unsigned leak_class, int suppressed, uint64_t bytes, uint64_t blocks)
{
	struct hl_leak_site *s;

	if (suppressed || !fingerprint || !hl_leak_class_is_lost(leak_class) || !blocks)
		return;
	hl_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v));
	s = &l->v[l->n++];
	memset(s, 0, sizeof(*s));
	s->fingerprint = hl_xstrdup(fingerprint);
	s->function = function ? hl_xstrdup(function) : NULL;
	s->bytes = bytes;
	s->blocks = blocks;
	s->leak_class = leak_class;
	s->class_blocks[leak_class] = blocks;
}

static int by_fingerprint(const void *x, const void *y)
{
	const struct hl_leak_site *a = x, *b = y;

	return strcmp(a->fingerprint, b->fingerprint);
}

/* Adds a site's row into the site kept for its fingerprint. */
static void merge_into(struct hl_leak_site *keep, struct hl_leak_site *row)
{
	assert(!strcmp(keep->fingerprint, row->fingerprint));
	if (__builtin_add_overflow(keep->bytes, row->bytes, &keep->bytes))
		keep->bytes = UINT64_MAX;
	if (__builtin_add_overflow(keep->blocks, row->blocks, &keep->blocks))
		keep->blocks = UINT64_MAX;
	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		keep->class_blocks[c] += row->class_blocks[c];
		if (keep->class_blocks[c] > keep->class_blocks[keep->leak_class])
			keep->leak_class = c;
	}
	if (!keep->function)
		keep->function = row->function;
	else
		free(row->function);
	free(row->fingerprint);
}

void hl_site_list_finish(struct hl_site_list *l)
{
	size_t o = 0;

	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), by_fingerprint);
	for (size_t i = 0; i < l->n; i++) {
		if (o && !strcmp(l->v[o - 1].fingerprint, l->v[i].fingerprint))
			merge_into(&l->v[o - 1], &l->v[i]);
		else
			l->v[o++] = l->v[i];
	}
	l->n = o;
}

void hl_site_list_destroy(struct hl_site_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].fingerprint);
		free(l->v[i].function);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

const char *hl_site_change_name(enum hl_site_change c)
{
	static const char *const names[HL_SITE_CHANGE_COUNT] = {
		[HL_SITE_NEW] = "new", [HL_SITE_FIXED] = "fixed",
		[HL_SITE_CHANGED] = "changed", [HL_SITE_UNCHANGED] = "unchanged",
	};
	return c < HL_SITE_CHANGE_COUNT ? names[c] : "unknown";
}

static void add_delta(struct hl_site_diff *d, enum hl_site_change change,
		      const struct hl_leak_site *a, const struct hl_leak_site *b)
{
	d->v[d->n++] = (struct hl_site_delta){ change, a, b };
	d->counts[change]++;
}

void hl_site_diff(const struct hl_site_list *a, const struct hl_site_list *b,
		  struct hl_site_diff *d)
{
	size_t i = 0, j = 0;

	d->n = 0;
	memset(d->counts, 0, sizeof(d->counts));
	d->v = hl_xmalloc((a->n + b->n + 1) * sizeof(*d->v));
	while (i < a->n || j < b->n) {
		int cmp = i == a->n ? 1 : j == b->n ? -1 :
			  strcmp(a->v[i].fingerprint, b->v[j].fingerprint);

		if (cmp > 0) {
			add_delta(d, HL_SITE_NEW, NULL, &b->v[j++]);
		} else if (cmp < 0) {
			add_delta(d, HL_SITE_FIXED, &a->v[i++], NULL);
		} else {
			bool same = a->v[i].bytes == b->v[j].bytes && a->v[i].blocks == b->v[j].blocks;

			add_delta(d, same ? HL_SITE_UNCHANGED : HL_SITE_CHANGED, &a->v[i], &b->v[j]);
			i++;
			j++;
		}
	}
}

void hl_site_diff_destroy(struct hl_site_diff *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}
