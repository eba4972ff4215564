/*
 * reporter/store/store_load.c: reads a stored run back into a report, for
 * `heapledger report`. Kept apart from the writer: it only needs the SQL
 * and the report model.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "query_int.h"


static int load_fail(struct hl_store *s, const char *what)
{
	snprintf(s->error, sizeof(s->error), "%s: %s", what, sqlite3_errmsg(s->db));
	return -EIO;
}

int hl_store_latest_run(struct hl_store *s, int64_t *run_id)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT max(id) FROM runs", -1, &st, NULL))
		return load_fail(s, "latest run");
	rc = sqlite3_step(st);
	*run_id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_finalize(st);
	if (*run_id > 0)
		return 0;
	snprintf(s->error, sizeof(s->error), "the database holds no runs");
	return -ENOENT;
}

static const char *col_text_in(struct hl_bump *a, sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? hl_bump_strdup(a, (const char *)t) : NULL;
}

static const char *col_text(struct hl_report *r, sqlite3_stmt *st, int i)
{
	return col_text_in(&r->arena, st, i);
}

/* A stored class or error kind: its word (classes.h), UNKNOWN (0) for a
 * word this reader does not know. */
static unsigned col_class(sqlite3_stmt *st, int i)
{
	return hl_leak_class_from_word((const char *)sqlite3_column_text(st, i));
}

static unsigned col_error_kind(sqlite3_stmt *st, int i)
{
	return hl_error_kind_parse((const char *)sqlite3_column_text(st, i));
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	return (uint64_t)sqlite3_column_int64(st, i);
}

/* The statements of one load, prepared once: preparing the stack walk for
 * every record was most of the time of `report` on a large run. */
struct loader {
	struct hl_store *s;
	const struct hl_report_filter *filter;
	struct hl_stack_reader stack; /* stacks by id (query_stacks.c) */
	sqlite3_stmt *leaks, *errors, *checks, *exec_next, *frames, *check_records,
		*unstopped, *timeline;
	int64_t run_id;
	/* The run's frames, by frames.id: records share their callers, and
	 * one read of the call tree replaced a recursive walk per record (435
	 * processes, 73k records: 24 -> N s). Its processes share it, so it
	 * is read once, when the first record needs it; its strings are in the
	 * arena of the run's report, which outlives each streamed process. */
	struct loaded_frame {
		int64_t id, parent;
		struct hl_frame_info info;
	} *tree;
	size_t ntree, tree_cap;
	bool tree_loaded;
	struct hl_bump *tree_arena;
};

static const char *const loader_sql[] = {
	"SELECT l.leak_class, l.bytes, l.blocks, l.inherited_blocks, l.suppressed, l.stack_id,"
	" l.suppression, l.fingerprint, l.indirect_bytes, k.leaf_frame_id, k.truncated"
	" FROM leaks l LEFT JOIN stacks k ON k.id = l.stack_id WHERE l.process_id = ?"
	" ORDER BY l.rank",
	"SELECT kind, address, block_address, block_size, stack_id,"
	" alloc_stack_id, free_stack_id, call, detail FROM errors WHERE process_id = ?"
	" ORDER BY id",
	"SELECT seq, time_ns, by_signal, all_threads_stopped, scanned, leak_class,"
	" bytes, blocks, records_total FROM checks WHERE process_id = ? ORDER BY seq, rowid",
	/* the image that replaced an image ended by exec: the next process of
	 * the run with the same pid and origin exec */
	"SELECT exe FROM processes WHERE run_id = ?1 AND pid = ?2 AND origin = 'exec'"
	" AND serial > ?3 ORDER BY serial LIMIT 1",
	"SELECT f.id, f.parent_id, f.address, f.inlined, y.module, y.module_offset,"
	" y.function, y.file, y.line FROM frames f LEFT JOIN symbols y ON y.id = f.symbol_id"
	" WHERE f.run_id = ? ORDER BY f.id",
	"SELECT c.seq, c.rank, c.leak_class, c.bytes, c.indirect_bytes, c.blocks, c.new_bytes,"
	" c.new_indirect_bytes, c.new_blocks, c.stack_id, k.leaf_frame_id, k.truncated,"
	" c.fingerprint, c.suppressed, c.suppression"
	" FROM check_records c LEFT JOIN stacks k ON k.id = c.stack_id WHERE c.process_id = ?"
	" ORDER BY c.seq, c.rank",
	"SELECT check_seq, tid FROM unstopped_threads WHERE process_id = ?"
	" ORDER BY check_seq, rowid",
	"SELECT time_ns, in_use_bytes, in_use_blocks FROM timeline WHERE process_id = ?"
	" ORDER BY rowid", /* as taken (threads: not always in time order) */
};

