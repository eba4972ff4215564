/*
 * reporter/formats/report_text.c: the report as valgrind users know it (memcheck's
 * wording, order and layout, mc_leakcheck.c): per process a HEAP SUMMARY,
 * the loss records in valgrind's order (smallest first, so the largest is
 * next to the LEAK SUMMARY), each "N bytes in B blocks are definitely lost
 * in loss record i of n", then the LEAK SUMMARY; every line prefixed with
 * ==pid==. Which kinds are printed with their stacks is r->view's choice;
 * every record keeps its number and is counted in the summary either way.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapledger/wire.h"
#include "report.h"
#include "suppress.h"

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static void print_frame(FILE *out, uint32_t pid, const struct hl_frame_info *f,
			const char *function, bool first)
{
	fprintf(out, "==%u==    %s 0x%llx: ", pid, first ? "at" : "by",
		(unsigned long long)hl_frame_shown_address(f));
	fputs(function ? function : "???", out);
	if (f->file && f->line)
		fprintf(out, " (%s:%u)", base_name(f->file), f->line);
	else if (f->module && function)
		fprintf(out, " (in %s)", f->module);
	else if (f->module)
		fprintf(out, " (%s+0x%llx)", base_name(f->module),
			(unsigned long long)(f->offset - (f->address != 0)));
	fputc('\n', out);
}

/* Where a stack the hook cut at depth= frames ends, and how to get it
 * whole: its outer frames, the root among them, are missing. */
static void print_cut(FILE *out, unsigned pid, const struct hl_report_stack *s)
{
	size_t captured = 0;

	for (size_t i = 0; i < s->nframes; i++)
		captured += !s->frames[i].inlined;
	if (captured >= HL_WIRE_MAX_FRAMES)
		fprintf(out, "==%u==    ... (stack truncated at %zu frames, the most heapledger"
			" captures)\n", pid, captured);
	else
		fprintf(out, "==%u==    ... (stack truncated at %zu frames: --depth %d keeps up"
			" to %d)\n", pid, captured, HL_WIRE_MAX_FRAMES, HL_WIRE_MAX_FRAMES);
}

static void print_stack(FILE *out, uint32_t pid, const struct hl_report_stack *s,
			const struct hl_report_view *view)
{
	bool below_main = false;
	size_t n = view->below_main ? s->nframes : hl_report_frames_to_main(s, &below_main), callers = 0;

	if (!s->nframes)
		fprintf(out, "==%u==    (no stack captured)\n", pid);
	for (size_t i = 0; i < n; i++) {
		const struct hl_frame_info *f = &s->frames[i];
		bool last = i + 1 == n;

		/* --num-callers counts return addresses; an inlined call is
		 * printed with the frame it was inlined into. */
		if (view->num_callers && callers == view->num_callers)
			break;
		if (!f->inlined)
			callers++;
		print_frame(out, pid, f, last && below_main ? "(below main)" : f->function,
			    i == 0);
	}
	if (s->truncated && n == s->nframes && !view->num_callers)
		print_cut(out, pid, s);
}

static bool is_exec(const struct hl_report_process *p)
{
	return !strcmp(p->how, "exec");
}

/* "==PID== heapledger: process PID (argv), test T: how it ended" without
 * the newline. */
static void print_header_words(const struct hl_report_process *p, FILE *out)
{
	char end[4200];

	hl_report_describe_end(p, end, sizeof(end));
	fprintf(out, "==%u== heapledger: process %u (", p->pid, p->pid);
	for (uint32_t i = 0; i < p->argc; i++)
		fprintf(out, "%s%s", i ? " " : "", p->argv[i]);
	if (!p->argc)
		fputs(p->exe, out);
	fputc(')', out);
	if (p->test_name)
		fprintf(out, ", test %s", p->test_name);
	if (!strcmp(p->origin, "fork"))
		fprintf(out, ", forked from %u", p->ppid);
	else if (!strcmp(p->origin, "exec"))
		fprintf(out, ", exec'd");
	fprintf(out, ": %s", end);
}

static void print_header(const struct hl_report_process *p, FILE *out)
{
	print_header_words(p, out);
	fputc('\n', out);
}

/* An image replaced by exec lost its heap with it: what it held is no
 * leak, and what a fork child inherited is not even its own, so the line
 * counts only the blocks it allocated itself. */
