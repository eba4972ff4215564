/*
 * heapledger/wire.h: the one definition of the stream between libheapledger.so
 * (the hook, in the program under test) and the `heapledger` reporter.
 *
 * Transport: one Unix stream socket connection per process image. The hook
 * connects to the path in $HEAPLEDGER_SOCKET, sends HELLO first and then any
 * number of records. Nothing flows back. A process that execs closes its
 * connection (the socket is CLOEXEC) and the new image connects again with
 * HELLO.origin = HL_ORIGIN_EXEC and the same pid; a forked child opens its own
 * connection with HL_ORIGIN_FORK and ppid = the forking process.
 *
 * Framing: every record starts with struct hl_wire_header. `length` counts the
 * whole record, header included, is a multiple of 8 and at most
 * HL_WIRE_MAX_RECORD. Records are little-endian, naturally aligned and packed
 * back to back; a reader that meets an unknown type with a known version may
 * skip it by `length`, but a wrong version or a length outside the bounds is a
 * protocol error and the connection is dropped.
 *
 * Clock: events carry `ticks`, a raw per-host monotonic counter (the TSC on
 * x86-64, CLOCK_MONOTONIC nanoseconds elsewhere). Ticks are comparable across
 * threads of a host, so the reporter orders a free in one thread's batch
 * against the re-allocation of the same address in another thread's batch.
 * Every BATCH record pairs a ticks value with CLOCK_MONOTONIC and
 * CLOCK_REALTIME nanoseconds so the reporter converts ticks to time. Up to
 * 8 events in a row of one thread may carry the same ticks (the hook reads
 * the clock once for a dense run of them): within a thread ticks never
 * decrease and are never later than their event, and a thread's events are
 * in stream order anyway. Once a process has a second thread, only
 * allocations served by the thread's own cache do so (frees, reallocs and
 * other allocations read the clock), so an event never carries older ticks
 * than another thread's event on its address that happened before it.
 *
 * Threads: each thread buffers its own events and writes them in one batch:
 * a BATCH record naming the thread, which carries the events themselves in
 * packed form (below). Full-size records after a BATCH also belong to that
 * thread until the next BATCH (the hook sends a forked child's inherited
 * blocks that way). STACK, MODULE_LOAD and MODULE_UNLOAD belong to no
 * thread: the hook writes them between batches, just before the first batch
 * that names them. A thread's buffer begins with THREAD_START, and its first
 * event is written before the call that made it returns; after THREAD_END,
 * which follows every event the thread had buffered, each event of the
 * thread is written alone before its call returns. A reporter relies on both
 * to know when no older event of any thread can still come (it forgets the
 * frees it remembered to order events across threads: reporter/tombwatch.h).
 *
 * Packed events: allocation events are most of the stream (tens of millions
 * a second at most), and at 24-48 bytes each their copy through the socket
 * was the largest cost left on the program's side. Inside a BATCH each event
 * is a 16-bit op word and its fields stored in 1, 2, 4 or 8 bytes, relative
 * to bases the BATCH names, typically 7-14 bytes; see "Packed events" below.
 * The reporter expands each one into the full-size record of its type
 * (struct hl_rec_alloc, ...), so everything past the decoder sees one form.
 *
 * Ids: stack ids and module ids are chosen by the hook, start at 1, and are
 * unique within one connection. A STACK or MODULE_LOAD record always precedes
 * the first event that names its id on the same connection. Stack id 0 means
 * "no stack captured".
 *
 * Versioning: HL_WIRE_VERSION changes whenever a record's layout changes.
 * Records only grow at the end, so a reader may accept a longer record of a
 * known type and ignore the tail.
 */
#ifndef HEAPLEDGER_WIRE_H
#define HEAPLEDGER_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Records are little-endian; both sides read and write them in place. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "little-endian hosts only");

#define HL_WIRE_VERSION 2
#define HL_WIRE_MAX_RECORD (1u << 20)  /* no record is larger than 1 MiB */
#define HL_WIRE_MAX_FRAMES 256         /* deepest stack a STACK record may carry */
#define HL_WIRE_MAX_PATH 4096          /* longest exe/module path */
#define HL_WIRE_MAX_BUILD_ID 64        /* longest ELF build-id note, in bytes */
#define HL_WIRE_MAX_LIVE_PER_RECORD 32768

/* Environment variables shared by hook and reporter. */
#define HL_ENV_SOCKET "HEAPLEDGER_SOCKET"   /* reporter socket path */
#define HL_ENV_OPTIONS "HEAPLEDGER_OPTIONS" /* key=value:key=value */
#define HL_ENV_LOG "HEAPLEDGER_LOG"         /* standalone summary file */
#define HL_ENV_RUN_ID "HEAPLEDGER_RUN"      /* run id, echoed in HELLO */
/* ':'-separated globs on the executable's path: only programs matching one
 * of TRACE (if set) and none of EXCLUDE report; the others send nothing. */
#define HL_ENV_TRACE "HEAPLEDGER_TRACE"
#define HL_ENV_EXCLUDE "HEAPLEDGER_EXCLUDE"
/* Pid of the image that exec'd: equal to getpid() in the new image means
 * HELLO.origin = HL_ORIGIN_EXEC. The hook's execve sets it; a reporter may
 * also export it as zeros ("0000000000"), which each image overwrites in
 * place with its pid so execl and system() children are recognised too. */
#define HL_ENV_PID "HEAPLEDGER_PID"

enum hl_wire_type {
	HL_REC_HELLO = 1,         /* first record of a connection */
	HL_REC_BATCH = 2,         /* starts one thread's batch, carries clock sync */
	HL_REC_MODULE_LOAD = 3,   /* a loaded ELF object */
	HL_REC_MODULE_UNLOAD = 4, /* dlclose'd; its id stays valid for symbolization */
	HL_REC_STACK = 5,         /* an interned stack, sent once per id */
	HL_REC_ALLOC = 6,         /* a block was handed out */
	HL_REC_FREE = 7,          /* a block was given back */
	HL_REC_REALLOC = 8,       /* a block was resized (maybe moved) */
	HL_REC_THREAD_START = 9,  /* first event of a thread */
	HL_REC_THREAD_END = 10,   /* thread exited */
	HL_REC_FORK = 11,         /* this process forked; sent by the parent */
	HL_REC_EXIT = 12,         /* the process is ending, and how */
	HL_REC_LIVE = 13,         /* part of the final set of live blocks */
	HL_REC_ERROR = 14,        /* heap misuse detected (double free, ...) */
	HL_REC_DROPPED = 15,      /* events the hook could not send */
	HL_REC_CHECK = 16,        /* ends the LIVE set of an on-demand leak check */
	HL_REC_EXEC = 17,         /* the image is about to be replaced by exec */
	HL_REC_OPTIONS = 18,      /* the user's HEAPLEDGER_OPTIONS that shape the report */
	HL_REC_FATAL = 19,        /* a signal is ending the process: where it arrived */
	HL_REC_SPAWN = 20,        /* this process started a child running a new image */
	HL_REC_FD_SUMMARY = 21,   /* track_fds: how many descriptors are open at exit */
	HL_REC_FD = 22,           /* track_fds: one of them, and where it was made */
	HL_REC_TALLY = 23,        /* the hook's counts are final: read them ("Counting in the hook") */
	HL_REC_TYPE_COUNT
};

