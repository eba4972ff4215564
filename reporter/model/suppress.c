/*
 * reporter/model/suppress.c: reading and matching leak suppressions (suppress.h).
 */
#include "suppress.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "fingerprint.h"
#include "report.h"


#define HL_SUPP_MAX_FRAMES 256

/* Functions and objects the frame heapledger hides (the allocator's) stands
 * for, so entries written for valgrind, which start there, match. */
static const char *const allocator_functions[] = {
	"malloc", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign",
	"aligned_alloc", "valloc", "pvalloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t",
	"_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
	"operator new(unsigned long)", "operator new[](unsigned long)",
	"operator new(unsigned long, std::nothrow_t const&)",
	"operator new[](unsigned long, std::nothrow_t const&)",
	"operator new(unsigned long, std::align_val_t)",
	"operator new[](unsigned long, std::align_val_t)",
	"operator new(unsigned long, std::align_val_t, std::nothrow_t const&)",
	"operator new[](unsigned long, std::align_val_t, std::nothrow_t const&)",
};
static const char *const allocator_objects[] = {
	"/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
	"/usr/lib/x86_64-linux-gnu/valgrind/vgpreload_memcheck-amd64-linux.so",
	"libheapledger.so",
};

/* What stays in memory after glibc's and libstdc++'s freeres: it belongs to
 * the runtime, not to the program. */
static const char default_suppressions[] =
	"# valgrind's own (default.supp): a thread's dynamic TLS blocks and the\n"
	"# DTV entries __tls_get_addr allocates or regrows. A DTV pthread_create\n"
	"# allocates is not suppressed: valgrind reports it.\n"
	"{\n"
	"  dtv-addr-tail\n"
	"  Memcheck:Leak\n"
	"  match-leak-kinds: possible,reachable\n"
	"  fun:malloc\n"
	"  fun:tls_get_addr_tail*\n"
	"  fun:__tls_get_addr\n"
	"}\n"
	"{\n"
	"  dtv-addr-resize\n"
	"  Memcheck:Leak\n"
	"  match-leak-kinds: possible,reachable\n"
	"  fun:malloc\n"
	"  fun:_dl_resize_dtv\n"
	"  fun:_dl_update_slotinfo\n"
	"  fun:update_get_addr\n"
	"  fun:__tls_get_addr\n"
	"}\n"
	"{\n"
	"  dtv-addr-init\n"
	"  Memcheck:Leak\n"
	"  match-leak-kinds: possible,reachable\n"
	"  fun:malloc\n"
	"  fun:allocate_dtv_entry\n"
	"  fun:allocate_and_init\n"
	"  fun:tls_get_addr_tail*\n"
	"  fun:__tls_get_addr\n"
	"}\n"
	"# dlerror's state, kept by libc for the thread: the result record that\n"
	"# _dlerror_run allocates itself, and the message dlerror() formats. Only\n"
	"# those: dlopen runs the library's constructors under _dlerror_run, and a\n"
	"# leak they make is the program's.\n"
	"{\n"
	"   glibc-dlerror\n"
	"   Memcheck:Leak\n"
	"   fun:_dlerror_run\n"
	"}\n"
	"{\n"
	"   glibc-dlerror\n"
	"   Memcheck:Leak\n"
	"   fun:*asprintf*\n"
	"   ...\n"
	"   fun:*dlerror\n"
	"}\n"
	"# libstdc++'s emergency exception pool and other memory it allocates\n"
	"# while the dynamic linker initialises it.\n"
	"{\n"
	"   libstdc++-init\n"
	"   Memcheck:Leak\n"
	"   obj:*/libstdc++.so*\n"
	"   ...\n"
	"   obj:*/ld-linux*.so*\n"
	"}\n"
	"{\n"
	"   libstdc++-emergency-pool\n"
	"   Memcheck:Leak\n"
	"   ...\n"
	"   fun:*eh_alloc*\n"
	"}\n";

/* A serial no other set and no other state of this one has. */
static uint64_t new_serial(void)
{
	static _Atomic uint64_t serials;

	return ++serials;
}

void hl_supp_init(struct hl_suppressions *set)
{
	memset(set, 0, sizeof(*set));
	hl_bump_init(&set->arena);
	set->serial = new_serial();
}

