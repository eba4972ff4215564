/*
 * reporter/symbols/symbolize.c: offline symbolization with libdwfl (see symbolize.h).
 */
#include "symbolize.h"

#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug_cache.h"
#include "demangle.h"
#include "dwarf_index.h"
#include "stack_memo.h"
#include "state.h"
#include "util.h"

#define HL_MAX_INLINE 16 /* inlined frames reported per return address */

/* One ELF file (path + build-id), opened once however many processes
 * loaded it and wherever: reported to libdwfl at the first load bias seen,
 * addresses of other loads are moved by the difference. Opening a file
 * again per process meant inflating libc6-dbg's compressed debug sections
 * again for each (gcc: driver, cc1, as). */
struct sym_file {
	char *path;
	uint64_t base; /* the bias it was reported at */
	uint8_t build_id[HL_WIRE_MAX_BUILD_ID];
	uint32_t build_id_len;
	Dwfl *dwfl;          /* NULL when the file could not be used */
	Dwfl_Module *mod;
	struct hl_dwarf_index *index; /* function ranges per unit, built lazily */
	struct sym_entry *syms;       /* function symbols sorted by address */
	size_t nsyms;                 /* (SIZE_MAX until built) */
	/* What dwfl_module_addrinfo could return when syms has nothing: every
	 * symbol it considers, sized ones as (address, greatest end so far)
	 * sorted by address, sizeless ones by their lowest address. */
	struct sym_span *spans;
	size_t nspans;
	uint64_t min_sizeless; /* UINT64_MAX if none */
};

/* One load of a file: path, bias, build-id as the hook reported them. */
struct sym_module {
	char *path;
	uint64_t base;
	uint8_t build_id[HL_WIRE_MAX_BUILD_ID];
	uint32_t build_id_len;
	struct sym_file *file; /* NULL: no path */
};

/* A sized symbol addrinfo considers: its address, and the greatest end
 * (address + size) of it and every such symbol at or below its address. */
struct sym_span {
	uint64_t address;
	uint64_t end_max;
};

/* One function symbol of a module, at its load address. */
struct sym_entry {
	uint64_t address;
	uint64_t size;
	const char *name; /* owned by libelf, valid while the Dwfl is open */
	bool local;       /* STB_LOCAL: an internal alias (__GI_...) */
};

struct sym_result {
	uint32_t module;     /* index in modules + 1, 0 = none */
	uint64_t address;
	size_t count;
	struct hl_frame_info *frames;
};

struct hl_symbolizer {
	struct sym_module *modules;
	size_t nmodules, modules_cap;
	struct sym_file **files;
	size_t nfiles, files_cap;
	struct hl_map cache;   /* hash -> struct sym_result * */
	struct hl_bump arena;
	char *debug_cache_dir;   /* NULL: no cache of inflated debug files */
	bool debug_cache_warned; /* said once why the cache could not be used */
	struct hl_symbolizer_stats stats;
	bool given_only;         /* hl_symbolizer_new_given: no file is opened */
	struct hl_stack_memo *stack_memo; /* NULL until asked for */
};

/* libdwfl opens a module's .gnu_debuglink candidates (next to the module,
 * in its .debug/ and under /usr/lib/debug) with a blocking open(): a FIFO
 * planted there would stall symbolization. False if any candidate exists and
 * is not a regular file. */
static bool debuglink_candidates_safe(const char *file_name, const char *debuglink)
{
	const char *slash = file_name ? strrchr(file_name, '/') : NULL;
	int dir_len = slash ? (int)(slash - file_name) : 0;
	char path[3][PATH_MAX];
	struct stat st;

	if (!debuglink || !slash)
		return true;
	snprintf(path[0], PATH_MAX, "%.*s/%s", dir_len, file_name, debuglink);
	snprintf(path[1], PATH_MAX, "%.*s/.debug/%s", dir_len, file_name, debuglink);
	snprintf(path[2], PATH_MAX, "/usr/lib/debug%.*s/%s", dir_len, file_name, debuglink);
	for (int i = 0; i < 3; i++)
		if (stat(path[i], &st) == 0 && !S_ISREG(st.st_mode))
			return false;
	return true;
}

