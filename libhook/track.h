/*
 * libhook/track.h: declarations shared by the tracking files (track.c,
 * stack.c, emit_*.c, modules.c, exitpath.c). The allocator sees only the
 * hl_track_* entry points in internal.h.
 *
 * Lock order and every other concurrency rule: types.h, "Concurrency".
 */
#ifndef HL_TRACK_H
#define HL_TRACK_H

#include <sys/types.h>

#include "internal.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define HL_TICKS_FLAGS HL_HOOK_TICKS_TSC
#else
#include <time.h>
#define HL_TICKS_FLAGS 0u
#endif

/* The wire clock (wire.h): TSC cycles on x86-64, else monotonic ns. */
HL_INLINE uint64_t hl_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* ---- stack.c: capture and interning -------------------------------------- */

/* An interned stack; immutable once its id is published, but for the
 * stack memo's steps (stackmemo.c), written once after it, see memo_steps. */
struct hl_stack {
	uint64_t hash;      /* of depth and frames */
	uint32_t id;        /* 1.., dense, in order of first use */
	uint16_t depth;     /* frames[] entries */
	uint8_t truncated;  /* the real stack was deeper */
	_Atomic uint8_t memo_steps; /* HL_MEMO_STEPS_*: state of the steps */
	uint64_t frames[];  /* return addresses, innermost first; then depth
			     * uint16_t steps (hl_stack_steps) */
};
#define HL_MEMO_STEPS_NONE 0u    /* not learned yet */
#define HL_MEMO_STEPS_WRITING 1u /* one thread is writing them */
#define HL_MEMO_STEPS_READY 2u   /* written (release): read after an acquire */

/* Where the return address of frame j lies on the stack, in words above the
 * slot of frame j - 1 (j >= 1): the size of the frame between them. */
HL_INLINE uint16_t *hl_stack_steps(const struct hl_stack *s)
{
	return (uint16_t *)(uintptr_t)&s->frames[s->depth];
}

/* Finds the hook's own text so captures start at the program's frame. */
void hl_stack_init(void);
/* The span of the loaded module that contains address; false if none. */
bool hl_stack_module_range(uintptr_t address, uintptr_t *lo, uintptr_t *hi);

/* The span [*lo, *hi) of a loaded object's PT_LOAD segments; *hi is 0 if it
 * has none (modules.c). */
struct dl_phdr_info;
void hl_phdr_load_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

/* Most frames of the hook itself between an allocation function's caller
 * and the capture (both stack.c's unwind and stackmemo.c's walk skip them). */
#define HL_OWN_FRAMES_MAX 16
/* The raw walk's room for a capture of max frames: the hook's own frames
 * too, and one more, which tells whether the stack was cut. */
#define HL_CAPTURE_RAW(max) ((max) + HL_OWN_FRAMES_MAX + 1)

/* Captures the caller's stack without the hook's frames: at most `max`
 * (<= HL_WIRE_MAX_FRAMES) frames into `frames`, walking into `raw`, which
 * has HL_CAPTURE_RAW(max) entries; returns how many and sets *truncated
 * when there were more. */
unsigned hl_stack_capture(uint64_t *frames, void **raw, unsigned max, bool *truncated);
/* A second thread is about to exist (threadstart.c, exitpath.c): libunwind
 * bound on this thread's stack, before a thread on a small one needs it. */
void hl_stack_threads_begin(void);

/* Where frames[0..depth), a stack just captured by this thread, lie on its
 * stack, by libunwind's walk of it: visit(arg, j, slot) for frame j = 0, 1,
 * ... in order, slot the address of its return address (the word the call
 * pushed), 0 where the unwinder cannot say (the pc a signal interrupted),
 * until visit returns false, the stack ends or a frame is not frames[j].
 * Nothing on a small signal alternate stack. The stack memo learns its
 * steps from it: a frame's slot found by value may be a stale copy below. */
