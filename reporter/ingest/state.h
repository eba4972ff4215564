/*
 * reporter/ingest/state.h: what the reporter knows about each traced process while
 * it runs: outstanding blocks by address, interned stacks with per-stack
 * aggregates, modules, errors, a sampled heap timeline and how it ended.
 *
 * Ordering (wire.h "Clock" and "Threads"): records of one thread arrive in
 * order, but batches of different threads interleave, so for one address a
 * free may arrive before its alloc, or after the re-allocation of the same
 * address by another thread. The block table keeps, per address, the newest
 * event seen there (by ticks): a live allocation, or - once a second thread
 * has sent a batch - a tombstone saying when the address was freed. An event
 * older than the entry does not change the live set (an old allocation was
 * freed before the newer event; an old free freed an older allocation), so
 * whatever order batches arrive in, the live set at the end is exactly the
 * allocations that were the last event at their address. allocs, frees and
 * bytes allocated are exact event counts; peak and timeline follow arrival
 * order. Tombstones cost 32 bytes per freed address until it is reused, or
 * until no event older than them can still come (tombwatch.h); past
 * HL_TOMBSTONES_MAX the older half is dropped (bounded memory).
 *
 * Stack references inside the reporter are indexes into proc->stacks plus one
 * (0 = none), not wire ids: a forked child starts with a copy of its parent's
 * stacks, whose wire ids belong to the parent's connection.
 */
#ifndef HL_REPORTER_STATE_H
#define HL_REPORTER_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "heapledger/classes.h"
#include "heapledger/size_bins.h"
#include "heapledger/wire.h"
#include "leak_group.h"
#include "table.h"
#include "tombwatch.h"
#include "util.h"

struct hl_process_stack {
	uint32_t wire_id;         /* id on the defining connection, 0 if inherited */
	uint16_t depth;           /* frames */
	uint16_t truncated;       /* the real stack was deeper */
	uint32_t point;           /* index + 1 of its newest hl_process.points entry, 0: none */
	uint32_t tracked_since;   /* 1 + the sample its series starts at, 0: untracked */
	uint64_t seq;             /* record number at definition (module choice) */
	uint64_t *frames;         /* depth return addresses, innermost first */
	uint64_t frames_hash;     /* hl_stack_frames_hash(frames, depth), taken while
				   * they are in cache: the store's key for the stack */
	uint64_t allocs;          /* blocks allocated from this stack */
	uint64_t bytes;           /* bytes allocated from this stack */
	uint64_t frees;           /* of those, blocks freed */
	uint64_t temporaries;     /* of those frees, temporary ones (hl_process.last_alloc) */
	uint64_t live_bytes;      /* bytes outstanding now */
	uint64_t live_blocks;     /* blocks outstanding now */
	uint64_t peak_live_bytes; /* highest live_bytes */
	/* live_bytes at the process's peak (hl_process.peak_gen): kept when the
	 * stack first changes after a new peak, so while at_peak_gen is not
	 * the process's peak_gen it is live_bytes itself (hl_stack_at_peak) */
	uint64_t at_peak_bytes;
	uint64_t at_peak_gen;
	uint64_t leaked_bytes;    /* outstanding at the end (set by finish) */
	uint64_t leaked_blocks;
	uint8_t tally_kind;       /* counted by the hook: its first block's kind */
	bool tally_realloc;       /* and its blocks were made by realloc */
};

struct hl_module {
	uint32_t wire_id;       /* id on the defining connection, 0 if inherited */
	uint32_t build_id_len;  /* bytes in build_id */
	uint8_t build_id[HL_WIRE_MAX_BUILD_ID];
	char *path;             /* as the hook saw it */
	uint64_t base;          /* load bias */
	uint64_t low, high;     /* mapped address range */
	uint64_t load_seq;      /* record number of MODULE_LOAD */
	uint64_t unload_seq;    /* record number of MODULE_UNLOAD, 0 = loaded */
};

struct hl_error_event {
	uint32_t kind;           /* enum hl_error_kind */
	uint32_t stack;          /* stack index + 1 where it happened */
	uint32_t alloc_stack;    /* the block's allocation stack */
	uint32_t free_stack;     /* the block's free stack */
	uint64_t address;        /* pointer the program passed */
	uint64_t block_address;  /* related block, 0 if none */
	uint64_t block_size;
	uint64_t ticks;
	uint32_t call;           /* enum hl_error_call */
	uint32_t alloc_kind;     /* enum hl_alloc_kind of the block */
	uint64_t detail;         /* SIZE_MISMATCH: the size delete was given */
};