static void memo_free(struct hl_supp_memo *m);

void hl_supp_destroy(struct hl_suppressions *set)
{
	memo_free(set->memo);
	free(set->v);
	hl_bump_free(&set->arena);
	memset(set, 0, sizeof(*set));
}

/* ---- matching ------------------------------------------------------------ */

/* valgrind's VG_(string_match): * any text, ? one character, whole string. */
bool hl_supp_glob(const char *pattern, const char *text)
{
	const char *star = NULL, *resume = NULL;

	while (*text) {
		if (*pattern == '*') {
			star = pattern++;
			resume = text;
		} else if (*pattern == '?' || *pattern == *text) {
			pattern++;
			text++;
		} else if (star) {
			pattern = star + 1;
			text = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return !*pattern;
}

/* Where needle (its first len bytes) first occurs in text, or NULL. */
static const char *find_n(const char *text, const char *needle, size_t len)
{
	for (; *text; text++)
		if (!strncmp(text, needle, len))
			return text;
	return len ? NULL : text;
}

/* LeakSanitizer's TemplateMatch: substrings joined by *, ^ and $ anchors. */
bool hl_supp_lsan_match(const char *templ, const char *text)
{
	bool anchored = false, asterisk = false;

	if (!text || !*text)
		return false;
	if (*templ == '^') {
		anchored = true;
		templ++;
	}
	while (*templ) {
		size_t len;
		const char *at;

		if (*templ == '*') {
			templ++;
			anchored = false;
			asterisk = true;
			continue;
		}
		if (*templ == '$')
			return !*text || asterisk;
		if (!*text)
			return false;
		len = strcspn(templ, "*$");
		at = find_n(text, templ, len);
		if (!at || (anchored && at != text))
			return false;
		text = at + len;
		templ += len;
		anchored = false;
		asterisk = false;
	}
	return true;
}

/* Whether a fun: or obj: pattern matches the frame heapledger hides (the
 * allocator's): decided once, when the line is read. */
static bool matches_hidden_frame(const struct hl_supp_frame *pf)
{
	const char *const *names = pf->type == HL_SUPP_FUN ? allocator_functions : allocator_objects;
	size_t count = pf->type == HL_SUPP_FUN ? HL_ARRAY_SIZE(allocator_functions) :
						 HL_ARRAY_SIZE(allocator_objects);

	for (size_t i = 0; i < count; i++)
		if (hl_supp_glob(pf->pattern, names[i]))
			return true;
	return false;
}

static bool frame_matches(const struct hl_supp_frame *pf, const struct hl_frame_info *f)
{
	const char *v;

	if (!f)
		return pf->hidden;
	/* valgrind's name for the start code, in the entries it writes */
	if (pf->type == HL_SUPP_FUN && !strcmp(pf->pattern, "(below main)"))
		return hl_report_is_below_main(f->function);
	v = pf->type == HL_SUPP_FUN ? f->function : f->module;
	return hl_supp_glob(pf->pattern, v ? v : "???");
}

/* valgrind's frame matching, as dynamic programming over (entry line, stack
 * frame): reach[j] says lines so far can end just before frame j. With
 * hidden, frame 0 is the allocator's. A run of frames below the entry's last
 * line is fine. */
static bool frames_match(const struct hl_suppression *s, const struct hl_frame_info *frames,
			 size_t n, bool hidden)
{
	size_t total = n + hidden;
	bool small[2][128]; /* most stacks: no allocation per suppression */
	bool *reach = total < 128 ? small[0] : hl_xcalloc(total + 1, sizeof(*reach));
	bool *next = total < 128 ? small[1] : hl_xcalloc(total + 1, sizeof(*next));
	bool *heap = total < 128 ? NULL : reach, *heap_next = total < 128 ? NULL : next;
	bool any = true;

	memset(reach, 0, (total + 1) * sizeof(*reach));
	reach[0] = true;
	for (size_t i = 0; i < s->nframes && any; i++) {
		const struct hl_supp_frame *pf = &s->frames[i];
		bool *swap;

		any = false;
		memset(next, 0, (total + 1) * sizeof(*next));
		for (size_t j = 0; j <= total; j++) {
			if (!reach[j])
				continue;
			if (pf->type == HL_SUPP_ANY) {
				for (size_t k = j; k <= total; k++)
					next[k] = true;
				any = true;
				break;
			}
			if (j < total &&
			    frame_matches(pf, hidden ? (j ? &frames[j - 1] : NULL) : &frames[j]))
				any = next[j + 1] = true;
		}
		swap = reach;
		reach = next;
		next = swap;
	}
	free(heap);
	free(heap_next);
	return any;
}

static bool lsan_matches(const struct hl_suppression *s, const struct hl_frame_info *frames,
			 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct hl_frame_info *f = &frames[i];

		if ((f->function && hl_supp_lsan_match(s->name, f->function)) ||
		    (f->file && hl_supp_lsan_match(s->name, f->file)) ||
		    (f->module && hl_supp_lsan_match(s->name, f->module)))
			return true;
	}
	return false;
}

static unsigned kind_of_class(unsigned leak_class)
{
	if (HL_CLASS_BIT(leak_class) & HL_SUPP_KIND_ALL)
		return HL_CLASS_BIT(leak_class);
	return HL_SUPP_KIND_ALL; /* not classified: any listed kind */
}

/* ---- verdicts by stack ---------------------------------------------------- */

/* A verdict: the kind, the frames' strings (copied; function, module, file
 * per frame, NULL kept) and the suppression that matched them. */
struct memo_entry {
	uint64_t hash;
	const char **strs;   /* 3 * nframes */
	size_t nframes;
	unsigned kind;
	size_t verdict;      /* index in the set + 1; 0: none matched */
};

/* Bounded so a long-lived daemon does not grow without end: full, it
 * starts over (verdicts are recomputed, never wrong). */
#define MEMO_MAX_ENTRIES 65536u
#define MEMO_MAX_BYTES (16u << 20)

struct hl_supp_memo {
	struct memo_entry *v;
	size_t n, cap;
	uint32_t *slots;     /* entry index + 1, 0: empty; linear probing */
	size_t nslots;       /* a power of two, at most half full */
	struct hl_bump arena; /* the strings and string arrays */
	size_t bytes;        /* in the arena */
};

static void memo_free(struct hl_supp_memo *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->slots);
	hl_bump_free(&m->arena);
	free(m);
}

