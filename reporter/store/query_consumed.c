/*
 * reporter/store/query_consumed.c: heap consumed over time by the top
 * functions of a process (query_consumed.h), from timeline and
 * stack_series. A stack's series row holds from its sample on, so each
 * timeline sample (in time order) takes every row at or before its time;
 * samples with the same time show the last of them. The stacks of a site
 * add up; the sites are ranked by the most they held at one sample.
 */
#include "query_consumed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "query_where.h"

/* The store keeps at most this many series a process (store.c). */
#define STACKS_MAX 64

/* One stored series and the site it belongs to. */
struct series {
	int64_t stack_id;
	size_t site;                  /* index into the work's sites */
	uint64_t level;               /* its bytes as of the sample being filled */
};

struct work {
	struct hl_consumed *out;
	struct series stacks[STACKS_MAX];
	size_t nstacks;
	struct hl_consumed_site sites[STACKS_MAX]; /* before ranking */
	size_t nsites;
};

void hl_consumed_init(struct hl_consumed *c)
{
	memset(c, 0, sizeof(*c));
	hl_bump_init(&c->arena);
}

void hl_consumed_destroy(struct hl_consumed *c)
{
	hl_bump_free(&c->arena);
	memset(c, 0, sizeof(*c));
}

static int step_all(struct hl_store *s, sqlite3_stmt *st, int rc, const char *what)
{
	int err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, what);

	sqlite3_finalize(st);
	return err;
}

static int read_timeline(struct hl_store *s, int64_t process_id, struct hl_consumed *c)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s, "SELECT count(*) FROM timeline WHERE process_id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	c->nsamples = (size_t)hl_query_count(st);
	c->time_ns = hl_bump_alloc(&c->arena, (c->nsamples + 1) * sizeof(*c->time_ns));
	c->total = hl_bump_alloc(&c->arena, (c->nsamples + 1) * sizeof(*c->total));
	c->other = hl_bump_alloc(&c->arena, (c->nsamples + 1) * sizeof(*c->other));
	err = hl_query_prepare(s, "SELECT time_ns, in_use_bytes FROM timeline WHERE process_id = ?1"
			       " ORDER BY time_ns, rowid", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	for (size_t i = 0; (rc = sqlite3_step(st)) == SQLITE_ROW && i < c->nsamples; i++) {
		c->time_ns[i] = (uint64_t)sqlite3_column_int64(st, 0);
		c->total[i] = (uint64_t)sqlite3_column_int64(st, 1);
	}
	return step_all(s, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, "timeline");
}

/* The site stack_id belongs to (where it "is"), added if new. */
static int site_of(struct hl_store *s, struct work *w, sqlite3_stmt *where, size_t *site)
{
	struct hl_consumed_site v = { 0 };
	struct hl_bump *a = &w->out->arena;
	int rc = sqlite3_step(where);

	if (rc == SQLITE_ROW) {
		v.function = hl_col_text_in(a, where, 0);
		v.file = hl_col_text_in(a, where, 1);
		v.line = sqlite3_column_int64(where, 2);
		v.module = hl_col_text_in(a, where, 3);
		v.module_offset = (uint64_t)sqlite3_column_int64(where, 4);
	} else if (rc != SQLITE_DONE) {
		return hl_query_fail(s, "where a stack is");
	}
	sqlite3_reset(where);
	for (*site = 0; *site < w->nsites; ++*site) {
		const struct hl_consumed_site *o = &w->sites[*site];

		if (v.function ? o->function && !strcmp(o->function, v.function)
			       : !o->function && o->module_offset == v.module_offset &&
				 (o->module == v.module ||
				  (o->module && v.module && !strcmp(o->module, v.module))))
			return 0;
	}
	v.bytes = hl_bump_alloc(a, (w->out->nsamples + 1) * sizeof(*v.bytes));
	w->sites[w->nsites++] = v;
	return 0;
}

