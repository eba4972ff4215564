/*
 * reporter/symbols/stack_memo.c: distinct stacks of a run symbolized and
 * fingerprinted once (stack_memo.h).
 */
#include "stack_memo.h"

#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "suppress.h"
#include "table.h"
#include "util.h"

/* A process's modules as the memo compares them: each module's identity
 * in the symbolizer and the range it covered. */
struct layout_module {
	uint64_t id; /* 64 bits: no padding, the arrays are compared whole */
	uint64_t low, high;
};

struct layout {
	uint64_t hash;
	struct layout_module *modules;
	size_t n;
};

/* A distinct stack: its identity, then what it symbolizes to. */
struct entry {
	uint32_t layout;          /* layout id; 0: modules holds each frame's module */
	const uint64_t *addresses; /* depth return addresses */
	const uint32_t *modules;   /* layout 0: depth module ids (0: none) */
	struct hl_stack_sym sym;
	/* suppression verdicts (hl_supp_verdict) by leak class, bit c of known
	 * set when verdict[c] is, for the set of serial supp_serial */
	uint64_t supp_serial;
	uint32_t verdict[HL_CLASS_SUPPRESSED + 1];
	unsigned known;
};

struct hl_stack_memo {
	uint64_t serial;         /* names this memo in a process's stack_syms */
	struct hl_map entries;   /* key hash -> struct entry * */
	struct layout *layouts;  /* id - 1 */
	size_t nlayouts, layouts_cap;
	struct hl_bump arena;
};

struct hl_stack_memo *hl_stack_memo_new(void)
{
	static _Atomic uint64_t serials;
	struct hl_stack_memo *m = hl_xcalloc(1, sizeof(*m));

	m->serial = ++serials;
	hl_map_init(&m->entries);
	hl_bump_init(&m->arena);
	return m;
}

void hl_stack_memo_free(struct hl_stack_memo *m)
{
	if (!m)
		return;
	hl_map_destroy(&m->entries);
	free(m->layouts);
	hl_bump_free(&m->arena);
	free(m);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* The id of p's layout, 0 when two of its modules ever overlapped (then
 * the module of an address depends on when the stack was taken). Module
 * ids go to *ids (p->nmodules of them, the caller frees). */
static uint32_t layout_of(struct hl_stack_memo *m, struct hl_symbolizer *sym,
			  const struct hl_process *p, uint32_t **ids)
{
	struct layout_module *mods = hl_xmalloc((p->nmodules + 1) * sizeof(*mods));
	uint64_t h = 0x9e3779b97f4a7c15ull;
	bool overlap = false;
	uint32_t id = 0;

	*ids = hl_xmalloc((p->nmodules + 1) * sizeof(**ids));
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct hl_module *mod = &p->modules[i];

		for (size_t j = 0; j < i && !overlap; j++)
			overlap = mod->low < p->modules[j].high && p->modules[j].low < mod->high;
		(*ids)[i] = hl_symbolizer_module_id(sym, mod);
		mods[i] = (struct layout_module){ (*ids)[i], mod->low, mod->high };
		h = mix(mix(mix(h, mods[i].id), mods[i].low), mods[i].high);
	}
	for (size_t i = 0; i < m->nlayouts && !overlap && !id; i++) {
		const struct layout *l = &m->layouts[i];

		if (l->hash == h && l->n == p->nmodules &&
		    !memcmp(l->modules, mods, p->nmodules * sizeof(*mods)))
			id = (uint32_t)i + 1;
	}
	if (!overlap && !id) {
		struct layout_module *kept = hl_bump_alloc(&m->arena, (p->nmodules + 1) * sizeof(*kept));

		memcpy(kept, mods, p->nmodules * sizeof(*kept));
		hl_grow((void **)&m->layouts, &m->layouts_cap, m->nlayouts, sizeof(*m->layouts));
		m->layouts[m->nlayouts++] = (struct layout){ h, kept, p->nmodules };
		id = (uint32_t)m->nlayouts;
	}
	free(mods);
	return id;
}

