/*
 * reporter/store/query_summary.c: a stored run's summary and its gate
 * verdict (query_summary.h). Every statement binds its parameters. The
 * ranked lists are chosen by id first and named after (query_where.h), so
 * a run of 100,000 stacks names ten of them.
 */
#include "query_summary.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query_where.h"
#include "store_int.h"
#include "store_query.h"
#include "util.h"

static const char *text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static char *text_dup(sqlite3_stmt *st, int i)
{
	return text(st, i) ? hl_xstrdup(text(st, i)) : NULL;
}

static int prepare(struct hl_store *s, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : hl_store_fail(s, rc, "summary");
}

/* SQLITE_DONE after the last row: 0; anything else a failure. */
static int finish(struct hl_store *s, sqlite3_stmt *st, int rc)
{
	int err = rc == SQLITE_DONE ? 0 : hl_store_fail(s, rc, "summary");

	sqlite3_finalize(st);
	return err;
}

/* ---- the verdict ----------------------------------------------------------- */

/* What the gate reads of a process, with its loss records in p->leaks. */
#define GATE_PROCESSES \
	"SELECT p.id, p.pid, p.exe, (SELECT group_concat(coalesce(" HL_SQL_ARGV_WORD("a") ", ''), ' ')" \
	" FROM json_each(p.argv) a)," \
	" p.test_name, p.no_exit_record, p.exit_how, coalesce(m.dropped_events, 0)," \
	" (SELECT count(*) FROM errors e WHERE e.process_id = p.id), p.standalone" \
	" FROM processes p LEFT JOIN summaries m ON m.process_id = p.id" \
	" WHERE p.run_id = ?1 ORDER BY p.serial"
#define GATE_LEAKS \
	"SELECT l.leak_class, l.suppressed, l.fingerprint, l.bytes, l.blocks" \
	" FROM leaks l WHERE l.process_id = ?1"

struct gate_leaks {
	struct hl_report_leak *v;
	char **fingerprints;
	size_t n, cap;
};

static void gate_leaks_clear(struct gate_leaks *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->fingerprints[i]);
	g->n = 0;
}

static int load_gate_leaks(struct hl_store *s, sqlite3_stmt *st, int64_t process_id,
			   struct gate_leaks *g)
{
	int rc;

	gate_leaks_clear(g);
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, process_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (g->n == g->cap) {
			size_t cap = g->cap;

			hl_grow((void **)&g->v, &g->cap, g->n + 1, sizeof(*g->v));
			hl_grow((void **)&g->fingerprints, &cap, g->n + 1, sizeof(char *));
		}
		g->fingerprints[g->n] = text_dup(st, 2);
		g->v[g->n] = (struct hl_report_leak){
			.leak_class = hl_leak_class_from_word(text(st, 0)),
			.suppressed = sqlite3_column_int(st, 1) != 0,
			.fingerprint = g->fingerprints[g->n],
			.bytes = (uint64_t)sqlite3_column_int64(st, 3),
			.blocks = (uint64_t)sqlite3_column_int64(st, 4),
		};
		g->n++;
	}
	return rc == SQLITE_DONE ? 0 : hl_store_fail(s, rc, "the gate's loss records");
}

/* Counts one process row of GATE_PROCESSES and its loss records. */
static int count_process(struct hl_store *s, sqlite3_stmt *procs, sqlite3_stmt *leaks,
			 struct gate_leaks *gl, const struct hl_gate_options *o, struct hl_gate *g)
{
	const char *command = text(procs, 3);
	int standalone = hl_report_standalone_parse(text(procs, 9));
	struct hl_report_process p = {
		.pid = (uint32_t)sqlite3_column_int64(procs, 1),
		.exe = text(procs, 2),
		.argv = &command,
		.argc = command ? 1 : 0,
		.test_name = text(procs, 4),
		.no_exit_record = sqlite3_column_int(procs, 5) != 0,
		.how = text(procs, 6),
		.dropped_events = (uint64_t)sqlite3_column_int64(procs, 7),
		.nerrors = (size_t)sqlite3_column_int64(procs, 8),
		.standalone = standalone > 0 ? (uint32_t)standalone : HL_STANDALONE_NONE,
	};
	int err = load_gate_leaks(s, leaks, sqlite3_column_int64(procs, 0), gl);

