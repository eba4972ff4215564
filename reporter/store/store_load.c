/*
 * reporter/store/store_load.c: a stored run as a report (struct
 * hl_report), for `heapledger report`, the gate and the formats. It holds
 * no SQL: it assembles the report from what the query layer returns to
 * the web UI as well (query_runs.c, query_run_page.c and the process rows
 * of query_process.c), so both read the database one way.
 *
 * A process's rows are read when it is assembled and freed after, so a
 * streamed report holds one process at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "query_int.h"
#include "query_run_page.h"
#include "query_run_rows.h"
#include "query_runs.h"
#include "store.h"

/* What one load reads with: the process rows' statements, the stack walk,
 * and the run's call tree. */
struct loader {
	struct hl_store *s;
	const struct hl_report_filter *filter;
	struct hl_process_rows rows;  /* one process's rows (query_process.c) */
	struct hl_stack_reader stack; /* stacks by id (query_stacks.c) */
	int64_t run_id;
	/* The run's frames, by frames.id: records share their callers, and
	 * one read of the call tree replaced a recursive walk per record (435
	 * processes, 73k records: 24 -> N s). Its processes share it, so it
	 * is read once, when the first record needs it; its strings are in the
	 * arena of the run's report, which outlives each streamed process. */
	struct hl_frame_row *tree;
	size_t ntree, tree_cap;
	bool tree_loaded;
	struct hl_bump *tree_arena;
};

static int loader_open(struct loader *l, struct hl_store *s, int64_t run_id,
		       const struct hl_report_filter *filter)
{
	int err;

	memset(l, 0, sizeof(*l));
	l->s = s;
	l->filter = filter;
	l->run_id = run_id;
	err = hl_process_rows_open(&l->rows, s);
	return err ? err : hl_stack_reader_open(&l->stack, s);
}

static void loader_close(struct loader *l)
{
	hl_stack_reader_close(&l->stack);
	hl_process_rows_close(&l->rows);
	free(l->tree);
}

static const char *copy_text(struct hl_report *r, const char *text)
{
	return text ? hl_bump_strdup(&r->arena, text) : NULL;
}

static int load_stack(struct loader *l, struct hl_report *r, struct hl_maybe stack_id,
		      struct hl_report_stack *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (stack_id.value <= 0)
		return 0;
	err = hl_stack_read(&l->stack, &r->arena, stack_id.value, out);
	out->key = (uint64_t)stack_id.value << 2 | 2;
	return err;
}

/* Reads the run's call tree into ld->tree, once. */
static int load_tree(struct loader *ld)
{
	if (ld->tree_loaded)
		return 0;
	ld->tree_loaded = true;
	return hl_query_run_frames(ld->s, ld->run_id, ld->tree_arena, &ld->tree, &ld->ntree,
				   &ld->tree_cap);
}

static const struct hl_frame_row *tree_find(const struct loader *ld, int64_t id)
{
	size_t i = hl_find_by_id(ld->tree, ld->ntree, sizeof(*ld->tree), id);

	return i < ld->ntree ? &ld->tree[i] : NULL;
}

/* The stack from its innermost frame up through the loaded tree; false
 * (out untouched) if a frame is not in it, for load_stack to walk instead. */
static bool stack_from_tree(const struct loader *ld, struct hl_report *r, int64_t leaf,
			    bool truncated, struct hl_report_stack *out)
{
	size_t n = 0;

	for (const struct hl_frame_row *f = tree_find(ld, leaf); f; n++) {
		if (!f->parent)
			break;
		if (!(f = tree_find(ld, f->parent)))
			return false;
		if (n > ld->ntree)
			return false; /* a cycle: not written by heapledger */
	}
	if (leaf && !tree_find(ld, leaf))
		return false;
	memset(out, 0, sizeof(*out));
	out->truncated = truncated;
	out->key = (uint64_t)leaf << 2 | 1; /* a frame's id names its path to the root */
	if (!leaf)
		return true;
	out->nframes = n + 1;
	out->frames = hl_bump_alloc(&r->arena, out->nframes * sizeof(*out->frames));
	n = 0;
	for (const struct hl_frame_row *f = tree_find(ld, leaf); f;
	     f = f->parent ? tree_find(ld, f->parent) : NULL)
		out->frames[n++] = f->info;
	return true;
}

