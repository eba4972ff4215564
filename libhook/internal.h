/*
 * libhook/internal.h: declarations shared by the files of libheapledger.so.
 * Never installed. Everything here has hidden visibility (the library is built
 * with -fvisibility=hidden); only the malloc API and heapledger.h are exported.
 *
 * Rules inside the hook (see STYLE.md):
 *  - no memory from the user heap for the hook's own data: use hl_meta_alloc()
 *    or hl_os_map();
 *  - output through fixed buffers and write(2) (hl_out_*), never stdio;
 *  - a call made while hl_guard_enter() holds is allocated but not tracked.
 */
#ifndef HL_INTERNAL_H
#define HL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapledger/wire.h"
#include "options.h"
#include "types.h"

/* Every declaration below names a symbol of this library (-fvisibility=hidden
 * makes its definition hidden): said here too, so a global is read straight
 * off its address, not through the GOT (one instruction on each fast path's
 * flag test). */
#pragma GCC visibility push(hidden)

#define HL_API __attribute__((visibility("default")))
#define HL_NOINLINE __attribute__((noinline))
#define HL_COLD __attribute__((cold, noinline))
#define HL_INLINE static inline __attribute__((always_inline))
#define hl_likely(x) __builtin_expect(!!(x), 1)
#define hl_unlikely(x) __builtin_expect(!!(x), 0)
#define HL_TLS __thread __attribute__((tls_model("initial-exec")))

/* HL_TSAN_BUILD: a ThreadSanitizer build (only the threaded unit tests are
 * built so). HL_NO_TSAN: code that runs where ThreadSanitizer cannot follow
 * it: no instrumentation at all (not even function entry), in a TSan build
 * only. See their uses. */
#if defined(__SANITIZE_THREAD__)
#define HL_TSAN_BUILD 1
#define HL_NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HL_TSAN_BUILD 1
#define HL_NO_TSAN __attribute__((disable_sanitizer_instrumentation))
#endif
#endif
#ifndef HL_NO_TSAN
#define HL_NO_TSAN
#endif

#ifndef HL_DEBUG
#define HL_DEBUG 0
#endif

/* A failed assertion prints from a static buffer and dies of SIGABRT, never
 * allocates and never goes through abort(): the hook interposes that, and
 * its exit report would wait for locks the failing code may hold. */
HL_COLD __attribute__((noreturn)) void hl_assert_fail(const char *expr, const char *file, int line);
#if HL_DEBUG >= 1
#define hl_assert(x) ((x) ? (void)0 : hl_assert_fail(#x, __FILE__, __LINE__))
#else
#define hl_assert(x) ((void)(0 && (x))) /* compiled, never run: no unused warnings */
#endif
#if HL_DEBUG >= 2
#define hl_assert_expensive(x) hl_assert(x)
#else
#define hl_assert_expensive(x) ((void)(0 && (x)))
#endif
/* The first line of a _locked function: its caller holds `lock` (the
 * futex word says some thread holds it; in debug builds the recorded owner
 * says it is this one, lock.h). */
#define hl_assert_held(lock) hl_assert(hl_lock_is_held(lock) && hl_lock_is_mine(lock))
/* Whether the program was built with hl_assert on (tests that show an
 * assertion fires skip themselves when it is off). */
#define HL_ASSERTS_ON (HL_DEBUG >= 1)

/* ---- os.c: the only file that talks to mmap ------------------------------ */

/* The user address space the segment registry covers (registry.c): 128 TiB
 * on x86-64, where the kernel maps below 2^47 unless asked for more even
 * with 5-level paging, and 256 TiB on arm64 (48-bit VA). */
#if defined(__aarch64__)
#define HL_ADDRESS_BITS 48
#else
#define HL_ADDRESS_BITS 47
#endif
/* Does [p, p + bytes) lie below 2^HL_ADDRESS_BITS? hl_os_map and
 * hl_os_remap never return memory that does not: the registry could not
 * tell it is ours, and free() would refuse it. */
