/*
 * libhook/modules.c: the loaded ELF objects, for the reporter's symbolizer.
 *
 * At start every object dl_iterate_phdr lists gets a MODULE_LOAD record
 * (path, load bias, PT_LOAD range, GNU build-id); dlopen and dlclose are
 * interposed so objects that appear later get one too, and objects that
 * disappear get MODULE_UNLOAD. Ids are never reused, so frames in a
 * dlclose'd library still resolve after the process is gone.
 *
 * Invariants: `modules` only grows (entries are never freed: a forked child
 * sends them all again on its own connection); every field but `unloaded`
 * and the sent flags is immutable once linked; all of it is guarded by
 * modules_lock, which is taken inside the loader lock (scan callback) and
 * inside emit_conn.c's write_lock (sending), never the other way round.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "emit_int.h"
#include "lock.h"
#include "track.h"
#include "procfs.h"

struct module {
	struct module *next;       /* newest first */
	uint64_t base;             /* dlpi_addr */
	uint64_t low;              /* PT_LOAD range */
	uint64_t high;
	bool present;              /* seen by the latest scan */
	bool unloaded;             /* vanished: MODULE_UNLOAD due */
	bool load_sent;            /* on the current connection */
	bool unload_sent;
	struct hl_rec_module_load *rec; /* the whole MODULE_LOAD record */
};

static struct hl_lock modules_lock;
static struct module *modules;
static uint32_t module_count;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static char exe_path[HL_WIRE_MAX_PATH];
static void *(*real_dlopen)(const char *, int);
static int (*real_dlclose)(void *);

const char *hl_modules_exe_path(void)
{
	if (exe_path[0] == '\0') {
		ssize_t n = hl_proc_readlink("exe", exe_path, sizeof(exe_path) - 1);
		exe_path[n > 0 ? n : 0] = '\0';
	}
	return exe_path;
}

/* The GNU build-id note of an object, or 0 bytes. */
static uint32_t find_build_id(struct dl_phdr_info *info, const uint8_t **out)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *note = (const void *)p;
			const uint8_t *name = p + sizeof(*note);
			const uint8_t *desc = name + ((note->n_namesz + 3) & ~3u);
			if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end &&
			    note->n_descsz <= HL_WIRE_MAX_BUILD_ID) {
				*out = desc;
				return note->n_descsz;
			}
			p = desc + ((note->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static struct module *module_find_locked(uint64_t base, uint64_t low)
{
	hl_assert_held(&modules_lock);
	for (struct module *m = modules; m; m = m->next)
		if (!m->unloaded && m->base == base && m->low == low)
			return m;
	return NULL;
}

static void module_add_locked(struct dl_phdr_info *info, uint64_t low, uint64_t high)
{
	hl_assert_held(&modules_lock);
	const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
								  : hl_modules_exe_path();
	uint32_t path_len = (uint32_t)strnlen(path, HL_WIRE_MAX_PATH - 1) + 1;
	const uint8_t *build_id = NULL;
	uint32_t id_len = find_build_id(info, &build_id);
	uint32_t len = hl_wire_padded((uint32_t)sizeof(struct hl_rec_module_load) + id_len + path_len);
	struct module *m = hl_meta_alloc(sizeof(*m));
	struct hl_rec_module_load *rec = hl_meta_alloc(len);
	if (m == NULL || rec == NULL)
		return; /* the reporter shows module+offset as unknown */
	*rec = (struct hl_rec_module_load){
		.h = hl_wire_hdr(HL_REC_MODULE_LOAD, 0, len),
		.module_id = ++module_count,
		.build_id_len = id_len,
		.base = info->dlpi_addr,
		.low = low,
		.high = high,
		.ticks = hl_ticks(),
		.path_len = path_len,
	};
	char *tail = (char *)(rec + 1);
	if (id_len)
		memcpy(tail, build_id, id_len);
	memcpy(tail + id_len, path, path_len - 1); /* zeroed memory: NUL and padding */
	*m = (struct module){ .next = modules, .base = info->dlpi_addr, .low = low,
			      .high = high, .present = true, .rec = rec };
	modules = m;
}

struct scan {
	bool first;   /* no callback ran yet */
	bool changed; /* objects were added or removed since the last scan */
};

void hl_phdr_load_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		if (start < *lo)
			*lo = start;
		if (start + ph->p_memsz > *hi)
			*hi = start + ph->p_memsz;
	}
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *scan = arg;
	if (scan->first) {
		scan->first = false;
		/* Under the loader lock; released by hl_modules_scan. */
		hl_lock(&modules_lock);
		if (info->dlpi_adds == seen_adds && info->dlpi_subs == seen_subs)
			return 1; /* nothing was loaded or unloaded since */
		seen_adds = info->dlpi_adds;
		seen_subs = info->dlpi_subs;
		scan->changed = true;
		for (struct module *m = modules; m; m = m->next)
			m->present = false;
	}
	uintptr_t low, high;
	hl_phdr_load_span(info, &low, &high);
	if (high == 0)
		return 0;
	struct module *m = module_find_locked(info->dlpi_addr, low);
	if (m)
		m->present = true;
	else
		module_add_locked(info, low, high);
	return 0;
}