void hl_stack_slots(const uint64_t *frames, unsigned depth,
		    bool (*visit)(void *arg, unsigned j, uintptr_t slot), void *arg);

/* ---- capbuf.c: each thread's capture buffers, off the program's stack ----- */

struct hl_capture_buf {
	uint64_t frames[HL_WIRE_MAX_FRAMES];
	void *raw[HL_CAPTURE_RAW(HL_WIRE_MAX_FRAMES)];
};
/* This thread's buffers for one capture, until hl_capture_buf_give; NULL
 * when it cannot have them (in use by the capture a signal handler
 * interrupted, no memory, the thread has ended): the caller then captures
 * at most HL_STACK_SMALL_DEPTH frames into buffers on its stack (1.2 KiB,
 * which fits what the kernel's signal frame leaves of an 8 KiB SIGSTKSZ
 * alternate stack). */
struct hl_capture_buf *hl_capture_buf_take(void);
void hl_capture_buf_give(struct hl_capture_buf *buf);
/* The thread is ending: its buffers are freed. */
void hl_capture_buf_thread_exit(void);
#define HL_STACK_SMALL_DEPTH 64
/* True for a code address inside libheapledger.so itself. */
extern uintptr_t hl_own_lo, hl_own_hi;
HL_INLINE bool hl_stack_is_own(uintptr_t ip)
{
	return ip >= hl_own_lo && ip < hl_own_hi;
}

/* ---- unwind_mask.c: libunwind's signal blocking, batched ------------------ */

/* Finds libunwind's text from one of its functions. */
void hl_unwind_mask_init(uintptr_t libunwind_function);
/* Around one unwind: begin returns whether it blocked every signal itself
 * (libunwind's own blocking is then answered without system calls); end
 * restores the mask if it did. */
bool hl_unwind_mask_begin(void);
/* The same for a walk that meets frames libunwind has not seen: it holds
 * whatever recent captures made (false only if blocking failed). */
bool hl_unwind_mask_begin_held(void);
void hl_unwind_mask_end(void);

/* ---- walk_gate.c: no walk of ours is under way when the process forks ----- */

/* Around a stack walk or a dl_iterate_phdr call made with none of the locks
 * fork's prepare handler takes: begin waits while a fork is being prepared;
 * false (and no end) in a child that must not walk at all. */
bool hl_walk_begin(void);
void hl_walk_end(void);
/* True in a child that must not walk (its parent's walk may hold a lock). */
bool hl_walks_off(void);

/* Returns the id of this frame sequence, interning it on first sight; 0
 * when the table cannot grow (out of memory). Lock-free when known. */
uint32_t hl_stack_intern(const uint64_t *frames, unsigned depth, bool truncated);
/* The stack with this id, or NULL. Valid for ids below hl_stack_next_id(). */
const struct hl_stack *hl_stack_get(uint32_t id);
/* One past the highest id published (acquire: hl_stack_get works for all
 * smaller ids). */
uint32_t hl_stack_next_id(void);
/* Captured stacks that could not be kept (their events carry stack 0). */
uint64_t hl_stack_lost(void);
/* One more of them: a capture that could not walk. */
void hl_stack_note_lost(void);
#ifdef HL_UNIT_TEST
/* Tests: interning a new stack fails as if out of memory while it is set. */
extern bool hl_stack_test_refuse;
#define hl_stack_refused() hl_stack_test_refuse
#else
#define hl_stack_refused() false
#endif
void hl_stack_fork_prepare(void);
void hl_stack_fork_parent(void);
void hl_stack_fork_child(void);

/* ---- stackmemo.c: per-thread memo of recent stacks ------------------------ */

/* Where the allocation's caller is: its return address and that address's
 * slot on the stack. valid is false when it could not be found. */
