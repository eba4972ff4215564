/*
 * reporter/store/query_flame.c: a process's allocations, or its leaks, as
 * a call tree from the outermost frame (query_flame.h). The run's frames
 * are its call tree already (frames.parent_id); each stack's bytes are
 * added to its innermost frame and every caller up to the root.
 *
 * A stack the hook cut at its depth (stacks.truncated: deeper than
 * depth= frames, as python3's often are) has an arbitrary frame as its
 * outermost; such roots are shown under one synthetic root per depth,
 * "[stack truncated at N frames]", so no interpreter frame passes for
 * an entry point. A root any truncated stack ends at goes there whole.
 */
#define _GNU_SOURCE /* asprintf */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_flame.h"
#include "query_int.h"

/* A node of the flame tree while it is built: frames rows indexed by
 * position in the array, children as index lists. */
struct flame_node {
	int64_t id, parent;     /* frames.id, parent's frames.id (0: none) */
	int64_t value;          /* bytes of the stacks through this node */
	int64_t truncated_at;   /* a root: the depth a truncated stack ending here was cut at */
	char *name;
	size_t first_child, next_sibling; /* indices + 1, 0: none */
};

struct flame {
	struct flame_node *nodes; /* sorted by id */
	size_t n, cap;
};

/* Index + 1 of frames.id id, 0 if absent (binary search: rows are loaded
 * in id order). */
static size_t flame_find(struct flame *f, int64_t id)
{
	size_t i = hl_find_by_id(f->nodes, f->n, sizeof(*f->nodes), id);

	return i < f->n ? i + 1 : 0;
}

static char *frame_name(sqlite3_stmt *st)
{
	const char *fn = (const char *)sqlite3_column_text(st, 2);
	const char *module = (const char *)sqlite3_column_text(st, 3);
	const char *base = module ? strrchr(module, '/') : NULL;
	char *name;

	if (fn)
		return hl_xstrdup(fn);
	if (asprintf(&name, "%s+0x%llx", base ? base + 1 : module ? module : "?",
		     (unsigned long long)sqlite3_column_int64(st, 4)) < 0)
		abort();
	return name;
}

/* A frames row as a node (its name malloc'd: the tree is freed whole). */
static void read_node(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct flame_node *n = row;

	(void)a;
	n->id = sqlite3_column_int64(st, 0);
	n->parent = sqlite3_column_int64(st, 1);
	n->name = frame_name(st);
}