/* libdwfl's search for a module's separate debug file, with the cache of
 * inflated copies in front of it (debug_cache.h). *userdata is the
 * symbolizer (set by file_open). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct hl_symbolizer *s = *userdata;
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	bool cached = s && s->debug_cache_dir && len > 0;
	char why[512], *copy_path;
	int fd, copy;

	if (cached) {
		fd = hl_debug_cache_open(s->debug_cache_dir, id, (size_t)len, debuginfo_file_name);
		if (fd >= 0) {
			s->stats.debug_cache_hits++;
			return fd;
		}
	}
	if (!debuglink_candidates_safe(file_name, debuglink_file))
		return -1;
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					  debuglink_file, debuglink_crc, debuginfo_file_name);
	if (fd < 0 || !cached)
		return fd;
	copy = hl_debug_cache_add(s->debug_cache_dir, id, (size_t)len, fd, &copy_path, why,
				  sizeof(why));
	if (copy >= 0) {
		s->stats.debug_cache_added++;
		close(fd);
		free(*debuginfo_file_name);
		*debuginfo_file_name = copy_path;
		return copy;
	}
	if (why[0] && !s->debug_cache_warned) {
		hl_log("debug info cache %s not used for %s: %s (set HEAPLEDGER_CACHE_DIR "
		       "to another directory, or to off)",
		       s->debug_cache_dir, *debuginfo_file_name ? *debuginfo_file_name : modname,
		       why);
		s->debug_cache_warned = true;
	}
	return fd;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct hl_symbolizer *hl_symbolizer_new(void)
{
	struct hl_symbolizer *s = hl_xcalloc(1, sizeof(*s));

	/* The report is due right after the program exits: no network lookups
	 * of debug info (Debian's profile sets DEBUGINFOD_URLS for shells)
	 * unless the user asks for them. */
	if (!getenv("HEAPLEDGER_DEBUGINFOD"))
		unsetenv("DEBUGINFOD_URLS");

	s->debug_cache_dir = hl_debug_cache_dir();
	hl_map_init(&s->cache);
	hl_bump_init(&s->arena);
	return s;
}

struct hl_symbolizer *hl_symbolizer_new_given(void)
{
	struct hl_symbolizer *s = hl_xcalloc(1, sizeof(*s));

	s->given_only = true;
	hl_map_init(&s->cache);
	hl_bump_init(&s->arena);
	return s;
}

struct hl_symbolizer_stats hl_symbolizer_stats(const struct hl_symbolizer *s)
{
	return s->stats;
}

void hl_symbolizer_free(struct hl_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		struct sym_file *f = s->files[i];

		hl_dwarf_index_free(f->index);
		free(f->syms);
		free(f->spans);
		if (f->dwfl)
			dwfl_end(f->dwfl);
		free(f->path);
		free(f);
	}
	free(s->files);
	for (size_t i = 0; i < s->nmodules; i++)
		free(s->modules[i].path);
	free(s->modules);
	hl_map_destroy(&s->cache);
	hl_stack_memo_free(s->stack_memo);
	hl_bump_free(&s->arena);
	free(s->debug_cache_dir);
	free(s);
}

/* The file at path is the one the process loaded: same build-id when the
 * hook sent one. */
static bool build_id_matches(Dwfl_Module *mod, const struct hl_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	if (!m->build_id_len)
		return true;
	len = dwfl_module_build_id(mod, &bits, &vaddr);
	return len == (int)m->build_id_len && memcmp(bits, m->build_id, (size_t)len) == 0;
}

