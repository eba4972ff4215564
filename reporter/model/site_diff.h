/*
 * reporter/model/site_diff.h: what changed between two runs, leak site by
 * leak site: the one rule `heapledger diff` and the web UI's diff both
 * render (formats/diff_json.h), so the two cannot disagree.
 *
 * A leak site is a fingerprint (model/fingerprint.h): the allocation site
 * as the gate and baselines name it. A run leaks at a site when at least
 * one block allocated there is lost (hl_leak_class_is_lost: definitely,
 * indirectly, possibly lost, or not classified) and not suppressed; a
 * zero-byte block counts, as valgrind counts it. Still reachable and
 * suppressed records are not leaks: a site whose leak became suppressed or
 * reachable is fixed.
 */
#ifndef HL_REPORTER_SITE_DIFF_H
#define HL_REPORTER_SITE_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "heapledger/classes.h"

/* One leak site of one run: what its lost, unsuppressed records add up to. */
struct hl_leak_site {
	char *fingerprint;
	char *function;               /* innermost program function, NULL if unknown */
	uint64_t bytes, blocks;       /* lost and not suppressed, all classes */
	unsigned leak_class;          /* the class with the most such blocks */
	uint64_t class_blocks[HL_LEAK_CLASS_COUNT]; /* lost, unsuppressed blocks by class */
};

/* The sites of one run, sorted by fingerprint, each once. */
struct hl_site_list {
	struct hl_leak_site *v;
	size_t n, cap;
};

/* Adds a (fingerprint, class) row of a run's records to l (rows of one
 * fingerprint may come in any order); rows that are not leaks (reachable,
 * suppressed) are skipped. Call hl_site_list_finish once all are in. */
void hl_site_list_add(struct hl_site_list *l, const char *fingerprint, const char *function,
		      unsigned leak_class, int suppressed, uint64_t bytes, uint64_t blocks);
/* Sorts by fingerprint and merges rows of one fingerprint. */
void hl_site_list_finish(struct hl_site_list *l);
void hl_site_list_destroy(struct hl_site_list *l);

enum hl_site_change {
	HL_SITE_NEW = 0,              /* leaks in b only */
	HL_SITE_FIXED = 1,            /* leaks in a only */
	HL_SITE_CHANGED = 2,          /* leaks in both, bytes or blocks differ */
	HL_SITE_UNCHANGED = 3,        /* leaks in both, the same */
	HL_SITE_CHANGE_COUNT
};

/* The word of a change in the text and the JSON ("new", "fixed", ...). */
const char *hl_site_change_name(enum hl_site_change c);

struct hl_site_delta {
	enum hl_site_change change;
	const struct hl_leak_site *a, *b; /* NULL where the run does not leak there */
};

struct hl_site_diff {
	int64_t run_a, run_b;
	struct hl_site_delta *v;      /* every site of either run, by fingerprint */
	size_t n;
	size_t counts[HL_SITE_CHANGE_COUNT];
};

/* The diff of two finished lists; d points into a and b, which must
 * outlive it. */
void hl_site_diff(const struct hl_site_list *a, const struct hl_site_list *b,
		  struct hl_site_diff *d);
void hl_site_diff_destroy(struct hl_site_diff *d);

#endif /* HL_REPORTER_SITE_DIFF_H */