static int loader_open(struct loader *l, struct hl_store *s, int64_t run_id,
		       const struct hl_report_filter *filter)
{
	sqlite3_stmt **st[] = { &l->leaks, &l->errors, &l->checks, &l->exec_next,
				&l->frames, &l->check_records, &l->unstopped, &l->timeline };

	memset(l, 0, sizeof(*l));
	l->s = s;
	l->filter = filter;
	l->run_id = run_id;
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (sqlite3_prepare_v2(s->db, loader_sql[i], -1, st[i], NULL))
			return load_fail(s, "preparing the report's queries");
	return hl_stack_reader_open(&l->stack, s);
}

static void loader_close(struct loader *l)
{
	hl_stack_reader_close(&l->stack);
	sqlite3_finalize(l->leaks);
	sqlite3_finalize(l->errors);
	sqlite3_finalize(l->checks);
	sqlite3_finalize(l->exec_next);
	sqlite3_finalize(l->frames);
	sqlite3_finalize(l->check_records);
	sqlite3_finalize(l->unstopped);
	sqlite3_finalize(l->timeline);
	free(l->tree);
}

/* A stored argv (a JSON array of words, each a string or the array of its
 * bytes) into *argv: SQLite reads the JSON; what is not an array reads as
 * no arguments, an element that is neither word form as "". */