struct hl_stack_memo_key {
	uintptr_t ip0, slot0;
	uint64_t hash;  /* of ip0, slot0 and the next two return addresses */
	bool valid;
};
/* The id of the current stack if this thread's memo holds it and every
 * remembered return-address slot still holds the same address; else 0.
 * Fills *key for hl_stack_memo_fill. frame: the caller's
 * __builtin_frame_address(0), where the walk to the program's frame starts. */
uint32_t hl_stack_memo_lookup(struct hl_stack_memo_key *key, void *frame);
/* The first return address outside the hook (the program's call of
 * malloc or free), found as hl_stack_memo_lookup finds it; 0 when this
 * thread has no memo or the walk fails. */
uintptr_t hl_stack_memo_caller(void *frame);
/* Remembers stack `id`, just captured by libunwind, under *key. */
void hl_stack_memo_fill(struct hl_stack_memo_key *key, uint32_t id);
/* The thread is ending: its memo is freed. */
void hl_stack_memo_thread_exit(void);

/* Whether a thread consults its memo. The memo pays where allocation sites
 * repeat (churn, python3, sqlite3 hit it >90% of the time) and costs where
 * they do not: a miss pays the memo's probe and fill on top of libunwind.
 * On cc1 (48% hits) it made capture ~5% slower, although a fill costs
 * ~570 cycles and a hit saves ~1,000 (break-even ~36% on those figures
 * alone; they leave out the cache misses the memo's 39 KiB then added), so the
 * threshold is set at 58%, above the rate measured to lose. Each window of
 * HL_MEMO_WINDOW captures measures the hit rate, and below the threshold
 * the thread unwinds without the memo for HL_MEMO_PAUSE captures, then
 * measures again. */
#define HL_MEMO_WINDOW 4096u
#define HL_MEMO_MIN_HIT_PERCENT 58u
#define HL_MEMO_PAUSE (4u * HL_MEMO_WINDOW)
struct hl_memo_policy {
	uint32_t captures, hits; /* in the current window */
	uint32_t paused;         /* captures left without the memo */
};
/* At the end of a window: grows the thread's memo if its stacks do not fit
 * (stackmemo.c), else pauses it if its hit rate is below the threshold;
 * starts the next window. */
void hl_stack_memo_window(struct hl_memo_policy *p);
HL_INLINE bool hl_memo_policy_use(struct hl_memo_policy *m)
{
	if (hl_likely(m->paused == 0))
		return true;
	m->paused--;
	return false;
}
HL_INLINE void hl_memo_policy_record(struct hl_memo_policy *m, bool hit)
{
	m->hits += hit;
	if (hl_unlikely(++m->captures == HL_MEMO_WINDOW))
		hl_stack_memo_window(m);
}

/* ---- early.c: events before the hook's constructor ---------------------- */

/* Logs one event (1 alloc, 2 free, 3 realloc from address to new_address)
 * made before the constructor. */
void hl_early_record(unsigned op, uint64_t address, uint64_t new_address, uint64_t size,
		     uint32_t stack_id, unsigned kind);
/* Once connected: sends the logged events, then ALLOCs for the heap's blocks
 * the log does not hold live. False (nothing sent) if the log overflowed. */
bool hl_early_send(void);

/* ---- shared.c: the shared event-buffer area (wire.h) --------------------- */

#define HL_SHARED_SLOTS 256u /* threads with a recoverable buffer at once */

/* The area's memfd for HELLO to carry; the caller closes it. Creates the
 * area on the first call (slots of buffer_bytes rounded to pages, packed
 * events at data_offset, data_bytes of room, the thread's tally delta at
 * delta_offset); -1 if there is none. */
int hl_shared_fd_take(size_t buffer_bytes, uint32_t data_offset, uint32_t data_bytes,
		      uint32_t delta_offset);
/* A free slot (buffer_bytes, zeroed the first time), or NULL: the caller
 * uses private memory. Caller holds write_lock. */
