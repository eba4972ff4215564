/*
 * reporter/store/store.c: writes runs and their processes into SQLite (see
 * store.h, schema.sql; opening and migrations are in store_open.c).
 */
#include "store.h"

#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame_tree.h"
#include "stack_memo.h"
#include "state.h"
#include "store_int.h"
#include "text_bytes.h"
#include "util.h"


/* ---- errors ------------------------------------------------------------- */

static int fail(struct hl_store *s, int rc, const char *what)
{
	return hl_store_fail(s, rc, what);
}

static int exec(struct hl_store *s, const char *sql)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : fail(s, rc, "write");
}

static int prepare(struct hl_store *s, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : fail(s, rc, "prepare");
}

/* Steps a write statement to completion and resets it for reuse. */
static int step_done(struct hl_store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : fail(s, rc, "write");
}

int64_t hl_store_pages_written(const struct hl_store *s)
{
	int now = 0, high = 0;

	if (sqlite3_db_status(s->db, SQLITE_DBSTATUS_CACHE_WRITE, &now, &high, 0) != SQLITE_OK)
		return -1;
	return now;
}

/* ---- writing -------------------------------------------------------------- */

int hl_store_batch_begin(struct hl_store *s)
{
	int err = exec(s, "PRAGMA foreign_keys=OFF");

	if (!err)
		err = exec(s, "BEGIN IMMEDIATE");
	if (err)
		sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
	s->batch = !err;
	return err;
}

int hl_store_batch_abort(struct hl_store *s)
{
	int rc;

	if (!s->batch)
		return 0;
	s->batch = false;
	rc = sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	/* Rows the maps name are gone with the transaction. */
	hl_store_forget_run(s);
	sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : fail(s, rc, "rollback");
}

int hl_store_batch_end(struct hl_store *s)
{
	int err;

	if (!s->batch)
		return 0;
	s->batch = false;
	err = exec(s, "COMMIT");
	if (err) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		hl_store_forget_run(s);
	}
	sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
	return err;
}

void hl_store_forget_run(struct hl_store *s)
{
	hl_map_destroy(&s->symbols);
	hl_map_destroy(&s->sites);
	hl_map_destroy(&s->stacks);
	for (int k = 0; k < HL_STORE_SETS; k++)
		hl_map_destroy(&s->sets[k]);
	hl_frame_tree_destroy(&s->tree);
	s->symbols_run = 0;
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}


static char *argv_to_json(const char *const *argv, uint32_t argc)
{
	json_t *a = json_array();
	char *text;

	for (uint32_t i = 0; i < argc; i++)
		json_array_append_new(a, hl_json_bytes(argv[i])); /* text_bytes.h */
	text = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return text;
}

static int write_labels(struct hl_store *s, const struct hl_report *r, int64_t run_id)
{
	sqlite3_stmt *st;
	int err = r->nlabels ? prepare(s, "INSERT OR REPLACE INTO run_labels(run_id, key, value)"
				       " VALUES (?,?,?)", &st) : 0;

	for (size_t i = 0; i < r->nlabels && !err; i++) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 2, r->label_keys[i], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, r->label_values[i], -1, SQLITE_STATIC);
		err = step_done(s, st);
	}
	if (r->nlabels)
		sqlite3_finalize(st);
	return err;
}

int hl_store_run_begin(struct hl_store *s, const struct hl_report *r, int64_t *run_id)
{
	sqlite3_stmt *st;
	char cwd[4096], host[256];
	char *argv = argv_to_json(r->argv, r->argc);
	const char *program = r->argc ? strrchr(r->argv[0], '/') : NULL;
	int err = prepare(s, "INSERT INTO runs(mode, program, argv, cwd, hostname, "
			  "started_ns, git_commit, git_branch, uuid) VALUES (?,?,?,?,?,?,?,?,?)", &st);

	*run_id = 0;
	if (!err) {
		program = program ? program + 1 : r->argc ? r->argv[0] : NULL;
		sqlite3_bind_text(st, 1, r->mode, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, program, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, argv, -1, SQLITE_STATIC);
		/* The report's (an imported one's are where it ran), else ours. */
		if (r->cwd)
			sqlite3_bind_text(st, 4, r->cwd, -1, SQLITE_STATIC);
		else if (!r->imported && getcwd(cwd, sizeof(cwd)))
			sqlite3_bind_text(st, 4, cwd, -1, SQLITE_STATIC);
		if (r->hostname)
			sqlite3_bind_text(st, 5, r->hostname, -1, SQLITE_STATIC);
		else if (!r->imported && gethostname(host, sizeof(host)) == 0)
			sqlite3_bind_text(st, 5, host, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, (int64_t)r->started_ns);
		bind_opt_text(st, 7, r->git_commit);
		bind_opt_text(st, 8, r->git_branch);
		bind_opt_text(st, 9, r->uuid);
		err = step_done(s, st);
		sqlite3_finalize(st);
	}
	free(argv);
	if (!err)
		*run_id = sqlite3_last_insert_rowid(s->db);
	if (!err)
		err = write_labels(s, r, *run_id);
	return err;
}

int hl_store_run_end(struct hl_store *s, int64_t run_id, uint64_t ended_ns, int exit_code)
{
	sqlite3_stmt *st;
	int err = prepare(s, "UPDATE runs SET ended_ns=?, exit_code=? WHERE id=?", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, (int64_t)ended_ns);
	if (exit_code >= 0)
		sqlite3_bind_int(st, 2, exit_code);
	sqlite3_bind_int64(st, 3, run_id);
	err = step_done(s, st);
	sqlite3_finalize(st);
	return err;
}