/* A record's stack: through the tree, else walked by its id. */
static int record_stack(struct loader *ld, struct hl_report *r, struct hl_maybe leaf,
			struct hl_maybe truncated, struct hl_maybe stack_id,
			struct hl_report_stack *out)
{
	if (leaf.known && stack_from_tree(ld, r, leaf.value, truncated.value != 0, out))
		return 0;
	return load_stack(ld, r, stack_id, out);
}

/* Whether a record of this class (and suppression) passes --kind. */
static bool kind_wanted(const struct hl_report_filter *f, unsigned leak_class, bool suppressed)
{
	if (!f || !f->kinds)
		return true;
	if (suppressed && (f->kinds & 1u << HL_CLASS_SUPPRESSED))
		return true;
	return (f->kinds & 1u << leak_class) != 0;
}

static int load_leaks(struct loader *ld, struct hl_report *r, const struct hl_run_rows *rows,
		      struct hl_report_process *p)
{
	int err = 0;

	p->leaks = hl_bump_alloc(&r->arena, (rows->nleaks + 1) * sizeof(*p->leaks));
	for (size_t i = 0; !err && i < rows->nleaks; i++) {
		const struct hl_leak_row *row = &rows->leaks[i];
		struct hl_report_leak *l;

		if (!kind_wanted(ld->filter, row->leak_class, row->suppressed))
			continue;
		l = &p->leaks[p->nleaks++];
		hl_leak_row_record(row, l);
		l->suppression = copy_text(r, row->suppression);
		l->fingerprint = copy_text(r, row->fingerprint);
		err = record_stack(ld, r, row->leaf_frame_id, row->truncated, row->stack_id,
				   &l->stack);
	}
	return err;
}

static int load_errors(struct loader *ld, struct hl_report *r, const struct hl_run_rows *rows,
		       struct hl_report_process *p)
{
	int err = 0;

	p->errors = hl_bump_alloc(&r->arena, (rows->nerrors + 1) * sizeof(*p->errors));
	for (size_t i = 0; !err && i < rows->nerrors; i++) {
		const struct hl_error_row *row = &rows->errors[i];
		struct hl_report_error *e = &p->errors[p->nerrors++];

		hl_error_row_record(row, e);
		e->call = copy_text(r, row->call);
		err = load_stack(ld, r, row->stack_id, &e->stack);
		if (!err)
			err = load_stack(ld, r, row->alloc_stack_id, &e->alloc_stack);
		if (!err)
			err = load_stack(ld, r, row->free_stack_id, &e->free_stack);
	}
	return err;
}

static int load_fds(struct loader *ld, struct hl_report *r, const struct hl_run_rows *rows,
		    struct hl_report_process *p)
{
	int err = 0;

	p->fd_summary.tracked = rows->fds_tracked;
	p->fd_summary.all = rows->fds_all;
	p->fd_summary.open = rows->fds_open;
	p->fd_summary.std = rows->fds_std;
	p->fds = hl_bump_alloc(&r->arena, (rows->nfds + 1) * sizeof(*p->fds));
	for (size_t i = 0; !err && i < rows->nfds; i++) {
		const struct hl_fd_row *row = &rows->fds[i];
		struct hl_report_fd *f = &p->fds[p->nfds++];

		*f = (struct hl_report_fd){ .fd = row->fd, .kind = row->kind, .family = row->family,
					    .text = copy_text(r, row->text),
					    .inherited = row->inherited, .unseen = row->unseen };
		err = load_stack(ld, r, row->stack_id, &f->stack);
	}
	return err;
}