void *hl_shared_slot_take_locked(void);
/* Frees `slot`; false if it is not a slot (private memory). write_lock. */
bool hl_shared_slot_give_locked(void *slot);
/* In a fork child, first: a memfd of its own at the same address, every
 * slot free but `keep`'s (its contents zero). false: the parent's pages are
 * still mapped (no memory): `keep` must not be written, no slot is given. */
bool hl_shared_fork_child(const void *keep);
/* Closes a fork child's memfd that no HELLO took. */
void hl_shared_fd_drop(void);
/* Buffers are in a memfd the reporter may read. */
bool hl_shared_is_shared(void);
/* The area's room for the tally (HL_TALLY_BYTES, zero until written), or
 * NULL without a shared area. */
void *hl_shared_tally(void);
/* Tells the reporter, through the area, why the hook goes on standalone
 * (enum hl_standalone); before the connection closes. write_lock. */
void hl_shared_note_standalone_locked(uint32_t why);
/* A fork child's blocks whose snapshot has not gone out yet, for a reporter
 * that reads the area after a kill (wire.h, HL_HOOK_FORK_SNAPSHOT). */
void hl_shared_note_unsent_inherited(uint64_t blocks);
/* The hook's own ending for a reporter that stopped reading (wire.h,
 * "The hook's own ending"): the standalone report's leak counts by class,
 * then how the process ends, which publishes them. No-ops without a shared
 * area (the hook never connected). */
void hl_shared_end_counts(bool scanned, const uint64_t *bytes, const uint64_t *blocks,
			  unsigned nclasses);
void hl_shared_end(unsigned how, int status);

/* ---- emit_*.c: per-thread buffers and the socket writer ------------------- */

/* Connects to the reporter at `path` and sends HELLO; false if it cannot. */
bool hl_emit_connect(const char *path, uint32_t origin, uint32_t ppid);
/* True while events are being sent (connected, EXIT not yet sent). A fork
 * child's deferred snapshot (wire.h, HL_HOOK_FORK_SNAPSHOT) goes out first:
 * ask only where something is about to be sent; else hl_emit_is_connected. */
bool hl_emit_is_live(void);
/* Connected and EXIT not yet sent, the snapshot sent or not; sends nothing. */
bool hl_emit_is_connected(void);
/* A fork child's snapshot still waits for its first record. */
bool hl_emit_is_deferred(void);
/* True if a connection was made and then lost. */
bool hl_emit_was_lost(void);
/* One event in this thread's buffer, packed (wire.h) and timed now;
 * nothing is sent when not connected (the event is counted as dropped if
 * the connection was lost). */
void hl_emit_alloc(uint64_t address, uint64_t size, uint32_t stack_id, unsigned kind);
void hl_emit_free(uint64_t address, unsigned kind);
void hl_emit_realloc(uint64_t old_address, uint64_t new_address, uint64_t size,
		     uint32_t stack_id);
/* Any other record of this thread (at most HL_PACK_MAX_RECORD bytes), as a
 * RECORD event. */
/* Sends the STACK records not sent yet (and modules), outside any batch:
 * with counting in the hook no batch may go out for a long time, and the
 * reporter symbolizes stacks as they come, during the run. */
void hl_emit_send_new_stacks(void);
/* Counts n events that will never be sent (told in the next DROPPED). */
void hl_emit_count_dropped(uint64_t n);
void hl_emit_record(const void *rec, uint32_t len);
/* Writes whole records from the calling thread outside any batch (module
 * records), under the write lock; false if the connection is gone. */
bool hl_emit_send_locked(const void *data, size_t len);
/* Whether the caller holds write_lock (debug builds check the owner; lock.h)
 * (the assertions of the _locked functions of other files that write_lock
 * guards: shared.c, modules.c). */
bool hl_emit_lock_is_held(void);
/* Sends what every thread has buffered (exec, exit). */
void hl_emit_flush_all(void);
/* Sends this thread's buffer, then THREAD_END; the thread's later events
 * are written one by one. */
