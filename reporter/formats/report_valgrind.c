/*
 * reporter/formats/report_valgrind.c: the report as valgrind memcheck writes it for
 * tools: its XML (protocol 4, valgrind's docs/xml-output-protocol4.txt), so
 * what reads memcheck's XML (CI plugins, IDEs, scripts) reads heapledger's,
 * and the files of --log-file/--xml-file, one per process when the name
 * holds %p, as valgrind makes them.
 *
 * XML: one document per file, naming the first process written (pid, ppid,
 * command); each loss record the view shows is an <error> of kind
 * Leak_DefinitelyLost, Leak_IndirectlyLost, Leak_PossiblyLost or
 * Leak_StillReachable, each heap misuse error an InvalidFree, MismatchedFree
 * or InvalidWrite (a redzone or a freed block's fill found overwritten) with
 * its stacks; suppressed records are counted in <suppcounts> by suppression
 * name, never written as errors (valgrind's rule). A record no leak scan
 * classified has no kind of its own in the protocol: it is written as the
 * gate rates it (gate.h, hl_gate_xml_kind), definitely lost when the gate
 * counts it and still reachable when not, its text saying "are lost"
 * (no class), so a gate reading the XML fails where heapledger's does. A process a signal ended
 * (the hook saw it arrive) has its <fatal_signal>, between the heap errors
 * and the FINISHED status, as valgrind writes it; then, for a process
 * whose event stream ended without its exit record, a <clientmsg> saying
 * what is missing and why (the hook went on standalone: the reporter
 * stalled, the program took heapledger's descriptor).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "report.h"
#include "report_formats.h"
#include "util.h"

static const char *leak_kind(const struct hl_report *r, unsigned leak_class)
{
	return hl_gate_xml_kind(r->gate_kinds, leak_class);
}

static const char *leak_words(unsigned leak_class)
{
	return hl_leak_class_info(leak_class)->phrase;
}

/* The view's --show-leak-kinds; a record no scan classified always shows. */
static bool leak_written(const struct hl_report_leak *l, unsigned show_kinds)
{
	if (l->suppressed || l->leak_class == HL_CLASS_SUPPRESSED)
		return false;
	if (l->leak_class == HL_CLASS_UNKNOWN)
		return true;
	return (show_kinds & HL_CLASS_BIT(l->leak_class)) != 0;
}

static void element(FILE *out, const char *indent, const char *name, const char *text)
{
	fprintf(out, "%s<%s>", indent, name);
	hl_report_xml_text(out, text);
	fprintf(out, "</%s>\n", name);
}

static void frame(FILE *out, const struct hl_frame_info *f)
{
	fprintf(out, "    <frame>\n      <ip>0x%llX</ip>\n", (unsigned long long)hl_frame_shown_address(f));
	if (f->module)
		element(out, "      ", "obj", f->module);
	if (f->function)
		element(out, "      ", "fn", f->function);
	if (f->file) {
		const char *slash = strrchr(f->file, '/');

		if (slash && slash > f->file) {
			char *dir = strndup(f->file, (size_t)(slash - f->file));

			if (dir)
				element(out, "      ", "dir", dir);
			free(dir);
		}
		element(out, "      ", "file", slash ? slash + 1 : f->file);
		if (f->line)
			fprintf(out, "      <line>%u</line>\n", f->line);
	}
	fputs("    </frame>\n", out);
}

/* A stack of at most num_callers frames (0: all), ending at main as
 * valgrind's do (--show-below-main=no). */
static void stack(FILE *out, const struct hl_report_stack *s, unsigned long num_callers)
{
	size_t n = 0;

	while (n < s->nframes && !(n && s->frames[n - 1].function &&
				   !strcmp(s->frames[n - 1].function, "main")))
		n++;
	if (num_callers && n > num_callers)
		n = num_callers;
	fputs("  <stack>\n", out);
	for (size_t i = 0; i < n; i++)
		frame(out, &s->frames[i]);
	if (!n) /* the protocol wants one frame at least */
		fputs("    <frame>\n      <ip>0x0</ip>\n    </frame>\n", out);
	fputs("  </stack>\n", out);
}

