/*
 * reporter/model/suppress.h: leak suppressions, in valgrind's format and in
 * LeakSanitizer's, from any number of files, plus a built-in set for the
 * memory glibc and libstdc++ keep for themselves.
 *
 * valgrind (a block per entry, as `--gen-suppressions=all` prints it):
 *
 *   {
 *      name
 *      Memcheck:Leak
 *      match-leak-kinds: definite,indirect    (optional; default all)
 *      fun:malloc                             (function, * and ? wildcards)
 *      obj:* /libfoo.so*                      (object path, wildcards)
 *      ...                                    (any number of frames, also none)
 *      fun:main
 *   }
 *
 * The frame lines match the allocation stack from its innermost frame on,
 * and the stack may go on below the last line. heapledger's stacks start at
 * the caller of the allocator; an entry whose first line names an
 * allocation function (fun:malloc, fun:_Znwm, obj:*vgpreload_memcheck*...)
 * matches that hidden frame, so entries written for valgrind work as they
 * are. Function names are demangled: a fun: line holding a mangled C++ name
 * without wildcards is demangled when read. Entries of other kinds
 * (Memcheck:Cond, Helgrind:...) are read and never match a leak.
 *
 * LeakSanitizer: a line `leak:PATTERN` matches a leak when any frame's
 * function, file or module contains PATTERN (`*` any text, `^` and `$`
 * anchor it), as lsan_common.cpp does. Its name is the pattern.
 *
 * An unknown leak class (no reachability scan ran) matches every
 * match-leak-kinds list but "none". Blank lines and lines starting with #
 * are skipped. Anything else is an error naming FILE:LINE, and nothing runs.
 */
#ifndef HL_REPORTER_SUPPRESS_H
#define HL_REPORTER_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "heapledger/classes.h"
#include "symbolize.h"
#include "util.h"

struct hl_report_leak;

enum hl_supp_frame_type {
	HL_SUPP_FUN,     /* fun:PATTERN */
	HL_SUPP_OBJ,     /* obj:PATTERN */
	HL_SUPP_ANY,     /* ... */
};

struct hl_supp_frame {
	uint8_t type;            /* enum hl_supp_frame_type */
	bool hidden;             /* matches the hidden allocator frame (known when read) */
	const char *pattern;
};

struct hl_suppression {
	const char *name;
	const char *file;        /* where it was read ("<built-in>") */
	unsigned line;           /* of its first line */
	bool lsan;               /* leak:PATTERN (pattern is the name) */
	bool leak;               /* a leak suppression (Memcheck:Leak or leak:) */
	bool builtin;            /* from the default set */
	unsigned kinds;          /* HL_SUPP_KIND_* it matches */
	struct hl_supp_frame *frames;
	size_t nframes;
	uint64_t matched;        /* leak records it suppressed */
	uint64_t bytes, blocks;  /* their size */
};

#define HL_SUPP_KIND_DEFINITE HL_CLASS_BIT(HL_CLASS_DEFINITE)
#define HL_SUPP_KIND_INDIRECT HL_CLASS_BIT(HL_CLASS_INDIRECT)
#define HL_SUPP_KIND_POSSIBLE HL_CLASS_BIT(HL_CLASS_POSSIBLE)
#define HL_SUPP_KIND_REACHABLE HL_CLASS_BIT(HL_CLASS_REACHABLE)
#define HL_SUPP_KIND_ALL HL_CLASS_BITS_LEAKS

struct hl_supp_memo;

struct hl_suppressions {
	struct hl_suppression *v;
	size_t n, cap;
	struct hl_bump arena;   /* names, patterns, frames */
	/* Verdicts of hl_supp_match by stack and leak kind, kept for the set's
	 * life (a fork child reports its parent's stacks again; each new verdict
	 * walks every suppression and globs every frame). NULL until the first
	 * match; emptied when entries are added. */
	struct hl_supp_memo *memo;
	bool reads_files;        /* a leak: entry was read: source files can match */
	/* Changes whenever the entries do, and no two sets share one: a verdict
	 * remembered elsewhere (stack_memo.h) holds while it is the same. */
	uint64_t serial;
};

void hl_supp_init(struct hl_suppressions *set);
void hl_supp_destroy(struct hl_suppressions *set);
/* Adds the entries of text (len bytes, from `file`); on a malformed entry
 * returns -EINVAL with "file:line: what" in err and adds nothing. */
int hl_supp_parse(struct hl_suppressions *set, const char *text, size_t len,
		  const char *file, char *err, size_t errlen);
/* Reads a file the same way; an unreadable file is "file: strerror". */
int hl_supp_load(struct hl_suppressions *set, const char *path, char *err, size_t errlen);
/* The built-in set for runtime memory glibc and libstdc++ never free. */
void hl_supp_add_defaults(struct hl_suppressions *set);

/* The first suppression that matches a leak of class leak_class (enum
 * hl_leak_class) allocated at frames (innermost first), or NULL; a
 * match is counted in the suppression with bytes and blocks. The verdict
 * depends only on the kind and the frames' function, module and file text,
 * so it is remembered per (kind, text), looked up by the strings' addresses
 * and checked against a copy of the text (a reused buffer is another
 * stack); each call still counts its match. */
const struct hl_suppression *hl_supp_match(struct hl_suppressions *set,
					   const struct hl_frame_info *frames, size_t n,
					   unsigned leak_class, uint64_t bytes,
					   uint64_t blocks);

/* hl_supp_match in two steps, for a caller that remembers verdicts by
 * stack itself (stack_memo.h): the verdict, 0 (none matched) or the index
 * + 1 of the suppression that matched, which holds while set->serial stays
 * the same; then a verdict's match counted, returning its suppression
 * (NULL for 0). */
size_t hl_supp_verdict(struct hl_suppressions *set, const struct hl_frame_info *frames,
		       size_t n, unsigned leak_class);
const struct hl_suppression *hl_supp_count(struct hl_suppressions *set, size_t verdict,
					   uint64_t bytes, uint64_t blocks);

/* Prints a valgrind-format entry that suppresses exactly this leak. */
void hl_supp_print_generated(FILE *out, const char *prefix, const struct hl_report_leak *l);
/* Prints "used_suppression: N name file:line ..." for each suppression that
 * matched and "unused_suppression: name file:line" for each of the user's
 * that did not, each line starting with prefix. */
void hl_supp_print_used(const struct hl_suppressions *set, FILE *out, const char *prefix);

/* The same matching as a predicate, for tests and the fuzz target. */
bool hl_supp_glob(const char *pattern, const char *text);
bool hl_supp_lsan_match(const char *templ, const char *text);

#endif /* HL_REPORTER_SUPPRESS_H */
