/*
 * reporter/model/report.c: builds the report model from finished processes.
 */
#define _GNU_SOURCE /* sigabbrev_np */
#include "report.h"
#include "from_live.h"
#include "gate.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack_memo.h"
#include "state.h"

void hl_report_init(struct hl_report *r)
{
	memset(r, 0, sizeof(*r));
	hl_bump_init(&r->arena);
	r->mode = "run";
	r->exit_code = -1;
	r->view.show_kinds = HL_SHOW_DEFAULT;
	r->gate_kinds = HL_GATE_KINDS_DEFAULT;
}

struct kind_word {
	const char *name;
	unsigned bits;
};

/* ORs the bits of each comma-separated word of value into *bits; false at
 * the first word that is not in the table. */
static bool parse_kind_words(const char *value, const struct kind_word *words, size_t nwords,
			     unsigned *bits)
{
	*bits = 0;
	while (*value) {
		size_t n = strcspn(value, ","), i;

		for (i = 0; i < nwords; i++)
			if (strlen(words[i].name) == n && !strncmp(words[i].name, value, n))
				break;
		if (i == nwords)
			return false;
		*bits |= words[i].bits;
		value += n + (value[n] == ',');
	}
	return true;
}

const char *hl_report_parse_kinds(const char *value, void *out)
{
	static const struct kind_word words[] = {
		{ "definite", HL_SHOW_DEFINITE }, { "indirect", HL_SHOW_INDIRECT },
		{ "possible", HL_SHOW_POSSIBLE }, { "reachable", HL_SHOW_REACHABLE },
		{ "suppressed", HL_SHOW_SUPPRESSED }, { "all", HL_SHOW_ALL }, { "none", 0 },
	};
	unsigned bits;

	if (!*value)
		return "give definite,indirect,possible,reachable, all or none";
	if (!parse_kind_words(value, words, HL_ARRAY_SIZE(words), &bits))
		return "kinds are definite, indirect, possible, reachable, suppressed, "
		       "all or none";
	*(unsigned *)out = bits; /* untouched by a wrong value */
	return NULL;
}

const char *hl_report_parse_kind_filter(const char *value, void *out)
{
	enum {
		ALL = 1u << HL_CLASS_DEFINITE | 1u << HL_CLASS_INDIRECT | 1u << HL_CLASS_POSSIBLE |
		      1u << HL_CLASS_REACHABLE | 1u << HL_CLASS_UNKNOWN | 1u << HL_CLASS_SUPPRESSED,
	};
	static const struct kind_word words[] = {
		{ "definite", 1u << HL_CLASS_DEFINITE }, { "definitely", 1u << HL_CLASS_DEFINITE },
		{ "indirect", 1u << HL_CLASS_INDIRECT }, { "indirectly", 1u << HL_CLASS_INDIRECT },
		{ "possible", 1u << HL_CLASS_POSSIBLE }, { "possibly", 1u << HL_CLASS_POSSIBLE },
		{ "reachable", 1u << HL_CLASS_REACHABLE }, { "unknown", 1u << HL_CLASS_UNKNOWN },
		{ "suppressed", 1u << HL_CLASS_SUPPRESSED }, { "all", ALL },
	};
	unsigned bits;

	if (!*value)
		return "give definite, indirect, possible, reachable, unknown, suppressed or all";
	if (!parse_kind_words(value, words, HL_ARRAY_SIZE(words), &bits))
		return "kinds are definite, indirect, possible, reachable, unknown, "
		       "suppressed or all";
	*(unsigned *)out = (bits & ALL) == ALL ? 0 : bits; /* 0: no filter */
	return NULL;
}

bool hl_report_check_record_grew(const struct hl_report_check_record *rec, unsigned mode)
{
	if (mode == HL_CHECK_RECORDS_ANY)
		return true;
	if (mode == HL_CHECK_RECORDS_CHANGED)
		return rec->new_bytes || rec->new_indirect_bytes || rec->new_blocks;
	return rec->new_bytes > 0 || rec->new_indirect_bytes > 0 || rec->new_blocks > 0;
}

const char *hl_report_parse_check_records(const char *value, void *out)
{
	if (!strcmp(value, "increased"))
		*(unsigned *)out = HL_CHECK_RECORDS_INCREASED;
	else if (!strcmp(value, "changed"))
		*(unsigned *)out = HL_CHECK_RECORDS_CHANGED;
	else if (!strcmp(value, "any"))
		*(unsigned *)out = HL_CHECK_RECORDS_ANY;
	else
		return "must be increased, changed or any";
	return NULL;
}