int hl_store_run_delete(struct hl_store *s, int64_t run_id)
{
	sqlite3_stmt *st;
	int err = prepare(s, "DELETE FROM runs WHERE id = ?", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	err = step_done(s, st);
	sqlite3_finalize(st);
	return err;
}

/* Prepared statements of one process write. */
enum {
	ST_PROCESS, ST_SUMMARY, ST_SYMBOL, ST_SYMBOL_FIND, ST_FRAME, ST_SAVEPOINT, ST_RELEASE,
	ST_FRAMES, ST_FRAME_BASE, ST_STACK_BASE, ST_SITE, ST_ERROR,
	ST_CHECK, ST_CHECK_RECORD, ST_UNSTOPPED, ST_SIZE_BIN, ST_FD_SUMMARY, ST_FD, ST_COUNT
};

/* Frame rows go in FRAMES_PER_INSERT at a time: most of a row's cost was
 * the statement around it. */
#define FRAMES_PER_INSERT 32
#define FRAME_ROW "(?,?,?,?,?,?)"
#define FRAME_COLUMNS 6
#define FRAME_ROWS4 FRAME_ROW "," FRAME_ROW "," FRAME_ROW "," FRAME_ROW
#define FRAME_ROWS16 FRAME_ROWS4 "," FRAME_ROWS4 "," FRAME_ROWS4 "," FRAME_ROWS4
#define FRAME_INSERT "INSERT INTO frames(id, run_id, parent_id, address, symbol_id, inlined) VALUES "
_Static_assert(FRAMES_PER_INSERT == 32, "FRAME_ROWS32");
/* the statements, then two per batch (many rows, one row) of six batches */
_Static_assert(ST_COUNT + 12 <= HL_STORE_STATEMENTS, "hl_store.statements");
static const char *const statement_sql[ST_COUNT] = {
	[ST_PROCESS] = "INSERT INTO processes(run_id, serial, pid, ppid, parent_id, origin,"
		" exe, argv, started_ns, ended_ns, exit_how, exit_status, exit_signal,"
		" scanned, test_name, all_threads_stopped, no_exit_record, recovered_events,"
		" modules_from, aggregates_from, leaks_from, fatal_signal, fatal_code,"
		" fatal_address, fatal_stack_id, standalone)"
		" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_SUMMARY] = "INSERT INTO summaries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_SYMBOL] = "INSERT INTO symbols(key, module, module_offset, function,"
		" file, line) VALUES (?,?,?,?,?,?)",
	[ST_SYMBOL_FIND] = "SELECT id FROM symbols WHERE key = ?1 AND module IS ?2"
		" AND module_offset IS ?3 AND function IS ?4 AND file IS ?5 AND line IS ?6",
	[ST_FRAME] = FRAME_INSERT FRAME_ROW,
	[ST_SAVEPOINT] = "SAVEPOINT process",
	[ST_RELEASE] = "RELEASE process",
	[ST_FRAMES] = FRAME_INSERT FRAME_ROWS16 "," FRAME_ROWS16,
	[ST_FRAME_BASE] = "SELECT coalesce(max(id), 0) FROM frames",
	[ST_STACK_BASE] = "SELECT coalesce(max(id), 0) FROM stacks",
	[ST_SITE] = "INSERT INTO leak_sites(fingerprint, function, first_run_id, last_run_id)"
		" VALUES (?1,?2,?3,?3) ON CONFLICT(fingerprint) DO UPDATE SET"
		" last_run_id = max(last_run_id, excluded.last_run_id),"
		" first_run_id = min(first_run_id, excluded.first_run_id)",
	[ST_ERROR] = "INSERT INTO errors(process_id, kind, address, block_address,"
		" block_size, stack_id, alloc_stack_id, free_stack_id, time_ns, call, detail)"
		" VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[ST_CHECK] = "INSERT INTO checks(process_id, seq, time_ns, by_signal, all_threads_stopped,"
		" scanned, leak_class, bytes, blocks, records_total) VALUES (?,?,?,?,?,?,?,?,?,?)",
	[ST_CHECK_RECORD] = "INSERT INTO check_records(process_id, seq, rank, stack_id,"
		" leak_class, bytes, indirect_bytes, blocks, new_bytes, new_indirect_bytes,"
		" new_blocks, fingerprint, suppressed, suppression)"
		" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
	[ST_UNSTOPPED] = "INSERT INTO unstopped_threads(process_id, check_seq, tid) VALUES (?,?,?)",
	[ST_SIZE_BIN] = "INSERT INTO size_bins(process_id, bin, allocs, bytes) VALUES (?,?,?,?)",
	[ST_FD_SUMMARY] = "INSERT INTO fd_summaries(process_id, open, std, std_listed)"
		" VALUES (?,?,?,?)",
	[ST_FD] = "INSERT INTO open_fds(process_id, position, fd, kind, family, text, inherited,"
		" unseen, stack_id) VALUES (?,?,?,?,?,?,?,?,?)",
};

struct writer {
	struct hl_store *s;
	sqlite3_stmt *st[ST_COUNT];
	int64_t run_id;
	int64_t process_id;
	int64_t parent_id;    /* the parent's processes.id, 0 if not stored */
	struct hl_process *p;
	struct hl_symbolizer *sym;
	int64_t *stack_ids;   /* stack ref - 1 -> stacks.id, 0 = not stored */
	uint64_t *module_keys; /* module index -> its identity (module_key) */
	uint64_t layout;      /* layout_key() */
	/* by HL_STORE_SET_*: the hash of the process's rows (0: it has none),
	 * and the process of the run that has the same ones (0: none) */
	uint64_t set_hash[HL_STORE_SETS];
	int64_t set_from[HL_STORE_SETS];
	int64_t last_frame_id; /* frames.id given to the last frame written */
	int64_t last_stack_id; /* stacks.id given to the last stack written */
	/* the stack rows to insert: stacks.id, hash, innermost frames.id */
	struct new_stack {
		int64_t id, hash, leaf;
		size_t index;
	} *new_stacks;
	size_t nnew_stacks, new_stacks_cap;
	/* one aggregate row per shared stack the process allocated from */
	struct aggregate_row {
		int64_t stack_id;
		uint64_t allocs, bytes, frees, peak_live_bytes, leaked_bytes, leaked_blocks;
		uint64_t temporaries;
		uint64_t at_peak_bytes; /* held at the process's peak */
	} *aggregates_rows;
	size_t naggregates, aggregates_cap;
	struct batch *stacks, *aggregates, *leaks, *modules, *samples, *series;
	/* the per-stack series rows to insert (write_series) */
	struct series_row {
		int64_t stack_id;
		uint32_t sample;
		uint64_t bytes;
	} *series_rows;
	size_t nseries, series_cap;
	struct frame_row {
		int64_t id, parent, address, symbol;
		int inlined;
	} frames[FRAMES_PER_INSERT]; /* rows not yet inserted */
	size_t nframes;
	/* The last stack written, outermost frame first: its return addresses
	 * and, for each, the tree node of that address's innermost (inlined)
	 * frame. The next stack usually shares a long outer part. */
	uint64_t path_address[HL_WIRE_MAX_FRAMES];
	uint32_t path_node[HL_WIRE_MAX_FRAMES];
	uint32_t path_len;
};

/* ---- parents --------------------------------------------------------------
 * processes.parent_id names the fork parent or exec predecessor. A daemon
 * stores each process when it ends, so a child is often stored before its
 * parent: the child is then remembered as an orphan (its parent's serial),
 * and the parent's store fills in the child's parent_id. */

struct hl_store_orphan {
	int64_t run_id;
	uint64_t parent_serial;
	int64_t process_id;
};

/* The stored parent's processes.id, or 0 if it is not stored (yet). */
static int64_t parent_db_id(struct writer *w)
{
	const struct hl_process *p = w->p;
	sqlite3_stmt *st;
	int64_t id = 0;

	if (p->parent && p->parent->db_id)
		return p->parent->db_id;
	if (!p->parent_serial || sqlite3_prepare_v2(w->s->db, "SELECT id FROM processes"
			" WHERE run_id = ? AND serial = ?", -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, w->run_id);
	sqlite3_bind_int64(st, 2, (int64_t)p->parent_serial);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

/* Sets parent_id of the orphans waiting for this process. */
static int adopt_orphans(struct writer *w)
{
	struct hl_store *s = w->s;
	sqlite3_stmt *st;
	int err = 0;

	if (!s->norphans)
		return 0;
	err = prepare(s, "UPDATE processes SET parent_id = ? WHERE id = ?", &st);
	for (size_t i = 0; i < s->norphans && !err; i++) {
		if (s->orphans[i].run_id != w->run_id ||
		    s->orphans[i].parent_serial != w->p->serial)
			continue;
		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_int64(st, 2, s->orphans[i].process_id);
		err = step_done(s, st);
	}
	sqlite3_finalize(st);
	return err;
}

/* After the commit: the adopted orphans are done; p may be one now. */
static void update_orphans(struct hl_store *s, int64_t run_id, const struct hl_process *p,
			   bool orphan)
{
	size_t out = 0;

	for (size_t i = 0; i < s->norphans; i++)
		if (s->orphans[i].run_id != run_id || s->orphans[i].parent_serial != p->serial)
			s->orphans[out++] = s->orphans[i];
	s->norphans = out;
	if (!orphan)
		return;
	hl_grow((void **)&s->orphans, &s->orphans_cap, s->norphans, sizeof(*s->orphans));
	s->orphans[s->norphans++] = (struct hl_store_orphan){ run_id, p->parent_serial, p->db_id };
}

static void bind_stack(struct writer *w, sqlite3_stmt *st, int i, uint32_t ref);

static int write_process_row(struct writer *w)
{
	struct hl_process *p = w->p;
	sqlite3_stmt *st = w->st[ST_PROCESS];
	char *argv = argv_to_json((const char *const *)p->argv, p->argc);
	const char *origin = p->origin == HL_ORIGIN_FORK ? "fork" :
			     p->origin == HL_ORIGIN_EXEC ? "exec" : "start";
	int err;

	sqlite3_bind_int64(st, 1, w->run_id);
	sqlite3_bind_int64(st, 2, (int64_t)p->serial);
	sqlite3_bind_int64(st, 3, p->pid);
	sqlite3_bind_int64(st, 4, p->ppid);
	w->parent_id = parent_db_id(w);
	if (w->parent_id)
		sqlite3_bind_int64(st, 5, w->parent_id);
	sqlite3_bind_text(st, 6, origin, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, p->exe, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, argv, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 9, (int64_t)p->start_realtime_ns);
	sqlite3_bind_int64(st, 10, (int64_t)p->end_realtime_ns);
	sqlite3_bind_text(st, 11, hl_exit_how_name(p->how), -1, SQLITE_STATIC);
	if (p->how == HL_EXIT_SIGNAL)
		sqlite3_bind_int(st, 13, p->status);
	else if (p->how == HL_EXIT_NORMAL || p->how == HL_EXIT_UNDERSCORE)
		sqlite3_bind_int(st, 12, p->status);
	sqlite3_bind_int(st, 14, p->scanned);
	if (p->test_name)
		sqlite3_bind_text(st, 15, p->test_name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 16, !(p->scanned && p->live_unstopped));
	sqlite3_bind_int(st, 17, !p->has_exit && p->how != HL_EXIT_EXEC);
	if (p->shared_buffers)
		sqlite3_bind_int64(st, 18, (int64_t)p->recovered_events);
	for (int k = 0; k < HL_STORE_SETS; k++)
		if (w->set_from[k])
			sqlite3_bind_int64(st, 19 + k, w->set_from[k]);
	_Static_assert(HL_STORE_SETS == 3, "fatal_signal is column 22");
	if (p->fatal.signal) {
		sqlite3_bind_int(st, 22, (int)p->fatal.signal);
		sqlite3_bind_int(st, 23, p->fatal.code);
		sqlite3_bind_int64(st, 24, (int64_t)p->fatal.address);
		bind_stack(w, st, 25, p->fatal.stack);
	}
	if (!p->has_exit && p->how != HL_EXIT_EXEC && hl_report_standalone_name(p->standalone))
		sqlite3_bind_text(st, 26, hl_report_standalone_name(p->standalone), -1,
				  SQLITE_STATIC);
	err = step_done(w->s, st);
	free(argv);
	w->process_id = sqlite3_last_insert_rowid(w->s->db);
	p->db_id = err ? 0 : w->process_id;
	return err ? err : adopt_orphans(w);
}

static int write_summary(struct writer *w)
{
	const struct hl_process *p = w->p;
	sqlite3_stmt *st = w->st[ST_SUMMARY];
	const uint64_t v[] = {
		p->in_use_bytes, p->in_use_blocks, p->allocs, p->frees,
		p->bytes_allocated, p->peak_bytes, p->inherited_bytes,
		p->inherited_blocks, p->dropped_events, p->unmatched_frees,
		p->unfreed_superseded, p->live_mismatch, p->nerrors,
	};

	sqlite3_bind_int64(st, 1, w->process_id);
	for (size_t i = 0; i < HL_ARRAY_SIZE(v); i++)
		sqlite3_bind_int64(st, (int)i + 2, (int64_t)v[i]);
	return step_done(w->s, st);
}

/* The symbol's columns from parameter 1: key, module, offset, function,
 * file, line (NULL where unknown, as the rows have them). Not copied: the
 * statement is stepped and reset before the symbolizer's strings change. */
static void bind_symbol(sqlite3_stmt *st, int64_t content, const struct hl_frame_info *f)
{
	sqlite3_bind_int64(st, 1, content);
	if (f->module)
		sqlite3_bind_text(st, 2, f->module, -1, SQLITE_STATIC);
	if (f->module)
		sqlite3_bind_int64(st, 3, (int64_t)f->offset);
	if (f->function)
		sqlite3_bind_text(st, 4, f->function, -1, SQLITE_STATIC);
	if (f->file)
		sqlite3_bind_text(st, 5, f->file, -1, SQLITE_STATIC);
	if (f->line)
		sqlite3_bind_int(st, 6, (int)f->line);
}

/* symbols.id for a symbolized frame: the row any run stored with the same
 * content (symbols_key), else a new one. Remembered per run by frame_info
 * pointer (the symbolizer's answers live as long as the run). */
static int symbol_id(struct writer *w, const struct hl_frame_info *f, int64_t *id)
{
	struct hl_store *s = w->s;
	uint64_t key = (uint64_t)(uintptr_t)f;
	const uint64_t *known = hl_map_find(&s->symbols, key);
	sqlite3_stmt *find = w->st[ST_SYMBOL_FIND];
	int64_t content;
	int rc, err;

	if (known) {
		*id = (int64_t)*known;
		return 0;
	}
	content = hl_symbol_key(f->module, f->module != NULL, f->offset, f->function, f->file,
				f->line);
	bind_symbol(find, content, f);
	rc = sqlite3_step(find);
	*id = rc == SQLITE_ROW ? sqlite3_column_int64(find, 0) : 0;
	sqlite3_reset(find);
	sqlite3_clear_bindings(find);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fail(s, rc, "symbols");
	if (!*id) {
		bind_symbol(w->st[ST_SYMBOL], content, f);
		if ((err = step_done(s, w->st[ST_SYMBOL])))
			return err;
		*id = sqlite3_last_insert_rowid(s->db);
	}
	hl_map_insert(&s->symbols, key, (uint64_t)*id);
	return 0;
}

static void bind_frame(struct writer *w, sqlite3_stmt *st, int first, const struct frame_row *r)
{
	sqlite3_bind_int64(st, first, r->id);
	sqlite3_bind_int64(st, first + 1, w->run_id);
	if (r->parent)
		sqlite3_bind_int64(st, first + 2, r->parent);
	else
		sqlite3_bind_null(st, first + 2);
	sqlite3_bind_int64(st, first + 3, r->address);
	sqlite3_bind_int64(st, first + 4, r->symbol);
	sqlite3_bind_int(st, first + 5, r->inlined);
}

/* Inserts the pending frame rows: a full set with one statement, fewer one
 * by one. */
static int flush_frames(struct writer *w)
{
	int err = 0;

	if (w->nframes == FRAMES_PER_INSERT) {
		for (size_t i = 0; i < w->nframes; i++)
			bind_frame(w, w->st[ST_FRAMES], (int)i * FRAME_COLUMNS + 1, &w->frames[i]);
		err = step_done(w->s, w->st[ST_FRAMES]);
	} else {
		for (size_t i = 0; i < w->nframes && !err; i++) {
			bind_frame(w, w->st[ST_FRAME], 1, &w->frames[i]);
			err = step_done(w->s, w->st[ST_FRAME]);
		}
	}
	w->nframes = 0;
	return err;
}

static int64_t frame_db_id(const struct writer *w, uint32_t node)
{
	return node ? w->s->frame_ids[node - 1] : 0;
}

/* A module's identity in the run: its file and where it was loaded. */
static uint64_t module_key(const struct hl_module *m)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *c = m->path; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	for (uint32_t i = 0; i < m->build_id_len; i++)
		h = (h ^ m->build_id[i]) * 0x100000001b3ull;
	h = (h ^ m->base) * 0x9e3779b97f4a7c15ull;
	return (h ^ (h >> 31)) | 1; /* 0 is "no module" */
}

static uint64_t frame_module_key(const struct writer *w, const struct hl_process_stack *stack,
				 uint32_t i)
{
	const struct hl_module *m = hl_process_module_for(w->p, stack->frames[i], stack->seq);

	return m ? w->module_keys[m - w->p->modules] : 0;
}

/* The process's modules as one key, when no two of them ever covered the
 * same address (then the module of an address does not depend on when the
 * stack was taken); 0 otherwise. A fork child has its parent's. */
static uint64_t layout_key(const struct writer *w)
{
	const struct hl_process *p = w->p;
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < p->nmodules; i++) {
		const struct hl_module *m = &p->modules[i];

		for (size_t j = 0; j < i; j++)
			if (m->low < p->modules[j].high && p->modules[j].low < m->high)
				return 0;
		h = (h ^ w->module_keys[i]) * 0xff51afd7ed558ccdull;
		h = (h ^ m->low) * 0xc4ceb9fe1a85ec53ull;
		h = (h ^ m->high) * 0xff51afd7ed558ccdull;
		h ^= h >> 31;
	}
	return h | 1;
}

/* A stack's content, by which the processes of a run share its row: depth,
 * truncation, and each return address with the module it is in (a fork
 * child has its parent's layout; an exec image may have another file at
 * the same address): the modules are the layout's, else looked up per
 * frame. Never 0. The hash is the identity (63 bits: two different stacks
 * of a run of n stacks share one with a chance of n^2 / 2^64, 5e-10 for
 * 100k stacks); so are the hashes of a process's sets (find_sets). */
static int64_t stack_hash(const struct writer *w, const struct hl_process_stack *stack)
{
	uint64_t h = ((uint64_t)stack->depth << 1 | (stack->truncated != 0)) + 0x9e3779b97f4a7c15ull;

	h = (h ^ w->layout) * 0xc4ceb9fe1a85ec53ull;
	/* The addresses' hash was taken when the stack arrived: here a fork
	 * child's few hundred stacks would be read back from all over memory. */
	h = (h ^ (stack->frames_hash ? stack->frames_hash :
		  hl_stack_frames_hash(stack->frames, stack->depth))) * 0xff51afd7ed558ccdull;
	h ^= h >> 32;
	for (uint32_t i = 0; i < stack->depth && !w->layout; i++) {
		h = (h ^ stack->frames[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		h = (h ^ frame_module_key(w, stack, i)) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
	}
	h &= INT64_MAX; /* stored as a positive SQLite integer */
	return (int64_t)(h ? h : 1);
}

/* Adds the stack's frames to the call tree, from the outermost in; frames
 * new to the tree are queued for insertion. *leaf: the innermost frame's
 * frames.id (0 for a stack without frames). The outer frames it shares
 * with the previous stack take their nodes from w->path, without a lookup
 * or symbolization (cc1's 7.8k stacks: 77% of their 157k return addresses). */
static int write_frames(struct writer *w, const struct hl_process_stack *stack, int64_t *leaf)
{
	uint32_t node = 0, shared = 0;
	int err = 0;

	while (shared < stack->depth && shared < w->path_len &&
	       w->path_address[shared] == stack->frames[stack->depth - 1 - shared])
		node = w->path_node[shared++];
	w->path_len = shared;
	for (uint32_t i = stack->depth - shared; i-- > 0 && !err;) {
		const struct hl_module *m =
			hl_process_module_for(w->p, stack->frames[i], stack->seq);
		uint64_t mkey = m ? w->module_keys[m - w->p->modules] : 0;
		size_t n;
		const struct hl_frame_info *f = hl_symbolize(w->sym, m, stack->frames[i], &n);

		/* f[0] is the innermost of the address's (inlined) frames */
		for (size_t j = n; j-- > 0 && !err;) {
			uint32_t parent = node;
			bool added;
			struct frame_row *r;

			node = hl_frame_tree_child(&w->s->tree, parent, stack->frames[i],
						   (uint32_t)j, mkey, &added);
			if (!added)
				continue;
			hl_grow((void **)&w->s->frame_ids, &w->s->frame_ids_cap, node - 1,
				sizeof(*w->s->frame_ids));
			w->s->frame_ids[node - 1] = ++w->last_frame_id;
			r = &w->frames[w->nframes];
			err = symbol_id(w, &f[j], &r->symbol);
			if (err)
				break;
			r->id = frame_db_id(w, node);
			r->parent = frame_db_id(w, parent);
			r->address = (int64_t)f[j].address;
			r->inlined = f[j].inlined;
			if (++w->nframes == FRAMES_PER_INSERT)
				err = flush_frames(w);
		}
		w->path_address[w->path_len] = stack->frames[i];
		w->path_node[w->path_len++] = node;
	}
	*leaf = frame_db_id(w, node);
	return err;
}

/* ---- batched rows --------------------------------------------------------
 * Stacks, their aggregates, loss records, modules and timeline samples go
 * BATCH_ROWS to an INSERT, as
 * frames do: a fork child of a shell writes a few hundred of each, and the
 * statement around a row cost more than the row (435 such processes: store
 * CPU 520 -> 440-460 ms). bind(w, st, first, index) binds row `index`'s
 * columns from parameter `first`, and may be called again for the same row. */
#define BATCH_ROWS 32
typedef void (*bind_row_fn)(struct writer *w, sqlite3_stmt *st, int first, size_t index);
struct batch {
	const char *insert;   /* "INSERT INTO t(columns) VALUES " */
	const char *row;      /* "(?,?,?)" */
	int columns;
	bind_row_fn bind;
	sqlite3_stmt **many, **one; /* in the store's cache (hl_store.statements) */
	size_t rows[BATCH_ROWS];
	size_t n;
};

static int batch_prepare(struct writer *w, struct batch *b, size_t rows, sqlite3_stmt **st)
{
	size_t len = strlen(b->insert) + rows * (strlen(b->row) + 1) + 1;
	char *sql = hl_xmalloc(len), *o = sql;
	int err;

	o += sprintf(o, "%s", b->insert);
	for (size_t i = 0; i < rows; i++)
		o += sprintf(o, "%s%s", i ? "," : "", b->row);
	err = prepare(w->s, sql, st);
	free(sql);
	return err;
}

static int batch_flush(struct writer *w, struct batch *b)
{
	int err = 0;

	if (b->n == BATCH_ROWS) {
		if (!*b->many)
			err = batch_prepare(w, b, BATCH_ROWS, b->many);
		for (size_t i = 0; i < b->n && !err; i++)
			b->bind(w, *b->many, (int)i * b->columns + 1, b->rows[i]);
		if (!err)
			err = step_done(w->s, *b->many);
	} else if (b->n) {
		if (!*b->one)
			err = batch_prepare(w, b, 1, b->one);
		for (size_t i = 0; i < b->n && !err; i++) {
			b->bind(w, *b->one, 1, b->rows[i]);
			err = step_done(w->s, *b->one);
		}
	}
	b->n = 0;
	return err;
}

static int batch_add(struct writer *w, struct batch *b, size_t index)
{
	b->rows[b->n++] = index;
	return b->n == BATCH_ROWS ? batch_flush(w, b) : 0;
}


static void bind_stack_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct new_stack *n = &w->new_stacks[index];
	const struct hl_process_stack *stack = &w->p->stacks[n->index];

	sqlite3_bind_int64(st, i, n->id);
	sqlite3_bind_int64(st, i + 1, w->run_id);
	sqlite3_bind_int64(st, i + 2, n->hash);
	sqlite3_bind_int(st, i + 3, stack->depth);
	sqlite3_bind_int(st, i + 4, stack->truncated);
	char fingerprint[HL_FINGERPRINT_LEN + 1];

	if (n->leaf)
		sqlite3_bind_int64(st, i + 5, n->leaf);
	else
		sqlite3_bind_null(st, i + 5);
	/* the site's identity, so the run's queries count one site once
	 * whatever the number of processes (images, addresses) it is in */
	hl_stack_fingerprint(w->sym, w->p, stack, fingerprint);
	if (fingerprint[0])
		sqlite3_bind_text(st, i + 6, fingerprint, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i + 6);
}

static void bind_aggregate_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct aggregate_row *a = &w->aggregates_rows[index];

	sqlite3_bind_int64(st, i, w->process_id);
	sqlite3_bind_int64(st, i + 1, a->stack_id);
	sqlite3_bind_int64(st, i + 2, (int64_t)a->allocs);
	sqlite3_bind_int64(st, i + 3, (int64_t)a->bytes);
	sqlite3_bind_int64(st, i + 4, (int64_t)a->frees);
	sqlite3_bind_int64(st, i + 5, (int64_t)a->peak_live_bytes);
	sqlite3_bind_int64(st, i + 6, (int64_t)a->leaked_bytes);
	sqlite3_bind_int64(st, i + 7, (int64_t)a->leaked_blocks);
	sqlite3_bind_int64(st, i + 8, (int64_t)a->temporaries);
	sqlite3_bind_int64(st, i + 9, (int64_t)a->at_peak_bytes);
}

/* The run's row for the stack: the one an earlier process of the run
 * stored with the same content, else a new row with its frames. */
static int write_stack(struct writer *w, size_t index)
{
	const struct hl_process_stack *stack = &w->p->stacks[index];
	int64_t hash = stack_hash(w, stack);
	bool added;
	uint64_t *known = hl_map_find_or_insert(&w->s->stacks, (uint64_t)hash, &added);
	struct new_stack *n;
	int64_t leaf;
	int err;

	if (!added) {
		w->stack_ids[index] = (int64_t)*known;
		return 0;
	}
	if ((err = write_frames(w, stack, &leaf)))
		return err;
	w->stack_ids[index] = ++w->last_stack_id;
	*known = (uint64_t)w->last_stack_id;
	hl_grow((void **)&w->new_stacks, &w->new_stacks_cap, w->nnew_stacks,
		sizeof(*w->new_stacks));
	n = &w->new_stacks[w->nnew_stacks++];
	*n = (struct new_stack){ w->last_stack_id, hash, leaf, index };
	return batch_add(w, w->stacks, w->nnew_stacks - 1);
}

static int aggregate_cmp(const void *a, const void *b)
{
	const struct aggregate_row *x = a, *y = b;

	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* One aggregate row per shared stack the process allocated from, in
 * stacks.id order (two of its stacks may share one: a fork child may
 * define again a stack it inherited; their counts are added). What it
 * leaked from a stack it only inherited is in its loss records; such a row
 * was most of a fork child's rows. */
static void build_aggregates(struct writer *w)
{
	const struct hl_process *p = w->p;
	size_t n = 0;

	for (size_t i = 0; i < p->nstacks; i++) {
		const struct hl_process_stack *stack = &p->stacks[i];

		if (!stack->allocs || w->stack_ids[i] <= 0)
			continue;
		hl_grow((void **)&w->aggregates_rows, &w->aggregates_cap, w->naggregates,
			sizeof(*w->aggregates_rows));
		w->aggregates_rows[w->naggregates++] = (struct aggregate_row){
			w->stack_ids[i], stack->allocs, stack->bytes, stack->frees,
			stack->peak_live_bytes, stack->leaked_bytes, stack->leaked_blocks,
			stack->temporaries,
			hl_stack_at_peak(p, stack),
		};
	}
	if (w->naggregates > 1)
		qsort(w->aggregates_rows, w->naggregates, sizeof(*w->aggregates_rows),
		      aggregate_cmp);
	for (size_t i = 0; i < w->naggregates; i++) {
		struct aggregate_row *a = &w->aggregates_rows[i], *o;

		if (!n || w->aggregates_rows[n - 1].stack_id != a->stack_id) {
			w->aggregates_rows[n++] = *a;
			continue;
		}
		o = &w->aggregates_rows[n - 1];
		o->allocs += a->allocs;
		o->bytes += a->bytes;
		o->frees += a->frees;
		o->peak_live_bytes += a->peak_live_bytes;
		o->leaked_bytes += a->leaked_bytes;
		o->leaked_blocks += a->leaked_blocks;
		o->temporaries += a->temporaries;
		o->at_peak_bytes += a->at_peak_bytes;
	}
	w->naggregates = n;
}

static int write_aggregates(struct writer *w)
{
	int err = 0;

	for (size_t i = 0; i < w->naggregates && !err; i++)
		err = batch_add(w, w->aggregates, i);
	return err ? err : batch_flush(w, w->aggregates);
}

/* The run's stack rows and call tree as the store has them (a new run:
 * none; the run the last process belonged to: the maps are up to date). */
static int load_run_maps(struct writer *w)
{
	struct hl_store *s = w->s;
	sqlite3_stmt *st;
	int rc, err;

	if (s->symbols_run == w->run_id)
		return 0;
	hl_store_forget_run(s);
	s->symbols_run = w->run_id;
	/* A run written again by this connection (a daemon serves several):
	 * its stacks are found again; frames are written anew for new ones. */
	err = prepare(s, "SELECT hash, id FROM stacks WHERE run_id = ? AND hash IS NOT NULL", &st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, w->run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		hl_map_insert(&s->stacks, (uint64_t)sqlite3_column_int64(st, 0),
			      (uint64_t)sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fail(s, rc, "stacks");
}

static int max_id(struct writer *w, sqlite3_stmt *st, const char *what, int64_t *out)
{
	if (sqlite3_step(st) != SQLITE_ROW) {
		int rc = sqlite3_reset(st);

		return fail(w->s, rc ? rc : SQLITE_ERROR, what);
	}
	*out = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return 0;
}

/* Stacks that allocated, leaked, or are named by an error or a check's
 * loss record. */
static int write_stacks(struct writer *w)
{
	struct hl_process *p = w->p;
	int err;

	/* The write lock is ours (BEGIN IMMEDIATE): ids above the largest are free. */
	if ((err = max_id(w, w->st[ST_FRAME_BASE], "frames", &w->last_frame_id)) ||
	    (err = max_id(w, w->st[ST_STACK_BASE], "stacks", &w->last_stack_id)) ||
	    (err = load_run_maps(w)))
		return err;
	w->stack_ids = hl_xcalloc(p->nstacks + 1, sizeof(*w->stack_ids));
	w->module_keys = hl_xcalloc(p->nmodules + 1, sizeof(*w->module_keys));
	for (size_t i = 0; i < p->nmodules; i++)
		w->module_keys[i] = module_key(&p->modules[i]);
	w->layout = layout_key(w);
	for (size_t i = 0; i < p->nerrors; i++) {
		const struct hl_error_event *e = &p->errors[i];
		const uint32_t refs[] = { e->stack, e->alloc_stack, e->free_stack };

		for (size_t j = 0; j < 3; j++)
			if (refs[j] && refs[j] <= p->nstacks)
				w->stack_ids[refs[j] - 1] = -1; /* needed */
	}
	if (p->fatal.stack && p->fatal.stack <= p->nstacks)
		w->stack_ids[p->fatal.stack - 1] = -1; /* needed */
	for (size_t i = 0; i < p->nfds; i++)
		if (p->fds[i].stack && p->fds[i].stack <= p->nstacks)
			w->stack_ids[p->fds[i].stack - 1] = -1; /* needed */
	for (size_t i = 0; i < p->nchecks; i++)
		for (size_t j = 0; j < p->checks[i].nrecords; j++) {
			uint32_t ref = p->checks[i].records[j].g.stack;

			if (ref && ref <= p->nstacks)
				w->stack_ids[ref - 1] = -1; /* needed */
		}
	for (size_t i = 0; i < p->nstacks && !err; i++)
		if (p->stacks[i].allocs || p->stacks[i].leaked_blocks || w->stack_ids[i])
			err = write_stack(w, i);
	if (!err)
		err = flush_frames(w);
	if (!err)
		err = batch_flush(w, w->stacks);
	if (!err)
		build_aggregates(w);
	return err;
}

static int64_t stack_db_id(const struct writer *w, uint32_t ref)
{
	return ref && ref <= w->p->nstacks ? w->stack_ids[ref - 1] : 0;
}

static void bind_stack(struct writer *w, sqlite3_stmt *st, int i, uint32_t ref)
{
	int64_t id = stack_db_id(w, ref);

	if (id > 0)
		sqlite3_bind_int64(st, i, id);
}

/* The leak's site in leak_sites: first and last run that leaked there.
 * Once per site and run: a fork child repeats most of its parent's records,
 * and every upsert lands at a random place in the fingerprint key. */
static int write_site(struct writer *w, const struct hl_leak_group *g)
{
	sqlite3_stmt *st = w->st[ST_SITE];
	uint64_t key = strtoull(g->fingerprint, NULL, 16);
	bool added = true;

	if (key)
		hl_map_find_or_insert(&w->s->sites, key, &added);
	if (!added)
		return 0;
	sqlite3_bind_text(st, 1, g->fingerprint, -1, SQLITE_STATIC);
	bind_opt_text(st, 2, g->site_function);
	sqlite3_bind_int64(st, 3, w->run_id);
	return step_done(w->s, st);
}

/* One row per loss record. Their blocks are not stored (a table of them,
 * leaked_blocks, was dropped: nothing read it, and a fork child wrote a row
 * for every block it inherited). */
static void bind_leak_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct hl_leak_group *g = &w->p->leaks[index];

	sqlite3_bind_int64(st, i, w->process_id);
	bind_stack(w, st, i + 1, g->stack);
	sqlite3_bind_text(st, i + 2, hl_leak_class_name(g->leak_class), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, i + 3, (int64_t)g->bytes);
	sqlite3_bind_int64(st, i + 4, (int64_t)g->blocks);
	sqlite3_bind_int64(st, i + 5, (int64_t)g->inherited_blocks);
	sqlite3_bind_int64(st, i + 6, (int64_t)index + 1);
	sqlite3_bind_int(st, i + 7, g->suppression || g->leak_class == HL_CLASS_SUPPRESSED);
	bind_opt_text(st, i + 8, g->fingerprint[0] ? g->fingerprint : NULL);
	bind_opt_text(st, i + 9, g->suppression);
	sqlite3_bind_int64(st, i + 10, (int64_t)g->indirect_bytes);
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 32);
}

/* The process's loss records as its rows would have them, in rank order:
 * equal for two processes whose rows would be equal. A record's fingerprint
 * comes from its stack's frames, so the stack's id stands for it; its
 * suppression is the policy's, named by the same string for every process
 * this reporter stores, so the pointer stands for the name. */
static uint64_t leaks_hash(const struct writer *w)
{
	uint64_t h = mix_u64(0x9e3779b97f4a7c15ull, w->p->nleaks);

	if (!w->p->nleaks)
		return 0;
	for (size_t i = 0; i < w->p->nleaks; i++) {
		const struct hl_leak_group *g = &w->p->leaks[i];

		h = mix_u64(h, (uint64_t)stack_db_id(w, g->stack));
		h = mix_u64(h, g->leak_class);
		h = mix_u64(h, g->bytes);
		h = mix_u64(h, g->blocks);
		h = mix_u64(h, g->inherited_blocks);
		h = mix_u64(h, g->indirect_bytes);
		h = mix_u64(h, (uint64_t)(uintptr_t)g->suppression);
	}
	return h | 1;
}

static uint64_t modules_hash(const struct writer *w)
{
	uint64_t h = mix_u64(0x9e3779b97f4a7c15ull, w->p->nmodules);

	if (!w->p->nmodules)
		return 0;
	for (size_t i = 0; i < w->p->nmodules; i++) {
		const struct hl_module *m = &w->p->modules[i];

		h = mix_u64(h, w->module_keys[i]); /* path, build-id, base */
		h = mix_u64(h, m->low);
		h = mix_u64(h, m->high);
		h = mix_u64(h, m->unload_seq != 0);
	}
	return h | 1;
}

static uint64_t aggregates_hash(const struct writer *w)
{
	uint64_t h = mix_u64(0x9e3779b97f4a7c15ull, w->naggregates);

	if (!w->naggregates)
		return 0;
	for (size_t i = 0; i < w->naggregates; i++) {
		const struct aggregate_row *a = &w->aggregates_rows[i];

		h = mix_u64(h, (uint64_t)a->stack_id);
		h = mix_u64(h, a->allocs);
		h = mix_u64(h, a->bytes);
		h = mix_u64(h, a->frees);
		h = mix_u64(h, a->peak_live_bytes);
		h = mix_u64(h, a->leaked_bytes);
		h = mix_u64(h, a->leaked_blocks);
		h = mix_u64(h, a->temporaries);
		h = mix_u64(h, a->at_peak_bytes);
	}
	return h | 1;
}

/* A process whose modules, aggregates or loss records are the same as an
 * earlier process's of the run (a fork child of a loop, most often) names
 * that process instead of storing them again (its leak sites are that
 * process's, already upserted). */
static void find_sets(struct writer *w)
{
	w->set_hash[HL_STORE_SET_MODULES] = modules_hash(w);
	w->set_hash[HL_STORE_SET_AGGREGATES] = aggregates_hash(w);
	w->set_hash[HL_STORE_SET_LEAKS] = leaks_hash(w);
	for (int k = 0; k < HL_STORE_SETS; k++) {
		const uint64_t *from = w->set_hash[k] ?
			hl_map_find(&w->s->sets[k], w->set_hash[k]) : NULL;

		w->set_from[k] = from ? (int64_t)*from : 0;
	}
}

/* The process's own sets, for the processes after it. */
static void remember_sets(struct writer *w)
{
	for (int k = 0; k < HL_STORE_SETS; k++)
		if (w->set_hash[k] && !w->set_from[k])
			hl_map_insert(&w->s->sets[k], w->set_hash[k], (uint64_t)w->process_id);
}

static int write_leaks(struct writer *w)
{
	int err = 0;

	for (size_t i = 0; i < w->p->nleaks && !err; i++) {
		const struct hl_leak_group *g = &w->p->leaks[i];

		err = batch_add(w, w->leaks, i);
		if (!err && g->fingerprint[0])
			err = write_site(w, g);
	}
	return err ? err : batch_flush(w, w->leaks);
}

static int write_errors(struct writer *w)
{
	sqlite3_stmt *st = w->st[ST_ERROR];
	int err = 0;

	for (size_t i = 0; i < w->p->nerrors && !err; i++) {
		const struct hl_error_event *e = &w->p->errors[i];

		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_text(st, 2, hl_error_kind_name(e->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)e->address);
		if (e->block_address) {
			sqlite3_bind_int64(st, 4, (int64_t)e->block_address);
			sqlite3_bind_int64(st, 5, (int64_t)e->block_size);
		}
		bind_stack(w, st, 6, e->stack);
		bind_stack(w, st, 7, e->alloc_stack);
		bind_stack(w, st, 8, e->free_stack);
		sqlite3_bind_int64(st, 9, (int64_t)hl_process_ticks_to_realtime(w->p, e->ticks));
		sqlite3_bind_text(st, 10, hl_error_call_name(e->call), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 11, (int64_t)e->detail);
		err = step_done(w->s, st);
	}
	return err;
}

/* track_fds: the counts, then each descriptor listed (none: not tracked). */
static int write_fds(struct writer *w)
{
	const struct hl_process *p = w->p;
	sqlite3_stmt *st = w->st[ST_FD_SUMMARY];
	int err;

	if (!p->fd_summary.seen)
		return 0;
	sqlite3_bind_int64(st, 1, w->process_id);
	sqlite3_bind_int64(st, 2, p->fd_summary.open);
	sqlite3_bind_int64(st, 3, p->fd_summary.std);
	sqlite3_bind_int(st, 4, p->fd_summary.all);
	err = step_done(w->s, st);
	st = w->st[ST_FD];
	for (size_t i = 0; i < p->nfds && !err; i++) {
		const struct hl_fd_event *f = &p->fds[i];

		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_int64(st, 2, (int64_t)i);
		sqlite3_bind_int(st, 3, f->fd);
		sqlite3_bind_text(st, 4, f->kind == HL_FD_SOCKET ? "socket" : "file", -1,
				  SQLITE_STATIC);
		if (f->kind == HL_FD_SOCKET && f->family)
			sqlite3_bind_int(st, 5, (int)f->family);
		if (f->text[0])
			sqlite3_bind_text(st, 6, f->text, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 7, !!(f->flags & HL_FD_INHERITED));
		sqlite3_bind_int(st, 8, !!(f->flags & HL_FD_UNSEEN));
		bind_stack(w, st, 9, f->stack);
		err = step_done(w->s, st);
	}
	return err;
}

static void bind_module_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct hl_module *m = &w->p->modules[index];
	char hex[2 * HL_WIRE_MAX_BUILD_ID + 1];

	hl_fmt_hex(hex, m->build_id, m->build_id_len);
	sqlite3_bind_int64(st, i, w->process_id);
	sqlite3_bind_text(st, i + 1, m->path, -1, SQLITE_STATIC);
	if (m->build_id_len)
		sqlite3_bind_text(st, i + 2, hex, (int)(2 * m->build_id_len), SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i + 2);
	sqlite3_bind_int64(st, i + 3, (int64_t)m->base);
	sqlite3_bind_int64(st, i + 4, (int64_t)m->low);
	sqlite3_bind_int64(st, i + 5, (int64_t)m->high);
	sqlite3_bind_int(st, i + 6, m->unload_seq != 0);
}

static int write_modules(struct writer *w)
{
	int err = 0;

	for (size_t i = 0; i < w->p->nmodules && !err; i++)
		err = batch_add(w, w->modules, i);
	return err ? err : batch_flush(w, w->modules);
}

static void bind_sample_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct hl_sample *sm = &w->p->samples[index];

	sqlite3_bind_int64(st, i, w->process_id);
	sqlite3_bind_int64(st, i + 1, (int64_t)hl_process_ticks_to_realtime(w->p, sm->ticks));
	sqlite3_bind_int64(st, i + 2, (int64_t)sm->in_use_bytes);
	sqlite3_bind_int64(st, i + 3, (int64_t)sm->in_use_blocks);
}