static void memo_clear(struct hl_suppressions *set)
{
	memo_free(set->memo);
	set->memo = NULL;
}

/* The file of a frame as a verdict sees it: only leak: entries read it. */
static const char *key_file(const struct hl_suppressions *set, const struct hl_frame_info *f)
{
	return set->reads_files ? f->file : NULL;
}

/* Hashed by the strings' addresses, which is cheap: the symbolizer hands
 * every process the same strings for the same frames. Equal text at other
 * addresses only misses (and is stored again); other text at the same
 * addresses fails the comparison of the text, and at most
 * MEMO_MAX_SAME_HASH such verdicts are kept per hash, so a buffer reused
 * for other frames cannot make one long chain. */
#define MEMO_MAX_SAME_HASH 8u

static uint64_t memo_hash(const struct hl_suppressions *set, const struct hl_frame_info *frames,
			  size_t n, unsigned kind)
{
	uint64_t h = (uint64_t)n * 0x9e3779b97f4a7c15ull ^ kind;

	for (size_t i = 0; i < n; i++) {
		const uintptr_t p[3] = { (uintptr_t)frames[i].function, (uintptr_t)frames[i].module,
					 (uintptr_t)key_file(set, &frames[i]) };

		for (size_t k = 0; k < 3; k++) {
			h = (h ^ p[k]) * 0xff51afd7ed558ccdull;
			h ^= h >> 32;
		}
	}
	return h;
}

static bool same_text(const char *a, const char *b)
{
	return a == b ? true : a && b && !strcmp(a, b);
}

static bool memo_equal(const struct hl_suppressions *set, const struct memo_entry *e,
		       const struct hl_frame_info *frames, size_t n, unsigned kind)
{
	if (e->nframes != n || e->kind != kind)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!same_text(e->strs[3 * i], frames[i].function) ||
		    !same_text(e->strs[3 * i + 1], frames[i].module) ||
		    !same_text(e->strs[3 * i + 2], key_file(set, &frames[i])))
			return false;
	return true;
}

/* The slot of (frames, kind) in the memo: its entry's or the empty one
 * ending the probe; *same counts the other entries with this hash. */