static void print_in_use(const struct hl_report_process *p, FILE *out)
{
	char a[32], b[32];

	if (is_exec(p))
		fprintf(out, "==%u==     in use at exec: %s bytes in %s blocks (gone with the image)\n",
			p->pid, hl_fmt_grouped(a, p->in_use_bytes - p->inherited_bytes),
			hl_fmt_grouped(b, p->in_use_blocks - p->inherited_blocks));
	else
		fprintf(out, "==%u==     in use at exit: %s bytes in %s blocks\n", p->pid,
			hl_fmt_grouped(a, p->in_use_bytes), hl_fmt_grouped(b, p->in_use_blocks));
}

static void print_summary(const struct hl_report_process *p, FILE *out)
{
	char a[32], b[32], c[32];

	fprintf(out, "==%u== HEAP SUMMARY:\n", p->pid);
	print_in_use(p, out);
	fprintf(out, "==%u==   total heap usage: %s allocs, %s frees, %s bytes allocated\n",
		p->pid, hl_fmt_grouped(a, p->allocs), hl_fmt_grouped(b, p->frees),
		hl_fmt_grouped(c, p->bytes_allocated));
	fprintf(out, "==%u==   peak heap usage: %s bytes\n", p->pid,
		hl_fmt_grouped(a, p->peak_bytes));
	if (p->inherited_blocks && !is_exec(p))
		fprintf(out, "==%u==   inherited at fork, still in use: %s bytes in %s blocks\n",
			p->pid, hl_fmt_grouped(a, p->inherited_bytes),
			hl_fmt_grouped(b, p->inherited_blocks));
	fprintf(out, "==%u==\n", p->pid);
}

/* valgrind's words for each class ("are definitely lost", ...). */
static const char *kind_phrase(unsigned leak_class)
{
	return hl_leak_class_info(leak_class)->phrase;
}

/* Printed with its stack: a kind the view asks for, and every record no
 * scan classified (nothing says it is harmless); a suppressed one only when
 * asked for (valgrind never shows them). */
static bool leak_shown(const struct hl_report_leak *l, const struct hl_report_view *view)
{
	if (l->suppressed || l->leak_class == HL_CLASS_SUPPRESSED)
		return (view->show_kinds & HL_SHOW_SUPPRESSED) != 0;
	if (l->leak_class == HL_CLASS_UNKNOWN)
		return true;
	return (view->show_kinds & HL_CLASS_BIT(l->leak_class)) != 0;
}

static void print_leak(const struct hl_report_process *p, size_t i,
		       const struct hl_report_view *view, bool gen, FILE *out)
{
	const struct hl_report_leak *l = &p->leaks[i];
	char a[32], b[32], c[32], d[32], e[32], f[32];

	if (l->indirect_bytes)
		fprintf(out, "==%u== %s (%s direct, %s indirect) bytes in %s blocks are %s "
			"in loss record %s of %s\n", p->pid,
			hl_fmt_grouped(a, l->bytes + l->indirect_bytes), hl_fmt_grouped(b, l->bytes),
			hl_fmt_grouped(c, l->indirect_bytes), hl_fmt_grouped(d, l->blocks),
			kind_phrase(l->leak_class), hl_fmt_grouped(e, i + 1),
			hl_fmt_grouped(f, p->nleaks));
	else
		fprintf(out, "==%u== %s bytes in %s blocks are %s in loss record %s of %s\n",
			p->pid, hl_fmt_grouped(a, l->bytes), hl_fmt_grouped(b, l->blocks),
			kind_phrase(l->leak_class), hl_fmt_grouped(c, i + 1),
			hl_fmt_grouped(d, p->nleaks));
	print_stack(out, p->pid, &l->stack, view);
	if (l->inherited_blocks)
		fprintf(out, "==%u==    (%s of these blocks were inherited from the parent at fork)\n",
			p->pid, hl_fmt_grouped(a, l->inherited_blocks));
	if (l->suppression)
		fprintf(out, "==%u==    suppressed by: %s\n", p->pid, l->suppression);
	fprintf(out, "==%u==\n", p->pid);
	if (gen && !l->suppressed)
		hl_supp_print_generated(out, NULL, l);
}

/* One error as valgrind prints it: what and where, then the block it
 * concerns ("48 bytes inside a block of size 200 alloc'd") and its stacks;
 * the words are the model's (hl_report_error_title, _where), which the web
 * UI shows too. */
