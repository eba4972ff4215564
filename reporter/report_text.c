/*
 * reporter/report_text.c: the report as valgrind users know it: per
 * process a HEAP SUMMARY, then the leak records grouped by allocation stack,
 * largest first, every line prefixed with ==pid==.
 */
#include <string.h>

#include "report.h"
#include "suppress.h"

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static void print_frame(FILE *out, uint32_t pid, const struct hl_frame_info *f,
			bool first)
{
	fprintf(out, "==%u==    %s 0x%llx: ", pid, first ? "at" : "by",
		(unsigned long long)f->address);
	fputs(f->function ? f->function : "???", out);
	if (f->file && f->line)
		fprintf(out, " (%s:%u)", base_name(f->file), f->line);
	else if (f->module && f->function)
		fprintf(out, " (in %s)", f->module);
	else if (f->module)
		fprintf(out, " (%s+0x%llx)", base_name(f->module),
			(unsigned long long)f->offset);
	fputc('\n', out);
}

static void print_stack(FILE *out, uint32_t pid, const struct hl_report_stack *s)
{
	if (!s->nframes)
		fprintf(out, "==%u==    (no stack captured)\n", pid);
	for (size_t i = 0; i < s->nframes; i++)
		print_frame(out, pid, &s->frames[i], i == 0);
	if (s->truncated)
		fprintf(out, "==%u==    ... (stack truncated)\n", pid);
}

static void describe_end(const struct hl_report_process *p, char *buf, size_t len)
{
	if (!strcmp(p->how, "exit"))
		snprintf(buf, len, "exited with status %d", p->status);
	else if (!strcmp(p->how, "_exit"))
		snprintf(buf, len, "exited with status %d (_exit: no exit handlers ran)", p->status);
	else if (!strcmp(p->how, "abort"))
		snprintf(buf, len, "aborted");
	else if (!strcmp(p->how, "signal"))
		snprintf(buf, len, "killed by signal %d (%s)", p->status, strsignal(p->status));
	else if (!strcmp(p->how, "exec"))
		snprintf(buf, len, "replaced by exec");
	else
		snprintf(buf, len, "ended without an exit record (unknown)");
}

static void print_header(const struct hl_report_process *p, FILE *out)
{
	char end[160];

	describe_end(p, end, sizeof(end));
	fprintf(out, "==%u== heapledger: process %u (", p->pid, p->pid);
	for (uint32_t i = 0; i < p->argc; i++)
		fprintf(out, "%s%s", i ? " " : "", p->argv[i]);
	if (!p->argc)
		fputs(p->exe, out);
	fputc(')', out);
	if (!strcmp(p->origin, "fork"))
		fprintf(out, ", forked from %u", p->ppid);
	else if (!strcmp(p->origin, "exec"))
		fprintf(out, ", exec'd");
	fprintf(out, ": %s\n", end);
}

static void print_summary(const struct hl_report_process *p, FILE *out)
{
	char a[32], b[32], c[32];

	fprintf(out, "==%u== HEAP SUMMARY:\n", p->pid);
	fprintf(out, "==%u==     in use at exit: %s bytes in %s blocks\n", p->pid,
		hl_fmt_grouped(a, p->in_use_bytes), hl_fmt_grouped(b, p->in_use_blocks));
	fprintf(out, "==%u==   total heap usage: %s allocs, %s frees, %s bytes allocated\n",
		p->pid, hl_fmt_grouped(a, p->allocs), hl_fmt_grouped(b, p->frees),
		hl_fmt_grouped(c, p->bytes_allocated));
	fprintf(out, "==%u==   peak heap usage: %s bytes\n", p->pid,
		hl_fmt_grouped(a, p->peak_bytes));
	if (p->inherited_blocks)
		fprintf(out, "==%u==   inherited at fork, still in use: %s bytes in %s blocks\n",
			p->pid, hl_fmt_grouped(a, p->inherited_bytes),
			hl_fmt_grouped(b, p->inherited_blocks));
	fprintf(out, "==%u==\n", p->pid);
}

static void print_leak(const struct hl_report_process *p, size_t i, bool gen, FILE *out)
{
	const struct hl_report_leak *l = &p->leaks[i];
	char a[32], b[32], c[32], d[32];
	bool classified = strcmp(l->kind, "unknown") != 0;

	fprintf(out, "==%u== %s bytes in %s blocks are %s%slost in loss record %s of %s\n",
		p->pid, hl_fmt_grouped(a, l->bytes), hl_fmt_grouped(b, l->blocks),
		classified ? l->kind : "", classified ? " " : "",
		hl_fmt_grouped(c, i + 1), hl_fmt_grouped(d, p->nleaks));
	print_stack(out, p->pid, &l->stack);
	if (l->inherited_blocks)
		fprintf(out, "==%u==    (%s of these blocks were inherited from the parent at fork)\n",
			p->pid, hl_fmt_grouped(a, l->inherited_blocks));
	if (l->suppression)
		fprintf(out, "==%u==    suppressed by: %s\n", p->pid, l->suppression);
	fprintf(out, "==%u==\n", p->pid);
	if (gen && !l->suppressed)
		hl_supp_print_generated(out, NULL, l);
}