struct hl_wire_header {
	uint8_t version; /* HL_WIRE_VERSION */
	uint8_t type;    /* enum hl_wire_type */
	uint16_t flags;  /* per-type, zero unless documented */
	uint32_t length; /* whole record in bytes, header included; multiple of 8 */
};

/* How the process image that sends HELLO came to be. */
enum hl_origin {
	HL_ORIGIN_START = 0, /* started by the reporter or by a shell under `heapledger env` */
	HL_ORIGIN_FORK = 1,  /* forked child of `ppid`, inherits its live blocks */
	HL_ORIGIN_EXEC = 2,  /* same pid, new image after execve */
};

/* $HEAPLEDGER_TEST_NAME: the name of the test a process belongs to, set by
 * the test runner (a run label for `heapledger run`, sent in HELLO and kept
 * per process under a daemon); at most HL_WIRE_MAX_TEST_NAME bytes are sent. */
#define HL_ENV_TEST_NAME "HEAPLEDGER_TEST_NAME"
#define HL_WIRE_MAX_TEST_NAME 256

/* HELLO is followed by `exe_len` bytes of executable path and `argv_len` bytes
 * of argv strings, each NUL-terminated, `argc` of them; then, if `test_len`,
 * the test's name (one NUL-terminated string); then zero padding to a
 * multiple of 8. */
struct hl_rec_hello {
	struct hl_wire_header h;
	uint32_t pid;
	uint32_t ppid;
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at hook start */
	uint64_t run_id;            /* from $HEAPLEDGER_RUN, 0 if unset */
	uint32_t origin;            /* enum hl_origin */
	uint32_t argc;
	uint32_t exe_len;  /* bytes, including the NUL */
	uint32_t argv_len; /* bytes of all argv strings, including their NULs */
	uint32_t stack_depth;   /* frames the hook captures at most */
	uint32_t pointer_bytes; /* sizeof(void *) in the program */
	uint32_t hook_flags;    /* HL_HOOK_* */
	uint32_t test_len;      /* bytes of the test's name after argv, NUL included; 0: none */
};

#define HL_HOOK_STACKS 1u      /* stacks are captured */
#define HL_HOOK_TICKS_TSC 2u   /* ticks are TSC cycles, else nanoseconds */
/* A forked child (origin FORK) sends the blocks it inherited itself, as
 * ALLOC records flagged HL_ALLOC_INHERITED right after its definitions: a
 * walk of its own heap, exact at the instant of fork. The reporter then
 * copies nothing from the parent, whose stream may be ahead of or behind
 * that instant (other threads keep allocating until fork() returns).
 *
 * The walk waits for the child's first record or event other than EXEC
 * (its first allocation, free, exit, fork...), and goes out just before it,
 * with the heap still as fork left it (the allocation whose event comes
 * next is left out, a realloc's old block is sent as it was). A child that
 * execs first, as a test runner's and a shell's children mostly do, sends
 * no snapshot at all: its image is replaced and nothing of it is reported
 * (ctest: 5,300 blocks and every stack of its own a test, sent and read
 * for nothing). A child killed before either leaves in the shared area's
 * `unsent_inherited` the number of blocks it held ("Shared event buffers",
 * below): the reporter counts them as dropped events. */
#define HL_HOOK_FORK_SNAPSHOT 4u
/* The hook counts its events into the shared area's tally instead of
 * sending them, until TALLY ("Counting in the hook"). */
#define HL_HOOK_TALLY 8u

/* BATCH is followed by `packed_bytes` bytes of packed events of thread `tid`
 * (see "Packed events"), then zeros up to `h.length`. */
struct hl_rec_batch {
	struct hl_wire_header h;
	uint32_t tid;          /* kernel thread id that owns the events */
	uint32_t packed_bytes; /* bytes of packed events after the fixed part */
	uint64_t ticks;        /* ticks now ... */
	uint64_t monotonic_ns; /* ... and CLOCK_MONOTONIC now */
	uint64_t realtime_ns;  /* ... and CLOCK_REALTIME now */
	uint64_t sequence;     /* batches sent so far by this process, from 0 */
	uint64_t base_ticks;   /* packed events' ticks are stored relative to this */
	uint64_t base_address; /* and their addresses to this */
};

/* MODULE_LOAD is followed by `build_id_len` bytes of build-id, then
 * `path_len` bytes of path including its NUL, then padding. The main
 * executable has path "" in the dynamic loader's list; the hook sends the
 * resolved /proc/self/exe path instead. */
struct hl_rec_module_load {
	struct hl_wire_header h;
	uint32_t module_id;
	uint32_t build_id_len;
	uint64_t base;      /* load bias (dlpi_addr) */
	uint64_t low;       /* lowest mapped address of its PT_LOAD segments */
	uint64_t high;      /* one past the highest */
	uint64_t ticks;
	uint32_t path_len;
	uint32_t reserved;
};

struct hl_rec_module_unload {
	struct hl_wire_header h;
	uint32_t module_id;
	uint32_t reserved;
	uint64_t ticks;
};

/* STACK is followed by `depth` uint64_t return addresses, innermost first;
 * frames[0] is the caller of the allocation function. Addresses are absolute:
 * the reporter maps them to modules with the MODULE_LOAD records. */
struct hl_rec_stack {
	struct hl_wire_header h;
	uint32_t stack_id;
	uint16_t depth;
	uint16_t truncated; /* 1 if the real stack was deeper than `depth` */
};

/* Which allocation function produced or released a block; the heap misuse
 * checks compare the family of the alloc and of the free: malloc, calloc,
 * realloc and the aligned C functions with free; each operator new with its
 * own delete (plain, array, aligned, aligned array). */
enum hl_alloc_kind {
	HL_KIND_MALLOC = 0,        /* malloc, calloc, realloc, reallocarray */
	HL_KIND_ALIGNED = 1,       /* memalign, posix_memalign, aligned_alloc, valloc, pvalloc */
	HL_KIND_NEW = 2,           /* operator new (any variant but array and aligned) */
	HL_KIND_NEW_ARRAY = 3,     /* operator new[] (but aligned) */
	HL_KIND_CALLOC = 4,        /* calloc: zeroed */
	HL_KIND_NEW_ALIGNED = 5,   /* operator new(size_t, std::align_val_t) */
	HL_KIND_NEW_ARRAY_ALIGNED = 6, /* operator new[](size_t, std::align_val_t) */
	HL_KIND_COUNT
};

/* ALLOC flags: the kind in the low byte, plus: */
#define HL_ALLOC_KIND_MASK 0xffu
#define HL_ALLOC_INHERITED 0x100u /* held at fork, not allocated here (HL_HOOK_FORK_SNAPSHOT) */
#define HL_ALLOC_TALLIED 0x200u   /* live, and counted by the tally TALLY just handed over */

struct hl_rec_alloc {
	struct hl_wire_header h; /* flags: enum hl_alloc_kind | HL_ALLOC_INHERITED */
	uint64_t address;
	uint64_t size;  /* bytes the program asked for */
	uint64_t ticks;
	uint32_t stack_id;
	uint32_t reserved;
};

struct hl_rec_free {
	struct hl_wire_header h; /* flags: enum hl_alloc_kind of the releasing call */
	uint64_t address;
	uint64_t ticks;
};

/* realloc that moved or resized a block. realloc(NULL, n) is sent as ALLOC
 * and realloc(p, 0) (which frees) as FREE, so a REALLOC always has both. */