/* A descriptor open at exit (FD record, track_fds). */
struct hl_fd_event {
	int32_t fd;
	uint32_t stack;          /* stack index + 1 where it was made, 0: none */
	uint32_t kind;           /* enum hl_fd_kind */
	uint32_t family;         /* a socket's AF_*, 0: unknown */
	uint32_t flags;          /* HL_FD_INHERITED, HL_FD_UNSEEN */
	const char *text;        /* path or a socket's addresses (arena), "" none */
};

struct hl_sample {
	uint64_t ticks;         /* when */
	uint64_t in_use_bytes;  /* heap in use then */
	uint64_t in_use_blocks;
};
#define HL_TOMBSTONES_MAX (1u << 19) /* ~26 MiB of remembered frees */
#define HL_TIMELINE_MAX 4096 /* samples kept; older ones thinned by half */

/* A stack's bytes in use at one timeline sample: the per-site series
 * behind "heap consumed over time by the top functions". Series are kept
 * for the HL_TRACKED_STACKS stacks with the highest peak in use so far
 * (hl_process.tracked): a stack that enters the set starts its series
 * there (what it held before is the chart's "other"), one that leaves it
 * ends its series. A tracked stack has a point for a sample only if it
 * changed since the sample before (its value holds until its next point);
 * the entry for the sample not taken yet (index nsamples) follows every
 * change. So a change costs a compare and a store, at most
 * HL_TRACKED_STACKS points a sample (4 MiB for a full timeline). */
struct hl_stack_point {
	uint32_t sample;          /* index into hl_process.samples */
	uint32_t stack;           /* stack index (reference - 1) */
	uint64_t bytes;           /* its live_bytes when that sample was taken */
};
#define HL_TRACKED_STACKS 64

/* One leak group: blocks still outstanding at the end with the same
 * allocation stack and class. */
struct hl_leak_group {
	uint32_t stack;            /* stack index + 1, 0 = none */
	uint8_t leak_class;        /* enum hl_leak_class */
	uint8_t alloc_kind;        /* enum hl_alloc_kind of its first block (one call site) */
	bool by_realloc;           /* its first block was made by realloc */
	uint64_t bytes;            /* of the blocks themselves ("direct") */
	uint64_t indirect_bytes;   /* of blocks lost only through these (0 unless the
				    * scan attributes them) */
	uint64_t blocks;
	uint64_t inherited_blocks; /* of those, copied from the parent at fork */
	char fingerprint[17];      /* leak site (fingerprint.h), set by hl_policy_apply */
	const char *suppression;   /* name of the matching suppression, or NULL */
	const char *site_function; /* the site's innermost program function, or NULL */
};

/* One loss record of an on-demand check, with what changed since the
 * process's check before (valgrind's leak_check increased: "16 (+16) bytes
 * in 1 (+1) blocks"); a record the check before did not have is new whole. */
struct hl_check_record {
	struct hl_leak_group g;      /* stack, class, bytes, indirect bytes, blocks */
	uint64_t rank;               /* loss record number among all of the check's, 1 = smallest */
	int64_t new_bytes;           /* direct bytes since the check before */
	int64_t new_indirect_bytes;
	int64_t new_blocks;
};

/* Loss records kept per check: a check holds a record per (stack, class),
 * as many as the process has allocation stacks; a program checked often
 * would otherwise keep (and store) all of them again at every check. The
 * records that changed since the check before come first, then the
 * largest; the report says how many were not kept. */
#define HL_CHECK_RECORDS_MAX 1000
/* Threads named per scan that could not be stopped (wire.h). */
#define HL_UNSTOPPED_TIDS_MAX HL_WIRE_MAX_UNSTOPPED_TIDS

/* An on-demand leak check (heapledger_check_leaks(), check_signal=): the
 * live blocks at that moment, totalled by class and grouped into loss
 * records (the LIVE set the hook sent, flagged HL_LIVE_CHECK, closed by a
 * CHECK record). */
struct hl_check {
	uint32_t seq;              /* 1, 2, ... per process image */
	uint32_t flags;            /* HL_CHECK_* */
	uint64_t ticks;            /* when the scan stopped the threads */
	bool scanned;              /* its classes come from the scan */
	uint64_t bytes[HL_CLASS_SUPPRESSED + 1];  /* by enum hl_leak_class */
	uint64_t blocks[HL_CLASS_SUPPRESSED + 1];
	struct hl_check_record *records; /* loss record order, at most HL_CHECK_RECORDS_MAX */
	size_t nrecords;
	uint64_t records_total;    /* loss records the check had, kept or not */
	uint32_t unstopped_tids[HL_UNSTOPPED_TIDS_MAX]; /* threads that did not stop */
	uint32_t nunstopped_tids;
	bool suppressions_counted;  /* suppressed records moved to the suppressed totals */
};