static void leak_error(FILE *out, const struct hl_report *r, const struct hl_report_process *p,
		       size_t i, unsigned unique)
{
	const struct hl_report_leak *l = &p->leaks[i];
	char a[32], b[32], c[32], d[32], e[32], f[32];

	fprintf(out, "<error>\n  <unique>0x%x</unique>\n  <tid>1</tid>\n  <kind>%s</kind>\n"
		"  <xwhat>\n    <text>", unique, leak_kind(r, l->leak_class));
	if (l->indirect_bytes)
		fprintf(out, "%s (%s direct, %s indirect) bytes in %s blocks are %s in loss record %s of %s",
			hl_fmt_grouped(a, l->bytes + l->indirect_bytes), hl_fmt_grouped(b, l->bytes),
			hl_fmt_grouped(c, l->indirect_bytes), hl_fmt_grouped(d, l->blocks),
			leak_words(l->leak_class), hl_fmt_grouped(e, i + 1), hl_fmt_grouped(f, p->nleaks));
	else
		fprintf(out, "%s bytes in %s blocks are %s in loss record %s of %s",
			hl_fmt_grouped(a, l->bytes), hl_fmt_grouped(b, l->blocks),
			leak_words(l->leak_class), hl_fmt_grouped(c, i + 1), hl_fmt_grouped(d, p->nleaks));
	fprintf(out, "</text>\n    <leakedbytes>%llu</leakedbytes>\n"
		"    <leakedblocks>%llu</leakedblocks>\n  </xwhat>\n",
		(unsigned long long)(l->bytes + l->indirect_bytes), (unsigned long long)l->blocks);
	stack(out, &l->stack, r->view.num_callers);
	fputs("</error>\n\n", out);
}

/* " (+N)" or " (-N)": valgrind's delta beside a number of a leak check. */
static const char *delta(char *buf, int64_t d)
{
	char n[32];

	snprintf(buf, 48, " (%s%s)", d < 0 ? "-" : "+",
		 hl_fmt_grouped(n, d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d));
	return buf;
}

/* A loss record of an on-demand check, as valgrind writes one of a
 * leak_check (its client request or monitor command, delta mode
 * "increased"): an <error> at the time of the check, each number with what
 * changed since the check before, and "new" for a record that check did
 * not have (mc_leakcheck.c, pp_LossRecord). */
static void check_error(FILE *out, const struct hl_report *r, const struct hl_report_check *c,
			const struct hl_report_check_record *rec, unsigned unique)
{
	const struct hl_report_leak *l = &rec->leak;
	const char *fresh = rec->new_blocks > 0 && (uint64_t)rec->new_blocks == l->blocks ?
				    "new " : "";
	char a[32], b[32], c1[32], d[32], e[32], f[32];
	char da[48], db[48], dc[48], dd[48];

	fprintf(out, "<error>\n  <unique>0x%x</unique>\n  <tid>1</tid>\n  <kind>%s</kind>\n"
		"  <xwhat>\n    <text>", unique, leak_kind(r, l->leak_class));
	if (l->indirect_bytes)
		fprintf(out, "%s%s (%s%s direct, %s%s indirect) bytes in %s%s blocks are %s in "
			"%sloss record %s of %s", hl_fmt_grouped(a, l->bytes + l->indirect_bytes),
			delta(da, rec->new_bytes + rec->new_indirect_bytes),
			hl_fmt_grouped(b, l->bytes), delta(db, rec->new_bytes),
			hl_fmt_grouped(c1, l->indirect_bytes), delta(dc, rec->new_indirect_bytes),
			hl_fmt_grouped(d, l->blocks), delta(dd, rec->new_blocks),
			leak_words(l->leak_class), fresh, hl_fmt_grouped(e, rec->rank),
			hl_fmt_grouped(f, c->records_total));
	else
		fprintf(out, "%s%s bytes in %s%s blocks are %s in %sloss record %s of %s",
			hl_fmt_grouped(a, l->bytes), delta(da, rec->new_bytes),
			hl_fmt_grouped(b, l->blocks), delta(db, rec->new_blocks),
			leak_words(l->leak_class), fresh, hl_fmt_grouped(c1, rec->rank),
			hl_fmt_grouped(d, c->records_total));
	fprintf(out, "</text>\n    <leakedbytes>%llu</leakedbytes>\n"
		"    <leakedblocks>%llu</leakedblocks>\n  </xwhat>\n",
		(unsigned long long)(l->bytes + l->indirect_bytes), (unsigned long long)l->blocks);
	stack(out, &l->stack, r->view.num_callers);
	fputs("</error>\n\n", out);
}