static void argv_from_json(struct hl_store *s, struct hl_report *r, const char *text,
			   const char ***argv, uint32_t *argc)
{
	sqlite3_stmt *st = NULL;
	size_t n = 0, cap = 0;

	*argv = NULL;
	if (text && sqlite3_prepare_v2(s->db,
		"SELECT coalesce(" HL_SQL_ARGV_WORD("a") ", '') FROM json_each(coalesce("
		" CASE WHEN json_valid(?1) THEN CASE WHEN json_type(?1) = 'array' THEN ?1 END END,"
		" '[]')) a", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
		while (sqlite3_step(st) == SQLITE_ROW) {
			if (n + 1 >= cap) {
				const char **grown;

				cap = cap ? 2 * cap : 8;
				grown = hl_bump_alloc(&r->arena, cap * sizeof(*grown));
				if (n)
					memcpy(grown, *argv, n * sizeof(*grown));
				*argv = grown;
			}
			(*argv)[n++] = col_text(r, st, 0);
		}
	}
	sqlite3_finalize(st);
	if (!*argv)
		*argv = hl_bump_alloc(&r->arena, sizeof(**argv));
	*argc = (uint32_t)n;
}

static int load_stack(struct loader *l, struct hl_report *r, int64_t stack_id,
		      struct hl_report_stack *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (stack_id <= 0)
		return 0;
	err = hl_stack_read(&l->stack, &r->arena, stack_id, out);
	out->key = (uint64_t)stack_id << 2 | 2;
	return err;
}

/* Reads the run's call tree (frames rows, in id order) into ld->tree, once. */
static void load_tree(struct loader *ld)
{
	sqlite3_stmt *st = ld->frames;
	struct hl_bump *a = ld->tree_arena;

	if (ld->tree_loaded)
		return;
	ld->tree_loaded = true;
	ld->ntree = 0;
	sqlite3_bind_int64(st, 1, ld->run_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct loaded_frame *f;

		hl_grow((void **)&ld->tree, &ld->tree_cap, ld->ntree, sizeof(*ld->tree));
		f = &ld->tree[ld->ntree++];
		memset(f, 0, sizeof(*f));
		f->id = sqlite3_column_int64(st, 0);
		f->parent = sqlite3_column_int64(st, 1);
		f->info.address = col_u64(st, 2);
		f->info.inlined = sqlite3_column_int(st, 3) != 0;
		f->info.module = col_text_in(a, st, 4);
		f->info.offset = col_u64(st, 5);
		f->info.function = col_text_in(a, st, 6);
		f->info.file = col_text_in(a, st, 7);
		f->info.line = (uint32_t)sqlite3_column_int(st, 8);
	}
	sqlite3_reset(st);
}

static const struct loaded_frame *tree_find(const struct loader *ld, int64_t id)
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

	for (const struct loaded_frame *f = tree_find(ld, leaf); f; n++) {
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
	for (const struct loaded_frame *f = tree_find(ld, leaf); f;
	     f = f->parent ? tree_find(ld, f->parent) : NULL)
		out->frames[n++] = f->info;
	return true;
}

/* Whether a record of this class (and suppression) passes --kind. */
static bool kind_wanted(const struct hl_report_filter *f, const char *leak_class, bool suppressed)
{
	if (!f || !f->kinds)
		return true;
	if (suppressed && (f->kinds & 1u << HL_CLASS_SUPPRESSED))
		return true;
	for (unsigned k = 0; k <= HL_CLASS_SUPPRESSED; k++)
		if ((f->kinds & 1u << k) && leak_class && !strcmp(leak_class, hl_leak_class_name(k)))
			return true;
	return false;
}

static int load_leaks(struct loader *ld, struct hl_report *r, int64_t process_id,
		      struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->leaks;
	size_t cap = 0;
	int err = 0;

	sqlite3_bind_int64(st, 1, process_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report_leak *l;

		if (!kind_wanted(ld->filter, (const char *)sqlite3_column_text(st, 0),
				 sqlite3_column_int(st, 4) != 0))
			continue;

		if (p->nleaks == cap) {
			struct hl_report_leak *grown;

			cap = cap ? cap * 2 : 16;
			grown = hl_bump_alloc(&r->arena, cap * sizeof(*grown));
			if (p->nleaks)
				memcpy(grown, p->leaks, p->nleaks * sizeof(*grown));
			p->leaks = grown;
		}
		l = &p->leaks[p->nleaks++];
		l->leak_class = col_class(st, 0);
		l->bytes = col_u64(st, 1);
		l->blocks = col_u64(st, 2);
		l->inherited_blocks = col_u64(st, 3);
		l->suppressed = sqlite3_column_int(st, 4) != 0;
		l->suppression = col_text(r, st, 6);
		l->fingerprint = col_text(r, st, 7);
		l->indirect_bytes = col_u64(st, 8);
		l->allocator = NULL; /* not stored */
		if (sqlite3_column_type(st, 9) == SQLITE_NULL ||
		    !stack_from_tree(ld, r, sqlite3_column_int64(st, 9),
				     sqlite3_column_int(st, 10) != 0, &l->stack))
			err = load_stack(ld, r, sqlite3_column_int64(st, 5), &l->stack);
	}
	sqlite3_reset(st);
	return err;
}

static int load_errors(struct loader *ld, struct hl_report *r, int64_t process_id,
		       struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->errors;
	int err = 0;

	sqlite3_bind_int64(st, 1, process_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report_error *e;
		struct hl_report_error *grown =
			hl_bump_alloc(&r->arena, (p->nerrors + 1) * sizeof(*grown));

		if (p->nerrors)
			memcpy(grown, p->errors, p->nerrors * sizeof(*grown));
		p->errors = grown;
		e = &p->errors[p->nerrors++];
		e->kind = col_error_kind(st, 0);
		e->address = col_u64(st, 1);
		e->block_address = col_u64(st, 2);
		e->block_size = col_u64(st, 3);
		e->call = col_text(r, st, 7);
		e->detail = col_u64(st, 8);
		err = load_stack(ld, r, sqlite3_column_int64(st, 4), &e->stack);
		if (!err)
			err = load_stack(ld, r, sqlite3_column_int64(st, 5), &e->alloc_stack);
		if (!err)
			err = load_stack(ld, r, sqlite3_column_int64(st, 6), &e->free_stack);
	}
	sqlite3_reset(st);
	return err;
}

/* The process's on-demand checks: one row per class, grouped by seq. */
static int load_checks(struct loader *ld, struct hl_report *r, int64_t process_id,
		       struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->checks;
	size_t cap = 0;

	sqlite3_bind_int64(st, 1, process_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint32_t seq = (uint32_t)sqlite3_column_int64(st, 0);
		const char *cls = (const char *)sqlite3_column_text(st, 5);
		struct hl_report_check *c;

		if (!p->nchecks || p->checks[p->nchecks - 1].seq != seq) {
			if (p->nchecks == cap) {
				struct hl_report_check *grown;

				cap = cap ? cap * 2 : 8;
				grown = hl_bump_alloc(&r->arena, cap * sizeof(*grown));
				if (p->nchecks)
					memcpy(grown, p->checks, p->nchecks * sizeof(*grown));
				p->checks = grown;
			}
			c = &p->checks[p->nchecks++];
			memset(c, 0, sizeof(*c));
			c->seq = seq;
			c->time_ns = col_u64(st, 1);
			c->by_signal = sqlite3_column_int(st, 2) != 0;
			c->all_threads_stopped = sqlite3_column_int(st, 3) != 0;
			c->scanned = sqlite3_column_int(st, 4) != 0;
			c->records_total = col_u64(st, 8);
		}
		c = &p->checks[p->nchecks - 1];
		for (unsigned k = 0; k <= HL_CLASS_SUPPRESSED; k++) {
			if (cls && !strcmp(cls, hl_leak_class_name(k))) {
				c->bytes[k] = col_u64(st, 6);
				c->blocks[k] = col_u64(st, 7);
			}
		}
	}
	sqlite3_reset(st);
	return 0;
}

/* The check of p with this seq, or NULL. */
static struct hl_report_check *check_by_seq(struct hl_report_process *p, uint32_t seq)
{
	for (size_t i = 0; i < p->nchecks; i++)
		if (p->checks[i].seq == seq)
			return &p->checks[i];
	return NULL;
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

/* The checks' loss records (after load_checks). */
static int load_check_records(struct loader *ld, struct hl_report *r, int64_t process_id,
			      struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->check_records;
	struct hl_report_check *c = NULL;
	size_t cap = 0;
	int err = 0;

	sqlite3_bind_int64(st, 1, process_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		uint32_t seq = (uint32_t)sqlite3_column_int64(st, 0);
		struct hl_report_check_record *rec;
		struct hl_report_leak *l;

		if (!c || c->seq != seq) {
			c = check_by_seq(p, seq);
			cap = 0;
		}
		if (!c)
			continue;
		if (c->nrecords == cap) {
			struct hl_report_check_record *grown;

			cap = cap ? cap * 2 : 16;
			grown = hl_bump_alloc(&r->arena, cap * sizeof(*grown));
			if (c->nrecords)
				memcpy(grown, c->records, c->nrecords * sizeof(*grown));
			c->records = grown;
		}
		rec = &c->records[c->nrecords++];
		memset(rec, 0, sizeof(*rec));
		l = &rec->leak;
		rec->rank = col_u64(st, 1);
		l->leak_class = col_class(st, 2);
		l->suppressed = sqlite3_column_int(st, 13) != 0;
		l->fingerprint = col_text(r, st, 12);
		l->suppression = col_text(r, st, 14);
		l->bytes = col_u64(st, 3);
		l->indirect_bytes = col_u64(st, 4);
		l->blocks = col_u64(st, 5);
		rec->new_bytes = sqlite3_column_int64(st, 6);
		rec->new_indirect_bytes = sqlite3_column_int64(st, 7);
		rec->new_blocks = sqlite3_column_int64(st, 8);
		if (sqlite3_column_type(st, 10) == SQLITE_NULL ||
		    !stack_from_tree(ld, r, sqlite3_column_int64(st, 10),
				     sqlite3_column_int(st, 11) != 0, &l->stack))
			err = load_stack(ld, r, sqlite3_column_int64(st, 9), &l->stack);
	}
	sqlite3_reset(st);
	return err;
}

/* The threads each scan could not stop: check_seq 0 is the exit scan's. */
/* The process's heap timeline, in the order it was taken. */
static int load_timeline(struct loader *ld, struct hl_report *r, int64_t process_id,
			 struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->timeline;
	size_t cap = 0;

	sqlite3_bind_int64(st, 1, process_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (p->ntimeline == cap) {
			struct hl_report_sample *grown;

			cap = cap ? cap * 2 : 8;
			grown = hl_bump_alloc(&r->arena, cap * sizeof(*grown));
			if (p->ntimeline)
				memcpy(grown, p->timeline, p->ntimeline * sizeof(*grown));
			p->timeline = grown;
		}
		p->timeline[p->ntimeline++] = (struct hl_report_sample){
			col_u64(st, 0), col_u64(st, 1), col_u64(st, 2) };
	}
	sqlite3_reset(st);
	return 0;
}

static int load_unstopped(struct loader *ld, struct hl_report *r, int64_t process_id,
			  struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->unstopped;

	sqlite3_bind_int64(st, 1, process_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint32_t seq = (uint32_t)sqlite3_column_int64(st, 0);
		uint32_t tid = (uint32_t)sqlite3_column_int64(st, 1);
		struct hl_report_check *c = seq ? check_by_seq(p, seq) : NULL;

		if (c)
			*(uint32_t *)arena_append(r, (void **)&c->unstopped_tids, &c->nunstopped_tids,
						  sizeof(tid)) = tid;
		else if (!seq && p->unstopped)
			*(uint32_t *)arena_append(r, (void **)&p->unstopped_tids, &p->nunstopped_tids,
						  sizeof(tid)) = tid;
	}
	sqlite3_reset(st);
	return 0;
}

static void fill_process(struct hl_store *s, struct hl_report *r, sqlite3_stmt *st,
			 struct hl_report_process *p)
{
	p->pid = (uint32_t)sqlite3_column_int64(st, 1);
	p->ppid = (uint32_t)sqlite3_column_int64(st, 2);
	p->origin = col_text(r, st, 3);
	p->exe = col_text(r, st, 4);
	argv_from_json(s, r, (const char *)sqlite3_column_text(st, 5), &p->argv, &p->argc);
	p->started_ns = col_u64(st, 6);
	p->ended_ns = col_u64(st, 7);
	p->how = col_text(r, st, 8);
	p->status = sqlite3_column_int(st, strcmp(p->how, "signal") ? 9 : 10);
	p->scanned = sqlite3_column_int(st, 11) != 0;
	p->in_use_bytes = col_u64(st, 12);
	p->in_use_blocks = col_u64(st, 13);
	p->allocs = col_u64(st, 14);
	p->frees = col_u64(st, 15);
	p->bytes_allocated = col_u64(st, 16);
	p->peak_bytes = col_u64(st, 17);
	p->inherited_bytes = col_u64(st, 18);
	p->inherited_blocks = col_u64(st, 19);
	p->dropped_events = col_u64(st, 20);
	p->unmatched_frees = col_u64(st, 21);
	p->unfreed_superseded = col_u64(st, 22);
	p->live_mismatch = col_u64(st, 23);
	p->test_name = sqlite3_column_type(st, 24) == SQLITE_NULL ? NULL : col_text(r, st, 24);
	p->unstopped = sqlite3_column_int(st, 26) == 0;
	p->no_exit_record = sqlite3_column_int(st, 27) != 0;
	p->recovered_events = sqlite3_column_type(st, 28) == SQLITE_NULL ?
				      -1 : sqlite3_column_int64(st, 28);
	if (sqlite3_column_type(st, 29) != SQLITE_NULL) {
		p->fatal.signal = sqlite3_column_int(st, 29);
		p->fatal.code = sqlite3_column_int(st, 30);
		p->fatal.address = col_u64(st, 31);
		p->fatal.fault = hl_wire_fault_words((uint32_t)p->fatal.signal, p->fatal.code);
	}
	/* column 33; a name it does not know (a newer writer's) reads as none:
	 * the missing exit record still fails the gate */
	if (p->no_exit_record) {
		int why = hl_report_standalone_parse((const char *)sqlite3_column_text(st, 33));

		p->standalone = why > 0 ? (uint32_t)why : HL_STANDALONE_NONE;
	}
}

/* Where the signal that ended it arrived (column 32), if the hook saw it. */
static int load_fatal_stack(struct loader *ld, struct hl_report *r, sqlite3_stmt *st,
			    struct hl_report_process *p)
{
	if (!p->fatal.signal)
		return 0;
	return load_stack(ld, r, sqlite3_column_int64(st, 32), &p->fatal.stack);
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

static int load_exec_path(struct loader *ld, struct hl_report *r, int64_t serial,
			  struct hl_report_process *p)
{
	sqlite3_stmt *st = ld->exec_next;

	if (strcmp(p->how, "exec"))
		return 0;
	sqlite3_bind_int64(st, 1, ld->run_id);
	sqlite3_bind_int64(st, 2, p->pid);
	sqlite3_bind_int64(st, 3, serial);
	/* None stored: the new image was not tracked. */
	p->exec_untracked = sqlite3_step(st) != SQLITE_ROW;
	if (!p->exec_untracked)
		p->exec_path = col_text(r, st, 0);
	sqlite3_reset(st);
	return 0;
}

/* Loads each process of the run that the filter keeps, in HELLO order: into
 * r (fn NULL), or one at a time into a report of its own that lives only
 * while fn runs (the streamed JSON and text). */
static int load_processes(struct loader *ld, struct hl_report *r,
			  hl_store_process_fn fn, void *ctx)
{
	struct hl_store *s = ld->s;
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(s->db,
		"SELECT p.id, pid, ppid, origin, exe, argv, started_ns, ended_ns,"
		" exit_how, exit_status, exit_signal, scanned, in_use_bytes,"
		" in_use_blocks, allocs, frees, bytes_allocated, peak_bytes,"
		" inherited_bytes, inherited_blocks, dropped_events, unmatched_frees,"
		" unfreed_superseded, live_mismatch, test_name, p.serial, all_threads_stopped,"
		" no_exit_record, recovered_events, fatal_signal, fatal_code, fatal_address,"
		" fatal_stack_id, standalone"
		" FROM processes p JOIN summaries s ON s.process_id = p.id"
		" WHERE p.run_id = ? ORDER BY p.serial", -1, &st, NULL))
		return load_fail(s, "processes");
	sqlite3_bind_int64(st, 1, ld->run_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report one;
		struct hl_report *into = r;
		struct hl_report_process *p;
		int64_t id = sqlite3_column_int64(st, 0);
		bool keep;

		if (fn) {
			hl_report_init(&one);
			into = &one;
		}
		p = hl_report_new_process(into);
		fill_process(s, into, st, p);
		keep = process_wanted(ld->filter, p);
		if (keep)
			load_tree(ld);
		if (keep)
			err = load_leaks(ld, into, id, p);
		if (keep && !err)
			err = load_fatal_stack(ld, into, st, p);
		if (keep && !err)
			err = load_errors(ld, into, id, p);
		if (keep && !err)
			err = load_checks(ld, into, id, p);
		if (keep && !err)
			err = load_check_records(ld, into, id, p);
		if (keep && !err)
			err = load_unstopped(ld, into, id, p);
		if (keep && !err)
			err = load_timeline(ld, into, id, p);
		if (keep && !err)
			err = load_exec_path(ld, into, sqlite3_column_int64(st, 25), p);
		/* --kind keeps the processes that have a record of those kinds
		 * (or a heap error) */
		if (keep && ld->filter && ld->filter->kinds && !p->nleaks && !p->nerrors)
			keep = false;
		if (keep && !err && fn)
			err = fn(ctx, p);
		if (fn)
			hl_report_destroy(&one);
		else if (!keep)
			into->nprocs--;
	}
	sqlite3_finalize(st);
	return err;
}

static int load_labels(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	sqlite3_stmt *st;
	size_t n = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT key, value FROM run_labels WHERE run_id = ?"
			       " ORDER BY rowid", -1, &st, NULL))
		return load_fail(s, "labels");
	sqlite3_bind_int64(st, 1, run_id);
	while (sqlite3_step(st) == SQLITE_ROW)
		n++;
	sqlite3_reset(st);
	r->label_keys = hl_bump_alloc(&r->arena, (n + 1) * sizeof(*r->label_keys));
	r->label_values = hl_bump_alloc(&r->arena, (n + 1) * sizeof(*r->label_values));
	r->nlabels = 0;
	while (r->nlabels < n && sqlite3_step(st) == SQLITE_ROW) {
		r->label_keys[r->nlabels] = col_text(r, st, 0);
		r->label_values[r->nlabels] = col_text(r, st, 1);
		if (!r->label_values[r->nlabels])
			r->label_values[r->nlabels] = "";
		r->nlabels++;
	}
	sqlite3_finalize(st);
	return 0;
}

