/*
 * libhook/options.h: the one definition of the HEAPLEDGER_OPTIONS keys.
 *
 * Everything about a key comes from its line in HL_OPTION_TABLE: the field of
 * struct hl_options that holds it, its default, the values it accepts, the
 * message for a bad entry (init.c), `HEAPLEDGER_OPTIONS=help=1`, the table in
 * the libheapledger(7) man page and the one in doc/manual.md (both printed by
 * libhook/options_doc.c; the test `options_doc_manual` fails when doc/manual.md's
 * copy differs, `scripts/options_table.py update` rewrites it).
 *
 * To add a key, add one line:
 *
 *   X(key, field, min, max, default, values, "help: one line, no trailing period")
 *
 *   key      the name users write (key=value); also a C identifier
 *   field    the member of struct hl_options that holds it (unsigned)
 *   min, max the accepted range of a number; for a choice, 0 and count-1
 *   default  the value when the key is not given (a choice: its index)
 *   values   NULL for a number; "a|b|c" for a choice: the field holds the
 *            index of the value given (a=0, b=1, ...), or a number given
 *            as such within min..max
 *
 * Values are read before the program's main() runs, from the environment,
 * without allocating: only unsigned numbers and fixed choices, no strings.
 * A bad entry is reported on stderr and ignored (the default stays).
 */
#ifndef HL_OPTIONS_H
#define HL_OPTIONS_H

#include "heapledger/wire.h"

/* Signal names at their Linux numbers, for check_signal (a number works too). */
#define HL_SIGNAL_NAMES "off|SIGHUP|SIGINT|SIGQUIT|SIGILL|SIGTRAP|SIGABRT|SIGBUS|SIGFPE|" \
	"SIGKILL|SIGUSR1|SIGSEGV|SIGUSR2|SIGPIPE|SIGALRM|SIGTERM|SIGSTKFLT|SIGCHLD|SIGCONT|" \
	"SIGSTOP|SIGTSTP|SIGTTIN|SIGTTOU|SIGURG|SIGXCPU|SIGXFSZ|SIGVTALRM|SIGPROF|SIGWINCH|" \
	"SIGIO|SIGPWR|SIGSYS"

