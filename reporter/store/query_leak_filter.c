/*
 * reporter/store/query_leak_filter.c: the leak table's text filter
 * (query_int.h: hl_leak_filter_page): which of a run's loss records have a
 * frame whose function, file or module contains the text, and the ids of
 * the page of them asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "query_int.h"

/* The text filter. A record passes when a frame of its stack has a
 * function, file or module containing the text. Frames form a call tree
 * per run (frames.parent_id), so whether a frame passes is decided
 * once per frame of the run, whatever the number of stacks through it:
 * the names are matched once per frame (FILTER_FRAMES), the tree is walked
 * here with each node's answer remembered, and the records are then one
 * pass in page order (FILTER_RECORDS). Walking every record's stack in SQL
 * instead took 1.0-1.5 s for 100,000 records. */
#define FILTER_FRAMES \
	"SELECT f.id, f.parent_id, y.id IS NOT NULL AND (y.function LIKE ?2 ESCAPE '\\'" \
	" OR y.file LIKE ?2 ESCAPE '\\' OR y.module LIKE ?2 ESCAPE '\\')" \
	" FROM frames f LEFT JOIN symbols y ON y.id = f.symbol_id WHERE f.run_id = ?1" \
	" ORDER BY f.id"
#define FILTER_RECORDS \
	"SELECT l.id, k.leaf_frame_id, p.id FROM leaks l JOIN processes p ON p.id = l.process_id" \
	" JOIN stacks k ON k.id = l.stack_id" \
	" WHERE p.run_id = ?1 AND " HL_CLASS_MATCH \
	" ORDER BY l.bytes DESC, l.id, p.id"

enum { FRAME_UNKNOWN, FRAME_PASSES, FRAME_FAILS };

struct frame_node {
	int64_t id, parent;
	unsigned char state;
};

struct frame_tree {
	struct frame_node *v;
	size_t n, cap;
};

static struct frame_node *frame_find(const struct frame_tree *t, int64_t id)
{
	size_t i = hl_find_by_id(t->v, t->n, sizeof(*t->v), id);

	return i < t->n ? &t->v[i] : NULL;
}

/* Whether the stack whose innermost frame is id passes: up the tree to the
 * first node already decided (or past the root: fails), then that answer
 * given to every node of the path walked, so each node is walked once. */
static bool frame_passes(struct frame_tree *t, int64_t id, int64_t **path, size_t *cap)
{
	size_t n = 0;
	unsigned char answer = FRAME_FAILS;
	struct frame_node *f;

	for (f = frame_find(t, id); f; f = frame_find(t, f->parent)) {
		if (f->state != FRAME_UNKNOWN) {
			answer = f->state;
			break;
		}
		if (n == *cap) {
			*cap = *cap ? 2 * *cap : 64;
			*path = hl_xrealloc(*path, *cap * sizeof(**path));
		}
		(*path)[n++] = f->id;
		if (f->parent == 0 || n > t->n) /* root; or a cycle, which a tree has not */
			break;
	}
	while (n)
		frame_find(t, (*path)[--n])->state = answer;
	return answer == FRAME_PASSES;
}

static void read_node(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	(void)a;
	*(struct frame_node *)row = (struct frame_node){
		.id = sqlite3_column_int64(st, 0),
		.parent = sqlite3_column_int64(st, 1), /* NULL reads as 0 */
		.state = sqlite3_column_int(st, 2) ? FRAME_PASSES : FRAME_UNKNOWN,
	};
}

static int load_frames(struct hl_store *s, int64_t run_id, const char *like,
		       struct frame_tree *t)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s, FILTER_FRAMES, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, like, -1, SQLITE_STATIC);
	err = hl_query_rows(s, st, "query", NULL, read_node, (void **)&t->v, &t->n, &t->cap,
			    sizeof(*t->v));
	sqlite3_finalize(st);
	return err;
}

/* "[leaks.id,processes.id]," appended to the page's JSON text. */
static void add_id(char **text, size_t *len, size_t *cap, int64_t leak, int64_t process)
{
	char pair[48];
	int n = snprintf(pair, sizeof(pair), "%s[%lld,%lld]", *len > 1 ? "," : "",
			 (long long)leak, (long long)process);

	hl_grow((void **)text, cap, *len + (size_t)n + 2, 1);
	memcpy(*text + *len, pair, (size_t)n + 1);
	*len += (size_t)n;
}

int hl_leak_filter_page(struct hl_store *s, int64_t run_id, const char *like, const char *cls,
			const struct hl_query_page *page, int64_t *total, char **ids)
{
	size_t len = 1, cap = 0;
	struct frame_tree t = { 0 };
	int64_t *path = NULL;
	size_t path_cap = 0;
	sqlite3_stmt *st;
	int rc, err = load_frames(s, run_id, like, &t);

	*total = 0;
	*ids = NULL;
	hl_grow((void **)ids, &cap, 2, 1);
	strcpy(*ids, "[");
	if (!err)
		err = hl_query_prepare(s, FILTER_RECORDS, &st);
	if (!err) {
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_text(st, 3, cls, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (sqlite3_column_type(st, 1) == SQLITE_NULL ||
			    !frame_passes(&t, sqlite3_column_int64(st, 1), &path, &path_cap))
				continue;
			if (*total >= page->offset && *total - page->offset < page->limit)
				add_id(ids, &len, &cap, sqlite3_column_int64(st, 0),
				       sqlite3_column_int64(st, 2));
			++*total;
		}
		err = rc == SQLITE_DONE ? 0 : hl_query_fail(s, "query");
		sqlite3_finalize(st);
	}
	free(path);
	free(t.v);
	strcat(*ids, "]");
	return err;
}