static int write_timeline(struct writer *w)
{
	int err = 0;

	for (size_t i = 0; i < w->p->nsamples && !err; i++)
		err = batch_add(w, w->samples, i);
	return err ? err : batch_flush(w, w->samples);
}

/* ---- heap consumed over time by the top sites ----------------------------
 * The series of the SERIES_STACKS tracked stacks that held most at their
 * own peak (ingest/state.h, hl_stack_point): a row where one changed since
 * the sample before, from the sample its series starts at. Stacks of the
 * process with the same stored row (its copy of an inherited stack,
 * defined again) are one series, their sum. */
#define SERIES_STACKS 24

static void bind_series_row(struct writer *w, sqlite3_stmt *st, int i, size_t index)
{
	const struct series_row *r = &w->series_rows[index];

	sqlite3_bind_int64(st, i, w->process_id);
	sqlite3_bind_int64(st, i + 1, r->stack_id);
	sqlite3_bind_int64(st, i + 2, r->sample);
	sqlite3_bind_int64(st, i + 3,
			   (int64_t)hl_process_ticks_to_realtime(w->p, w->p->samples[r->sample].ticks));
	sqlite3_bind_int64(st, i + 4, (int64_t)r->bytes);
}

/* The stacks of the series, by their stored id: top[0..n) stack indexes,
 * the largest peak first; slot[index] is 1 + the position of its stored
 * id in ids (0: not a series). */