static void print_error(const struct hl_report_process *p, const struct hl_report_error *e,
			const struct hl_report_view *view, FILE *out)
{
	char title[160], where[160], offset[32];
	bool freed = hl_report_error_block_freed(e);

	fprintf(out, "==%u== %s\n", p->pid, hl_report_error_title(e, title, sizeof(title)));
	print_stack(out, p->pid, &e->stack, view);
	fprintf(out, "==%u==  Address 0x%llx %s\n", p->pid, (unsigned long long)e->address,
		hl_report_error_where(e, where, sizeof(where)));
	if (!e->block_address) {
		fprintf(out, "==%u==\n", p->pid);
		return;
	}
	if (e->kind == HL_ERROR_OVERFLOW && !hl_report_error_is_access(e)) {
		fprintf(out, "==%u==  The damage reaches %s bytes past the end of the block\n", p->pid,
			hl_fmt_grouped(offset, e->detail));
	} else {
		if (freed && e->free_stack.nframes)
			print_stack(out, p->pid, &e->free_stack, view);
		if (freed)
			fprintf(out, "==%u==  Block was alloc'd at\n", p->pid);
	}
	print_stack(out, p->pid, &e->alloc_stack, view);
	fprintf(out, "==%u==\n", p->pid);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Errors of one context: same kind, same call, same stack (valgrind's rule). */
static bool same_context(const struct hl_report_error *a, const struct hl_report_error *b)
{
	if (a->kind != b->kind || !same_text(a->call, b->call) ||
	    a->stack.nframes != b->stack.nframes)
		return false;
	for (size_t i = 0; i < a->stack.nframes; i++)
		if (a->stack.frames[i].address != b->stack.frames[i].address)
			return false;
	return true;
}

static bool context_seen_before(const struct hl_report_process *p, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (same_context(&p->errors[j], &p->errors[i]))
			return true;
	return false;
}

/* Each context's first error, then how many there were in all. */
static void print_errors(const struct hl_report_process *p, const struct hl_report_view *view,
			 FILE *out)
{
	for (size_t i = 0; i < p->nerrors; i++)
		if (!context_seen_before(p, i))
			print_error(p, &p->errors[i], view, out);
}

/* Heap errors, and each loss record of the view's leak_error_kinds as one
 * error of its own context (valgrind's count with --leak-check=full). */
static void print_error_summary(const struct hl_report_process *p,
				const struct hl_report_view *view, FILE *out)
{
	size_t contexts = 0, errors = p->nerrors;

	for (size_t i = 0; i < p->nerrors; i++)
		contexts += !context_seen_before(p, i);
	for (size_t i = 0; view->leak_error_kinds && i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];
		unsigned bit = HL_CLASS_BIT(l->leak_class);

		if (!l->suppressed && (view->leak_error_kinds & bit)) {
			errors++;
			contexts++;
		}
	}
	/* The gate fails a process it could not see whole: so does the count. */
	if (view->leak_error_kinds && (p->no_exit_record || p->dropped_events)) {
		errors++;
		contexts++;
	}
	fprintf(out, "==%u== ERROR SUMMARY: %zu errors from %zu contexts\n", p->pid, errors,
		contexts);
}

/* Bytes and blocks per LEAK SUMMARY line; a suppressed record counts as
 * suppressed whatever its class (valgrind's rule). */
struct leak_totals {
	uint64_t bytes[HL_CLASS_SUPPRESSED + 1], blocks[HL_CLASS_SUPPRESSED + 1];
	bool saturated; /* a sum did not fit in 64 bits (hl_add_saturating) */
};

static unsigned kind_class(const struct hl_report_leak *l)
{
	if (l->suppressed)
		return HL_CLASS_SUPPRESSED;
	return l->leak_class < HL_LEAK_CLASS_COUNT ? l->leak_class : HL_CLASS_UNKNOWN;
}

static void leak_totals(const struct hl_report_process *p, struct leak_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < p->nleaks; i++) {
		unsigned c = kind_class(&p->leaks[i]);

		t->saturated |= hl_add_saturating(&t->bytes[c], p->leaks[i].bytes);
		t->saturated |= hl_add_saturating(&t->blocks[c], p->leaks[i].blocks);
	}
}

static void print_total(const struct hl_report_process *p, const struct leak_totals *t,
			unsigned c, FILE *out)
{
	char a[32], b[32];

	fprintf(out, "==%u== %18s: %s bytes in %s blocks\n", p->pid, hl_leak_class_info(c)->label,
		hl_fmt_grouped(a, t->bytes[c]), hl_fmt_grouped(b, t->blocks[c]));
}