void hl_emit_thread_exit(void);
/* Sends an ALLOC for every block allocated before the connection (by the
 * loader or by constructors that ran before ours, e.g. libstdc++'s
 * exception pool), so the reporter's live set matches the heap from the
 * start. Call right after connecting, with nothing else buffered. */
void hl_emit_send_early_blocks(void);
/* The same for the blocks for which known(address) is false. */
void hl_emit_send_heap_blocks_except(bool (*known)(uint64_t address));
/* This thread's tally delta, in its buffer (made if need be); NULL when it
 * has none (past hl_emit_thread_exit, no memory, not connected). */
struct hl_tally_delta;
struct hl_tally_delta *hl_emit_thread_delta(void);
/* fn on every thread's delta, write_lock held (the end of counting). */
void hl_emit_each_delta(void (*fn)(struct hl_tally_delta *d));
void hl_emit_each_delta_locked(void (*fn)(struct hl_tally_delta *d)); /* the caller holds it */
/* The end of counting while other threads run (the exit): under
 * write_lock, every buffer sent, then end(), then the record rec. From
 * end() on the other threads send their events, and no batch of theirs can
 * go out before rec: the reporter takes the tally's totals at rec, and an
 * event it had applied before would be overwritten (a free made after the
 * end then went missing: "reused blocks without their free"). */
void hl_emit_counting_end(void (*end)(void), const void *rec, uint32_t len);
/* The tally handed over (tally.c), TALLY in this thread's buffer: sends
 * the buffers, then the heap's blocks as ALLOC flagged HL_ALLOC_TALLIED. */
void hl_emit_tally_handed(void);
/* Sends the final LIVE set and EXIT, then closes; false if not connected. */
bool hl_emit_finish(unsigned how, int status);
uint64_t hl_emit_dropped(void);
void hl_emit_fork_prepare(void);
void hl_emit_fork_parent(void);
/* In the parent, after fork() returned `child`: a FORK record. */
void hl_emit_fork_record(pid_t child);
/* SPAWN for child, running path (flags: HL_SPAWN_FAILED or 0), when the
 * child is expected to report (hl_trace_expects_children). */
void hl_emit_spawn(pid_t child, const char *path, unsigned flags);
/* Before exec: every buffered event, then an EXEC record naming path. */
void hl_emit_exec(const char *path);
void hl_emit_fork_child(void);
/* Whether a listener running as peer_uid may receive a process of own_uid's
 * events: the same user, or root. */
bool hl_emit_peer_trusted(uint32_t peer_uid, uint32_t own_uid);
/* Test hook: use an already connected socket (socketpair) as the reporter. */
bool hl_emit_connect_fd(int fd, uint32_t origin, uint32_t ppid);

/* ---- modules.c ------------------------------------------------------------ */

/* Scans loaded objects; new ones get MODULE_LOAD, vanished ones
 * MODULE_UNLOAD. Cheap when nothing changed (dlpi_adds/dlpi_subs). Call
 * without tracking locks held. */
void hl_modules_scan(void);
/* Puts the records not yet sent on this connection into the stream's
 * scratch buffer (emit_conn.c), which the next send carries; write lock
 * held. */
bool hl_modules_put_locked(void);
/* A new connection: everything must be sent again. Write lock held. */
void hl_modules_reset_sent_locked(void);
void hl_modules_fork_prepare(void);
void hl_modules_fork_parent(void);
void hl_modules_fork_child(void);
/* Resolves dlopen/dlclose of the next object. */
void hl_modules_init(void);
/* Path of the main executable (readlink /proc/self/exe), "" if unknown. */
const char *hl_modules_exe_path(void);

/* ---- exitpath.c ----------------------------------------------------------- */

/* Resolves the real abort/exec functions; called from hl_track_init. */
void hl_exitpath_init(void);

#endif /* HL_TRACK_H */