static const char *error_kind(const struct hl_report_error *e)
{
	if (hl_report_error_is_access(e))
		return hl_error_access_xml_kind(!strcmp(e->call, "write") ? HL_CALL_WRITE
									  : HL_CALL_READ);
	return hl_error_kind_info(e->kind)->xml_kind;
}

static const char *error_what(const struct hl_report_error *e)
{
	if (e->call && !strcmp(e->call, "malloc_usable_size"))
		return hl_error_heading(e->kind, HL_CALL_USABLE_SIZE);
	return hl_error_heading(e->kind, HL_CALL_FREE);
}

static void heap_error(FILE *out, const struct hl_report *r, const struct hl_report_error *e,
		       unsigned unique)
{
	bool freed = e->kind == HL_ERROR_DOUBLE_FREE || e->kind == HL_ERROR_USE_AFTER_FREE;

	fprintf(out, "<error>\n  <unique>0x%x</unique>\n  <tid>1</tid>\n  <kind>%s</kind>\n",
		unique, error_kind(e));
	char access[96];
	element(out, "  ", "what",
		hl_report_error_is_access(e) ? hl_report_error_access_heading(e, access, sizeof(access))
					     : error_what(e));
	stack(out, &e->stack, r->view.num_callers);
	if (hl_report_error_is_access(e) && e->block_address) {
		fprintf(out, "  <auxwhat>Address 0x%llx %s</auxwhat>\n", (unsigned long long)e->address,
			hl_report_error_access_where(e, access, sizeof(access)));
		if (freed && e->free_stack.nframes) {
			stack(out, &e->free_stack, r->view.num_callers);
			fputs("  <auxwhat>Block was alloc'd at</auxwhat>\n", out);
		}
		if (e->alloc_stack.nframes)
			stack(out, &e->alloc_stack, r->view.num_callers);
	} else if (!e->block_address) {
		fprintf(out, "  <auxwhat>Address 0x%llx is not stack'd, malloc'd or (recently) "
			"free'd</auxwhat>\n", (unsigned long long)e->address);
	} else {
		fprintf(out, "  <auxwhat>Address 0x%llx is %llu bytes inside a block of size %llu "
			"%s</auxwhat>\n", (unsigned long long)e->address,
			(unsigned long long)(e->address - e->block_address),
			(unsigned long long)e->block_size, freed ? "free'd" : "alloc'd");
		if (freed && e->free_stack.nframes) {
			stack(out, &e->free_stack, r->view.num_callers);
			fputs("  <auxwhat>Block was alloc'd at</auxwhat>\n", out);
		}
		if (e->alloc_stack.nframes)
			stack(out, &e->alloc_stack, r->view.num_callers);
	}
	fputs("</error>\n\n", out);
}

/* "00:00:01:02.345 ": valgrind's days:hours:minutes:seconds of the run. */
static void elapsed(FILE *out, uint64_t ns)
{
	uint64_t ms = ns / 1000000;

	fprintf(out, "%02llu:%02llu:%02llu:%02llu.%03llu ", (unsigned long long)(ms / 86400000),
		(unsigned long long)(ms / 3600000 % 24), (unsigned long long)(ms / 60000 % 60),
		(unsigned long long)(ms / 1000 % 60), (unsigned long long)(ms % 1000));
}

static void header(FILE *out, const struct hl_report *r, const struct hl_report_process *p)
{
	fputs("<?xml version=\"1.0\"?>\n\n<valgrindoutput>\n\n<protocolversion>4</protocolversion>\n"
	      "<protocoltool>memcheck</protocoltool>\n\n<preamble>\n"
	      "  <line>heapledger, a leak-tracking debug allocator (memcheck's XML)</line>\n", out);
	fputs("  <line>Command:", out);
	for (uint32_t i = 0; p && i < p->argc; i++) {
		fputc(' ', out);
		hl_report_xml_text(out, p->argv[i]);
	}
	fputs("</line>\n</preamble>\n\n", out);
	fprintf(out, "<pid>%u</pid>\n<ppid>%u</ppid>\n<tool>memcheck</tool>\n\n<args>\n"
		"  <vargv>\n    <exe>heapledger</exe>\n  </vargv>\n  <argv>\n",
		p ? p->pid : 0, p ? p->ppid : 0);
	element(out, "    ", "exe", p && p->exe ? p->exe : r->argc ? r->argv[0] : "");
	for (uint32_t i = 1; p && i < p->argc; i++)
		element(out, "    ", "arg", p->argv[i]);
	fputs("  </argv>\n</args>\n\n<status>\n  <state>RUNNING</state>\n  <time>", out);
	elapsed(out, 0);
	fputs("</time>\n</status>\n\n", out);
}