static void file_open(struct hl_symbolizer *s, struct sym_file *sf, const struct hl_module *m)
{
	void **userdata;
	int fd;

	sf->dwfl = dwfl_begin(&offline_callbacks);
	if (!sf->dwfl)
		return;
	/* The path comes from the peer: opened here, never blocking, regular
	 * files only (a FIFO froze the reporter in open). */
	fd = hl_open_regular(m->path);
	if (fd == -EINVAL)
		hl_log("%s: not a regular file; no symbols", m->path);
	dwfl_report_begin(sf->dwfl);
	sf->mod = fd < 0 ? NULL : dwfl_report_elf(sf->dwfl, m->path, m->path, fd, m->base, false);
	if (fd >= 0 && !sf->mod)
		close(fd); /* libdwfl owns it only on success */
	dwfl_report_end(sf->dwfl, NULL, NULL);
	if (sf->mod && dwfl_module_info(sf->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		*userdata = s; /* for find_debuginfo */
	if (sf->mod && build_id_matches(sf->mod, m)) {
		sf->index = hl_dwarf_index_new();
		sf->nsyms = SIZE_MAX;
		return;
	}
	if (sf->mod)
		hl_log("%s: build-id differs from the loaded file; no symbols", m->path);
	dwfl_end(sf->dwfl);
	sf->dwfl = NULL;
	sf->mod = NULL;
}

/* The file of module m, opened on first use. */
static struct sym_file *file_for(struct hl_symbolizer *s, const struct hl_module *m)
{
	struct sym_file *sf;

	for (size_t i = 0; i < s->nfiles; i++) {
		sf = s->files[i];
		if (sf->build_id_len == m->build_id_len &&
		    !memcmp(sf->build_id, m->build_id, m->build_id_len) &&
		    !strcmp(sf->path, m->path))
			return sf;
	}
	sf = hl_xcalloc(1, sizeof(*sf));
	sf->path = hl_xstrdup(m->path);
	sf->base = m->base;
	sf->build_id_len = m->build_id_len;
	memcpy(sf->build_id, m->build_id, m->build_id_len);
	file_open(s, sf, m);
	hl_grow((void **)&s->files, &s->files_cap, s->nfiles, sizeof(*s->files));
	s->files[s->nfiles++] = sf;
	return sf;
}

static uint32_t module_index(struct hl_symbolizer *s, const struct hl_module *m)
{
	struct sym_module *sm;

	for (size_t i = 0; i < s->nmodules; i++) {
		sm = &s->modules[i];
		if (sm->base == m->base && sm->build_id_len == m->build_id_len &&
		    !memcmp(sm->build_id, m->build_id, m->build_id_len) &&
		    !strcmp(sm->path, m->path))
			return (uint32_t)i + 1;
	}
	hl_grow((void **)&s->modules, &s->modules_cap, s->nmodules, sizeof(*sm));
	sm = &s->modules[s->nmodules++];
	sm->path = hl_xstrdup(m->path);
	sm->base = m->base;
	sm->build_id_len = m->build_id_len;
	memcpy(sm->build_id, m->build_id, m->build_id_len);
	sm->file = m->path[0] && !s->given_only ? file_for(s, m) : NULL;
	return (uint32_t)s->nmodules;
}

uint32_t hl_symbolizer_module_id(struct hl_symbolizer *s, const struct hl_module *m)
{
	return module_index(s, m);
}

struct hl_stack_memo *hl_symbolizer_stack_memo(struct hl_symbolizer *s)
{
	if (!s->stack_memo)
		s->stack_memo = hl_stack_memo_new();
	return s->stack_memo;
}

static const char *demangle(struct hl_symbolizer *s, const char *name)
{
	char *out;
	const char *kept;

	if (!name)
		return NULL;
	if (strncmp(name, "_Z", 2) != 0)
		return hl_bump_strdup(&s->arena, name);
	out = hl_demangle(name);
	kept = hl_bump_strdup(&s->arena, out ? out : name);
	free(out);
	return kept;
}

/* A mangled name as it is, for valgrind's suppressions; NULL if name is
 * not mangled. */
static const char *linkage_of(struct hl_symbolizer *s, const char *name)
{
	return name && !strncmp(name, "_Z", 2) ? hl_bump_strdup(&s->arena, name) : NULL;
}

/* Name of a subprogram or inlined-subroutine DIE, following abstract
 * origins; the linkage name (demangled) is preferred for C++ scope, and
 * kept mangled in *linkage. */
static const char *die_function_name(struct hl_symbolizer *s, Dwarf_Die *die,
				     const char **linkage)
{
	Dwarf_Attribute attr;
	const char *name;

	*linkage = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) &&
	    (name = dwarf_formstring(&attr)))
		return *linkage = linkage_of(s, name), demangle(s, name);
	if (dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr) &&
	    (name = dwarf_formstring(&attr)))
		return *linkage = linkage_of(s, name), demangle(s, name);
	if (dwarf_attr_integrate(die, DW_AT_name, &attr) &&
	    (name = dwarf_formstring(&attr)))
		return hl_bump_strdup(&s->arena, name);
	return NULL;
}

