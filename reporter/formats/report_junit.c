/*
 * reporter/formats/report_junit.c: the report as JUnit XML, which CI services show as
 * test results: the run is a testsuite, each test program a testcase (the
 * processes of one $HEAPLEDGER_TEST_NAME together, named by it; a process
 * without one is a testcase of its own, named by pid and command line). A
 * testcase fails exactly when the gate (gate.h, with the options given)
 * fails its processes, with one <failure> whose text lists each counted
 * leak record and heap error with its stack: a still-reachable global is
 * no failure where the gate passes it. Suppressed and unclassified leaks
 * are counted in the testcase's system-out. Everything from the program
 * (argv, function and file names) is escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "report.h"
#include "report_formats.h"
#include "text_bytes.h"

/* Whether the UTF-8 character at s (len bytes) is one XML 1.0 allows. */
static bool xml_char_allowed(const unsigned char *s, size_t len)
{
	if (len == 1)
		return s[0] >= 0x20 || s[0] == '\t' || s[0] == '\n' || s[0] == '\r';
	/* U+FFFE and U+FFFF (EF BF BE/BF) are not characters */
	return !(len == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe);
}

/* Markup escaped; a byte that is not UTF-8, or a character XML may not
 * hold, as the text \xNN, so the document stays well formed whatever the
 * bytes of an argv word or a path (text_bytes.h). */
void hl_report_xml_text(FILE *out, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	for (size_t i = 0, len; i < n; i += len) {
		const unsigned char *c = (const unsigned char *)s + i;

		len = hl_utf8_char_len(c, n - i);
		if (!len || !xml_char_allowed(c, len)) {
			for (size_t j = 0; j < (len ? len : 1); j++)
				fprintf(out, "\\x%02x", c[j]);
			len = len ? len : 1;
		} else if (*c == '&')
			fputs("&amp;", out);
		else if (*c == '<')
			fputs("&lt;", out);
		else if (*c == '>')
			fputs("&gt;", out);
		else if (*c == '"')
			fputs("&quot;", out);
		else
			fwrite(c, 1, len, out);
	}
}

static void stack_text(FILE *out, const struct hl_report_stack *s)
{
	for (size_t i = 0; i < s->nframes; i++) {
		const struct hl_frame_info *f = &s->frames[i];
		char line[32] = "";

		if (f->line)
			snprintf(line, sizeof(line), ":%u", f->line);
		fputs(i ? "    by " : "    at ", out);
		hl_report_xml_text(out, f->function ? f->function : "???");
		fputs(" (", out);
		hl_report_xml_text(out, f->file ? f->file : f->module ? f->module : "?");
		fprintf(out, "%s)\n", f->file ? line : "");
	}
}

/* The testcase of p: its test's name, or its command line when the test
 * runner named none. */
static void testcase_name(FILE *out, const struct hl_report_process *p)
{
	if (p->test_name) {
		hl_report_xml_text(out, p->test_name);
		return;
	}
	fprintf(out, "pid %u: ", p->pid);
	for (uint32_t i = 0; i < p->argc; i++) {
		if (i)
			fputc(' ', out);
		hl_report_xml_text(out, p->argv[i]);
	}
	if (!p->argc)
		hl_report_xml_text(out, p->exe);
}

static bool same_testcase(const struct hl_report_process *a, const struct hl_report_process *b)
{
	return a == b || (a->test_name && b->test_name && !strcmp(a->test_name, b->test_name));
}

/* The gate's verdict over the processes of one testcase (first: the first
 * process of its test, so every other one comes after it). */
static void judge(const struct hl_report *r, size_t first, const struct hl_gate_options *o,
		  struct hl_gate *g)
{
	hl_gate_init(g);
	for (size_t i = first; i < r->nprocs; i++)
		if (same_testcase(&r->procs[first], &r->procs[i]))
			hl_gate_count_report(g, o, &r->procs[i]);
}