struct hl_run;
struct hl_stack_sym;

struct hl_process {
	struct hl_run *run;
	uint64_t serial;          /* order of HELLO within the run, from 1 */
	uint64_t parent_serial;   /* the parent's serial, 0 if none */
	int64_t db_id;            /* processes.id once stored, 0 before */
	uint32_t pid, ppid;
	uint32_t origin;          /* enum hl_origin */
	uint32_t hook_flags;      /* HL_HOOK_* */
	uint32_t stack_depth;     /* frames the hook captures at most */
	uint64_t run_id;          /* from HELLO */
	uint64_t start_realtime_ns, end_realtime_ns;
	uint64_t closed_mono_ns;  /* when the connection ended, 0 while open */
	char *exe;
	char **argv;              /* argc strings */
	uint32_t argc;
	const char *test_name;    /* $HEAPLEDGER_TEST_NAME of the process (arena), or NULL */
	uint32_t options_given;   /* HL_OPTIONS_*: the keys its HEAPLEDGER_OPTIONS set (OPTIONS) */
	uint32_t max_leaks;       /* with HL_OPTIONS_MAX_LEAKS: its max_leaks */
	struct hl_process *parent;   /* fork parent or exec predecessor, or NULL */
	struct hl_process *exec_successor; /* image that replaced this one */
	/* Its executable, kept when the two are detached (a daemon reports an
	 * image on its own, while its successor may still run). (arena) */
	const char *exec_successor_exe;
	const char *exec_pending;    /* EXEC was the last record: the path exec was given (arena) */
	bool exec_traced;            /* and it was flagged HL_EXEC_TRACED */

	struct hl_table live;        /* newest event per address: block or tombstone */
	bool reordering;             /* a second thread sent a batch */
	uint32_t first_tid;          /* tid of the first BATCH */
	uint64_t tombstones;         /* freed addresses remembered in `live` */
	uint64_t tombstones_dropped; /* forgotten to bound memory */
	uint64_t tombstones_forgotten; /* forgotten once no older event could come */
	struct hl_tombwatch tombwatch; /* when tombstones may go (tombwatch.h) */
	uint64_t stale_allocs;       /* allocations older than their address's entry */
	uint64_t inherited_at_fork;  /* blocks copied from the parent */
	uint64_t live_only_blocks;   /* net blocks only the LIVE set knew of */

	struct hl_process_stack *stacks;     /* nstacks, index + 1 is the stack reference */
	size_t nstacks, stacks_cap;
	uint32_t *stack_by_wire;     /* wire id -> stack index + 1 */
	size_t stack_by_wire_cap;
	struct hl_module *modules;
	size_t nmodules, modules_cap;
	struct hl_error_event *errors;
	size_t nerrors, errors_cap;
	struct {                     /* FD_SUMMARY: descriptors open at exit (wire.h) */
		bool seen;           /* the hook tracked descriptors (track_fds) */
		bool all;            /* 0, 1 and 2 listed too */
		uint32_t open, std;  /* open at exit; of them 0, 1 and 2 */
	} fd_summary;
	struct hl_fd_event *fds;     /* FD records, in the hook's order (newest first) */
	size_t nfds, fds_cap;
	struct hl_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t sample_every;       /* events between samples */
	uint64_t sample_countdown;   /* events until the next sample */
	struct hl_stack_point *points; /* per-stack series, in sample order */
	size_t npoints, points_cap;
	uint32_t tracked[HL_TRACKED_STACKS]; /* stack indexes with a series */
	uint64_t tracked_last[HL_TRACKED_STACKS]; /* bytes of each one's newest point;
						   * UINT64_MAX: none since it entered */
	uint32_t ntracked;
	uint64_t track_floor;        /* at most the lowest peak_live_bytes of a tracked
				      * stack once the set is full; 0 before */
	uint64_t events;             /* allocs + frees seen */