/* clang-format off */
#define HL_OPTION_TABLE(X) \
	X(depth,       stack_depth,     0, HL_WIRE_MAX_FRAMES, 256, NULL, "stack frames captured per allocation") \
	X(stacks,      stacks,          0, 1,                  1,   NULL, "capture allocation stacks at all (0: a plain fast allocator with exact counters)") \
	X(summary,     summary,         0, 1,                  1,   NULL, "standalone: print the HEAP SUMMARY at exit") \
	X(leaks,       leaks,           0, 1,                  1,   NULL, "standalone: print the list of blocks still in use at exit") \
	X(max_leaks,   max_leaks,       0, 1000000,            50,  NULL, "at most the N largest loss records printed, saying how many are left out; 0 all (standalone; under heapledger run and daemon it wins over --max-leaks for this program)") \
	X(large_cache, large_cache_mib, 0, 1u << 20,           256, NULL, "MiB of address space of freed large mappings kept for reuse") \
	X(retain_ms,   retain_ms,       0, 3600000,            100, NULL, "milliseconds wholly free memory stays mapped for reuse") \
	X(stack_cache, stack_cache,     0, 2,                  1,   NULL, "stack memo: 0 off (always unwind), 1 on, 2 on with every hit checked") \
	X(scan,        scan,            0, 1,                  1,   NULL, "classify the blocks left at exit with a reachability scan (0: every block unknown)") \
	X(freeres,     freeres,         0, 1,                  1,   NULL, "at exit, before the scan, let glibc and libstdc++ free their own memory, as valgrind does") \
	X(show_reachable, show_reachable, 0, 1,                0,   NULL, "standalone: print still reachable loss records too, not only count them") \
	X(check_signal, check_signal,   0, 64,                 0,   HL_SIGNAL_NAMES, "a signal that runs an on-demand leak check (a name or a number, off: none)") \
	X(wait_ms,     wait_ms,         0, 3600000,            10000, NULL, "milliseconds the program may wait for the reporter (connect, each send) before going on standalone") \
	X(quiet,       quiet,           0, 1,                  0,   NULL, "1: no notices about the reporter connection (an unreachable reporter)") \
	X(on_error,    on_error,        0, 1,                  0,   "continue|abort", "heap misuse (invalid or double free, mismatched delete): report and go on, or report and abort") \
	X(checks,      checks,          0, 2,                  0,   "default|full|guard", "heap misuse checks: default (exact ownership, double free, mismatches), full (adds guard bytes after blocks and a quarantine of freed blocks) or guard (each block up to guard_max bytes against a PROT_NONE page, freed ones left PROT_NONE: overflows and uses after free fault at the instruction)") \
	X(guard_sample, guard_sample,   0, 1000000000,         0,   NULL, "guard one allocation in N (up to guard_max bytes) against a PROT_NONE page, as checks=guard does for all, at almost no cost for the others (0: none)") \
	X(guard_first, guard_first,     0, 1000000000,         0,   NULL, "guard each of the first N allocations (up to guard_max bytes) against a PROT_NONE page, then one in guard_sample (heapledger valgrind: 16384; 0: none)") \
	X(guard_max,   guard_max,       1, 1u << 20,           4096, NULL, "checks=guard, guard_sample: largest block put against a guard page (bigger ones are not guarded)") \
	X(guard_align, guard_align,     1, 4096,               16,  NULL, "checks=guard, guard_sample: a guarded block's start is aligned to this power of two, its end as close to the guard page as that allows (16: malloc's promise, a write into the bytes between is found at free, realloc, exit or a leak check, a read of them never; 1: every overflow faults at once, as valgrind reports it, but a program that puts an aligned header in a block of odd size, as CPython does, may break)") \
	X(redzone,     redzone,         1, 4096,               16,  NULL, "checks=full: guard bytes after each block, at least (the size class may add more)") \
	X(quarantine,  quarantine_mib,  0, 65536,              20,  NULL, "checks=full: MiB of freed blocks held back from reuse to catch writes after free and double frees, plus up to 64 KiB per thread in its batch (0: none); checks=guard, guard_sample: MiB of freed guarded pages kept PROT_NONE before their slots are reused while fresh slots last") \
	X(reuse_delay, reuse_delay,     0, 65536,              256, NULL, "default mode: each thread's latest N frees of blocks under 1 KiB, and its latest N/8 of blocks of 1 to 8 KiB, are held back from reuse (N rounded up to a power of two), so a stale pointer to a freed block reaches nothing in the leak scan, as under valgrind's 20 MB freelist (0: a freed block is reused at once; checks=full uses its quarantine instead)") \
	X(fill,        fill,            0, 255,                221, NULL, "checks=full: the byte freed blocks are filled with (221 is 0xdd)") \
	X(malloc_fill, malloc_fill,     0, 256,                256, NULL, "checks=full: the byte new blocks (not calloc's) are filled with, as valgrind's --malloc-fill (256: left as they come)") \
	X(heuristics,  heuristics,      0, 15,                 15,  NULL, "interior pointers the leak scan accepts as reaching a block, as valgrind's --leak-check-heuristics: the sum of 1 stdstring, 2 length64, 4 newarray, 8 multipleinheritance (15: all, 0: none)") \
	X(track_fds,   track_fds,       0, 2,                  0,   "no|yes|all", "at exit, list the file descriptors still open and where each was made, as valgrind's --track-fds (all: 0, 1 and 2 too); vfork() then runs as fork(), as under valgrind") \
	X(tally,       tally,           0, 1,                  1,   NULL, "under a reporter, count allocations and frees in the hook (each thread into counts of its own once there are threads) and hand the reporter the counts instead of an event each (0: send every event)") \
	X(help,        help,            0, 1,                  0,   NULL, "1: print this table of keys on stderr at start") \
	X(children,    children,        0, 1,                  1,   NULL, "0: only the program heapledger run started (or each program a shell under heapledger env starts) reports, with its forks; the programs they execute send nothing (valgrind's --trace-children=no)")
/* clang-format on */

/* large_cache: only the touched pages of a cached mapping cost memory, and
 * those go back after retain_ms. 128 MiB was too few for a program that keeps
 * ~20 buffers of 1..8 MiB alive (bench mixed): 1% of frees were unmapped and
 * mapped again, and each munmap, fresh mmap and page-table rebuild made the
 * run 0.55 s instead of 0.40 s. */

/* One entry of the table as data, for the messages and the documentation. */
struct hl_option_info {
	const char *key;
	unsigned min, max, default_value;
	const char *values; /* NULL: a number; else "a|b|c" */
	const char *help;
};
#define HL_OPTION_INFO(key, field, min, max, def, values, help) \
	{ #key, (min), (max), (def), (values), (help) },
#define HL_OPTION_ENUM(key, field, min, max, def, values, help) HL_OPTION_INDEX_##key,
enum { HL_OPTION_TABLE(HL_OPTION_ENUM) HL_OPTION_COUNT };
#undef HL_OPTION_ENUM

#endif /* HL_OPTIONS_H */