struct hl_rec_realloc {
	struct hl_wire_header h;
	uint64_t old_address;
	uint64_t new_address;
	uint64_t size; /* new size asked for */
	uint64_t ticks;
	uint32_t stack_id; /* stack of the realloc call */
	uint32_t reserved;
};

struct hl_rec_thread {
	struct hl_wire_header h; /* THREAD_START or THREAD_END */
	uint32_t tid;
	uint32_t reserved;
	uint64_t ticks;
};

struct hl_rec_fork {
	struct hl_wire_header h;
	uint32_t child_pid;
	uint32_t reserved;
	uint64_t ticks;
};

/* A child that runs a new image from its start: posix_spawn()/posix_spawnp()
 * (sent by the parent once the call succeeded), or vfork() then exec (sent by
 * the vfork child, into its parent's buffer, just before the exec; flags
 * HL_SPAWN_FAILED follows when that exec failed). Its hook says HELLO origin
 * START with ppid the sender, so a SPAWN whose child never does is a program
 * heapledger did not observe (it lost LD_PRELOAD or HEAPLEDGER_SOCKET, is
 * static or setuid, or its connection failed): the report and the gate say
 * so. Sent only when the child is expected to report (HL_EXEC_TRACED's rule
 * below). `path_len` bytes follow: the path given, NUL included, its last
 * bytes kept when longer than fits a packed record (HL_PACK_MAX_RECORD). */
struct hl_rec_spawn {
	struct hl_wire_header h; /* flags: HL_SPAWN_FAILED or 0 */
	uint32_t child_pid;
	uint32_t path_len;       /* bytes of path, NUL included */
	uint64_t ticks;
};

#define HL_SPAWN_FAILED 1u /* the vfork child's exec failed: no image started */

/* A stream that ends without EXIT (SIGKILL, a crash, exec, or the hook going
 * on standalone: the reporter stopped reading for wait_ms, or the program
 * took the socket's descriptor) lacks what the hook had not sent yet: each
 * thread's buffer is sent when 128 KiB have gathered, or at that thread's
 * first event once its oldest is 100 ms old. A thread that then stays idle
 * (sleeps, waits) keeps its last events unsent until it runs again; no timer
 * flushes them. A reporter that took the shared buffers (see "Shared event
 * buffers" below) reads those events from them at the end of the stream;
 * what it still lacks then: the events of a thread beyond the buffers'
 * slots, and the stacks and modules first named after the last send
 * (recovered events keep no stack then). So a reporter must not take the
 * live set of such a stream as complete: it says so (HL_EXIT_UNKNOWN or
 * SIGNAL: "may be incomplete"), except for an exec, whose image flushed
 * every thread's buffer first. */
enum hl_exit_how {
	HL_EXIT_NORMAL = 0,   /* exit() or return from main; `status` is valid */
	HL_EXIT_UNDERSCORE = 1, /* _exit/_Exit; `status` is valid, no destructors ran */
	HL_EXIT_ABORT = 2,    /* abort() was called */
	HL_EXIT_SIGNAL = 3,   /* killed by signal `status`: sent by the hook after FATAL
			       * (scanned), else the reporter's reading of the wait status */
	HL_EXIT_EXEC = 4,     /* reporter-side only: image replaced by exec */
	HL_EXIT_UNKNOWN = 5,  /* reporter-side only: connection closed without EXIT */
};

/* FATAL: a signal whose default action ends the process arrived and the
 * hook's handler ran (the program had none of its own). The hook then scans
 * and sends the LIVE set and EXIT (how HL_EXIT_SIGNAL, status the signal),
 * and lets the signal end the process as it would have. */
struct hl_rec_fatal {
	struct hl_wire_header h;
	uint32_t signal;
	int32_t code;      /* si_code: SEGV_MAPERR, ...; <= 0 when a process sent it */
	uint64_t address;  /* si_addr for SIGSEGV, SIGBUS, SIGILL, SIGFPE; else 0 */
	uint32_t stack_id; /* the receiving thread's stack, the faulting frame first; 0 if none */
	uint32_t tid;      /* the receiving thread */
	uint64_t ticks;
};

/* FD_SUMMARY and FD: the file descriptors still open as the process ends,
 * sent by a hook with track_fds=yes|all (valgrind's --track-fds) after the
 * definitions and before LIVE and EXIT: one FD_SUMMARY, then `listed` FD
 * records, the newest descriptor first and the inherited ones last, as
 * valgrind lists them. The hook's own descriptors are never counted. */
#define HL_FD_SUMMARY_ALL 1u /* track_fds=all: 0, 1 and 2 are listed too */
struct hl_rec_fd_summary {
	struct hl_wire_header h; /* flags: HL_FD_SUMMARY_ALL */
	uint32_t open;     /* descriptors open at exit, 0, 1 and 2 included */
	uint32_t std;      /* how many of them are 0, 1 or 2 */
	uint32_t listed;   /* FD records that follow */
	uint32_t reserved;
};