/* The call site of an inlined subroutine DIE: file and line. */
static void die_call_site(struct hl_symbolizer *s, Dwarf_Die *cudie,
			  Dwarf_Die *die, struct hl_frame_info *out)
{
	Dwarf_Attribute attr;
	Dwarf_Word file_index = 0, line = 0;
	Dwarf_Files *files;
	size_t nfiles;
	const char *file;

	out->file = NULL;
	out->line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &line) == 0)
		out->line = (uint32_t)line;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &file_index) != 0)
		return;
	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || file_index >= nfiles)
		return;
	file = dwarf_filesrc(files, file_index, NULL, NULL);
	out->file = file ? hl_bump_strdup(&s->arena, file) : NULL;
}

/* The unit DIE holding pc: through .debug_aranges (elfutils), else from
 * the units' own ranges (clang writes no .debug_aranges by default). */
static Dwarf_Die *unit_at(struct sym_file *sf, Dwarf_Addr pc, Dwarf_Die *storage,
			  Dwarf_Addr *bias)
{
	Dwarf_Die *cudie = dwfl_module_addrdie(sf->mod, pc, bias);
	Dwarf *dw;

	if (cudie)
		return cudie;
	dw = dwfl_module_getdwarf(sf->mod, bias);
	if (dw && hl_dwarf_index_unit_at(sf->index, dw, pc - *bias, storage))
		return storage;
	return NULL;
}

/* frames[0]'s file:line from the line table of the unit holding pc. */
static void line_at(struct hl_symbolizer *s, struct sym_file *sf, Dwarf_Addr pc,
		    struct hl_frame_info *frame)
{
	Dwfl_Line *line = dwfl_module_getsrc(sf->mod, pc);
	const char *file = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Line *dline;
	Dwarf_Die storage, *cudie;
	int lineno = 0;

	if (line) {
		file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	} else if ((cudie = unit_at(sf, pc, &storage, &bias)) &&
		   (dline = dwarf_getsrc_die(cudie, pc - bias))) {
		file = dwarf_linesrc(dline, NULL, NULL);
		dwarf_lineno(dline, &lineno);
	}
	frame->file = file ? hl_bump_strdup(&s->arena, file) : NULL;
	frame->line = lineno > 0 ? (uint32_t)lineno : 0;
}

/* Fills frames for the inline chain at pc; frames[0] already has the line
 * table's file:line. Returns the number of frames. */
static size_t inline_chain(struct hl_symbolizer *s, struct sym_file *sf,
			   Dwarf_Addr pc, struct hl_frame_info *frames)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die storage, *cudie = unit_at(sf, pc, &storage, &bias);
	Dwarf_Die scopes[HL_MAX_INLINE];
	size_t n;

	if (!cudie)
		return 1;
	n = hl_dwarf_index_scopes(sf->index, cudie, pc - bias, scopes, HL_MAX_INLINE);
	for (size_t i = 0; i < n; i++) {
		if (i > 0) {
			/* The caller's line is where the inlined callee was called. */
			frames[i] = frames[0];
			die_call_site(s, cudie, &scopes[i - 1], &frames[i]);
		}
		frames[i].function = die_function_name(s, &scopes[i], &frames[i].linkage);
		frames[i].inlined = dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine;
	}
	return n ? n : 1;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;

	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size; /* sized first */
}

static int span_cmp(const void *a, const void *b)
{
	const struct sym_span *x = a, *y = b;

	return x->address < y->address ? -1 : x->address > y->address;
}

/* The symbols dwfl_module_addrinfo (elfutils' __libdwfl_addrsym) looks at:
 * named, defined, not a section, file or TLS symbol, of any other type. */
static bool addrinfo_candidate(const char *name, const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return name && *name && sym->st_shndx != SHN_UNDEF && type != STT_SECTION &&
	       type != STT_FILE && type != STT_TLS;
}

/* dwfl_module_addrinfo scans the whole symbol table for every address
 * (5,000 leak sites took a second); sort the function symbols once, and
 * record where addrinfo could find anything at all (spans, min_sizeless). */