const char *hl_report_parse_show_reachable(const char *value, void *out)
{
	if (!strcmp(value, "yes"))
		*(unsigned *)out = HL_SHOW_ALL;
	else if (!strcmp(value, "no"))
		*(unsigned *)out = HL_SHOW_DEFAULT;
	else
		return "must be yes or no";
	return NULL;
}

void hl_report_destroy(struct hl_report *r)
{
	hl_report_json_forget(r);
	free(r->procs);
	hl_bump_free(&r->arena);
	memset(r, 0, sizeof(*r));
}

struct hl_report_process *hl_report_new_process(struct hl_report *r)
{
	struct hl_report_process *rp;

	hl_grow((void **)&r->procs, &r->procs_cap, r->nprocs, sizeof(*r->procs));
	rp = &r->procs[r->nprocs++];
	memset(rp, 0, sizeof(*rp));
	rp->recovered_events = -1;
	return rp;
}

/* Stack stack_ref of p symbolized, at most max_frames frames (0: all). */
static void stack_of(struct hl_process *p, uint32_t stack_ref, struct hl_symbolizer *sym,
		     unsigned max_frames, struct hl_report_stack *out)
{
	const struct hl_stack_sym *s = hl_stack_memo_get(sym, p, stack_ref);
	bool truncated;

	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	/* The run's one copy of the stack's frames (stack_memo.h), shared by
	 * every loss record and process that has the stack; nothing writes to
	 * a report's frames. */
	out->frames = (struct hl_frame_info *)s->frames;
	out->nframes = hl_stack_sym_shown(s, max_frames, &truncated);
	out->truncated = truncated;
	out->key = (uint64_t)(uintptr_t)s; /* the memo's, for the run */
}

void hl_report_describe_end(const struct hl_report_process *p, char *buf, size_t len)
{
	if (!strcmp(p->how, "exit"))
		snprintf(buf, len, "exited with status %d", p->status);
	else if (!strcmp(p->how, "_exit"))
		snprintf(buf, len, "exited with status %d (_exit: no exit handlers ran)", p->status);
	else if (!strcmp(p->how, "abort"))
		snprintf(buf, len, "aborted");
	else if (!strcmp(p->how, "signal"))
		snprintf(buf, len, "killed by signal %d (%s)", p->status, strsignal(p->status));
	else if (!strcmp(p->how, "exec") && p->exec_path)
		snprintf(buf, len, "replaced by exec of %s%s", p->exec_path,
			 p->exec_untracked ? " (not tracked)" : "");
	else if (!strcmp(p->how, "exec"))
		snprintf(buf, len, "replaced by exec%s", p->exec_untracked ? " (not tracked)" : "");
	else
		snprintf(buf, len, "ended without an exit record (unknown)");
}

const char *hl_report_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;

	if (!sig)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "SIG%s", abbrev ? abbrev : "?");
	return buf;
}

bool hl_report_not_scanned(const struct hl_report_process *p, char *buf, size_t len)
{
	if (p->scanned || !strcmp(p->how, "exec") || !p->in_use_blocks)
		return false;
	if (!strcmp(p->how, "exit"))
		snprintf(buf, len, "the hook ran no leak scan at exit");
	else
		hl_report_describe_end(p, buf, len);
	return true;
}

/* enum hl_standalone, every spelling of it: its name (JSON, database), and
 * the sentence the gate prints (and the text report's warning begins with). */
#define UNSEEN_WHY                                                                   \
	" (its environment lost LD_PRELOAD or HEAPLEDGER_SOCKET, it is static or setuid," \
	" or its connection failed; run it under --exclude to leave it out)"
#define STANDALONE(name, words) \
	{ name, "data missing: the hook went on standalone after " words }