void hl_modules_scan(void)
{
	struct scan scan = { .first = true };
	int saved = errno;
	hl_guard_enter();
	if (hl_walk_begin()) {
		dl_iterate_phdr(scan_one, &scan);
		hl_walk_end();
	}
	if (!scan.first) {
		for (struct module *m = modules; scan.changed && m; m = m->next)
			if (!m->present)
				m->unloaded = true;
		hl_unlock(&modules_lock);
	}
	hl_guard_leave();
	errno = saved;
}

/* Copies a record into the scratch buffer; false if the connection was
 * lost flushing it to make room. */
static bool put_locked(const void *rec, uint32_t len)
{
	void *at = hl_emit_scratch_reserve_locked(len);
	if (at == NULL)
		return false;
	memcpy(at, rec, len);
	return true;
}

bool hl_modules_put_locked(void)
{
	hl_assert(hl_emit_lock_is_held());
	bool ok = true;
	hl_lock(&modules_lock);
	/* Oldest first, so ids arrive in order; the list is newest first and
	 * short (one entry per object ever loaded). */
	for (uint32_t id = 1; ok && id <= module_count; id++) {
		for (struct module *m = modules; m; m = m->next) {
			if (m->rec->module_id != id)
				continue;
			if (!m->load_sent)
				ok = m->load_sent = put_locked(m->rec, m->rec->h.length);
			break;
		}
	}
	for (struct module *m = modules; ok && m; m = m->next) {
		if (!m->unloaded || m->unload_sent || !m->load_sent)
			continue;
		struct hl_rec_module_unload rec = {
			.h = hl_wire_hdr(HL_REC_MODULE_UNLOAD, 0, sizeof(rec)),
			.module_id = m->rec->module_id,
			.ticks = hl_ticks(),
		};
		ok = m->unload_sent = put_locked(&rec, sizeof(rec));
	}
	hl_unlock(&modules_lock);
	return ok;
}

void hl_modules_reset_sent_locked(void)
{
	hl_assert(hl_emit_lock_is_held());
	hl_lock(&modules_lock);
	for (struct module *m = modules; m; m = m->next)
		m->load_sent = m->unload_sent = false;
	hl_unlock(&modules_lock);
}

void hl_modules_fork_prepare(void)
{
	hl_lock(&modules_lock);
}

void hl_modules_fork_parent(void)
{
	hl_unlock(&modules_lock);
}

void hl_modules_fork_child(void)
{
	hl_lock_reset(&modules_lock);
}

void hl_modules_init(void)
{
	real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
}

/* After the object (and its dependencies) are mapped and their constructors
 * ran; their allocations name addresses the reporter maps after exit, so
 * the late MODULE_LOAD is still in time. */
HL_API void *dlopen(const char *file, int flags)
{
	if (real_dlopen == NULL)
		hl_modules_init();
	void *handle = real_dlopen ? real_dlopen(file, flags) : NULL;
	if (hl_emit_is_live()) {
		int saved = errno;
		hl_modules_scan();
		hl_emit_flush_all();
		errno = saved;
	}
	return handle;
}

HL_API int dlclose(void *handle)
{
	if (real_dlclose == NULL)
		hl_modules_init();
	int ret = real_dlclose ? real_dlclose(handle) : -1;
	if (hl_emit_is_live()) {
		int saved = errno;
		hl_modules_scan();
		hl_emit_flush_all();
		errno = saved;
	}
	return ret;
}