static int flame_load_frames(struct hl_store *s, struct flame *f, int64_t process_id)
{
	sqlite3_stmt *st;
	int err = hl_query_prepare(s,
		"SELECT f.id, f.parent_id, y.function, y.module, y.module_offset FROM frames f"
		" LEFT JOIN symbols y ON y.id = f.symbol_id"
		" WHERE f.run_id = (SELECT run_id FROM processes WHERE id = ?1)"
		" ORDER BY f.id", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	err = hl_query_rows(s, st, "frames", NULL, read_node, (void **)&f->nodes, &f->n, &f->cap,
			    sizeof(*f->nodes));
	sqlite3_finalize(st);
	return err;
}

/* Adds each stack's bytes to its leaf and every caller up to the root. */
static int flame_add_values(struct hl_store *s, struct flame *f, int64_t process_id, bool leaks)
{
	sqlite3_stmt *st;
	int rc, err = hl_query_prepare(s, leaks ?
		"SELECT k.leaf_frame_id, sum(l.bytes), max(CASE WHEN k.truncated THEN k.depth END)"
		" FROM leaks l JOIN stacks k"
		" ON k.id = l.stack_id WHERE l.process_id = ?1 AND l.suppressed = 0"
		" AND l.leak_class <> " HL_SQL_CLASS(HL_CLASS_REACHABLE) " GROUP BY k.leaf_frame_id" :
		"SELECT k.leaf_frame_id, a.bytes, CASE WHEN k.truncated THEN k.depth END"
		" FROM stack_aggregates a JOIN stacks k"
		" ON k.id = a.stack_id WHERE a.process_id = ?1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t bytes = sqlite3_column_int64(st, 1), cut = sqlite3_column_int64(st, 2);
		size_t i = flame_find(f, sqlite3_column_int64(st, 0)), root = 0;

		for (size_t hops = 0; i && hops <= f->n; hops++) {
			f->nodes[i - 1].value += bytes;
			root = i;
			i = f->nodes[i - 1].parent ? flame_find(f, f->nodes[i - 1].parent) : 0;
		}
		if (root && cut > f->nodes[root - 1].truncated_at)
			f->nodes[root - 1].truncated_at = cut;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(s, "flame values");
}

/* Nodes below min_value (a 4,000th of the whole: under a pixel in any
 * window) are left out; their bytes stay in their caller's value, so the
 * caller is drawn as wide as before. 100,000 leak sites made a 3.4 MB tree
 * that took the browser seconds to draw, almost all of it invisible. */
static bool flame_shown(const struct flame *f, size_t c, int64_t min_value)
{
	return f->nodes[c - 1].value > 0 && f->nodes[c - 1].value >= min_value;
}

/* Node i (index + 1) and the children shown, into out. */
static void flame_model(struct flame *f, size_t i, int64_t min_value, struct hl_bump *a,
			struct hl_flame_node *out)
{
	struct flame_node *n = &f->nodes[i - 1];
	size_t k = 0;

	out->name = hl_bump_strdup(a, n->name);
	out->value = n->value;
	out->nchildren = 0;
	for (size_t c = n->first_child; c; c = f->nodes[c - 1].next_sibling)
		out->nchildren += flame_shown(f, c, min_value);
	out->children = hl_bump_alloc(a, out->nchildren * sizeof(*out->children));
	for (size_t c = n->first_child; c; c = f->nodes[c - 1].next_sibling)
		if (flame_shown(f, c, min_value))
			flame_model(f, c, min_value, a, &out->children[k++]);
}

static bool flame_is_root(const struct flame *f, size_t i, int64_t truncated_at)
{
	const struct flame_node *n = &f->nodes[i - 1];

	return !n->parent && n->value > 0 && n->truncated_at == truncated_at;
}

/* The roots of stacks cut at `truncated_at` frames (0: whole stacks),
 * each whole, as children of out. */
static void flame_root_list(struct flame *f, int64_t truncated_at, int64_t min_value,
			    struct hl_bump *a, struct hl_flame_node *out)
{
	size_t k = 0;

	out->nchildren = 0;
	for (size_t i = 1; i <= f->n; i++)
		out->nchildren += flame_is_root(f, i, truncated_at);
	out->children = hl_bump_alloc(a, out->nchildren * sizeof(*out->children));
	for (size_t i = 1; i <= f->n; i++)
		if (flame_is_root(f, i, truncated_at))
			flame_model(f, i, min_value, a, &out->children[k++]);
}

/* The whole stacks' roots under out, then one synthetic root for each
 * depth stacks were cut at, holding those stacks' roots. */
static void flame_roots(struct flame *f, int64_t total, struct hl_bump *a,
			struct hl_flame_node *out)
{
	int64_t depths[8];
	size_t ndepths = 0, nwhole, k;
	struct hl_flame_node *whole;

	out->value = total;
	for (size_t i = 1; i <= f->n; i++) {
		const struct flame_node *n = &f->nodes[i - 1];

		if (n->parent || n->value <= 0 || !n->truncated_at)
			continue;
		for (k = 0; k < ndepths && depths[k] != n->truncated_at; k++)
			;
		if (k == ndepths && ndepths < HL_ARRAY_SIZE(depths))
			depths[ndepths++] = n->truncated_at;
		else if (k == ndepths)
			f->nodes[i - 1].truncated_at = depths[ndepths - 1]; /* a ninth depth: with the last */
	}
	flame_root_list(f, 0, total / 4000, a, out);
	if (!ndepths)
		return;
	whole = out->children;
	nwhole = out->nchildren;

	out->children = hl_bump_alloc(a, (nwhole + ndepths) * sizeof(*out->children));
	memcpy(out->children, whole, nwhole * sizeof(*whole));
	out->nchildren = nwhole + ndepths;
	for (k = 0; k < ndepths; k++) {
		struct hl_flame_node *cut = &out->children[nwhole + k];
		char name[64];

		snprintf(name, sizeof(name), "[stack truncated at %lld frames]", (long long)depths[k]);
		memset(cut, 0, sizeof(*cut));
		cut->name = hl_bump_strdup(a, name);
		flame_root_list(f, depths[k], total / 4000, a, cut);
		for (size_t c = 0; c < cut->nchildren; c++)
			cut->value += cut->children[c].value;
	}
}

int hl_query_flame(struct hl_store *s, int64_t process_id, bool leaks, struct hl_flame *out)
{
	struct flame f = { 0 };
	int64_t total = 0;
	int err;

	err = flame_load_frames(s, &f, process_id);
	if (!err)
		err = flame_add_values(s, &f, process_id, leaks);
	/* Link children in reverse so each list keeps frames.id order; a
	 * parent always has a smaller id than its children (rows are written
	 * outermost first), so recursion depth is the stack depth. */
	for (size_t i = f.n; !err && i > 0; i--) {
		size_t parent = f.nodes[i - 1].parent ? flame_find(&f, f.nodes[i - 1].parent) : 0;

		if (parent && parent != i) {
			f.nodes[i - 1].next_sibling = f.nodes[parent - 1].first_child;
			f.nodes[parent - 1].first_child = i;
		}
	}
	for (size_t i = 1; !err && i <= f.n; i++)
		if (!f.nodes[i - 1].parent && f.nodes[i - 1].value > 0)
			total += f.nodes[i - 1].value;
	out->leaks = leaks;
	if (!err)
		flame_roots(&f, total, &out->arena, &out->root);
	for (size_t i = 0; i < f.n; i++)
		free(f.nodes[i].name);
	free(f.nodes);
	return err;
}