/* The module id of each frame of s, for a process without a layout. */
static void frame_modules(const struct hl_process *p, const uint32_t *ids,
			  const struct hl_process_stack *s, uint32_t *out)
{
	for (uint32_t i = 0; i < s->depth; i++) {
		const struct hl_module *mod = hl_process_module_for(p, s->frames[i], s->seq);

		out[i] = mod ? ids[mod - p->modules] : 0;
	}
}

static bool entry_is(const struct entry *e, uint32_t layout, const struct hl_process_stack *s,
		     const uint32_t *modules)
{
	return e->layout == layout && e->sym.depth == s->depth &&
	       e->sym.truncated == (s->truncated != 0) &&
	       !memcmp(e->addresses, s->frames, (size_t)s->depth * sizeof(*s->frames)) &&
	       (layout || !memcmp(e->modules, modules, (size_t)s->depth * sizeof(*modules)));
}

/* Appends the frames of s's address i (one, or more where calls were
 * inlined there) to *frames, which holds *n of room *cap; returns how many. */
static size_t append_frames(struct hl_symbolizer *sym, const struct hl_process *p,
			    const struct hl_process_stack *s, uint32_t i,
			    struct hl_frame_info **frames, size_t *n, size_t *cap)
{
	const struct hl_module *mod = hl_process_module_for(p, s->frames[i], s->seq);
	size_t count;
	const struct hl_frame_info *f = hl_symbolize(sym, mod, s->frames[i], &count);

	if (*n + count > *cap) {
		*cap = (*n + count) * 2;
		*frames = hl_xrealloc(*frames, *cap * sizeof(**frames));
	}
	memcpy(*frames + *n, f, count * sizeof(*f));
	*n += count;
	return count;
}

/* Symbolizes s into a new entry. */
static void entry_fill(struct hl_stack_memo *m, struct hl_symbolizer *sym,
		       const struct hl_process *p, const struct hl_process_stack *s, struct entry *e)
{
	struct hl_frame_info *frames = NULL;
	uint8_t *per = hl_bump_alloc(&m->arena, s->depth + 1u);
	size_t n = 0, cap = 0;

	for (uint32_t i = 0; i < s->depth; i++) /* at most HL_MAX_INLINE + 1 each */
		per[i] = (uint8_t)append_frames(sym, p, s, i, &frames, &n, &cap);
	e->sym.frames = n ? memcpy(hl_bump_alloc(&m->arena, n * sizeof(*frames)), frames,
				   n * sizeof(*frames)) : NULL;
	free(frames);
	e->sym.nframes = n;
	e->sym.per_address = per;
	if (n) {
		hl_fingerprint(e->sym.frames, n, e->sym.fingerprint);
		e->sym.site_function = e->sym.frames[hl_fingerprint_first_frame(e->sym.frames, n)].function;
	}
}

void hl_stack_fingerprint(struct hl_symbolizer *sym, const struct hl_process *p,
			  const struct hl_process_stack *s, char out[HL_FINGERPRINT_LEN + 1])
{
	struct hl_frame_info *frames = NULL;
	size_t n = 0, cap = 0, first = SIZE_MAX;

	/* hl_fingerprint hashes HL_FINGERPRINT_FRAMES frames from the first
	 * program frame (or from the top, when every frame is the runtime's):
	 * the frames below those change nothing. */
	for (uint32_t i = 0; i < s->depth; i++) {
		size_t from = n;

		append_frames(sym, p, s, i, &frames, &n, &cap);
		for (size_t j = from; j < n && first == SIZE_MAX; j++)
			if (!hl_frame_is_runtime(&frames[j]))
				first = j;
		if (first != SIZE_MAX && n >= first + HL_FINGERPRINT_FRAMES)
			break;
	}
	out[0] = 0;
	if (n)
		hl_fingerprint(frames, n, out);
	free(frames);
}

/* The entry of p's stack index i, made on first use. */
static struct hl_stack_sym *lookup(struct hl_stack_memo *m, struct hl_symbolizer *sym,
				   struct hl_process *p, size_t i)
{
	const struct hl_process_stack *s = &p->stacks[i];
	uint32_t layout = p->stack_syms_layout;
	uint32_t *modules = NULL;
	uint64_t h = mix(mix(mix(0x2545f4914f6cdd1dull, layout),
			     (uint64_t)s->depth << 1 | (s->truncated != 0)),
			 s->frames_hash ? s->frames_hash : hl_stack_frames_hash(s->frames, s->depth));
	struct entry *e;

