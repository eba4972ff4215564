/*
 * reporter/store/query_fds.c: a process's file descriptors open at its end
 * (track_fds; fd_summaries and open_fds) as rows (query_run_rows.h), for the
 * report's loader.
 */
#include <stdlib.h>

#include "query_int.h"
#include "query_run_rows.h"

const char *const hl_process_fd_summary_sql =
	"SELECT open, std, std_listed FROM fd_summaries WHERE process_id = ?1";
const char *const hl_process_fds_sql =
	"SELECT fd, kind, family, text, inherited, unseen, stack_id FROM open_fds"
	" WHERE process_id = ?1 ORDER BY position";

struct summary_row {
	int64_t open, std;
	bool all;
};

static void read_summary(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct summary_row *s = row;

	(void)a;
	s->open = sqlite3_column_int64(st, 0);
	s->std = sqlite3_column_int64(st, 1);
	s->all = sqlite3_column_int(st, 2) != 0;
}

static void read_fd(struct hl_bump *a, sqlite3_stmt *st, void *row)
{
	struct hl_fd_row *f = row;
	const char *kind = hl_col_text(st, 1);
	const char *text = hl_col_text_in(a, st, 3);

	f->fd = sqlite3_column_int(st, 0);
	f->kind = kind && !strcmp(kind, "socket") ? HL_FD_SOCKET : HL_FD_FILE;
	f->family = (uint32_t)sqlite3_column_int(st, 2);
	f->text = text ? text : "";
	f->inherited = sqlite3_column_int(st, 4) != 0;
	f->unseen = sqlite3_column_int(st, 5) != 0;
	f->stack_id = hl_col_maybe(st, 6);
}

int hl_process_fds(struct hl_process_rows *rd, int64_t process_id, struct hl_run_rows *out)
{
	struct summary_row *rows = NULL;
	size_t n = 0, cap = 0;
	int err;

	sqlite3_bind_int64(rd->fd_summary, 1, process_id);
	err = hl_query_rows(rd->s, rd->fd_summary, "descriptor counts", &out->arena, read_summary,
			    (void **)&rows, &n, &cap, sizeof(*rows));
	if (!err && n) {
		out->fds_tracked = true;
		out->fds_all = rows[0].all;
		out->fds_open = (uint32_t)rows[0].open;
		out->fds_std = (uint32_t)rows[0].std;
	}
	free(rows);
	if (err || !n)
		return err;
	sqlite3_bind_int64(rd->fds, 1, process_id);
	return hl_query_rows(rd->s, rd->fds, "open descriptors", &out->arena, read_fd,
			     (void **)&out->fds, &out->nfds, &out->fds_cap, sizeof(*out->fds));
}
