/*
 * reporter/ingest/finish.c: the end of a process: how it ended (EXIT, the
 * wait status the reporter reaped, or neither), what is left in its block
 * table reconciled, its loss records made; and the names of exit causes
 * and error calls for reports. Idempotent: hl_process_finish may run again.
 */
#include "state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "state_int.h"
#include "heapledger/tally.h"

/* ---- names -------------------------------------------------------------- */

const char *hl_exit_how_name(uint32_t how)
{
	static const char *const names[] = {
		[HL_EXIT_NORMAL] = "exit", [HL_EXIT_UNDERSCORE] = "_exit",
		[HL_EXIT_ABORT] = "abort", [HL_EXIT_SIGNAL] = "signal",
		[HL_EXIT_EXEC] = "exec", [HL_EXIT_UNKNOWN] = "unknown",
	};
	return how < HL_ARRAY_SIZE(names) ? names[how] : "unknown";
}

const char *hl_error_call_name(uint32_t call)
{
	static const char *const names[] = {
		[HL_CALL_FREE] = "free",
		[HL_CALL_REALLOC] = "realloc",
		[HL_CALL_USABLE_SIZE] = "malloc_usable_size",
		[HL_CALL_DELETE] = "delete",
		[HL_CALL_DELETE_ARRAY] = "delete[]",
		[HL_CALL_EXIT] = "exit",
		[HL_CALL_CHECK] = "leak check",
		[HL_CALL_READ] = "read",
		[HL_CALL_WRITE] = "write",
	};
	return call < HL_ARRAY_SIZE(names) ? names[call] : "unknown";
}

/* ---- the end of a process ------------------------------------------------ */

static void settle(struct hl_process *p, bool group);

void hl_process_closed(struct hl_process *p)
{
	p->closed = true;
	hl_run_note_stream_end(p->run, p);
	p->closed_mono_ns = hl_now_monotonic_ns();
	if (!p->end_realtime_ns)
		p->end_realtime_ns = hl_now_realtime_ns();
	/* A fork child of a hook that sends its own heap at fork: nothing
	 * reads its block table after its stream (its own children send
	 * theirs too), so its loss records are made now, while the table is
	 * in cache, and the table is freed. A shell's 400 command
	 * substitutions held 107 MiB of tables until the end of the run. */
	if (p->origin == HL_ORIGIN_FORK && (p->hook_flags & HL_HOOK_FORK_SNAPSHOT)) {
		/* A stream that ended on EXEC is an image exec replaced, which
		 * leaked nothing (hl_process_finish): its inherited blocks are
		 * not grouped into loss records only to be dropped. Each test a
		 * runner starts is such a child, with the runner's heap (ctest:
		 * 5,300 blocks). */
		settle(p, !p->exec_pending && !p->exec_successor);
		hl_table_destroy(&p->live);
	}
}

/* p's pid names a process that is not exiting: not a zombie, and without
 * PF_EXITING in /proc/PID/stat's flags (field 9), which the kernel sets
 * before it closes an exiting process's descriptors, so a process killed
 * while its stream ends is never taken for one that ran on. */
