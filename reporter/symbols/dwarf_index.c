/*
 * reporter/symbols/dwarf_index.c: function address index per DWARF unit (see
 * dwarf_index.h).
 */
#include "dwarf_index.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "util.h"

#define HL_INDEX_NEST_MAX 16 /* namespaces/classes followed when collecting */
#define HL_INDEX_DEPTH_MAX 64 /* nested blocks followed inside a function */

struct func_range {
	Dwarf_Addr low, high; /* [low, high) */
	Dwarf_Die die;        /* the DW_TAG_subprogram */
};

struct cu_index {
	struct func_range *ranges; /* sorted by low */
	size_t n, cap;
};

/* An address range of a unit, for files without .debug_aranges. */
struct unit_range {
	Dwarf_Addr low, high;  /* [low, high) */
	Dwarf_Off die_offset;  /* the unit DIE */
};

struct hl_dwarf_index {
	struct cu_index *cus;
	size_t n, cap;
	struct hl_map by_cu;   /* unit DIE offset + 1 -> index in cus */
	struct unit_range *units; /* sorted by low; built by unit_at */
	size_t nunits, units_cap;
	bool units_built;
};

struct hl_dwarf_index *hl_dwarf_index_new(void)
{
	struct hl_dwarf_index *x = hl_xcalloc(1, sizeof(*x));

	hl_map_init(&x->by_cu);
	return x;
}

void hl_dwarf_index_free(struct hl_dwarf_index *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		free(x->cus[i].ranges);
	free(x->cus);
	free(x->units);
	hl_map_destroy(&x->by_cu);
	free(x);
}

static void add_ranges(struct cu_index *ci, Dwarf_Die *die)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (end <= start)
			continue;
		hl_grow((void **)&ci->ranges, &ci->cap, ci->n, sizeof(*ci->ranges));
		ci->ranges[ci->n].low = start;
		ci->ranges[ci->n].high = end;
		ci->ranges[ci->n].die = *die;
		ci->n++;
	}
}

/* Function definitions sit at unit level, or inside namespaces (C++) and,
 * for some compilers, class bodies. */
static void collect(struct cu_index *ci, Dwarf_Die *parent, int nest)
{
	Dwarf_Die child;

	if (nest > HL_INDEX_NEST_MAX || dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			add_ranges(ci, &child);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			collect(ci, &child, nest + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int range_cmp(const void *a, const void *b)
{
	const struct func_range *x = a, *y = b;

	return x->low < y->low ? -1 : x->low > y->low;
}

static struct cu_index *cu_for(struct hl_dwarf_index *x, Dwarf_Die *cudie)
{
	uint64_t key = (uint64_t)dwarf_dieoffset(cudie) + 1;
	const uint64_t *slot = hl_map_find(&x->by_cu, key);
	struct cu_index *ci;

	if (slot)
		return &x->cus[*slot];
	hl_grow((void **)&x->cus, &x->cap, x->n, sizeof(*x->cus));
	ci = &x->cus[x->n];
	memset(ci, 0, sizeof(*ci));
	collect(ci, cudie, 0);
	qsort(ci->ranges, ci->n, sizeof(*ci->ranges), range_cmp);
	hl_map_insert(&x->by_cu, key, x->n++);
	return ci;
}

/* The function whose range holds addr: the last range starting at or
 * before addr, or one shortly before it (ranges of nested or cold parts
 * may overlap). */
static const struct func_range *function_at(const struct cu_index *ci, Dwarf_Addr addr)
{
	size_t lo = HL_UPPER_BOUND(ci->ranges, ci->n, low, addr);

	for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++)
		if (addr < ci->ranges[i].high)
			return &ci->ranges[i];
	return NULL;
}

/* The child scope of parent (inlined call or block) that holds addr. */
static bool child_containing(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *out)
{
	Dwarf_Die child;

	if (dwarf_child(parent, &child) != 0)
		return false;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, addr) == 1) {
				*out = child;
				return true;
			}
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

size_t hl_dwarf_index_scopes(struct hl_dwarf_index *x, Dwarf_Die *cudie,
			     Dwarf_Addr addr, Dwarf_Die *out, size_t max)
{
	const struct func_range *f = function_at(cu_for(x, cudie), addr);
	Dwarf_Die path[HL_INDEX_DEPTH_MAX], cur;
	size_t n = 0;

	if (!f || !max)
		return 0;
	cur = f->die;
	path[n++] = cur;
	for (int depth = 0; depth < HL_INDEX_DEPTH_MAX && child_containing(&cur, addr, &cur);
	     depth++)
		if (dwarf_tag(&cur) == DW_TAG_inlined_subroutine && n < HL_INDEX_DEPTH_MAX)
			path[n++] = cur;
	/* innermost first; past max, the innermost ones are kept */
	for (size_t i = 0; i < n && i < max; i++)
		out[i] = path[n - 1 - i];
	return n < max ? n : max;
}

static int unit_cmp(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;

	return x->low < y->low ? -1 : x->low > y->low;
}

static void add_unit(struct hl_dwarf_index *x, Dwarf_Die *cudie)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(cudie, off, &base, &start, &end)) > 0) {
		if (end <= start)
			continue;
		hl_grow((void **)&x->units, &x->units_cap, x->nunits, sizeof(*x->units));
		x->units[x->nunits++] = (struct unit_range){ start, end, dwarf_dieoffset(cudie) };
	}
}

bool hl_dwarf_index_unit_at(struct hl_dwarf_index *x, Dwarf *dw, Dwarf_Addr addr,
			    Dwarf_Die *out)
{
	Dwarf_Off off = 0, next;
	size_t header, lo;
	Dwarf_Die cudie;

	if (!x->units_built) {
		x->units_built = true;
		while (dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
			if (dwarf_offdie(dw, off + header, &cudie))
				add_unit(x, &cudie);
			off = next;
		}
		qsort(x->units, x->nunits, sizeof(*x->units), unit_cmp);
	}
	lo = HL_UPPER_BOUND(x->units, x->nunits, low, addr);
	for (size_t i = lo, tries = 0; i-- > 0 && tries < 8; tries++)
		if (addr < x->units[i].high)
			return dwarf_offdie(dw, x->units[i].die_offset, out) != NULL;
	return false;
}
