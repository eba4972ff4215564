/*
 * include/heapledger/classes.h: every spelling of a leak class and of a heap
 * error kind, one table each, as valgrind keeps its own in
 * memcheck/mc_errors.c. The hook's summary, the reporter's outputs, its
 * option parsers, the gate, the suppressions and the web UI (through its
 * API) all read these tables; none spells a class or an error itself.
 *
 * The enums are the wire protocol's (wire.h): a class or kind travels, is
 * stored and is held in the model as its number, and becomes words only
 * when an output renders it. Adding a row here is the whole change a new
 * class or kind needs in the vocabulary.
 *
 * Header-only and allocation-free, so the preloaded hook can use it.
 */
#ifndef HEAPLEDGER_CLASSES_H
#define HEAPLEDGER_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "heapledger/wire.h"

/*
 * X(class, word, token, phrase, label, xml_kind, sarif_level)
 *   word         the JSON report's and the database's name (`leaks.leak_class`)
 *   token        the option word (--show-leak-kinds, --errors-for-leak-kinds,
 *                --kind, suppression kinds; either spelling is accepted)
 *   phrase       valgrind's record text: "N bytes in M blocks are <phrase>"
 *   label        the LEAK SUMMARY line's name
 *   xml_kind     valgrind's XML <kind>
 *   sarif_level  the SARIF level of a record of that class that the gate
 *                does not count (one it counts is an error: model/gate.h,
 *                hl_gate_sarif_level)
 * A record no scan classified (UNKNOWN: the process was killed or ran no
 * scan) is rated as the gate rates it (it counts only when asked): an
 * error in SARIF and valgrind XML's definite leak when it counts, else a
 * warning and XML's still reachable (its text: "are lost", no class).
 */
#define HL_LEAK_CLASS_TABLE(X)                                                                    \
	X(HL_CLASS_UNKNOWN, "unknown", "unknown", "lost", "not classified",                      \
	  "Leak_DefinitelyLost", "warning")                                                         \
	X(HL_CLASS_DEFINITE, "definitely", "definite", "definitely lost", "definitely lost",        \
	  "Leak_DefinitelyLost", "error")                                                           \
	X(HL_CLASS_INDIRECT, "indirectly", "indirect", "indirectly lost", "indirectly lost",        \
	  "Leak_IndirectlyLost", "error")                                                           \
	X(HL_CLASS_POSSIBLE, "possibly", "possible", "possibly lost", "possibly lost",              \
	  "Leak_PossiblyLost", "warning")                                                           \
	X(HL_CLASS_REACHABLE, "reachable", "reachable", "still reachable", "still reachable",       \
	  "Leak_StillReachable", "note")                                                            \
	X(HL_CLASS_SUPPRESSED, "suppressed", "suppressed", "suppressed", "suppressed",              \
	  "Leak_DefinitelyLost", "none")

#define HL_LEAK_CLASS_COUNT (HL_CLASS_SUPPRESSED + 1)

struct hl_leak_class_info {
	const char *word;        /* JSON and database */
	const char *token;       /* options and suppression kinds */
	const char *phrase;      /* valgrind's record text */
	const char *label;       /* the LEAK SUMMARY line */
	const char *xml_kind;    /* valgrind's XML <kind> */
	const char *sarif_level; /* SARIF result level */
};

/* The row of class c; the UNKNOWN row for a number outside the table (a
 * damaged database, a future hook), never NULL. */
static inline const struct hl_leak_class_info *hl_leak_class_info(unsigned c)
{
	static const struct hl_leak_class_info rows[HL_LEAK_CLASS_COUNT] = {
#define HL_LEAK_CLASS_ROW(e, word, token, phrase, label, xml, sarif)                         \
	[e] = { word, token, phrase, label, xml, sarif },
		HL_LEAK_CLASS_TABLE(HL_LEAK_CLASS_ROW)
#undef HL_LEAK_CLASS_ROW
	};
	return &rows[c < HL_LEAK_CLASS_COUNT ? c : HL_CLASS_UNKNOWN];
}

static inline const char *hl_leak_class_name(unsigned c)
{
	return hl_leak_class_info(c)->word;
}

/* The class whose word or token is s (both spellings are accepted
 * everywhere a user or a file names a class), or -1. */
