/*
 * reporter/store/query_stacks.c: a stored stack by its id (query_stacks.h,
 * and the reader query_int.h gives the report's loader). A stack names its
 * innermost frame; its callers are that frame's ancestors in the run's
 * call tree (frames.parent_id), walked here from the leaf up.
 */
#include <string.h>

#include "query_int.h"
#include "query_stacks.h"

#define STACK_WALK \
	"WITH RECURSIVE walk(position, frame_id) AS (" \
	" SELECT 0, leaf_frame_id FROM stacks WHERE id = ?1" \
	" UNION ALL SELECT w.position + 1, f.parent_id FROM walk w" \
	" JOIN frames f ON f.id = w.frame_id WHERE f.parent_id IS NOT NULL)" \
	" SELECT f.address, f.inlined, y.module, y.module_offset, y.function," \
	" y.file, y.line FROM walk w JOIN frames f ON f.id = w.frame_id" \
	" LEFT JOIN symbols y ON y.id = f.symbol_id ORDER BY w.position"

int hl_stack_reader_open(struct hl_stack_reader *r, struct hl_store *s)
{
	int err;

	r->s = s;
	r->truncated = NULL;
	err = hl_query_prepare(s, STACK_WALK, &r->walk);
	if (!err)
		err = hl_query_prepare(s, "SELECT truncated FROM stacks WHERE id = ?1", &r->truncated);
	return err;
}

void hl_stack_reader_close(struct hl_stack_reader *r)
{
	sqlite3_finalize(r->walk);
	sqlite3_finalize(r->truncated);
	r->walk = r->truncated = NULL;
}

static struct hl_frame_info *add_frame(struct hl_bump *a, struct hl_report_stack *out,
				       size_t *cap)
{
	if (out->nframes == *cap) {
		struct hl_frame_info *grown;

		*cap = *cap ? *cap * 2 : 16;
		grown = hl_bump_alloc(a, *cap * sizeof(*grown));
		if (out->nframes)
			memcpy(grown, out->frames, out->nframes * sizeof(*grown));
		out->frames = grown;
	}
	return &out->frames[out->nframes++];
}

int hl_stack_read(struct hl_stack_reader *r, struct hl_bump *a, int64_t stack_id,
		  struct hl_report_stack *out)
{
	sqlite3_stmt *st = r->walk;
	size_t cap = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	sqlite3_bind_int64(st, 1, stack_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hl_frame_info *f = add_frame(a, out, &cap);

		f->address = (uint64_t)sqlite3_column_int64(st, 0);
		f->inlined = sqlite3_column_int(st, 1) != 0;
		f->module = hl_col_text_in(a, st, 2);
		f->offset = (uint64_t)sqlite3_column_int64(st, 3);
		f->function = hl_col_text_in(a, st, 4);
		f->linkage = NULL; /* not stored */
		f->file = hl_col_text_in(a, st, 5);
		f->line = (uint32_t)sqlite3_column_int(st, 6);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return hl_query_fail(r->s, "stack");
	sqlite3_bind_int64(r->truncated, 1, stack_id);
	out->truncated = sqlite3_step(r->truncated) == SQLITE_ROW &&
			 sqlite3_column_int(r->truncated, 0) != 0;
	sqlite3_reset(r->truncated);
	return 0;
}

int hl_query_stack(struct hl_store *s, int64_t stack_id, struct hl_bump *a,
		   struct hl_stack_row *out)
{
	struct hl_stack_reader r;
	int err = hl_stack_reader_open(&r, s);

	out->id = stack_id;
	if (!err)
		err = hl_stack_read(&r, a, stack_id, &out->stack);
	hl_stack_reader_close(&r);
	return err;
}

static void read_frame(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_frame_row *f = row;

	f->id = sqlite3_column_int64(st, 0);
	f->parent = sqlite3_column_int64(st, 1);
	f->info.address = (uint64_t)sqlite3_column_int64(st, 2);
	f->info.inlined = sqlite3_column_int(st, 3) != 0;
	f->info.module = hl_col_text_in(a, st, 4);
	f->info.offset = (uint64_t)sqlite3_column_int64(st, 5);
	f->info.function = hl_col_text_in(a, st, 6);
	f->info.file = hl_col_text_in(a, st, 7);
	f->info.line = (uint32_t)sqlite3_column_int(st, 8);
}

int hl_query_run_frames(struct hl_store *s, int64_t run_id, struct hl_bump *a,
			struct hl_frame_row **v, size_t *n, size_t *cap)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s,
		"SELECT f.id, f.parent_id, f.address, f.inlined, y.module, y.module_offset,"
		" y.function, y.file, y.line FROM frames f LEFT JOIN symbols y ON y.id = f.symbol_id"
		" WHERE f.run_id = ?1 ORDER BY f.id", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	err = hl_query_rows(s, st, "frames", a, read_frame, (void **)v, n, cap, sizeof(**v));
	sqlite3_finalize(st);
	return err;
}