/* "definitely,possibly" of 1u << HL_CLASS_* bits, in buf. */
static const char *kind_names(unsigned kinds, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (unsigned c = 0; c <= HL_CLASS_SUPPRESSED && n < len; c++)
		if (kinds & (1u << c))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
					      hl_leak_class_name(c));
	return buf;
}

static void print_leak_summary(const struct hl_report_process *p,
			       const struct hl_report_view *view, FILE *out)
{
	struct leak_totals t;

	leak_totals(p, &t);
	if (view->kind_filter) {
		char kinds[128];

		fprintf(out, "==%u== LEAK SUMMARY (filtered view: only the loss records of kinds "
			"%s; the process's other records are not counted here):\n", p->pid,
			kind_names(view->kind_filter, kinds, sizeof(kinds)));
	} else {
		fprintf(out, "==%u== LEAK SUMMARY:\n", p->pid);
	}
	if (p->scanned) {
		print_total(p, &t, HL_CLASS_DEFINITE, out);
		print_total(p, &t, HL_CLASS_INDIRECT, out);
		print_total(p, &t, HL_CLASS_POSSIBLE, out);
		print_total(p, &t, HL_CLASS_REACHABLE, out);
	}
	if (!p->scanned || t.blocks[HL_CLASS_UNKNOWN])
		print_total(p, &t, HL_CLASS_UNKNOWN, out);
	if (p->scanned || t.blocks[HL_CLASS_SUPPRESSED])
		print_total(p, &t, HL_CLASS_SUPPRESSED, out);
	if (t.saturated)
		fprintf(out, "==%u== warning: a leak total does not fit in 64 bits: shown as the "
			"largest value, not wrapped (the gate fails such a run)\n", p->pid);
	if (t.blocks[HL_CLASS_REACHABLE] && !(view->show_kinds & HL_SHOW_REACHABLE)) {
		fprintf(out, "==%u== Reachable blocks (those to which a pointer was found) "
			"are not shown.\n", p->pid);
		fprintf(out, "==%u== To see them, rerun with: --show-leak-kinds=all\n", p->pid);
	}
}

/* Why the blocks of a process have no class, when none has. */
static void print_not_scanned(const struct hl_report_process *p, FILE *out)
{
	char why[4200];

	if (!hl_report_not_scanned(p, why, sizeof(why)))
		return;
	fprintf(out, "==%u== not scanned: %s; the blocks in use are not classified\n",
		p->pid, why);
	fprintf(out, "==%u==\n", p->pid);
}

static void print_unstopped_tids(uint32_t pid, const uint32_t *tids, size_t n, FILE *out);

/* The scan could not stop every thread (one blocked the stop signal): it
 * read that thread's whole stack mapping while it ran, so a block only it
 * points to counts as reachable, and one it was changing may be misjudged. */
static void print_unstopped(const struct hl_report_process *p, FILE *out)
{
	if (!p->unstopped)
		return;
	fprintf(out, "==%u== warning: a thread did not stop for the leak scan; its whole stack was "
		"read while it ran (conservative: what it points to counts as reachable)\n", p->pid);
	print_unstopped_tids(p->pid, p->unstopped_tids, p->nunstopped_tids, out);
	fprintf(out, "==%u==\n", p->pid);
}

static void print_consistency(const struct hl_report_process *p, FILE *out)
{
	char cut[512];

	if (hl_report_stream_cut(p, cut, sizeof(cut)))
		fprintf(out, "==%u== warning: %s\n", p->pid, cut);
	if (p->dropped_events && p->standalone != HL_STANDALONE_NONE)
		fprintf(out, "==%u== warning: the hook dropped %llu events, most after it went on"
			" standalone: data may be missing (the loss records of what it allocated"
			" since)\n", p->pid, (unsigned long long)p->dropped_events);
	else if (p->dropped_events)
		fprintf(out, "==%u== warning: the hook dropped %llu events; totals are incomplete\n",
			p->pid, (unsigned long long)p->dropped_events);
	if (p->dropped_stacks)
		fprintf(out, "==%u== warning: the hook could not keep the stacks of %llu "
			"allocations (out of memory); they are listed without one\n",
			p->pid, (unsigned long long)p->dropped_stacks);
	if (p->unmatched_frees || p->unfreed_superseded || p->live_mismatch)
		fprintf(out, "==%u== warning: event stream inconsistencies: %llu frees without "
			"their allocation, %llu reused blocks without their free, %llu blocks "
			"the hook's live set disagreed on\n", p->pid,
			(unsigned long long)p->unmatched_frees,
			(unsigned long long)p->unfreed_superseded,
			(unsigned long long)p->live_mismatch);
}