bool hl_process_runs_on(const struct hl_process *p)
{
	uint32_t pid = p->pid;
	char path[64], buf[1024], state;
	const char *rest;
	unsigned long flags;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	rest = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	if (!rest || sscanf(rest + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
		return false;
	return state != 'Z' && state != 'X' && state != 'x' && !(flags & 0x4 /* PF_EXITING */);
}

void hl_process_standalone(struct hl_process *p, bool ran_on, uint32_t stored)
{
	if (p->has_exit || p->exec_pending || p->exec_successor)
		p->standalone = HL_STANDALONE_NONE;
	else if (stored != HL_STANDALONE_NONE)
		p->standalone = stored;
	else if (ran_on)
		p->standalone = HL_STANDALONE_DESCRIPTOR;
}

static const struct hl_reaped *reaped_for(const struct hl_run *run, uint32_t pid)
{
	for (size_t i = run->nreaped; i-- > 0;)
		if ((uint32_t)run->reaped[i].pid == pid)
			return &run->reaped[i];
	return NULL;
}

/* The allocations and frees its hook counted that never reached us (it
 * went on standalone and dropped them): dropped events, which the report
 * and the gate say make its data incomplete. Counted from the figures the
 * hook wrote at its exit against the events received, before those
 * replace them; a figure below ours (counted another way) adds nothing. */
static void count_unsent(struct hl_process *p, const struct hl_shared_ending *e)
{
	uint64_t unsent = (e->allocs > p->allocs ? e->allocs - p->allocs : 0) +
			  (e->frees > p->frees ? e->frees - p->frees : 0);

	if (p->standalone != HL_STANDALONE_NONE)
		hl_process_count_dropped(p, unsent);
}

void hl_process_count_dropped(struct hl_process *p, uint64_t n)
{
	p->dropped_events = p->dropped_events > UINT64_MAX - n ? UINT64_MAX : p->dropped_events + n;
}

/* How an image without an EXIT record ended. */
static void resolve_end(struct hl_process *p)
{
	const struct hl_reaped *r;

	if (p->has_exit)
		return;
	/* Replaced by exec: the new image said HELLO, or, when it reports
	 * nothing (not traced, LD_PRELOAD removed), the stream ended on EXEC. */
	if (p->exec_successor || p->exec_pending) {
		p->how = HL_EXIT_EXEC;
		p->status = 0;
		return;
	}
	/* Its hook went on standalone (the reporter stalled) and said at its
	 * exit how it ended (the wait status alone read as _exit) and what
	 * its heap was (the events received stop where it gave up). */
	if (p->hook_ending.ended) {
		const struct hl_shared_ending *e = &p->hook_ending;

		count_unsent(p, e);
		p->how = e->how;
		p->status = e->status;
		p->in_use_bytes = e->in_use_bytes;
		p->in_use_blocks = e->in_use_blocks;
		p->allocs = e->allocs;
		p->frees = e->frees;
		p->bytes_allocated = e->bytes_allocated;
		p->peak_bytes = e->peak_bytes;
		return;
	}
	r = reaped_for(p->run, p->pid);
	if (r && WIFSIGNALED(r->status)) {
		p->how = HL_EXIT_SIGNAL;
		p->status = WTERMSIG(r->status);
	} else if (r && WIFEXITED(r->status) && hl_standalone_never_connected(p->standalone)) {
		p->how = HL_EXIT_NORMAL; /* its status, whichever way it took */
		p->status = WEXITSTATUS(r->status);
	} else if (r && WIFEXITED(r->status)) {
		/* Exited without running the hook's exit path: _exit. */
		p->how = HL_EXIT_UNDERSCORE;
		p->status = WEXITSTATUS(r->status);
	} else {
		p->how = HL_EXIT_UNKNOWN;
		p->status = 0;
	}
}

/* A killed process whose hook counted (state.h, tally_state): its blocks
 * are known by stack, unclassified, each stack one loss record. */
static void group_tally(struct hl_process *p, struct hl_leak_grouping *groups)
{
	for (size_t i = 0; i < p->nstacks; i++) {
		struct hl_process_stack *s = &p->stacks[i];
		struct hl_leak_group *g;

		if (!s->live_blocks)
			continue;
		g = hl_grouping_get(groups, (uint32_t)i + 1, HL_CLASS_UNKNOWN);
		g->alloc_kind = s->tally_kind;
		g->by_realloc = s->tally_realloc;
		g->bytes += s->live_bytes;
		g->blocks += s->live_blocks;
		s->leaked_bytes = s->live_bytes;
		s->leaked_blocks = s->live_blocks;
	}
	if (p->tally_unknown_blocks) {
		struct hl_leak_group *g = hl_grouping_get(groups, 0, HL_CLASS_UNKNOWN);

		g->bytes += p->tally_unknown_bytes;
		g->blocks += p->tally_unknown_blocks;
	}
}

/* Groups the outstanding blocks by (stack, class) into loss records. */
static void group_leaks(struct hl_process *p)
{
	struct hl_leak_grouping groups;

	hl_grouping_init(&groups);
	if (p->tally_state == HL_TALLY_COUNTING)
		group_tally(p, &groups);
	for (struct hl_block *b = hl_table_next(&p->live, NULL); b;
	     b = hl_table_next(&p->live, b)) {
		struct hl_leak_group *g;
		struct hl_process_stack *s = hl_process_stack(p, b->stack_id);

		if (b->flags & HL_BLOCK_FREED)
			continue;
		g = hl_grouping_get(&groups, b->stack_id, b->leak_class);
		if (!g->blocks) {
			g->alloc_kind = b->kind;
			g->by_realloc = (b->flags & HL_BLOCK_REALLOC) != 0;
		}
		g->bytes += b->size;
		g->blocks++;
		g->inherited_blocks += (b->flags & HL_BLOCK_INHERITED) != 0;
		if (s) {
			s->leaked_bytes += b->size;
			s->leaked_blocks++;
		}
	}
	for (size_t i = 0; i < p->nlive_indirect; i++) {
		const struct hl_live_indirect *ind = &p->live_indirect[i];
		const struct hl_block *b = hl_table_find(&p->live, ind->address);
		struct hl_leak_group *g;

		if (!b || (b->flags & HL_BLOCK_FREED))
			continue;
		g = hl_grouping_find(&groups, b->stack_id, b->leak_class);
		if (g)
			g->indirect_bytes += ind->bytes;
	}
	p->leaks = hl_grouping_sorted(&groups, &p->nleaks);
	hl_grouping_destroy(&groups);
}

/* With a LIVE set from the hook, blocks it did not list were freed in ways
 * we did not see (lost events): drop them, counted as a mismatch. */
static void trust_live_set(struct hl_process *p)
{
	struct hl_block *b = hl_table_next(&p->live, NULL);

	while (b) {
		if (!(b->flags & (HL_BLOCK_LIVE_SEEN | HL_BLOCK_FREED))) {
			p->live_mismatch++;
			p->live_only_blocks--; /* freed without a FREE we saw */
			hl_state_live_remove(p, b);
			hl_table_remove(&p->live, b);
		}
		b = hl_table_next(&p->live, b); /* removal moves no entry */
	}
}

/* Every free matches exactly one allocation, so whatever the order of
 * arrival the counts must balance: frees = allocations (own, inherited, or
 * only known from LIVE) - blocks live at the end. The difference is what
 * the stream left unexplained. */
static void count_inconsistencies(struct hl_process *p)
{
	uint64_t expected = p->allocs + p->inherited_at_fork + p->live_only_blocks;

	expected = expected > p->in_use_blocks ? expected - p->in_use_blocks : 0;
	p->unmatched_frees = p->frees > expected ? p->frees - expected : 0;
	p->unfreed_superseded = expected > p->frees ? expected - p->frees : 0;
}

/* What the end of a process makes of its block table: the hook's exit set
 * trusted, the inconsistencies counted, and (group) the outstanding blocks
 * grouped into loss records. Needs only what the stream said (EXIT, LIVE),
 * not how the process ended. */
/* The loss records of a process whose hook went on standalone: its own
 * counts by class, which it took at exit (its report, printed where the
 * program runs, has their stacks), as one record per class without a stack.
 * The events received stop where the hook gave up: a block freed after
 * that would count as leaked. */
static void group_hook_counts(struct hl_process *p)
{
	struct hl_leak_grouping groups;
	const struct hl_shared_ending *e = &p->hook_ending;

	hl_grouping_init(&groups);
	for (uint8_t c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		struct hl_leak_group *g;

		if (!e->blocks[c])
			continue;
		g = hl_grouping_get(&groups, 0, c);
		g->bytes = e->bytes[c];
		g->blocks = e->blocks[c];
	}
	p->leaks = hl_grouping_sorted(&groups, &p->nleaks);
	hl_grouping_destroy(&groups);
}

static void settle(struct hl_process *p, bool group)
{
	if (p->settled)
		return;
	p->settled = true;
	if (p->live_seen && p->has_exit)
		trust_live_set(p);
	count_inconsistencies(p);
	if (group && p->hook_ending.ended && p->hook_ending.counted)
		group_hook_counts(p);
	else if (group)
		group_leaks(p);
}

/* Undoes group_leaks (an image replaced by exec leaked nothing). */
static void ungroup_leaks(struct hl_process *p)
{
	free(p->leaks);
	p->leaks = NULL;
	p->nleaks = 0;
	for (size_t i = 0; i < p->nstacks; i++)
		p->stacks[i].leaked_bytes = p->stacks[i].leaked_blocks = 0;
}

void hl_process_finish(struct hl_process *p)
{
	if (p->finished)
		return;
	p->finished = true;
	resolve_end(p);
	/* exec replaced the image and its heap with it: nothing leaked. A
	 * fork child that execs so never reports what it inherited. */
	if (!p->settled)
		settle(p, p->how != HL_EXIT_EXEC);
	else if (p->how == HL_EXIT_EXEC)
		ungroup_leaks(p);
	p->scanned = (p->live_scanned && p->has_exit) ||
		     (p->hook_ending.ended && p->hook_ending.counted && p->hook_ending.scanned);
	if (p->samples || p->events)
		hl_state_sample_take(p, p->sync_ticks[1] > 0 ? p->sync_ticks[1] : 0);
}
