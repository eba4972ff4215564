/*
 * libhook/mallinfo.c: glibc's heap-statistics API (mallinfo, mallinfo2,
 * malloc_stats, malloc_info) and mallopt, answered from this allocator.
 *
 * glibc's figures, in its own terms (malloc/malloc.c, int_mallinfo), mapped
 * onto ours:
 *   arena     system bytes of the arenas: our segments (in use and spare)
 *             plus freed large mappings kept for reuse
 *   ordblks   free chunks: free ranges in the arenas' bins, spare segments,
 *             kept large mappings
 *   smblks    fastbin chunks: ranges held in the threads' caches (their
 *             bins, and the calling thread's reuse_delay)
 *   hblks     mmapped chunks: live large blocks (each its own mapping)
 *   hblkhd    their mapping bytes
 *   usmblks   0, as glibc since 2.26
 *   fsmblks   bytes of the cached ranges (smblks)
 *   uordblks  arena - fordblks: in-use ranges with their headers and the
 *             segments' own headers and block maps
 *   fordblks  every free byte counted above (ordblks and smblks)
 *   keepcost  what malloc_trim could give back: spare segments and kept
 *             large mappings (glibc: the top chunk)
 * Blocks freed by another thread on their way back to their arena, other
 * threads' reuse_delay, and under checks=full the quarantine, count as in
 * use: the allocator cannot hand them out yet.
 *
 * Invariant: every figure is a sum taken under the lock of what it counts,
 * one arena at a time; nothing is printed while a lock is held (fprintf may
 * call malloc). Thread caches are read without their owners' cooperation
 * (relaxed loads), so a census taken while other threads allocate may miss
 * their last few operations, as heapledger_get_stats may.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "heap.h"

/* One arena's figures; sizes[] only when a histogram is asked for. */
struct arena_census {
	uint64_t system;      /* segment bytes mapped now */
	uint64_t system_max;  /* most segment bytes mapped at once */
	uint64_t segments;    /* segments mapped now */
	uint64_t free_count;  /* free ranges in the bins and spare segments */
	uint64_t free_bytes;
	uint64_t spare_bytes; /* of which spare segments */
	uint64_t fast_count;  /* ranges held in thread caches of this arena */
	uint64_t fast_bytes;
};

/* glibc lists the arenas it has created; ours exist from the start, so an
 * arena is listed once it has had a segment (arena 0 always). */
static bool arena_is_listed(const struct arena_census *c, unsigned index)
{
	return index == 0 || c->system_max != 0 || c->fast_count != 0;
}

/* One line of malloc_info's <sizes>: free ranges of one class. */
struct size_line {
	uint64_t from, to, total, count;
};

/* Range bytes of every range filed under class cls (its lower bound). */
static size_t class_lower_bound(unsigned cls)
{
	if (cls < HL_TLSF_LINEAR)
		return (size_t)cls * HL_ALIGN;
	unsigned fl = HL_TLSF_FIRST_SHIFT + (cls - HL_TLSF_LINEAR) / HL_TLSF_SUB;
	unsigned sl = (cls - HL_TLSF_LINEAR) % HL_TLSF_SUB;
	return ((size_t)1 << fl) + ((size_t)sl << (fl - HL_TLSF_SUB_SHIFT));
}

static void size_line_add(struct size_line *line, uint64_t size)
{
	if (line->count == 0 || size < line->from)
		line->from = size;
	if (size > line->to)
		line->to = size;
	line->total += size;
	line->count++;
}

static void census_arena_locked(struct hl_arena *a, struct arena_census *c,
				struct size_line *sizes /* OUT: per class, or NULL */)
{
	hl_assert_held(&a->lock);
	c->segments = a->segment_count;
	c->system = (uint64_t)a->segment_count * HL_SEGMENT_SIZE;
	c->system_max = (uint64_t)a->segment_peak * HL_SEGMENT_SIZE;
	for (unsigned cls = 0; cls < HL_TLSF_CLASSES; cls++) {
		for (struct hl_range *r = a->free_heads[cls]; r != NULL;
		     r = ((struct hl_free_links *)hl_range_data(r))->next) {
			c->free_count++;
			c->free_bytes += r->size;
			if (sizes != NULL)
				size_line_add(&sizes[cls], r->size);
		}
	}
	for (struct hl_segment *seg = a->spares; seg != NULL; seg = seg->spare_next) {
		c->free_count++;
		c->free_bytes += HL_SEGMENT_SIZE;
		c->spare_bytes += HL_SEGMENT_SIZE;
		if (sizes != NULL)
			size_line_add(&sizes[hl_class_floor(HL_SEGMENT_SIZE)], HL_SEGMENT_SIZE);
	}
}