	if (err)
		return err;
	p.leaks = gl->v;
	p.nleaks = gl->n;
	hl_gate_count_report(g, o, &p);
	return 0;
}

int hl_query_run_gate(struct hl_store *s, int64_t run_id, const struct hl_gate_options *o,
		      struct hl_gate *g)
{
	sqlite3_stmt *procs, *leaks;
	struct gate_leaks gl = { 0 };
	int rc, err = hl_query_run_exists(s, run_id);

	if (err)
		return err;
	if ((err = prepare(s, "SELECT ended_ns IS NULL FROM runs WHERE id = ?1", &procs)))
		return err;
	sqlite3_bind_int64(procs, 1, run_id);
	if (sqlite3_step(procs) == SQLITE_ROW && sqlite3_column_int(procs, 0))
		hl_gate_count_open_run(g);
	sqlite3_finalize(procs);
	if ((err = prepare(s, GATE_PROCESSES, &procs)))
		return err;
	if ((err = prepare(s, GATE_LEAKS, &leaks)))
		goto out_procs;
	sqlite3_bind_int64(procs, 1, run_id);
	while (!err && (rc = sqlite3_step(procs)) == SQLITE_ROW)
		err = count_process(s, procs, leaks, &gl, o, g);
	if (!err && rc != SQLITE_DONE)
		err = hl_store_fail(s, rc, "the gate's processes");
	gate_leaks_clear(&gl);
	free(gl.v);
	free(gl.fingerprints);
	sqlite3_finalize(leaks);
out_procs:
	sqlite3_finalize(procs);
	return err;
}

/* ---- the ranked lists ------------------------------------------------------ */

/* Names e->stack_id where it "is". */
static int name_stack(struct hl_store *s, struct hl_summary_stack *e)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s, HL_WHERE_OF_FRAME("(SELECT leaf_frame_id FROM stacks WHERE id = ?1)"),
			      &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, e->stack_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		e->function = text_dup(st, 0);
		e->file = text_dup(st, 1);
		e->line = sqlite3_column_int64(st, 2);
		e->module = text_dup(st, 3);
		e->module_offset = (uint64_t)sqlite3_column_int64(st, 4);
		rc = SQLITE_DONE;
	}
	return finish(s, st, rc);
}

/* Fills l from a statement of (stack_id, value, count, processes) rows,
 * best first. */
static int ranked(struct hl_store *s, const char *sql, int64_t id, struct hl_summary_list *l)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s, sql, &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int(st, 2, HL_SUMMARY_TOP);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && l->n < HL_SUMMARY_TOP)
		l->v[l->n++] = (struct hl_summary_stack){
			.stack_id = sqlite3_column_int64(st, 0),
			.value = (uint64_t)sqlite3_column_int64(st, 1),
			.count = (uint64_t)sqlite3_column_int64(st, 2),
			.processes = (uint64_t)sqlite3_column_int64(st, 3),
		};
	if ((err = finish(s, st, rc)))
		return err;
	for (size_t i = 0; i < l->n && !err; i++)
		err = name_stack(s, &l->v[i]);
	return err;
}

/* Per allocation site of the run (the stack's fingerprint: the same code
 * in two processes of one program is one site, whatever its addresses),
 * what its processes' own aggregate rows add up to (a row a fork child
 * names from its parent, processes.aggregates_from, is counted once), with
 * one of its stacks and the number of processes it is in. ?1 run, ?2 how
 * many. */
#define RUN_STACKS_BY(column, also) \
	"SELECT min(a.stack_id), sum(a." column "), sum(a." also "), count(DISTINCT a.process_id)" \
	" FROM stack_aggregate_rows a" \
	" JOIN processes p ON p.id = a.process_id JOIN stacks k ON k.id = a.stack_id" \
	" WHERE p.run_id = ?1 GROUP BY coalesce(k.fingerprint, k.id) HAVING sum(a." column ") > 0" \
	" ORDER BY 2 DESC, 1 LIMIT ?2"
/* One process's stacks by what they held at its peak. ?1 process, ?2 how
 * many. */