enum hl_fd_kind {
	HL_FD_FILE = 0,   /* anything but a socket: text is its path, if it has one */
	HL_FD_SOCKET = 1, /* text: "local <-> peer" (inet), the bound path (unix) */
	HL_FD_KIND_COUNT
};
#define HL_FD_INHERITED 1u /* open when the image started: no stack */
#define HL_FD_UNSEEN 2u    /* open at exit but made by a call the hook does not
			    * interpose (a raw syscall, glibc's own): no stack */
#define HL_FD_FLAGS (HL_FD_INHERITED | HL_FD_UNSEEN)

/* FD is followed by `text_len` bytes of text, its NUL included (0: none),
 * then padding to a multiple of 8. */
struct hl_rec_fd {
	struct hl_wire_header h; /* flags: HL_FD_* */
	int32_t fd;
	uint32_t stack_id; /* where the program made it; 0: inherited, unseen or no stack */
	uint32_t kind;     /* enum hl_fd_kind */
	uint32_t family;   /* a socket's address family (AF_*); 0: unknown */
	uint32_t text_len; /* at most HL_WIRE_MAX_PATH */
	uint32_t reserved;
};

/* valgrind's name of a socket family in "Open AF_INET socket 3: ...", or
 * NULL (it then says "Open pf-16 socket 3:"). One table for the hook's
 * standalone report and the reporter's. */
static inline const char *hl_wire_fd_family_name(uint32_t family)
{
	switch (family) {
	case 1: return "AF_UNIX";
	case 2: return "AF_INET";
	case 10: return "AF_INET6";
	default: return NULL;
	}
}

/* valgrind's words for a fault's si_code ("Access not within mapped region
 * at address 0x0"), or NULL: the signal was sent, or is not a fault. One
 * table for the hook's standalone report and the reporter's. */
static inline const char *hl_wire_fault_words(uint32_t signal, int32_t code)
{
	switch (signal * 16 + (uint32_t)(code > 0 && code < 16 ? code : 0)) {
	case 11 * 16 + 1: return "Access not within mapped region";  /* SIGSEGV SEGV_MAPERR */
	case 11 * 16 + 2: return "Bad permissions for mapped region"; /* SEGV_ACCERR */
	case 7 * 16 + 1: return "Invalid address alignment";         /* SIGBUS BUS_ADRALN */
	case 7 * 16 + 2: return "Non-existent physical address";     /* BUS_ADRERR */
	case 7 * 16 + 3: return "Hardware error";                    /* BUS_OBJERR */
	case 8 * 16 + 1: return "Integer divide by zero";            /* SIGFPE FPE_INTDIV */
	case 8 * 16 + 2: return "Integer overflow";                  /* FPE_INTOVF */
	case 8 * 16 + 3: return "FP divide by zero";                 /* FPE_FLTDIV */
	case 8 * 16 + 4: return "FP overflow";
	case 8 * 16 + 5: return "FP underflow";
	case 8 * 16 + 6: return "FP inexact";
	case 8 * 16 + 7: return "FP invalid operation";
	case 8 * 16 + 8: return "FP subscript out of range";
	case 4 * 16 + 1: return "Illegal opcode";                    /* SIGILL ILL_ILLOPC */
#if defined(__x86_64__) || defined(__i386__)
	/* x86 Linux raises every #UD (ud2, __builtin_trap, an unknown
	 * instruction) as ILL_ILLOPN; valgrind, which decodes the instruction
	 * itself, says "Illegal opcode" for those. */
	case 4 * 16 + 2: return "Illegal opcode";
#else
	case 4 * 16 + 2: return "Illegal operand";
#endif
	case 4 * 16 + 3: return "Illegal addressing mode";
	case 4 * 16 + 4: return "Illegal trap";
	case 4 * 16 + 5: return "Privileged opcode";
	case 4 * 16 + 6: return "Privileged register";
	case 4 * 16 + 7: return "Coprocessor error";
	case 4 * 16 + 8: return "Internal stack error";
	default: return NULL;
	}
}

struct hl_rec_exit {
	struct hl_wire_header h;
	uint32_t how;    /* enum hl_exit_how */
	int32_t status;  /* exit status, or signal number */
	uint64_t ticks;
	uint64_t events_sent; /* records this process sent before EXIT */
};

/* Leak classes (valgrind's); HL_CLASS_UNKNOWN until a reachability scan ran. */
enum hl_leak_class {
	HL_CLASS_UNKNOWN = 0,
	HL_CLASS_DEFINITE = 1,
	HL_CLASS_INDIRECT = 2,
	HL_CLASS_POSSIBLE = 3,
	HL_CLASS_REACHABLE = 4,
	HL_CLASS_SUPPRESSED = 5,
};

struct hl_wire_live_block {
	uint64_t address;
	uint64_t size;
	uint32_t stack_id;
	uint8_t leak_class; /* enum hl_leak_class */
	uint8_t kind;       /* enum hl_alloc_kind */
	uint16_t reserved;
};

/* LIVE carries `count` hl_wire_live_block entries; the hook sends as many
 * LIVE records as it needs at exit, then EXIT. flags: HL_LIVE_SCANNED when
 * leak_class comes from a reachability scan (else every class is UNKNOWN:
 * _exit, abort, or a scan that could not run).
 *
 * An on-demand leak check (heapledger_check_leaks(), check_signal=) sends the
 * same set in the middle of the stream: LIVE records flagged HL_LIVE_CHECK,
 * then one CHECK record that closes the set. Such a set is a snapshot of the
 * process at that moment, never the exit set; a reader that does not keep
 * checkpoints skips LIVE records flagged HL_LIVE_CHECK and CHECK records.
 *
 * Indirect bytes (a later addition at the record's end, so older readers
 * ignore it): after the `count` blocks, the rest of the record's length
 * holds hl_wire_live_indirect entries, as many as fit whole. Each gives the
 * bytes of the blocks lost only through block `index` of this record (a
 * definitely lost block leading its "clique", valgrind's indirect bytes);
 * a block without an entry holds none. */
struct hl_rec_live {
	struct hl_wire_header h;
	uint32_t count;
	uint32_t reserved;
};
struct hl_wire_live_indirect {
	uint32_t index;    /* of a block in this record, < count */
	uint32_t reserved;
	uint64_t bytes;    /* indirectly lost through it */
};
/* The indirect entries of a LIVE record whose length was checked. */
static inline uint32_t hl_wire_live_indirect_count(const struct hl_rec_live *r)
{
	uint64_t fixed = sizeof(*r) + (uint64_t)r->count * sizeof(struct hl_wire_live_block);
	return r->h.length > fixed ?
		       (uint32_t)((r->h.length - fixed) / sizeof(struct hl_wire_live_indirect)) : 0;
}
static inline const struct hl_wire_live_indirect *hl_wire_live_indirect_of(
	const struct hl_rec_live *r)
{
	return (const void *)((const char *)(r + 1) +
			      (size_t)r->count * sizeof(struct hl_wire_live_block));
}
#define HL_LIVE_SCANNED 1u   /* leak_class comes from a reachability scan */
#define HL_LIVE_CHECK 2u     /* part of an on-demand check's set, not the exit set */
#define HL_LIVE_UNSTOPPED 4u /* a thread did not stop for the scan: its whole stack
			      * mapping was read while it ran, so a block it had
			      * just written or dropped may be misclassified */
#define HL_LIVE_FLAGS (HL_LIVE_SCANNED | HL_LIVE_CHECK | HL_LIVE_UNSTOPPED)

/* CHECK closes the LIVE set of one on-demand check (HL_LIVE_CHECK). The
 * blocks of the set are the live blocks at `ticks`; the first check of a
 * process image has seq 1. flags: */
#define HL_CHECK_SIGNAL 1u    /* run by check_signal=, else by heapledger_check_leaks() */
#define HL_CHECK_UNSTOPPED 2u /* as HL_LIVE_UNSTOPPED, for this check */
#define HL_CHECK_FLAGS (HL_CHECK_SIGNAL | HL_CHECK_UNSTOPPED)
struct hl_rec_check {
	struct hl_wire_header h; /* flags: 0 */
	uint32_t seq;            /* 1, 2, ... per process image */
	uint32_t flags;          /* HL_CHECK_* */
	uint64_t ticks;          /* when the scan stopped the threads */
};

/* The threads that did not stop for a scan, by name (a later addition at
 * the end of CHECK, for the check's scan, and of EXIT, for the exit scan;
 * older readers ignore it): the rest of the record's length after the fixed
 * part holds uint32_t kernel thread ids, as many as fit whole; 0 is
 * padding. The hook names at most HL_WIRE_MAX_UNSTOPPED_TIDS of them; the
 * flags (HL_CHECK_UNSTOPPED, HL_LIVE_UNSTOPPED) say whether there were any,
 * and a reader takes no more than that many. */
#define HL_WIRE_MAX_UNSTOPPED_TIDS 16
/* Copies the tids after the `fixed` bytes of a record whose length was
 * checked into tids[HL_WIRE_MAX_UNSTOPPED_TIDS]; returns how many. */
static inline uint32_t hl_wire_unstopped_tids(const struct hl_wire_header *h, uint32_t fixed,
					      uint32_t *tids)
{
	uint32_t n = 0, have = h->length > fixed ? (h->length - fixed) / 4 : 0;

	for (uint32_t i = 0; i < have && n < HL_WIRE_MAX_UNSTOPPED_TIDS; i++) {
		uint32_t tid;

		memcpy(&tid, (const char *)h + fixed + 4 * (size_t)i, sizeof(tid));
		if (tid)
			tids[n++] = tid;
	}
	return n;
}

/* Sent by the hook's exec wrappers just before the exec, after every buffered
 * event, and followed by `path_len` bytes: the path given to exec, NUL
 * included (cut at HL_WIRE_MAX_PATH). A stream that ends right after it, with
 * no EXIT, belongs to an image replaced by exec, even when the new image never
 * reports (not chosen by $HEAPLEDGER_TRACE/_EXCLUDE, LD_PRELOAD removed, a
 * static program); any record after it means the exec failed and the image
 * carries on. */
struct hl_rec_exec {
	struct hl_wire_header h; /* flags: HL_EXEC_TRACED or 0 */
	uint32_t path_len;       /* bytes of path, NUL included */
	uint32_t reserved;       /* 0 */
};

/* HL_EXEC_TRACED: the new image is expected to report (children are traced
 * and no $HEAPLEDGER_TRACE/_EXCLUDE glob chooses which), so an EXEC whose
 * image never says HELLO is one heapledger did not observe (it lost
 * LD_PRELOAD or HEAPLEDGER_SOCKET, is static or setuid, its connection
 * failed). Without it, an image that never reports may be one not chosen. */
#define HL_EXEC_TRACED 1u

/* OPTIONS follows HELLO at once: the HEAPLEDGER_OPTIONS keys of this
 * process that change what the reporter prints of it, so a daemon serving a
 * whole suite honours each program's own options. `given` says which keys
 * the user set (HL_OPTIONS_*); a key not given leaves the reporter's own
 * setting (its command line, else its default). The hook's defaults are not
 * sent as if given: `heapledger run` prints every loss record unless asked.
 * A reader that does not know OPTIONS skips it. */
#define HL_OPTIONS_MAX_LEAKS 1u /* max_leaks: loss records printed at most, 0 all */
#define HL_OPTIONS_KNOWN HL_OPTIONS_MAX_LEAKS
struct hl_rec_options {
	struct hl_wire_header h; /* flags: 0 */
	uint32_t given;          /* HL_OPTIONS_* */
	uint32_t max_leaks;      /* valid with HL_OPTIONS_MAX_LEAKS */
};

enum hl_error_kind {
	HL_ERROR_INVALID_FREE = 1, /* pointer the allocator does not own (foreign, misaligned) */
	HL_ERROR_DOUBLE_FREE = 2,  /* a block already freed */
	HL_ERROR_INTERIOR_FREE = 3, /* a pointer inside a live block, not its start */
	HL_ERROR_OVERFLOW = 4,      /* guard bytes after the block damaged */
	HL_ERROR_USE_AFTER_FREE = 5,
	HL_ERROR_MISMATCH = 6,      /* malloc/delete, new/free, new[]/delete ... */
	HL_ERROR_HEADER_CORRUPT = 7, /* a block's header overwritten (underflow) */
	HL_ERROR_SIZE_MISMATCH = 8, /* sized delete given another size than new's */
	HL_ERROR_KIND_COUNT
};

/* The function the program called when the error was found. */
enum hl_error_call {
	HL_CALL_FREE = 0,
	HL_CALL_REALLOC = 1,
	HL_CALL_USABLE_SIZE = 2,   /* malloc_usable_size */
	HL_CALL_DELETE = 3,
	HL_CALL_DELETE_ARRAY = 4,  /* delete[] */
	HL_CALL_EXIT = 5,          /* checks=full: found by the check at exit */
	HL_CALL_CHECK = 6,         /* checks=full: found by an on-demand leak check */
	HL_CALL_READ = 7,          /* checks=guard: a read faulted on a guard page (detail: size) */
	HL_CALL_WRITE = 8,         /* checks=guard: a write faulted on a guard page (detail: size) */
	HL_CALL_COUNT
};

struct hl_rec_error {
	struct hl_wire_header h;
	uint32_t kind; /* enum hl_error_kind */
	uint32_t stack_id;       /* where the error happened */
	uint64_t address;        /* the pointer passed in */
	uint64_t block_address;  /* the block it relates to, 0 if none */
	uint64_t block_size;     /* bytes the program asked for */
	uint32_t alloc_stack_id; /* that block's allocation stack, 0 if unknown */
	uint32_t free_stack_id;  /* that block's free stack, 0 if unknown */
	uint64_t ticks;
	uint32_t call;           /* enum hl_error_call */
	uint32_t alloc_kind;     /* enum hl_alloc_kind of the block (MISMATCH) */
	uint64_t detail;         /* SIZE_MISMATCH: the size delete was given; READ and
				  * WRITE calls: the access's size in bytes, 0 unknown */
};

struct hl_rec_dropped {
	struct hl_wire_header h;
	uint64_t events; /* events lost since the last DROPPED */
	/* Grown: allocations whose stack was captured but could not be kept
	 * (the hook out of memory or ids) since the last DROPPED; their events
	 * carry stack 0. Absent (length 16) from older hooks. */
	uint64_t stacks;
};
#define HL_REC_DROPPED_V1_BYTES 16 /* without `stacks` */

/* ---- Packed events ------------------------------------------------------
 *
 * A BATCH's payload is a sequence of packed events, each:
 *   uint16_t op, little-endian:
 *     bits 0-2   enum hl_pack_event
 *     bits 3-5   enum hl_alloc_kind for ALLOC and FREE, else 0
 *     bits 6-15  field i's size at bits 6+2i: 0, 1, 2, 3 = 1, 2, 4, 8 bytes
 *   then the fields in that order, little-endian, unaligned:
 *     ALLOC:   ticks, address, size, stack_id
 *     FREE:    ticks, address
 *     REALLOC: ticks, old_address, new_address, size, stack_id
 *     RECORD:  none; a whole record follows (header first, `length` bytes,
 *              unaligned): THREAD_START, THREAD_END, FORK, SPAWN, ERROR, DROPPED, FATAL
 *              or TALLY, at most HL_PACK_MAX_RECORD bytes.
 * Unused size bits are 0. Stored values:
 *   ticks        ticks - BATCH.base_ticks, modulo 2^64;
 *   address      hl_zigzag(address - BATCH.base_address);
 *   old_address  hl_zigzag(old_address - BATCH.base_address);
 *   new_address  hl_zigzag(new_address - old_address) (0 when in place);
 *   size, stack_id as they are (a stack_id above 2^32 - 1 is an error).
 * The bases are the thread's: deltas stay small because a thread's events
 * in one batch are close in time and mostly within a few of its arenas. The
 * decoder expands each event into struct hl_rec_alloc / hl_rec_free /
 * hl_rec_realloc (flags = the kind) and then checks it like a full record.
 */
enum hl_pack_event {
	HL_PACK_ALLOC = 1,
	HL_PACK_FREE = 2,
	HL_PACK_REALLOC = 3,
	HL_PACK_RECORD = 4,
};

#define HL_PACK_OP_BYTES 2 /* the op word */
#define HL_PACK_MAX_FIELDS 5
#define HL_PACK_MAX_EVENT (HL_PACK_OP_BYTES + HL_PACK_MAX_FIELDS * 8) /* RECORD aside */
#define HL_PACK_MAX_RECORD 128 /* largest record a RECORD event may carry */

/* Maps signed differences to small unsigned numbers: 0, -1, 1, -2 -> 0, 1, 2, 3. */
static inline uint64_t hl_zigzag(uint64_t delta)
{
	return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint64_t hl_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* Fields each event carries, indexed by enum hl_pack_event; 0 = unknown. */
static inline unsigned hl_pack_field_count(unsigned event)
{
	switch (event) {
	case HL_PACK_ALLOC: return 4;
	case HL_PACK_FREE: return 2;
	case HL_PACK_REALLOC: return 5;
	default: return 0;
	}
}

/* The leading zero bits of v, 63 for 0 and 1. */
static inline unsigned hl_pack_leading_zeros(uint64_t v)
{
#if defined(__GNUC__)
	return (unsigned)__builtin_clzll(v | 1u); /* bsr and an xor */
#else
	unsigned zeros = 63;

	while (v >>= 1)
		zeros--;
	return zeros;
#endif
}

/* Writes one event with `n` fields at dst, which must have
 * HL_PACK_MAX_EVENT writable bytes (each field is stored as 8 bytes and the
 * next one overwrites what lies past its size, so the last one may write up
 * to HL_PACK_OP_BYTES + 8n bytes); returns its length. */
static inline uint32_t hl_pack_write(uint8_t *dst, unsigned event, unsigned kind,
				     const uint64_t *fields, unsigned n)
{
	/* A field's size code and bytes, indexed by its value's leading zero
	 * bits: one load each, where the three compares and the shift they
	 * replaced were ~17 instructions a field in the hook's event path (4
	 * fields an allocation, 2 a free). */
	static const uint8_t code_of_zeros[64] = {
		3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
		3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
		2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
		1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	static const uint8_t bytes_of_zeros[64] = {
		8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
		8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
		4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
		2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,
	};
	uint8_t *p = dst + HL_PACK_OP_BYTES;
	uint32_t op = event | kind << 3;

	/* Unrolled (n is a constant at every call), this is straight-line code:
	 * the hook runs it for every allocation. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 5
#endif
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = fields[i];
		unsigned zeros = hl_pack_leading_zeros(v);

		memcpy(p, &v, 8); /* the bytes past its size are overwritten next */
		p += bytes_of_zeros[zeros];
		op |= (uint32_t)code_of_zeros[zeros] << (6 + 2 * i);
	}
	uint16_t op16 = (uint16_t)op;
	memcpy(dst, &op16, HL_PACK_OP_BYTES);
	return (uint32_t)(p - dst);
}

/* Writes a RECORD event carrying the `len`-byte record `rec` (at most
 * HL_PACK_MAX_RECORD) at dst; returns its length. */
static inline uint32_t hl_pack_write_record(uint8_t *dst, const void *rec, uint32_t len)
{
	uint16_t op = HL_PACK_RECORD;

	memcpy(dst, &op, HL_PACK_OP_BYTES);
	memcpy(dst + HL_PACK_OP_BYTES, rec, len);
	return HL_PACK_OP_BYTES + len;
}

/* hl_pack_read's `n` fields when a whole HL_PACK_MAX_EVENT bytes lie at
 * src: each field is one unaligned 8-byte load and a mask, with no test per
 * field (n is a constant at each use, so the loop unrolls). */
static inline uint32_t hl_pack_read_fields(const uint8_t *src, uint16_t op, unsigned n,
					   uint64_t fields[HL_PACK_MAX_FIELDS])
{
	uint32_t at = HL_PACK_OP_BYTES;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 5
#endif
	for (unsigned i = 0; i < n; i++) {
		static const uint64_t mask[4] = { 0xffu, 0xffffu, 0xffffffffu, ~(uint64_t)0 };
		unsigned code = (op >> (6 + 2 * i)) & 3u;
		uint64_t v;

		memcpy(&v, src + at, 8);
		fields[i] = v & mask[code];
		at += (0x8421u >> (4 * code)) & 0xfu; /* 1 << code, from a constant */
	}
	return at;
}

/* One field of an event whose whole HL_PACK_MAX_EVENT bytes lie at src:
 * the field at src + *at whose size code (op >> (6 + 2i), for field i) is
 * the low 2 bits of `code`; advances *at past it. Readers that know the
 * event's type call it once per field in order (the reporter's batch
 * decoder: ~7 instructions a field, against ~13 through
 * hl_pack_read_fields' array). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint64_t hl_pack_field(const uint8_t *src, uint32_t *at, unsigned code)
{
	static const uint64_t mask[4] = { 0xffu, 0xffffu, 0xffffffffu, ~(uint64_t)0 };
	uint64_t v;

	code &= 3u;
	memcpy(&v, src + *at, 8);
	*at += 1u << code;
	return v & mask[code];
}

/* Reads the event at src, of which `avail` bytes are there, into *event,
 * *kind and fields[]; returns its length without a RECORD's record, or 0 if
 * it is malformed or runs past avail. Always inlined: called out of line,
 * its fields went through memory and its tests were not folded into the
 * caller's (78 instructions an event, 30-40 inlined). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint32_t hl_pack_read(const uint8_t *src, size_t avail, unsigned *event,
				    unsigned *kind, uint64_t fields[HL_PACK_MAX_FIELDS])
{
	uint16_t op;
	unsigned n;
	size_t at = HL_PACK_OP_BYTES;

	if (avail < HL_PACK_OP_BYTES)
		return 0;
	memcpy(&op, src, HL_PACK_OP_BYTES);
	*event = op & 7u;
	*kind = (op >> 3) & 7u;
	n = hl_pack_field_count(*event);
	if (*event == HL_PACK_RECORD)
		return op == HL_PACK_RECORD ? 2 : 0;
	if (n == 0 || op >> (6 + 2 * n) != 0)
		return 0;
	/* Most of a batch: every field's 8 bytes are there, whatever its size
	 * (the decoder spent ~100 instructions an event on the tests below). */
	if (avail >= HL_PACK_MAX_EVENT) {
		switch (*event) {
		case HL_PACK_ALLOC: return hl_pack_read_fields(src, op, 4, fields);
		case HL_PACK_FREE: return hl_pack_read_fields(src, op, 2, fields);
		default: return hl_pack_read_fields(src, op, 5, fields);
		}
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned code = (op >> (6 + 2 * i)) & 3u;
		uint8_t b1;
		uint16_t b2;
		uint32_t b4;

		if (avail - at < (1u << code))
			return 0;
		switch (code) {
		case 0: memcpy(&b1, src + at, 1); fields[i] = b1; break;
		case 1: memcpy(&b2, src + at, 2); fields[i] = b2; break;
		case 2: memcpy(&b4, src + at, 4); fields[i] = b4; break;
		default: memcpy(&fields[i], src + at, 8); break;
		}
		at += 1u << code;
	}
	return (uint32_t)at;
}

/* ---- Shared event buffers ----------------------------------------------
 *
 * Why: a process killed with SIGKILL after a thread went idle (200 leaked
 * blocks, sleep(1), kill) used to be reported with its first block only:
 * the rest sat in that thread's buffer, unsent. Flushing on a timer would
 * need a thread or a timer signal in the program (its thread count, its
 * signals and fork change), and a program that is killed still loses up to
 * a period of events. Instead the buffers themselves are handed over: the
 * hook keeps every thread's event buffer in one memfd and passes it once,
 * as SCM_RIGHTS ancillary data on the bytes of HELLO (one descriptor), then
 * closes its own descriptor: its mapping stays, and the program's
 * descriptor table is as before. The memfd is sealed (F_SEAL_SHRINK,
 * F_SEAL_GROW) so the reporter can map it without fear of SIGBUS. A reader
 * that reads the socket with read() never sees the descriptor (the kernel
 * closes it), and loses nothing else.
 *
 * Layout: struct hl_shared_area at offset 0; slot i at first_slot + i *
 * slot_bytes, i < slots; `slots` grows as threads take slots (lowest free
 * first), so a reader never touches the pages of slots no thread used
 * (reading one would make the kernel allocate it). Each slot starts with
 * struct hl_shared_slot, and its packed events (the payload of a BATCH,
 * "Packed events") start at data_offset within the slot, data_bytes of
 * room. A slot with tid 0 is free. A forked child gets a memfd of its own
 * (the parent's pages are shared, not copied).
 *
 * The owner thread appends events at [used..] and then publishes `used`;
 * the hook sends [sent, used) as a BATCH of `tid` with the slot's bases and
 * then advances `sent`. Before it writes that BATCH it sets sending_end to
 * `used` and sending_sequence to the BATCH's sequence, so a reader that
 * already received that sequence knows the batch got through though `sent`
 * was not advanced (the process was killed in between).
 *
 * When the connection ends without EXIT, the reporter decodes [start, used)
 * of each slot with 0 < tid, start = sending_end if it received BATCH
 * sending_sequence, else `sent`, start <= used <= data_bytes, as one more
 * BATCH of `tid` with base_ticks and base_address, stack ids it never saw
 * defined taken as 0, and reads `standalone` (enum hl_standalone) and,
 * unless the stream ended on EXEC, `unsent_inherited`. A
 * process whose threads outnumber the slots keeps the others' buffers
 * private (not recoverable).
 *
 * The hook's own ending: a hook that went on standalone after it had
 * connected (the reporter stopped reading for wait_ms, or the connection
 * broke) prints its own report at exit, and writes into `ending` how the
 * process ended, its report's leak counts and its heap's figures, `ended`
 * last (a release
 * store; the rest of the struct is zero until then, as the memfd began).
 * A reporter whose stream ended without EXIT reads it: a stalled reporter
 * that is continued reports the process as it really ended and with the
 * hook's counts, not its own events, which stop where the hook gave up.
 * An ending written after the reporter read the end of the stream is not
 * seen (the reporter then goes by the wait status, as before). */
#define HL_SHARED_ENDED 1
#define HL_SHARED_CLASSES 8 /* room for enum hl_leak_class (classes.h) */

struct hl_shared_ending {
	uint32_t ended;     /* HL_SHARED_ENDED once the fields below are final */
	uint32_t how;       /* enum hl_exit_how: NORMAL, UNDERSCORE, ABORT or SIGNAL */
	int32_t status;     /* exit status, or the signal */
	uint32_t counted;   /* 1: bytes and blocks hold the hook's leak report */
	uint32_t scanned;   /* 1: classified by a leak scan; 0: HL_CLASS_UNKNOWN */
	uint32_t reserved;
	uint64_t bytes[HL_SHARED_CLASSES];  /* by enum hl_leak_class */
	uint64_t blocks[HL_SHARED_CLASSES];
	/* its heap at exit, as its HEAP SUMMARY (struct heapledger_stats) */
	uint64_t in_use_bytes, in_use_blocks, allocs, frees, bytes_allocated, peak_bytes;
};

#define HL_SHARED_MAGIC 0x6873726c64676c68ull /* "hlgdlrsh" */
#define HL_SHARED_VERSION 4

struct hl_shared_area {
	uint64_t magic;       /* HL_SHARED_MAGIC */
	uint32_t version;     /* HL_SHARED_VERSION */
	uint32_t slots;       /* slots that may hold a thread: the highest ever taken + 1 (the
			       * hook raises it; the mapping may have room for more) */
	uint64_t first_slot;  /* offset of slot 0 */
	uint32_t slot_bytes;  /* distance between slots */
	uint32_t data_offset; /* packed events' offset within a slot */
	uint32_t data_bytes;  /* room for packed events in a slot */
	uint32_t standalone;  /* enum hl_standalone: why the hook went on standalone */
	struct hl_shared_ending ending; /* the hook's own ending (above) */
	uint64_t tally_offset; /* struct hl_tally ("Counting in the hook"); 0: none */
	uint64_t tally_bytes;  /* from tally_offset to the area's end at most */
	/* A fork child's blocks from fork, while their snapshot waits for its
	 * first record (HL_HOOK_FORK_SNAPSHOT); 0 once it went out. */
	uint64_t unsent_inherited;
	/* Each slot's struct hl_tally_delta (heapledger/tally.h, "threads"):
	 * its offset in the slot and its size; 0: none. */
	uint32_t delta_offset;
	uint32_t delta_bytes;
};

/* Why a connected hook went on standalone (struct hl_shared_area's
 * `standalone`). The hook stores it, once, before it closes the connection,
 * so a reporter that reads the area at the end of the stream finds it: the
 * socket itself is gone or full then. Why: the report said only that the
 * stream ended without its exit record; a user could not tell a stalled
 * reporter from a program that closed heapledger's descriptor. A program
 * that closes or dup2()s over the descriptor ends the stream before its
 * hook notices (at the next send); a reporter that sees the process run on
 * after its stream ended without EXIT or EXEC, with nothing stored here,
 * takes it as HL_STANDALONE_DESCRIPTOR. A hook that never connected sends
 * nothing, so the reporter learns of it only as a process that never
 * appeared. */
enum hl_standalone {
	HL_STANDALONE_NONE = 0,       /* connected to its end, or killed */
	HL_STANDALONE_STALLED = 1,    /* the reporter took no byte for wait_ms */
	HL_STANDALONE_LOST = 2,       /* a send failed: the reporter closed the connection */
	HL_STANDALONE_DESCRIPTOR = 3, /* the program closed or replaced the hook's descriptor */
	HL_STANDALONE_UNOBSERVED = 4, /* reporter-side only: a fork child its parent's FORK
				       * named never connected (HELLO never came) */
	HL_STANDALONE_CUT = 5,        /* reporter-side only: the reporter closed the
				       * connection: it held read buffer room others waited
				       * for and finished no record within the stall timeout */
	HL_STANDALONE_UNSPAWNED = 6,  /* reporter-side only: a child its parent's SPAWN
				       * named never connected */
	HL_STANDALONE_UNEXECED = 7,   /* reporter-side only: the image an EXEC flagged
				       * HL_EXEC_TRACED started never connected */
	HL_STANDALONE_COUNT
};

/* Was the process heard of from its parent's side only (it never said
 * HELLO), so that nothing of it is known but how it ended? */
static inline int hl_standalone_never_connected(uint32_t why)
{
	return why == HL_STANDALONE_UNOBSERVED || why == HL_STANDALONE_UNSPAWNED ||
	       why == HL_STANDALONE_UNEXECED;
}

struct hl_shared_slot {
	uint32_t tid;              /* owner's kernel thread id; 0: free slot */
	uint32_t used;             /* bytes of complete packed events */
	uint32_t sent;             /* bytes written to the socket */
	uint32_t sending_end;      /* end of the BATCH being written, else == sent */
	uint64_t sending_sequence; /* that BATCH's sequence */
	uint64_t base_ticks;       /* the slot's batches' base_ticks */
	uint64_t base_address;     /* and base_address */
};

/* ---- Counting in the hook --------------------------------------------------
 *
 * Why: sending every allocation and free cost the program about as much as
 * its hook, and the reporter applying each one as much again, on the cores
 * the program needs (bench/README.md, "Reporter performance"). A process
 * image's hook (hook_flags HL_HOOK_TALLY in HELLO; option tally, on by
 * default) sends no ALLOC, FREE or REALLOC: it counts each event into the
 * shared area's tally (struct hl_tally at tally_offset, heapledger/tally.h)
 * as the reporter would have, and appends each new stack's frames to the
 * tally's stack log; once it has threads, each thread counts into its
 * slot's delta (delta_offset) and merges it into the tally (tally.h,
 * "threads"). STACK records still go out with every batch. The tally ends
 * once, with state, then TALLY:
 *  - HL_TALLY_HANDED, at exec while the image has one thread (with threads
 *    the counting goes on through EXEC and the stream ends COUNTING, below),
 *    at a second thread the hook cannot count (one it saw only at its first
 *    allocation, stacks=0, no membarrier),
 *    or when a stack id reaches HL_TALLY_STACKS or the series have no room:
 *    then every live block as ALLOC flagged HL_ALLOC_TALLIED in a batch of
 *    its own (live, and counted already), then events as without the
 *    tally;
 *  - HL_TALLY_FINAL, at exit, before the LIVE set, which is then the live
 *    set whole.
 * The reporter, at TALLY, takes the tally's counts as its own (replacing
 * what it had) after checking every index and count against the area's
 * bounds. A stream that ends without TALLY (killed, or exec'd with threads) has its tally read at
 * the end, state HL_TALLY_COUNTING: the process's blocks are then known by
 * stack (bytes and blocks), not one by one, with every slot's delta not
 * merged added (a merge cut short undone from the tally's journal first),
 * and stacks not yet sent come from the log. A fork child counts nothing (its area is new, its state
 * HL_TALLY_OFF): it sends its heap and its events as before.
 * The stack log outlives the counting: from the hand-over on, and in an
 * image that never counts (threads at HELLO, a fork child, tally=0: the
 * tally laid out with state HL_TALLY_OFF and no counts), the hook appends
 * each stack as it interns it. A stream that ends without EXIT has the
 * stacks the log holds and the connection never defined added before its
 * unsent events are read (its threads' last stacks). */
struct hl_rec_tally {
	struct hl_wire_header h;
	uint32_t state; /* enum hl_tally_state: HANDED or FINAL */
	uint32_t reserved;
};

/* Record sizes are part of the protocol: pin them. */
_Static_assert(sizeof(struct hl_wire_header) == 8, "header");
_Static_assert(sizeof(struct hl_rec_hello) == 64, "hello");
_Static_assert(sizeof(struct hl_rec_tally) == 16, "tally");
_Static_assert(sizeof(struct hl_rec_batch) == 64, "batch");
_Static_assert(sizeof(struct hl_rec_module_load) == 56, "module_load");
_Static_assert(sizeof(struct hl_rec_module_unload) == 24, "module_unload");
_Static_assert(sizeof(struct hl_rec_stack) == 16, "stack");
_Static_assert(sizeof(struct hl_rec_alloc) == 40, "alloc");
_Static_assert(sizeof(struct hl_rec_free) == 24, "free");
_Static_assert(sizeof(struct hl_rec_realloc) == 48, "realloc");
_Static_assert(sizeof(struct hl_rec_thread) == 24, "thread");
_Static_assert(sizeof(struct hl_rec_fork) == 24, "fork");
_Static_assert(sizeof(struct hl_rec_spawn) == 24, "spawn");
_Static_assert(sizeof(struct hl_rec_exit) == 32, "exit");
_Static_assert(sizeof(struct hl_rec_fatal) == 40, "fatal");
_Static_assert(sizeof(struct hl_rec_fd_summary) == 24, "fd_summary");
_Static_assert(sizeof(struct hl_rec_fd) == 32, "fd");
_Static_assert(sizeof(struct hl_wire_live_block) == 24, "live_block");
_Static_assert(sizeof(struct hl_rec_live) == 16, "live");
_Static_assert(sizeof(struct hl_wire_live_indirect) == 16, "live_indirect");
_Static_assert(sizeof(struct hl_rec_error) == 72, "error");
_Static_assert(sizeof(struct hl_rec_dropped) == 24, "dropped");
_Static_assert(sizeof(struct hl_rec_check) == 24, "check");
_Static_assert(sizeof(struct hl_rec_exec) == 16, "exec");
_Static_assert(sizeof(struct hl_shared_ending) == 200, "shared_ending");

_Static_assert(sizeof(struct hl_rec_options) == 16, "options");
_Static_assert(sizeof(struct hl_shared_area) == 272, "shared_area");
_Static_assert(sizeof(struct hl_shared_slot) == 40, "shared_slot");

/* A record header for `type` of `len` bytes. */
static inline struct hl_wire_header hl_wire_hdr(unsigned type, unsigned flags, uint32_t len)
{
	struct hl_wire_header h = { HL_WIRE_VERSION, (uint8_t)type, (uint16_t)flags, len };

	return h;
}

/* Bytes a variable-length record occupies once padded. */
static inline uint32_t hl_wire_padded(uint32_t bytes)
{
	return (bytes + 7u) & ~7u;
}

/* Smallest valid length of each fixed part, indexed by type; 0 = unknown. */
static inline uint32_t hl_wire_min_length(uint8_t type)
{
	switch (type) {
	case HL_REC_HELLO: return sizeof(struct hl_rec_hello);
	case HL_REC_BATCH: return sizeof(struct hl_rec_batch);
	case HL_REC_MODULE_LOAD: return sizeof(struct hl_rec_module_load);
	case HL_REC_MODULE_UNLOAD: return sizeof(struct hl_rec_module_unload);
	case HL_REC_STACK: return sizeof(struct hl_rec_stack);
	case HL_REC_ALLOC: return sizeof(struct hl_rec_alloc);
	case HL_REC_FREE: return sizeof(struct hl_rec_free);
	case HL_REC_REALLOC: return sizeof(struct hl_rec_realloc);
	case HL_REC_THREAD_START:
	case HL_REC_THREAD_END: return sizeof(struct hl_rec_thread);
	case HL_REC_FORK: return sizeof(struct hl_rec_fork);
	case HL_REC_EXIT: return sizeof(struct hl_rec_exit);
	case HL_REC_LIVE: return sizeof(struct hl_rec_live);
	case HL_REC_ERROR: return sizeof(struct hl_rec_error);
	case HL_REC_DROPPED: return HL_REC_DROPPED_V1_BYTES;
	case HL_REC_CHECK: return sizeof(struct hl_rec_check);
	case HL_REC_EXEC: return sizeof(struct hl_rec_exec);
	case HL_REC_OPTIONS: return sizeof(struct hl_rec_options);
	case HL_REC_FATAL: return sizeof(struct hl_rec_fatal);
	case HL_REC_SPAWN: return sizeof(struct hl_rec_spawn);
	case HL_REC_FD_SUMMARY: return sizeof(struct hl_rec_fd_summary);
	case HL_REC_FD: return sizeof(struct hl_rec_fd);
	case HL_REC_TALLY: return sizeof(struct hl_rec_tally);
	default: return 0;
	}
}

#endif /* HEAPLEDGER_WIRE_H */
