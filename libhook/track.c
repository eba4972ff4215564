/*
 * libhook/track.c: the hl_track_* entry points the allocator calls, and the
 * glue between capture (stack.c), the event stream (emit.c), modules
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
#include <unistd.h>

#include "track.h"

#define PID_ENV HL_ENV_PID

/* On from the first allocation: those made before our constructor (by
 * other libraries' constructors) are tracked too (early.c); the constructor
 * then sets it from the options. */
bool hl_track_enabled = true;
static bool capture_on;
static bool initialized;
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
	if (initialized)
		return;
	initialized = true;
	int saved = errno;
	hl_guard_enter();
	hl_stack_init();
	hl_modules_init();
	hl_exitpath_init();
	capture_on = hl_options.stack_depth > 0;
	const char *path = hl_env_get(HL_ENV_SOCKET);
	if (path && *path) {
		uint32_t origin = origin_from_env();
		pid_env_set();
		hl_modules_scan();
		if (hl_emit_connect(path, origin, (uint32_t)getppid())) {
			if (!hl_early_send())
				hl_emit_send_early_blocks();
			hl_emit_flush_all();
		}
	}
	hl_track_enabled = capture_on || hl_emit_is_live();
	hl_guard_leave();
	errno = saved;
}

static HL_NOINLINE uint32_t capture_unwind(void)
{
	unsigned max = hl_options.stack_depth; /* > 0: capture is on */
	uint64_t frames[max];
	bool truncated;
	unsigned depth = hl_stack_capture(frames, max, &truncated);
	return hl_stack_intern(frames, depth, truncated);
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

/* The thread's stack memo first (stackmemo.c), libunwind on a miss; only
 * libunwind while the memo does not pay (stack_cache=2, which checks every
 * hit, always uses it). */
static uint32_t capture(void)
{
	struct hl_stack_memo_key key;
	uint32_t id;
	bool checked = hl_unlikely(hl_options.stack_cache > 1);
	if (hl_unlikely(hl_options.stack_cache == 0) ||
	    (!checked && !hl_memo_policy_use(&tls_memo_policy)))
		return capture_unwind();
	id = hl_stack_memo_lookup(&key);
	hl_memo_policy_record(&tls_memo_policy, id != 0);
	if (id) {
		if (checked)
			memo_verify(id);
		return id;
	}
	id = capture_unwind();
	hl_stack_memo_fill(&key, id);
	return id;
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

uint32_t hl_track_alloc(void *p, size_t size, unsigned kind)
{
	uint32_t id = 0;
	if (hl_unlikely(!initialized))
		return early_event(1, p, NULL, size, kind);
	if (!hl_guard_enter())
		goto out_leave;
	int saved = errno;
	if (capture_on)
		id = capture();
	hl_emit_alloc((uintptr_t)p, size, id, kind);
	errno = saved;
out_leave:
	hl_guard_leave();
	return id;
}

void hl_track_free(void *p, unsigned kind)
{
	if (hl_unlikely(!initialized)) {
		early_event(2, p, NULL, 0, kind);
		return;
	}
	if (!hl_guard_enter())
		goto out_leave;
	int saved = errno;
	hl_emit_free((uintptr_t)p, kind);
	errno = saved;
out_leave:
	hl_guard_leave();
}

uint32_t hl_track_error_stack(void)
{
	uint32_t id = 0;
	if (hl_guard_enter() && capture_on) {
		int saved = errno;
		id = capture_unwind();
		errno = saved;
	}
	hl_guard_leave();
	return id;
}

uint32_t hl_track_realloc(void *old_p, void *p, size_t size)
{
	uint32_t id = 0;
	if (hl_unlikely(!initialized))
		return early_event(3, old_p, p, size, HL_KIND_MALLOC);
	if (!hl_guard_enter())
		goto out_leave;
	int saved = errno;
	if (capture_on)
		id = capture();
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
	hl_emit_thread_exit();
	hl_stack_memo_thread_exit();
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
	hl_stack_fork_child();
	hl_modules_fork_child();
	pid_env_set();
	hl_emit_fork_child();
	hl_track_enabled = capture_on || hl_emit_is_live();
	hl_guard_leave();
}

bool hl_track_exit(unsigned how, int status)
{
	int saved = errno;
	hl_guard_enter();
	if (hl_emit_is_live())
		hl_modules_scan(); /* objects dlopen'd behind our back (e.g. by libc) */
	bool sent = hl_emit_finish(how, status);
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

/* ---- standalone leak list --------------------------------------------------- */

struct leak_group {
	uint32_t stack_id; /* 0: slot empty, or "no stack" when `blocks` > 0 */
	uint64_t bytes;
	uint64_t blocks;
};

struct leak_table {
	struct leak_group *groups;
	size_t mask;       /* slots - 1 */
	uint64_t bytes;    /* all live blocks */
	uint64_t blocks;
	struct leak_group overflow; /* blocks whose group did not fit */
};

/* Walk callback: no allocation, no dl* call (arena lock held). */
static void leak_add(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	struct leak_table *t = arg;
	t->bytes += size;
	t->blocks++;
	size_t i = (stack_id * 0x9e3779b1u) & t->mask;
	for (size_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
		struct leak_group *g = &t->groups[i];
		if (g->blocks == 0)
			g->stack_id = stack_id;
		if (g->stack_id == stack_id) {
			g->bytes += size;
			g->blocks++;
			return;
		}
	}
	t->overflow.bytes += size;
	t->overflow.blocks++;
}

static bool group_before(const struct leak_group *a, const struct leak_group *b)
{
	return a->bytes != b->bytes ? a->bytes > b->bytes : a->stack_id < b->stack_id;
}

/* Heapsort, largest first: no qsort, which may allocate. */
static void sift_down(struct leak_group *g, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && group_before(&g[child + 1], &g[child]))
			child++;
		if (!group_before(&g[child], &g[root]))
			return;
		struct leak_group tmp = g[root];
		g[root] = g[child];
		g[child] = tmp;
	}
}

static void sort_groups(struct leak_group *g, size_t n)
{
	/* A min-heap on "before" puts the smallest at the root; popping it to
	 * the end leaves the array largest first. */
	for (size_t i = n / 2; i-- > 0;)
		sift_down(g, i, n);
	for (size_t end = n; end > 1; end--) {
		struct leak_group tmp = g[0];
		g[0] = g[end - 1];
		g[end - 1] = tmp;
		sift_down(g, 0, end - 1);
	}
}

/* "==pid== ", as the lead's HEAP SUMMARY and valgrind print. */
static void line_start(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

/* dladdr scans a module's whole dynamic symbol table; the records share
 * most of their outer frames, so each address is looked up once. */
#define NAME_CACHE_SLOTS 2048u
struct name_cache_slot {
	uint64_t pc; /* 0: empty */
	int found;   /* dladdr's result */
	Dl_info info;
};

static int cached_dladdr(struct name_cache_slot *cache, uint64_t pc, Dl_info *info)
{
	/* pc - 1: a return address may already belong to the next function. */
	if (cache == NULL)
		return dladdr((void *)(uintptr_t)(pc - 1), info);
	struct name_cache_slot *slot =
		&cache[(pc * 0x9e3779b97f4a7c15u) >> 53]; /* 2048 slots: top 11 bits */
	if (slot->pc != pc) {
		slot->pc = pc;
		slot->found = dladdr((void *)(uintptr_t)(pc - 1), &slot->info);
	}
	*info = slot->info;
	return slot->found;
}

static void print_frame(struct hl_out *out, struct name_cache_slot *cache, uint64_t pc,
			bool first)
{
	Dl_info info;
	line_start(out);
	hl_out_str(out, first ? "   at " : "   by ");
	hl_out_hex(out, pc);
	if (cached_dladdr(cache, pc, &info) == 0) {
		hl_out_str(out, ": ???\n");
		return;
	}
	hl_out_str(out, ": ");
	if (info.dli_sname) {
		hl_out_str(out, info.dli_sname);
		hl_out_str(out, "+");
		hl_out_hex(out, pc - (uintptr_t)info.dli_saddr);
	} else {
		hl_out_str(out, "???");
	}
	hl_out_str(out, " (");
	hl_out_str(out, info.dli_fname && *info.dli_fname ? info.dli_fname : "?");
	hl_out_str(out, "+");
	hl_out_hex(out, pc - (uintptr_t)info.dli_fbase);
	hl_out_str(out, ")\n");
}

void hl_track_print_stack(struct hl_out *out, uint32_t id)
{
	const struct hl_stack *s = id ? hl_stack_get(id) : NULL;
	if (s == NULL) {
		line_start(out);
		hl_out_str(out, "   (no stack captured)\n");
	}
	for (unsigned i = 0; s && i < s->depth; i++)
		print_frame(out, NULL, s->frames[i], i == 0);
}

static void print_group(struct hl_out *out, struct name_cache_slot *cache,
			const struct leak_group *g, size_t rank, size_t n)
{
	line_start(out);
	hl_out_u64_grouped(out, g->bytes);
	hl_out_str(out, " bytes in ");
	hl_out_u64_grouped(out, g->blocks);
	hl_out_str(out, " blocks still in use at exit in record ");
	hl_out_u64(out, rank);
	hl_out_str(out, " of ");
	hl_out_u64(out, n);
	hl_out_str(out, "\n");
	const struct hl_stack *s = hl_stack_get(g->stack_id);
	if (s == NULL) {
		line_start(out);
		hl_out_str(out, "   (no stack captured)\n");
	}
	for (unsigned i = 0; s && i < s->depth; i++)
		print_frame(out, cache, s->frames[i], i == 0);
	line_start(out);
	hl_out_str(out, s && s->truncated ? "   ... (deeper frames not captured)\n\n" : "\n");
}

void hl_track_print_leaks(int fd)
{
	int saved = errno;
	hl_guard_enter();
	size_t slots = 64;
	while (slots < 2 * (size_t)hl_stack_next_id() + 64)
		slots *= 2;
	struct leak_table t = { .groups = hl_meta_alloc(slots * sizeof(struct leak_group)),
				.mask = slots - 1 };
	if (t.groups == NULL)
		goto out_leave;
	hl_heap_walk(leak_add, &t);
	size_t n = 0;
	for (size_t i = 0; i < slots; i++)
		if (t.groups[i].blocks)
			t.groups[n++] = t.groups[i];
	sort_groups(t.groups, n);
	struct hl_out out;
	hl_out_init(&out, fd);
	line_start(&out);
	hl_out_str(&out, "LEAK LIST: ");
	hl_out_u64_grouped(&out, t.bytes);
	hl_out_str(&out, " bytes in ");
	hl_out_u64_grouped(&out, t.blocks);
	hl_out_str(&out, " blocks from ");
	hl_out_u64(&out, n);
	hl_out_str(&out, " allocation stacks\n");
	/* Without memory for the cache, every frame is looked up afresh. */
	struct name_cache_slot *cache =
		hl_meta_alloc(NAME_CACHE_SLOTS * sizeof(struct name_cache_slot));
	for (size_t i = 0; i < n && i < hl_options.max_leaks; i++)
		print_group(&out, cache, &t.groups[i], i + 1, n);
	if (cache)
		hl_meta_free(cache, NAME_CACHE_SLOTS * sizeof(struct name_cache_slot));
	if (n > hl_options.max_leaks) {
		line_start(&out);
		hl_out_str(&out, "(more records not shown; raise max_leaks=N)\n");
	}
	hl_out_flush(&out);
	hl_meta_free(t.groups, slots * sizeof(struct leak_group));
out_leave:
	hl_guard_leave();
	errno = saved;
}