	uint64_t allocs, frees, bytes_allocated;
	struct hl_size_bins sizes;   /* those allocations by size (size_bins.h) */
	/* Temporary allocations as heaptrack counts them: a block whose free
	 * comes right after its allocation, no allocation or free of the same
	 * thread in between (realloc is a free, then an allocation). Kept per
	 * thread, since threads' batches interleave in no fixed order:
	 * last_alloc is the address of the current batch's thread's latest
	 * event if that event was an allocation, else 0; the other threads'
	 * wait in last_allocs (a thread's entry goes at its THREAD_END). */
	uint64_t temporaries;
	uint64_t last_alloc;
	uint32_t last_alloc_tid;     /* whose last_alloc it is (0: none yet) */
	struct hl_last_alloc {
		uint32_t tid;
		uint64_t address;
	} *last_allocs;
	size_t nlast_allocs, last_allocs_cap;
	uint64_t in_use_bytes, in_use_blocks, peak_bytes;
	uint64_t peak_gen;           /* new peaks of in_use_bytes so far (hl_stack_at_peak) */
	uint64_t inherited_bytes, inherited_blocks;
	uint64_t dropped_events;     /* DROPPED records summed */
	uint64_t dropped_stacks;     /* DROPPED.stacks summed: allocations left without a stack */
	uint64_t seq;                /* records processed */
	uint64_t threads;            /* THREAD_START records */
	uint64_t events_sent;        /* from EXIT */

	/* inconsistencies found by the reconciler, reported at the end */
	uint64_t unmatched_frees;    /* frees whose alloc never arrived */
	uint64_t unfreed_superseded; /* allocs replaced by a newer one, free never seen */
	uint64_t live_mismatch;      /* blocks the hook's LIVE set and ours disagree on */

	/* indirect bytes the exit LIVE set gave its clique leaders, by address */
	struct hl_live_indirect {
		uint64_t address, bytes;
	} *live_indirect;
	size_t nlive_indirect, live_indirect_cap;
	bool live_seen;              /* LIVE records arrived */
	bool live_scanned;           /* they carry reachability classes */
	bool live_unstopped;         /* a thread did not stop for that scan (HL_LIVE_UNSTOPPED) */
	uint32_t unstopped_tids[HL_UNSTOPPED_TIDS_MAX]; /* which, from EXIT (wire.h) */
	uint32_t nunstopped_tids;
	bool scanned;                /* the exit set was scanned (set by finish) */
	bool has_exit;               /* EXIT arrived */
	struct {                     /* FATAL: the signal that ended it (wire.h) */
		uint32_t signal;     /* 0: none arrived */
		int32_t code;        /* si_code */
		uint64_t address;    /* fault address */
		uint32_t stack;      /* stack index + 1, 0 = none */
	} fatal;
	/* Counting in the hook (wire.h): the hook's counts were taken at this
	 * enum hl_tally_state (0: not); COUNTING means at the end of a stream
	 * without TALLY (killed): its blocks are then known by stack only, and
	 * those of stacks never received are tally_unknown_*. */
	uint32_t tally_state;
	uint64_t tally_events;       /* of `events`, those counted in the hook */
	uint64_t tally_unknown_bytes, tally_unknown_blocks;
	bool shared_buffers;         /* ended without EXIT, and its hook's shared event
	                              * buffers were read (recover.h) */
	uint64_t recovered_events;   /* events read from them */
	uint32_t standalone;         /* enum hl_standalone: why its hook went on
	                              * standalone (hl_process_standalone) */
	struct hl_shared_ending hook_ending; /* ended without EXIT: how its hook, gone on
	                              * standalone, said it ended (wire.h); ended 0: none */
	bool closed;                 /* connection ended */
	bool settled;                /* loss records made (settle) */
	bool finished;               /* hl_process_finish ran */
	uint32_t how;                /* enum hl_exit_how */
	int32_t status;              /* exit status or signal number */

	bool clock_synced;
	uint64_t sync_ticks[2], sync_mono[2], sync_real[2]; /* first, latest BATCH */

	struct hl_check *checks;     /* on-demand leak checks, in order */
	size_t nchecks, checks_cap;
	struct hl_check check_open;  /* the set being received (before its CHECK) */
	struct hl_leak_grouping check_groups; /* its loss records */
	struct hl_leak_grouping check_prev;   /* the previous check's, for what is new */

	/* stack index -> the stack symbolized, in the symbolizer's memo of the
	 * run's distinct stacks (stack_memo.h), filled on first use */
	const struct hl_stack_sym **stack_syms;
	size_t nstack_syms;
	uint64_t stack_syms_of;      /* the memo's serial, 0: none yet */
	uint32_t stack_syms_layout;  /* the memo's id of the process's modules, 0: none */
	uint32_t *stack_syms_module_ids; /* module index -> the symbolizer's module id */

