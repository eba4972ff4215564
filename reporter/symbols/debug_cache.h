/*
 * reporter/symbols/debug_cache.h: uncompressed copies of compressed debug files,
 * kept across runs and looked up by build-id.
 *
 * Why: Debian's separate debug files (libc6-dbg, every -dbgsym package) ship
 * their .debug_* sections zlib-compressed, and libdw inflates a section whole
 * the first time any address of the file is looked up. For libc that is
 * ~10 MiB, 80-100 ms of CPU and ~7 MiB of heap in every `heapledger run`
 * whose stacks pass through libc, which is all of them; on a 2-core machine
 * that CPU is taken from the program under test and the reading thread. A
 * copy with the sections stored plain is inflated once, then read straight
 * from the page cache by every later run (the copy of libc's is 10 MiB).
 *
 * Layout: <dir>/debug/<build-id hex>.debug, written to a temporary name and
 * renamed into place, so a reader never sees half a file; an entry whose
 * build-id does not match its name (a truncated or foreign file) is ignored
 * and replaced. Entries unused for HL_DEBUG_CACHE_MAX_AGE_DAYS are removed
 * when a new one is added; a reporter that died while writing leaves a
 * temporary file that the same sweep removes after a day.
 */
#ifndef HL_REPORTER_DEBUG_CACHE_H
#define HL_REPORTER_DEBUG_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define HL_DEBUG_CACHE_MAX_AGE_DAYS 30
/* Larger debug files are not copied (inflated bytes of their sections). */
#define HL_DEBUG_CACHE_MAX_FILE ((uint64_t)1 << 30)

/* The cache directory: $HEAPLEDGER_CACHE_DIR ("" or "off": no cache), else
 * $XDG_CACHE_HOME/heapledger, else $HOME/.cache/heapledger; NULL when there
 * is none. Malloc'd. */
char *hl_debug_cache_dir(void);

/* The cached copy for this build-id: a read-only fd and (*path, malloc'd)
 * its name; -1 if there is none or it is not a file with this build-id. */
int hl_debug_cache_open(const char *dir, const uint8_t *build_id, size_t len, char **path);

/* If the ELF file open on src_fd has this build-id and compressed sections,
 * writes a copy with them inflated into the cache and returns an fd on it
 * (and *path); src_fd is left as it was. Otherwise -1, with why (of
 * why_size bytes) holding a reason worth telling the user, or empty when
 * there was simply nothing to do (no compressed section, another build-id,
 * too large). */
int hl_debug_cache_add(const char *dir, const uint8_t *build_id, size_t len, int src_fd,
		       char **path, char *why, size_t why_size);

#endif /* HL_REPORTER_DEBUG_CACHE_H */