static const struct {
	const char *name, *sentence;
} standalone_table[HL_STANDALONE_COUNT] = {
	[HL_STANDALONE_STALLED] = STANDALONE("reporter_stalled",
					     "the reporter stopped reading for wait_ms"
					     " (HEAPLEDGER_OPTIONS, default 10 s)"),
	[HL_STANDALONE_LOST] = STANDALONE("connection_lost",
					  "its connection to the reporter failed mid-run"),
	[HL_STANDALONE_DESCRIPTOR] = STANDALONE("descriptor_taken",
						"the program closed or replaced (dup2) heapledger's"
						" descriptor"),
	[HL_STANDALONE_UNOBSERVED] = { "not_observed",
				       "not observed: a forked child its parent reported never"
				       " connected to heapledger (it lost HEAPLEDGER_SOCKET, or its"
				       " connection failed)" },
	[HL_STANDALONE_UNSPAWNED] = { "not_observed_spawn",
				      "not observed: a program its parent started (posix_spawn,"
				      " or vfork and exec) never connected to heapledger" UNSEEN_WHY },
	[HL_STANDALONE_UNEXECED] = { "not_observed_exec",
				     "not observed: the image an exec started never connected to"
				     " heapledger" UNSEEN_WHY },
	[HL_STANDALONE_CUT] = { "cut_by_reporter",
				"data missing: the reporter cut its connection: it held read"
				" buffer room inside a large record, finishing no record for the"
				" daemon's --stall-timeout-ms, while other programs waited for"
				" that room" },
};
#undef STANDALONE
#undef UNSEEN_WHY

const char *hl_report_standalone_sentence(uint32_t why)
{
	return why < HL_STANDALONE_COUNT ? standalone_table[why].sentence : NULL;
}

const char *hl_report_standalone_name(uint32_t why)
{
	return why < HL_STANDALONE_COUNT ? standalone_table[why].name : NULL;
}

const char *hl_report_standalone_names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t i = 1; i < HL_STANDALONE_COUNT && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s, ", standalone_table[i].name);
	if (used < len)
		snprintf(buf + used, len - used, "or null");
	return buf;
}

int hl_report_standalone_parse(const char *name)
{
	for (uint32_t i = 1; i < HL_STANDALONE_COUNT; i++)
		if (name && !strcmp(name, standalone_table[i].name))
			return (int)i;
	return -1;
}

bool hl_report_never_connected(const struct hl_report_process *p)
{
	return p->no_exit_record && hl_standalone_never_connected(p->standalone);
}

bool hl_report_stream_cut(const struct hl_report_process *p, char *buf, size_t len)
{
	const char *standalone = hl_report_standalone_sentence(p->standalone);
	char end[256];

	if (!p->no_exit_record)
		return false;
	if (hl_report_never_connected(p)) {
		snprintf(buf, len, "%s: nothing it did is known", standalone);
		return true;
	}
	if (standalone) {
		snprintf(buf, len, "%s; its event stream ended without its exit record, so what the"
			 " process allocated and freed after that is not known", standalone);
		return true;
	}
	if (!strcmp(p->how, "unknown"))
		snprintf(end, sizeof(end), "the connection closed; how the process ended is unknown");
	else if (!strcmp(p->how, "signal"))
		hl_report_describe_end(p, end, sizeof(end));
	else
		snprintf(end, sizeof(end), "it went on after the stream ended: it closed heapledger's"
			 " descriptor, or its hook went on standalone after the reporter stalled"
			 " for wait_ms, so what it allocated after that is not known");
	if (p->recovered_events >= 0)
		snprintf(buf, len, "the event stream ended without its exit record (%s): %lld"
			 " unsent events were read from its shared event buffers; an event being"
			 " written at that moment, and those of threads beyond the buffers' slots,"
			 " may be missing", end, (long long)p->recovered_events);
	else
		snprintf(buf, len, "the event stream ended without its exit record (%s): events"
			 " the hook had not sent yet are missing, so the latest allocations and"
			 " frees of its threads may not be counted and the blocks in use may be"
			 " off", end);
	return true;
}

static const char *origin_name(uint32_t origin)
{
	return origin == HL_ORIGIN_FORK ? "fork" : origin == HL_ORIGIN_EXEC ? "exec" : "start";
}

static void add_errors(struct hl_report *r, struct hl_report_process *rp,
		       struct hl_process *p, struct hl_symbolizer *sym,
		       unsigned max_frames)
{
	rp->nerrors = p->nerrors;
	rp->errors = hl_bump_alloc(&r->arena, p->nerrors * sizeof(*rp->errors));
	for (size_t i = 0; i < p->nerrors; i++) {
		const struct hl_error_event *e = &p->errors[i];
		struct hl_report_error *re = &rp->errors[i];

		re->kind = e->kind;
		re->call = hl_error_call_name(e->call);
		re->detail = e->detail;
		re->address = e->address;
		re->block_address = e->block_address;
		re->block_size = e->block_size;
		stack_of(p, e->stack, sym, max_frames, &re->stack);
		stack_of(p, e->alloc_stack, sym, max_frames, &re->alloc_stack);
		stack_of(p, e->free_stack, sym, max_frames, &re->free_stack);
	}
}