HL_INLINE bool hl_os_address_fits(const void *p, size_t bytes)
{
	uintptr_t end = (uintptr_t)p + bytes;
	return end >= (uintptr_t)p && end <= (uintptr_t)1 << HL_ADDRESS_BITS;
}
/* At start: says clearly, once, when the stack already lies above
 * 2^HL_ADDRESS_BITS (a kernel that maps everything higher); allocations
 * the kernel places there then fail with ENOMEM and another message. */
void hl_os_check_address_space(void);

/* Page-aligned anonymous read/write memory, or NULL. Never sets errno for the
 * caller: the malloc entry points set ENOMEM themselves. */
void *hl_os_map(size_t bytes);
/* Like hl_os_map, but the result is aligned to `alignment` (a power of two
 * larger than a page). */
void *hl_os_map_aligned(size_t bytes, size_t alignment);
void hl_os_unmap(void *p, size_t bytes);
/* Grow or shrink a mapping, possibly moving it; NULL on failure. */
void *hl_os_remap(void *p, size_t old_bytes, size_t new_bytes);
/* Tell the kernel the pages may be dropped; they read back as zero. */
void hl_os_discard(void *p, size_t bytes);
size_t hl_os_page_size(void);
/* Coarse monotonic milliseconds (vDSO, a few ns), never 0: for ageing
 * retained memory, where tens of ms are the unit. */
uint64_t hl_os_now_ms(void);

/* Marks [p, p + bytes) to read as zero in a child with its own memory
 * (MADV_WIPEONFORK); false if the kernel cannot. */
bool hl_os_wipe_on_fork(void *p, size_t bytes);
/* Maps `bytes` of file fd shared and read-write: anywhere (at NULL), or at
 * `at`, replacing what was mapped there. NULL on failure. Keeps errno. */
void *hl_os_map_file_shared(int fd, size_t bytes, void *at);
/* Replaces [at, at + bytes) with fresh zeroed private pages. Keeps errno. */
bool hl_os_map_private_at(void *at, size_t bytes);
/* Address space only: `bytes` of PROT_NONE, no memory committed (guard
 * pages and the slots around them, guardpage.c); NULL on failure. */
void *hl_os_reserve(size_t bytes);
/* Makes [p, p + bytes) readable and writable (access) or PROT_NONE. */
bool hl_os_protect(void *p, size_t bytes, bool access);
/* Gives the pages back and leaves them PROT_NONE, in one call: read again
 * after hl_os_protect, they are zero. */
bool hl_os_discard_inaccessible(void *p, size_t bytes);

/* ---- process.c: the process the hook's state belongs to ------------------ */

enum hl_process_kind {
	HL_PROCESS_OWNER,  /* the process the state belongs to */
	HL_PROCESS_SHARER, /* a vfork (CLONE_VM) child in the owner's memory: hands off */
	HL_PROCESS_COPY,   /* a child with a copy of the memory made without fork() */
};
/* The calling process owns the hook's state from now on (start, fork child). */
void hl_process_own(void);
/* Cheap enough for every send (one system call). */
/* Room (HL_PROCESS_OWN_PAGE_BYTES) on the wipe-on-fork page: state that a
 * copy of the process made without fork's handlers (a raw clone) finds
 * zeroed; NULL where the kernel cannot wipe on fork. */
#define HL_PROCESS_OWN_PAGE_BYTES 1024u
void *hl_process_own_page(void);
bool hl_process_is_owner(void);
enum hl_process_kind hl_process_kind(void);

/* ---- out.c: allocation-free output ------------------------------------- */

struct hl_out {
	int fd;
	size_t used;
	char buf[4096];
};
void hl_out_init(struct hl_out *out, int fd);
void hl_out_str(struct hl_out *out, const char *s);
void hl_out_u64(struct hl_out *out, uint64_t v);
void hl_out_u64_grouped(struct hl_out *out, uint64_t v); /* 1,234,567 */
void hl_out_hex(struct hl_out *out, uint64_t v);         /* 0x... */
void hl_out_flush(struct hl_out *out);