/* One class of a check, as valgrind's leak_check prints an increase:
 * "definitely lost: 48 (+48) bytes in 2 (+2) blocks" (new since the last
 * check; a decrease reads "-N"). */
static void print_check_line(uint32_t pid, const struct hl_report_check *c,
			     const struct hl_report_check *prev, unsigned k, const char *label,
			     FILE *out)
{
	char a[32], b[32], c1[32], d[32];
	int64_t db = (int64_t)(c->bytes[k] - (prev ? prev->bytes[k] : 0));
	int64_t dn = (int64_t)(c->blocks[k] - (prev ? prev->blocks[k] : 0));

	fprintf(out, "==%u== %18s: %s (%s%s) bytes in %s (%s%s) blocks\n", pid, label,
		hl_fmt_grouped(a, c->bytes[k]), db < 0 ? "-" : "+",
		hl_fmt_grouped(b, (uint64_t)(db < 0 ? -db : db)), hl_fmt_grouped(c1, c->blocks[k]),
		dn < 0 ? "-" : "+", hl_fmt_grouped(d, (uint64_t)(dn < 0 ? -dn : dn)));
}

/* "1234 did not stop for the scan; its stack was read while it ran" for
 * the threads a scan named (wire.h: the hook names at most 16). */
static void print_unstopped_tids(uint32_t pid, const uint32_t *tids, size_t n, FILE *out)
{
	if (!n)
		return;
	fprintf(out, "==%u== thread%s ", pid, n > 1 ? "s" : "");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%u", i ? ", " : "", tids[i]);
	fprintf(out, " did not stop for the scan; %s read while %s ran\n",
		n > 1 ? "their stacks were" : "its stack was", n > 1 ? "they" : "it");
}

/* " (+N)" or " (-N)": what changed since the check before. */
static const char *fmt_delta(char *buf, int64_t d)
{
	char n[32];

	snprintf(buf, 48, " (%s%s)", d < 0 ? "-" : "+",
		 hl_fmt_grouped(n, d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d));
	return buf;
}

/* A check's loss record as valgrind's leak_check prints it: "16 (+16)
 * bytes in 1 (+1) blocks are definitely lost in loss record 3 of 5". */
static void print_check_record(const struct hl_report_process *p,
			       const struct hl_report_check *c,
			       const struct hl_report_check_record *rec,
			       const struct hl_report_view *view, FILE *out)
{
	const struct hl_report_leak *l = &rec->leak;
	char a[32], b[32], c1[32], d[32], e[32];
	char da[48], db[48], dc[48], dd[48];

	fprintf(out, "==%u== %s%s", p->pid, hl_fmt_grouped(a, l->bytes + l->indirect_bytes),
		fmt_delta(da, rec->new_bytes + rec->new_indirect_bytes));
	if (l->indirect_bytes || rec->new_indirect_bytes)
		fprintf(out, " (%s%s direct, %s%s indirect)", hl_fmt_grouped(b, l->bytes),
			fmt_delta(db, rec->new_bytes), hl_fmt_grouped(c1, l->indirect_bytes),
			fmt_delta(dc, rec->new_indirect_bytes));
	fprintf(out, " bytes in %s%s blocks are %s in loss record %s of %s\n",
		hl_fmt_grouped(d, l->blocks), fmt_delta(dd, rec->new_blocks), kind_phrase(l->leak_class),
		hl_fmt_grouped(e, rec->rank), hl_fmt_grouped(a, c->records_total));
	print_stack(out, p->pid, &l->stack, view);
	fprintf(out, "==%u==\n", p->pid);
}

/* The check's records that grew, of the kinds the view shows; with
 * max_leaks, the largest that many; then what was left out, in words. */
