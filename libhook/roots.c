/*
 * libhook/roots.c: the leak scan's roots, read from /proc/thread-self/maps
 * (procfs.c).
 *
 * What is a root (valgrind's memcheck reads every client mapping that is
 * readable and writable; so do we, minus what is ours):
 *  - every private, readable and writable mapping: the writable PT_LOAD
 *    segments of every loaded module (RELRO is read-only by then, so it is
 *    not among them), the main thread's static TLS and DTV (in the dynamic
 *    loader's anonymous memory), memory the program mapped itself (arenas
 *    of interpreters keep pointers to malloc'd blocks there);
 *  - each thread's stack, from its stack pointer (less the 128-byte red
 *    zone) to the end of the mapping that holds it: glibc places a thread's
 *    descriptor and static TLS at the top of its stack mapping, so TLS is
 *    read with it; a dlopen'd module's TLS blocks are malloc'd and reached
 *    through the DTV like any other block. A thread that did not stop has
 *    its whole stack mapping read;
 *  - each stopped thread's general-purpose registers, and the scanning
 *    thread's callee-saved ones.
 * Never roots: the hook's own data and bss, heap segments and large
 * mappings (a block's contents count only when the block is reached),
 * metadata mappings, the scan's own memory. Never read: unreadable or
 * PROT_NONE mappings (guard pages), shared mappings, device mappings other
 * than /dev/zero, and the part of a file mapping past the end of its file
 * (reading there would fault).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scan.h"
#include "track.h"
#include "procfs.h"

#define RED_ZONE 128

/* ---- the maps file ------------------------------------------------------- */

static uintptr_t parse_hex(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			return v;
		v = v * 16 + d;
	}
}

static const char *skip_field(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* One line: "start-end perms offset dev inode   path". */
static void parse_line(const char *p, const char *end, struct hl_map *m, uintptr_t *offset,
		       const char **path)
{
	m->start = parse_hex(&p);
	p++;
	m->end = parse_hex(&p);
	p++;
	m->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		  (p[2] == 'x' ? PROT_EXEC : 0);
	m->shared = p[3] == 's';
	p = skip_field(p, end);
	*offset = parse_hex(&p);          /* p: the space after it */
	p = skip_field(p, end);           /* to dev */
	p = skip_field(p, end);           /* to inode */
	p = skip_field(p, end);           /* to the path, if any */
	*path = p < end ? p : NULL;
	m->file = *path && **path == '/';
	m->device = m->file && strncmp(*path, "/dev/", 5) == 0 &&
		    strncmp(*path, "/dev/zero", 9) != 0;
}

/* A file mapping is read only up to the end of its file. */
static void clamp_to_file(struct hl_map *m, uintptr_t offset, const char *path, const char *end)
{
	char name[512];
	size_t len = (size_t)(end - path);
	struct stat st;
	if (len >= sizeof(name) || memchr(path, '(', len)) { /* "(deleted)": unknown size */
		m->end = m->start;
		return;
	}
	memcpy(name, path, len);
	name[len] = '\0';
	if (stat(name, &st) != 0 || (uintptr_t)st.st_size <= offset) {
		m->end = m->start;
		return;
	}
	size_t page = hl_os_page_size();
	uintptr_t limit = m->start + (((uintptr_t)st.st_size - offset + page - 1) & ~(page - 1));
	if (limit < m->end)
		m->end = limit;
}

static size_t read_all(int fd, char *buf, size_t size)
{
	size_t used = 0;
	while (used < size) {
		ssize_t n = read(fd, buf + used, size - used);
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	return used;
}

bool hl_roots_read_maps(struct hl_scan *s)
{
	size_t size = (size_t)1 << 20;
	char *buf;
	size_t used;
	for (;;) {
		int fd = hl_proc_open("maps", O_RDONLY);
		if (fd < 0)
			return false;
		buf = hl_scan_map(s, size);
		used = buf ? read_all(fd, buf, size) : 0;
		close(fd);
		if (buf == NULL)
			return false;
		if (used < size)
			break;
		size *= 4; /* the smaller buffer stays listed as the scan's own */
	}
	size_t lines = 0;
	for (size_t i = 0; i < used; i++)
		lines += buf[i] == '\n';
	s->maps = hl_scan_map(s, (lines + 1) * sizeof(struct hl_map));
	if (s->maps == NULL)
		return false;
	for (const char *p = buf, *stop = buf + used; p < stop;) {
		const char *eol = memchr(p, '\n', (size_t)(stop - p));
		if (eol == NULL)
			eol = stop;
		struct hl_map *m = &s->maps[s->nmaps];
		uintptr_t offset;
		const char *path;
		parse_line(p, eol, m, &offset, &path);
		if (m->file && (m->prot & PROT_WRITE) && !m->shared && !m->device)
			clamp_to_file(m, offset, path, eol);
		s->nmaps++;
		p = eol + 1;
	}
	return true;
}

const struct hl_map *hl_roots_map_of(const struct hl_scan *s, uintptr_t address)
{
	size_t lo = 0, hi = s->nmaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (address < s->maps[mid].start)
			hi = mid;
		else if (address >= s->maps[mid].end)
			lo = mid + 1;
		else
			return &s->maps[mid];
	}
	return NULL;
}

/* ---- the hook's own writable data ---------------------------------------- */

static int find_hook_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct hl_scan *s = arg;
	uintptr_t own = (uintptr_t)&hl_registry;
	uintptr_t lo, hi;
	hl_phdr_load_span(info, &lo, &hi);
	if (own < lo || own >= hi)
		return 0;
	size_t page = hl_os_page_size();
	for (unsigned i = 0; i < info->dlpi_phnum && s->nhook < 4; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		uintptr_t start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
		uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
		s->hook_lo[s->nhook] = start;
		s->hook_hi[s->nhook++] = end;
	}
	return 1;
}