/* ---- fd.c: the hook's own descriptors, out of the program's way ---------- */

/* A descriptor the hook opened, and which file it was. */
struct hl_fd {
	int fd;    /* -1: none */
	uint64_t dev; /* st_dev and st_ino when it was kept */
	uint64_t ino;
};
#define HL_FD_NONE { -1, 0, 0 }
/* Moves fd near the top of the soft RLIMIT_NOFILE range (close-on-exec) and
 * returns the new number, or fd itself when there is no room up there. */
int hl_fd_move_high(int fd);
/* Takes ownership of fd: moved high and remembered by device and inode;
 * false (fd closed) if it cannot be. Keeps errno. */
bool hl_fd_keep(struct hl_fd *h, int fd);
/* True while h's number still names the file the hook kept. */
bool hl_fd_is_ours(const struct hl_fd *h);
/* Closes h's descriptor if it is still the hook's (never the program's) and
 * forgets it. */
void hl_fd_release(struct hl_fd *h);

/* ---- meta.c: the hook's private memory, never the user heap ------------- */

/* Zeroed memory for the hook's own tables and buffers. Blocks up to
 * HL_META_SMALL_MAX come from size-classed free lists; larger ones are
 * mapped. Thread-safe. */
void *hl_meta_alloc(size_t bytes);
void hl_meta_free(void *p, size_t bytes);
/* Calls fn for every mapping meta memory lives in; hold the lock
 * (hl_meta_fork_prepare) around it. */
void hl_meta_visit_locked(void (*fn)(void *p, size_t bytes, void *arg), void *arg);
void hl_meta_fork_prepare(void);
void hl_meta_fork_parent(void);
void hl_meta_fork_child(void);

/* ---- the allocator ------------------------------------------------------ */

/* Allocates `size` bytes aligned to `alignment` (a power of two, >= 16) for
 * allocation family `kind` (enum hl_alloc_kind in wire.h); NULL with errno
 * ENOMEM on failure. The block is tracked. */
void *hl_allocate(size_t size, size_t alignment, unsigned kind);
/* Releases a block; `kind` is the family of the releasing call. */
void hl_release(void *p, unsigned kind);
/* The same for a sized delete given n bytes (HL_SIZE_UNKNOWN: not sized). */
void hl_release_sized(void *p, unsigned kind, size_t n);

/* Calls fn for every block the program holds now (not in any cache), with the
 * size it asked for, the stack id stored at allocation and its family. Takes
 * every arena lock in turn; do not allocate from fn. */
typedef void (*hl_walk_fn)(void *address, size_t size, uint32_t stack_id,
			   unsigned kind, void *arg);
void hl_heap_walk(hl_walk_fn fn, void *arg);

/* Finds the block that contains `address` (start or interior), for scans and
 * misuse reports. Returns the block's start and fills *size, or NULL if no
 * live block contains it. */
void *hl_heap_find(const void *address, size_t *size);

/* ---- stats.c: exact counters and the heap summary ------------------------ */

void hl_stats_get(struct heapledger_stats *out);
/* Writes "HEAP SUMMARY" lines to fd; allocation-free. */
void hl_summary_print(int fd);

/* ---- init.c ------------------------------------------------------------- */

/* Makes the allocator usable; idempotent and cheap after the first call. */
void hl_init(void);
/* The process is ending (enum hl_exit_how, wire.h): hands the live set to the
 * reporter or prints the standalone summary and leak list. Runs at most once;
 * the exit-path interposers (_exit, abort) call it too. */
void hl_exit_report(unsigned how, int status);
/* Ends the process now with exit_group(status), past the hook's own
 * syscall() interposer (exitpath.c). */
__attribute__((noreturn)) void hl_exit_group(int status);