struct cache_walk {
	struct arena_census *arenas; /* indexed like hl_arenas */
	struct size_line *fast;      /* [HL_MAX_ARENAS][HL_CACHE_CLASSES] or NULL */
};

/* A range the calling thread's reuse_delay holds: free in its own arena's
 * figures, which may not be the thread's (a block another thread made). */
static void census_held(struct hl_range *r, void *arg)
{
	struct cache_walk *w = arg;
	struct hl_arena *a = hl_arena_of(r);
	if (a < hl_arenas || a >= hl_arenas + HL_MAX_ARENAS)
		return; /* a private arena (tests) */
	struct arena_census *c = &w->arenas[a - hl_arenas];
	c->fast_count++;
	c->fast_bytes += r->size;
}

static void census_cache(struct hl_thread_cache *tc, void *arg)
{
	struct cache_walk *w = arg;
	/* The calling thread's reuse_delay holds ranges free for the program,
	 * as its bins do (in the totals, in no size line). Another thread's
	 * ring is not read: its owner replaces the entries as it frees, and a
	 * range pushed out may be gone with its segment by the time its size
	 * is read; those count as in use, as the quarantine does. */
	if (tc == hl_tcache)
		hl_delay_each(tc, census_held, w);
	if (tc->arena < hl_arenas || tc->arena >= hl_arenas + HL_MAX_ARENAS)
		return; /* none yet, or a private arena (tests) */
	size_t index = (size_t)(tc->arena - hl_arenas);
	struct arena_census *c = &w->arenas[index];
	for (unsigned cls = 0; cls < HL_CACHE_CLASSES; cls++) {
		int64_t held = (int64_t)hl_relaxed_load(&tc->bins[cls].limit) -
			       hl_relaxed_load(&tc->bins[cls].room);
		if (held <= 0)
			continue;
		uint64_t size = class_lower_bound(cls);
		c->fast_count += (uint64_t)held;
		c->fast_bytes += (uint64_t)held * size;
		if (w->fast != NULL) {
			struct size_line *line = &w->fast[index * HL_CACHE_CLASSES + cls];
			line->from = line->to = size;
			line->total += (uint64_t)held * size;
			line->count += (uint64_t)held;
		}
	}
}

/* The whole heap's figures: arenas[] gets one entry per arena in use
 * (*arena_count of them, at least one). */
struct heap_census {
	struct arena_census arenas[HL_MAX_ARENAS];
	unsigned arena_count;
	struct hl_large_census large;
};

static void census_take(struct heap_census *h, struct size_line *sizes, struct size_line *fast)
{
	__builtin_memset(h, 0, sizeof(*h));
	unsigned count = hl_relaxed_load(&hl_arena_count);
	h->arena_count = count ? count : 1;
	for (unsigned i = 0; i < count; i++) {
		struct hl_arena *a = &hl_arenas[i];
		hl_lock(&a->lock);
		census_arena_locked(a, &h->arenas[i], sizes ? &sizes[i * HL_TLSF_CLASSES] : NULL);
		hl_unlock(&a->lock);
	}
	struct cache_walk w = {h->arenas, fast};
	hl_caches_lock();
	hl_caches_each_locked(census_cache, &w);
	hl_caches_unlock();
	hl_large_census(&h->large);
}