	if (!layout) {
		modules = hl_xmalloc(((size_t)s->depth + 1) * sizeof(*modules));
		frame_modules(p, p->stack_syms_module_ids, s, modules);
		for (uint32_t j = 0; j < s->depth; j++)
			h = mix(h, modules[j]);
	}
	h = h << 4 ? h << 4 : 16; /* a table key: never 0 */
	for (uint64_t *v = hl_map_find(&m->entries, h); v; v = hl_map_find_next(&m->entries, h, v)) {
		e = hl_map_ptr(*v);
		if (entry_is(e, layout, s, modules)) {
			free(modules);
			return &e->sym;
		}
	}
	e = hl_bump_alloc(&m->arena, sizeof(*e));
	e->layout = layout;
	e->addresses = memcpy(hl_bump_alloc(&m->arena, (size_t)s->depth * 8 + 8), s->frames,
			      (size_t)s->depth * 8);
	if (modules) {
		e->modules = memcpy(hl_bump_alloc(&m->arena, (size_t)s->depth * sizeof(*modules) + 4),
				    modules, (size_t)s->depth * sizeof(*modules));
		free(modules);
	}
	e->sym.depth = s->depth;
	e->sym.truncated = s->truncated != 0;
	entry_fill(m, sym, p, s, e);
	hl_map_insert(&m->entries, h, hl_map_of_ptr(e));
	return &e->sym;
}

const struct hl_stack_sym *hl_stack_memo_get(struct hl_symbolizer *sym, struct hl_process *p,
					     uint32_t ref)
{
	struct hl_stack_memo *m = hl_symbolizer_stack_memo(sym);

	if (!ref || ref > p->nstacks)
		return NULL;
	if (p->stack_syms_of != m->serial || p->nstack_syms != p->nstacks) {
		free(p->stack_syms);
		free(p->stack_syms_module_ids);
		p->stack_syms = hl_xcalloc(p->nstacks, sizeof(*p->stack_syms));
		p->nstack_syms = p->nstacks;
		p->stack_syms_of = m->serial;
		p->stack_syms_layout = layout_of(m, sym, p, &p->stack_syms_module_ids);
	}
	if (!p->stack_syms[ref - 1])
		p->stack_syms[ref - 1] = lookup(m, sym, p, ref - 1);
	return p->stack_syms[ref - 1];
}

size_t hl_stack_sym_shown(const struct hl_stack_sym *s, unsigned max_frames, bool *truncated)
{
	size_t n = 0;

	*truncated = s->truncated;
	if (!max_frames || s->nframes <= max_frames)
		return s->nframes;
	for (uint32_t i = 0; i < s->depth; i++) {
		if (n + s->per_address[i] > max_frames) {
			*truncated = true;
			break;
		}
		n += s->per_address[i];
	}
	return n;
}

const struct hl_suppression *hl_stack_memo_suppression(const struct hl_stack_sym *s,
						       struct hl_suppressions *set,
						       uint32_t leak_class, uint64_t bytes,
						       uint64_t blocks)
{
	/* s is the sym of one of the memo's entries, which the memo owns */
	struct entry *e = (struct entry *)((char *)(uintptr_t)s - offsetof(struct entry, sym));
	if (leak_class > HL_CLASS_SUPPRESSED)
		return hl_supp_match(set, s->frames, s->nframes, leak_class, bytes, blocks);
	if (e->supp_serial != set->serial) {
		e->supp_serial = set->serial;
		e->known = 0;
	}
	if (!(e->known & 1u << leak_class)) {
		e->verdict[leak_class] = (uint32_t)hl_supp_verdict(set, s->frames, s->nframes,
								   leak_class);
		e->known |= 1u << leak_class;
	}
	return hl_supp_count(set, e->verdict[leak_class], bytes, blocks);
}