/* The check of p with this seq, or NULL. */
static struct hl_report_check *check_by_seq(struct hl_report_process *p, int64_t seq)
{
	for (size_t i = 0; i < p->nchecks; i++)
		if (p->checks[i].seq == seq)
			return &p->checks[i];
	return NULL;
}

/* The process's on-demand checks: one row per class, grouped by seq. */
static void load_checks(struct hl_report *r, const struct hl_run_rows *rows,
			struct hl_report_process *p)
{
	p->checks = hl_bump_alloc(&r->arena, (rows->nchecks + 1) * sizeof(*p->checks));
	for (size_t i = 0; i < rows->nchecks; i++) {
		const struct hl_check_row *row = &rows->checks[i];
		struct hl_report_check *c;

		if (!p->nchecks || p->checks[p->nchecks - 1].seq != (uint32_t)row->seq) {
			c = &p->checks[p->nchecks++];
			c->seq = (uint32_t)row->seq;
			c->time_ns = (uint64_t)row->time_ns;
			c->by_signal = row->by_signal;
			c->all_threads_stopped = row->all_threads_stopped;
			c->scanned = row->scanned;
			c->records_total = (uint64_t)row->records_total;
		}
		c = &p->checks[p->nchecks - 1];
		c->bytes[row->leak_class] = row->bytes;
		c->blocks[row->leak_class] = row->blocks;
	}
}

/* Appends one element of `size` bytes to an arena array of *n. */
static void *arena_append(struct hl_report *r, void **v, size_t *n, size_t size)
{
	char *grown = hl_bump_alloc(&r->arena, (*n + 1) * size);

	if (*n)
		memcpy(grown, *v, *n * size);
	*v = grown;
	memset(grown + *n * size, 0, size);
	return grown + (*n)++ * size;
}

/* How many of rows from i on belong to the check of seq. */
static size_t records_of_seq(const struct hl_run_rows *rows, size_t i, int64_t seq)
{
	size_t n = 0;

	while (i + n < rows->nrecords && rows->records[i + n].seq == seq)
		n++;
	return n;
}

/* The checks' loss records (after load_checks). */
static int load_check_records(struct loader *ld, struct hl_report *r,
			      const struct hl_run_rows *rows, struct hl_report_process *p)
{
	struct hl_report_check *c = NULL;
	int err = 0;

	for (size_t i = 0; !err && i < rows->nrecords; i++) {
		const struct hl_check_record_row *row = &rows->records[i];
		struct hl_report_check_record *rec;
		struct hl_report_leak *l;

		if (!c || c->seq != row->seq) {
			c = check_by_seq(p, row->seq);
			if (c)
				c->records = hl_bump_alloc(&r->arena, records_of_seq(rows, i, row->seq) *
								      sizeof(*c->records));
		}
		if (!c)
			continue;
		rec = &c->records[c->nrecords++];
		l = &rec->leak;
		rec->rank = (uint64_t)row->rank;
		l->leak_class = row->leak_class;
		l->suppressed = row->suppressed;
		l->fingerprint = copy_text(r, row->fingerprint);
		l->suppression = copy_text(r, row->suppression);
		l->bytes = row->bytes;
		l->indirect_bytes = row->indirect_bytes;
		l->blocks = row->blocks;
		rec->new_bytes = row->new_bytes;
		rec->new_indirect_bytes = row->new_indirect_bytes;
		rec->new_blocks = row->new_blocks;
		err = record_stack(ld, r, row->leaf_frame_id, row->truncated, row->stack_id,
				   &l->stack);
	}
	return err;
}