	struct hl_leak_group *leaks; /* after finish, in loss record order
				      * (valgrind's: largest last) */
	size_t nleaks;
	struct hl_bump arena;       /* strings and frames */
};

/* Wait status of a process that the reporter reaped. */
struct hl_reaped {
	pid_t pid;
	int status;
};

/* How a process heard of from its parent's side came to be. */
enum hl_birth {
	HL_BIRTH_FORK,  /* FORK: a copy of its parent, HELLO origin FORK */
	HL_BIRTH_SPAWN, /* SPAWN: a new image from its start, HELLO origin START */
	HL_BIRTH_EXEC,  /* EXEC flagged HL_EXEC_TRACED: the same pid, HELLO origin EXEC */
};

/* A process heard of from one side only: the parent's FORK or SPAWN record
 * (for an exec: the old image's stream ending on EXEC), or the child's
 * HELLO (origin FORK; a START child's HELLO is kept in hl_run.started
 * instead). The other side's arrival forgets it; a parent's note left alone
 * at the end is a process that never connected (not observed). */
struct hl_fork_note {
	uint32_t ppid, pid;          /* an exec's: the image's pid, twice */
	enum hl_birth birth;
	bool from_parent;            /* the parent's side came, HELLO not yet; else the reverse */
	uint64_t realtime_ns;        /* when it was heard of */
	char *exe;                   /* from_parent: the image it runs, as far as known (malloc'd) */
};

struct hl_run {
	struct hl_process **procs;   /* every image that sent HELLO, in order */
	size_t nprocs, procs_cap;
	struct hl_fork_note *forks;  /* forks heard of from one side only */
	size_t nforks, forks_cap;
	/* HELLOs of origin START, keyed ppid << 32 | pid: 1 while no SPAWN
	 * named the child, 0 once one did (a START child whose parent does not
	 * report, or ran it by system(), is never named: kept as 1). */
	struct hl_map started;
	struct hl_reaped *reaped;    /* wait statuses we know */
	size_t nreaped, reaped_cap;
	/* Reads and processes what is already buffered for connections of pid,
	 * so a fork child or exec image sees its parent's records first. */
	void (*drain)(void *ctx, uint32_t pid);
	void *drain_ctx;
	uint64_t run_id;             /* HEAPLEDGER_RUN we set, 0 if none */
	uint64_t next_serial;        /* serials handed out (never reused) */
	/* Set before the first record: the return addresses of equal stacks
	 * are kept once for the run (a fork child sends its parent's stacks
	 * again: a shell's 400 children held 27 MiB of copies), instead of in
	 * each process's arena. For `heapledger run`: the copies are the run's
	 * distinct stacks and stay until it ends, after the processes that
	 * sent them are freed; not a daemon's, which has no end. */
	bool share_frames;
	struct hl_map frames_by_hash; /* stack hash -> [depth, frames...] (a pointer) */
	struct hl_bump frames_arena;
};

void hl_run_init(struct hl_run *run);
/* A fork of child pid by ppid, heard of from the parent's FORK record
 * (exe: the parent's image) or, from_parent false, the child's HELLO. */
void hl_run_note_fork(struct hl_run *run, uint32_t ppid, uint32_t pid, const char *exe,
		      bool from_parent);
/* A SPAWN record of ppid's: child pid runs `path` (HL_SPAWN_FAILED in
 * flags: it does not, forget it). */
void hl_run_note_spawn(struct hl_run *run, uint32_t ppid, const struct hl_rec_spawn *rec);
/* p's stream ended: when on an EXEC flagged HL_EXEC_TRACED whose image has
 * not said HELLO yet, that image is expected. */
void hl_run_note_stream_end(struct hl_run *run, const struct hl_process *p);
/* At the end of the run: each process that its parent's side named but
 * that never said HELLO (a fork child, a spawned program, an exec'd image
 * that lost LD_PRELOAD or HEAPLEDGER_SOCKET, is static or setuid, or whose
 * connection failed) becomes a process of the run that heapledger did not
 * observe (no exit record, standalone HL_STANDALONE_UNOBSERVED,
 * _UNSPAWNED or _UNEXECED), so the report and the gate say so rather than
 * pass it. Returns how many. */
