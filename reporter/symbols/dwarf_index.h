/*
 * reporter/symbols/dwarf_index.h: per compilation unit, the address ranges of its
 * functions, built once, so finding the function and inline chain of an
 * address is a binary search plus a walk down one function's DIEs, instead
 * of dwarf_getscopes()'s walk over every DIE of the unit for every address
 * (81 us per lookup on the reporter's own binary, most of it in libdw's
 * per-DIE locking).
 *
 * DIEs are kept by value; they stay valid while the Dwarf they came from
 * (the module's Dwfl) is open, which the index must not outlive.
 */
#ifndef HL_REPORTER_DWARF_INDEX_H
#define HL_REPORTER_DWARF_INDEX_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>

struct hl_dwarf_index;

struct hl_dwarf_index *hl_dwarf_index_new(void);
void hl_dwarf_index_free(struct hl_dwarf_index *x);

/* The function scopes containing addr (relative to the module's DWARF, i.e.
 * pc - bias) in the unit cudie: out[0] is the innermost inlined instance (or
 * the function itself), out[n - 1] the concrete function. Returns n, 0 when
 * no function of the unit contains addr. */
size_t hl_dwarf_index_scopes(struct hl_dwarf_index *x, Dwarf_Die *cudie,
			     Dwarf_Addr addr, Dwarf_Die *out, size_t max);

/* The unit whose address ranges hold addr (relative to dw), into *out; for
 * files without .debug_aranges, where dwfl_module_addrdie finds nothing
 * (clang writes none unless -gdwarf-aranges, and elfutils 0.188 does not
 * look further). Built from every unit's ranges on first use. */
bool hl_dwarf_index_unit_at(struct hl_dwarf_index *x, Dwarf *dw, Dwarf_Addr addr,
			    Dwarf_Die *out);

#endif /* HL_REPORTER_DWARF_INDEX_H */