static void print_check_records(const struct hl_report *r, const struct hl_report_process *p,
				const struct hl_report_check *c, FILE *out)
{
	size_t shown = 0, same = 0, skip = 0;
	char a[32];

	for (size_t i = 0; i < c->nrecords; i++) {
		if (!leak_shown(&c->records[i].leak, &r->view))
			continue;
		if (hl_report_check_record_grew(&c->records[i], r->view.check_records))
			shown++;
		else
			same++;
	}
	if (r->view.max_leaks && shown > r->view.max_leaks)
		skip = shown - r->view.max_leaks;
	if (skip)
		fprintf(out, "==%u== (the %s smallest loss records %s are not shown: "
			"--max-leaks=%lu)\n", p->pid, hl_fmt_grouped(a, skip),
			r->view.check_records == HL_CHECK_RECORDS_ANY ? "of this check" :
			r->view.check_records == HL_CHECK_RECORDS_CHANGED ? "that changed" :
									    "that grew",
			r->view.max_leaks);
	for (size_t i = 0; i < c->nrecords; i++) {
		const struct hl_report_check_record *rec = &c->records[i];

		if (!leak_shown(&rec->leak, &r->view) ||
		    !hl_report_check_record_grew(rec, r->view.check_records))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		print_check_record(p, c, rec, &r->view, out);
	}
	if (same)
		fprintf(out, "==%u== (%s loss record%s that did not %s since the last check %s "
			"not shown; --check-records=any shows them)\n", p->pid,
			hl_fmt_grouped(a, same), same > 1 ? "s" : "",
			r->view.check_records == HL_CHECK_RECORDS_CHANGED ? "change" : "grow",
			same > 1 ? "are" : "is");
	if (c->records_total > c->nrecords)
		fprintf(out, "==%u== (%s loss records of this check were not kept, only the %zu "
			"that changed since the check before or are largest; the totals above "
			"count them)\n",
			p->pid, hl_fmt_grouped(a, c->records_total - c->nrecords), c->nrecords);
	if (same || c->records_total > c->nrecords)
		fprintf(out, "==%u==\n", p->pid);
}

/* The on-demand checks, each with what is new since the one before. */
static void print_checks(const struct hl_report *r, const struct hl_report_process *p,
			 FILE *out)
{
	static const unsigned lines[] = {
		HL_CLASS_DEFINITE, HL_CLASS_INDIRECT, HL_CLASS_POSSIBLE,
		HL_CLASS_REACHABLE, HL_CLASS_SUPPRESSED, HL_CLASS_UNKNOWN,
	};

	for (size_t i = 0; i < p->nchecks; i++) {
		const struct hl_report_check *c = &p->checks[i], *prev = i ? &p->checks[i - 1] : NULL;
		double secs = p->started_ns && c->time_ns > p->started_ns ?
				      (double)(c->time_ns - p->started_ns) / 1e9 : 0.0;

		fprintf(out, "==%u== LEAK CHECK %u (%s, %.3f s after start%s):\n", p->pid, c->seq,
			c->by_signal ? "check_signal" : "heapledger_check_leaks()", secs,
			c->all_threads_stopped ? "" : "; a thread did not stop for the scan");
		for (size_t k = 0; k < HL_ARRAY_SIZE(lines); k++)
			if (lines[k] != HL_CLASS_UNKNOWN || c->blocks[HL_CLASS_UNKNOWN] ||
			    (prev && prev->blocks[HL_CLASS_UNKNOWN]))
				print_check_line(p->pid, c, prev, lines[k],
						 hl_leak_class_info(lines[k])->label, out);
		print_unstopped_tids(p->pid, c->unstopped_tids, c->nunstopped_tids, out);
		fprintf(out, "==%u==\n", p->pid);
		print_check_records(r, p, c, out);
	}
}

/* The records the view shows; with max_leaks, only the largest that many
 * (the last ones, in valgrind's order), saying how many were left out. */
static void print_leaks(const struct hl_report *r, const struct hl_report_process *p, FILE *out)
{
	unsigned long max = p->max_leaks_given ? p->max_leaks : r->view.max_leaks;
	size_t shown = 0, skip = 0;
	char a[32];

	for (size_t i = 0; i < p->nleaks; i++)
		shown += leak_shown(&p->leaks[i], &r->view);
	if (max && shown > max) {
		skip = shown - max;
		fprintf(out, "==%u== (the %s smallest loss records are not shown: %s%lu%s)\n"
			"==%u==\n", p->pid, hl_fmt_grouped(a, skip),
			p->max_leaks_given ? "max_leaks=" : "--max-leaks=", max,
			p->max_leaks_given ? " in its " HL_ENV_OPTIONS : "", p->pid);
	}
	for (size_t i = 0; i < p->nleaks; i++) {
		if (!leak_shown(&p->leaks[i], &r->view))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		print_leak(p, i, &r->view, r->gen_suppressions, out);
	}
}

