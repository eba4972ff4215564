/*
 * reporter/store/query_int.h: what the query layer's files share (never
 * included outside reporter/store/): preparing a statement, reading a
 * column into a model value, a LIKE pattern from a user's filter text.
 *
 * Every statement takes its values as bound parameters; a failure records
 * "what: SQLite's message" in hl_store_error() and returns -EIO.
 */
#ifndef HL_REPORTER_QUERY_INT_H
#define HL_REPORTER_QUERY_INT_H

#include <sqlite3.h>
#include <stdint.h>

#include "query_page.h"
#include "report.h"
#include "run_list.h"
#include "store_int.h"

/* "what: message" in s->error; -EIO. */
int hl_query_fail(struct hl_store *s, const char *what);
/* sqlite3_prepare_v2 of sql, or hl_query_fail(s, "prepare"). */
int hl_query_prepare(struct hl_store *s, const char *sql, sqlite3_stmt **st);
/* Steps a statement that yields one count and finalizes it (0 if none). */
int64_t hl_query_count(sqlite3_stmt *st);

/* Reads the current row of st into the element at row (strings into a). */
typedef void hl_query_row_fn(struct hl_bump *a, sqlite3_stmt *st, void *row);
/* Steps st (bound) to its end, each row read by read into a new element of
 * size bytes at the end of the hl_grow array *array (*n of *cap); then
 * resets st, which the caller finalizes or binds again. 0, or
 * hl_query_fail(s, what) if a step failed. The one row loop of the layer. */
int hl_query_rows(struct hl_store *s, sqlite3_stmt *st, const char *what, struct hl_bump *a,
		  hl_query_row_fn *read, void **array, size_t *n, size_t *cap, size_t size);

/* Column i as text, NULL for NULL, valid until the next step. */
const char *hl_col_text(sqlite3_stmt *st, int i);
/* The same, copied into a (NULL stays NULL). */
const char *hl_col_text_in(struct hl_bump *a, sqlite3_stmt *st, int i);
/* Column i as a value that may be NULL. */
struct hl_maybe hl_col_maybe(sqlite3_stmt *st, int i);

/* The statements that read a stored stack (query_stacks.c), prepared once
 * for a reader of many (the report's loader). */
struct hl_stack_reader {
	struct hl_store *s;
	sqlite3_stmt *walk, *truncated;
};
int hl_stack_reader_open(struct hl_stack_reader *r, struct hl_store *s);
void hl_stack_reader_close(struct hl_stack_reader *r);
/* stack_id's frames, innermost first, into out (key 0), strings in a. */
int hl_stack_read(struct hl_stack_reader *r, struct hl_bump *a, int64_t stack_id,
		  struct hl_report_stack *out);

/* A frame of a run's call tree (frames.id order: hl_find_by_id finds it). */
struct hl_frame_row {
	int64_t id, parent;           /* frames.id, its caller's (0: outermost) */
	struct hl_frame_info info;    /* strings in the arena the reader was given */
};
/* Every frame of run_id, in id order, appended to the hl_grow array *v
 * (*n of *cap); 0 or -errno. */
int hl_query_run_frames(struct hl_store *s, int64_t run_id, struct hl_bump *a,
			struct hl_frame_row **v, size_t *n, size_t *cap);

/* The statements of struct hl_process_rows, one in each row's file. */
extern const char *const hl_process_leaks_sql, *const hl_process_errors_sql,
	*const hl_process_checks_sql, *const hl_process_records_sql,
	*const hl_process_unstopped_sql, *const hl_process_timeline_sql,
	*const hl_process_fd_summary_sql, *const hl_process_fds_sql;

/* A stored argv (a JSON array of words, each a string or the array of its
 * bytes: HL_SQL_ARGV_WORD; read by SQLite's json_each) into *argv (argc
 * elements, then room for one more), strings in a; what is not an array
 * reads as no arguments, an element that is neither word form as "". */
void hl_query_argv(struct hl_store *s, struct hl_bump *a, const char *text, const char ***argv,
		   uint32_t *argc);

/* Class words in SQL come from classes.h, through two functions every
 * connection has (hl_query_register_classes): hl_class_word('HL_CLASS_X')
 * is class HL_CLASS_X's word, hl_lost_classes() the JSON array of the
 * words of the lost classes (hl_leak_class_is_lost). Both are constant, so
 * SQLite computes them once per statement. No statement spells a class. */
#define HL_SQL_CLASS(e) "hl_class_word('" #e "')"
#define HL_SQL_LOST_CLASSES "(SELECT value FROM json_each(hl_lost_classes()))"
/* Registers those functions on db; SQLITE_OK or SQLite's error. */
int hl_query_register_classes(sqlite3 *db);

/* The class a loss record is shown as: a suppressed record counts as
 * "suppressed", whatever its class (it is never shown as lost). */
#define HL_SHOWN_CLASS \
	"CASE WHEN l.suppressed THEN " HL_SQL_CLASS(HL_CLASS_SUPPRESSED) " ELSE l.leak_class END"
/* A record of lost bytes: a lost class, not suppressed (reachable and
 * suppressed apart). */
#define HL_LOST_RECORD "l.leak_class IN " HL_SQL_LOST_CLASSES " AND l.suppressed = 0"
/* The leak table's class filter (?3): NULL every record, a class word the
 * records shown as that class, "lost" the lost ones (what leaks: not still
 * reachable, not suppressed), the web UI's default. */
#define HL_CLASS_MATCH "(?3 IS NULL OR " HL_SHOWN_CLASS " = ?3 OR (?3 = 'lost' AND " HL_LOST_RECORD "))"

/* The leak table's text filter (query_leak_filter.c): of run_id's loss
 * records shown as cls (NULL: all), in page order, those with a frame whose
 * function, file or module is LIKE like: how many (*total), and the page's
 * as the JSON text "[[leaks.id, processes.id], ...]" (*ids, malloc'd, for
 * SQLite's json_each). 0 or -errno. */
int hl_leak_filter_page(struct hl_store *s, int64_t run_id, const char *like, const char *cls,
			const struct hl_query_page *page, int64_t *total, char **ids);

/* A run's frames are read into arrays sorted by frames.id (the report's
 * call tree, the leak filter's, the flame graph's), each element starting
 * with its int64_t id: the index of id among the n elements of size bytes
 * at base, or n when it is not there (binary search). */
size_t hl_find_by_id(const void *base, size_t n, size_t size, int64_t id);

/* "%filter%" for LIKE ... ESCAPE '\', with the filter's own %, _ and \
 * escaped; malloc'd. */
char *hl_like_pattern(const char *filter);

#endif /* HL_REPORTER_QUERY_INT_H */