/* The failure's text: each counted record and heap error, with its stack. */
static void failure_details(FILE *out, const struct hl_report_process *p,
			    const struct hl_gate_options *o)
{
	struct hl_gate scratch;

	hl_gate_init(&scratch);
	for (size_t i = 0; i < p->nerrors; i++) {
		const struct hl_report_error *e = &p->errors[i];

		fprintf(out, "pid %u: heap error: %s of 0x%llx\n", p->pid, hl_error_kind_name(e->kind),
			(unsigned long long)e->address);
		stack_text(out, &e->stack);
	}
	for (size_t i = 0; i < p->nleaks; i++) {
		const struct hl_report_leak *l = &p->leaks[i];

		if (!hl_gate_count_leak(&scratch, o, l->leak_class, l->suppressed, l->fingerprint,
					l->bytes, l->blocks))
			continue;
		char text[HL_BYTES_IN_BLOCKS_LEN];

		fprintf(out, "pid %u: %s %s %s", p->pid,
			hl_fmt_bytes_in_blocks(text, l->bytes, l->blocks),
			hl_plural(l->blocks, "is", "are"), hl_leak_class_info(l->leak_class)->phrase);
		if (l->fingerprint)
			fprintf(out, " (site %s)", l->fingerprint);
		fputc('\n', out);
		stack_text(out, &l->stack);
	}
	hl_gate_destroy(&scratch);
}

/* One testcase: the processes of one test (or one process), failed exactly
 * when the gate fails them. */
static void testcase(FILE *out, const struct hl_report *r, size_t first,
		     const struct hl_gate_options *o)
{
	const struct hl_report_process *p = &r->procs[first];
	uint64_t started = p->started_ns, ended = p->ended_ns;
	struct hl_gate g;
	char e[HL_BYTES_IN_BLOCKS_LEN];

	judge(r, first, o, &g);
	for (size_t i = first; i < r->nprocs; i++) {
		if (!same_testcase(p, &r->procs[i]))
			continue;
		started = r->procs[i].started_ns < started ? r->procs[i].started_ns : started;
		ended = r->procs[i].ended_ns > ended ? r->procs[i].ended_ns : ended;
	}
	fputs("  <testcase classname=\"heapledger\" name=\"", out);
	testcase_name(out, p);
	fprintf(out, "\" time=\"%.3f\">\n", ended > started ? (double)(ended - started) / 1e9 : 0.0);
	if (hl_gate_failed(&g, o)) {
		fprintf(out, "   <failure type=\"heapledger\" message=\"%s leaked in %llu %s,"
			" %llu heap %s", hl_fmt_bytes_in_blocks(e, g.bytes, g.blocks),
			(unsigned long long)g.records, hl_plural(g.records, "record", "records"),
			(unsigned long long)g.errors, hl_plural(g.errors, "error", "errors"));
		if (hl_gate_incomplete(&g)) {
			fputs("; the verdict is incomplete: ", out);
			hl_report_xml_text(out, hl_gate_incomplete(&g));
		}
		fputs("\">", out);
		for (size_t i = first; i < r->nprocs; i++)
			if (same_testcase(p, &r->procs[i]))
				failure_details(out, &r->procs[i], o);
		for (size_t i = 0; i < g.nfailing; i++)
			if (g.failing[i].unseen) {
				fprintf(out, "pid %u: ", g.failing[i].pid);
				hl_report_xml_text(out, g.failing[i].unseen);
				fputc('\n', out);
			}
		fputs("</failure>\n", out);
	}
	fprintf(out, "   <system-out>%llu %s; suppressed %s; not counted by the gate: ",
		(unsigned long long)g.processes, hl_plural(g.processes, "process", "processes"),
		hl_fmt_bytes_in_blocks(e, g.suppressed_bytes, g.suppressed_blocks));
	fprintf(out, "%s no scan classified</system-out>\n",
		hl_fmt_bytes_in_blocks(e, g.unscanned_bytes, g.unscanned_blocks));
	fputs("  </testcase>\n", out);
	hl_gate_destroy(&g);
}

/* Whether procs[i] opens a testcase (the first process of its test). */
static bool opens_testcase(const struct hl_report *r, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (same_testcase(&r->procs[j], &r->procs[i]))
			return false;
	return true;
}

int hl_report_write_junit(const struct hl_report *r, const struct hl_gate_options *o,
			  FILE *out)
{
	size_t failures = 0, tests = 0;

	for (size_t i = 0; i < r->nprocs; i++) {
		struct hl_gate g;

		if (!opens_testcase(r, i))
			continue;
		tests++;
		judge(r, i, o, &g);
		failures += hl_gate_failed(&g, o);
		hl_gate_destroy(&g);
	}
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuites name=\"heapledger\" tests=\"%zu\" failures=\"%zu\">\n"
		" <testsuite name=\"heapledger run %lld\" tests=\"%zu\" failures=\"%zu\" errors=\"0\""
		" skipped=\"0\">\n", tests, failures, (long long)r->run_id, tests, failures);
	for (size_t i = 0; i < r->nprocs; i++)
		if (opens_testcase(r, i))
			testcase(out, r, i, o);
	fputs(" </testsuite>\n</testsuites>\n", out);
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}
