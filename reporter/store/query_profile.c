/*
 * reporter/store/query_profile.c: a process's stacks as weighted samples
 * (query_profile.h): one walk of every stack it allocated from, rows in
 * (stack, position) order, a stack's frames gathered as its rows come.
 */
#include <string.h>

#include "query_int.h"
#include "query_profile.h"
#include "query_run_page.h"

#define PROFILE_WALK \
	"WITH RECURSIVE walk(stack_id, pos, frame_id) AS (" \
	" SELECT k.id, 0, k.leaf_frame_id FROM stacks k JOIN stack_aggregates a" \
	" ON a.stack_id = k.id WHERE a.process_id = ?1 AND a.bytes > 0" \
	" UNION ALL SELECT w.stack_id, w.pos + 1, f.parent_id FROM walk w" \
	" JOIN frames f ON f.id = w.frame_id WHERE f.parent_id IS NOT NULL)" \
	" SELECT w.stack_id, a.bytes, a.leaked_bytes, y.function, y.file, y.line," \
	" y.module, y.module_offset FROM walk w JOIN stack_aggregates a" \
	" ON a.process_id = ?1 AND a.stack_id = w.stack_id JOIN frames f ON f.id = w.frame_id" \
	" LEFT JOIN symbols y ON y.id = f.symbol_id ORDER BY w.stack_id, w.pos"

static struct hl_profile_stack *new_stack(struct hl_run_rows *out, sqlite3_stmt *st)
{
	struct hl_profile_stack *p;

	hl_grow((void **)&out->profile, &out->profile_cap, out->nprofile, sizeof(*out->profile));
	p = &out->profile[out->nprofile++];
	memset(p, 0, sizeof(*p));
	p->stack_id = sqlite3_column_int64(st, 0);
	p->bytes = (uint64_t)sqlite3_column_int64(st, 1);
	p->leaked_bytes = (uint64_t)sqlite3_column_int64(st, 2);
	return p;
}

static void add_frame(struct hl_bump *a, struct hl_report_stack *k, size_t *cap,
		      sqlite3_stmt *st)
{
	struct hl_frame_info *f;

	if (k->nframes == *cap) {
		struct hl_frame_info *grown;

		*cap = *cap ? 2 * *cap : 16;
		grown = hl_bump_alloc(a, *cap * sizeof(*grown));
		if (k->nframes)
			memcpy(grown, k->frames, k->nframes * sizeof(*grown));
		k->frames = grown;
	}
	f = &k->frames[k->nframes++];
	memset(f, 0, sizeof(*f));
	f->function = hl_col_text_in(a, st, 3);
	f->file = hl_col_text_in(a, st, 4);
	f->line = (uint32_t)sqlite3_column_int(st, 5);
	f->module = hl_col_text_in(a, st, 6);
	f->offset = (uint64_t)sqlite3_column_int64(st, 7);
}

int hl_query_profile(struct hl_store *s, int64_t process_id, struct hl_run_rows *out)
{
	struct hl_profile_stack *p = NULL;
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc, err = hl_query_prepare(s, PROFILE_WALK, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!p || p->stack_id != sqlite3_column_int64(st, 0)) {
			p = new_stack(out, st);
			cap = 0;
		}
		add_frame(&out->arena, &p->stack, &cap, st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(s, "profile");
}

int hl_query_run_profiles(struct hl_store *s, int64_t run_id, struct hl_run_profiles *out)
{
	int err = hl_query_run(s, run_id, &out->page);

	if (err)
		return err;
	out->procs = hl_xcalloc(out->page.nprocs + 1, sizeof(*out->procs));
	for (size_t i = 0; i < out->page.nprocs; i++)
		hl_run_rows_init(&out->procs[i]);
	for (size_t i = 0; !err && i < out->page.nprocs; i++)
		err = hl_query_profile(s, out->page.procs[i].id, &out->procs[i]);
	return err;
}