/* No walk gate: the scan holds the locks fork's prepare handler takes. In
 * a child that must not walk, the hook's own data is not told apart (it is
 * scanned as roots: more may look reachable, nothing is misread). */
void hl_roots_find_hook(struct hl_scan *s)
{
	if (hl_walks_off())
		return;
	dl_iterate_phdr(find_hook_object, s);
}

/* ---- excluded intervals --------------------------------------------------- */

struct interval {
	uintptr_t start, end;
};

struct exclusions {
	struct interval *items;
	size_t count, capacity;
};

static void exclude(struct exclusions *x, const void *p, size_t bytes)
{
	if (x->count < x->capacity && bytes)
		x->items[x->count++] = (struct interval){ (uintptr_t)p, (uintptr_t)p + bytes };
}

static void exclude_meta(void *p, size_t bytes, void *arg)
{
	exclude(arg, p, bytes);
}

static void exclude_large(void *base, size_t bytes, struct hl_range *r, void *arg)
{
	(void)r;
	exclude(arg, base, bytes);
}

static void count_large(void *base, size_t bytes, struct hl_range *r, void *arg)
{
	(void)base;
	(void)bytes;
	(void)r;
	(*(size_t *)arg)++;
}

static void sort_intervals(struct interval *v, size_t n)
{
	/* Shell sort: a few thousand entries, no recursion, no allocation. */
	for (size_t gap = n / 2; gap > 0; gap /= 2)
		for (size_t i = gap; i < n; i++)
			for (size_t j = i; j >= gap && v[j - gap].start > v[j].start; j -= gap) {
				struct interval t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

static bool build_exclusions(struct hl_scan *s, struct exclusions *x)
{
	size_t large = 0;
	hl_large_visit_locked(count_large, &large);
	x->capacity = large + 1024 + 64 + 8;
	x->items = hl_scan_map(s, x->capacity * sizeof(struct interval));
	if (x->items == NULL)
		return false;
	hl_meta_visit_locked(exclude_meta, x);
	hl_large_visit_locked(exclude_large, x);
	for (unsigned i = 0; i < s->nhook; i++)
		exclude(x, (void *)s->hook_lo[i], s->hook_hi[i] - s->hook_lo[i]);
	for (unsigned i = 0; i < s->nown; i++)
		exclude(x, s->own[i].p, s->own[i].bytes);
	sort_intervals(x->items, x->count);
	return true;
}

/* ---- scanning ------------------------------------------------------------- */

/* [start, end) without heap segments (the registry knows them exactly). */
static void scan_skipping_segments(struct hl_scan *s, uintptr_t start, uintptr_t end)
{
	while (start < end) {
		uintptr_t next = (start | (HL_SEGMENT_SIZE - 1)) + 1;
		if (next > end || next < start)
			next = end;
		if (hl_registry_lookup((void *)start) != HL_REGION_SEGMENT)
			hl_scan_root_range(s, start, next);
		start = next;
	}
}

static void scan_excluding(struct hl_scan *s, const struct exclusions *x, uintptr_t start,
			   uintptr_t end)
{
	for (size_t i = 0; i < x->count && start < end; i++) {
		const struct interval *e = &x->items[i];
		if (e->end <= start)
			continue;
		if (e->start >= end)
			break;
		if (e->start > start)
			scan_skipping_segments(s, start, e->start);
		start = e->end;
	}
	if (start < end)
		scan_skipping_segments(s, start, end);
}

/* The lowest stack pointer of a stopped thread inside [start, end), or 0. */
static uintptr_t lowest_sp_in(const struct hl_scan *s, uintptr_t start, uintptr_t end)
{
	uintptr_t low = 0;
	const struct hl_world *w = s->world;
	if (s->own_sp >= start && s->own_sp < end)
		low = s->own_sp;
	if (s->inherited_sp >= start && s->inherited_sp < end && (low == 0 || s->inherited_sp < low))
		low = s->inherited_sp;
	for (unsigned i = 0; w && i < w->count; i++) {
		const struct hl_scan_thread *t = &w->threads[i];
		if (atomic_load(&t->state) < HL_THREAD_STOPPED || t->sp == 0)
			continue;
		uintptr_t sp = t->sp - RED_ZONE;
		if (t->sp >= start && t->sp < end && (low == 0 || sp < low))
			low = sp < start ? start : sp;
	}
	return low;
}

static bool is_root_map(const struct hl_map *m)
{
	return (m->prot & (PROT_READ | PROT_WRITE)) == (PROT_READ | PROT_WRITE) && !m->shared &&
	       !m->device && m->end > m->start;
}

void hl_roots_scan(struct hl_scan *s)
{
	struct exclusions x = { 0 };
	if (!build_exclusions(s, &x))
		return;
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct hl_map *m = &s->maps[i];
		if (!is_root_map(m))
			continue;
		uintptr_t sp = lowest_sp_in(s, m->start, m->end);
		if (sp)
			hl_scan_root_stack(s, sp & ~(uintptr_t)7, m->end);
		else
			scan_excluding(s, &x, m->start, m->end);
	}
	for (unsigned i = 0; i < HL_SCAN_REGS; i++)
		hl_scan_root_word(s, s->own_regs[i]);
	const struct hl_world *w = s->world;
	for (unsigned i = 0; w && i < w->count; i++) {
		const struct hl_scan_thread *t = &w->threads[i];
		if (atomic_load(&t->state) < HL_THREAD_STOPPED)
			continue;
		for (unsigned r = 0; r < HL_SCAN_REGS; r++)
			hl_scan_root_word(s, t->regs[r]);
	}
}
