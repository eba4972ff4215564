/*
 * reporter/symbols/stack_memo.h: each distinct stack of a run symbolized and
 * fingerprinted once, whatever the number of processes that report it.
 *
 * Why: a fork child reports its parent's heap, and so its parent's stacks
 * (a shell's command substitutions: 400 children with the same ~400
 * stacks). Symbolizing, copying and fingerprinting every child's loss
 * records again took ~250 ms of CPU after the program exited and 210 MiB of
 * report frames for bench/store_shell.sh; now a child costs a lookup per
 * stack, and its report's loss records point at the frames the first
 * process's made.
 *
 * A stack's symbolized frames depend only on its return addresses and on
 * the module each is in. When no two of a process's modules ever covered
 * the same address (the usual case), the module of an address does not
 * depend on when the stack was taken, and processes whose modules are the
 * same files at the same ranges (a fork child and its parent) share one
 * "layout": a stack is then known by its layout and its addresses, without
 * a module lookup per frame. Otherwise the module of each frame is part of
 * the stack's identity. Identities are compared exactly (never by hash
 * alone), so a memoized stack is the stack.
 *
 * The memo belongs to the symbolizer (its frames point at the symbolizer's
 * strings anyway) and is used by the thread that owns the symbolizer.
 */
#ifndef HL_REPORTER_STACK_MEMO_H
#define HL_REPORTER_STACK_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"
#include "symbolize.h"

struct hl_process; /* ingest/state.h: whose stack and modules */
struct hl_process_stack;

/* One distinct stack, symbolized. Owned by the memo; never written once
 * returned (reports point at frames). */
struct hl_stack_sym {
	const struct hl_frame_info *frames; /* innermost first, inlined frames expanded */
	size_t nframes;
	const uint8_t *per_address;  /* frames of each return address, depth entries */
	uint32_t depth;              /* return addresses */
	bool truncated;              /* the captured stack was cut short */
	char fingerprint[HL_FINGERPRINT_LEN + 1]; /* "" when there are no frames */
	const char *site_function;   /* the site's innermost program function, or NULL */
};

struct hl_stack_memo;

struct hl_stack_memo *hl_stack_memo_new(void);
void hl_stack_memo_free(struct hl_stack_memo *m);

/* Stack reference ref of p (index + 1), symbolized through sym; NULL for 0
 * or a reference p does not have. The first call for p maps all its stacks'
 * identities (p->stack_syms); p must be finished (its modules and stacks
 * complete). */
const struct hl_stack_sym *hl_stack_memo_get(struct hl_symbolizer *sym, struct hl_process *p,
					     uint32_t ref);

/* The fingerprint of p's stack s (what hl_stack_memo_get would give it),
 * symbolizing only the innermost frames it is made of, and without an
 * entry in the memo: for every stack a run stores (stacks.fingerprint),
 * most of which are never reported. "" for a stack without frames. */
void hl_stack_fingerprint(struct hl_symbolizer *sym, const struct hl_process *p,
			  const struct hl_process_stack *s, char out[HL_FINGERPRINT_LEN + 1]);

struct hl_suppressions;
/* The suppression of set that matches a leak of class leak_class (enum
 * hl_leak_class) at s, counted in it with bytes and blocks, or NULL: what
 * hl_supp_match gives, with the verdict remembered with s while set stays
 * the same (a fork child's records are its parent's). s comes from
 * hl_stack_memo_get. */
const struct hl_suppression *hl_stack_memo_suppression(const struct hl_stack_sym *s,
						       struct hl_suppressions *set,
						       uint32_t leak_class, uint64_t bytes,
						       uint64_t blocks);

/* How many of s's frames a report shows with at most max_frames of them (0:
 * all), whole return addresses only; *truncated set if any are left out or
 * the captured stack was cut. */
size_t hl_stack_sym_shown(const struct hl_stack_sym *s, unsigned max_frames, bool *truncated);

#endif /* HL_REPORTER_STACK_MEMO_H */