/* The threads each scan could not stop: check_seq 0 is the exit scan's. */
static void load_unstopped(struct hl_report *r, const struct hl_run_rows *rows,
			   struct hl_report_process *p)
{
	for (size_t i = 0; i < rows->nunstopped; i++) {
		uint32_t tid = rows->unstopped[i].tid;
		int64_t seq = rows->unstopped[i].seq;
		struct hl_report_check *c = seq ? check_by_seq(p, seq) : NULL;

		if (c)
			*(uint32_t *)arena_append(r, (void **)&c->unstopped_tids, &c->nunstopped_tids,
						  sizeof(tid)) = tid;
		else if (!seq && p->unstopped)
			*(uint32_t *)arena_append(r, (void **)&p->unstopped_tids, &p->nunstopped_tids,
						  sizeof(tid)) = tid;
	}
}

/* The process's heap timeline, in the order it was taken. */
static void load_timeline(struct hl_report *r, const struct hl_run_rows *rows,
			  struct hl_report_process *p)
{
	p->ntimeline = rows->nsamples;
	p->timeline = hl_bump_alloc(&r->arena, (rows->nsamples + 1) * sizeof(*p->timeline));
	if (rows->nsamples)
		memcpy(p->timeline, rows->samples, rows->nsamples * sizeof(*p->timeline));
}

/* Every row of the process's, read with the loader's statements. */
static int load_rows(struct loader *ld, struct hl_report *r, int64_t process_id,
		     struct hl_report_process *p)
{
	struct hl_run_rows rows;
	bool whole = !ld->filter || !ld->filter->records_only;
	int err = 0;

	hl_run_rows_init(&rows);
	if (whole)
		err = hl_process_leaks(&ld->rows, process_id, &rows);
	if (!err)
		err = hl_process_errors(&ld->rows, process_id, &rows);
	if (!err)
		err = hl_process_fds(&ld->rows, process_id, &rows);
	if (!err)
		err = hl_process_checks(&ld->rows, process_id, &rows);
	if (!err && whole)
		err = hl_process_timeline(&ld->rows, process_id, &rows);
	if (!err)
		err = load_leaks(ld, r, &rows, p);
	if (!err)
		err = load_errors(ld, r, &rows, p);
	if (!err)
		err = load_fds(ld, r, &rows, p);
	if (!err)
		load_checks(r, &rows, p);
	if (!err)
		err = load_check_records(ld, r, &rows, p);
	if (!err) {
		load_unstopped(r, &rows, p);
		load_timeline(r, &rows, p);
	}
	hl_run_rows_destroy(&rows);
	return err;
}

static int64_t maybe_or(struct hl_maybe m, int64_t otherwise)
{
	return m.known ? m.value : otherwise;
}

