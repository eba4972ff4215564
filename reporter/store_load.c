/*
 * reporter/store_load.c: reads a stored run back into a report, for
 * `heapledger report`. Kept apart from the writer: it only needs the SQL
 * and the report model.
 */
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"


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

static const char *col_text(struct hl_report *r, sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? hl_arena_strdup(&r->arena, (const char *)t) : NULL;
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	return (uint64_t)sqlite3_column_int64(st, i);
}

static void argv_from_json(struct hl_report *r, const char *text,
			   const char ***argv, uint32_t *argc)
{
	json_t *a = text ? json_loads(text, 0, NULL) : NULL;
	size_t n = json_is_array(a) ? json_array_size(a) : 0;

	*argv = hl_arena_alloc(&r->arena, (n + 1) * sizeof(**argv));
	*argc = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		const char *v = json_string_value(json_array_get(a, i));

		(*argv)[i] = hl_arena_strdup(&r->arena, v ? v : "");
	}
	json_decref(a);
}

static int load_stack(struct hl_store *s, struct hl_report *r, int64_t stack_id,
		      struct hl_report_stack *out)
{
	sqlite3_stmt *st;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	if (stack_id <= 0)
		return 0;
	if (sqlite3_prepare_v2(s->db,
		/* innermost first: from the stack's leaf up its callers */
		"WITH RECURSIVE walk(position, frame_id) AS ("
		" SELECT 0, leaf_frame_id FROM stacks WHERE id = ?1"
		" UNION ALL SELECT w.position + 1, f.parent_id FROM walk w"
		" JOIN frames f ON f.id = w.frame_id WHERE f.parent_id IS NOT NULL)"
		" SELECT f.address, f.inlined, y.module, y.module_offset, y.function,"
		" y.file, y.line, k.truncated FROM walk w"
		" JOIN frames f ON f.id = w.frame_id"
		" JOIN stacks k ON k.id = ?1"
		" LEFT JOIN symbols y ON y.id = f.symbol_id"
		" ORDER BY w.position", -1, &st, NULL))
		return load_fail(s, "stack");
	sqlite3_bind_int64(st, 1, stack_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct hl_frame_info *f;

		if (out->nframes == cap) {
			struct hl_frame_info *grown;

			cap = cap ? cap * 2 : 16;
			grown = hl_arena_alloc(&r->arena, cap * sizeof(*grown));
			if (out->nframes)
				memcpy(grown, out->frames, out->nframes * sizeof(*grown));
			out->frames = grown;
		}
		f = &out->frames[out->nframes++];
		f->address = col_u64(st, 0);
		f->inlined = sqlite3_column_int(st, 1) != 0;
		f->module = col_text(r, st, 2);
		f->offset = col_u64(st, 3);
		f->function = col_text(r, st, 4);
		f->file = col_text(r, st, 5);
		f->line = (uint32_t)sqlite3_column_int(st, 6);
		out->truncated = sqlite3_column_int(st, 7) != 0;
	}
	sqlite3_finalize(st);
	return 0;
}

static int load_leaks(struct hl_store *s, struct hl_report *r, int64_t process_id,
		      struct hl_report_process *p)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int err = 0;

	if (sqlite3_prepare_v2(s->db,
		"SELECT leak_class, bytes, blocks, inherited_blocks, suppressed, stack_id,"
		" suppression, fingerprint, indirect_bytes FROM leaks WHERE process_id = ?"
		" ORDER BY rank", -1, &st, NULL))
		return load_fail(s, "leaks");
	sqlite3_bind_int64(st, 1, process_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report_leak *l;

		if (p->nleaks == cap) {
			struct hl_report_leak *grown;

			cap = cap ? cap * 2 : 16;
			grown = hl_arena_alloc(&r->arena, cap * sizeof(*grown));
			if (p->nleaks)
				memcpy(grown, p->leaks, p->nleaks * sizeof(*grown));
			p->leaks = grown;
		}
		l = &p->leaks[p->nleaks++];
		l->kind = col_text(r, st, 0);
		l->bytes = col_u64(st, 1);
		l->blocks = col_u64(st, 2);
		l->inherited_blocks = col_u64(st, 3);
		l->suppressed = sqlite3_column_int(st, 4) != 0;
		l->suppression = col_text(r, st, 6);
		l->fingerprint = col_text(r, st, 7);
		l->indirect_bytes = col_u64(st, 8);
		err = load_stack(s, r, sqlite3_column_int64(st, 5), &l->stack);
	}
	sqlite3_finalize(st);
	return err;
}

static int load_errors(struct hl_store *s, struct hl_report *r, int64_t process_id,
		       struct hl_report_process *p)
{
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(s->db,
		"SELECT kind, address, block_address, block_size, stack_id,"
		" alloc_stack_id, free_stack_id, call, detail FROM errors WHERE process_id = ?"
		" ORDER BY id", -1, &st, NULL))
		return load_fail(s, "errors");
	sqlite3_bind_int64(st, 1, process_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report_error *e;
		struct hl_report_error *grown =
			hl_arena_alloc(&r->arena, (p->nerrors + 1) * sizeof(*grown));

		if (p->nerrors)
			memcpy(grown, p->errors, p->nerrors * sizeof(*grown));
		p->errors = grown;
		e = &p->errors[p->nerrors++];
		e->kind = col_text(r, st, 0);
		e->address = col_u64(st, 1);
		e->block_address = col_u64(st, 2);
		e->block_size = col_u64(st, 3);
		e->call = col_text(r, st, 7);
		e->detail = col_u64(st, 8);
		err = load_stack(s, r, sqlite3_column_int64(st, 4), &e->stack);
		if (!err)
			err = load_stack(s, r, sqlite3_column_int64(st, 5), &e->alloc_stack);
		if (!err)
			err = load_stack(s, r, sqlite3_column_int64(st, 6), &e->free_stack);
	}
	sqlite3_finalize(st);
	return err;
}