#define AT_PEAK_STACKS \
	"SELECT a.stack_id, a.at_peak_bytes, a.allocs, 1 FROM stack_aggregates a" \
	" WHERE a.process_id = ?1 AND a.at_peak_bytes > 0" \
	" ORDER BY a.at_peak_bytes DESC, a.stack_id LIMIT ?2"
/* Processes stored before at_peak_bytes (NULL): by their own peak in use. */
#define PEAK_STACKS \
	"SELECT a.stack_id, a.peak_live_bytes, a.allocs, 1 FROM stack_aggregates a" \
	" WHERE a.process_id = ?1 AND a.peak_live_bytes > 0" \
	" ORDER BY a.peak_live_bytes DESC, a.stack_id LIMIT ?2"
#define HAS_AT_PEAK \
	"SELECT EXISTS (SELECT 1 FROM stack_aggregates a" \
	" WHERE a.process_id = ?1 AND a.at_peak_bytes IS NOT NULL)"

static int peak_process(struct hl_store *s, struct hl_run_summary *sum)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s,
		"SELECT p.id, p.pid, m.peak_bytes FROM processes p JOIN summaries m"
		" ON m.process_id = p.id WHERE p.run_id = ?1"
		" ORDER BY m.peak_bytes DESC, p.serial LIMIT 1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, sum->run_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		sum->peak_process_id = sqlite3_column_int64(st, 0);
		sum->peak_pid = (uint32_t)sqlite3_column_int64(st, 1);
		sum->peak_bytes = (uint64_t)sqlite3_column_int64(st, 2);
		rc = SQLITE_DONE;
	}
	if ((err = finish(s, st, rc)) || !sum->peak_process_id)
		return err;
	if ((err = prepare(s, HAS_AT_PEAK, &st)))
		return err;
	sqlite3_bind_int64(st, 1, sum->peak_process_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		sum->peak_at_moment = sqlite3_column_int(st, 0) != 0;
		rc = SQLITE_DONE;
	}
	if ((err = finish(s, st, rc)))
		return err;
	return ranked(s, sum->peak_at_moment ? AT_PEAK_STACKS : PEAK_STACKS, sum->peak_process_id,
		      &sum->peak_stacks);
}

/* ---- leaks by class, leak sites, errors ------------------------------------ */

static int by_class(struct hl_store *s, struct hl_run_summary *sum)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s,
		"SELECT l.leak_class, sum(l.bytes), sum(l.blocks), count(*), l.suppressed"
		" FROM leaks l JOIN processes p ON p.id = l.process_id WHERE p.run_id = ?1"
		" GROUP BY l.leak_class, l.suppressed", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, sum->run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* a suppressed record is shown as suppressed, whatever its class */
		unsigned c = sqlite3_column_int(st, 4) ? HL_CLASS_SUPPRESSED
						       : hl_leak_class_from_word(text(st, 0));

		sum->class_bytes[c] += (uint64_t)sqlite3_column_int64(st, 1);
		sum->class_blocks[c] += (uint64_t)sqlite3_column_int64(st, 2);
		sum->class_records[c] += (uint64_t)sqlite3_column_int64(st, 3);
	}
	return finish(s, st, rc);
}

static int errors_by_kind(struct hl_store *s, struct hl_run_summary *sum)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s,
		"SELECT e.kind, count(*) FROM errors e JOIN processes p ON p.id = e.process_id"
		" WHERE p.run_id = ?1 GROUP BY e.kind", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, sum->run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		sum->error_counts[hl_error_kind_parse(text(st, 0))] +=
			(uint64_t)sqlite3_column_int64(st, 1);
	return finish(s, st, rc);
}

static int by_bytes_desc(const void *a, const void *b)
{
	const struct hl_leak_site *x = *(const struct hl_leak_site *const *)a;
	const struct hl_leak_site *y = *(const struct hl_leak_site *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->blocks != y->blocks)
		return x->blocks < y->blocks ? 1 : -1;
	return strcmp(x->fingerprint, y->fingerprint);
}

/* How many processes of the run leak at t's site: lost
 * (hl_leak_class_is_lost), unsuppressed records, as hl_query_leak_sites
 * counts the site's bytes. */