struct series_pick {
	size_t top[SERIES_STACKS], n;
	int64_t ids[SERIES_STACKS];
	size_t nids;
	uint8_t *slot;
};

static void series_pick(const struct writer *w, struct series_pick *k)
{
	const struct hl_process *p = w->p;

	for (size_t t = 0; t < p->ntracked; t++) {
		size_t i = p->tracked[t];
		uint64_t peak = p->stacks[i].peak_live_bytes;
		size_t j = k->n;

		if (!peak || stack_db_id(w, (uint32_t)i + 1) <= 0)
			continue;
		if (j == SERIES_STACKS && p->stacks[k->top[j - 1]].peak_live_bytes >= peak)
			continue;
		if (j == SERIES_STACKS)
			j--;
		else
			k->n++;
		for (; j > 0 && p->stacks[k->top[j - 1]].peak_live_bytes < peak; j--)
			k->top[j] = k->top[j - 1];
		k->top[j] = i;
	}
	for (size_t i = 0; i < k->n; i++) {
		int64_t id = stack_db_id(w, (uint32_t)k->top[i] + 1);
		size_t j = 0;

		while (j < k->nids && k->ids[j] != id)
			j++;
		if (j == k->nids)
			k->ids[k->nids++] = id;
		k->slot[k->top[i]] = (uint8_t)(j + 1);
	}
}