static uint32_t *memo_slot(const struct hl_suppressions *set, uint64_t hash,
			   const struct hl_frame_info *frames, size_t n, unsigned kind,
			   size_t *same)
{
	const struct hl_supp_memo *m = set->memo;
	size_t mask = m->nslots - 1;

	*same = 0;
	for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
		const struct memo_entry *e = m->slots[i] ? &m->v[m->slots[i] - 1] : NULL;

		if (!e)
			return &m->slots[i];
		if (e->hash == hash) {
			if (memo_equal(set, e, frames, n, kind))
				return &m->slots[i];
			++*same;
		}
	}
}

static void memo_rehash(struct hl_supp_memo *m)
{
	size_t nslots = m->nslots ? m->nslots * 2 : 1024;

	free(m->slots);
	m->slots = hl_xcalloc(nslots, sizeof(*m->slots));
	m->nslots = nslots;
	for (size_t e = 0; e < m->n; e++) {
		size_t i = (size_t)m->v[e].hash & (nslots - 1);

		while (m->slots[i])
			i = (i + 1) & (nslots - 1);
		m->slots[i] = (uint32_t)(e + 1);
	}
}

static void memo_add(struct hl_suppressions *set, uint64_t hash,
		     const struct hl_frame_info *frames, size_t n, unsigned kind, size_t verdict)
{
	struct hl_supp_memo *m = set->memo;
	struct memo_entry *e;
	uint32_t *slot;
	size_t same;

	if (m && (m->n >= MEMO_MAX_ENTRIES || m->bytes >= MEMO_MAX_BYTES)) {
		memo_clear(set);
		m = NULL;
	}
	if (!m) {
		m = set->memo = hl_xcalloc(1, sizeof(*m));
		hl_bump_init(&m->arena);
	}
	if ((m->n + 1) * 2 > m->nslots)
		memo_rehash(m);
	hl_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v));
	e = &m->v[m->n];
	e->hash = hash;
	e->nframes = n;
	e->kind = kind;
	e->verdict = verdict;
	e->strs = hl_bump_alloc(&m->arena, (3 * n + 1) * sizeof(*e->strs));
	m->bytes += (3 * n + 1) * sizeof(*e->strs);
	for (size_t i = 0; i < n; i++) {
		const char *f[3] = { frames[i].function, frames[i].module,
				     key_file(set, &frames[i]) };

		for (size_t k = 0; k < 3; k++) {
			e->strs[3 * i + k] = f[k] ? hl_bump_strdup(&m->arena, f[k]) : NULL;
			m->bytes += f[k] ? strlen(f[k]) + 1 : 0;
		}
	}
	slot = memo_slot(set, hash, frames, n, kind, &same);
	*slot = (uint32_t)(m->n + 1);
	m->n++;
}

/* The first suppression matching, computed: index + 1, or 0. */
static size_t match_uncached(const struct hl_suppressions *set,
			     const struct hl_frame_info *frames, size_t n, unsigned kind)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct hl_suppression *s = &set->v[i];
		bool hit;

		if (!s->leak || !(s->kinds & kind))
			continue;
		hit = s->lsan ? lsan_matches(s, frames, n) :
		      frames_match(s, frames, n, false) || frames_match(s, frames, n, true);
		if (hit)
			return i + 1;
	}
	return 0;
}

size_t hl_supp_verdict(struct hl_suppressions *set, const struct hl_frame_info *frames,
		       size_t n, unsigned leak_class)
{
	unsigned kind = kind_of_class(leak_class);
	uint64_t hash;
	uint32_t *slot;
	size_t verdict, same = 0;

	if (!set || !set->n)
		return 0;
	hash = memo_hash(set, frames, n, kind);
	slot = set->memo ? memo_slot(set, hash, frames, n, kind, &same) : NULL;
	if (slot && *slot) {
		verdict = set->memo->v[*slot - 1].verdict;
	} else {
		verdict = match_uncached(set, frames, n, kind);
		if (same < MEMO_MAX_SAME_HASH)
			memo_add(set, hash, frames, n, kind, verdict);
	}
	return verdict;
}