/* The run's row and labels. */
static int load_run(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT mode, argv, started_ns, ended_ns, exit_code,"
			       " uuid, git_commit, git_branch, cwd, hostname FROM runs WHERE id = ?",
			       -1, &st, NULL))
		return load_fail(s, "run");
	sqlite3_bind_int64(st, 1, run_id);
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		snprintf(s->error, sizeof(s->error), "no run %lld in the database",
			 (long long)run_id);
		return -ENOENT;
	}
	r->run_id = run_id;
	r->mode = col_text(r, st, 0);
	argv_from_json(s, r, (const char *)sqlite3_column_text(st, 1), &r->argv, &r->argc);
	r->started_ns = col_u64(st, 2);
	r->ended_ns = col_u64(st, 3);
	r->exit_code = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 4);
	r->uuid = col_text(r, st, 5);
	r->git_commit = col_text(r, st, 6);
	r->git_branch = col_text(r, st, 7);
	r->cwd = col_text(r, st, 8);
	r->hostname = col_text(r, st, 9);
	sqlite3_finalize(st);
	return load_labels(s, run_id, r);
}

int hl_store_load_report_filtered(struct hl_store *s, int64_t run_id,
				  const struct hl_report_filter *filter, struct hl_report *r,
				  hl_store_process_fn fn, void *ctx)
{
	struct loader ld;
	int rc = load_run(s, run_id, r);

	if (rc)
		return rc;
	rc = loader_open(&ld, s, run_id, filter);
	ld.tree_arena = &r->arena;
	if (!rc && fn)
		rc = fn(ctx, NULL); /* the run's header is loaded */
	if (!rc)
		rc = load_processes(&ld, r, fn, ctx);
	loader_close(&ld);
	return rc;
}

int hl_store_load_report(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	return hl_store_load_report_filtered(s, run_id, NULL, r, NULL, NULL);
}