/* A row for each series that changed at `sample` (changed: bit per id). */
static void series_emit(struct writer *w, const struct series_pick *k, uint32_t sample,
			const uint64_t *sum, uint32_t *changed)
{
	for (size_t j = 0; j < k->nids; j++) {
		if (!(*changed & (1u << j)))
			continue;
		hl_grow((void **)&w->series_rows, &w->series_cap, w->nseries,
			sizeof(*w->series_rows));
		w->series_rows[w->nseries++] = (struct series_row){ k->ids[j], sample, sum[j] };
	}
	*changed = 0;
}

static void series_rows(struct writer *w, const struct series_pick *k)
{
	const struct hl_process *p = w->p;
	uint64_t level[SERIES_STACKS] = { 0 }, sum[SERIES_STACKS];
	uint32_t changed = 0, sample = 0;

	_Static_assert(SERIES_STACKS <= 32, "changed is a 32-bit set");
	for (size_t i = 0; i < p->npoints && p->points[i].sample < p->nsamples; i++) {
		const struct hl_stack_point *pt = &p->points[i];
		size_t slot = pt->sample + 1 >= p->stacks[pt->stack].tracked_since ?
			      k->slot[pt->stack] : 0;

		if (pt->sample != sample) {
			series_emit(w, k, sample, sum, &changed);
			sample = pt->sample;
		}
		if (!slot)
			continue;
		for (size_t t = 0; t < k->n; t++)
			if (k->top[t] == pt->stack)
				level[t] = pt->bytes;
		memset(sum, 0, sizeof(sum));
		for (size_t t = 0; t < k->n; t++)
			sum[k->slot[k->top[t]] - 1] += level[t];
		changed |= 1u << (slot - 1);
	}
	series_emit(w, k, sample, sum, &changed);
}