static void symtab_build(struct sym_file *sf)
{
	int n = dwfl_module_getsymtab(sf->mod);
	size_t cap = 0, spans_cap = 0;

	sf->nsyms = 0;
	sf->nspans = 0;
	sf->min_sizeless = UINT64_MAX;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr address;
		const char *name = dwfl_module_getsym_info(sf->mod, i, &sym, &address,
							   NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (addrinfo_candidate(name, &sym)) {
			if (sym.st_size) {
				hl_grow((void **)&sf->spans, &spans_cap, sf->nspans,
					sizeof(*sf->spans));
				sf->spans[sf->nspans].address = address;
				sf->spans[sf->nspans].end_max = address + sym.st_size;
				sf->nspans++;
			} else if (address < sf->min_sizeless) {
				sf->min_sizeless = address;
			}
		}
		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		hl_grow((void **)&sf->syms, &cap, sf->nsyms, sizeof(*sf->syms));
		sf->syms[sf->nsyms].address = address;
		sf->syms[sf->nsyms].size = sym.st_size;
		sf->syms[sf->nsyms].name = name;
		sf->syms[sf->nsyms].local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
		sf->nsyms++;
	}
	qsort(sf->syms, sf->nsyms, sizeof(*sf->syms), sym_cmp);
	qsort(sf->spans, sf->nspans, sizeof(*sf->spans), span_cmp);
	for (size_t i = 1; i < sf->nspans; i++)
		if (sf->spans[i].end_max < sf->spans[i - 1].end_max)
			sf->spans[i].end_max = sf->spans[i - 1].end_max;
}

/* True when dwfl_module_addrinfo(pc) is sure to find nothing: no symbol it
 * considers has a size covering pc, and no sizeless one (its fallback, the
 * nearest at or below pc in pc's section) lies at or below pc. In a
 * stripped binary (Debian's cc1: .dynsym only) that is most addresses, and
 * addrinfo would scan the whole table to say so. */
static bool addrinfo_finds_nothing(const struct sym_file *sf, uint64_t pc)
{
	if (sf->min_sizeless <= pc)
		return false;
	size_t lo = HL_UPPER_BOUND(sf->spans, sf->nspans, address, pc);

	return lo == 0 || sf->spans[lo - 1].end_max <= pc;
}