/* The process's on-demand checks: one row per class, grouped by seq. */
static int load_checks(struct hl_store *s, struct hl_report *r, int64_t process_id,
		       struct hl_report_process *p)
{
	sqlite3_stmt *st;
	size_t cap = 0;

	if (sqlite3_prepare_v2(s->db,
		"SELECT seq, time_ns, by_signal, all_threads_stopped, scanned, leak_class,"
		" bytes, blocks FROM checks WHERE process_id = ? ORDER BY seq, rowid",
		-1, &st, NULL))
		return load_fail(s, "checks");
	sqlite3_bind_int64(st, 1, process_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint32_t seq = (uint32_t)sqlite3_column_int64(st, 0);
		const char *cls = (const char *)sqlite3_column_text(st, 5);
		struct hl_report_check *c;

		if (!p->nchecks || p->checks[p->nchecks - 1].seq != seq) {
			if (p->nchecks == cap) {
				struct hl_report_check *grown;

				cap = cap ? cap * 2 : 8;
				grown = hl_arena_alloc(&r->arena, cap * sizeof(*grown));
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
		}
		c = &p->checks[p->nchecks - 1];
		for (unsigned k = 0; k <= HL_CLASS_SUPPRESSED; k++) {
			if (cls && !strcmp(cls, hl_leak_class_name(k))) {
				c->bytes[k] = col_u64(st, 6);
				c->blocks[k] = col_u64(st, 7);
			}
		}
	}
	sqlite3_finalize(st);
	return 0;
}

static void fill_process(struct hl_report *r, sqlite3_stmt *st,
			 struct hl_report_process *p)
{
	p->pid = (uint32_t)sqlite3_column_int64(st, 1);
	p->ppid = (uint32_t)sqlite3_column_int64(st, 2);
	p->origin = col_text(r, st, 3);
	p->exe = col_text(r, st, 4);
	argv_from_json(r, (const char *)sqlite3_column_text(st, 5), &p->argv, &p->argc);
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
}

static int load_processes(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(s->db,
		"SELECT p.id, pid, ppid, origin, exe, argv, started_ns, ended_ns,"
		" exit_how, exit_status, exit_signal, scanned, in_use_bytes,"
		" in_use_blocks, allocs, frees, bytes_allocated, peak_bytes,"
		" inherited_bytes, inherited_blocks, dropped_events, unmatched_frees,"
		" unfreed_superseded, live_mismatch, test_name"
		" FROM processes p JOIN summaries s ON s.process_id = p.id"
		" WHERE p.run_id = ? ORDER BY p.serial", -1, &st, NULL))
		return load_fail(s, "processes");
	sqlite3_bind_int64(st, 1, run_id);
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		struct hl_report_process *p = hl_report_new_process(r);
		int64_t id = sqlite3_column_int64(st, 0);

		fill_process(r, st, p);
		err = load_leaks(s, r, id, p);
		if (!err)
			err = load_errors(s, r, id, p);
		if (!err)
			err = load_checks(s, r, id, p);
	}
	sqlite3_finalize(st);
	return err;
}

/* The image that replaced each image ended by exec: the next process of the
 * run with the same pid and origin exec; none stored, it was not tracked. */
static void link_exec_images(struct hl_report *r)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		struct hl_report_process *p = &r->procs[i];

		if (strcmp(p->how, "exec"))
			continue;
		p->exec_untracked = true;
		for (size_t j = i + 1; j < r->nprocs; j++) {
			if (r->procs[j].pid == p->pid && !strcmp(r->procs[j].origin, "exec")) {
				p->exec_path = r->procs[j].exe;
				p->exec_untracked = false;
				break;
			}
		}
	}
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
	r->label_keys = hl_arena_alloc(&r->arena, (n + 1) * sizeof(*r->label_keys));
	r->label_values = hl_arena_alloc(&r->arena, (n + 1) * sizeof(*r->label_values));
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

int hl_store_load_report(struct hl_store *s, int64_t run_id, struct hl_report *r)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT mode, argv, started_ns, ended_ns, exit_code,"
			       " uuid, git_commit, git_branch FROM runs WHERE id = ?", -1, &st, NULL))
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
	argv_from_json(r, (const char *)sqlite3_column_text(st, 1), &r->argv, &r->argc);
	r->started_ns = col_u64(st, 2);
	r->ended_ns = col_u64(st, 3);
	r->exit_code = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 4);
	r->uuid = col_text(r, st, 5);
	r->git_commit = col_text(r, st, 6);
	r->git_branch = col_text(r, st, 7);
	sqlite3_finalize(st);
	rc = load_labels(s, run_id, r);
	if (!rc)
		rc = load_processes(s, run_id, r);
	if (!rc)
		link_exec_images(r);
	return rc;
}