static int write_series(struct writer *w)
{
	struct series_pick k = { .n = 0 };
	int err = 0;

	if (!w->p->npoints || !w->p->nsamples)
		return 0;
	k.slot = hl_xcalloc(w->p->nstacks, 1);
	series_pick(w, &k);
	w->nseries = 0;
	if (k.n)
		series_rows(w, &k);
	free(k.slot);
	for (size_t i = 0; i < w->nseries && !err; i++)
		err = batch_add(w, w->series, i);
	return err ? err : batch_flush(w, w->series);
}

/* The allocation-size histogram: a row per bin the process used. */
static int write_size_bins(struct writer *w)
{
	const struct hl_size_bins *h = &w->p->sizes;
	sqlite3_stmt *st = w->st[ST_SIZE_BIN];
	int err = 0;

	for (unsigned bin = 0; bin < HL_SIZE_BINS && !err; bin++) {
		if (!h->allocs[bin])
			continue;
		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_int64(st, 2, bin);
		sqlite3_bind_int64(st, 3, (int64_t)h->allocs[bin]);
		sqlite3_bind_int64(st, 4, (int64_t)h->bytes[bin]);
		err = step_done(w->s, st);
	}
	return err;
}

/* The threads a scan could not stop: check_seq 0 for the exit scan. */
static int write_unstopped(struct writer *w, uint32_t check_seq, const uint32_t *tids, size_t n)
{
	sqlite3_stmt *st = w->st[ST_UNSTOPPED];
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_int64(st, 2, check_seq);
		sqlite3_bind_int64(st, 3, tids[i]);
		err = step_done(w->s, st);
	}
	return err;
}