/* The run is over: after the errors found while it ran and the signal that
 * ended it, before the leaks found at the end (valgrind's order). */
static void finished(FILE *out, const struct hl_report_process *p)
{
	fputs("<status>\n  <state>FINISHED</state>\n  <time>", out);
	elapsed(out, p && p->ended_ns > p->started_ns ? p->ended_ns - p->started_ns : 0);
	fputs("</time>\n</status>\n\n", out);
}

/* <fatal_signal>: the signal that ended p, when the hook saw it arrive. */
static void fatal_signal(FILE *out, const struct hl_report *r, const struct hl_report_process *p)
{
	char name[24];

	if (!p->fatal.signal)
		return;
	fprintf(out, "<fatal_signal>\n  <tid>1</tid>\n  <signo>%d</signo>\n", p->fatal.signal);
	element(out, "  ", "signame", hl_report_signal_name(p->fatal.signal, name, sizeof(name)));
	fprintf(out, "  <sicode>%d</sicode>\n", p->fatal.code);
	if (p->fatal.fault) {
		element(out, "  ", "event", p->fatal.fault);
		fprintf(out, "  <siaddr>0x%llx</siaddr>\n", (unsigned long long)p->fatal.address);
	}
	stack(out, &p->fatal.stack, r->view.num_callers);
	fputs("</fatal_signal>\n\n", out);
}

/* What heapledger could not see of p (its stream ended without its exit
 * record: why, when its hook went on standalone), as a <clientmsg>: the
 * protocol's element for a message that is not an error, which readers
 * show as text. */
static void stream_cut(FILE *out, const struct hl_report_process *p)
{
	char why[600];

	if (!hl_report_stream_cut(p, why, sizeof(why)))
		return;
	fputs("<clientmsg>\n  <tid>1</tid>\n", out);
	element(out, "  ", "text", why);
	fputs("</clientmsg>\n\n", out);
}

/* <suppcounts>: how many loss records each suppression matched. */
static void suppcounts(FILE *out, const struct hl_report_process *procs, size_t n)
{
	fputs("<suppcounts>\n", out);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i].nleaks; j++) {
			const char *name = procs[i].leaks[j].suppression;
			unsigned count = 0;
			bool seen = false;

			if (!procs[i].leaks[j].suppressed || !name)
				continue;
			/* first use of the name only; count every use */
			for (size_t a = 0; a <= i && !seen; a++)
				for (size_t b = 0; b < (a == i ? j : procs[a].nleaks) && !seen; b++)
					seen = procs[a].leaks[b].suppressed && procs[a].leaks[b].suppression &&
					       !strcmp(procs[a].leaks[b].suppression, name);
			if (seen)
				continue;
			for (size_t a = i; a < n; a++)
				for (size_t b = 0; b < procs[a].nleaks; b++)
					count += procs[a].leaks[b].suppressed && procs[a].leaks[b].suppression &&
						 !strcmp(procs[a].leaks[b].suppression, name);
			fprintf(out, "  <pair>\n    <count>%u</count>\n", count);
			element(out, "    ", "name", name);
			fputs("  </pair>\n", out);
		}
	fputs("</suppcounts>\n\n", out);
}

int hl_report_write_valgrind_xml(const struct hl_report *r, const struct hl_report_process *procs,
				 size_t n, FILE *out)
{
	unsigned unique = 0, heap_errors;

	header(out, r, n ? &procs[0] : NULL);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i].nerrors; j++)
			heap_error(out, r, &procs[i].errors[j], unique++);
	heap_errors = unique;
	for (size_t i = 0; i < n; i++) {
		fatal_signal(out, r, &procs[i]);
		stream_cut(out, &procs[i]);
	}
	finished(out, n ? &procs[0] : NULL);
	/* The on-demand checks, in order, before the leaks at exit (valgrind
	 * writes a leak_check's records when it runs). */
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < procs[i].nchecks; k++) {
			const struct hl_report_check *c = &procs[i].checks[k];

			for (size_t j = 0; j < c->nrecords; j++)
				if (leak_written(&c->records[j].leak, r->view.show_kinds) &&
				    hl_report_check_record_grew(&c->records[j], r->view.check_records))
					check_error(out, r, c, &c->records[j], unique++);
		}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i].nleaks; j++)
			if (leak_written(&procs[i].leaks[j], r->view.show_kinds))
				leak_error(out, r, &procs[i], j, unique++);
	/* Counts of the heap errors (each its own context); leak errors are
	 * not listed there, as in valgrind's output. */
	fputs("<errorcounts>\n", out);
	for (unsigned u = 0; u < heap_errors; u++)
		fprintf(out, "  <pair>\n    <count>1</count>\n    <unique>0x%x</unique>\n  </pair>\n", u);
	fputs("</errorcounts>\n\n", out);
	suppcounts(out, procs, n);
	fputs("</valgrindoutput>\n\n", out);
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}

