/*
 * reporter/symbols/debug_cache.c: uncompressed copies of compressed debug files
 * (see debug_cache.h).
 */
#define _GNU_SOURCE
#include "debug_cache.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "heapledger/wire.h"
#include "util.h"

#define DAY_SECONDS (24 * 60 * 60)

static char *path_printf(const char *fmt, ...) HL_PRINTF(1, 2);
static char *path_printf(const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	p = hl_xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

char *hl_debug_cache_dir(void)
{
	const char *v = getenv("HEAPLEDGER_CACHE_DIR");

	if (v)
		return *v && strcmp(v, "off") != 0 ? hl_xstrdup(v) : NULL;
	if ((v = getenv("XDG_CACHE_HOME")) && *v == '/')
		return path_printf("%s/heapledger", v);
	if ((v = getenv("HOME")) && *v == '/')
		return path_printf("%s/.cache/heapledger", v);
	return NULL;
}

static char *entry_path(const char *dir, const uint8_t *id, size_t len)
{
	char hex[2 * HL_WIRE_MAX_BUILD_ID + 1];

	if (len > HL_WIRE_MAX_BUILD_ID)
		len = HL_WIRE_MAX_BUILD_ID;
	return path_printf("%s/debug/%s.debug", dir, hl_fmt_hex(hex, id, len));
}

static bool elf_has_build_id(Elf *elf, const uint8_t *id, size_t len)
{
	const void *bits;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;

	return n == (ssize_t)len && memcmp(bits, id, len) == 0;
}

int hl_debug_cache_open(const char *dir, const uint8_t *build_id, size_t len, char **path)
{
	char *name = entry_path(dir, build_id, len);
	int fd = hl_open_regular(name);
	Elf *elf;

	if (fd < 0) {
		free(name);
		return -1;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf_has_build_id(elf, build_id, len)) {
		elf_end(elf);
		close(fd);
		free(name);
		return -1;
	}
	elf_end(elf);
	/* Used now: the sweep measures age from the last use. */
	futimens(fd, NULL);
	*path = name;
	return fd;
}

/* mkdir -p for the cache's own directories, private to the user. */
static int make_dirs(const char *path)
{
	char *p = hl_xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; rc == 0; s++) {
		bool end = *s == '\0';

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			rc = -1;
		if (end)
			break;
		*s = '/';
	}
	free(p);
	return rc;
}

/* Removes entries unused for the maximum age and temporary files a dead
 * writer left behind. */
static void sweep(const char *debug_dir)
{
	DIR *d = opendir(debug_dir);
	struct dirent *e;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		bool temporary = strncmp(e->d_name, ".tmp-", 5) == 0;
		size_t n = strlen(e->d_name);
		struct stat st;

		if (!temporary && (n < 6 || strcmp(e->d_name + n - 6, ".debug") != 0))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (now - st.st_mtime > (temporary ? DAY_SECONDS
						   : HL_DEBUG_CACHE_MAX_AGE_DAYS * DAY_SECONDS))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/* Sum of the inflated sizes of src's compressed sections (0: none), or
 * UINT64_MAX when src is not an ELF file with this build-id. */
static uint64_t compressed_bytes(int src_fd, const uint8_t *id, size_t len)
{
	Elf *elf = elf_begin(src_fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	uint64_t total = 0;

	if (!elf_has_build_id(elf, id, len)) {
		elf_end(elf);
		return UINT64_MAX;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		GElf_Chdr chdr;

		if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_COMPRESSED) &&
		    gelf_getchdr(scn, &chdr))
			total += chdr.ch_size;
	}
	elf_end(elf);
	return total;
}

static int copy_file(int from, int to)
{
	struct stat st;
	off_t offset = 0;

	if (fstat(from, &st) != 0)
		return -1;
	while (offset < st.st_size) {
		ssize_t n = sendfile(to, from, &offset, (size_t)(st.st_size - offset));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* the file shrank under us */
			return -1;
		}
	}
	return 0;
}

/* Inflates every compressed section of the ELF file open read-write on fd,
 * in place. */
static int inflate_sections(int fd, char *why, size_t why_size)
{
	Elf *elf = elf_begin(fd, ELF_C_RDWR, NULL);
	Elf_Scn *scn = NULL;

	if (!elf) {
		snprintf(why, why_size, "reading it: %s", elf_errmsg(-1));
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0) {
			snprintf(why, why_size, "inflating a section: %s", elf_errmsg(-1));
			elf_end(elf);
			return -1;
		}
	}
	if (elf_update(elf, ELF_C_WRITE) < 0) {
		/* libelf reports a failed write as its own error; errno says why
		 * (ENOSPC, EDQUOT, EIO). */
		int err = errno;

		snprintf(why, why_size, "writing it: %s (%s)", elf_errmsg(-1), strerror(err));
		elf_end(elf);
		return -1;
	}
	elf_end(elf);
	return 0;
}

int hl_debug_cache_add(const char *dir, const uint8_t *build_id, size_t len, int src_fd,
		       char **path, char *why, size_t why_size)
{
	uint64_t inflated;
	char *debug_dir, *name, *tmp = NULL;
	int fd = -1;

	why[0] = '\0';
	elf_version(EV_CURRENT);
	inflated = compressed_bytes(src_fd, build_id, len);
	if (inflated == 0 || inflated == UINT64_MAX || inflated > HL_DEBUG_CACHE_MAX_FILE)
		return -1;
	debug_dir = path_printf("%s/debug", dir);
	name = entry_path(dir, build_id, len);
	if (make_dirs(debug_dir) != 0) {
		snprintf(why, why_size, "creating %s: %s", debug_dir, strerror(errno));
		goto fail;
	}
	sweep(debug_dir);
	tmp = path_printf("%s/.tmp-XXXXXX", debug_dir);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_size, "creating a file in %s: %s", debug_dir, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto fail;
	}
	if (copy_file(src_fd, fd) != 0) {
		snprintf(why, why_size, "copying the debug file: %s", strerror(errno));
		goto fail;
	}
	if (inflate_sections(fd, why, why_size) != 0)
		goto fail;
	if (fchmod(fd, 0600) != 0 || rename(tmp, name) != 0) {
		snprintf(why, why_size, "renaming it to %s: %s", name, strerror(errno));
		goto fail;
	}
	free(tmp);
	free(debug_dir);
	*path = name;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(name);
	free(debug_dir);
	return -1;
}