static void add_fds(struct hl_report *r, struct hl_report_process *rp, struct hl_process *p,
		    struct hl_symbolizer *sym, unsigned max_frames)
{
	rp->fd_summary.tracked = p->fd_summary.seen;
	rp->fd_summary.all = p->fd_summary.all;
	rp->fd_summary.open = p->fd_summary.open;
	rp->fd_summary.std = p->fd_summary.std;
	rp->nfds = p->nfds;
	rp->fds = hl_bump_alloc(&r->arena, (p->nfds + 1) * sizeof(*rp->fds));
	for (size_t i = 0; i < p->nfds; i++) {
		const struct hl_fd_event *e = &p->fds[i];
		struct hl_report_fd *f = &rp->fds[i];

		*f = (struct hl_report_fd){ .fd = e->fd, .kind = e->kind, .family = e->family,
					    .text = hl_bump_strdup(&r->arena, e->text),
					    .inherited = e->flags & HL_FD_INHERITED,
					    .unseen = e->flags & HL_FD_UNSEEN };
		stack_of(p, e->stack, sym, max_frames, &f->stack);
	}
}

/* The allocator frame valgrind puts first in a loss record's stack, as its
 * suppressions name it (mangled); the aligned C family by a pattern, as the
 * kind does not say which of memalign, posix_memalign, aligned_alloc. */
static const char *allocator_of(const struct hl_leak_group *g)
{
	static const char *const names[HL_KIND_COUNT] = {
		[HL_KIND_MALLOC] = "malloc",
		[HL_KIND_ALIGNED] = "*align*",
		[HL_KIND_NEW] = "_Znwm",
		[HL_KIND_NEW_ARRAY] = "_Znam",
		[HL_KIND_CALLOC] = "calloc",
		[HL_KIND_NEW_ALIGNED] = "_ZnwmSt11align_val_t",
		[HL_KIND_NEW_ARRAY_ALIGNED] = "_ZnamSt11align_val_t",
	};

	if (g->by_realloc)
		return "realloc";
	return g->alloc_kind < HL_KIND_COUNT ? names[g->alloc_kind] : NULL;
}

/* One loss record (an exit group or a check's), its stack symbolized. */
static void leak_of(struct hl_report *r, struct hl_process *p,
		    const struct hl_leak_group *g, struct hl_symbolizer *sym, unsigned max_frames,
		    struct hl_report_leak *l)
{
	l->leak_class = g->leak_class;
	l->bytes = g->bytes;
	l->indirect_bytes = g->indirect_bytes;
	l->blocks = g->blocks;
	l->inherited_blocks = g->inherited_blocks;
	l->suppression = g->suppression ? hl_bump_strdup(&r->arena, g->suppression) : NULL;
	l->suppressed = l->suppression || g->leak_class == HL_CLASS_SUPPRESSED;
	l->fingerprint = g->fingerprint[0] ? hl_bump_strdup(&r->arena, g->fingerprint) : NULL;
	l->allocator = allocator_of(g);
	stack_of(p, g->stack, sym, max_frames, &l->stack);
}

static uint32_t *tids_copy(struct hl_report *r, const uint32_t *tids, size_t n)
{
	uint32_t *v = hl_bump_alloc(&r->arena, (n + 1) * sizeof(*v));

	if (n)
		memcpy(v, tids, n * sizeof(*v));
	return v;
}