static void fill_process(struct hl_store *s, struct hl_report *r,
			 const struct hl_process_row *row, struct hl_report_process *p)
{
	const struct hl_maybe *sum = row->summary;

	p->pid = (uint32_t)row->pid;
	p->ppid = (uint32_t)row->ppid;
	p->origin = copy_text(r, row->origin);
	p->exe = copy_text(r, row->exe);
	hl_query_argv(s, &r->arena, row->argv, &p->argv, &p->argc);
	p->started_ns = (uint64_t)row->started_ns.value;
	p->ended_ns = (uint64_t)row->ended_ns.value;
	p->how = copy_text(r, row->exit_how);
	p->status = (int32_t)(strcmp(p->how, "signal") ? row->exit_status : row->exit_signal).value;
	p->scanned = row->scanned;
	p->in_use_bytes = (uint64_t)sum[HL_SUMMARY_in_use_bytes].value;
	p->in_use_blocks = (uint64_t)sum[HL_SUMMARY_in_use_blocks].value;
	p->allocs = (uint64_t)sum[HL_SUMMARY_allocs].value;
	p->frees = (uint64_t)sum[HL_SUMMARY_frees].value;
	p->bytes_allocated = (uint64_t)sum[HL_SUMMARY_bytes_allocated].value;
	p->peak_bytes = (uint64_t)sum[HL_SUMMARY_peak_bytes].value;
	p->inherited_bytes = (uint64_t)sum[HL_SUMMARY_inherited_bytes].value;
	p->inherited_blocks = (uint64_t)sum[HL_SUMMARY_inherited_blocks].value;
	p->dropped_events = (uint64_t)sum[HL_SUMMARY_dropped_events].value;
	p->unmatched_frees = (uint64_t)sum[HL_SUMMARY_unmatched_frees].value;
	p->unfreed_superseded = (uint64_t)sum[HL_SUMMARY_unfreed_superseded].value;
	p->live_mismatch = (uint64_t)sum[HL_SUMMARY_live_mismatch].value;
	p->test_name = copy_text(r, row->test_name);
	p->unstopped = !row->all_threads_stopped;
	p->no_exit_record = row->no_exit_record;
	p->recovered_events = maybe_or(row->recovered_events, -1);
	if (row->fatal_signal.known) {
		p->fatal.signal = (int32_t)row->fatal_signal.value;
		p->fatal.code = (int32_t)row->fatal_code.value;
		p->fatal.address = (uint64_t)row->fatal_address.value;
		p->fatal.fault = hl_wire_fault_words((uint32_t)p->fatal.signal, p->fatal.code);
	}
	/* a name it does not know (a newer writer's) reads as none: the
	 * missing exit record still fails the gate */
	if (p->no_exit_record) {
		int why = hl_report_standalone_parse(row->standalone);

		p->standalone = why > 0 ? (uint32_t)why : HL_STANDALONE_NONE;
	}
}

/* Whether the process passes --process and --program (the basename of its
 * executable or of its argv[0]). */
static bool process_wanted(const struct hl_report_filter *f, const struct hl_report_process *p)
{
	const char *exe, *arg0;

	if (!f)
		return true;
	if (f->pid && p->pid != f->pid)
		return false;
	if (!f->program)
		return true;
	exe = strrchr(p->exe, '/');
	arg0 = p->argc ? strrchr(p->argv[0], '/') : NULL;
	return !strcmp(exe ? exe + 1 : p->exe, f->program) ||
	       (p->argc && !strcmp(arg0 ? arg0 + 1 : p->argv[0], f->program));
}

/* An image ended by exec: the image that replaced it is the next process
 * of the run with the same pid and origin exec; none stored, the new image
 * was not tracked. */
static void load_exec_path(struct hl_report *r, const struct hl_run_page *page, size_t i,
			   struct hl_report_process *p)
{
	if (strcmp(p->how, "exec"))
		return;
	p->exec_untracked = true;
	for (size_t j = i + 1; j < page->nprocs; j++) {
		const struct hl_process_row *next = &page->procs[j];

		if (next->pid == page->procs[i].pid && next->origin &&
		    !strcmp(next->origin, "exec")) {
			/* an image heard of from the EXEC alone is no tracked one */
			p->exec_untracked = next->standalone &&
					    hl_report_standalone_parse(next->standalone) ==
						    HL_STANDALONE_UNEXECED;
			p->exec_path = copy_text(r, next->exe);
			return;
		}
	}
}

/* One process of the page, whole, into p; false in *keep if the filter
 * leaves it out. */
static int load_process(struct loader *ld, struct hl_report *r, const struct hl_run_page *page,
			size_t i, struct hl_report_process *p, bool *keep)
{
	const struct hl_process_row *row = &page->procs[i];
	int err = 0;

	fill_process(ld->s, r, row, p);
	*keep = process_wanted(ld->filter, p);
	if (!*keep)
		return 0;
	err = load_tree(ld);
	if (!err)
		err = load_rows(ld, r, row->id, p);
	if (!err && p->fatal.signal)
		err = load_stack(ld, r, row->fatal_stack_id, &p->fatal.stack);
	if (!err)
		load_exec_path(r, page, i, p);
	/* --kind keeps the processes that have a record of those kinds
	 * (or a heap error) */
	if (ld->filter && ld->filter->kinds && !p->nleaks && !p->nerrors)
		*keep = false;
	return err;
}