/* The fork handlers (pthread_atfork), also run around a clone() that makes
 * a process with its own memory (exitpath.c). */
void hl_fork_prepare(void);
void hl_fork_parent(void);
void hl_fork_child(void);

/* Options from $HEAPLEDGER_OPTIONS ("key=value:key=value"): one unsigned
 * field per key of HL_OPTION_TABLE (options.h, which documents each). */
#define HL_OPTION_FIELD(key, field, min, max, def, values, help) unsigned field;
struct hl_options {
	HL_OPTION_TABLE(HL_OPTION_FIELD)
};
#undef HL_OPTION_FIELD
extern struct hl_options hl_options;
/* Bit HL_OPTION_INDEX_<key> is set once the user gave that key a valid value
 * (the reporter is told which keys were given, not the defaults: emit_conn.c). */
extern uint64_t hl_options_given;
/* Applies "key=value:key=value" to hl_options; bad entries are reported.
 * stacks=0 wins over any depth. */
void hl_options_parse(const char *text);
/* The table of keys as data (options.h), HL_OPTION_COUNT entries. */
extern const struct hl_option_info hl_option_infos[];
/* fd 2 while it is still the stderr the program started with, else -1. */
int hl_stderr_fd(void);
/* File descriptor for standalone output: $HEAPLEDGER_LOG, else hl_stderr_fd(). */
int hl_log_fd(void);
/* The hook's own status ("cannot reach the reporter"): to $HEAPLEDGER_LOG
 * when set, else stderr; nothing with quiet=1. */
void hl_notice(const char *message);
/* "heapledger: WHAT PATH: <errno's description>; THEN", as hl_notice. */
void hl_notice_errno(const char *what, const char *path, int err, const char *then);
/* getenv for the hook's variables; NULL under secure execution (AT_SECURE:
 * setuid, setgid, capabilities), whose environment is the caller's. */
const char *hl_env_get(const char *name);
/* The decision itself, for a given AT_SECURE. */
const char *hl_env_get_as(const char *name, bool secure);
/* $HEAPLEDGER_TRACE / $HEAPLEDGER_EXCLUDE (trace.c): sets hl_trace_off, and
 * turns stacks, the scan and the exit report off, when this executable is
 * not chosen to report. Called once, after the options are parsed. */
void hl_trace_choose(void);
extern bool hl_trace_off; /* not chosen: never connect to a reporter */
/* Will an image this one starts (exec, posix_spawn, vfork then exec)
 * report? Yes when children are traced and no $HEAPLEDGER_TRACE/_EXCLUDE
 * glob chooses: the images a glob leaves out never connect, by design, and
 * the image's own /proc/self/exe decides, which its starter cannot see. */
bool hl_trace_expects_children(void);
/* Does s match the glob [pattern, end) (*, ?, [...], \)? */
bool hl_trace_glob_match(const char *pattern, const char *end, const char *s);
/* Reports a problem the hook found (invalid free, bad option); once per
 * message `key` unless `always`. */
void hl_warn(const char *message, const void *address);

/* Re-entrancy guard: while a thread is inside the hook's own machinery
 * (unwinding, sending), allocations it makes are served but not tracked. */
extern HL_TLS int hl_guard_depth;
HL_INLINE bool hl_guard_enter(void)
{
	return hl_guard_depth++ == 0;
}
HL_INLINE void hl_guard_leave(void)
{
	hl_guard_depth--;
}

/* ---- tracking (track.c, stack.c, emit_*.c, modules.c) --------------------- */

/* True once tracking is on: stacks are captured and/or a reporter listens. The
 * allocator tests it before every call below. */
extern bool hl_track_enabled;
/* True while frees are events: a reporter listens (or may, before the
 * constructor ran). The standalone report reads the live blocks' headers
 * at exit, so without a reporter a free records nothing. */