static inline int hl_leak_class_parse(const char *s, size_t len)
{
	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		const struct hl_leak_class_info *i = hl_leak_class_info(c);

		if ((strlen(i->word) == len && !strncmp(s, i->word, len)) ||
		    (strlen(i->token) == len && !strncmp(s, i->token, len)))
			return (int)c;
	}
	return -1;
}

/* A stored or imported class word (either spelling), UNKNOWN for NULL or
 * a word this reader does not know (a damaged database, a newer writer). */
static inline unsigned hl_leak_class_from_word(const char *word)
{
	int c = word ? hl_leak_class_parse(word, strlen(word)) : -1;

	return c < 0 ? HL_CLASS_UNKNOWN : (unsigned)c;
}

/* Sets of classes (options, suppression kinds, the gate's kinds, views)
 * are bit sets, one bit per class. */
#define HL_CLASS_BIT(c) (1u << (c))
#define HL_CLASS_BITS_LEAKS                                                      \
	(HL_CLASS_BIT(HL_CLASS_DEFINITE) | HL_CLASS_BIT(HL_CLASS_INDIRECT) |     \
	 HL_CLASS_BIT(HL_CLASS_POSSIBLE) | HL_CLASS_BIT(HL_CLASS_REACHABLE))

/* A list of classes ("definite,indirect", either spelling, separated by
 * commas or blanks), "all" (the classes in all) or "none", into *bits; only
 * classes in allowed may be named. False, *bits untouched, on any other
 * word or an empty list. */
static inline bool hl_leak_class_list_parse(const char *value, unsigned allowed, unsigned all,
					    unsigned *bits)
{
	unsigned out = 0;
	bool any = false;

	while (*value) {
		size_t n = strcspn(value, ", \t");
		int c;

		if (!n) {
			value++;
			continue;
		}
		any = true;
		if (n == 3 && !strncmp(value, "all", 3))
			out |= all;
		else if (n == 4 && !strncmp(value, "none", 4))
			;
		else if ((c = hl_leak_class_parse(value, n)) >= 0 && (allowed & HL_CLASS_BIT(c)))
			out |= HL_CLASS_BIT(c);
		else
			return false;
		value += n;
	}
	if (!any)
		return false;
	*bits = out;
	return true;
}

/* Whether a record of class c is lost memory (valgrind's default
 * --errors-for-leak-kinds and --show-leak-kinds: definite, possible, and
 * indirect with them; an unclassified one too, since nothing says it is
 * harmless). */
static inline bool hl_leak_class_is_lost(unsigned c)
{
	return c == HL_CLASS_UNKNOWN || c == HL_CLASS_DEFINITE || c == HL_CLASS_INDIRECT ||
	       c == HL_CLASS_POSSIBLE;
}

/*
 * X(kind, word, xml_kind, heading)
 *   word      the JSON report's and the database's name (`errors.kind`)
 *   xml_kind  valgrind's XML <kind>
 *   heading   valgrind's first line of the error ("Invalid free() ...")
 * Row 0 is what a reader shows for a kind it does not know.
 */
#define HL_ERROR_KIND_TABLE(X)                                                                    \
	X(0, "unknown", "InvalidFree", "Invalid free() / delete / delete[] / realloc()")             \
	X(HL_ERROR_INVALID_FREE, "invalid_free", "InvalidFree",                                      \
	  "Invalid free() / delete / delete[] / realloc()")                                         \
	X(HL_ERROR_DOUBLE_FREE, "double_free", "InvalidFree",                                        \
	  "Invalid free() / delete / delete[] / realloc()")                                         \
	X(HL_ERROR_INTERIOR_FREE, "interior_free", "InvalidFree",                                    \
	  "Invalid free() / delete / delete[] / realloc()")                                         \
	X(HL_ERROR_OVERFLOW, "overflow", "InvalidWrite",                                             \
	  "Heap block overrun: the guard bytes after a block were overwritten")                      \
	X(HL_ERROR_USE_AFTER_FREE, "use_after_free", "InvalidWrite",                                 \
	  "Write to freed memory: a block in the quarantine was changed after its free")            \
	X(HL_ERROR_MISMATCH, "mismatch", "MismatchedFree", "Mismatched free() / delete / delete []") \
	X(HL_ERROR_HEADER_CORRUPT, "header_corrupt", "InvalidWrite",                                 \
	  "Invalid free() / delete / delete[] / realloc(): the block's header was overwritten "      \
	  "(heap underflow)")                                                                       \
	X(HL_ERROR_SIZE_MISMATCH, "size_mismatch", "MismatchedFree",                                 \
	  "Mismatched new/delete size value:")