static int read_stacks(struct hl_store *s, int64_t process_id, struct work *w)
{
	sqlite3_stmt *st, *where;
	int rc, err = hl_query_prepare(s, "SELECT DISTINCT stack_id FROM stack_series"
				       " WHERE process_id = ?1 ORDER BY stack_id", &st);

	if (err)
		return err;
	if ((err = hl_query_prepare(s, HL_WHERE_OF_FRAME("(SELECT leaf_frame_id FROM stacks"
							  " WHERE id = ?1)"), &where))) {
		sqlite3_finalize(st);
		return err;
	}
	sqlite3_bind_int64(st, 1, process_id);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW && w->nstacks < STACKS_MAX) {
		struct series *v = &w->stacks[w->nstacks++];

		v->stack_id = sqlite3_column_int64(st, 0);
		sqlite3_bind_int64(where, 1, v->stack_id);
		err = site_of(s, w, where, &v->site);
	}
	sqlite3_finalize(where);
	if (err) {
		sqlite3_finalize(st);
		return err;
	}
	return step_all(s, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, "series");
}

static struct series *series_find(struct work *w, int64_t stack_id)
{
	for (size_t i = 0; i < w->nstacks; i++)
		if (w->stacks[i].stack_id == stack_id)
			return &w->stacks[i];
	return NULL;
}

/* Each site's bytes at each sample (its stacks' levels added up). */
static void fill_sample(struct work *w, size_t i)
{
	for (size_t k = 0; k < w->nsites; k++)
		w->sites[k].bytes[i] = 0;
	for (size_t k = 0; k < w->nstacks; k++)
		w->sites[w->stacks[k].site].bytes[i] += w->stacks[k].level;
	for (size_t k = 0; k < w->nsites; k++)
		if (w->sites[k].bytes[i] > w->sites[k].peak)
			w->sites[k].peak = w->sites[k].bytes[i];
}

static int read_series(struct hl_store *s, int64_t process_id, struct work *w)
{
	const struct hl_consumed *c = w->out;
	sqlite3_stmt *st;
	size_t i = 0;
	int rc, err = hl_query_prepare(s, "SELECT stack_id, time_ns, bytes FROM stack_series"
				       " WHERE process_id = ?1 ORDER BY time_ns, sample", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t t = (uint64_t)sqlite3_column_int64(st, 1);
		struct series *v = series_find(w, sqlite3_column_int64(st, 0));

		for (; i < c->nsamples && c->time_ns[i] < t; i++)
			fill_sample(w, i);
		if (v)
			v->level = (uint64_t)sqlite3_column_int64(st, 2);
	}
	for (; i < c->nsamples; i++)
		fill_sample(w, i);
	return step_all(s, st, rc, "series");
}

static int by_peak(const void *a, const void *b)
{
	const struct hl_consumed_site *x = a, *y = b;

	if (x->peak != y->peak)
		return x->peak < y->peak ? 1 : -1;
	if (!x->function || !y->function)
		return !x->function - !y->function;
	return strcmp(x->function, y->function);
}

/* The top sites, and other: the rest of each sample's heap in use. */
static void rank(struct work *w)
{
	struct hl_consumed *c = w->out;

	qsort(w->sites, w->nsites, sizeof(*w->sites), by_peak);
	for (size_t k = 0; k < w->nsites && c->nsites < HL_CONSUMED_TOP; k++)
		if (w->sites[k].peak)
			c->sites[c->nsites++] = w->sites[k];
	for (size_t i = 0; i < c->nsamples; i++) {
		uint64_t held = 0;

		for (size_t k = 0; k < c->nsites; k++)
			held += c->sites[k].bytes[i];
		c->other[i] = c->total[i] > held ? c->total[i] - held : 0;
	}
}

int hl_query_consumed(struct hl_store *s, int64_t process_id, struct hl_consumed *out)
{
	struct work w = { .out = out };
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, "SELECT count(*) FROM processes WHERE id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	if (!hl_query_count(st)) {
		snprintf(s->error, sizeof(s->error), "no process %lld in the database",
			 (long long)process_id);
		return -ENOENT;
	}
	err = read_timeline(s, process_id, out);
	if (!err)
		err = read_stacks(s, process_id, &w);
	if (!err && w.nstacks) {
		out->has_series = true;
		err = read_series(s, process_id, &w);
	}
	if (!err)
		rank(&w);
	return err;
}