extern bool hl_track_frees;
/* True while every fast free takes its out-of-line tail: frees are events
 * (hl_track_frees) or the program is multithreaded (its counters publish,
 * its blocks may be other arenas'). One byte for free's fast path to test
 * instead of two. Written with hl_track_frees_set and by stats.c when the
 * program becomes multithreaded; read relaxed. */
extern bool hl_free_tail_on;
/* Sets hl_track_frees, and hl_free_tail_on with it. */
void hl_track_frees_set(bool on);

/* Starts tracking per hl_options and $HEAPLEDGER_SOCKET. Called once from
 * hl_init after the allocator works. */
void hl_track_init(void);
/* A block was handed out: returns the stack id to store in its header. */
uint32_t hl_track_alloc(void *p, size_t size, unsigned kind);
/* hl_track_alloc, and the stack id stored in p's block; returns p. The
 * malloc tail calls it last, so its frame is gone while the stack is read
 * (one frame fewer for the stack memo's walk to step over). Only for a
 * block popped off the calling thread's cache: its event may take the
 * thread's last clock reading (emit_event.h, event_ticks). */
void *hl_track_alloc_block(void *p, size_t size, unsigned kind);
/* Blocks that other threads or the arena gave up entered this thread's
 * cache (a refill, a guard sample's swap): the thread's next event reads the
 * clock, so a block popped later never carries ticks older than the free
 * that gave it up (emit_event.h, event_ticks). */
void hl_emit_clock_resync(void);
/* A block is about to be released. caller: the return address into the
 * program's call of free or delete, 0 to find it by a walk (a segment
 * block keeps it for a double free's report in the default mode). */
void hl_track_free(void *p, unsigned kind, uintptr_t caller);
/* A block was resized from old_p to p (maybe the same); returns the stack id
 * of the realloc call, stored in the header. */
/* old_size, old_id: the old block's requested size and stack, read before
 * it was resized or moved. */
uint32_t hl_track_realloc(void *old_p, void *p, size_t size, size_t old_size, uint32_t old_id);
/* fork() handlers of walk_gate.c: prepare first (before any lock of ours),
 * parent last, child first. */
void hl_walk_fork_prepare(void);
void hl_walk_fork_parent(void);
void hl_walk_fork_child(void);
/* fork() handlers, called with every arena locked (prepare) or reinitialised. */
void hl_track_fork_prepare(void);
void hl_track_fork_parent(void);
void hl_track_fork_child(void);
/* The calling thread is exiting; flush its buffer. */
void hl_track_thread_exit(void);
/* The process is ending (enum hl_exit_how). Sends the live set and EXIT to
 * the reporter and returns true, or returns false when there is no reporter
 * and the caller prints the standalone summary. */
bool hl_track_exit(unsigned how, int status);
/* Prints the standalone leak report to fd: loss records by class and stack
 * (a scan classifies them at a normal exit, `how`), and the LEAK SUMMARY. */
void hl_track_print_leaks(int fd, unsigned how);
/* The stack of the calling code, for a misuse error: an id, or 0 when stacks
 * are off or the hook itself is running. */
uint32_t hl_track_error_stack(void);
/* A one-frame stack of return address ip (truncated: the frames above it
 * were not kept), or 0 when ip is 0 or stacks are off. */
uint32_t hl_track_caller_stack(uintptr_t ip);
/* The stack of a faulting instruction at pc, from inside its signal handler:
 * pc first (as pc + 1, a return address's convention), then its callers. */
uint32_t hl_track_fault_stack(uintptr_t pc);
/* Bytes the instruction at pc reads or writes, 0 if not known (insn.c). */
unsigned hl_insn_access_size(const void *pc);
/* The calling free's stack id for the quarantine (checks=full), 0 if stacks
 * are off: through the stack memo, as allocation stacks are. */
uint32_t hl_track_free_stack(void);
struct hl_out;
/* Prints stack `id`'s frames, valgrind's "at ... by ..." lines. */
void hl_track_print_stack(struct hl_out *out, uint32_t id);

#pragma GCC visibility pop

#endif /* HL_INTERNAL_H */