static int site_processes(struct hl_store *s, int64_t run_id, struct hl_summary_site *t)
{
	sqlite3_stmt *st;
	int64_t last = 0;
	int rc, err = prepare(s,
		"SELECT l.process_id, l.leak_class FROM leaks l JOIN processes p"
		" ON p.id = l.process_id WHERE p.run_id = ?1 AND l.fingerprint = ?2"
		" AND NOT l.suppressed GROUP BY l.process_id, l.leak_class ORDER BY l.process_id", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, t->site->fingerprint, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id == last || !hl_leak_class_is_lost(hl_leak_class_from_word(text(st, 1))))
			continue;
		t->where.processes++;
		last = id;
	}
	return finish(s, st, rc);
}

/* The stack of a site's largest lost (hl_leak_class_is_lost), unsuppressed
 * record in the run. */
static int site_stack(struct hl_store *s, int64_t run_id, struct hl_summary_site *t)
{
	sqlite3_stmt *st;
	int rc, err = prepare(s,
		"SELECT l.stack_id, l.leak_class FROM leaks l JOIN processes p"
		" ON p.id = l.process_id WHERE p.run_id = ?1 AND l.fingerprint = ?2"
		" AND NOT l.suppressed AND l.stack_id IS NOT NULL ORDER BY l.bytes DESC, l.id", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, t->site->fingerprint, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!hl_leak_class_is_lost(hl_leak_class_from_word(text(st, 1))))
			continue;
		t->where.stack_id = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
		break;
	}
	if ((err = finish(s, st, rc)) || !t->where.stack_id)
		return err;
	if ((err = site_processes(s, run_id, t)))
		return err;
	return name_stack(s, &t->where);
}

static int top_sites(struct hl_store *s, struct hl_run_summary *sum)
{
	const struct hl_leak_site **order;
	int err = hl_query_leak_sites(s, sum->run_id, &sum->sites);

	if (err || !sum->sites.n)
		return err;
	order = hl_xmalloc(sum->sites.n * sizeof(*order));
	for (size_t i = 0; i < sum->sites.n; i++)
		order[i] = &sum->sites.v[i];
	qsort(order, sum->sites.n, sizeof(*order), by_bytes_desc);
	for (size_t i = 0; i < sum->sites.n && i < HL_SUMMARY_TOP && !err; i++) {
		struct hl_summary_site *t = &sum->top_sites[sum->ntop_sites++];

		t->site = order[i];
		t->where.value = order[i]->bytes;
		t->where.count = order[i]->blocks;
		err = site_stack(s, sum->run_id, t);
	}
	free(order);
	return err;
}

int hl_query_run_summary(struct hl_store *s, int64_t run_id, const struct hl_gate_options *o,
			 struct hl_run_summary *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->run_id = run_id;
	hl_gate_init(&out->gate);
	if ((err = hl_query_run_gate(s, run_id, o, &out->gate)))
		return err;
	out->failed = hl_gate_failed(&out->gate, o);
	out->incomplete = hl_gate_incomplete(&out->gate);
	if (!err)
		err = by_class(s, out);
	if (!err)
		err = top_sites(s, out);
	if (!err)
		err = peak_process(s, out);
	if (!err)
		err = ranked(s, RUN_STACKS_BY("allocs", "allocs"), run_id, &out->most_allocs);
	if (!err)
		err = ranked(s, RUN_STACKS_BY("bytes", "allocs"), run_id, &out->most_bytes);
	if (!err)
		err = ranked(s, RUN_STACKS_BY("temporaries", "allocs"), run_id,
			     &out->most_temporaries);
	if (!err)
		err = errors_by_kind(s, out);
	return err;
}

static void list_destroy(struct hl_summary_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].function);
		free(l->v[i].file);
		free(l->v[i].module);
	}
}

void hl_run_summary_destroy(struct hl_run_summary *sum)
{
	for (size_t i = 0; i < sum->ntop_sites; i++) {
		free(sum->top_sites[i].where.function);
		free(sum->top_sites[i].where.file);
		free(sum->top_sites[i].where.module);
	}
	list_destroy(&sum->peak_stacks);
	list_destroy(&sum->most_allocs);
	list_destroy(&sum->most_bytes);
	list_destroy(&sum->most_temporaries);
	hl_site_list_destroy(&sum->sites);
	hl_gate_destroy(&sum->gate);
}