/* valgrind's words for a process a signal ended, when the hook saw it. */
static void print_fatal(const struct hl_report_process *p, const struct hl_report_view *view,
			FILE *out)
{
	char name[24];

	if (!p->fatal.signal)
		return;
	fprintf(out, "==%u== Process terminating with default action of signal %d (%s)\n",
		p->pid, p->fatal.signal, hl_report_signal_name(p->fatal.signal, name, sizeof(name)));
	if (p->fatal.fault)
		fprintf(out, "==%u==  %s at address 0x%" PRIx64 "\n", p->pid, p->fatal.fault,
			p->fatal.address);
	print_stack(out, p->pid, &p->fatal.stack, view);
	fprintf(out, "==%u==\n", p->pid);
}

/* valgrind's --track-fds listing: "Open file descriptor 3: /path" or
 * "Open AF_INET socket 4: 127.0.0.1:80 <-> unbound", then where it was made. */
static void print_fd_heading(const struct hl_report_process *p, const struct hl_report_fd *f,
			     FILE *out)
{
	const char *family = hl_wire_fd_family_name(f->family);

	fprintf(out, "==%u== Open ", p->pid);
	if (f->kind == HL_FD_FILE)
		fputs("file descriptor", out);
	else if (family)
		fprintf(out, "%s socket", family);
	else if (f->family)
		fprintf(out, "pf-%u socket", f->family);
	else
		fputs("socket", out);
	fprintf(out, " %d:%s%s\n", f->fd, f->text[0] ? " " : "", f->text);
}

static void print_fds(const struct hl_report_process *p, const struct hl_report_view *view,
		      FILE *out)
{
	if (!p->fd_summary.tracked)
		return;
	fprintf(out, "==%u== FILE DESCRIPTORS: %u open (%u std) at exit.\n", p->pid,
		p->fd_summary.open, p->fd_summary.std);
	for (size_t i = 0; i < p->nfds; i++) {
		const struct hl_report_fd *f = &p->fds[i];

		print_fd_heading(p, f, out);
		if (f->inherited)
			fprintf(out, "==%u==    <inherited from parent>\n", p->pid);
		else if (f->unseen)
			fprintf(out, "==%u==    <made by a call heapledger does not see: no stack>\n",
				p->pid);
		else
			print_stack(out, p->pid, &f->stack, view);
		fprintf(out, "==%u==\n", p->pid);
	}
	fprintf(out, "==%u==\n", p->pid);
}

/* valgrind -q: the errors and loss records only, with the reasons a
 * process was not scanned (a result must never look clean by omission). */
static void print_errors_only(const struct hl_report *r, const struct hl_report_process *p,
			      FILE *out)
{
	print_errors(p, &r->view, out);
	if (is_exec(p))
		return;
	print_not_scanned(p, out);
	print_leaks(r, p, out);
	if (r->view.error_summary)
		print_error_summary(p, &r->view, out);
}

/* Whether view.brief_clean may print p as one line: it ended on its own
 * and the full report would show nothing but its summaries. */
static bool nothing_to_show(const struct hl_report *r, const struct hl_report_process *p)
{
	char why[512];

	if (strcmp(p->how, "exit") && strcmp(p->how, "_exit") && strcmp(p->how, "exec"))
		return false;
	if (p->fatal.signal || p->nerrors || p->nchecks || p->unstopped || p->no_exit_record ||
	    p->nfds ||
	    p->dropped_events || p->dropped_stacks || p->unmatched_frees ||
	    p->unfreed_superseded || p->live_mismatch ||
	    hl_report_not_scanned(p, why, sizeof(why)) || hl_report_stream_cut(p, why, sizeof(why)))
		return false;
	for (size_t i = 0; i < p->nleaks; i++)
		if (leak_shown(&p->leaks[i], &r->view) || p->leaks[i].leak_class == HL_CLASS_UNKNOWN)
			return false;
	return true;
}

/* The one line of a process with nothing to show: its header, then what
 * it still held, by class ("still reachable", "suppressed"). */
static void print_brief(const struct hl_report_process *p, FILE *out)
{
	uint64_t bytes[HL_LEAK_CLASS_COUNT] = { 0 }, blocks[HL_LEAK_CLASS_COUNT] = { 0 }, sbytes = 0,
		 sblocks = 0;
	char text[HL_BYTES_IN_BLOCKS_LEN];
	const char *sep = "";

	print_header_words(p, out);
	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];

		assert(l->leak_class < HL_LEAK_CLASS_COUNT);
		if (l->suppressed) {
			sbytes += l->bytes;
			sblocks += l->blocks;
		} else {
			bytes[l->leak_class] += l->bytes;
			blocks[l->leak_class] += l->blocks;
		}
	}
	fputs("; no leaks, no errors", out);
	if (is_exec(p) || (!p->nleaks && p->in_use_blocks == 0)) {
		fputc('\n', out);
		return;
	}
	fputs(" (", out);
	for (unsigned k = 0; k < HL_LEAK_CLASS_COUNT; k++) {
		if (!blocks[k])
			continue;
		fprintf(out, "%s%s %s", sep, hl_fmt_bytes_in_blocks(text, bytes[k], blocks[k]),
			hl_leak_class_info(k)->phrase);
		sep = ", ";
	}
	if (sblocks)
		fprintf(out, "%s%s suppressed", sep, hl_fmt_bytes_in_blocks(text, sbytes, sblocks));
	fputs(")\n", out);
}

