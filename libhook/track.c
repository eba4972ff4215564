/*
 * libhook/track.c: the hl_track_* entry points the allocator calls, and the
 * glue between capture (stack.c), the event stream (emit_*.c), modules
 * (modules.c) and the standalone leak list.
 *
 * Modes, fixed at hl_track_init:
 *  - capture on (depth > 0), reporter connected: stacks interned, events sent;
 *  - capture on, no reporter: stacks interned for the standalone leak list;
 *  - capture off (stacks=0), reporter connected: events with stack id 0;
 *  - capture off, no reporter: hl_track_enabled stays false, the allocator
 *    runs at its own speed.
 * Every entry point is re-entrancy guarded (libunwind and the dl* functions
 * may call malloc: those calls are served, not tracked) and keeps errno.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtv.h"
#include "heap.h"
#include "leakcheck.h"
#include "track.h"
#include "tally_hook.h"
#include "track_free.h"

#define PID_ENV HL_ENV_PID

/* On from the first allocation: those made before our constructor (by
 * other libraries' constructors) are tracked too (early.c); the constructor
 * then sets it from the options. */
bool hl_track_enabled = true;
bool hl_track_frees = true;
bool hl_free_tail_on = true;
bool hl_track_capture_on; /* track_free.h */
bool hl_track_ready;
/* $HEAPLEDGER_PID lets an exec'd image tell it is the same process (HELLO
 * origin EXEC). The reporter exports it as zeros ("0000000000"); each image
 * writes its pid over the digits in place, so neither setenv's lock (which
 * another thread of a forking parent may hold) nor an allocation (which
 * would show as an untracked live block) is needed. Unset: no detection. */
static char *pid_digits;
static size_t pid_width;

static void pid_env_set(void)
{
	unsigned long pid = (unsigned long)getpid(), rest = pid;
	size_t need = 1;
	while (rest /= 10)
		need++;
	if (pid_digits == NULL || need > pid_width)
		return;
	for (size_t i = pid_width; i-- > 0; pid /= 10)
		pid_digits[i] = (char)('0' + pid % 10);
}

static uint32_t origin_from_env(void)
{
	char *s = getenv(PID_ENV);
	unsigned long v = 0;
	if (s == NULL)
		return HL_ORIGIN_START;
	pid_digits = s;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned long)(*s - '0');
	pid_width = *s == '\0' ? (size_t)(s - pid_digits) : 0;
	return v == (unsigned long)getpid() ? HL_ORIGIN_EXEC : HL_ORIGIN_START;
}

void hl_track_init(void)
{
	if (hl_track_ready)
		return;
	hl_track_ready = true;
	int saved = errno;
	hl_guard_enter();
	hl_stack_init();
	hl_modules_init();
	hl_dtv_init();
	hl_exitpath_init();
	hl_track_capture_on = hl_options.stack_depth > 0;
	const char *path = hl_trace_off ? NULL : hl_env_get(HL_ENV_SOCKET);
	if (path && *path) {
		uint32_t origin = origin_from_env();
		pid_env_set();
		hl_modules_scan();
		if (hl_emit_connect(path, origin, (uint32_t)getppid())) {
			hl_tally_started();
			if (!hl_early_send())
				hl_emit_send_early_blocks();
			hl_emit_flush_all();
		}
	}
	hl_track_enabled = hl_track_capture_on || hl_emit_is_live();
	hl_track_frees_set(hl_emit_is_live());
	hl_guard_leave();
	errno = saved;
}

/* One libunwind walk into frames/raw (max frames, HL_CAPTURE_RAW(max)),
 * interned. fault_pc: a walk from a fatal signal's handler, which passes
 * the handler's frames and the signal trampoline before the interrupted pc:
 * the stack starts at pc (a walk that did not get through the signal frame
 * gives pc alone); 0 for an ordinary capture. Inlined: a frame less for
 * libunwind to walk on every capture. */
HL_INLINE uint32_t walk_intern(uint64_t *frames, void **raw, unsigned max, uintptr_t fault_pc)
{
	bool truncated = false;
	unsigned depth = 0, at = 0;
	if (!hl_walk_begin()) {
		if (fault_pc == 0) {
			hl_stack_note_lost(); /* a fork child that must not walk */
			return 0;
		}
	} else {
		depth = hl_stack_capture(frames, raw, max, &truncated);
		hl_walk_end();
	}
	if (fault_pc == 0)
		return hl_stack_intern(frames, depth, truncated);
	while (at < depth && frames[at] != fault_pc)
		at++;
	if (at == depth) {
		depth = 1;
		truncated = false;
	} else {
		memmove(frames, frames + at, (depth - at) * sizeof(frames[0]));
		depth -= at;
	}
	frames[0] = fault_pc + 1;
	return hl_stack_intern(frames, depth, truncated);
}

/* No buffers of the thread's (capbuf.c): a small pair on the stack, so a
 * capture nested in another (from a signal handler, perhaps on a small
 * alternate stack) stays within what that stack has. */