size_t hl_run_add_unobserved(struct hl_run *run);
void hl_run_destroy(struct hl_run *run);
void hl_run_note_reaped(struct hl_run *run, pid_t pid, int status);
/* Frees the blocks, tables and stacks of a finished process that was stored
 * (daemon mode), keeping it out of run->procs. */
void hl_run_forget(struct hl_run *run, struct hl_process *p);
/* Takes p (finished) out of the run without freeing it, so another thread
 * may report and store it: nothing in the run points at it any more, and it
 * points at nothing in the run (see parent_serial). hl_process_destroy frees
 * it afterwards. */
void hl_run_detach(struct hl_run *run, struct hl_process *p);
void hl_process_destroy(struct hl_process *p);

/* Decoder sink: ctx is a `struct hl_conn_state *`. */
struct hl_shared_view;
struct hl_decoder;
struct hl_conn_state {
	struct hl_run *run;
	struct hl_process *proc; /* set by HELLO */
	/* The connection's shared event buffers and decoder, or NULL: tell
	 * which threads have nothing unsent (tombwatch.h). */
	const struct hl_shared_view *shared;
	const struct hl_decoder *decoder;
};
int hl_state_record(void *ctx, const struct hl_wire_header *rec);
/* Sets up d to decode a connection's records into cs: sink, events sink
 * and hints. */
void hl_state_decoder_init(struct hl_decoder *d, struct hl_conn_state *cs);
/* Decoder events sink (hl_decode_events_fn): the packed events of a batch,
 * applied as their full-size records would be by hl_state_record. */
struct hl_event;
int hl_state_events(void *ctx, const struct hl_event *ev, size_t n);
/* At the end of a stream without EXIT: a process whose hook counted and
 * never handed its counts over has them taken from its tally (the stacks of
 * the tally's log first). */
void hl_state_tally_end(struct hl_conn_state *cs, struct hl_decoder *d);
/* Decoder hint (hl_decode_hint_fn): prefetches the block table slots an
 * ALLOC, FREE or REALLOC record ahead will look up, once the table is too
 * large for the caches (false before: the hints would cost more). */
bool hl_state_hint(void *ctx, const struct hl_wire_header *rec);

/* The connection of p closed. A fork child whose hook sent its heap at
 * fork (HL_HOOK_FORK_SNAPSHOT) has its loss records made and its block
 * table freed then: nothing reads it afterwards. */
void hl_process_closed(struct hl_process *p);
/* p's process still runs and is not exiting (/proc/PID/stat). */
bool hl_process_runs_on(const struct hl_process *p);
/* At the end of p's stream without EXIT: why its hook went on standalone,
 * `stored` as the hook left it in the shared area (hl_recover_standalone),
 * else HL_STANDALONE_DESCRIPTOR when the process `ran_on`: the program
 * closed or replaced the descriptor before its hook noticed. ran_on is
 * asked first: a hook that notices later stores why before its process
 * exits, so it is read then. */
void hl_process_standalone(struct hl_process *p, bool ran_on, uint32_t stored);
/* n events p's hook never sent (the report says its data is incomplete). */
void hl_process_count_dropped(struct hl_process *p, uint64_t n);
/* Decides how p ended, reconciles what is left, groups the leaks. Idempotent. */
void hl_process_finish(struct hl_process *p);
/* ticks -> CLOCK_REALTIME ns, using the BATCH clock pairs. */
uint64_t hl_process_ticks_to_realtime(const struct hl_process *p, uint64_t ticks);
/* A hash of depth return addresses, never 0. */
uint64_t hl_stack_frames_hash(const uint64_t *frames, uint32_t depth);
/* What stack s held when p's heap in use reached its peak (peak_bytes, the
 * first moment it got there, in arrival order). */
static inline uint64_t hl_stack_at_peak(const struct hl_process *p,
					const struct hl_process_stack *s)
{
	return s->at_peak_gen == p->peak_gen ? s->at_peak_bytes : s->live_bytes;
}
/* Stack by reference (index + 1), or NULL for 0/out of range. */
struct hl_process_stack *hl_process_stack(const struct hl_process *p, uint32_t ref);
/* The module containing address as seen when stack was defined, or NULL. */
const struct hl_module *hl_process_module_for(const struct hl_process *p,
					      uint64_t address, uint64_t seq);

/* Name of an exit how / error call for reports (classes and error kinds:
 * heapledger/classes.h). */
const char *hl_exit_how_name(uint32_t how);
const char *hl_error_call_name(uint32_t call); /* enum hl_error_call */

#endif /* HL_REPORTER_STATE_H */
