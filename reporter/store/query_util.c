/*
 * reporter/store/query_util.c: the query layer's shared helpers
 * (query_int.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "query_int.h"

int hl_query_fail(struct hl_store *s, const char *what)
{
	snprintf(s->error, sizeof(s->error), "%s: %s", what, sqlite3_errmsg(s->db));
	return -EIO;
}

int hl_query_prepare(struct hl_store *s, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(s->db, sql, -1, st, NULL) == SQLITE_OK ? 0 :
	       hl_query_fail(s, "prepare");
}

int64_t hl_query_count(sqlite3_stmt *st)
{
	int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;

	sqlite3_finalize(st);
	return n;
}

int hl_query_rows(struct hl_store *s, sqlite3_stmt *st, const char *what, struct hl_bump *a,
		  hl_query_row_fn *read, void **array, size_t *n, size_t *cap, size_t size)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hl_grow(array, cap, *n, size);
		read(a, st, (char *)*array + *n * size);
		++*n;
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : hl_query_fail(s, what);
}

const char *hl_col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

const char *hl_col_text_in(struct hl_bump *a, sqlite3_stmt *st, int i)
{
	const char *t = hl_col_text(st, i);

	return t ? hl_bump_strndup(a, t, (size_t)sqlite3_column_bytes(st, i)) : NULL;
}

struct hl_maybe hl_col_maybe(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return (struct hl_maybe){ 0, false };
	return (struct hl_maybe){ sqlite3_column_int64(st, i), true };
}

char *hl_like_pattern(const char *filter)
{
	size_t n = filter ? strlen(filter) : 0;
	char *p = hl_xmalloc(2 * n + 3), *o = p;

	*o++ = '%';
	for (size_t i = 0; i < n; i++) {
		if (filter[i] == '%' || filter[i] == '_' || filter[i] == '\\')
			*o++ = '\\';
		*o++ = filter[i];
	}
	*o++ = '%';
	*o = 0;
	return p;
}

size_t hl_find_by_id(const void *base, size_t n, size_t size, int64_t id)
{
	size_t lo = 0, hi = n;
	int64_t at;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		memcpy(&at, (const char *)base + mid * size, sizeof(at));
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n)
		memcpy(&at, (const char *)base + lo * size, sizeof(at));
	return lo < n && at == id ? lo : n;
}

/* hl_class_word('HL_CLASS_X'): the word of the class named (NULL for a
 * name classes.h does not have). */
static void sql_class_word(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	static const struct {
		const char *name;
		unsigned leak_class;
	} names[] = {
#define HL_CLASS_NAME_ROW(e, word, token, phrase, label, xml, sarif) { #e, e },
		HL_LEAK_CLASS_TABLE(HL_CLASS_NAME_ROW)
#undef HL_CLASS_NAME_ROW
	};
	const char *name = (const char *)sqlite3_value_text(v[0]);

	(void)argc;
	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i].name)) {
			sqlite3_result_text(ctx, hl_leak_class_name(names[i].leak_class), -1,
					    SQLITE_STATIC);
			return;
		}
	}
	sqlite3_result_null(ctx);
}

/* hl_lost_classes(): ["unknown","definitely",...], the lost classes' words. */
static void sql_lost_classes(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	char list[256] = "[";

	(void)argc;
	(void)v;
	for (unsigned c = 0; c < HL_LEAK_CLASS_COUNT; c++) {
		if (!hl_leak_class_is_lost(c))
			continue;
		if (list[1])
			strcat(list, ",");
		strcat(list, "\"");
		strcat(list, hl_leak_class_name(c));
		strcat(list, "\"");
	}
	strcat(list, "]");
	sqlite3_result_text(ctx, list, -1, SQLITE_TRANSIENT);
}

int hl_query_register_classes(sqlite3 *db)
{
	int rc = sqlite3_create_function(db, "hl_class_word", 1,
					 SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
					 sql_class_word, NULL, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "hl_lost_classes", 0,
					     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
					     NULL, sql_lost_classes, NULL, NULL);
	return rc;
}