const struct hl_suppression *hl_supp_count(struct hl_suppressions *set, size_t verdict,
					   uint64_t bytes, uint64_t blocks)
{
	struct hl_suppression *s;

	if (!verdict || !set || verdict > set->n)
		return NULL;
	s = &set->v[verdict - 1];
	s->matched++;
	s->bytes += bytes;
	s->blocks += blocks;
	return s;
}

const struct hl_suppression *hl_supp_match(struct hl_suppressions *set,
					   const struct hl_frame_info *frames, size_t n,
					   unsigned leak_class, uint64_t bytes,
					   uint64_t blocks)
{
	return hl_supp_count(set, hl_supp_verdict(set, frames, n, leak_class), bytes, blocks);
}

/* ---- reading ------------------------------------------------------------- */

struct parser {
	struct hl_suppressions *set;
	const char *file;
	char *err;
	size_t errlen;
	unsigned line;            /* number of the current line */
	struct hl_supp_frame *frames; /* frames of the entry being read */
	size_t nframes, frames_cap;
};

static int parse_error(struct parser *ps, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int parse_error(struct parser *ps, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(ps->err, ps->errlen, "%s:%u: ", ps->file, line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < ps->errlen)
		vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static struct hl_suppression *new_entry(struct parser *ps, const char *name, unsigned line)
{
	struct hl_suppression *s;

	hl_grow((void **)&ps->set->v, &ps->set->cap, ps->set->n, sizeof(*s));
	s = &ps->set->v[ps->set->n++];
	memset(s, 0, sizeof(*s));
	s->name = hl_bump_strdup(&ps->set->arena, name);
	s->file = hl_bump_strdup(&ps->set->arena, ps->file);
	s->line = line;
	s->kinds = HL_SUPP_KIND_ALL;
	return s;
}

static int parse_kinds(struct parser *ps, const char *list, unsigned *kinds)
{
	char word[32];

	*kinds = 0;
	if (!*list || hl_leak_class_list_parse(list, HL_SUPP_KIND_ALL, HL_SUPP_KIND_ALL, kinds))
		return 0;
	/* name the first word that is not a kind */
	for (size_t n; *list; list += n + (list[n] != 0)) {
		unsigned one;

		n = strcspn(list, ", \t");
		snprintf(word, sizeof(word), "%.*s", (int)n, list);
		if (n && !hl_leak_class_list_parse(word, HL_SUPP_KIND_ALL, HL_SUPP_KIND_ALL, &one))
			break;
	}
	return parse_error(ps, ps->line, "unknown leak kind '%s' (definite, indirect,"
			   " possible, reachable, all or none)", word);
}

/* A fun: pattern as heapledger's frames spell it: mangled C++ names without
 * wildcards demangled. */
static const char *function_pattern(struct parser *ps, const char *pattern)
{
	char *demangled;
	const char *kept;

	if (strncmp(pattern, "_Z", 2) || strpbrk(pattern, "*?"))
		return hl_bump_strdup(&ps->set->arena, pattern);
	demangled = hl_demangle(pattern);
	kept = hl_bump_strdup(&ps->set->arena, demangled ? demangled : pattern);
	free(demangled);
	return kept;
}

static int add_frame_line(struct parser *ps, const char *text)
{
	struct hl_supp_frame f = { 0 };

	if (!strcmp(text, "...")) {
		f.type = HL_SUPP_ANY;
	} else if (!strncmp(text, "fun:", 4) && text[4]) {
		f.type = HL_SUPP_FUN;
		f.pattern = function_pattern(ps, text + 4);
	} else if (!strncmp(text, "obj:", 4) && text[4]) {
		f.type = HL_SUPP_OBJ;
		f.pattern = hl_bump_strdup(&ps->set->arena, text + 4);
	} else {
		return parse_error(ps, ps->line, "expected fun:NAME, obj:PATH, '...' or '}', not '%s'",
				   text);
	}
	if (ps->nframes == HL_SUPP_MAX_FRAMES)
		return parse_error(ps, ps->line, "more than %d frame lines", HL_SUPP_MAX_FRAMES);
	if (f.type != HL_SUPP_ANY)
		f.hidden = matches_hidden_frame(&f);
	hl_grow((void **)&ps->frames, &ps->frames_cap, ps->nframes, sizeof(f));
	ps->frames[ps->nframes++] = f;
	return 0;
}

/* Line-at-a-time reader over text; *line is trimmed in place. */
struct reader {
	char *text, *end, *pos;
};

static char *next_line(struct reader *r, struct parser *ps)
{
	char *line = r->pos, *nl, *e;

	if (r->pos >= r->end)
		return NULL;
	nl = memchr(r->pos, '\n', (size_t)(r->end - r->pos));
	e = nl ? nl : r->end;
	r->pos = nl ? nl + 1 : r->end;
	*e = 0;
	ps->line++;
	while (*line == ' ' || *line == '\t')
		line++;
	while (e > line && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = 0;
	return line;
}

/* The entry after "{": name, Tool:Kind, [match-leak-kinds:], frames, "}". */
static int parse_block(struct parser *ps, struct reader *r)
{
	unsigned start = ps->line, kinds = HL_SUPP_KIND_ALL;
	char *name = NULL, *kind, *line;
	bool leak;
	struct hl_suppression *s;
	int err = 0;

	name = next_line(r, ps);
	if (!name || !*name || !strcmp(name, "}"))
		return parse_error(ps, name ? ps->line : start, "entry without a name");
	name = hl_xstrdup(name);
	kind = next_line(r, ps);
	if (!kind || !strchr(kind, ':') || !strcmp(kind, "}") || !strncmp(kind, "fun:", 4) ||
	    !strncmp(kind, "obj:", 4)) {
		err = parse_error(ps, kind ? ps->line : start, "expected Tool:Kind (Memcheck:Leak)"
				  " after the name");
		goto out_free_name;
	}
	leak = !strcmp(strchr(kind, ':'), ":Leak") && strstr(kind, "Memcheck");
	ps->nframes = 0;
	while (!err && (line = next_line(r, ps)) && strcmp(line, "}")) {
		if (!*line || *line == '#')
			continue;
		if (!leak)
			continue; /* another tool's or kind's lines: never matches a leak */
		if (!strncmp(line, "match-leak-kinds:", 17))
			err = parse_kinds(ps, line + 17, &kinds);
		else
			err = add_frame_line(ps, line);
	}
	if (!err && !line)
		err = parse_error(ps, start, "entry '%s' is not closed with '}'", name);
	if (!err && leak && !ps->nframes)
		err = parse_error(ps, start, "entry '%s' has no fun:, obj: or '...' line", name);
	if (err)
		goto out_free_name;
	s = new_entry(ps, name, start);
	s->leak = leak;
	s->kinds = kinds;
	s->nframes = ps->nframes;
	s->frames = hl_bump_alloc(&ps->set->arena, (ps->nframes + 1) * sizeof(*s->frames));
	if (ps->nframes) /* frames may be NULL then (UBSan) */
		memcpy(s->frames, ps->frames, ps->nframes * sizeof(*s->frames));
out_free_name:
	free(name);
	return err;
}

static int parse_line(struct parser *ps, struct reader *r, const char *line)
{
	struct hl_suppression *s;

	if (!*line || *line == '#')
		return 0;
	if (!strcmp(line, "{"))
		return parse_block(ps, r);
	if (!strncmp(line, "leak:", 5)) {
		if (!line[5])
			return parse_error(ps, ps->line, "leak: without a pattern");
		s = new_entry(ps, line + 5, ps->line);
		s->lsan = s->leak = true;
		ps->set->reads_files = true;
		return 0;
	}
	return parse_error(ps, ps->line, "expected '{' (valgrind format) or leak:PATTERN"
			   " (LeakSanitizer format), not '%s'", line);
}

int hl_supp_parse(struct hl_suppressions *set, const char *text, size_t len,
		  const char *file, char *err, size_t errlen)
{
	struct parser ps = { .set = set, .file = file, .err = err, .errlen = errlen };
	char *copy = hl_xmalloc(len + 1);
	struct reader r = { copy, copy + len, copy };
	size_t before = set->n;
	char *line;
	int rc = 0;

	memcpy(copy, text, len);
	copy[len] = 0;
	if (memchr(copy, 0, len))
		rc = parse_error(&ps, 1, "not a text file (it holds a NUL byte)");
	while (!rc && (line = next_line(&r, &ps)))
		rc = parse_line(&ps, &r, line);
	if (rc)
		set->n = before; /* a malformed file adds nothing */
	memo_clear(set); /* verdicts of the entries before, keyed without files */
	set->serial = new_serial(); /* and those remembered elsewhere */
	free(ps.frames);
	free(copy);
	return rc;
}

int hl_supp_load(struct hl_suppressions *set, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	int rc;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	do {
		if (len + 4096 > cap) {
			cap = (len + 4096) * 2;
			text = hl_xrealloc(text, cap);
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	rc = ferror(f) ? -EIO : 0;
	fclose(f);
	if (rc)
		snprintf(err, errlen, "%s: read error", path);
	else
		rc = hl_supp_parse(set, text, len, path, err, errlen);
	free(text);
	return rc;
}

void hl_supp_add_defaults(struct hl_suppressions *set)
{
	char err[256];
	size_t first = set->n;

	if (hl_supp_parse(set, default_suppressions, sizeof(default_suppressions) - 1,
			  "<built-in>", err, sizeof(err)))
		hl_log("built-in suppressions: %s", err); /* a bug: the tests parse them */
	for (size_t i = first; i < set->n; i++)
		set->v[i].builtin = true;
}

/* ---- printing ------------------------------------------------------------ */

/* A frame's line as valgrind writes it: fun: with the mangled name when
 * the name was mangled (valgrind matches those), without a symbol version
 * ("__libc_start_main@@GLIBC_2.34" is "__libc_start_main" to valgrind);
 * obj: with the module when the function is unknown. */
static void print_frame_line(FILE *out, const char *prefix, const struct hl_frame_info *f)
{
	const char *name = f->linkage ? f->linkage : f->function;

	if (name)
		fprintf(out, "%s   fun:%.*s\n", prefix, (int)strcspn(name, "@"), name);
	else
		fprintf(out, "%s   obj:%s\n", prefix, f->module ? f->module : "*");
}

void hl_supp_print_generated(FILE *out, const char *prefix, const struct hl_report_leak *l)
{
	const char *function = NULL, *kind = NULL;
	bool below_main;
	size_t n = hl_report_frames_to_main(&l->stack, &below_main);

	if (HL_CLASS_BIT(l->leak_class) & HL_SUPP_KIND_ALL)
		kind = hl_leak_class_info(l->leak_class)->token;

	/* named after the site's function, as its fingerprint sees it */
	for (size_t i = hl_fingerprint_first_frame(l->stack.frames, l->stack.nframes);
	     i < l->stack.nframes && !function; i++)
		function = l->stack.frames[i].function;
	prefix = prefix ? prefix : "";
	fprintf(out, "%s{\n%s   %s%s%s\n%s   Memcheck:Leak\n", prefix, prefix,
		function ? function : "leak", l->fingerprint ? "-" : "",
		l->fingerprint ? l->fingerprint : "", prefix);
	if (kind)
		fprintf(out, "%s   match-leak-kinds: %s\n", prefix, kind);
	/* valgrind's stack: the allocator's frame first, then up to main */
	if (l->allocator)
		fprintf(out, "%s   fun:%s\n", prefix, l->allocator);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 == n && below_main)
			fprintf(out, "%s   fun:(below main)\n", prefix);
		else
			print_frame_line(out, prefix, &l->stack.frames[i]);
	}
	if (!n)
		fprintf(out, "%s   ...\n", prefix);
	fprintf(out, "%s}\n", prefix);
}

void hl_supp_print_used(const struct hl_suppressions *set, FILE *out, const char *prefix)
{
	char a[32], b[32];

	for (size_t i = 0; i < set->n; i++) {
		const struct hl_suppression *s = &set->v[i];

		if (s->matched)
			fprintf(out, "%sused_suppression: %6llu %s %s:%u suppressed: %s bytes in %s"
				" blocks\n", prefix, (unsigned long long)s->matched, s->name, s->file,
				s->line, hl_fmt_grouped(a, s->bytes), hl_fmt_grouped(b, s->blocks));
	}
	for (size_t i = 0; i < set->n; i++) {
		const struct hl_suppression *s = &set->v[i];

		if (!s->matched && !s->builtin)
			fprintf(out, "%sunused_suppression: %s %s:%u%s\n", prefix, s->name, s->file,
				s->line, s->leak ? "" : " (not a leak suppression)");
	}
}