/* HL_ERROR_KIND_COUNT (wire.h) rows: a new kind needs its row here. */
struct hl_error_kind_info {
	const char *word;     /* JSON and database */
	const char *xml_kind; /* valgrind's XML <kind> */
	const char *heading;  /* valgrind's first line */
};

/* The row of kind k; row 0 for a number outside the table, never NULL. */
static inline const struct hl_error_kind_info *hl_error_kind_info(unsigned k)
{
	static const struct hl_error_kind_info rows[HL_ERROR_KIND_COUNT] = {
#define HL_ERROR_KIND_ROW(e, word, xml, heading) [e] = { word, xml, heading },
		HL_ERROR_KIND_TABLE(HL_ERROR_KIND_ROW)
#undef HL_ERROR_KIND_ROW
	};
	return &rows[k < HL_ERROR_KIND_COUNT ? k : 0];
}

static inline const char *hl_error_kind_name(unsigned k)
{
	return hl_error_kind_info(k)->word;
}

/* The kind whose word is s, or 0 (unknown). */
static inline unsigned hl_error_kind_parse(const char *s)
{
	for (unsigned k = 1; k < HL_ERROR_KIND_COUNT; k++)
		if (s && !strcmp(s, hl_error_kind_info(k)->word))
			return k;
	return 0;
}

/* malloc_usable_size's invalid pointer has a heading of its own. */
#define HL_ERROR_HEADING_USABLE_SIZE "Invalid malloc_usable_size()"

/* The heading of an error of kind k found in call (enum hl_error_call): a
 * pointer malloc_usable_size was given that is no block's start (foreign,
 * inside a block, or freed) has the usable-size heading, as valgrind's. */
static inline const char *hl_error_heading(unsigned k, unsigned call)
{
	if ((k == HL_ERROR_INVALID_FREE || k == HL_ERROR_INTERIOR_FREE ||
	     k == HL_ERROR_DOUBLE_FREE || k == 0) && call == HL_CALL_USABLE_SIZE)
		return HL_ERROR_HEADING_USABLE_SIZE;
	return hl_error_kind_info(k)->heading;
}

/* What a heading adds for an error found by a check rather than at the
 * instruction that did it: guard bytes or a quarantined block read back at
 * the program's free, delete or realloc of it (checks=full; checks=guard's
 * alignment gap), at exit, or by an on-demand leak check. */
static inline const char *hl_error_found_by(unsigned k, unsigned call)
{
	if (call == HL_CALL_EXIT)
		return " (found at exit)";
	if (call == HL_CALL_CHECK)
		return " (found by a leak check)";
	if (k != HL_ERROR_OVERFLOW && k != HL_ERROR_USE_AFTER_FREE)
		return "";
	switch (call) {
	case HL_CALL_FREE:
		return " (found at free)";
	case HL_CALL_REALLOC:
		return " (found at realloc)";
	case HL_CALL_DELETE:
		return " (found at delete)";
	case HL_CALL_DELETE_ARRAY:
		return " (found at delete[])";
	default:
		return "";
	}
}

/* checks=guard, guard_sample=: an error found by a faulting read or write is
 * named by the access ("Invalid read of size 1", the size added by the
 * writer), whatever its kind: these, and valgrind's XML kinds for them. */
static inline bool hl_error_call_is_access(unsigned call)
{
	return call == HL_CALL_READ || call == HL_CALL_WRITE;
}

static inline const char *hl_error_access_heading(unsigned call)
{
	return call == HL_CALL_WRITE ? "Invalid write" : "Invalid read";
}

static inline const char *hl_error_access_xml_kind(unsigned call)
{
	return call == HL_CALL_WRITE ? "InvalidWrite" : "InvalidRead";
}

#endif /* HEAPLEDGER_CLASSES_H */