/* A check's loss records, each with what changed since the check before. */
static int write_check_records(struct writer *w, const struct hl_check *c)
{
	sqlite3_stmt *st = w->st[ST_CHECK_RECORD];
	int err = 0;

	for (size_t i = 0; i < c->nrecords && !err; i++) {
		const struct hl_check_record *rec = &c->records[i];

		sqlite3_bind_int64(st, 1, w->process_id);
		sqlite3_bind_int64(st, 2, c->seq);
		sqlite3_bind_int64(st, 3, (int64_t)rec->rank);
		sqlite3_bind_null(st, 4);
		bind_stack(w, st, 4, rec->g.stack);
		sqlite3_bind_text(st, 5, hl_leak_class_name(rec->g.leak_class), -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, (int64_t)rec->g.bytes);
		sqlite3_bind_int64(st, 7, (int64_t)rec->g.indirect_bytes);
		sqlite3_bind_int64(st, 8, (int64_t)rec->g.blocks);
		sqlite3_bind_int64(st, 9, rec->new_bytes);
		sqlite3_bind_int64(st, 10, rec->new_indirect_bytes);
		sqlite3_bind_int64(st, 11, rec->new_blocks);
		bind_opt_text(st, 12, rec->g.fingerprint[0] ? rec->g.fingerprint : NULL);
		sqlite3_bind_int(st, 13,
				 rec->g.suppression || rec->g.leak_class == HL_CLASS_SUPPRESSED);
		bind_opt_text(st, 14, rec->g.suppression);
		err = step_done(w->s, st);
	}
	return err;
}