static HL_NOINLINE uint32_t walk_small(unsigned max, uintptr_t fault_pc)
{
	uint64_t frames[HL_STACK_SMALL_DEPTH];
	void *raw[HL_CAPTURE_RAW(HL_STACK_SMALL_DEPTH)];
	return walk_intern(frames, raw, max < HL_STACK_SMALL_DEPTH ? max : HL_STACK_SMALL_DEPTH,
			   fault_pc);
}

/* The capture's buffers are the thread's, off the program's stack: at
 * depth=256 they were 4 KiB of it per capture. */
static HL_NOINLINE uint32_t walk(uintptr_t fault_pc)
{
	unsigned max = hl_options.stack_depth; /* > 0: capture is on */
	struct hl_capture_buf *b = hl_capture_buf_take();
	if (hl_unlikely(b == NULL))
		return walk_small(max, fault_pc);
	uint32_t id = walk_intern(b->frames, b->raw, max, fault_pc);
	hl_capture_buf_give(b);
	return id;
}

static uint32_t capture_unwind(void)
{
	return walk(0);
}

/* stack_cache=2: a memo hit that libunwind disagrees with is reported
 * (the first one: the tests only need to know there was one). */
static HL_NOINLINE void memo_verify(uint32_t memo_id)
{
	static _Atomic bool warned;
	uint32_t id = capture_unwind();
	if (id != memo_id && !atomic_exchange(&warned, true))
		hl_warn("stack cache returned a different stack than libunwind "
			"(stack_cache=0 turns the cache off)", NULL);
}

static HL_TLS struct hl_memo_policy tls_memo_policy;

/* capture's paths that make system calls (libunwind's reads, the stack
 * table's and the memo's memory, a STACK sent), with errno kept: a memo
 * hit makes none, so the allocation need not save errno around it. */
static HL_NOINLINE uint32_t capture_unwind_keep_errno(void)
{
	int saved = errno;
	uint32_t id = capture_unwind();
	errno = saved;
	return id;
}

static HL_NOINLINE uint32_t capture_miss(struct hl_stack_memo_key *key, uint32_t hit)
{
	int saved = errno;
	uint32_t id = hit;
	if (hit)
		memo_verify(hit);
	else
		hl_stack_memo_fill(key, id = capture_unwind());
	errno = saved;
	return id;
}

/* The thread's stack memo first (stackmemo.c), libunwind on a miss; only
 * libunwind while the memo does not pay (stack_cache=2, which checks every
 * hit, always uses it). Keeps errno. Inline: a call of its own cost each
 * allocation a frame (~12 instructions). */
HL_INLINE uint32_t capture(void)
{
	struct hl_stack_memo_key key;
	uint32_t id;
	bool checked = hl_unlikely(hl_options.stack_cache > 1);
	if (hl_unlikely(hl_options.stack_cache == 0) ||
	    (!checked && !hl_memo_policy_use(&tls_memo_policy)))
		return capture_unwind_keep_errno();
	id = hl_stack_memo_lookup(&key, __builtin_frame_address(0));
	hl_memo_policy_record(&tls_memo_policy, id != 0);
	if (hl_likely(id != 0 && !checked))
		return id;
	return capture_miss(&key, id);
}

/* An event before our constructor: the stack with the default depth (the
 * options are not read yet), always by a full unwind (no memo yet), and the
 * event logged for the reporter (early.c). */
static HL_NOINLINE uint32_t early_event(unsigned op, void *p, void *new_p, size_t size,
					unsigned kind)
{
	uint32_t id = 0;
	if (!hl_guard_enter())
		goto out_leave;
	int saved = errno;
	hl_stack_init();
	if (op != 2 && hl_options.stack_depth > 0)
		id = capture_unwind();
	hl_early_record(op, (uintptr_t)p, (uintptr_t)new_p, size, id, kind);
	errno = saved;
out_leave:
	hl_guard_leave();
	return id;
}

/* own_cache: p came off this thread's cache (emit_event.h, event_ticks). */
HL_INLINE uint32_t track_alloc(void *p, size_t size, unsigned kind, bool own_cache)
{
	uint32_t id = 0;
	if (hl_unlikely(!hl_track_ready))
		return early_event(1, p, NULL, size, kind);
	if (!hl_guard_enter())
		goto out_leave;
	/* errno: capture keeps it off a memo hit, hl_emit_alloc where it makes
	 * a system call, and a memo hit makes none (8 instructions an
	 * allocation, saved here). */
	if (hl_track_capture_on)
		id = capture();
	if (!hl_tally_counts() || !hl_tally_take_alloc((uintptr_t)p, size, id, kind))
		hl_emit_alloc_inline((uintptr_t)p, size, id, kind, own_cache);
out_leave:
	hl_guard_leave();
	return id;
}