static void census_mallinfo(const struct heap_census *h, struct mallinfo2 *m)
{
	__builtin_memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < h->arena_count; i++) {
		const struct arena_census *c = &h->arenas[i];
		m->arena += c->system;
		m->ordblks += c->free_count;
		m->fordblks += c->free_bytes + c->fast_bytes;
		m->smblks += c->fast_count;
		m->fsmblks += c->fast_bytes;
		m->keepcost += c->spare_bytes;
	}
	m->arena += h->large.cached_bytes;
	m->ordblks += h->large.cached_count;
	m->fordblks += h->large.cached_bytes;
	m->keepcost += h->large.cached_bytes;
	m->uordblks = m->arena - m->fordblks;
	m->hblks = h->large.live_count;
	m->hblkhd = h->large.live_bytes;
}

HL_API struct mallinfo2 mallinfo2(void)
{
	static struct heap_census census; /* 5 KiB: off the caller's stack */
	static struct hl_lock census_lock = HL_LOCK_INIT;
	struct mallinfo2 m;
	hl_lock(&census_lock);
	census_take(&census, NULL, NULL);
	census_mallinfo(&census, &m);
	hl_unlock(&census_lock);
	return m;
}

/* The old interface: glibc truncates each figure to int. */
HL_API struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = {
		.arena = (int)m2.arena,
		.ordblks = (int)m2.ordblks,
		.smblks = (int)m2.smblks,
		.hblks = (int)m2.hblks,
		.hblkhd = (int)m2.hblkhd,
		.usmblks = (int)m2.usmblks,
		.fsmblks = (int)m2.fsmblks,
		.uordblks = (int)m2.uordblks,
		.fordblks = (int)m2.fordblks,
		.keepcost = (int)m2.keepcost,
	};
	return m;
}

/* Figures and histograms for malloc_stats and malloc_info, gathered under
 * the locks into static storage and printed after: printing may allocate. */
static struct hl_lock report_lock = HL_LOCK_INIT;
static struct heap_census report_census;
static struct size_line report_sizes[HL_MAX_ARENAS * HL_TLSF_CLASSES];
static struct size_line report_fast[HL_MAX_ARENAS * HL_CACHE_CLASSES];

/* glibc's malloc_stats: per arena and in total, on stderr, in its format
 * (through stdio like glibc, so it stays in order with the program's own
 * stderr output). Peaks are the large blocks'. */
HL_API void malloc_stats(void)
{
	hl_lock(&report_lock);
	struct heap_census *h = &report_census;
	census_take(h, NULL, NULL);
	unsigned system_total = 0, in_use_total = 0, listed = 0;
	for (unsigned i = 0; i < h->arena_count; i++) {
		const struct arena_census *c = &h->arenas[i];
		if (!arena_is_listed(c, i))
			continue;
		unsigned system = (unsigned)c->system;
		unsigned in_use = (unsigned)(c->system - c->free_bytes - c->fast_bytes);
		fprintf(stderr, "Arena %u:\n", listed++);
		fprintf(stderr, "system bytes     = %10u\n", system);
		fprintf(stderr, "in use bytes     = %10u\n", in_use);
		system_total += system;
		in_use_total += in_use;
	}
	system_total += (unsigned)h->large.live_bytes;
	in_use_total += (unsigned)h->large.live_bytes;
	fprintf(stderr, "Total (incl. mmap):\n");
	fprintf(stderr, "system bytes     = %10u\n", system_total);
	fprintf(stderr, "in use bytes     = %10u\n", in_use_total);
	fprintf(stderr, "max mmap regions = %10u\n", (unsigned)h->large.peak_count);
	fprintf(stderr, "max mmap bytes   = %10lu\n", (unsigned long)h->large.peak_bytes);
	hl_unlock(&report_lock);
}

static void info_size_lines(FILE *fp, const struct size_line *lines, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (lines[i].count != 0)
			fprintf(fp, "  <size from=\"%llu\" to=\"%llu\" total=\"%llu\" count=\"%llu\"/>\n",
				(unsigned long long)lines[i].from, (unsigned long long)lines[i].to,
				(unsigned long long)lines[i].total,
				(unsigned long long)lines[i].count);
}

/* One <heap>: glibc's element order; arenas past the first print their
 * segment count as glibc prints a non-main arena's subheaps. */