/* pattern with %p as pid, %q{VAR} as $VAR and %% as %, into a malloc'd
 * string; NULL, with errno EINVAL for any other %, ENOENT for a VAR that is
 * not set (valgrind refuses it rather than write to a name without it). */
char *hl_report_expand_file_name(const char *pattern, uint32_t pid)
{
	size_t cap = strlen(pattern) + 64, len = 0;
	char *out = malloc(cap);

	for (const char *s = pattern; out && *s; s++) {
		const char *add = NULL;
		char num[16], one[2] = { *s, 0 };

		if (*s != '%') {
			add = one;
		} else if (s[1] == '%') {
			add = "%";
			s++;
		} else if (s[1] == 'p') {
			snprintf(num, sizeof(num), "%u", pid);
			add = num;
			s++;
		} else if (s[1] == 'q' && s[2] == '{' && strchr(s + 3, '}')) {
			char *name = strndup(s + 3, (size_t)(strchr(s + 3, '}') - (s + 3)));

			add = name ? getenv(name) : NULL;
			s = strchr(s + 3, '}');
			free(name);
			if (!add) {
				free(out);
				errno = ENOENT;
				return NULL;
			}
		} else {
			free(out);
			errno = EINVAL;
			return NULL;
		}
		if (len + strlen(add) + 1 > cap) {
			char *grown = realloc(out, cap = (len + strlen(add)) * 2 + 1);

			if (!grown)
				free(out);
			out = grown;
			if (!out)
				break;
		}
		memcpy(out + len, add, strlen(add));
		len += strlen(add);
	}
	if (out)
		out[len] = 0;
	return out;
}

const char *hl_report_check_file_name(const char *pattern)
{
	static char why[200]; /* a command line is parsed by one thread */
	char *path = hl_report_expand_file_name(pattern, 1);
	const char *unset = strstr(pattern, "%q{");
	int err = errno;

	if (path) {
		free(path);
		return NULL;
	}
	if (err != ENOENT)
		return "a % must be %p (the process id), %q{VAR} (a variable) or %%";
	/* the first %q{VAR} not set names it, as valgrind's message does */
	for (; unset; unset = strstr(unset + 3, "%q{")) {
		char name[128];

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(unset + 3, "}"), unset + 3);
		snprintf(why, sizeof(why), "environment variable '%s' is not set", name);
		if (!getenv(name))
			break;
	}
	return why;
}

/* One file: the processes [first, first + n) written by writer. */
static int write_one(const struct hl_report *r, const char *pattern, size_t first, size_t n,
		     enum hl_report_file_format format)
{
	char *path = hl_report_expand_file_name(pattern, n ? r->procs[first].pid : 0);
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	int err = 0;

	if (!out) {
		hl_log("cannot write %s: %s", path ? path : pattern, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return -EIO;
	}
	if (format == HL_REPORT_FILE_XML) {
		err = hl_report_write_valgrind_xml(r, &r->procs[first], n, out);
	} else {
		if (!r->nprocs)
			hl_report_print_text(r, out);
		for (size_t i = first; i < first + n; i++)
			hl_report_print_process_text(r, &r->procs[i], out);
	}
	if (fclose(out) != 0 || err) {
		hl_log("cannot write %s: %s", path, strerror(EIO));
		err = -EIO;
	}
	free(path);
	return err;
}

int hl_report_write_files(const struct hl_report *r, const char *pattern,
			  enum hl_report_file_format format)
{
	int err = 0;

	if (!strstr(pattern, "%p") || !r->nprocs)
		return write_one(r, pattern, 0, r->nprocs, format);
	for (size_t i = 0; i < r->nprocs; i++) {
		int e = write_one(r, pattern, i, 1, format);

		err = err ? err : e;
	}
	return err;
}
