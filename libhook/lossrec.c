/*
 * libhook/lossrec.c: the standalone hook's leak report (no reporter): loss
 * records in valgrind's words and order, and a LEAK SUMMARY.
 *
 * A loss record is the blocks of one allocation stack in one leak class,
 * with the bytes definitely lost blocks hold indirectly ("N (D direct, I
 * indirect) bytes"). Records are numbered in valgrind's order (total bytes
 * ascending, then class: definitely, indirectly, possibly lost, still
 * reachable), so the largest is printed last, next to the summary. By
 * default definitely, indirectly and possibly lost records are printed with
 * their stacks and still reachable ones only counted (show_reachable=1
 * prints them). An on-demand check prints only the records that grew since
 * the previous check, with "(+N)" like valgrind's `leak_check increased`.
 * Without a scan (_exit, abort, scan=0) the classes are unknown: each record
 * says "still in use (not scanned)".
 *
 * Frames name their module by its path (the executable's from
 * /proc/self/exe) and an offset from the module's load bias, which is what
 * `addr2line -e MODULE OFFSET` expects for a PIE, a shared library and a
 * non-PIE executable alike.
 *
 * The table is filled while the scan has the world stopped (no allocation,
 * no lock: it is sized before), and printed after, with dladdr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <unistd.h>

#include "lossrec.h"
#include "track.h"

#define NCLASSES 6 /* enum hl_leak_class */

static size_t table_slots(void)
{
	size_t slots = 64;
	while (slots < 4 * (size_t)hl_stack_next_id() + 64)
		slots *= 2;
	return slots;
}

struct hl_lossrec_table *hl_lossrec_new(void)
{
	struct hl_lossrec_table *t = hl_meta_alloc(sizeof(*t));
	if (t == NULL)
		return NULL;
	size_t slots = table_slots();
	t->groups = hl_meta_alloc(slots * sizeof(struct hl_lossrec));
	if (t->groups == NULL) {
		hl_meta_free(t, sizeof(*t));
		return NULL;
	}
	t->mask = slots - 1;
	return t;
}

void hl_lossrec_free(struct hl_lossrec_table *t)
{
	if (t == NULL)
		return;
	hl_meta_free(t->groups, (t->mask + 1) * sizeof(struct hl_lossrec));
	hl_meta_free(t, sizeof(*t));
}

static size_t slot_of(uint32_t stack_id, unsigned leak_class, size_t mask)
{
	return ((stack_id * 8u + leak_class) * 0x9e3779b1u) & mask;
}

/* No allocation, no lock: runs with the world stopped or an arena locked. */
void hl_lossrec_add(struct hl_lossrec_table *t, uint32_t stack_id, unsigned leak_class,
		    uint64_t bytes, uint64_t indirect)
{
	t->class_bytes[leak_class] += bytes;
	t->class_blocks[leak_class]++;
	size_t i = slot_of(stack_id, leak_class, t->mask);
	for (size_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
		struct hl_lossrec *g = &t->groups[i];
		if (g->blocks == 0) {
			g->stack_id = stack_id;
			g->leak_class = (uint8_t)leak_class;
		}
		if (g->stack_id == stack_id && g->leak_class == leak_class) {
			g->bytes += bytes;
			g->indirect += indirect;
			g->blocks++;
			return;
		}
	}
	t->overflow_blocks++;
}

static const struct hl_lossrec *lookup(const struct hl_lossrec_table *t, uint32_t stack_id,
				       unsigned leak_class)
{
	size_t i = slot_of(stack_id, leak_class, t->mask);
	for (size_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
		const struct hl_lossrec *g = &t->groups[i];
		if (g->blocks == 0)
			return NULL;
		if (g->stack_id == stack_id && g->leak_class == leak_class)
			return g;
	}
	return NULL;
}

/* ---- order -------------------------------------------------------------------- */

/* Valgrind's order of classes for equal totals. */
static unsigned class_rank(unsigned leak_class)
{
	switch (leak_class) {
	case HL_CLASS_DEFINITE: return 0;
	case HL_CLASS_INDIRECT: return 1;
	case HL_CLASS_POSSIBLE: return 2;
	case HL_CLASS_REACHABLE: return 3;
	default: return 4;
	}
}

