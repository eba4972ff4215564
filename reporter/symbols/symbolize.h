/*
 * reporter/symbols/symbolize.h: return addresses -> function, file:line, inlined
 * frames, after the process is gone, from the modules it reported
 * (MODULE_LOAD path + load bias), with elfutils libdwfl in offline mode.
 *
 * Why libdwfl: it reads DWARF 5 and split/separate debug info (build-id
 * lookup under /usr/lib/debug, .gnu_debuglink, debuginfod when configured),
 * gives inline scopes, and is what eu-addr2line and eu-stack use; the
 * alternative, libbacktrace, wants a live process image.
 *
 * Each distinct module (path, bias, build-id) gets its own offline Dwfl, so
 * modules of different processes, or a library dlclose'd and another loaded
 * at the same address, never clash. Results are cached per (module, address).
 * A module whose file is gone, unreadable or has another build-id than the
 * one the hook saw gives module+offset only. Nothing here may crash on an
 * odd ELF file: libdw validates, and we check every return.
 */
#ifndef HL_REPORTER_SYMBOLIZE_H
#define HL_REPORTER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct hl_module; /* the live state's (ingest/state.h) */


/* One printed frame; a return address gives one, plus one per inlined call. */
struct hl_frame_info {
	uint64_t address;     /* return address as captured */
	const char *function; /* demangled name, NULL if unknown */
	const char *linkage;  /* the mangled name function came from, NULL if it was
			       * not mangled (valgrind's suppressions name it) */
	const char *file;     /* source path, NULL if unknown */
	uint32_t line;        /* 0 if unknown */
	const char *module;   /* module path, NULL if no module contains it */
	uint64_t offset;      /* address - load bias, when module is set */
	bool inlined;         /* inlined into the frame that follows */
};

/* The address the text and XML show for a frame, as valgrind shows it: the
 * call instruction's (its return address minus one), so a fault's frame 0,
 * stored one past the faulting instruction, shows that instruction. */
static inline uint64_t hl_frame_shown_address(const struct hl_frame_info *f)
{
	return f->address ? f->address - 1 : 0;
}

struct hl_symbolizer;

/* Separate debug files found in the cache of inflated copies, and copies
 * made (debug_cache.h). */
struct hl_symbolizer_stats {
	unsigned debug_cache_hits;
	unsigned debug_cache_added;
};

/* Uses the debug info cache that hl_debug_cache_dir() names at this call. */
struct hl_symbolizer *hl_symbolizer_new(void);
void hl_symbolizer_free(struct hl_symbolizer *s);
struct hl_symbolizer_stats hl_symbolizer_stats(const struct hl_symbolizer *s);

/* A symbolizer that knows only the frames it is given (hl_symbolizer_add)
 * and opens no file: for a report read back from JSON (`heapledger import`),
 * whose frames were symbolized on the machine that ran the program. An
 * address it was not given gets module+offset only. */
struct hl_symbolizer *hl_symbolizer_new_given(void);
/* The `count` frames of one return address in module m (NULL: none), as
 * hl_symbolize will return them (copied; strings too). The first given for
 * an address stays. */
void hl_symbolizer_add(struct hl_symbolizer *s, const struct hl_module *m, uint64_t address,
		       const struct hl_frame_info *frames, size_t count);

/* Frames for one return address in module m (NULL: none known). Returns a
 * pointer to *count frames owned by the symbolizer (innermost first). */
const struct hl_frame_info *hl_symbolize(struct hl_symbolizer *s,
					 const struct hl_module *m,
					 uint64_t address, size_t *count);

/* The symbolizer's number for module m (its file, build-id and load bias),
 * from 1; the same for every process that loaded the same file there. */
uint32_t hl_symbolizer_module_id(struct hl_symbolizer *s, const struct hl_module *m);

/* The memo of whole stacks symbolized through s (stack_memo.h), made on
 * first use and freed with s. */
struct hl_stack_memo *hl_symbolizer_stack_memo(struct hl_symbolizer *s);

#endif /* HL_REPORTER_SYMBOLIZE_H */