static size_t leading_underscores(const char *name)
{
	size_t n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/* 0: the default version of a versioned symbol (name@@VERSION), 1: no
 * version, 2: an old version kept for old binaries (name@VERSION). */
static int version_rank(const char *at)
{
	return !at ? 1 : at[1] == '@' ? 0 : 2;
}

/* Whether alias a names a function better than alias b, as valgrind picks
 * among the names of one address, so users' suppressions and habits carry
 * over: the default version first, an old version last (free, not
 * cfree@GLIBC_2.2.5; __libc_start_main@@GLIBC_2.34); then a public symbol
 * over a local one (the __GI_ aliases); then the fewest leading underscores
 * (strndup, not __strndup; _IO_doallocbuf, not __GI__IO_doallocbuf; malloc,
 * not __libc_malloc); then the shorter, then the first in byte order, so
 * the choice never depends on the order of the table. */
static bool alias_better(const struct sym_entry *a, const struct sym_entry *b)
{
	const char *va = strchr(a->name, '@'), *vb = strchr(b->name, '@');
	size_t ua, ub, la, lb;

	if (version_rank(va) != version_rank(vb))
		return version_rank(va) < version_rank(vb);
	if (a->local != b->local)
		return !a->local;
	ua = leading_underscores(a->name);
	ub = leading_underscores(b->name);
	if (ua != ub)
		return ua < ub;
	la = va ? (size_t)(va - a->name) : strlen(a->name);
	lb = vb ? (size_t)(vb - b->name) : strlen(b->name);
	if (la != lb)
		return la < lb;
	return strcmp(a->name, b->name) < 0;
}

/* Name of the function symbol containing pc, or NULL. */
static const char *symtab_lookup(struct sym_file *sf, uint64_t pc)
{
	if (sf->nsyms == SIZE_MAX)
		symtab_build(sf);
	size_t lo = HL_UPPER_BOUND(sf->syms, sf->nsyms, address, pc);
	const struct sym_entry *best = NULL;

	/* Aliases share an address: the best named of those covering pc. */
	for (size_t i = lo; i-- > 0;) {
		const struct sym_entry *e = &sf->syms[i];

		if (e->address != sf->syms[lo - 1].address)
			break;
		if (pc < e->address + (e->size ? e->size : 1) && (!best || alias_better(e, best)))
			best = e;
	}
	return best ? best->name : NULL;
}

static void symbolize_in(struct hl_symbolizer *s, struct sym_module *sm,
			 uint64_t address, struct sym_result *r)
{
	struct hl_frame_info frames[HL_MAX_INLINE];
	struct sym_file *sf = sm->file;
	/* inside the call, not after it; where the file was reported */
	Dwarf_Addr pc = address - 1 - sm->base + (sf ? sf->base : 0);
	const char *symname;
	GElf_Off off;
	GElf_Sym sym;
	size_t n = 1;

	memset(frames, 0, sizeof(frames));
	frames[0].address = address;
	frames[0].module = sm->path;
	frames[0].offset = address - sm->base;
	if (sf && sf->mod) {
		symname = symtab_lookup(sf, pc);
		/* odd symbols (zero size, objects): the slow, exact way */
		if (!symname && !addrinfo_finds_nothing(sf, pc))
			symname = dwfl_module_addrinfo(sf->mod, pc, &off, &sym, NULL, NULL, NULL);
		frames[0].function = demangle(s, symname);
		frames[0].linkage = linkage_of(s, symname);
		line_at(s, sf, pc, &frames[0]);
		n = inline_chain(s, sf, pc, frames);
		/* The symbol table names the real function best (full C++ scope);
		 * the DWARF scope only when there is no symbol. */
		if (symname && !frames[n - 1].inlined) {
			frames[n - 1].function = demangle(s, symname);
			frames[n - 1].linkage = linkage_of(s, symname);
		}
	}
	r->count = n;
	r->frames = hl_bump_alloc(&s->arena, n * sizeof(*frames));
	memcpy(r->frames, frames, n * sizeof(*frames));
}

static uint64_t cache_key(uint32_t module, uint64_t address)
{
	uint64_t k = (address ^ ((uint64_t)module * 0xff51afd7ed558ccdull)) << 4;

	return k ? k : 16;
}

static struct sym_result *cached(struct hl_symbolizer *s, uint32_t module, uint64_t address)
{
	uint64_t key = cache_key(module, address);

	for (uint64_t *v = hl_map_find(&s->cache, key); v; v = hl_map_find_next(&s->cache, key, v)) {
		struct sym_result *r = hl_map_ptr(*v);

		if (r->module == module && r->address == address)
			return r;
	}
	return NULL;
}

static const char *arena_strdup_or_null(struct hl_bump *a, const char *s)
{
	return s ? hl_bump_strdup(a, s) : NULL;
}

void hl_symbolizer_add(struct hl_symbolizer *s, const struct hl_module *m, uint64_t address,
		       const struct hl_frame_info *frames, size_t count)
{
	uint32_t module = m ? module_index(s, m) : 0;
	struct sym_result *r;

	if (!count || cached(s, module, address))
		return;
	r = hl_bump_alloc(&s->arena, sizeof(*r));
	r->module = module;
	r->address = address;
	r->count = count;
	r->frames = hl_bump_alloc(&s->arena, count * sizeof(*r->frames));
	for (size_t i = 0; i < count; i++) {
		r->frames[i] = frames[i];
		r->frames[i].function = arena_strdup_or_null(&s->arena, frames[i].function);
		r->frames[i].file = arena_strdup_or_null(&s->arena, frames[i].file);
		r->frames[i].module = arena_strdup_or_null(&s->arena, frames[i].module);
	}
	hl_map_insert(&s->cache, cache_key(module, address), hl_map_of_ptr(r));
}

const struct hl_frame_info *hl_symbolize(struct hl_symbolizer *s,
					 const struct hl_module *m,
					 uint64_t address, size_t *count)
{
	uint32_t module = m ? module_index(s, m) : 0;
	uint64_t key = cache_key(module, address);
	struct sym_result *r = cached(s, module, address);

	if (r) {
		*count = r->count;
		return r->frames;
	}
	r = hl_bump_alloc(&s->arena, sizeof(*r));
	r->module = module;
	r->address = address;
	if (module) {
		symbolize_in(s, &s->modules[module - 1], address, r);
	} else {
		r->count = 1;
		r->frames = hl_bump_alloc(&s->arena, sizeof(*r->frames));
		r->frames[0].address = address;
	}
	hl_map_insert(&s->cache, key, hl_map_of_ptr(r));
	*count = r->count;
	return r->frames;
}