static bool record_before(const struct hl_lossrec *a, const struct hl_lossrec *b)
{
	uint64_t ta = a->bytes + a->indirect, tb = b->bytes + b->indirect;
	if (ta != tb)
		return ta < tb;
	if (a->leak_class != b->leak_class)
		return class_rank(a->leak_class) < class_rank(b->leak_class);
	return a->stack_id < b->stack_id;
}

/* Heapsort (no qsort: it may allocate): ascending by record_before. */
static void sift_down(struct hl_lossrec *g, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && record_before(&g[child], &g[child + 1]))
			child++;
		if (!record_before(&g[root], &g[child]))
			return;
		struct hl_lossrec tmp = g[root];
		g[root] = g[child];
		g[child] = tmp;
	}
}

static void sort_records(struct hl_lossrec *g, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(g, i, n);
	for (size_t end = n; end > 1; end--) {
		struct hl_lossrec tmp = g[0];
		g[0] = g[end - 1];
		g[end - 1] = tmp;
		sift_down(g, 0, end - 1);
	}
}

/* ---- frames ------------------------------------------------------------------- */

static void line_start(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

#define NAME_CACHE_SLOTS 2048u
struct name_cache_slot {
	uint64_t pc; /* 0: empty */
	int found;
	Dl_info info;
	struct link_map *map;
};

static int cached_dladdr(struct name_cache_slot *cache, uint64_t pc, Dl_info *info,
			 struct link_map **map)
{
	struct name_cache_slot local;
	struct name_cache_slot *slot = cache ? &cache[(pc * 0x9e3779b97f4a7c15u) >> 53] : &local;
	if (cache == NULL || slot->pc != pc) {
		slot->pc = pc;
		slot->map = NULL;
		/* pc - 1: a return address may already belong to the next function */
		slot->found = dladdr1((void *)(uintptr_t)(pc - 1), &slot->info,
				      (void **)&slot->map, RTLD_DL_LINKMAP);
	}
	*info = slot->info;
	*map = slot->map;
	return slot->found;
}

static void print_frame(struct hl_out *out, struct name_cache_slot *cache, uint64_t pc,
			bool first)
{
	Dl_info info;
	struct link_map *map;
	line_start(out);
	hl_out_str(out, first ? "   at " : "   by ");
	hl_out_hex(out, pc);
	if (cached_dladdr(cache, pc, &info, &map) == 0 || map == NULL) {
		hl_out_str(out, ": ???\n");
		return;
	}
	hl_out_str(out, ": ");
	if (info.dli_sname) {
		hl_out_str(out, info.dli_sname);
		hl_out_str(out, "+");
		hl_out_hex(out, pc - (uintptr_t)info.dli_saddr);
	} else {
		hl_out_str(out, "???");
	}
	hl_out_str(out, " (");
	hl_out_str(out, map->l_name && map->l_name[0] ? map->l_name : hl_modules_exe_path());
	hl_out_str(out, "+");
	hl_out_hex(out, pc - (uintptr_t)map->l_addr); /* load bias: addr2line's offset */
	hl_out_str(out, ")\n");
}

/* A stack as "at/by" lines (heap misuse reports print theirs this way). */
void hl_track_print_stack(struct hl_out *out, uint32_t id)
{
	const struct hl_stack *s = id ? hl_stack_get(id) : NULL;
	if (s == NULL) {
		line_start(out);
		hl_out_str(out, "   (no stack captured)\n");
	}
	for (unsigned i = 0; s && i < s->depth; i++)
		print_frame(out, NULL, s->frames[i], i == 0);
}

/* ---- printing ----------------------------------------------------------------- */

static const char *class_words(unsigned leak_class)
{
	switch (leak_class) {
	case HL_CLASS_DEFINITE: return "definitely lost";
	case HL_CLASS_INDIRECT: return "indirectly lost";
	case HL_CLASS_POSSIBLE: return "possibly lost";
	case HL_CLASS_REACHABLE: return "still reachable";
	default: return "still in use (not scanned)";
	}
}

/* " (+N)" as valgrind prints growth since the last check. */
static void out_delta(struct hl_out *out, uint64_t now, uint64_t before, bool on)
{
	if (!on)
		return;
	hl_out_str(out, now >= before ? " (+" : " (-");
	hl_out_u64_grouped(out, now >= before ? now - before : before - now);
	hl_out_str(out, ")");
}

static void print_record(struct hl_out *out, struct name_cache_slot *cache,
			 const struct hl_lossrec *g, const struct hl_lossrec *old, bool delta,
			 size_t rank, size_t n)
{
	struct hl_lossrec none = { 0 };
	if (old == NULL)
		old = &none;
	line_start(out);
	hl_out_u64_grouped(out, g->bytes + g->indirect);
	out_delta(out, g->bytes + g->indirect, old->bytes + old->indirect, delta);
	if (g->indirect) {
		hl_out_str(out, " (");
		hl_out_u64_grouped(out, g->bytes);
		out_delta(out, g->bytes, old->bytes, delta);
		hl_out_str(out, " direct, ");
		hl_out_u64_grouped(out, g->indirect);
		out_delta(out, g->indirect, old->indirect, delta);
		hl_out_str(out, " indirect)");
	}
	hl_out_str(out, " bytes in ");
	hl_out_u64_grouped(out, g->blocks);
	out_delta(out, g->blocks, old->blocks, delta);
	hl_out_str(out, " blocks are ");
	hl_out_str(out, class_words(g->leak_class));
	hl_out_str(out, " in loss record ");
	hl_out_u64_grouped(out, rank);
	hl_out_str(out, " of ");
	hl_out_u64_grouped(out, n);
	hl_out_str(out, "\n");
	const struct hl_stack *s = hl_stack_get(g->stack_id);
	if (s == NULL) {
		line_start(out);
		hl_out_str(out, "   (no stack captured)\n");
	}
	for (unsigned i = 0; s && i < s->depth; i++)
		print_frame(out, cache, s->frames[i], i == 0);
	line_start(out);
	hl_out_str(out, s && s->truncated ? "   ... (deeper frames not captured)\n\n" : "\n");
}

static bool record_shown(const struct hl_lossrec *g, const struct hl_lossrec_table *prev,
			 bool check)
{
	if (g->leak_class == HL_CLASS_REACHABLE && !hl_options.show_reachable)
		return false;
	if (!check)
		return true;
	const struct hl_lossrec *old = prev ? lookup(prev, g->stack_id, g->leak_class) : NULL;
	return old == NULL || g->bytes + g->indirect > old->bytes + old->indirect ||
	       g->blocks > old->blocks;
}

static void print_summary_line(struct hl_out *out, const char *label,
			       const struct hl_lossrec_table *t,
			       const struct hl_lossrec_table *prev, unsigned leak_class)
{
	bool delta = prev != NULL;
	line_start(out);
	hl_out_str(out, label);
	hl_out_u64_grouped(out, t->class_bytes[leak_class]);
	out_delta(out, t->class_bytes[leak_class], delta ? prev->class_bytes[leak_class] : 0, delta);
	hl_out_str(out, " bytes in ");
	hl_out_u64_grouped(out, t->class_blocks[leak_class]);
	out_delta(out, t->class_blocks[leak_class], delta ? prev->class_blocks[leak_class] : 0,
		  delta);
	hl_out_str(out, " blocks\n");
}

static void print_summary(struct hl_out *out, const struct hl_lossrec_table *t,
			  const struct hl_lossrec_table *prev)
{
	line_start(out);
	hl_out_str(out, "LEAK SUMMARY:\n");
	print_summary_line(out, "   definitely lost: ", t, prev, HL_CLASS_DEFINITE);
	print_summary_line(out, "   indirectly lost: ", t, prev, HL_CLASS_INDIRECT);
	print_summary_line(out, "     possibly lost: ", t, prev, HL_CLASS_POSSIBLE);
	print_summary_line(out, "   still reachable: ", t, prev, HL_CLASS_REACHABLE);
	print_summary_line(out, "        suppressed: ", t, prev, HL_CLASS_SUPPRESSED);
	if (t->class_blocks[HL_CLASS_REACHABLE] && !hl_options.show_reachable) {
		line_start(out);
		hl_out_str(out, "Reachable blocks (those to which a pointer was found) are not shown.\n");
		line_start(out);
		hl_out_str(out, "To see them, set " HL_ENV_OPTIONS "=show_reachable=1\n");
	}
}

static void print_unscanned_total(struct hl_out *out, const struct hl_lossrec_table *t,
				  const char *why)
{
	line_start(out);
	hl_out_str(out, "LEAK LIST (not scanned: ");
	hl_out_str(out, why);
	hl_out_str(out, "): ");
	hl_out_u64_grouped(out, t->class_bytes[HL_CLASS_UNKNOWN]);
	hl_out_str(out, " bytes in ");
	hl_out_u64_grouped(out, t->class_blocks[HL_CLASS_UNKNOWN]);
	hl_out_str(out, " blocks\n");
}

void hl_lossrec_print(int fd, struct hl_lossrec_table *t, const struct hl_lossrec_table *prev,
		      const struct hl_lossrec_report *how)
{
	size_t n = 0;
	for (size_t i = 0; i <= t->mask; i++)
		n += t->groups[i].blocks != 0;
	/* Sorted apart: the table stays searchable as the next check's `prev`. */
	struct hl_lossrec *sorted = hl_meta_alloc((n + 1) * sizeof(*sorted));
	if (sorted == NULL)
		return;
	n = 0;
	for (size_t i = 0; i <= t->mask; i++)
		if (t->groups[i].blocks)
			sorted[n++] = t->groups[i];
	sort_records(sorted, n);
	struct hl_out out;
	hl_out_init(&out, fd);
	bool check = how->check_seq != 0;
	if (check) {
		line_start(&out);
		hl_out_str(&out, "leak check ");
		hl_out_u64(&out, how->check_seq);
		hl_out_str(&out, how->check_seq > 1 ? " (records that grew since the last check):\n"
						    : ":\n");
	}
	if (how->unstopped.count) {
		unsigned named = hl_unstopped_named(&how->unstopped);
		line_start(&out);
		hl_out_str(&out, named > 1 ? "heapledger: threads " : "heapledger: thread ");
		for (unsigned i = 0; i < named; i++) {
			hl_out_str(&out, i ? ", " : "");
			hl_out_u64(&out, how->unstopped.tids[i]);
		}
		if (how->unstopped.count > named) {
			hl_out_str(&out, " and ");
			hl_out_u64(&out, how->unstopped.count - named);
			hl_out_str(&out, " more");
		}
		hl_out_str(&out, how->unstopped.count > 1 ?
				 " did not stop for the leak scan within 2 s; their stacks were read "
				 "while they ran\n" :
				 " did not stop for the leak scan within 2 s; its stack was read while "
				 "it ran\n");
	}
	if (!how->scanned)
		print_unscanned_total(&out, t, how->why);
	if (n == 0 && how->scanned) {
		line_start(&out);
		hl_out_str(&out, "All heap blocks were freed -- no leaks are possible\n");
	}
	struct name_cache_slot *cache =
		hl_meta_alloc(NAME_CACHE_SLOTS * sizeof(struct name_cache_slot));
	/* max_leaks: the largest that many records (the last ones), as the
	 * reporter's --max-leaks prints them, saying how many were left out;
	 * 0: all. */
	size_t shown = 0, skip = 0;
	for (size_t i = 0; i < n; i++)
		shown += record_shown(&sorted[i], prev, check);
	if (hl_options.max_leaks && shown > hl_options.max_leaks) {
		skip = shown - hl_options.max_leaks;
		line_start(&out);
		hl_out_str(&out, "(the ");
		hl_out_u64_grouped(&out, skip);
		hl_out_str(&out, " smallest loss records are not shown: max_leaks=");
		hl_out_u64(&out, hl_options.max_leaks);
		hl_out_str(&out, ")\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct hl_lossrec *g = &sorted[i];
		if (!record_shown(g, prev, check))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		const struct hl_lossrec *old = check && prev ? lookup(prev, g->stack_id, g->leak_class)
							     : NULL;
		print_record(&out, cache, g, old, check && how->check_seq > 1, i + 1, n);
	}
	if (cache)
		hl_meta_free(cache, NAME_CACHE_SLOTS * sizeof(struct name_cache_slot));
	if (t->overflow_blocks) {
		line_start(&out);
		hl_out_u64_grouped(&out, t->overflow_blocks);
		hl_out_str(&out, " blocks of stacks interned during the scan are counted in the "
				 "summary only\n");
	}
	if (how->scanned && n)
		print_summary(&out, t, check && how->check_seq > 1 ? prev : NULL);
	hl_out_flush(&out);
	hl_meta_free(sorted, (n + 1) * sizeof(*sorted));
}