void hl_track_frees_set(bool on)
{
	hl_track_frees = on;
	__atomic_store_n(&hl_free_tail_on, on || __atomic_load_n(&hl_multithreaded, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

uint32_t hl_track_alloc(void *p, size_t size, unsigned kind)
{
	return track_alloc(p, size, kind, false);
}

void *hl_track_alloc_block(void *p, size_t size, unsigned kind)
{
	hl_range_set_stack(hl_range_of(p), track_alloc(p, size, kind, true));
	return p;
}

void hl_track_free_early(void *p, unsigned kind)
{
	early_event(2, p, NULL, 0, kind);
}

void hl_track_free(void *p, unsigned kind, uintptr_t caller)
{
	hl_track_free_inline(p, kind, caller);
}

uint32_t hl_track_free_stack(void)
{
	uint32_t id = 0;
	if (hl_guard_enter() && hl_track_capture_on) {
		int saved = errno;
		id = capture();
		errno = saved;
	}
	hl_guard_leave();
	return id;
}

uint32_t hl_track_caller_stack(uintptr_t ip)
{
	uint32_t id = 0;
	uint64_t frame = ip;
	if (hl_guard_enter() && hl_track_capture_on && ip) {
		int saved = errno;
		id = hl_stack_intern(&frame, 1, true);
		errno = saved;
	}
	hl_guard_leave();
	return id;
}

uint32_t hl_track_error_stack(void)
{
	uint32_t id = 0;
	if (hl_guard_enter() && hl_track_capture_on) {
		int saved = errno;
		id = capture_unwind();
		errno = saved;
	}
	hl_guard_leave();
	return id;
}

uint32_t hl_track_fault_stack(uintptr_t pc)
{
	uint32_t id = 0;
	if (hl_guard_enter() && hl_track_capture_on) {
		int saved = errno;
		id = walk(pc);
		errno = saved;
	}
	hl_guard_leave();
	return id;
}

uint32_t hl_track_realloc(void *old_p, void *p, size_t size, size_t old_size, uint32_t old_id)
{
	uint32_t id = 0;
	if (hl_unlikely(!hl_track_ready))
		return early_event(3, old_p, p, size, HL_KIND_MALLOC);
	if (!hl_guard_enter())
		goto out_leave;
	int saved = errno;
	if (hl_track_capture_on)
		id = capture();
	if (hl_unlikely(hl_emit_is_deferred())) {
		/* A fork child's first event: its snapshot has the old block as
		 * fork left it, not the new one, whose REALLOC follows. */
		struct hl_snapshot_fix fix = { .skip = (uintptr_t)p, .address = (uintptr_t)old_p,
					       .size = old_size, .stack_id = old_id };
		hl_emit_fork_resolve(&fix);
	}
	if (!hl_tally_counts() ||
	    !hl_tally_take_realloc((uintptr_t)old_p, hl_dtv_block_reported(old_id, old_size), old_id,
				   (uintptr_t)p, size, id))
		hl_emit_realloc((uintptr_t)old_p, (uintptr_t)p, size, id);
	errno = saved;
out_leave:
	hl_guard_leave();
	return id;
}

void hl_track_thread_exit(void)
{
	int saved = errno;
	hl_guard_enter();
	hl_tally_thread_exit(); /* before its buffer goes */
	hl_emit_thread_exit();
	hl_stack_memo_thread_exit();
	hl_capture_buf_thread_exit();
	hl_guard_leave();
	errno = saved;
}

/* Called with no allocator lock held yet (init.c takes them after us). */
void hl_track_fork_prepare(void)
{
	hl_guard_enter();
	hl_emit_fork_prepare();
	hl_modules_fork_prepare();
	hl_stack_fork_prepare();
}

void hl_track_fork_parent(void)
{
	hl_stack_fork_parent();
	hl_modules_fork_parent();
	hl_emit_fork_parent();
	hl_guard_leave();
}

void hl_track_fork_child(void)
{
	hl_tally_fork_child();
	hl_stack_fork_child();
	hl_modules_fork_child();
	pid_env_set();
	hl_emit_fork_child();
	hl_track_enabled = hl_track_capture_on || hl_emit_is_connected();
	hl_track_frees_set(hl_emit_is_connected());
	hl_guard_leave();
}

bool hl_track_exit(unsigned how, int status)
{
	int saved = errno;
	hl_guard_enter();
	if (hl_emit_is_live())
		hl_modules_scan(); /* objects dlopen'd behind our back (e.g. by libc) */
	hl_leakcheck_lock();
	bool sent = hl_emit_finish(how, status);
	hl_leakcheck_unlock();
	uint64_t dropped = hl_emit_dropped();
	if (!sent && dropped) {
		struct hl_out out;
		hl_out_init(&out, hl_log_fd());
		hl_out_str(&out, "heapledger: the reporter went away; ");
		hl_out_u64_grouped(&out, dropped);
		hl_out_str(&out, " events were not sent\n");
		hl_out_flush(&out);
	}
	hl_guard_leave();
	errno = saved;
	return sent;
}

/* ---- standalone leak report ------------------------------------------------ */

/* The loss records and LEAK SUMMARY live in lossrec.c; the scan that
 * classifies them in scan.c, run from leakcheck.c. */
void hl_track_print_leaks(int fd, unsigned how)
{
	hl_leakcheck_print_exit(fd, how);
}