/* Each on-demand check: one row per class, its loss records, and the
 * threads its scan could not stop; then the exit scan's. */
static int write_checks(struct writer *w)
{
	sqlite3_stmt *st = w->st[ST_CHECK];
	int err = 0;

	for (size_t i = 0; i < w->p->nchecks && !err; i++) {
		const struct hl_check *c = &w->p->checks[i];

		for (unsigned k = 0; k <= HL_CLASS_SUPPRESSED && !err; k++) {
			sqlite3_bind_int64(st, 1, w->process_id);
			sqlite3_bind_int64(st, 2, c->seq);
			sqlite3_bind_int64(st, 3,
					   (int64_t)hl_process_ticks_to_realtime(w->p, c->ticks));
			sqlite3_bind_int(st, 4, (c->flags & HL_CHECK_SIGNAL) != 0);
			sqlite3_bind_int(st, 5, !(c->flags & HL_CHECK_UNSTOPPED));
			sqlite3_bind_int(st, 6, c->scanned);
			sqlite3_bind_text(st, 7, hl_leak_class_name(k), -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 8, (int64_t)c->bytes[k]);
			sqlite3_bind_int64(st, 9, (int64_t)c->blocks[k]);
			sqlite3_bind_int64(st, 10, (int64_t)c->records_total);
			err = step_done(w->s, st);
		}
		if (!err)
			err = write_check_records(w, c);
		if (!err)
			err = write_unstopped(w, c->seq, c->unstopped_tids, c->nunstopped_tids);
	}
	if (!err && w->p->scanned && w->p->live_unstopped)
		err = write_unstopped(w, 0, w->p->unstopped_tids, w->p->nunstopped_tids);
	return err;
}

static int write_all(struct writer *w)
{
	int err = write_stacks(w);

	if (!err) {
		find_sets(w);
		err = write_process_row(w);
	}
	if (!err) {
		remember_sets(w);
		err = write_summary(w);
	}
	if (!err && !w->set_from[HL_STORE_SET_MODULES])
		err = write_modules(w);
	if (!err && !w->set_from[HL_STORE_SET_AGGREGATES])
		err = write_aggregates(w);
	if (!err && !w->set_from[HL_STORE_SET_LEAKS])
		err = write_leaks(w);
	if (!err)
		err = write_errors(w);
	if (!err)
		err = write_fds(w);
	if (!err)
		err = write_timeline(w);
	if (!err)
		err = write_series(w);
	if (!err)
		err = write_size_bins(w);
	if (!err)
		err = write_checks(w);
	return err;
}

int hl_store_process(struct hl_store *s, int64_t run_id, struct hl_process *p,
		     struct hl_symbolizer *sym)
{
	sqlite3_stmt **cache = s->statements;
	struct batch stacks = {
		"INSERT INTO stacks(id, run_id, hash, depth, truncated, leaf_frame_id, fingerprint) VALUES ",
		"(?,?,?,?,?,?,?)", 7, bind_stack_row, &cache[ST_COUNT], &cache[ST_COUNT + 1],
		{ 0 }, 0,
	};
	struct batch aggregates = {
		"INSERT INTO stack_aggregate_rows(process_id, stack_id, allocs, bytes, frees,"
		" peak_live_bytes, leaked_bytes, leaked_blocks, temporaries, at_peak_bytes) VALUES ",
		"(?,?,?,?,?,?,?,?,?,?)", 10,
		bind_aggregate_row, &cache[ST_COUNT + 2], &cache[ST_COUNT + 3], { 0 }, 0,
	};
	struct batch leaks = {
		"INSERT INTO leak_records(process_id, stack_id, leak_class, bytes, blocks, inherited_blocks,"
		" rank, suppressed, fingerprint, suppression, indirect_bytes) VALUES ",
		"(?,?,?,?,?,?,?,?,?,?,?)", 11, bind_leak_row, &cache[ST_COUNT + 4],
		&cache[ST_COUNT + 5], { 0 }, 0,
	};
	struct batch modules = {
		"INSERT INTO module_rows(process_id, path, build_id, base, low, high, unloaded) VALUES ",
		"(?,?,?,?,?,?,?)", 7, bind_module_row, &cache[ST_COUNT + 6], &cache[ST_COUNT + 7],
		{ 0 }, 0,
	};
	struct batch samples = {
		"INSERT INTO timeline(process_id, time_ns, in_use_bytes, in_use_blocks) VALUES ",
		"(?,?,?,?)", 4, bind_sample_row, &cache[ST_COUNT + 8], &cache[ST_COUNT + 9],
		{ 0 }, 0,
	};
	struct batch series = {
		"INSERT INTO stack_series(process_id, stack_id, sample, time_ns, bytes) VALUES ",
		"(?,?,?,?,?)", 5, bind_series_row, &cache[ST_COUNT + 10], &cache[ST_COUNT + 11],
		{ 0 }, 0,
	};
	struct writer w = { .s = s, .run_id = run_id, .p = p, .sym = sym,
			    .stacks = &stacks, .aggregates = &aggregates, .leaks = &leaks,
			    .modules = &modules, .samples = &samples, .series = &series };
	int err = 0;

	/* Prepared once per connection: preparing them for each process was
	 * most of the store's time for a few hundred small processes. */
	for (int i = 0; i < ST_COUNT && !err; i++) {
		if (!cache[i])
			err = prepare(s, statement_sql[i], &cache[i]);
		w.st[i] = cache[i];
	}
	/* Every reference written here is to a row of this transaction or an
	 * earlier one, by construction; checking each (two B-tree lookups per
	 * stack frame) was a third of the time. On again for everything else.
	 * In a batch the process is a savepoint of the batch's transaction. */
	if (!err && !s->batch)
		err = exec(s, "PRAGMA foreign_keys=OFF");
	if (!err)
		err = s->batch ? step_done(s, w.st[ST_SAVEPOINT]) : exec(s, "BEGIN IMMEDIATE");
	if (!err) {
		err = write_all(&w);
		if (!err)
			err = s->batch ? step_done(s, w.st[ST_RELEASE]) : exec(s, "COMMIT");
		if (!err)
			update_orphans(s, run_id, p, p->parent_serial && !w.parent_id);
		if (err) {
			sqlite3_exec(s->db, s->batch ? "ROLLBACK TO process; RELEASE process" :
				     "ROLLBACK", NULL, NULL, NULL);
			/* Rows the maps name may have gone with the transaction. */
			hl_store_forget_run(s);
			p->db_id = 0;
		}
	}
	if (!s->batch)
		sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
	free(w.stack_ids);
	free(w.new_stacks);
	free(w.module_keys);
	free(w.aggregates_rows);
	free(w.series_rows);
	return err;
}