static void print_process(const struct hl_report *r, const struct hl_report_process *p,
			  FILE *out)
{
	if (r->view.silent_forks && !strcmp(p->origin, "fork"))
		return;
	if (r->view.brief_clean && !r->view.errors_only && nothing_to_show(r, p)) {
		print_brief(p, out);
		return;
	}
	if (r->view.errors_only) {
		print_fatal(p, &r->view, out); /* valgrind -q says it too */
		print_fds(p, &r->view, out);   /* and this */
		print_errors_only(r, p, out);
		return;
	}
	print_header(p, out);
	if (hl_report_never_connected(p)) { /* no heap to summarise: only why */
		print_consistency(p, out);
		fprintf(out, "==%u==\n", p->pid);
		return;
	}
	print_fatal(p, &r->view, out);
	print_fds(p, &r->view, out);
	print_summary(p, out);
	print_checks(r, p, out);
	print_errors(p, &r->view, out);
	if (is_exec(p)) {
		print_consistency(p, out);
		return;
	}
	print_not_scanned(p, out);
	print_unstopped(p, out);
	print_leaks(r, p, out);
	if (!p->nleaks && p->no_exit_record)
		fprintf(out, "==%u== heapledger could not see this process to its end: its leaks "
			"are not known (see below)\n", p->pid);
	else if (!p->nleaks)
		fprintf(out, "==%u== All heap blocks were freed -- no leaks are possible\n", p->pid);
	else
		print_leak_summary(p, &r->view, out);
	print_consistency(p, out);
	print_error_summary(p, &r->view, out);
	fprintf(out, "==%u==\n", p->pid);
}

/* valgrind's --time-stamp: "==dd:hh:mm:ss.mmm pid== " from "==pid== ". */
static void print_stamped(const char *text, size_t len, uint64_t origin_ns, FILE *out)
{
	struct timespec now;
	uint64_t ms;
	char stamp[32];

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = ((uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - origin_ns) / 1000000u;
	snprintf(stamp, sizeof(stamp), "%02u:%02u:%02u:%02u.%03u ", (unsigned)(ms / 86400000u),
		 (unsigned)(ms / 3600000u % 24), (unsigned)(ms / 60000u % 60),
		 (unsigned)(ms / 1000u % 60), (unsigned)(ms % 1000u));
	for (const char *line = text, *end = text + len; line < end;) {
		const char *next = memchr(line, '\n', (size_t)(end - line));
		size_t n = next ? (size_t)(next - line) + 1 : (size_t)(end - line);

		if (n > 2 && line[0] == '=' && line[1] == '=') {
			fputs("==", out);
			fputs(stamp, out);
			fwrite(line + 2, 1, n - 2, out);
		} else {
			fwrite(line, 1, n, out);
		}
		line += n;
	}
}

void hl_report_print_process_text(const struct hl_report *r,
				  const struct hl_report_process *p, FILE *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem;

	if (!r->view.time_origin_ns || !(mem = open_memstream(&text, &len))) {
		print_process(r, p, out);
		return;
	}
	print_process(r, p, mem);
	if (fclose(mem) == 0)
		print_stamped(text, len, r->view.time_origin_ns, out);
	else
		print_process(r, p, out);
	free(text);
}

void hl_report_print_text(const struct hl_report *r, FILE *out)
{
	if (!r->nprocs && r->unreported)
		fprintf(out, "heapledger: no process reported to heapledger: %s\n", r->unreported);
	else if (!r->nprocs)
		fputs("heapledger: no process reported to heapledger "
		      "(was libheapledger.so preloaded, and is the program dynamically linked?)\n",
		      out);
	for (size_t i = 0; i < r->nprocs; i++)
		hl_report_print_process_text(r, &r->procs[i], out);
	fflush(out);
}