struct hl_report_process *hl_report_add_process(struct hl_report *r,
						 struct hl_process *p,
						 struct hl_symbolizer *sym,
						 unsigned max_frames)
{
	struct hl_report_process *rp = hl_report_new_process(r);

	rp->pid = p->pid;
	rp->ppid = p->ppid;
	rp->serial = p->serial;
	/* Copies: a daemon forgets the process before the report is gone. */
	rp->exe = hl_bump_strdup(&r->arena, p->exe);
	rp->argv = hl_bump_alloc(&r->arena, (p->argc + 1) * sizeof(*rp->argv));
	for (uint32_t i = 0; i < p->argc; i++)
		rp->argv[i] = hl_bump_strdup(&r->arena, p->argv[i]);
	rp->argc = p->argc;
	rp->origin = origin_name(p->origin);
	rp->how = hl_exit_how_name(p->how);
	rp->status = p->status;
	rp->started_ns = p->start_realtime_ns;
	rp->ended_ns = p->end_realtime_ns;
	rp->in_use_bytes = p->in_use_bytes;
	rp->in_use_blocks = p->in_use_blocks;
	rp->allocs = p->allocs;
	rp->frees = p->frees;
	rp->bytes_allocated = p->bytes_allocated;
	rp->peak_bytes = p->peak_bytes;
	rp->inherited_bytes = p->inherited_bytes;
	rp->inherited_blocks = p->inherited_blocks;
	rp->dropped_events = p->dropped_events;
	rp->dropped_stacks = p->dropped_stacks;
	rp->unmatched_frees = p->unmatched_frees;
	rp->unfreed_superseded = p->unfreed_superseded;
	rp->live_mismatch = p->live_mismatch;
	rp->scanned = p->scanned;
	rp->unstopped = p->scanned && p->live_unstopped;
	if (rp->unstopped) {
		rp->unstopped_tids = tids_copy(r, p->unstopped_tids, p->nunstopped_tids);
		rp->nunstopped_tids = p->nunstopped_tids;
	}
	rp->test_name = p->test_name ? hl_bump_strdup(&r->arena, p->test_name) : NULL;
	rp->max_leaks_given = p->options_given & HL_OPTIONS_MAX_LEAKS;
	rp->max_leaks = p->max_leaks;
	/* exec is no cut: the hook sends everything before it execs. */
	rp->no_exit_record = !p->has_exit && p->how != HL_EXIT_EXEC;
	rp->recovered_events = p->shared_buffers ? (int64_t)p->recovered_events : -1;
	rp->standalone = rp->no_exit_record ? p->standalone : HL_STANDALONE_NONE;
	const char *successor = p->exec_successor ? p->exec_successor->exe : p->exec_successor_exe;

	if (p->how == HL_EXIT_EXEC && (successor || p->exec_pending))
		rp->exec_path = hl_bump_strdup(&r->arena, successor ? successor : p->exec_pending);
	rp->exec_untracked = p->how == HL_EXIT_EXEC &&
			     (!successor || (p->exec_successor &&
					     p->exec_successor->standalone == HL_STANDALONE_UNEXECED));
	rp->nleaks = p->nleaks;
	rp->leaks = hl_bump_alloc(&r->arena, p->nleaks * sizeof(*rp->leaks));
	for (size_t i = 0; i < p->nleaks; i++)
		leak_of(r, p, &p->leaks[i], sym, max_frames, &rp->leaks[i]);
	add_errors(r, rp, p, sym, max_frames);
	add_fds(r, rp, p, sym, max_frames);
	if (p->fatal.signal) {
		rp->fatal.signal = (int32_t)p->fatal.signal;
		rp->fatal.code = p->fatal.code;
		rp->fatal.address = p->fatal.address;
		rp->fatal.fault = hl_wire_fault_words(p->fatal.signal, p->fatal.code);
		stack_of(p, p->fatal.stack, sym, max_frames, &rp->fatal.stack);
	}
	rp->ntimeline = p->nsamples;
	rp->timeline = hl_bump_alloc(&r->arena, (p->nsamples + 1) * sizeof(*rp->timeline));
	for (size_t i = 0; i < p->nsamples; i++)
		rp->timeline[i] = (struct hl_report_sample){
			hl_process_ticks_to_realtime(p, p->samples[i].ticks),
			p->samples[i].in_use_bytes, p->samples[i].in_use_blocks,
		};
	rp->nchecks = p->nchecks;
	rp->checks = hl_bump_alloc(&r->arena, (p->nchecks + 1) * sizeof(*rp->checks));
	for (size_t i = 0; i < p->nchecks; i++) {
		const struct hl_check *c = &p->checks[i];
		struct hl_report_check *rc = &rp->checks[i];

		rc->seq = c->seq;
		rc->by_signal = (c->flags & HL_CHECK_SIGNAL) != 0;
		rc->all_threads_stopped = !(c->flags & HL_CHECK_UNSTOPPED);
		rc->scanned = c->scanned;
		rc->time_ns = hl_process_ticks_to_realtime(p, c->ticks);
		memcpy(rc->bytes, c->bytes, sizeof(rc->bytes));
		memcpy(rc->blocks, c->blocks, sizeof(rc->blocks));
		rc->records_total = c->records_total;
		rc->nrecords = c->nrecords;
		rc->records = hl_bump_alloc(&r->arena, (c->nrecords + 1) * sizeof(*rc->records));
		for (size_t j = 0; j < c->nrecords; j++) {
			const struct hl_check_record *cr = &c->records[j];
			struct hl_report_check_record *out = &rc->records[j];

			leak_of(r, p, &cr->g, sym, max_frames, &out->leak);
			out->rank = cr->rank;
			out->new_bytes = cr->new_bytes;
			out->new_indirect_bytes = cr->new_indirect_bytes;
			out->new_blocks = cr->new_blocks;
		}
		rc->unstopped_tids = tids_copy(r, c->unstopped_tids, c->nunstopped_tids);
		rc->nunstopped_tids = c->nunstopped_tids;
	}
	return rp;
}