static void print_error(const struct hl_report_process *p,
			const struct hl_report_error *e, FILE *out)
{
	char a[32];

	fprintf(out, "==%u== heap error: %s of 0x%llx\n", p->pid, e->kind,
		(unsigned long long)e->address);
	print_stack(out, p->pid, &e->stack);
	if (e->block_address) {
		fprintf(out, "==%u==  block 0x%llx of %s bytes, allocated:\n", p->pid,
			(unsigned long long)e->block_address, hl_fmt_grouped(a, e->block_size));
		print_stack(out, p->pid, &e->alloc_stack);
	}
	if (e->free_stack.nframes) {
		fprintf(out, "==%u==  freed:\n", p->pid);
		print_stack(out, p->pid, &e->free_stack);
	}
	fprintf(out, "==%u==\n", p->pid);
}

static void print_leak_summary(const struct hl_report_process *p, FILE *out)
{
	static const char *const kinds[] = { "definitely", "indirectly", "possibly",
					     "reachable", "suppressed", "unknown" };
	char a[32], b[32];

	fprintf(out, "==%u== LEAK SUMMARY:\n", p->pid);
	for (size_t k = 0; k < HL_ARRAY_SIZE(kinds); k++) {
		uint64_t bytes = 0, blocks = 0;

		for (size_t i = 0; i < p->nleaks; i++) {
			/* a suppressed leak counts as suppressed, not in its class */
			if (!strcmp(kinds[k], "suppressed") ? p->leaks[i].suppressed :
			    !p->leaks[i].suppressed && !strcmp(p->leaks[i].kind, kinds[k])) {
				bytes += p->leaks[i].bytes;
				blocks += p->leaks[i].blocks;
			}
		}
		if (!blocks && strcmp(kinds[k], "unknown"))
			continue;
		if (!blocks && p->scanned)
			continue;
		fprintf(out, "==%u==    %s%s: %s bytes in %s blocks\n", p->pid, kinds[k],
			!strcmp(kinds[k], "unknown") ? " (not classified)" :
			!strcmp(kinds[k], "reachable") || !strcmp(kinds[k], "suppressed") ? "" : " lost",
			hl_fmt_grouped(a, bytes), hl_fmt_grouped(b, blocks));
	}
}

static void print_consistency(const struct hl_report_process *p, FILE *out)
{
	if (p->dropped_events)
		fprintf(out, "==%u== warning: the hook dropped %llu events; totals are incomplete\n",
			p->pid, (unsigned long long)p->dropped_events);
	if (p->unmatched_frees || p->unfreed_superseded || p->live_mismatch)
		fprintf(out, "==%u== warning: event stream inconsistencies: %llu frees without "
			"their allocation, %llu reused blocks without their free, %llu blocks "
			"the hook's live set disagreed on\n", p->pid,
			(unsigned long long)p->unmatched_frees,
			(unsigned long long)p->unfreed_superseded,
			(unsigned long long)p->live_mismatch);
}

void hl_report_print_process_text(const struct hl_report_process *p, FILE *out)
{
	hl_report_print_process_text_gen(p, false, out);
}

void hl_report_print_process_text_gen(const struct hl_report_process *p, bool gen_suppressions,
				      FILE *out)
{
	print_header(p, out);
	print_summary(p, out);
	for (size_t i = 0; i < p->nerrors; i++)
		print_error(p, &p->errors[i], out);
	for (size_t i = 0; i < p->nleaks; i++)
		print_leak(p, i, gen_suppressions, out);
	if (!p->nleaks)
		fprintf(out, "==%u== All heap blocks were freed -- no leaks are possible\n", p->pid);
	else
		print_leak_summary(p, out);
	print_consistency(p, out);
	fprintf(out, "==%u==\n", p->pid);
}

void hl_report_print_text(const struct hl_report *r, FILE *out)
{
	if (!r->nprocs)
		fputs("heapledger: no process reported to heapledger "
		      "(was libheapledger.so preloaded, and is the program dynamically linked?)\n",
		      out);
	for (size_t i = 0; i < r->nprocs; i++)
		hl_report_print_process_text_gen(&r->procs[i], r->gen_suppressions, out);
	fflush(out);
}