/* Loads each process of the run that the filter keeps, in HELLO order: into
 * r (fn NULL), or one at a time into a report of its own that lives only
 * while fn runs (the streamed JSON and text). A process with no summary
 * row yet (a run still being written) is not reported. */
static int load_processes(struct loader *ld, struct hl_report *r, const struct hl_run_page *page,
			  hl_store_process_fn fn, void *ctx)
{
	int err = 0;

	for (size_t i = 0; !err && i < page->nprocs; i++) {
		struct hl_report one;
		struct hl_report *into = r;
		struct hl_report_process *p;
		bool keep;

		if (!page->procs[i].summary[0].known)
			continue;
		if (fn) {
			hl_report_init(&one);
			into = &one;
		}
		p = hl_report_new_process(into);
		err = load_process(ld, into, page, i, p, &keep);
		if (keep && !err && fn)
			err = fn(ctx, p);
		if (fn)
			hl_report_destroy(&one);
		else if (!keep)
			into->nprocs--;
	}
	return err;
}

/* The run's row and labels into r. */
static int load_run(struct hl_store *s, const struct hl_run_row *run, struct hl_report *r)
{
	r->run_id = run->id;
	r->mode = copy_text(r, run->mode);
	hl_query_argv(s, &r->arena, run->argv, &r->argv, &r->argc);
	r->started_ns = (uint64_t)run->started_ns;
	r->ended_ns = (uint64_t)run->ended_ns.value;
	r->exit_code = (int)maybe_or(run->exit_code, -1);
	r->uuid = copy_text(r, run->uuid);
	r->git_commit = copy_text(r, run->git_commit);
	r->git_branch = copy_text(r, run->git_branch);
	r->cwd = copy_text(r, run->cwd);
	r->hostname = copy_text(r, run->hostname);
	r->label_keys = hl_bump_alloc(&r->arena, (run->nlabels + 1) * sizeof(*r->label_keys));
	r->label_values = hl_bump_alloc(&r->arena, (run->nlabels + 1) * sizeof(*r->label_values));
	for (r->nlabels = 0; r->nlabels < run->nlabels; r->nlabels++) {
		const struct hl_run_label *l = &run->labels[r->nlabels];

		r->label_keys[r->nlabels] = copy_text(r, l->key);
		r->label_values[r->nlabels] = l->value ? copy_text(r, l->value) : "";
	}
	return 0;
}

/* The run's header and its processes, as the query layer returns them. */
static int read_page(struct hl_store *s, int64_t run_id, struct hl_run_page *page)
{
	int err = hl_query_run_header(s, run_id, &page->run);

	if (err == -ENOENT)
		snprintf(s->error, sizeof(s->error), "no run %lld in the database",
			 (long long)run_id);
	return err ? err : hl_query_processes(s, run_id, page);
}

int hl_store_load_report_filtered(struct hl_store *s, int64_t run_id,
				  const struct hl_report_filter *filter, struct hl_report *r,
				  hl_store_process_fn fn, void *ctx)
{
	struct hl_run_page page;
	struct loader ld;
	int rc;

	hl_run_page_init(&page);
	rc = read_page(s, run_id, &page);
	if (rc) {
		hl_run_page_destroy(&page);
		return rc;
	}
	load_run(s, &page.run.rows[0], r);
	rc = loader_open(&ld, s, run_id, filter);
	ld.tree_arena = &r->arena;
	if (!rc && fn)
		rc = fn(ctx, NULL); /* the run's header is loaded */
	if (!rc)
		rc = load_processes(&ld, r, &page, fn, ctx);
	loader_close(&ld);
	hl_run_page_destroy(&page);
	return rc;
}

int hl_store_load_report(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	return hl_store_load_report_filtered(s, run_id, NULL, r, NULL, NULL);
}