static void info_heap(FILE *fp, unsigned i, unsigned nr)
{
	const struct arena_census *c = &report_census.arenas[i];
	fprintf(fp, "<heap nr=\"%u\">\n<sizes>\n", nr);
	info_size_lines(fp, &report_fast[i * HL_CACHE_CLASSES], HL_CACHE_CLASSES);
	info_size_lines(fp, &report_sizes[i * HL_TLSF_CLASSES], HL_TLSF_CLASSES);
	fprintf(fp,
		"</sizes>\n<total type=\"fast\" count=\"%llu\" size=\"%llu\"/>\n"
		"<total type=\"rest\" count=\"%llu\" size=\"%llu\"/>\n"
		"<system type=\"current\" size=\"%llu\"/>\n"
		"<system type=\"max\" size=\"%llu\"/>\n",
		(unsigned long long)c->fast_count, (unsigned long long)c->fast_bytes,
		(unsigned long long)c->free_count, (unsigned long long)c->free_bytes,
		(unsigned long long)c->system, (unsigned long long)c->system_max);
	fprintf(fp, "<aspace type=\"total\" size=\"%llu\"/>\n<aspace type=\"mprotect\" size=\"%llu\"/>\n",
		(unsigned long long)c->system, (unsigned long long)c->system);
	if (nr != 0)
		fprintf(fp, "<aspace type=\"subheaps\" size=\"%llu\"/>\n",
			(unsigned long long)c->segments);
	fputs("</heap>\n", fp);
}

static void info_totals(FILE *fp)
{
	const struct heap_census *h = &report_census;
	uint64_t fast_count = 0, fast_bytes = 0, rest_count = 0, rest_bytes = 0;
	uint64_t system = 0, system_max = 0;
	for (unsigned i = 0; i < h->arena_count; i++) {
		fast_count += h->arenas[i].fast_count;
		fast_bytes += h->arenas[i].fast_bytes;
		rest_count += h->arenas[i].free_count;
		rest_bytes += h->arenas[i].free_bytes;
		system += h->arenas[i].system;
		system_max += h->arenas[i].system_max;
	}
	fprintf(fp,
		"<total type=\"fast\" count=\"%llu\" size=\"%llu\"/>\n"
		"<total type=\"rest\" count=\"%llu\" size=\"%llu\"/>\n"
		"<total type=\"mmap\" count=\"%d\" size=\"%llu\"/>\n"
		"<system type=\"current\" size=\"%llu\"/>\n"
		"<system type=\"max\" size=\"%llu\"/>\n"
		"<aspace type=\"total\" size=\"%llu\"/>\n"
		"<aspace type=\"mprotect\" size=\"%llu\"/>\n"
		"</malloc>\n",
		(unsigned long long)fast_count, (unsigned long long)fast_bytes,
		(unsigned long long)rest_count, (unsigned long long)rest_bytes,
		(int)h->large.live_count, (unsigned long long)h->large.live_bytes,
		(unsigned long long)system, (unsigned long long)system_max,
		(unsigned long long)system, (unsigned long long)system);
}

/* glibc's malloc_info: options must be 0 (else EINVAL, nothing written). */
HL_API int malloc_info(int options, FILE *fp)
{
	if (options != 0)
		return EINVAL;
	hl_lock(&report_lock);
	__builtin_memset(report_sizes, 0, sizeof(report_sizes));
	__builtin_memset(report_fast, 0, sizeof(report_fast));
	census_take(&report_census, report_sizes, report_fast);
	fputs("<malloc version=\"1\">\n", fp);
	unsigned listed = 0;
	for (unsigned i = 0; i < report_census.arena_count; i++)
		if (arena_is_listed(&report_census.arenas[i], i))
			info_heap(fp, i, listed++);
	info_totals(fp);
	hl_unlock(&report_lock);
	return 0;
}

/* glibc's mallopt answers 1 for every parameter, known or not, except an
 * M_MXFAST outside 0..MAX_FAST_SIZE (80 * sizeof(size_t) / 4). None of them
 * changes this allocator (its tunables are HEAPLEDGER_OPTIONS). */
HL_API int mallopt(int param, int value)
{
	if (param == M_MXFAST)
		return value >= 0 && (size_t)value <= 80 * sizeof(size_t) / 4;
	return 1;
}
