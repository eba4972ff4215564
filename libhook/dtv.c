/*
 * libhook/dtv.c: thread DTVs reported at the size they have without the hook.
 *
 * glibc's dynamic linker gives each thread a DTV (dl-tls.c, allocate_dtv):
 * calloc(max module id + DTV_SURPLUS (14) + 2, 16), one 16-byte entry per TLS
 * module. libheapledger.so and libunwind bring TLS modules of their own, so
 * under the hook each DTV is 16 bytes longer per such module than in the
 * program alone, and than valgrind reports it (272 bytes for a program with
 * only libc's TLS, 304 under the hook). The block keeps its real size (the
 * scan reads it whole, realloc copies it whole); only the size reported for
 * it, in the ALLOC event and in the standalone loss records, leaves the
 * hook's entries out.
 *
 * A DTV is a calloc from the dynamic linker's code with 16-byte elements and
 * at least DTV_SURPLUS + 3 of them; what else ld.so callocs has 1-byte
 * elements. DTVs regrown by _dl_resize_dtv (malloc/realloc) keep their size.
 *
 * Invariants: the dynamic linker's range, hl_dtv_min_count and hook_modules
 * are written once, before any thread but the first exists; dtv_stacks only
 * gains ids.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <libunwind.h>
#include <link.h>
#include <stdatomic.h>

#include "dtv.h"

#define DTV_MIN_ENTRIES 17u  /* DTV_SURPLUS + 2 + one module (libc's) */
#define DTV_STACKS 16u       /* pthread_create call sites remembered */

uintptr_t hl_dtv_ld_low;         /* the dynamic linker's executable PT_LOAD */
uintptr_t hl_dtv_ld_span;
size_t hl_dtv_min_count = SIZE_MAX;
static size_t hook_modules;      /* TLS modules of the hook's objects */
static _Atomic uint32_t dtv_stacks[DTV_STACKS];

static bool object_holds(const struct dl_phdr_info *info, uintptr_t address, bool exec_only)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t low = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || (exec_only && !(ph->p_flags & PF_X)))
			continue;
		if (address >= low && address < low + ph->p_memsz)
			return true;
	}
	return false;
}

static void find_text(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			hl_dtv_ld_low = info->dlpi_addr + ph->p_vaddr;
			hl_dtv_ld_span = ph->p_memsz;
		}
	}
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (object_holds(info, (uintptr_t)&_r_debug, false))
		find_text(info);
	/* libunwind counts as the hook's: a program linked with it is rare */
	if (info->dlpi_tls_modid != 0 &&
	    (object_holds(info, (uintptr_t)hl_dtv_init, true) ||
	     object_holds(info, (uintptr_t)unw_backtrace, true)))
		hook_modules++;
	return 0;
}

/* Nothing is a DTV until this has run, and nothing when the hook brings no
 * TLS module: the sizes are right as they are. */
void hl_dtv_init(void)
{
	if (hl_dtv_ld_span != 0 || hl_dtv_min_count != SIZE_MAX)
		return;
	dl_iterate_phdr(visit, NULL);
	if (hook_modules == 0)
		hl_dtv_ld_span = 0;
	hl_dtv_min_count = DTV_MIN_ENTRIES + hook_modules;
}

size_t hl_dtv_reported(size_t bytes)
{
	return bytes - hook_modules * HL_DTV_ENTRY;
}

void hl_dtv_note_stack(uint32_t stack_id)
{
	for (size_t i = 0; stack_id != 0 && i < DTV_STACKS; i++) {
		uint32_t seen = atomic_load_explicit(&dtv_stacks[i], memory_order_relaxed);

		if (seen == stack_id)
			return;
		if (seen == 0 && atomic_compare_exchange_strong(&dtv_stacks[i], &seen, stack_id))
			return;
		if (seen == stack_id)
			return;
	}
}

size_t hl_dtv_block_reported(uint32_t stack_id, size_t bytes)
{
	for (size_t i = 0; stack_id != 0 && i < DTV_STACKS; i++) {
		uint32_t seen = atomic_load_explicit(&dtv_stacks[i], memory_order_relaxed);

		if (seen == 0)
			break;
		if (seen == stack_id)
			return hl_dtv_reported(bytes);
	}
	return bytes;
}