bool hl_report_error_is_access(const struct hl_report_error *e)
{
	return e->call && (!strcmp(e->call, "read") || !strcmp(e->call, "write"));
}

const char *hl_report_error_access_heading(const struct hl_report_error *e, char *buf,
					   size_t len)
{
	const char *what = hl_error_access_heading(!strcmp(e->call, "write") ? HL_CALL_WRITE
									     : HL_CALL_READ);
	if (e->detail)
		snprintf(buf, len, "%s of size %llu", what, (unsigned long long)e->detail);
	else
		snprintf(buf, len, "%s", what);
	return buf;
}

const char *hl_report_error_access_where(const struct hl_report_error *e, char *buf,
					 size_t len)
{
	bool freed = e->kind == HL_ERROR_USE_AFTER_FREE;
	uint64_t end = e->block_address + e->block_size;
	const char *place = "inside";
	uint64_t offset = e->address - e->block_address;
	if (e->address < e->block_address) {
		place = "before";
		offset = e->block_address - e->address;
	} else if (e->address >= end) {
		place = "after";
		offset = e->address - end;
	}
	snprintf(buf, len, "is %llu bytes %s a block of size %llu %s", (unsigned long long)offset,
		 place, (unsigned long long)e->block_size, freed ? "free'd" : "alloc'd");
	return buf;
}

bool hl_report_error_block_freed(const struct hl_report_error *e)
{
	return e->kind == HL_ERROR_DOUBLE_FREE || e->kind == HL_ERROR_USE_AFTER_FREE;
}

/* enum hl_error_call of a call's name (hl_error_call_name's), HL_CALL_COUNT
 * for none. */
static unsigned call_of(const char *name)
{
	for (unsigned call = 0; name != NULL && call < HL_CALL_COUNT; call++)
		if (!strcmp(name, hl_error_call_name(call)))
			return call;
	return HL_CALL_COUNT;
}

const char *hl_report_error_title(const struct hl_report_error *e, char *buf, size_t len)
{
	bool usable = e->call && !strcmp(e->call, "malloc_usable_size");
	const char *suffix = hl_error_found_by(e->kind, call_of(e->call));
	char access[96];

	if (hl_report_error_is_access(e))
		snprintf(buf, len, "%s%s", hl_report_error_access_heading(e, access, sizeof(access)),
			 suffix);
	else if (e->kind == HL_ERROR_SIZE_MISMATCH)
		snprintf(buf, len, "%s %llu%s", hl_error_heading(e->kind, HL_CALL_FREE),
			 (unsigned long long)e->detail, suffix);
	else
		snprintf(buf, len, "%s%s",
			 hl_error_heading(e->kind, usable ? HL_CALL_USABLE_SIZE : HL_CALL_FREE), suffix);
	return buf;
}

const char *hl_report_error_where(const struct hl_report_error *e, char *buf, size_t len)
{
	char offset[32], size[32];

	if (hl_report_error_is_access(e) && e->block_address)
		return hl_report_error_access_where(e, buf, len);
	if (!e->block_address)
		snprintf(buf, len, "is not stack'd, malloc'd or (recently) free'd");
	else if (e->kind == HL_ERROR_OVERFLOW)
		snprintf(buf, len, "is %s bytes after a block of size %s alloc'd",
			 hl_fmt_grouped(offset, e->address - e->block_address - e->block_size),
			 hl_fmt_grouped(size, e->block_size));
	else
		snprintf(buf, len, "is %s bytes inside a block of size %s %s",
			 hl_fmt_grouped(offset, e->address - e->block_address),
			 hl_fmt_grouped(size, e->block_size),
			 hl_report_error_block_freed(e) ? "free'd" : "alloc'd");
	return buf;
}
